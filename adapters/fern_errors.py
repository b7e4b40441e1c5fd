"""The error edge shared by the two Zep SDKs, both Fern-generated clients built on httpx.

Imported only by the Zep adapters, whose SDKs bring httpx; the bare install does not need it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from gnomon.adapters.errors import (
    AdapterError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
    status_hint,
)


@contextmanager
def fern_converted(
    store: str,
    call: str,
    *,
    api_error: type[Exception],
    response_errors: tuple[type[Exception], ...],
    reach_hint: str,
) -> Iterator[None]:
    """Convert a Fern-generated, httpx-based SDK's exceptions (both Zep SDKs) at the edge.

    ``api_error`` is the SDK's HTTP status error (with ``status_code`` and ``body``);
    ``response_errors`` are what a malformed body raises while the SDK parses it.
    """
    try:
        yield
    except AdapterError:
        raise
    except api_error as exc:
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
            f"could not reach the server: {exc}", store=store, call=call, hint=reach_hint
        ) from exc
    except (*response_errors, AttributeError, KeyError, TypeError, ValueError) as exc:
        raise StoreResponseError(
            f"unexpected response: {type(exc).__name__}: {str(exc)[:300]}", store=store, call=call
        ) from exc


__all__ = ["fern_converted"]
