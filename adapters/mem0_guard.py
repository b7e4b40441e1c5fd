"""What the four guarded mem0 clients share: construction, refusal of unguarded methods,
and every firewall step of ``add``, ``search``, ``get`` and ``delete_all`` that does no I/O (so
the sync and async wrappers differ only in how they await the SDK)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gnomon.adapters.base import (
    INTEGRITY_KEY,
    ORIGIN_KEY,
    StoreBackend,
    merged_metadata,
    rendered_metadata,
)
from gnomon.adapters.bulk_delete import checked_scope
from gnomon.adapters.core import Constructed, Refusing
from gnomon.adapters.errors import (
    AdapterError,
    BypassRefusedError,
    PartialDeleteError,
    StoreResponseError,
)
from gnomon.adapters.guard import PendingWrite, annotated, outranks, passed
from gnomon.adapters.mem0_backend import (
    STORE,
    backend_for,
    content_of,
    messages_of,
    read_text,
    results_of,
    said_by,
    to_item,
)
from gnomon.adapters.withheld import attach, withheld_note
from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.host.channels import WriteOrigin
from gnomon.firewall.model.chain import Belief, BindingState

_UNSET: Any = object()
_BIG = 1_000_000

#: Who a trusted memory mem0 rewrote, written back, says it is from.
RESTORED_AS = {"role": "user"}


class _Guarded(Constructed, Refusing):
    """What every mem0 wrapper shares: the one constructor, refusal of unguarded methods, and
    the firewall steps of ``add`` that do no I/O."""

    _GUARDED: frozenset[str] = frozenset(
        {"add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "close"}
    )
    _PLATFORM = False
    _store = STORE
    _hint = "; the audit path is memory.gnomon.audit(query, grant=...)"

    def _adapter_backend(self, client: Any, sync_client: Any) -> StoreBackend:
        return backend_for(self._backend_client(client, sync_client), platform=self._PLATFORM)

    def _mount(self, client: Any) -> None:
        self._client = client

    def _backend_client(self, client: Any, sync_client: Any) -> Any:
        """The sync client ``.gnomon`` (audit, import, export, sync) runs on."""
        return sync_client or client

    # -- add, the parts without I/O --------------------------------------------------------

    def _plain(
        self, messages: Any, metadata: Mapping[str, Any] | None, origin: WriteOrigin | None
    ) -> list[tuple[dict[str, Any], PendingWrite]]:
        """infer=False: record each non-system message and bind it ``pending``."""
        checked = merged_metadata(STORE, "add", self.gnomon._backend.limits, metadata)
        guard = self.gnomon._guard
        shown = []
        for message in messages_of(messages):
            text = content_of(message)
            if message.get("role") == "system" or text is None:
                continue
            shown.append((message, text))
        said = self._said([m for m, _ in shown], origin)
        kept = [(m, text, o) for (m, text), o in zip(shown, said, strict=True)]
        # all messages recorded in one event per run of labelled ones, all bound in one more
        beliefs = guard.record_many([(text, said) for _, text, said in kept])
        pending = guard.bind_pending_many(
            [
                (b, text, {**rendered_metadata(checked), **said_by(m)})
                for b, (m, text, _) in zip(beliefs, kept, strict=True)
            ],
            checked,
        )
        return [(m, p) for (m, _, _), p in zip(kept, pending, strict=True)]

    def _said(
        self, messages: Sequence[Mapping[str, Any]], origin: WriteOrigin | None
    ) -> list[WriteOrigin | None]:
        """The origin each message is recorded with: the caller's, else its role's, in order
        (a tool message taints the user messages after it, :meth:`Guard.message_origins`)."""
        if origin is not None:
            return [origin] * len(messages)
        roles = [(m.get("role"), m.get("name")) for m in messages]
        return self.gnomon._guard.message_origins(roles)

    def _inputs(
        self, messages: Any, metadata: Mapping[str, Any] | None, origin: WriteOrigin | None
    ) -> tuple[list[Belief], dict[str, Any], dict[str, Any]]:
        """infer=True: record every message mem0's extraction reads (system role and
        non-string content included, see :func:`read_text`); the metadata mem0 gets carries
        the label its facts will have: the agent joined with everything the session has read,
        these messages included."""
        checked = merged_metadata(STORE, "add", self.gnomon._backend.limits, metadata)
        guard = self.gnomon._guard
        read = [(m, text) for m in messages_of(messages) if (text := read_text(m)) is not None]
        said = self._said([m for m, _ in read], origin)
        inputs = guard.record_many([(text, o) for (_, text), o in zip(read, said, strict=True)])
        label = guard.write_label(None)
        sent = dict(checked)
        sent[ORIGIN_KEY] = ",".join(sorted(label.origin_ids))
        sent[INTEGRITY_KEY] = label.integrity.name.lower()
        return inputs, checked, sent

    def _fact(self, text: str, inputs: Sequence[Belief], context: Sequence[str]) -> Belief:
        """One fact mem0's LLM wrote: the inference over *everything the session has read*
        (the input messages were just recorded into it), the input messages and the scope's
        memories mem0 could show its LLM (``context``). It is an ``extracted`` fact only when
        that whole lineage is clean (:meth:`Session.extract`)."""
        return self.gnomon._guard.session.extract(
            text, inputs=[b.id for b in inputs], context=context, store=STORE
        )

    def _extracted(
        self,
        rows: list[Any],
        inputs: Sequence[Belief],
        checked: dict[str, Any],
        context: Sequence[str] = (),
    ) -> tuple[list[PendingWrite], list[PendingWrite]]:
        """Facts mem0's LLM returned, and the trusted memories to write back.

        Each fact is the agent's inference over everything the session has read (the inputs
        included): ``derived_from`` is left to the session so its label is never dropped.
        An UPDATE or DELETE that mem0 applied to a supported belief of higher integrity than
        the extraction does not retire it: the new text (or the delete) is recorded as a
        candidate contradicting it, and the trusted text is returned for writing back
        (the second list), bound to the same belief."""
        guard = self.gnomon._guard
        label = guard.write_label(None)
        pending, restores = [], []
        for row in rows:
            item = to_item(row, "add")
            # a fact's speaker is mem0's extractor's, stated where it states the fact's text
            rendered = {**item.rendered, **rendered_metadata(checked)}
            event = row.get("event", "ADD")
            binding = guard.wall.store.bindings_by_store_id(STORE, [item.store_id]).get(
                item.store_id
            )
            old = guard.wall.store.get_belief(binding.belief_id) if binding else None
            if (
                binding is not None
                and old is not None
                and event in ("UPDATE", "DELETE")
                and binding.state == BindingState.WRITTEN
                and outranks(old, label)
            ):
                restored = said_by(RESTORED_AS)
                restores.append(guard.bind_pending(old, old.statement, {}, rendered=restored))
                if event == "DELETE":
                    guard.deletion_candidate(old, binding, origin=None, call="add")
                    continue
                fact = self._fact(item.text, inputs, context)
                guard.contest(old, fact, f"{STORE}.add")
                pending.append(
                    guard.bind_pending(
                        fact, item.text, checked, store_id=item.store_id, rendered=rendered
                    )
                )
                continue
            if event == "DELETE":
                if binding is not None:
                    guard.retire(binding, BindingState.DELETED, f"deleted by {STORE}.add (infer)")
            elif event == "UPDATE":
                write, _old = guard.begin_update(
                    item.store_id, item.text, checked, rendered=rendered, call="add"
                )
                pending.append(write)
            elif event == "ADD":
                fact = self._fact(item.text, inputs, context)
                pending.append(
                    guard.bind_pending(
                        fact, item.text, checked, store_id=item.store_id, rendered=rendered
                    )
                )
        return pending, restores

    def _confirm_row(self, pending: PendingWrite, out: Any) -> dict[str, Any]:
        rows = results_of(out, "add")
        if len(rows) != 1:
            error = StoreResponseError(
                f"add returned {len(rows)} results for one message", store=STORE, call="add"
            )
            self.gnomon._guard.fail_write(pending, error, "add")
            raise error
        # the store's answer with the text the firewall recorded; the binding covers the
        # memory as the store says it holds it (who said it: mem0's role and actor_id)
        row = {**rows[0], "memory": pending.text}
        stored = to_item({**row, "metadata": pending.metadata}, "add")
        self.gnomon._guard.confirm_write(pending, stored.store_id, stored=stored)
        return row

    def _screen(self, out: Any, call: str, *, query: str, k: int, limit: int | None = None) -> Any:
        """The hits that passed, and beside them (``"gnomon"``) what was withheld and why;
        ``limit``: at most that many, trusted first (the call over-fetched, :func:`fetch_size`)."""
        items = [to_item(r, call) for r in results_of(out, call)]
        hits = self.gnomon._guard.screen(items, query=query, k=k, call=call, limit=limit)
        shown = passed(hits)
        if isinstance(out, Mapping):
            channel = hits.summary["contradictions"]
            paging = {k: out[k] for k in PAGING if k in out}  # anything else is unscreened text
            return {**paging, "results": shown, "contradictions": channel, "gnomon": hits.summary}
        return attach(shown, hits.summary)

    def _written(self, rows: list[Any], extracted: list[Any]) -> dict[str, Any]:
        """``add(infer=True)``'s answer: the facts mem0's LLM wrote (``rows``, as mem0 now
        holds them) screened as a read. One the policy withholds keeps its id and event and
        none of its text (``memory`` "", ``gnomon`` says why); nothing else of mem0's answer
        (graph ``relations``, any key a hostile server adds) is returned."""
        events = {
            r.get("id"): r["event"]
            for r in extracted
            if isinstance(r, Mapping) and r.get("event") in ("ADD", "UPDATE")
        }
        items = [to_item(r, "add") for r in rows]
        hits = self.gnomon._guard.screen(items, query="add", k=max(len(items), 1), call="add")
        results = [
            annotated(s)
            if s.passed
            else {"id": s.item.store_id, "memory": "", "gnomon": withheld_note(s)}
            for s in hits
        ]
        for row in results:
            row["event"] = events.get(row["id"], "ADD")
        channel = hits.summary["contradictions"]
        return {"results": results, "contradictions": channel, "gnomon": hits.summary}

    def _screen_one(self, row: Any, memory_id: str) -> Any:
        """``get`` keeps mem0's shape (None when withheld); the ``gnomon`` logger says why."""
        if row is None:
            return None
        (screened,) = self.gnomon._guard.screen(
            [to_item(row, "get")], query=f"get {memory_id}", k=1, call="get"
        )
        return annotated(screened) if screened.passed else None

    def _before_delete_all(self, rows: list[Any], origin: WriteOrigin | None) -> list[Any]:
        """Bindings to retire; refused as a whole (nothing retired, store untouched) when any
        row is a supported belief the write may not retire."""
        guard = self.gnomon._guard
        ids = [to_item(r, "get_all").store_id for r in rows]
        found = guard.wall.store.bindings_by_store_id(STORE, ids)
        for ident in ids:
            if ident in found:
                guard.check_delete(found[ident], origin=origin, call="delete_all")
        return [b for i in ids if (b := guard.begin_delete(i, origin=origin, call="delete_all"))]

    def _delete_scope(self, scope: dict[str, str]) -> dict[str, str]:
        """The scope of a bulk delete, refused before any I/O when it could spill: no scope at
        all (mem0's platform once wiped every user's memories on such a call), a wildcard
        (``"*"``, the platform's "any value"), or a ``user_id`` other than the session's
        user."""
        scope = checked_scope(
            STORE, scope, hint="pass user_id= (the session's user) to delete one user's memories"
        )
        user = self.gnomon._guard.session.user
        if user is not None and scope.get("user_id", user) != user:
            raise BypassRefusedError(
                f"delete_all(user_id={scope['user_id']!r}) reaches beyond this session's user "
                f"{user!r}",
                store=STORE,
                call="delete_all",
                hint=f"delete_all(user_id={user!r}), or open a session for that user",
            )
        return scope

    def _deleted(self, out: Any, rows: list[Any], left: list[Any]) -> dict[str, Any]:
        """What a bulk delete did, checked: the store's own answer, and ``gnomon.deleted``
        (every id it was asked to delete); an id a read afterwards still returns raises
        :class:`PartialDeleteError` instead of being reported deleted."""
        asked = [to_item(r, "get_all").store_id for r in rows]
        still = {to_item(r, "get_all").store_id for r in left}
        remaining = [i for i in asked if i in still]
        if remaining:
            raise PartialDeleteError(
                f"the store reported the delete done, but still returns {len(remaining)} of "
                f"the {len(asked)} memories: {', '.join(remaining[:10])}",
                store=STORE,
                call="delete_all",
                remaining=remaining,
            )
        answer = dict(out) if isinstance(out, Mapping) else {"result": out}
        return {**answer, "gnomon": {"deleted": asked}}

    def _fail_all(self, bindings: list[Any], error: AdapterError) -> None:
        for binding in bindings:
            self.gnomon._guard.fail_delete(binding, error, "delete_all")

    def _history(self, memory_id: str, grant: Grant | None) -> None:
        if grant is None:
            raise BypassRefusedError(
                "history() shows text the policy may exclude: it is on the audit path",
                store=STORE,
                call="history",
                hint="pass grant=wall.grant('auditor', ...) or use memory.gnomon.audit(...)",
            )
        self.gnomon._guard.authorize_history(memory_id, grant=grant)


#: The fields of a mem0 read's answer returned beside its screened ``results``: the platform's
#: pagination. Everything else (graph memory's ``relations``: text an LLM extracted, with no
#: binding or label; any key a hostile server adds) is not returned.
PAGING = ("count", "next", "previous")


def _scope(**ids: str | None) -> dict[str, str]:
    return {k: v for k, v in ids.items() if v}


__all__ = ["PAGING", "_BIG", "_UNSET", "_Guarded", "_scope"]
