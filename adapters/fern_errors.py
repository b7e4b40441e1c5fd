"""The error edge shared by the two Zep SDKs, both Fern-generated clients built on httpx.

Imported only by the Zep adapters, whose SDKs bring httpx; the bare install does not need it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from gnomon.adapters.errors import (
    AdapterError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
    malformed,
    status_hint,
)

T = TypeVar("T")


@dataclass(frozen=True)
class FernEdge:
    """One Fern-generated, httpx-based SDK's error edge, naming ``store`` in every error.

    ``api_error`` is the SDK's HTTP status error (with ``status_code`` and ``body``);
    ``response_errors`` are what a malformed body raises while the SDK parses it;
    ``reach_hint`` is the hint when the server cannot be reached.
    """

    store: str
    api_error: type[Exception]
    response_errors: tuple[type[Exception], ...]
    reach_hint: str

    @contextmanager
    def converted(self, call: str) -> Iterator[None]:
        """Turn the SDK's (and httpx's) exceptions into adapter errors naming ``store.call``."""
        store = self.store
        try:
            yield
        except AdapterError:
            raise
        except self.api_error as exc:
            status = getattr(exc, "status_code", None)
            raise StoreCallError(
                f"HTTP {status}: {str(getattr(exc, 'body', ''))[:300]}",
                store=store,
                call=call,
                status=status,
                hint=status_hint(status),
            ) from exc
        except httpx.TimeoutException as exc:
            raise StoreTimeoutError(
                "the request timed out", store=store, call=call, hint="retry, or raise timeout="
            ) from exc
        except httpx.HTTPError as exc:
            raise StoreCallError(
                f"could not reach the server: {exc}", store=store, call=call, hint=self.reach_hint
            ) from exc
        except (*self.response_errors, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StoreResponseError(
                f"unexpected response: {type(exc).__name__}: {str(exc)[:300]}",
                store=store,
                call=call,
            ) from exc

    def run(self, call: str, fn: Callable[[], T]) -> T:
        """``fn()`` inside :meth:`converted`."""
        with self.converted(call):
            return fn()

    def malformed(self, call: str, what: str, got: Any) -> StoreResponseError:
        """The error for a response that parsed but is not ``what`` the adapter needs."""
        return malformed(self.store, call, what, got)


__all__ = ["FernEdge"]
