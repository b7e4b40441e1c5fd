"""The store-specific half of the mem0 adapter: error edge, response parsing, backends.

Every mem0 and httpx exception is converted here into an :mod:`adapters.errors` type naming
``mem0.<call>`` (HTTP status kept, timeouts as :class:`StoreTimeoutError`); every response is
parsed into :class:`~adapters.base.StoreItem` or a :class:`StoreResponseError`.
:mod:`adapters.mem0` builds the SDK-shaped wrappers on top.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from gnomon.adapters import core
from gnomon.adapters.adapter import Adapter
from gnomon.adapters.base import (
    MetadataLimits,
    Page,
    StoreBackend,
    StoreItem,
    earlier,
    rendered_metadata,
    rendered_value,
)
from gnomon.adapters.errors import (
    AdapterError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
    sdk_imports,
    status_hint,
)
from gnomon.adapters.guard import Guard
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.host.channels import Channel
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.errors import InputError

with sdk_imports("mem0", "mem0ai"):  # the SDK, and the httpx it brings
    import httpx
    from mem0.exceptions import MemoryError as Mem0Error

STORE = "mem0"
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
#: Who said a memory, as mem0 keeps it beside the text: the message's ``role`` and ``name``
#: (``actor_id``) for ``infer=False``, the extractor's ``attributed_to`` for a fact. Rendered
#: where present (the hash covers them; before they were, it covered the metadata alone).
SPEAKER_FIELDS = ("role", "actor_id", "attributed_to")
#: A memory's fields returned when each is one token (ids, scope, dates), never a sentence.
TOKEN_FIELDS = (
    "id", *SCOPE_KEYS, "app_id", "owner", "organization", "created_at", "updated_at",
    "expiration_date",
)  # fmt: skip
#: What an ``add`` answer's ``event`` may say.
EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
T = TypeVar("T")


# -- the error edge ---------------------------------------------------------------------------


def convert(exc: BaseException, call: str) -> AdapterError:
    """mem0's and httpx's exceptions as :mod:`adapters.errors` types naming ``mem0.<call>``."""
    if isinstance(exc, AdapterError):
        return exc
    status = _status(exc)
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    timed_out = (
        isinstance(exc, httpx.TimeoutException) or getattr(exc, "error_code", None) == "NET_TIMEOUT"
    )
    if timed_out or isinstance(exc.__context__, httpx.TimeoutException):
        return StoreTimeoutError(
            f"timed out: {text}", store=STORE, call=call, hint="retry, or raise the timeout"
        )
    if status is not None:
        return StoreCallError(
            f"HTTP {status}: {text}",
            store=STORE,
            call=call,
            status=status,
            hint=status_hint(status),
        )
    return StoreCallError(f"{type(exc).__name__}: {text}", store=STORE, call=call)


def _status(exc: BaseException) -> int | None:
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # chains can loop
        visited.add(id(seen))
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        code = getattr(seen, "error_code", None)
        if isinstance(code, str) and code.startswith("HTTP_") and code[5:].isdigit():
            return int(code[5:])
        seen = seen.__cause__ or seen.__context__
    return None


@contextmanager
def converting(call: str) -> Iterator[None]:
    """The error edge around one raw call (the flows' ``converted``, see :mod:`adapters.core`)."""
    try:
        yield
    except (Mem0Error, httpx.HTTPError, ValueError, OSError, RuntimeError) as exc:
        raise convert(exc, call) from exc


def call_converting(call: str, fn: Callable[[], T]) -> T:
    with converting(call):
        return fn()


# -- normalizing responses --------------------------------------------------------------------


def to_item(row: Any, call: str) -> StoreItem:
    """One mem0 memory dict as a :class:`StoreItem`, or :class:`StoreResponseError`."""
    if not isinstance(row, Mapping):
        raise StoreResponseError(
            f"expected a memory object, got {type(row).__name__}", store=STORE, call=call
        )
    ident, text = row.get("id"), row.get("memory")
    if not isinstance(ident, str) or not ident or not isinstance(text, str):
        raise StoreResponseError(
            f"memory object without a string id and memory: keys {sorted(row)[:8]}",
            store=STORE,
            call=call,
        )
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise StoreResponseError("memory metadata is not an object", store=STORE, call=call)
    scope = {k: row[k] for k in SCOPE_KEYS if isinstance(row.get(k), str)}
    # the row reaches the caller whole: its caller metadata and who said it are rendered, so
    # the hash covers them
    said = {k: rendered_value(row[k]) for k in SPEAKER_FIELDS if row.get(k) is not None}
    rendered = {**rendered_metadata(metadata), **said}
    return StoreItem(
        ident,
        text,
        metadata,
        scope=scope,
        raw=settled_row(row, text),
        rendered=rendered,
        text_field="memory",
        earlier_hashes=earlier(text, rendered, ("metadata",)),
    )


def settled_row(row: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A memory row as returned: the text and the fields its hash covers as sent; numbers and
    flags (a score); ids, scope and dates when each is one token; mem0's ``hash`` when it is
    the MD5 of the text mem0 makes it (so it says nothing the text does not), ``event`` when
    mem0 declares it. Anything else is None: ``categories`` (the platform's LLM labels,
    assigned after the write, so a binding covering them would drift by itself, as a Zep
    session's classifications are not returned), an answer's ``previous_memory`` (a text no
    binding vouches for) and any key the server adds."""
    bound = ("memory", "metadata", *SPEAKER_FIELDS)
    digest = hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()
    out: dict[str, Any] = {}
    for key, value in row.items():
        keep = (
            key in bound
            or value is None
            or isinstance(value, bool | int | float)
            or (key in TOKEN_FIELDS and core.one_token(value))
            or (key == "hash" and value == digest)
            or (key == "event" and value in EVENTS)
        )
        out[key] = value if keep else None
    return out


def results_of(response: Any, call: str) -> list[Any]:
    """The ``results`` list of a mem0 response (a bare list is accepted too)."""
    if isinstance(response, list):
        return response
    if isinstance(response, Mapping) and isinstance(response.get("results"), list):
        return list(response["results"])
    raise StoreResponseError(
        f"expected {{'results': [...]}}, got {type(response).__name__}", store=STORE, call=call
    )


def messages_of(messages: Any) -> list[dict[str, Any]]:
    """mem0's message forms (str, dict, list of dicts) as a list of message dicts."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        return [dict(messages)]
    if isinstance(messages, list) and all(isinstance(m, Mapping) for m in messages):
        return [dict(m) for m in messages]
    raise InputError(
        f"messages must be str, dict, or list[dict], got {type(messages).__name__}",
        hint="pass the conversation as mem0 expects it",
    )


def said_by(message: Mapping[str, Any]) -> dict[str, str]:
    """Who a message sent to mem0 says said it, as the memory renders it: its ``role`` and
    ``name`` (mem0's ``actor_id``)."""
    sent = {"role": message.get("role"), "actor_id": message.get("name")}
    return {k: rendered_value(v) for k, v in sent.items() if v is not None}


def content_of(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    return content if isinstance(content, str) and content.strip() else None


def read_text(message: Mapping[str, Any]) -> str | None:
    """Everything of ``message`` that mem0's extraction may read, as one text: string
    content as is, any other content (a list of parts, an image dict) as canonical JSON, so
    that nothing mem0 shows its LLM escapes the firewall's record. None: nothing to read."""
    content = message.get("content")
    if content is None:
        return None
    text = content if isinstance(content, str) else rendered_value(content)
    return text if text.strip() else None


# -- backends ---------------------------------------------------------------------------------


class Mem0Backend(StoreBackend):
    """Raw calls against an OSS ``mem0.Memory``."""

    name: ClassVar[str] = STORE
    limits: ClassVar[MetadataLimits] = MetadataLimits(nested=False)  # chroma refuses nesting

    def __init__(self, client: Any) -> None:
        self.client = client

    def sent(self, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, str]:
        return said_by({"role": "user"})

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        return self.write_message({"role": "user", "content": text}, metadata, scope)

    def write_message(
        self, message: Mapping[str, Any], metadata: Mapping[str, Any], scope: Mapping[str, str]
    ) -> StoreItem:
        out = self.client.add([dict(message)], metadata=dict(metadata), infer=False, **scope)
        rows = results_of(out, "add")
        if len(rows) != 1:
            raise StoreResponseError(
                f"add returned {len(rows)} results for one message", store=STORE, call="add"
            )
        row = dict(rows[0])
        row.setdefault("metadata", dict(metadata))
        return to_item(row, "add")

    def get(self, store_id: str) -> StoreItem | None:
        row = self.client.get(store_id)
        return None if row is None else to_item(row, "get")

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        out = self.client.search(query, top_k=limit, filters=dict(scope))
        return [to_item(r, "search") for r in results_of(out, "search")]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        # OSS get_all has no cursor: one page holding everything in scope
        out = self.client.get_all(filters=dict(scope), top_k=1_000_000)
        return Page([to_item(r, "get_all") for r in results_of(out, "get_all")])

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem | None:
        """mem0 merges metadata on update: answer with the item as it now stands."""
        self.client.update(store_id, text=text, metadata=dict(metadata))
        return self.get(store_id)

    def delete(self, store_id: str) -> None:
        self.client.delete(store_id)

    def history(self, store_id: str) -> list[dict[str, Any]]:
        rows = self.client.history(store_id)
        if not isinstance(rows, list):
            raise StoreResponseError("history is not a list", store=STORE, call="history")
        return [dict(r) for r in rows]


class PlatformBackend(Mem0Backend):
    """Raw calls against the platform's ``mem0.MemoryClient`` (pages through ``get_all``)."""

    limits: ClassVar[MetadataLimits] = MetadataLimits()

    def write_message(
        self, message: Mapping[str, Any], metadata: Mapping[str, Any], scope: Mapping[str, str]
    ) -> StoreItem:
        out = self.client.add([dict(message)], metadata=dict(metadata), infer=False, **scope)
        rows = [r for r in results_of(out, "add") if isinstance(r, Mapping)]
        if len(rows) != 1:
            raise StoreResponseError(
                f"add returned {len(rows)} results for one message (queued adds are not supported "
                "with infer=False)",
                store=STORE,
                call="add",
            )
        row = {**rows[0], "metadata": dict(metadata)}
        row.setdefault("memory", message.get("content"))
        return to_item(row, "add")

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        page = int(cursor or 1)
        out = self.client.get_all(filters=dict(scope), page=page, page_size=limit)
        items = [to_item(r, "get_all") for r in results_of(out, "get_all")]
        more = isinstance(out, Mapping) and bool(out.get("next"))
        return Page(items, str(page + 1) if more and items else None)

    def get(self, store_id: str) -> StoreItem | None:
        try:  # the platform answers a missing id with HTTP 404
            row = call_converting("get", lambda: self.client.get(store_id))
        except StoreCallError as exc:
            if exc.status == 404:
                return None
            raise
        return None if row is None else to_item(row, "get")


class SyncView:
    """An async mem0 client (``AsyncMemory``) seen synchronously, for the contract backend:
    each coroutine method runs to completion on a private event loop in a daemon thread, so
    ``.gnomon`` (audit, import, export, sync) works inside or outside a running loop."""

    def __init__(self, client: Any) -> None:
        self._async_client = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self, coro: Any) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="gnomon-mem0-loop", daemon=True
                )
                self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._async_client, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        return lambda *args, **kwargs: self._run(attr(*args, **kwargs))

    def close_loop(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()


class _Converting(StoreBackend):
    """Wraps a backend so every raw call converts mem0's errors at this edge."""

    limits: ClassVar[MetadataLimits] = MetadataLimits()

    def __init__(self, inner: Mem0Backend) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.limits = inner.limits  # type: ignore[misc]

    def sent(self, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, str]:
        return self.inner.sent(metadata, scope)

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        return call_converting("add", lambda: self.inner.write(text, metadata, scope))

    def get(self, store_id: str) -> StoreItem | None:
        return call_converting("get", lambda: self.inner.get(store_id))

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        return call_converting("search", lambda: self.inner.search(query, limit=limit, scope=scope))

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        return call_converting(
            "get_all", lambda: self.inner.list_page(scope=scope, cursor=cursor, limit=limit)
        )

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem | None:
        return call_converting(
            "update", lambda: self.inner.update(store_id, text=text, metadata=metadata)
        )

    def delete(self, store_id: str) -> None:
        call_converting("delete", lambda: self.inner.delete(store_id))

    def history(self, store_id: str) -> list[dict[str, Any]]:
        return call_converting("history", lambda: self.inner.history(store_id))


def adapter_for(
    client: Any,
    wall: Firewall,
    *,
    platform: bool,
    project: str | None,
    actor: str,
    user: str | None,
    session: Session | None,
    policy: ContextPolicy | str,
    user_channel: Channel | None = None,
) -> Adapter:
    guard = Guard(
        wall, STORE, session=session, project=project, actor=actor, user=user, policy=policy,
        user_channel=user_channel,
    )  # fmt: skip
    return Adapter(guard, backend_for(client, platform=platform))


def backend_for(client: Any, *, platform: bool) -> StoreBackend:
    """The backend ``.gnomon`` runs on: a sync OSS or platform client, errors converted."""
    return _Converting(PlatformBackend(client) if platform else Mem0Backend(client))


__all__ = [
    "SCOPE_KEYS",
    "SPEAKER_FIELDS",
    "STORE",
    "Mem0Backend",
    "PlatformBackend",
    "SyncView",
    "adapter_for",
    "backend_for",
    "call_converting",
    "content_of",
    "convert",
    "converting",
    "messages_of",
    "read_text",
    "results_of",
    "settled_row",
    "to_item",
]
