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
  laundering, closed), then bound to the id mem0 gave it.
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
* ``search``, ``get`` and ``get_all`` return only the hits the ContextPolicy admits (or quotes),
  each with a ``gnomon`` key holding its labels. ``update``, ``delete`` and ``delete_all`` are
  revisions. ``history(memory_id, grant=...)`` needs an auditor grant and is logged.
* ``reset``, ``chat`` and every other public SDK method are refused
  (:class:`~adapters.errors.BypassRefusedError`): nothing reaches the store around the guard.

Each method is written once, as a *flow*: a generator that yields the raw SDK calls it needs
(:class:`~adapters.core.Call`) and does every firewall step between them. :func:`_drive` runs a
flow against a sync client, :func:`~adapters.core.adrive` awaits each call of an async one
(:mod:`adapters.core`, shared with Letta and Zep); that is the only difference
between ``GuardedMemory`` and ``AsyncGuardedMemory`` (and between the two platform clients).
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
from typing import Any, Self, TypeVar

from adapters.base import merged_metadata
from adapters.core import Call as _Call
from adapters.core import Flow, adrive, drive
from adapters.errors import AdapterError, BypassRefusedError, StoreCallError, StoreResponseError
from adapters.mem0_backend import (
    STORE,
    SyncView,
    call_converting,
    converting,
    results_of,
    to_item,
)
from adapters.mem0_guard import _BIG, _UNSET, _Guarded, _scope
from firewall.channels import WriteOrigin
from firewall.firewall import Firewall
from firewall.grants import Grant

T = TypeVar("T")
PLATFORM_SCOPE = ("user_id", "agent_id", "run_id", "app_id")


def _drive(flow: Flow[T]) -> T:
    """Run a flow against a sync mem0 client (:func:`adapters.core.drive`)."""
    return drive(flow, converting)


def _options(options: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The platform SDK's ``options`` model merged under its keyword arguments."""
    given = options.model_dump(exclude_unset=True) if options is not None else {}
    return {**given, **kwargs}


class _Mem0Flows(_Guarded):
    """The flows every wrapper shares, whichever client it drives."""

    _ASYNC = False

    async def _arun(self, flow: Flow[T]) -> T:
        return await adrive(flow, converting, self.gnomon._guard.worker())

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
        out = yield _Call(
            "add", lambda: client.add(messages, metadata=labelled, infer=True, **sent)
        )
        facts, restores = self._extracted(results_of(out, "add"), inputs, checked)
        for restore in restores:  # trusted memories mem0 rewrote or dropped: written back
            yield from self._write_back(restore, sent)
        for pending in facts:
            try:
                yield _Call(
                    "update",
                    lambda p=pending: client.update(p.binding.store_id, metadata=p.metadata),
                )
            except AdapterError as exc:
                guard.fail_write(pending, exc, "update")
                raise
            guard.confirm_write(pending, str(pending.binding.store_id))
        return dict(out)

    def _write_back(self, restore: Any, sent: Mapping[str, Any]) -> Flow:
        """Write a protected belief's text back as a new memory, bound to the same belief."""
        scope = {k: v for k, v in sent.items() if k in PLATFORM_SCOPE and v}
        message = {"role": "user", "content": restore.text}
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
        if text is None:  # metadata only: a revision of the rendered item, same text
            current = yield _Call("get", lambda: client.get(memory_id))
            if current is None:
                return (
                    yield _Call(
                        "update", lambda: client.update(memory_id, metadata=checked, **sent)
                    )
                )
            text = to_item(current, "get").text
        pending, _old = guard.begin_update(memory_id, text, checked, origin=origin)
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
        guard.confirm_write(pending, memory_id, stored=stored)
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

    def _add(
        self,
        messages: Any,
        user_id: str | None,
        agent_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any] | None,
        timestamp: Any,
        expiration_date: Any,
        infer: bool,
        memory_type: str | None,
        prompt: str | None,
        gnomon_origin: WriteOrigin | None,
        **more: Any,
    ) -> Flow:
        if memory_type is not None:
            raise BypassRefusedError(
                "procedural memories are LLM summaries written without per-fact ids",
                store=STORE,
                call="add",
                hint="add the steps with infer=True (their labels are joined) instead",
            )
        scope = _scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
        extra = {
            k: v
            for k, v in (
                ("timestamp", timestamp),
                ("expiration_date", expiration_date),
                *more.items(),
            )
            if v is not None
        }
        if not infer:
            return (yield from self._add_plain(messages, metadata, gnomon_origin, **scope, **extra))
        return (
            yield from self._add_inferred(
                messages, metadata, gnomon_origin, prompt=prompt, **scope, **extra
            )
        )

    def _search(self, query: str, top_k: int, reference_date: Any, **kwargs: Any) -> Flow:
        if reference_date is not None:
            kwargs["reference_date"] = reference_date
        out = yield _Call("search", lambda: self._client.search(query, top_k=top_k, **kwargs))
        return self._screen(out, "search", query=query, k=top_k)

    def _get_all(self, top_k: int, **kwargs: Any) -> Flow:
        out = yield _Call("get_all", lambda: self._client.get_all(top_k=top_k, **kwargs))
        return self._screen(out, "get_all", query="get_all", k=top_k)

    def _update(
        self,
        memory_id: str,
        text: str | None,
        metadata: Any,
        expiration_date: Any,
        data: Any,
        origin: WriteOrigin | None,
    ) -> Flow:
        text = text if text is not None else data
        extra = {} if expiration_date is _UNSET else {"expiration_date": expiration_date}
        return (yield from self._update_flow(memory_id, text, metadata, origin, **extra))

    def _delete_all(
        self,
        user_id: str | None,
        agent_id: str | None,
        run_id: str | None,
        origin: WriteOrigin | None,
    ) -> Flow:
        scope = _scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
        listed = yield _Call("get_all", lambda: self._client.get_all(filters=scope, top_k=_BIG))
        return (
            yield from self._delete_rows_flow(
                results_of(listed, "get_all"),
                _Call("delete_all", lambda: self._client.delete_all(**scope)),
                origin,
            )
        )


