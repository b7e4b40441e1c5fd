"""mem0 behind the firewall: ``Memory`` and ``AsyncMemory`` (OSS), ``MemoryClient`` and
``AsyncMemoryClient`` (platform), keeping the SDK's method names, signatures and return shapes.

Adoption is one line::

    memory = GuardedMemory(Memory.from_config(cfg), wall, project="shop", user="alice")
    memory = AsyncGuardedMemory(AsyncMemory.from_config(cfg), wall, project="shop")
    client = GuardedMemoryClient(MemoryClient(api_key=key), wall, project="shop")
    client = AsyncGuardedMemoryClient(AsyncMemoryClient(api_key=key), wall, project="shop")

* ``add`` records each message with its origin before mem0 sees it. With ``infer=False`` each
  message is one memory, written by its own call so it carries its own ``gnomon_belief_id``.
  With ``infer=True`` mem0's LLM rewrites the messages into facts. Every message mem0 reads is
  recorded first (system role and non-string content too, as canonical JSON); each fact is an
  agent-authored belief carrying the agent joined with *everything the session has read* (those
  messages included), so no message form and no earlier read escapes the join (summarization
  laundering, closed), then bound to the id mem0 gave it. The answer holds the text the
  firewall recorded (``infer=False``) or the facts screened as a read (``infer=True``: a fact
  the policy withholds keeps its id and event, not its text); nothing else the server sent.
  A binding's hash covers who said a memory (``role``, ``actor_id``, ``attributed_to``) and
  its caller metadata, so a store edit of either is drift.
* **Lower-integrity revisions.** ``update``, ``delete`` and ``delete_all`` whose write (the
  agent, joined with what its session read, unless the host passes ``gnomon_origin=``) has lower
  integrity than a supported memory are refused with
  :class:`~adapters.errors.ProtectedBeliefError` before mem0 is called: the new text becomes an
  unverified candidate contradicting the trusted memory, which stays in mem0 and stays supported.
  Refusing (rather than writing through) is the option that never loses the trusted fact and never
  shows the untrusted text in its place. mem0's own ``infer=True`` UPDATE or DELETE of such a
  memory has already happened when the firewall hears of it: the new text is recorded as the
  same kind of candidate (bound to the rewritten item) and the trusted text is written back as a
  new memory bound to its belief, so the store holds it again and the attempt is on the record.
  The host revises a user's memory with ``gnomon_origin=`` naming that user.
  ``gnomon_origin=Origin.user("alice")`` (host code, never a tool the model calls) records the
  messages as stated by that user instead of written by the agent.
* ``search``, ``get`` and ``get_all`` return only the hits the ContextPolicy admits or quotes
  (the default, ``assistant``, quotes unverified clean memories), each with a ``gnomon`` key
  holding its labels; a quoted hit's ``memory`` is its escaped ``<quoted-data origin=...>``
  line and its raw text is ``gnomon["text"]``; at most the policy's ``quote.max_items`` come
  back quoted, and beside the results only the platform's pagination fields (no graph
  ``relations``: unscreened text). ``update``, ``delete`` and ``delete_all`` are
  revisions. ``history(memory_id, grant=...)`` needs an auditor grant and is logged.
* ``reset``, ``chat`` and every other public SDK method are refused
  (:class:`~adapters.errors.BypassRefusedError`): nothing reaches the store around the guard.

Each method is written once, as a *flow* (:class:`~adapters.core.guarded`): a generator that
yields the raw SDK calls it needs (:class:`~adapters.core.Call`) and does every firewall step
between them, with the installed SDK's signature. :func:`~adapters.core.drive` runs it against
a sync client, :func:`~adapters.core.adrive` awaits each call of an async one (shared with
Letta and Zep); that is the only difference between ``GuardedMemory`` and
``AsyncGuardedMemory`` (and between the two platform clients).
``.gnomon`` (audit, import, export, sync) is synchronous: for ``AsyncMemory`` it runs the
client's coroutines on a private event loop thread, for ``AsyncMemoryClient`` on a sync
``MemoryClient`` sharing its key and host (or ``sync_client=``).

Importing this module without mem0 installed raises :class:`~adapters.errors.MissingSDKError`
naming ``pip install 'gnomon[mem0]'``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any, Self, TypeVar

from gnomon.adapters.errors import sdk_imports

with sdk_imports("mem0", "mem0ai"):
    from mem0 import AsyncMemory, AsyncMemoryClient, Memory, MemoryClient

from gnomon.adapters.base import merged_metadata
from gnomon.adapters.core import WRITE, Args, Flow, guarded
from gnomon.adapters.core import Call as _Call
from gnomon.adapters.errors import (
    AdapterError,
    BypassRefusedError,
    StoreCallError,
    StoreResponseError,
)
from gnomon.adapters.guard import fetch_size
from gnomon.adapters.mem0_backend import (
    STORE,
    SyncView,
    call_converting,
    converting,
    results_of,
    to_item,
)
from gnomon.adapters.mem0_guard import _BIG, RESTORED_AS, _Guarded, _scope
from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.host.channels import WriteOrigin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.content import MAX_QUERY_CHARS, checked_text

T = TypeVar("T")
PLATFORM_SCOPE = ("user_id", "agent_id", "run_id", "app_id")


def _options(a: Args) -> dict[str, Any]:
    """A platform call's ``options`` model merged under its keyword arguments."""
    options, kwargs = a.get("options"), a.get("kwargs") or {}
    given = options.model_dump(exclude_unset=True) if options is not None else {}
    return {**given, **kwargs}


