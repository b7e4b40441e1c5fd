"""What a memory-store adapter refuses, under the one Gnomon error root.

::

    GnomonError
    └── AdapterError                  a memory-store adapter could not do what was asked
        ├── MissingSDKError           the store's SDK is not installed (names the pip command;
        │                             also an ImportError, so ``except ImportError`` catches it)
        ├── StoreCallError            the store's SDK or server failed a call (names store, call)
        │   └── StoreTimeoutError     the call timed out
        ├── StoreResponseError        the store answered with something malformed or unexpected
        ├── StoreMetadataError        metadata the store would reject (too many keys, nesting)
        └── BypassRefusedError        an SDK method the guard does not cover was called
            └── RefusedAttributeError an attribute the guarded client does not have (also an
                                      AttributeError: ``hasattr``, ``getattr(x, n, d)``, ``copy``)

Every error names the store and the call (``mem0.search``), so a log line says where it failed.
The SDK's own exception is kept as ``__cause__`` (``raise … from exc``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gnomon.firewall.model.errors import GnomonError


class AdapterError(GnomonError):
    """A memory-store adapter failed; ``store`` and ``call`` say where."""

    def __init__(
        self, message: str, *, store: str, call: str | None = None, hint: str | None = None
    ) -> None:
        where = f"{store}.{call}" if call else store
        super().__init__(f"{where}: {message}", hint=hint)
        self.store = store
        self.call = call


class MissingSDKError(AdapterError, ImportError):
    """The adapter's SDK is not importable. Also an :class:`ImportError`, so code that probes
    for optional integrations with ``except ImportError`` keeps working."""

    def __init__(self, store: str, extra: str, module: str) -> None:
        command = f"pip install 'gnomon[{extra}]'"
        super().__init__(
            f"the {store} adapter needs the {module!r} package, which is not installed",
            store=store,
            hint=f"run {command}",
        )
        self.command = command
        self.name = module


class StoreCallError(AdapterError):
    """The store's SDK raised, or its server answered with an error status."""

    def __init__(
        self,
        message: str,
        *,
        store: str,
        call: str,
        status: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, store=store, call=call, hint=hint)
        self.status = status


class StoreTimeoutError(StoreCallError):
    """The call to the store did not complete in time."""


class StoreResponseError(AdapterError):
    """The store answered, but not in the shape its SDK documents."""


class StoreMetadataError(AdapterError):
    """Metadata the store would reject; refused before anything is recorded or written."""


class BypassRefusedError(AdapterError):
    """A public SDK method the guard does not cover: refused rather than passed through."""


class RefusedAttributeError(BypassRefusedError, AttributeError):
    """An attribute a guarded client does not define: refused, never looked up on the SDK.

    Also an :class:`AttributeError`, so Python's protocols behave: ``hasattr(client, "reset")``
    is False, ``getattr(client, "reset", None)`` is None, and ``copy.copy`` / ``pickle`` probes
    of optional dunders fall back as they do for any object."""


def refused_attribute(store: str, name: str, hint: str) -> RefusedAttributeError:
    """The error ``__getattr__`` raises on a guarded client or resource."""
    error = RefusedAttributeError(
        f"{name!r} is not a guarded method"
        if "." not in name
        else f"{name} is not a guarded method",
        store=store,
        call=name,
        hint=hint,
    )
    error.name = name.rsplit(".", 1)[-1]
    return error


class PartialDeleteError(AdapterError):
    """The store reported a delete done, but a read afterwards still returns items it was asked
    to delete (a known failure of bulk deletes): reported, never certified as erased."""

    def __init__(self, message: str, *, store: str, call: str, remaining: list[str]) -> None:
        super().__init__(
            message,
            store=store,
            call=call,
            hint="the listed items are still in the store: delete them one by one and check again",
        )
        self.remaining = remaining


class ProtectedBeliefError(AdapterError):
    """An update or delete from a lower-integrity write aimed at a higher-integrity belief.

    The store was not touched; the firewall recorded the new text as an unverified candidate
    (``candidate_id``) contradicting the protected belief (``belief_id``), so the attempt is on
    the record and surfaces as a contradiction, never as a retirement of the trusted fact.
    """

    def __init__(
        self, message: str, *, store: str, call: str, belief_id: str, candidate_id: str
    ) -> None:
        super().__init__(
            message,
            store=store,
            call=call,
            hint="only a write at least as trusted as the memory (the same user, through the "
            "host's channel: gnomon_origin=...) may revise or delete it",
        )
        self.belief_id = belief_id
        self.candidate_id = candidate_id


class ConflictingBeliefError(ProtectedBeliefError):
    """An update from a different trusted origin aimed at a supported belief (another user's
    fact). Neither may retire the other: the store was not touched, both beliefs are now
    ``contradicted`` (out of trusted results, both in the contradiction channel) and every
    decision that rested on the old one is flagged."""


def status_hint(status: int | None) -> str:
    """The "what to do" sentence for an HTTP status."""
    if status in (401, 403):
        return "check the API key (and that it may access this project)"
    if status == 404:
        return "the id does not exist in the store; list ids with get_all()"
    if status == 429:
        return "the store is rate limiting: retry later or lower the request rate"
    if status is not None and status >= 500:
        return "the store's server failed; retry later and check its status page"
    return "see the store's error above"


def malformed(store: str, call: str, what: str, got: object) -> StoreResponseError:
    """The error for a response that is not the shape the SDK documents."""
    return StoreResponseError(
        f"expected {what}, got {type(got).__name__}: {str(got)[:200]}", store=store, call=call
    )


@contextmanager
def sdk_imports(store: str, package: str, *, extra: str | None = None) -> Iterator[None]:
    """Around the imports of a store's SDK: an :class:`ImportError` among them becomes the
    :class:`MissingSDKError` naming ``pip install 'gnomon[<extra>]'`` (``extra``: the store's
    name unless given)::

        with sdk_imports("letta", "letta-client"):
            from letta_client import Letta
    """
    try:
        yield
    except MissingSDKError:
        raise
    except ImportError as exc:
        raise MissingSDKError(store, extra or store, package) from exc


__all__ = [
    "AdapterError",
    "BypassRefusedError",
    "ConflictingBeliefError",
    "MissingSDKError",
    "PartialDeleteError",
    "ProtectedBeliefError",
    "RefusedAttributeError",
    "StoreCallError",
    "StoreMetadataError",
    "StoreResponseError",
    "StoreTimeoutError",
    "malformed",
    "refused_attribute",
    "sdk_imports",
    "status_hint",
]