class GuardedMemory(_OssFlows):
    """``mem0.Memory`` behind the firewall (see the module docstring)."""

    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        gnomon_origin: WriteOrigin | None = None,
    ) -> dict[str, Any]:
        return _drive(
            self._add(
                messages,
                user_id,
                agent_id,
                run_id,
                metadata,
                timestamp,
                expiration_date,
                infer,
                memory_type,
                prompt,
                gnomon_origin,
            )
        )

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> Any:
        return _drive(
            self._search(
                query,
                top_k,
                reference_date,
                filters=filters,
                threshold=threshold,
                rerank=rerank,
                explain=explain,
                show_expired=show_expired,
                **kwargs,
            )
        )

    def get(self, memory_id: str) -> Any:
        return _drive(self._get_flow(memory_id))

    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> Any:
        return _drive(self._get_all(top_k, filters=filters, show_expired=show_expired, **kwargs))

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return _drive(self._update(memory_id, text, metadata, expiration_date, data, gnomon_origin))

    def delete(self, memory_id: str, *, gnomon_origin: WriteOrigin | None = None) -> Any:
        return _drive(self._delete_flow(memory_id, gnomon_origin))

    def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return _drive(self._delete_all(user_id, agent_id, run_id, gnomon_origin))

    def history(self, memory_id: str, *, grant: Grant | None = None) -> list[dict[str, Any]]:
        return _drive(self._history_flow(memory_id, grant))

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

    async def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        llm: Any = None,
        gnomon_origin: WriteOrigin | None = None,
    ) -> dict[str, Any]:
        return await self._arun(
            self._add(
                messages,
                user_id,
                agent_id,
                run_id,
                metadata,
                timestamp,
                expiration_date,
                infer,
                memory_type,
                prompt,
                gnomon_origin,
                llm=llm,
            )
        )

    async def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> Any:
        return await self._arun(
            self._search(
                query,
                top_k,
                reference_date,
                filters=filters,
                threshold=threshold,
                rerank=rerank,
                explain=explain,
                show_expired=show_expired,
                **kwargs,
            )
        )

    async def get(self, memory_id: str) -> Any:
        return await self._arun(self._get_flow(memory_id))

    async def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> Any:
        return await self._arun(
            self._get_all(top_k, filters=filters, show_expired=show_expired, **kwargs)
        )

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return await self._arun(
            self._update(memory_id, text, metadata, expiration_date, data, gnomon_origin)
        )

    async def delete(self, memory_id: str, *, gnomon_origin: WriteOrigin | None = None) -> Any:
        return await self._arun(self._delete_flow(memory_id, gnomon_origin))

    async def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return await self._arun(self._delete_all(user_id, agent_id, run_id, gnomon_origin))

    async def history(self, memory_id: str, *, grant: Grant | None = None) -> list[dict[str, Any]]:
        return await self._arun(self._history_flow(memory_id, grant))

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

    def _add(self, messages: Any, gnomon_origin: WriteOrigin | None, kw: dict[str, Any]) -> Flow:
        infer = kw.pop("infer", True)
        metadata = kw.pop("metadata", None)
        if not infer:
            return (yield from self._add_plain(messages, metadata, gnomon_origin, **kw))
        return (yield from self._add_inferred(messages, metadata, gnomon_origin, **kw))

    def _search(self, query: str, kw: dict[str, Any]) -> Flow:
        out = yield _Call("search", lambda: self._client.search(query, **kw))
        return self._screen(out, "search", query=query, k=int(kw.get("top_k") or 10))

    def _get_all(self, kw: dict[str, Any]) -> Flow:
        out = yield _Call("get_all", lambda: self._client.get_all(**kw))
        rows = results_of(out, "get_all")
        return self._screen(out, "get_all", query="get_all", k=max(len(rows), 1))

    def _update(self, memory_id: str, kw: dict[str, Any], origin: WriteOrigin | None) -> Flow:
        text, metadata = kw.pop("text", None), kw.pop("metadata", None)
        return (yield from self._update_flow(memory_id, text, metadata, origin, **kw))

    def _delete(self, memory_id: str, delete_linked: bool, origin: WriteOrigin | None) -> Flow:
        if delete_linked:
            raise BypassRefusedError(
                "delete_linked=True deletes memories the firewall cannot revise one by one",
                store=STORE,
                call="delete",
                hint="delete each linked memory by its id",
            )
        return (yield from self._delete_flow(memory_id, origin))

    def _delete_all(self, kw: dict[str, Any], origin: WriteOrigin | None) -> Flow:
        scope = {k: v for k, v in kw.items() if k in PLATFORM_SCOPE and v}
        rows: list[Any] = []
        page = 1
        while True:
            listed = yield _Call(
                "get_all",
                lambda p=page: self._client.get_all(filters=scope, page=p, page_size=100),
            )
            found = results_of(listed, "get_all")
            rows.extend(found)
            if not found or not (isinstance(listed, Mapping) and listed.get("next")):
                break
            page += 1
        return (
            yield from self._delete_rows_flow(
                rows, _Call("delete_all", lambda: self._client.delete_all(**kw)), origin
            )
        )