class _Mem0Flows(_Guarded):
    """The flows every wrapper shares, whichever client it drives. Each public method is a
    :class:`~adapters.core.guarded` flow: its signature is the installed SDK's (``_SDK``: the
    sync and async client classes), sync on a sync client and a coroutine on an async one."""

    _ASYNC = False
    _converted = staticmethod(converting)

    @property
    def _raw(self) -> Any:
        return self._client

    def _worker(self) -> Executor:
        return self.gnomon._guard.worker()

    def _check_client(self, client: Any) -> None:
        add = getattr(client, "add", None)
        if add is None or inspect.iscoroutinefunction(add) != self._ASYNC:
            kind = "an async" if self._ASYNC else "a sync"
            raise StoreCallError(
                f"{type(self).__name__} wraps {kind} mem0 client, got {type(client).__name__}",
                store=STORE,
                call="__init__",
                hint="GuardedMemory/GuardedMemoryClient for Memory/MemoryClient, "
                "AsyncGuardedMemory/AsyncGuardedMemoryClient for the async ones",
            )

    def _add_plain(
        self, messages: Any, metadata: Any, origin: WriteOrigin | None, **sent: Any
    ) -> Flow:
        guard, client = self.gnomon._guard, self._client
        results = []
        for message, pending in self._plain(messages, metadata, origin):
            try:
                out = yield _Call(
                    "add",
                    lambda m=message, p=pending: client.add(
                        [m], metadata=p.metadata, infer=False, **sent
                    ),
                )
            except AdapterError as exc:
                guard.fail_write(pending, exc, "add")
                raise
            results.append(self._confirm_row(pending, out))
        return {"results": results}

    def _add_inferred(
        self, messages: Any, metadata: Any, origin: WriteOrigin | None, **sent: Any
    ) -> Flow:
        guard, client = self.gnomon._guard, self._client
        inputs, checked, labelled = self._inputs(messages, metadata, origin)
        # mem0's extraction prompt shows its LLM the scope's existing memories: every one of
        # them is an input of the facts it writes (an unbound one is recorded as external)
        scope = {k: v for k, v in sent.items() if k in PLATFORM_SCOPE and v}
        seen = yield from self._scope_rows(scope)
        context = [b.id for _, b in guard.resolve_items([to_item(r, "get_all") for r in seen])]
        out = yield _Call(
            "add", lambda: client.add(messages, metadata=labelled, infer=True, **sent)
        )
        extracted = results_of(out, "add")
        facts, restores = self._extracted(extracted, inputs, checked, context)
        for restore in restores:  # trusted memories mem0 rewrote or dropped: written back
            yield from self._write_back(restore, sent)
        rows = []
        for pending in facts:
            ident = str(pending.binding.store_id)
            try:
                yield _Call(
                    "update", lambda i=ident, p=pending: client.update(i, metadata=p.metadata)
                )
                row = yield _Call("get", lambda i=ident: client.get(i))
                # the binding covers the fact as mem0 now holds it (its attribution included)
                stored = to_item(row, "get") if row is not None else None
            except AdapterError as exc:
                guard.fail_write(pending, exc, "update")
                raise
            guard.confirm_write(pending, ident, stored=stored)
            rows.extend([row] if row is not None else [])
        # the facts are text mem0's LLM wrote: the caller gets them as a read would
        return self._written(rows, extracted)

    def _scope_rows(self, scope: Mapping[str, Any]) -> Flow:
        """Every memory mem0 holds for ``scope`` (the platform's pages followed)."""
        if not self._PLATFORM:
            listed = yield _Call(
                "get_all", lambda: self._client.get_all(filters=dict(scope), top_k=_BIG)
            )
            return results_of(listed, "get_all")
        rows: list[Any] = []
        page = 1
        while True:
            listed = yield _Call(
                "get_all",
                lambda p=page: self._client.get_all(filters=dict(scope), page=p, page_size=100),
            )
            found = results_of(listed, "get_all")
            rows.extend(found)
            if not found or not (isinstance(listed, Mapping) and listed.get("next")):
                return rows
            page += 1

    def _write_back(self, restore: Any, sent: Mapping[str, Any]) -> Flow:
        """Write a protected belief's text back as a new memory, bound to the same belief."""
        scope = {k: v for k, v in sent.items() if k in PLATFORM_SCOPE and v}
        message = {**RESTORED_AS, "content": restore.text}
        try:
            out = yield _Call(
                "add",
                lambda: self._client.add(
                    [message], metadata=restore.metadata, infer=False, **scope
                ),
            )
        except AdapterError as exc:
            self.gnomon._guard.fail_write(restore, exc, "add")
            raise
        self._confirm_row(restore, out)

    def _update_flow(
        self,
        memory_id: str,
        text: str | None,
        metadata: Any,
        origin: WriteOrigin | None,
        **sent: Any,
    ) -> Flow:
        client, guard = self._client, self.gnomon._guard
        checked = merged_metadata(STORE, "update", self.gnomon._backend.limits, metadata)
        # the item as it stands: who said it stays as its binding covered it (mem0 keeps it)
        current = yield _Call("get", lambda: client.get(memory_id))
        held = to_item(current, "get") if current is not None else None
        if text is None:  # metadata only: a revision of the rendered item, same text
            if held is None:
                return (
                    yield _Call(
                        "update", lambda: client.update(memory_id, metadata=checked, **sent)
                    )
                )
            text = held.text
        pending, _old = guard.begin_update(
            memory_id,
            text,
            checked,
            origin=origin,
            rendered=guard.held(held) if held is not None else None,
        )
        try:
            out = yield _Call(
                "update",
                lambda: client.update(memory_id, text=text, metadata=pending.metadata, **sent),
            )
            row = yield _Call("get", lambda: client.get(memory_id))
        except AdapterError as exc:
            guard.fail_write(pending, exc, "update")
            raise
        # mem0 merges metadata: the binding records the item as it now stands
        stored = to_item(row, "get") if row is not None else None
        guard.confirm_write(pending, memory_id, stored=stored, merged=True)
        return out

    def _delete_flow(self, memory_id: str, origin: WriteOrigin | None = None, **sent: Any) -> Flow:
        guard = self.gnomon._guard
        binding = guard.begin_delete(memory_id, origin=origin)
        try:
            return (yield _Call("delete", lambda: self._client.delete(memory_id, **sent)))
        except AdapterError as exc:
            if binding is not None:
                guard.fail_delete(binding, exc, "delete")
            raise

    def _delete_rows_flow(self, rows: list[Any], call: _Call, origin: WriteOrigin | None) -> Flow:
        bindings = self._before_delete_all(rows, origin)
        try:
            return (yield call)
        except AdapterError as exc:
            self._fail_all(bindings, exc)
            raise

    def _delete_all_flow(
        self, scope: Mapping[str, Any], call: _Call, origin: WriteOrigin | None
    ) -> Flow:
        """A bulk delete of ``scope``: what it holds listed first (every binding retired),
        ``call`` made, then the scope read back (:meth:`_deleted`)."""
        rows = yield from self._scope_rows(scope)
        out = yield from self._delete_rows_flow(rows, call, origin)
        left = yield from self._scope_rows(scope)
        return self._deleted(out, rows, left)

    def _history_flow(self, memory_id: str, grant: Grant | None) -> Flow:
        self._history(memory_id, grant)
        rows = yield _Call("history", lambda: self._client.history(memory_id))
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise StoreResponseError("history is not a list of rows", store=STORE, call="history")
        return [dict(r) for r in rows]

    def _get_flow(self, memory_id: str) -> Flow:
        row = yield _Call("get", lambda: self._client.get(memory_id))
        return self._screen_one(row, memory_id)


