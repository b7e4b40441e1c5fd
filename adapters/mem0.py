"""mem0 behind the firewall: ``Memory`` and ``AsyncMemory`` (OSS), ``MemoryClient`` and
``AsyncMemoryClient`` (platform), keeping the SDK's method names, signatures and return shapes.

Adoption is one line::

    memory = GuardedMemory(Memory.from_config(cfg), wall, project="shop", user="alice")

* ``add`` records each message with its origin before mem0 sees it. With ``infer=False`` each
  message is one memory, written by its own call so it carries its own ``gnomon_belief_id``.
  With ``infer=True`` mem0's LLM rewrites the messages into facts: each fact is recorded as an
  agent-authored belief *derived from the input messages*, so it carries the join of their labels
  (summarization laundering, closed), then bound to the id mem0 gave it.
  ``gnomon_origin=Origin.user("alice")`` (host code, never a tool the model calls) records the
  messages as stated by that user instead of written by the agent.
* ``search``, ``get`` and ``get_all`` return only the hits the ContextPolicy admits (or quotes),
  each with a ``gnomon`` key holding its labels. ``update``, ``delete`` and ``delete_all`` are
  revisions. ``history(memory_id, grant=...)`` needs an auditor grant and is logged.
* ``reset``, ``chat`` and every other public SDK method are refused
  (:class:`~adapters.errors.BypassRefusedError`): nothing reaches the store around the guard.

Importing this module without mem0 installed raises :class:`~adapters.errors.MissingSDKError`
naming ``pip install 'gnomon[mem0]'``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from adapters.base import merged_metadata
from adapters.errors import AdapterError, BypassRefusedError
from adapters.mem0_backend import STORE, call_converting, results_of
from adapters.mem0_guard import _BIG, _UNSET, _Guarded, _scope, _write_each
from firewall.grants import Grant
from firewall.origin import Origin


class GuardedMemory(_Guarded):
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
        gnomon_origin: Origin | None = None,
    ) -> dict[str, Any]:
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
            for k, v in (("timestamp", timestamp), ("expiration_date", expiration_date))
            if v is not None
        }
        client, guard = self._client, self.gnomon.guard
        if not infer:
            return _write_each(
                self._plain(messages, metadata, gnomon_origin),
                lambda m, p: call_converting(
                    "add",
                    lambda: client.add([m], metadata=p.metadata, infer=False, **scope, **extra),
                ),
                self._confirm_row,
                lambda p, e: guard.fail_write(p, e, "add"),
            )
        inputs, checked, sent = self._inputs(messages, metadata, gnomon_origin)
        out = call_converting(
            "add",
            lambda: client.add(
                messages, metadata=sent, infer=True, prompt=prompt, **scope, **extra
            ),
        )
        for pending in self._extracted(results_of(out, "add"), inputs, checked):
            try:
                call_converting(
                    "update",
                    partial(client.update, pending.binding.store_id, metadata=pending.metadata),
                )
            except AdapterError as exc:
                guard.fail_write(pending, exc, "update")
                raise
            guard.confirm_write(pending, str(pending.binding.store_id))
        return dict(out)

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
        if reference_date is not None:
            kwargs["reference_date"] = reference_date
        out = call_converting(
            "search",
            lambda: self._client.search(
                query,
                top_k=top_k,
                filters=filters,
                threshold=threshold,
                rerank=rerank,
                explain=explain,
                show_expired=show_expired,
                **kwargs,
            ),
        )
        return self._screen(out, "search", query=query, k=top_k)

    def get(self, memory_id: str) -> Any:
        row = call_converting("get", lambda: self._client.get(memory_id))
        return self._screen_one(row, memory_id)

    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> Any:
        out = call_converting(
            "get_all",
            lambda: self._client.get_all(
                filters=filters, top_k=top_k, show_expired=show_expired, **kwargs
            ),
        )
        return self._screen(out, "get_all", query="get_all", k=top_k)

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> Any:
        text = text if text is not None else data
        extra = {} if expiration_date is _UNSET else {"expiration_date": expiration_date}
        if text is None:  # metadata only: the content, and so the belief, is unchanged
            checked = merged_metadata(STORE, "update", self.gnomon.backend.limits, metadata)
            return call_converting(
                "update", lambda: self._client.update(memory_id, metadata=checked, **extra)
            )
        guard = self.gnomon.guard
        checked = merged_metadata(STORE, "update", self.gnomon.backend.limits, metadata)
        pending, _old = guard.begin_update(memory_id, text, checked)
        try:
            out = call_converting(
                "update",
                lambda: self._client.update(
                    memory_id, text=text, metadata=pending.metadata, **extra
                ),
            )
        except AdapterError as exc:
            guard.fail_write(pending, exc, "update")
            raise
        guard.confirm_write(pending, memory_id)
        return out

    def delete(self, memory_id: str) -> Any:
        guard = self.gnomon.guard
        binding = guard.begin_delete(memory_id)
        try:
            return call_converting("delete", lambda: self._client.delete(memory_id))
        except AdapterError as exc:
            if binding is not None:
                guard.fail_delete(binding, exc, "delete")
            raise

    def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Any:
        scope = _scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
        listed = call_converting("get_all", lambda: self._client.get_all(filters=scope, top_k=_BIG))
        bindings = self._before_delete_all(scope, results_of(listed, "get_all"))
        try:
            return call_converting("delete_all", lambda: self._client.delete_all(**scope))
        except AdapterError as exc:
            self._fail_all(bindings, exc)
            raise

    def history(self, memory_id: str, *, grant: Grant | None = None) -> list[dict[str, Any]]:
        self._history(memory_id, grant)
        return self.gnomon.backend.history(memory_id)

    def close(self) -> None:
        self.gnomon.close()
        self._client.close()

    def __enter__(self) -> GuardedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["GuardedMemory"]