class GuardedMemoryClient(_PlatformFlows):
    """``mem0.MemoryClient`` (the platform's HTTP client) behind the firewall."""

    def add(
        self,
        messages: Any,
        options: Any = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return _drive(self._add(messages, gnomon_origin, _options(options, kwargs)))

    def search(self, query: str, options: Any = None, **kwargs: Any) -> Any:
        return _drive(self._search(query, _options(options, kwargs)))

    def get(self, memory_id: str) -> Any:
        return _drive(self._get_flow(memory_id))

    def get_all(self, options: Any = None, **kwargs: Any) -> Any:
        return _drive(self._get_all(_options(options, kwargs)))

    def update(
        self,
        memory_id: str,
        options: Any = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
        **kwargs: Any,
    ) -> Any:
        return _drive(self._update(memory_id, _options(options, kwargs), gnomon_origin))

    def delete(
        self,
        memory_id: str,
        delete_linked: bool = False,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return _drive(self._delete(memory_id, delete_linked, gnomon_origin))

    def delete_all(
        self, options: Any = None, *, gnomon_origin: WriteOrigin | None = None, **kwargs: Any
    ) -> Any:
        return _drive(self._delete_all(_options(options, kwargs), gnomon_origin))

    def history(self, memory_id: str, *, grant: Grant | None = None) -> list[dict[str, Any]]:
        return _drive(self._history_flow(memory_id, grant))

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

    async def add(
        self,
        messages: Any,
        options: Any = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return await self._arun(self._add(messages, gnomon_origin, _options(options, kwargs)))

    async def search(self, query: str, options: Any = None, **kwargs: Any) -> Any:
        return await self._arun(self._search(query, _options(options, kwargs)))

    async def get(self, memory_id: str) -> Any:
        return await self._arun(self._get_flow(memory_id))

    async def get_all(self, options: Any = None, **kwargs: Any) -> Any:
        return await self._arun(self._get_all(_options(options, kwargs)))

    async def update(
        self,
        memory_id: str,
        options: Any = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._arun(self._update(memory_id, _options(options, kwargs), gnomon_origin))

    async def delete(
        self,
        memory_id: str,
        delete_linked: bool = False,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> Any:
        return await self._arun(self._delete(memory_id, delete_linked, gnomon_origin))

    async def delete_all(
        self, options: Any = None, *, gnomon_origin: WriteOrigin | None = None, **kwargs: Any
    ) -> Any:
        return await self._arun(self._delete_all(_options(options, kwargs), gnomon_origin))

    async def history(self, memory_id: str, *, grant: Grant | None = None) -> list[dict[str, Any]]:
        return await self._arun(self._history_flow(memory_id, grant))

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