# -- OSS: Memory and AsyncMemory --------------------------------------------------------------


class _OssFlows(_Mem0Flows):
    _SDK = (Memory, AsyncMemory)

    @classmethod
    def from_config(cls, config_dict: dict[str, Any], wall: Firewall, **options: Any) -> Self:
        """``Memory.from_config(config_dict)`` (``AsyncMemory``'s for the async wrapper), then
        guarded with ``options`` (``session=``, ``user_channel=``, ``policy=``…)::

            memory = GuardedMemory.from_config(cfg, wall, session=session)
        """
        import mem0

        sdk = mem0.AsyncMemory if cls._ASYNC else mem0.Memory
        client = call_converting("from_config", lambda: sdk.from_config(config_dict))
        return cls(client, wall, **options)

    @guarded(extras=WRITE, returns=dict[str, Any])
    def add(self, a: Args) -> Flow:
        if a.get("memory_type") is not None:
            raise BypassRefusedError(
                "procedural memories are LLM summaries written without per-fact ids",
                store=STORE,
                call="add",
                hint="add the steps with infer=True (their labels are joined) instead",
            )
        scope = _scope(user_id=a.get("user_id"), agent_id=a.get("agent_id"), run_id=a.get("run_id"))
        taken = {"messages", "user_id", "agent_id", "run_id", "metadata", "infer", "memory_type"}
        extra = {k: v for k, v in a.arguments().items() if k not in taken | {"prompt"}}
        messages, metadata = a["messages"], a.get("metadata")
        if not a.get("infer", True):
            return (yield from self._add_plain(messages, metadata, a.origin, **scope, **extra))
        return (
            yield from self._add_inferred(
                messages, metadata, a.origin, prompt=a.get("prompt"), **scope, **extra
            )
        )

    @guarded(returns=dict[str, Any])
    def search(self, a: Args) -> Flow:
        query, kwargs = a["query"], a.arguments()
        top_k = kwargs.pop("top_k", 20)
        del kwargs["query"]
        checked_text("query", query, limit=MAX_QUERY_CHARS)  # logged with the recall
        fetch = fetch_size(top_k)  # over-fetched, ranked trusted first, cut to top_k
        out = yield _Call("search", lambda: self._client.search(query, top_k=fetch, **kwargs))
        return self._screen(out, "search", query=query, k=top_k, limit=top_k)

    @guarded(returns=dict[str, Any] | None)
    def get(self, a: Args) -> Flow:
        return (yield from self._get_flow(a["memory_id"]))

    @guarded(returns=dict[str, Any])
    def get_all(self, a: Args) -> Flow:
        kwargs = a.arguments()
        top_k = kwargs.pop("top_k", 20)
        fetch = fetch_size(top_k)
        out = yield _Call("get_all", lambda: self._client.get_all(top_k=fetch, **kwargs))
        return self._screen(out, "get_all", query="get_all", k=top_k, limit=top_k)

    @guarded(extras=WRITE, returns=dict[str, Any])
    def update(self, a: Args) -> Flow:
        text = a.get("text") if a.get("text") is not None else a.get("data")
        extra = {"expiration_date": a["expiration_date"]} if "expiration_date" in a else {}
        return (
            yield from self._update_flow(a["memory_id"], text, a.get("metadata"), a.origin, **extra)
        )

    @guarded(extras=WRITE, returns=dict[str, Any])
    def delete(self, a: Args) -> Flow:
        return (yield from self._delete_flow(a["memory_id"], a.origin))

    @guarded(extras=WRITE, returns=dict[str, Any])
    def delete_all(self, a: Args) -> Flow:
        """Scoped to the session's user (an unscoped call is refused before any I/O), checked
        afterwards: the answer lists what was deleted under ``gnomon.deleted``, and a store
        that still returns any of it raises :class:`PartialDeleteError`."""
        scope = self._delete_scope(
            _scope(user_id=a.get("user_id"), agent_id=a.get("agent_id"), run_id=a.get("run_id"))
        )
        call = _Call("delete_all", lambda: self._client.delete_all(**scope))
        return (yield from self._delete_all_flow(scope, call, a.origin))

    @guarded(extras=("grant",), returns=list[dict[str, Any]])
    def history(self, a: Args) -> Flow:
        return (yield from self._history_flow(a["memory_id"], a.extras.get("grant")))


class GuardedMemory(_OssFlows):
    """``mem0.Memory`` behind the firewall (see the module docstring)."""

    def close(self) -> None:
        self.gnomon.close()
        self._client.close()

    def __enter__(self) -> GuardedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncGuardedMemory(_OssFlows):
    """``mem0.AsyncMemory`` behind the firewall: :class:`GuardedMemory`'s flows, awaited."""

    _ASYNC = True

    def _backend_client(self, client: Any, sync_client: Any) -> Any:
        return sync_client or SyncView(client)

    async def close(self) -> None:
        """Async like the rest: the guard's session end and mem0's own close (which closes its
        vector store and history database) run off the event loop."""
        await asyncio.to_thread(self._close_now)

    aclose = close

    def _close_now(self) -> None:
        self.gnomon.close()
        backend_client = getattr(self.gnomon._backend, "inner", None)
        view = getattr(backend_client, "client", None)
        if isinstance(view, SyncView):
            view.close_loop()
        self._client.close()

    async def __aenter__(self) -> AsyncGuardedMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- platform: MemoryClient and AsyncMemoryClient ---------------------------------------------


class _PlatformFlows(_Mem0Flows):
    _PLATFORM = True
    _SDK = (MemoryClient, AsyncMemoryClient)

    @guarded(extras=WRITE, returns=dict[str, Any])
    def add(self, a: Args) -> Flow:
        kw = _options(a)
        infer = kw.pop("infer", True)
        messages, metadata = a["messages"], kw.pop("metadata", None)
        if not infer:
            return (yield from self._add_plain(messages, metadata, a.origin, **kw))
        return (yield from self._add_inferred(messages, metadata, a.origin, **kw))

    @guarded(returns=dict[str, Any])
    def search(self, a: Args) -> Flow:
        query, kw = a["query"], _options(a)
        checked_text("query", query, limit=MAX_QUERY_CHARS)  # logged with the recall
        top_k = int(kw.get("top_k") or 10)
        kw["top_k"] = fetch_size(top_k)  # over-fetched, ranked trusted first, cut to top_k
        out = yield _Call("search", lambda: self._client.search(query, **kw))
        return self._screen(out, "search", query=query, k=top_k, limit=top_k)

    @guarded(returns=dict[str, Any] | None)
    def get(self, a: Args) -> Flow:
        return (yield from self._get_flow(a["memory_id"]))

    @guarded(returns=dict[str, Any])
    def get_all(self, a: Args) -> Flow:
        kw = _options(a)
        out = yield _Call("get_all", lambda: self._client.get_all(**kw))
        rows = results_of(out, "get_all")
        return self._screen(out, "get_all", query="get_all", k=max(len(rows), 1))

    @guarded(extras=WRITE, returns=dict[str, Any])
    def update(self, a: Args) -> Flow:
        kw = _options(a)
        text, metadata = kw.pop("text", None), kw.pop("metadata", None)
        return (yield from self._update_flow(a["memory_id"], text, metadata, a.origin, **kw))

    @guarded(extras=WRITE, returns=dict[str, Any])
    def delete(self, a: Args) -> Flow:
        if a.get("delete_linked"):
            raise BypassRefusedError(
                "delete_linked=True deletes memories the firewall cannot revise one by one",
                store=STORE,
                call="delete",
                hint="delete each linked memory by its id",
            )
        return (yield from self._delete_flow(a["memory_id"], a.origin))

    @guarded(extras=WRITE, returns=dict[str, Any])
    def delete_all(self, a: Args) -> Flow:
        """Scoped to the session's user (an unscoped or wildcard call is refused before any
        I/O), checked afterwards: the answer lists what was deleted under ``gnomon.deleted``,
        and a store that still returns any of it raises :class:`PartialDeleteError`."""
        kw = _options(a)
        scope = self._delete_scope({k: v for k, v in kw.items() if k in PLATFORM_SCOPE and v})
        call = _Call("delete_all", lambda: self._client.delete_all(**kw))
        return (yield from self._delete_all_flow(scope, call, a.origin))

    @guarded(extras=("grant",), returns=list[dict[str, Any]])
    def history(self, a: Args) -> Flow:
        return (yield from self._history_flow(a["memory_id"], a.extras.get("grant")))


class GuardedMemoryClient(_PlatformFlows):
    """``mem0.MemoryClient`` (the platform's HTTP client) behind the firewall."""

    def close(self) -> None:
        self.gnomon.close()
        self._client.client.close()

    def __enter__(self) -> GuardedMemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncGuardedMemoryClient(_PlatformFlows):
    """``mem0.AsyncMemoryClient`` behind the firewall: :class:`GuardedMemoryClient`'s flows,
    awaited. ``.gnomon`` runs on ``sync_client`` (default: a ``MemoryClient`` with the same key
    and host, which pings the platform once when it is built)."""

    _ASYNC = True

    def _backend_client(self, client: Any, sync_client: Any) -> Any:
        if sync_client is not None:
            return sync_client
        from mem0 import MemoryClient

        return call_converting(
            "__init__", lambda: MemoryClient(api_key=client.api_key, host=client.host)
        )

    async def close(self) -> None:
        """Ends the guard's session (off the event loop) and closes the SDK's HTTP client."""
        await asyncio.to_thread(self.gnomon.close)
        await self._client.async_client.aclose()

    aclose = close

    async def __aenter__(self) -> AsyncGuardedMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = [
    "AsyncGuardedMemory",
    "AsyncGuardedMemoryClient",
    "GuardedMemory",
    "GuardedMemoryClient",
]
