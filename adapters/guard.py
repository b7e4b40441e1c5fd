"""The firewall side of every adapter: one :class:`Guard` per guarded client.

A guard holds the :class:`~firewall.host.firewall.Firewall`, a
:class:`~firewall.host.session.Session`
(the agent run whose reads taint its writes), the store's name and the ContextPolicy. Each
operation is split into phases so that sync and async SDK wrappers share them: the wrapper
makes the raw call (``await`` or not) between two guard calls.

**Write path.** :meth:`Guard.begin_write` records the memory with its origin: an agent's write
is :meth:`Session.remember` (the agent joined with everything the session has read) unless the
host passes an explicit ``origin``, recorded with :meth:`Session.observe`. Then a ``pending``
:class:`~firewall.model.chain.StoreBinding`. The wrapper writes through with
:func:`gnomon_metadata`;
:meth:`Guard.confirm_write` marks the binding ``written`` with the store's id. If the store
fails, :meth:`Guard.fail_write` marks the binding ``failed`` (with the error) and moves the
belief's retrieval to ``hidden`` with system authority, in one event: a memory the store does
not hold is never recalled as if it were, and the mismatch is on the record.

**Read path.** :meth:`Guard.screen` maps each hit to its belief through the bindings (by store
id; the ``gnomon_belief_id`` metadata is never trusted, anyone can write it). A hit with no
binding was written around the firewall: it is recorded as an observation with origin
``external:<store>:unbound:<id>`` (so it is unverified) and bound. A hit whose text no longer
hashes to its binding's ``content_hash`` is *drifted*: the binding says so and the belief becomes
``suspicious`` (sentinel authority), in one event. Hits whose binding is ``pending``, ``failed``
or ``deleted`` are dropped. The rest go through :meth:`ContextPolicy.rejection_reasons` /
:meth:`~ContextPolicy.quotable`, the core's own evaluation, and the screened result is logged
with ``Session._log_screened`` (host side).

**What a binding's hash covers.** :attr:`StoreItem.content_hash` covers the text *and* every
other field the adapter renders to a caller (:attr:`StoreItem.rendered`); a write records the
hash of what the store holds after it (``stored=`` on :meth:`Guard.confirm_write`) only when
that is what the write sent: its text, its metadata (:func:`echoed`) and the ``rendered``
fields the write sets (:func:`said`; an update keeps those its binding covered,
:meth:`Guard.held`); else the hash of what was sent, so a field the store adds in its answer
is drift on first read, and an edit of any rendered field is drift. A binding's
hash is domain-tagged with its version (:func:`adapters.base.item_hash`, ``v2``): where an
adapter starts rendering more fields (Zep messages' speaker and metadata), its items name the
hashes earlier adapters recorded (:attr:`StoreItem.upgradable_hashes`, made the ``v1`` way, so
no binding written today can equal one: a field added around the firewall to a memory written
without it is drift, never an upgrade); a written binding holding one still verifies (the text
it attested matches) and is moved, on the record, to the hash that covers the fields as first
read (``binding.rebound``).

**Lower-integrity revisions never retire higher-integrity beliefs.** An update or delete whose
write label (the host's ``origin``, else the agent joined with everything the session has read)
has lower integrity than a *supported* bound belief (a user's fact, rewritten by an agent that
read a web page) is refused before the store is touched: the new text is recorded as an
unverified candidate, linked to the protected belief by a
:class:`~firewall.model.chain.Contradiction`
(:func:`firewall.gate.contradictions.contradiction_record`),
and :class:`~adapters.errors.ProtectedBeliefError` is raised. The trusted memory stays in the
store and stays supported; the attempt surfaces as a contradiction. A write at least as trusted
(the same user through the host's channel) revises as before. Where the store has already
changed the item on its own (mem0's ``infer=True`` UPDATE and DELETE events),
:meth:`Guard.contest` records the same candidate and contradiction and the adapter writes the
trusted text back (see :mod:`adapters.mem0`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from gnomon.adapters.base import gnomon_metadata, item_hash, rendered_value
from gnomon.adapters.errors import AdapterError, ConflictingBeliefError, ProtectedBeliefError
from gnomon.firewall.audit.credentials import credential_kinds
from gnomon.firewall.gate.contested import Reader, in_scope
from gnomon.firewall.gate.contradictions import contradiction_record, linked, stands
from gnomon.firewall.gate.gate import Move, apply_moves
from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.gate.policy import (
    ContextPolicy,
    Reason,
    floor_reasons,
    resolve,
    resolve_with_digest,
)
from gnomon.firewall.gate.recall import QuotedItem, RecallResult, RejectedItem
from gnomon.firewall.host.channels import Channel, WriteOrigin, caller_origin
from gnomon.firewall.host.firewall import AuditEntry, Firewall
from gnomon.firewall.host.session import Session
from gnomon.firewall.host.tool_calls import ToolCall
from gnomon.firewall.log.events import Records
from gnomon.firewall.model.chain import Belief, BindingState, Revision, StoreBinding, content_hash
from gnomon.firewall.model.content import statement_text
from gnomon.firewall.model.errors import MissingGrantError, UnknownIdError
from gnomon.firewall.model.origin import Origin, OriginClass
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)

from . import conflicts
from .base import StoreItem
from .quoted_fields import beside_quote_problem
from .withheld import QUOTE_CAP, Announcer, report

Verdict = Literal["accepted", "quoted", "rejected", "dropped"]

#: The ContextPolicy a guarded client reads under unless the host names one: the ``assistant``
#: preset (trusted context as ``default``; unverified clean content as marked quoted data).
DROP_IN_POLICY = "assistant"

_HIDEABLE = (RetrievalStatus.NORMAL, RetrievalStatus.RESTRICTED)

#: Why a binding recorded before its item's rendered fields were covered moves to the hash
#: that covers them (:attr:`StoreItem.upgradable_hashes`): what it attested (the text) still
#: matches, and from now on an edit of any rendered field is drift.
EARLIER_HASH_UPGRADE = (
    "hash upgraded to cover the item's rendered fields as first read; the text matched an "
    "earlier hash of fewer fields"
)


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A memory recorded by the firewall and not yet confirmed by the store."""

    belief: Belief
    binding: StoreBinding
    text: str
    metadata: dict[str, Any]
    #: The fields beside the text that the write sent, rendered (:attr:`StoreItem.rendered`).
    rendered: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Screened:
    """One store hit after the read path: its belief (if any) and the policy's verdict."""

    item: StoreItem
    belief: Belief | None
    verdict: Verdict
    reasons: tuple[Reason, ...] = ()
    note: str | None = None
    #: Accepted as a fact a store's extractor rewrote from user-attested input only (the
    #: policy's ``extracted`` rule): trusted context, marked, its truth still ``unverified``.
    extracted: bool = False

    @property
    def passed(self) -> bool:
        return self.verdict in ("accepted", "quoted")

    def withheld(self) -> Screened:
        """This hit as a caller that failed the policy may see it: its store id, verdict and
        reasons; none of its text, fields or belief."""
        if self.passed:
            return self
        item = StoreItem(store_id=self.item.store_id, text="")
        return Screened(item, None, self.verdict, self.reasons, self.note)

    def annotation(self) -> dict[str, Any]:
        """The ``gnomon`` key added to a hit that passed: its labels."""
        b = self.belief
        assert b is not None
        return {
            "belief_id": b.id,
            "truth": b.truth_status.value,
            "retrieval": b.retrieval_status.value,
            "security": b.security_status.value,
            "origin_ids": sorted(b.origin.origin_ids),
            "integrity": b.origin.integrity.name.lower(),
            "quoted": self.verdict == "quoted",
            **({"extracted": True} if self.extracted else {}),
            **({"text": self.item.text} if self.verdict == "quoted" else {}),
        }

    def shown(self) -> dict[str, Any]:
        """The fields a hit that passed is returned with: ``gnomon`` (its labels) and, when it
        is quoted data, its text field as one escaped ``<quoted-data>`` line naming its origin
        (:meth:`QuotedItem.render`), so a model that reads only the text sees it is not a
        fact and no text inside can close the marker. The raw text is ``gnomon["text"]``."""
        fields: dict[str, Any] = {"gnomon": self.annotation()}
        if self.verdict == "quoted":
            assert self.belief is not None and self.item.text_field is not None
            outer, _, inner = self.item.text_field.partition(".")
            marked = QuotedItem(self.belief).render()
            fields[outer] = _with(_field(self.item.raw, outer), inner, marked) if inner else marked
        return fields


def _field(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, Mapping) else getattr(obj, name)


def _with(obj: Any, name: str, value: Any) -> Any:
    """A copy of a dict or pydantic model with one field replaced."""
    if isinstance(obj, Mapping):
        return {**obj, name: value}
    return obj.model_copy(update={name: value})


def echoed(held: Mapping[str, Any], sent: Mapping[str, Any], *, merged: bool = False) -> bool:
    """True when the metadata a store answers a write with is the metadata sent: every key it
    holds was sent (a store may keep fewer: a Letta agent passage keeps only the belief tag),
    with the same value as canonical JSON; ``merged``: keys the item held before may remain."""
    return all(
        rendered_value(value) == rendered_value(sent[key]) if key in sent else merged
        for key, value in held.items()
    )


#: What a rendered field the write did not send may say in the store's answer: nothing.
_UNSET = frozenset(
    {rendered_value(None), rendered_value(""), rendered_value([]), rendered_value({})}
)


def said(answered: Mapping[str, str], sent: Mapping[str, str]) -> bool:
    """True when the rendered fields a store answers a write with (its metadata aside, which
    :func:`echoed` judges) are the fields the write sent: each one the answer holds is empty
    or as sent (a store may keep fewer). A store adding a label, a role or a source
    description the write did not send has not echoed it: the binding keeps what was sent, so
    the addition is drift on first read, never bound as the writer's."""
    return all(
        value in _UNSET or value == sent.get(name)
        for name, value in answered.items()
        if name != "metadata"
    )


def annotated(screened: Screened) -> dict[str, Any]:
    """A dict hit (mem0, the local store) as it is returned: see :meth:`Screened.shown`."""
    return {**screened.item.raw, **screened.shown()}


def passed(screened: Sequence[Screened]) -> list[dict[str, Any]]:
    return [annotated(s) for s in screened if s.passed]


class Hits(list[Screened]):
    """One read's screened hits, in store order, with ``summary``: what was returned and
    withheld, and why (counts and reason codes, never text; see :func:`adapters.withheld.report`).
    """

    def __init__(self, screened: Sequence[Screened], summary: dict[str, Any]) -> None:
        super().__init__(screened)
        self.summary = summary


@dataclass(frozen=True, slots=True)
class AuditView:
    """One belief on the privileged path: its revisions, bindings and the store's history."""

    belief: Belief
    revisions: tuple[Revision, ...]
    bindings: tuple[StoreBinding, ...]
    store_history: tuple[dict[str, Any], ...] = ()


class Guard:
    """The firewall side of one guarded client. See the module docstring.

    ``session``: the agent run this client serves; when None, the guard starts its own (ended
    by :meth:`close`) from ``project``, ``actor`` and ``user``.
    """

    def __init__(
        self,
        wall: Firewall,
        store: str,
        *,
        session: Session | None = None,
        project: str | None = None,
        actor: str = "agent",
        user: str | None = None,
        policy: ContextPolicy | str = DROP_IN_POLICY,
        user_channel: Channel | None = None,
    ) -> None:
        self.wall = wall
        self.store = store
        self.policy = resolve(policy)
        self._own_session = session is None
        if session is None:
            if project is None:
                from gnomon.firewall.model.errors import InputError

                raise InputError(
                    f"a guarded {store} client needs a session or a project",
                    hint="pass project='...' (and actor=, user=) or session=wall_session",
                )
            session = Session.start(wall, project=project, actor=actor, user=user)
        self.session = session
        self.announcer = Announcer(store, session.project)
        self._user_channel = self._checked_user_channel(user_channel)
        self._worker: ThreadPoolExecutor | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def _commit(self, kind: str, data: Mapping[str, Any], records: Records) -> None:
        s = self.session
        self.wall.commit(
            self.wall.draft(
                kind,
                actor=s.actor,
                now=self.wall.clock(),
                session_id=s.id,
                project=s.project,
                user=s.user,
                data={"store": self.store, **data},
                records=records,
            )
        )

    def _binding(
        self,
        belief_id: str,
        *,
        store_id: str | None,
        text_hash: str,
        state: BindingState,
        detail: str | None = None,
    ) -> StoreBinding:
        return StoreBinding(
            id=StoreBinding.key(self.store, belief_id),
            store=self.store,
            store_id=store_id,
            belief_id=belief_id,
            content_hash=text_hash,
            state=state,
            detail=detail,
            updated_at=self.wall.clock(),
        )

    def _moved(
        self, belief: Belief, moves: Sequence[Move], authority: Authority, reason: str
    ) -> tuple[Belief, list[Revision]]:
        """Apply the moves the gate allows from the belief's current states (others skipped)."""
        from gnomon.firewall.gate.gate import TRANSITIONS

        allowed = [
            m
            for m in moves
            if authority
            in TRANSITIONS[m.axis].get((belief.status(m.axis), str(m.to_state)), frozenset())
        ]
        if not allowed:
            return belief, []
        return apply_moves(
            belief, allowed, authority=authority, reason=reason, now=self.wall.clock()
        )

    def _commit_move(
        self,
        kind: str,
        data: Mapping[str, Any],
        belief: Belief,
        move: Move,
        authority: Authority,
        reason: str,
        *,
        then: Mapping[str, Any] | None = None,
        **records: Any,
    ) -> Belief:
        """One event ``kind``: ``move`` of ``belief`` where the gate allows it from the belief's
        current states (then ``then``'s fields set on it), with ``records``. The belief as it
        now stands."""
        moved, revisions = self._moved(belief, [move], authority, reason)
        if revisions and then:
            moved = moved.model_copy(update=dict(then))
        beliefs = (moved,) if revisions else ()
        self._commit(kind, data, Records(beliefs=beliefs, revisions=tuple(revisions), **records))
        return moved

    def _checked_user_channel(self, channel: Channel | None) -> Channel | None:
        """The host's user channel for role=user messages: one this firewall opened for this
        session's project, for a user origin (anything else is refused at construction)."""
        if channel is None:
            return None
        checked = self.wall.attested_by(channel, project=self.session.project)
        if OriginClass.USER not in checked.origin.classes:
            from gnomon.firewall.model.errors import InputError

            raise InputError(
                f"user_channel= must be a user channel, got one for {checked.origin.describe()}",
                hint="open it host-side with wall.channel(Origin.user('alice'))",
            )
        return checked

    def message_origin(self, role: object, name: object = None) -> WriteOrigin | None:
        """The origin of one conversation message, from its role (None: the agent's write,
        joined with everything the session has read, as :meth:`Session.remember` labels it).

        * ``user``: the host's user channel when the host configured one and the session has
          read nothing untrusted (:attr:`Session.read_untrusted`); without the channel the role
          is only the caller's claim, so the message is the agent's, and so it is once the
          session has read a page: the agent could pass the page's words as the user's.
        * ``tool`` / ``function``: external content (a tool's output is read, not believed).
        * ``assistant``, ``system`` and anything else: the agent's.
        """
        return self.message_origins([(role, name)])[0]

    def message_origins(self, said: Sequence[tuple[object, object]]) -> list[WriteOrigin | None]:
        """:meth:`message_origin` of each ``(role, name)`` of one batch, as if recorded one at a
        time: a tool message taints the session for the user messages after it."""
        tainted = self.session.read_untrusted
        out: list[WriteOrigin | None] = []
        for role, name in said:
            if role == "user" and self._user_channel is not None and not tainted:
                out.append(self._user_channel)
            elif role in ("tool", "function"):
                tool = name if isinstance(name, str) and name.strip() else "tool"
                out.append(Origin.external(f"{self.store}:{role}:{tool}"))
                tainted = True
            else:
                out.append(None)
        return out

    def worker(self) -> Executor:
        """The one thread an async wrapper runs this guard's firewall steps on (store I/O off
        the event loop, and one step at a time, in call order, for this guard's session)."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gnomon-guard")
        return self._worker

    def close(self) -> None:
        if self._own_session:
            self.session.end()
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    # -- write path -------------------------------------------------------------------------

    def record(
        self,
        text: str,
        *,
        origin: WriteOrigin | None = None,
        derived_from: Sequence[str] | None = None,
    ) -> Belief:
        """Record a memory with its origin (no binding): the first step of every write."""
        text = statement_text(text, self.wall.max_block_bytes)  # one non-empty text, or refuse
        if origin is None:
            return self.session.remember(text, derived_from)
        (belief,) = self._observed([self._write_call(text, origin)])
        return belief

    def record_many(self, writes: Sequence[tuple[str, WriteOrigin | None]]) -> list[Belief]:
        """Record many memories, in order, each labelled as :meth:`record` labels it: a run
        of writes with an origin is one :meth:`Session.observe_many` event; an agent write
        (no origin) is :meth:`Session.remember`, so its label joins everything recorded
        before it, exactly as one call at a time."""
        limit = self.wall.max_block_bytes
        out: list[Belief] = []
        run: list[ToolCall] = []
        for text, origin in writes:
            text = statement_text(text, limit)
            if origin is None:
                out.extend(self._observed(run))
                run = []
                out.append(self.session.remember(text, None))
            else:
                run.append(self._write_call(text, origin))
        out.extend(self._observed(run))
        return out

    def _write_call(self, text: str, origin: WriteOrigin) -> ToolCall:
        return ToolCall(tool=f"{self.store}.write", content=text, origin=origin)

    def _observed(self, calls: list[ToolCall]) -> list[Belief]:
        """The one content belief of each write call, recorded as one event."""
        if not calls:
            return []
        out = []
        for observed in self.session.observe_many(calls):
            (belief,) = observed.content
            out.append(belief)
        return out

    def begin_write(
        self,
        text: str,
        metadata: Mapping[str, Any],
        *,
        origin: WriteOrigin | None = None,
        derived_from: Sequence[str] | None = None,
        store_id: str | None = None,
        rendered: Mapping[str, str] | None = None,
    ) -> PendingWrite:
        belief = self.record(text, origin=origin, derived_from=derived_from)
        return self.bind_pending(belief, text, metadata, store_id=store_id, rendered=rendered)

    def bind_pending(
        self,
        belief: Belief,
        text: str,
        metadata: Mapping[str, Any],
        *,
        store_id: str | None = None,
        extra: Records | None = None,
        rendered: Mapping[str, str] | None = None,
    ) -> PendingWrite:
        """Bind ``belief`` ``pending``; the hash covers ``text`` and the fields the write sets
        that the adapter renders (``rendered``, see :attr:`StoreItem.rendered`)."""
        pending = self._pending(belief, text, metadata, store_id, rendered)
        base = extra or Records()
        self._commit(
            "binding.pending",
            {"belief_id": belief.id, "store_id": store_id},
            Records(
                beliefs=base.beliefs,
                revisions=base.revisions,
                bindings=(*base.bindings, pending.binding),
            ),
        )
        return pending

    def bind_pending_many(
        self, written: Sequence[tuple[Belief, str, Mapping[str, str]]], metadata: Mapping[str, Any]
    ) -> list[PendingWrite]:
        """:meth:`bind_pending` for many ``(belief, text, rendered)`` sharing ``metadata``: one
        event."""
        pending = [self._pending(b, t, metadata, None, r) for b, t, r in written]
        if pending:
            self._commit(
                "binding.pending",
                {"belief_ids": [p.belief.id for p in pending]},
                Records(bindings=tuple(p.binding for p in pending)),
            )
        return pending

    def _pending(
        self,
        belief: Belief,
        text: str,
        metadata: Mapping[str, Any],
        store_id: str | None,
        rendered: Mapping[str, str] | None,
    ) -> PendingWrite:
        text_hash = item_hash(text, rendered)
        binding = self._binding(
            belief.id, store_id=store_id, text_hash=text_hash, state=BindingState.PENDING
        )
        full = {**metadata, **gnomon_metadata(belief, content_hash(text))}
        return PendingWrite(belief, binding, text, full, dict(rendered or {}))

    def confirm_write(
        self,
        pending: PendingWrite,
        store_id: str,
        *,
        stored: StoreItem | None = None,
        merged: bool = False,
    ) -> StoreBinding:
        """Mark the binding ``written``. ``stored``: the item as the store holds it after the
        write; when its text is the text written, its metadata the metadata sent
        (:func:`echoed`; ``merged``: an update the store merges into the metadata it held,
        mem0's) and its other rendered fields the fields sent (:func:`said`), the binding
        records its hash, so what the store keeps or merges (mem0's merged metadata, the
        firewall's keys) is covered. A store answering with other text, metadata or fields (a
        label, role or source description the write did not send) keeps the hash of what was
        sent: its first read is drift, never the store's addition bound as the writer's."""
        update: dict[str, Any] = {
            "store_id": store_id,
            "state": BindingState.WRITTEN,
            "updated_at": self.wall.clock(),
        }
        if (
            stored is not None
            and stored.text == pending.text
            and echoed(stored.metadata, pending.metadata, merged=merged)
            and said(stored.rendered, pending.rendered)
        ):
            update["content_hash"] = stored.content_hash
        binding = pending.binding.model_copy(update=update)
        self._commit(
            "binding.written",
            {"belief_id": binding.belief_id, "store_id": store_id},
            Records(bindings=(binding,)),
        )
        return binding

    def fail_write(self, pending: PendingWrite, error: BaseException, call: str) -> None:
        """The store failed after the firewall recorded the memory: say so, hide the belief."""
        detail = f"{call} failed: {error}"[:500]
        binding = pending.binding.model_copy(
            update={"state": BindingState.FAILED, "detail": detail, "updated_at": self.wall.clock()}
        )
        belief = self.wall.store.get_belief(pending.belief.id) or pending.belief
        self._commit_move(
            "binding.failed",
            {"belief_id": belief.id, "call": call, "error": detail},
            belief,
            Move(Axis.RETRIEVAL, RetrievalStatus.HIDDEN),
            Authority.SYSTEM,
            f"the {self.store} write failed; the store does not hold this memory",
            bindings=(binding,),
        )

    def begin_update(
        self,
        store_id: str,
        text: str,
        metadata: Mapping[str, Any],
        *,
        origin: WriteOrigin | None = None,
        derived_from: Sequence[str] | None = None,
        rendered: Mapping[str, str] | None = None,
        call: str = "update",
    ) -> tuple[PendingWrite, Belief | None]:
        """An update is a revision: a new belief (the agent's, unless the host names the
        ``origin``) supersedes the bound one, unless it is a lower-integrity write aimed at a
        supported belief: then :class:`ProtectedBeliefError` (see the module docstring)."""
        old_binding = self.bound(store_id)
        belief = self.record(text, origin=origin, derived_from=derived_from)
        if old_binding is None:
            return (
                self.bind_pending(belief, text, metadata, store_id=store_id, rendered=rendered),
                None,
            )
        old = self.wall.store.get_belief(old_binding.belief_id)
        if old is not None and outranks(old, belief.origin):
            self.contest(old, belief, f"{self.store}.{call}")
            raise self.refusal(old, belief, call, "update")
        if old is not None and rivals(old, self.wall.store.get_belief(belief.id) or belief):
            self.conflict(old, belief, f"{self.store}.{call}")
            raise self.refusal(old, belief, call, "update", rival=True)
        beliefs: list[Belief] = []
        revisions: list[Revision] = []
        if old is not None:
            moved, revs = self._moved(
                old,
                [Move(Axis.TRUTH, TruthStatus.SUPERSEDED)],
                Authority.SYSTEM,
                f"updated through {self.store}.update; superseded by {belief.id}",
            )
            beliefs.append(moved.model_copy(update={"superseded_by": belief.id}))
            revisions.extend(revs)
            beliefs.append(
                belief.model_copy(update={"supersedes": old.id, "version": belief.version + 1})
            )
        retired = old_binding.model_copy(
            update={
                "store_id": None,
                "state": BindingState.DELETED,
                "detail": f"superseded by {belief.id} (store item {store_id})",
                "updated_at": self.wall.clock(),
            }
        )
        extra = Records(beliefs=tuple(beliefs), revisions=tuple(revisions), bindings=(retired,))
        pending = self.bind_pending(
            belief, text, metadata, store_id=store_id, extra=extra, rendered=rendered
        )
        return pending, old

    def held(self, item: StoreItem) -> dict[str, str]:
        """The rendered fields (but metadata) of an item an update will keep unless it sends
        others: those of ``item`` as read before the update when its binding covers it (the
        hash matches), else none (a field the update did not send is then drift)."""
        binding = self.bound(item.store_id)
        if binding is None or binding.content_hash != item.content_hash:
            return {}
        return {k: v for k, v in item.rendered.items() if k != "metadata"}

    def bound(self, store_id: str) -> StoreBinding | None:
        """The binding of a store item this session may revise (None: not bound). An item bound
        to another project's belief (a store shared by tenants) is refused as unknown."""
        binding = self.wall.store.bindings_by_store_id(self.store, [store_id]).get(store_id)
        if binding is None:
            return None
        belief = self.wall.store.get_belief(binding.belief_id)
        if belief is not None and not in_scope(belief, self.session.project, self.session.user):
            raise UnknownIdError(f"{self.store} item", store_id)
        return binding

    def begin_delete(
        self, store_id: str, *, origin: WriteOrigin | None = None, call: str = "delete"
    ) -> StoreBinding | None:
        """A delete is a revision: the binding says ``deleted``, the belief becomes hidden;
        unless it is a lower-integrity write aimed at a supported belief: then
        :class:`ProtectedBeliefError` (see the module docstring)."""
        binding = self.bound(store_id)
        if binding is None:
            return None
        self.check_delete(binding, origin=origin, call=call)
        self.retire(binding, BindingState.DELETED, f"deleted through {self.store}.{call}")
        return binding

    def check_delete(
        self, binding: StoreBinding, *, origin: WriteOrigin | None = None, call: str = "delete"
    ) -> None:
        """Refuse (recorded, typed) a lower-integrity delete of a supported belief."""
        old = self.wall.store.get_belief(binding.belief_id)
        if old is None or not outranks(old, self.write_label(origin)):
            return
        candidate = self.deletion_candidate(old, binding, origin=origin, call=call)
        raise self.refusal(old, candidate, call, "delete")

    def deletion_candidate(
        self, old: Belief, binding: StoreBinding, *, origin: WriteOrigin | None, call: str
    ) -> Belief:
        """A delete request recorded as an unverified belief contradicting ``old``."""
        candidate = self.record(
            f"{self.store} item {binding.store_id} (belief {old.id}) should be deleted",
            origin=origin,
        )
        self.contest(old, candidate, f"{self.store}.{call}")
        return candidate

    def write_label(self, origin: Origin | Channel | None) -> Origin:
        """The label a write in this session carries: a host channel's origin (checked: one
        this firewall opened), a caller's own origin (checked: it may only lower trust), else
        the agent joined with everything the session has read (as :meth:`Session.remember`
        labels it)."""
        if isinstance(origin, Channel):
            return self.wall.attested_by(origin, project=self.session.project).origin
        asserted = caller_origin(origin, what="gnomon_origin=")
        if asserted is not None:
            return asserted
        label = self.session.label
        agent = Origin.agent(self.session.actor)
        return agent if label is None else Origin.join(agent, label)

    def contest(self, protected: Belief, candidate: Belief, via: str) -> None:
        """Record ``candidate`` as contradicting ``protected`` (which keeps its states)."""
        now = self.wall.clock()
        record = contradiction_record(
            [protected, candidate],
            reason=f"lower-integrity write through {via} contests a supported belief",
            now=now,
        )
        self._commit(
            "belief.contested",
            {"belief_id": protected.id, "candidate_id": candidate.id, "via": via},
            Records(contradictions=(record,)),
        )

    def store_signal(self, old: Belief, new: Belief, via: str) -> str:
        """A store's own conflict signal (``new`` replaces or invalidates ``old``: Zep's edge
        invalidation), judged by origin: a lower-integrity ``new`` only contests ``old`` (the
        link is recorded, ``old`` keeps its states); two trusted rivals (:func:`rivals`) are
        both contradicted; otherwise ``new`` supersedes ``old``. Returns which it was."""
        if new.origin.integrity < old.origin.integrity:
            self.contest(old, new, via)
            return "contested"
        if rivals(old, new):
            self.conflict(old, new, via)
            return "contradicted"
        self._commit_move(
            "belief.superseded",
            {"belief_id": old.id, "by": new.id, "via": via},
            old,
            Move(Axis.TRUTH, TruthStatus.SUPERSEDED),
            Authority.SYSTEM,
            f"superseded by {new.id}; recorded from {via}",
            then={"superseded_by": new.id},
        )
        return "superseded"

    def conflict(self, old: Belief, new: Belief, via: str) -> None:
        """A store's conflict signal between two trusted beliefs (:func:`rivals`): the link is
        recorded, both are demoted and the decisions that rested on them flagged."""
        members = [self.wall.store.get_belief(b.id) or b for b in (old, new)]
        records = linked(
            self.wall.store,
            members,
            reason=f"two trusted origins conflict; recorded from {via}",
            now=self.wall.clock(),
        )
        self._commit(
            "belief.conflict",
            {"belief_id": old.id, "candidate_id": new.id, "via": via},
            Records(
                beliefs=records["beliefs"],
                revisions=records["revisions"],
                decisions=records["decisions"],
                contradictions=records["contradictions"],
            ),
        )

    def refusal(
        self, protected: Belief, candidate: Belief, call: str, verb: str, *, rival: bool = False
    ) -> ProtectedBeliefError:
        """The error refusing to ``verb`` ``protected``: the write is of lower integrity, or
        (``rival``) it comes from another trusted origin (:class:`ConflictingBeliefError`)."""
        kind = ConflictingBeliefError if rival else ProtectedBeliefError
        if rival:
            why = (
                f"the new text comes from another trusted origin "
                f"({candidate.origin.describe()}); both are now contradicted and in the "
                f"contradiction channel (candidate {candidate.id})"
            )
        else:
            why = (
                f"the write is {candidate.origin.integrity.name.lower()} and the memory is "
                f"supported ({protected.origin.integrity.name.lower()}); recorded as candidate "
                f"{candidate.id}, contradicting it"
            )
        return kind(
            f"refused to {verb} belief {protected.id}: {why}",
            store=self.store,
            call=call,
            belief_id=protected.id,
            candidate_id=candidate.id,
        )

    @contextmanager
    def writing(self, pending: PendingWrite | Sequence[PendingWrite], call: str) -> Iterator[None]:
        """The store half of a write: if the SDK call (or reading its answer) fails, every
        pending binding is marked ``failed`` and its belief hidden (:meth:`fail_write`)."""
        try:
            yield
        except AdapterError as exc:
            for one in [pending] if isinstance(pending, PendingWrite) else pending:
                self.fail_write(one, exc, call)
            raise

    @contextmanager
    def deleting(self, binding: StoreBinding | None, call: str) -> Iterator[None]:
        """The store half of a delete: if the SDK call fails, the binding says so."""
        try:
            yield
        except AdapterError as exc:
            if binding is not None:
                self.fail_delete(binding, exc, call)
            raise

    def fail_delete(self, binding: StoreBinding, error: BaseException, call: str) -> None:
        failed = binding.model_copy(
            update={
                "state": BindingState.FAILED,
                "detail": f"{call} failed: {error}"[:500],
                "updated_at": self.wall.clock(),
            }
        )
        self._commit(
            "binding.failed",
            {"belief_id": binding.belief_id, "call": call},
            Records(bindings=(failed,)),
        )

    def retire(self, binding: StoreBinding, state: BindingState, reason: str) -> None:
        belief = self.wall.store.get_belief(binding.belief_id)
        retired = binding.model_copy(
            update={"state": state, "detail": reason, "updated_at": self.wall.clock()}
        )
        kind = f"binding.{state.value}"
        data = {"belief_id": binding.belief_id, "store_id": binding.store_id, "reason": reason}
        if belief is None or belief.retrieval_status not in _HIDEABLE:
            self._commit(kind, data, Records(bindings=(retired,)))
            return
        hide = Move(Axis.RETRIEVAL, RetrievalStatus.HIDDEN)
        self._commit_move(kind, data, belief, hide, Authority.SYSTEM, reason, bindings=(retired,))

    # -- read path --------------------------------------------------------------------------

    def resolve_items(self, items: Sequence[StoreItem]) -> list[tuple[StoreBinding, Belief]]:
        """Bindings and beliefs for ``items``, in order: unbound items recorded as external,
        drifted ones flagged. Shared by the read path and sync."""
        bindings = self.wall.store.bindings_by_store_id(self.store, [i.store_id for i in items])
        for item in items:
            if item.store_id not in bindings:
                adopted = self.adopt_unbound(item)
                if adopted is not None:
                    bindings[item.store_id] = adopted
        beliefs = self.wall.store.get_beliefs(list({b.belief_id for b in bindings.values()}))
        out: list[tuple[StoreBinding, Belief]] = []
        for item in items:
            binding = bindings.get(item.store_id)
            if binding is None:
                continue
            belief = beliefs.get(binding.belief_id)
            if belief is None:  # a binding to a belief this store does not hold: fail closed
                continue
            if binding.state == BindingState.WRITTEN and item.content_hash != binding.content_hash:
                if binding.content_hash in item.upgradable_hashes:
                    binding = self.rebind(binding, item.content_hash, EARLIER_HASH_UPGRADE)
                else:
                    binding, belief = self.mark_drifted(binding, belief, item)
                bindings[item.store_id] = binding
            out.append((binding, belief))
        return out

    def adopt_unbound(self, item: StoreItem) -> StoreBinding | None:
        """A memory written around the firewall: unknown external origin, then bound.
        (An item with no text is not recorded and stays unbound: it is dropped.)"""
        if not item.text.strip():
            return None
        origin = Origin.external(f"{self.store}:unbound:{item.store_id}")
        # the adapter's own read of the store (host side), not a read the agent reports: its
        # text is the store's external content alone
        observed = self.session._observe_call(
            ToolCall(
                tool=f"{self.store}.read",
                content=item.text,
                origin=origin,
                args={"store_id": item.store_id},
            ),
            host_read=True,
        )
        belief = observed.content[0]
        binding = self._binding(
            belief.id,
            store_id=item.store_id,
            text_hash=item.content_hash,
            state=BindingState.WRITTEN,
            detail="unbound: written around the firewall",
        )
        self._commit(
            "binding.unbound",
            {"belief_id": belief.id, "store_id": item.store_id},
            Records(bindings=(binding,)),
        )
        return binding

    def rebind(self, binding: StoreBinding, text_hash: str, detail: str) -> StoreBinding:
        """The binding follows a change the store made and the firewall judged (Zep's edge
        invalidation, linked by :meth:`store_signal`): the new hash, and why."""
        moved = binding.model_copy(
            update={"content_hash": text_hash, "detail": detail, "updated_at": self.wall.clock()}
        )
        self._commit(
            "binding.rebound",
            {"belief_id": binding.belief_id, "store_id": binding.store_id, "detail": detail},
            Records(bindings=(moved,)),
        )
        return moved

    def mark_drifted(
        self, binding: StoreBinding, belief: Belief, item: StoreItem
    ) -> tuple[StoreBinding, Belief]:
        """The store's text changed around the firewall: suspicious, recorded, never trusted."""
        reason = (
            f"{self.store} item {item.store_id} no longer matches its recorded hash "
            "(edited around the firewall)"
        )
        drifted = binding.model_copy(
            update={
                "state": BindingState.DRIFTED,
                "detail": f"found {item.content_hash}",
                "updated_at": self.wall.clock(),
            }
        )
        moved = self._commit_move(
            "binding.drifted",
            {
                "belief_id": belief.id,
                "store_id": item.store_id,
                "expected": binding.content_hash,
                "found": item.content_hash,
                "text": item.text,
            },
            belief,
            Move(Axis.SECURITY, SecurityStatus.SUSPICIOUS),
            Authority.SENTINEL,
            reason,
            bindings=(drifted,),
        )
        return drifted, moved

    def screen(
        self,
        items: Sequence[StoreItem],
        *,
        query: str,
        k: int,
        call: str = "read",
        limit: int | None = None,
    ) -> Hits:
        """The read path for one SDK call's hits; logs the result as a recall, and says what
        it withheld (:attr:`Hits.summary`, INFO on the ``gnomon`` logger, a one-time warning
        when a read is empty only because of the policy: :mod:`adapters.withheld`).

        ``limit``: the caller's ``top_k`` when ``items`` were over-fetched
        (:func:`fetch_size`): the first ``limit`` hits are screened as before; past them only
        trusted facts are looked for (:meth:`_trusted_tail`, read-only); then the hits that
        pass are ranked trusted first (:func:`trusted_first`) and at most ``limit`` are kept,
        before anything is logged.

        The policy is re-validated on every call (``self.policy`` may have been replaced or
        edited since the guard was made), and a privileged policy is refused: the audit path is
        :meth:`audit`, with an auditor grant."""
        policy, digest = resolve_with_digest(self.policy)  # validated once for the read
        if policy.privileged:
            raise MissingGrantError(
                f"policy {policy.name!r} is privileged: reading through it is the audit path",
                hint="use memory.gnomon.audit(query, grant=wall.grant('auditor', ...))",
            )
        now = self.wall.clock()
        head = items if limit is None else items[: max(limit, 0)]
        resolved = dict(
            (binding.store_id, (binding, belief)) for binding, belief in self.resolve_items(head)
        )
        verdicts = [self._verdict(policy, item, resolved.get(item.store_id), now) for item in head]
        if limit is not None:
            accepted = sum(1 for s in verdicts if s.verdict == "accepted")
            tail = self._trusted_tail(policy, items[len(head) :], now, limit - accepted)
            verdicts = trusted_first([*verdicts, *tail], limit)
        out = capped(verdicts, policy.quote.max_items)
        self.log(out, query=query, k=k, now=now, policy=policy, digest=digest)
        hits = Hits(out, report(out, policy=policy.name))
        reader = Reader(policy, self.session.project, self.session.user, now)
        hits.summary["contradictions"] = conflicts.of_beliefs(
            self, policy, reader, [s.belief for s in out if s.belief is not None]
        )
        self.announcer.announce(hits.summary, call=call)
        return hits

    def _trusted_tail(
        self, policy: ContextPolicy, items: Sequence[StoreItem], now: datetime, wanted: int
    ) -> list[Screened]:
        """Among over-fetched ``items`` (past the caller's ``top_k``), up to ``wanted`` that the
        policy accepts as trusted context, in store order. Read-only and cheap: a hit that is
        unbound, not ``written`` or no longer matches its binding is skipped (it would not be
        accepted, and it is never shown, so nothing is recorded about it), and only a belief
        the policy admits gets a verdict."""
        if wanted <= 0 or not items:
            return []
        store = self.wall.store
        bindings = store.bindings_by_store_id(self.store, [i.store_id for i in items])
        beliefs = store.get_beliefs(list({b.belief_id for b in bindings.values()}))
        bound: list[tuple[StoreItem, StoreBinding, Belief]] = []
        for item in items:
            binding = bindings.get(item.store_id)
            belief = beliefs.get(binding.belief_id) if binding is not None else None
            if (
                binding is not None
                and belief is not None
                and binding.state == BindingState.WRITTEN
                and item.content_hash == binding.content_hash
            ):
                bound.append((item, binding, belief))
        # the policy's reasons for all of them at once (its age cutoff computed once)
        reasons = policy.rejections([belief for _, _, belief in bound], now)
        out: list[Screened] = []
        for (item, binding, belief), why in zip(bound, reasons, strict=True):
            if why and not policy.admits_extracted(belief, now):
                continue
            screened = self._verdict(policy, item, (binding, belief), now)
            if screened.verdict == "accepted":
                out.append(screened)
                if len(out) >= wanted:
                    break
        return out

    def contradictions(self, belief_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The contradiction channel for ``belief_ids``, as this client's reader may know it
        (:mod:`adapters.conflicts`)."""
        return conflicts.entries(self, belief_ids)

    def _verdict(
        self,
        policy: ContextPolicy,
        item: StoreItem,
        found: tuple[StoreBinding, Belief] | None,
        now: datetime,
    ) -> Screened:
        """Accepted, quoted (both within the sensitivity ceiling, as the core evaluates it) or
        rejected; never accepted or quoted past the hard floor (:func:`floor_reasons`)."""
        if found is None:
            return Screened(item, None, "dropped", note="no belief for this item")
        binding, belief = found
        if not in_scope(belief, self.session.project, self.session.user):
            return Screened(item, None, "dropped", note="not a memory of this session's project")
        if binding.state in (BindingState.PENDING, BindingState.FAILED, BindingState.DELETED):
            return Screened(item, belief, "dropped", note=f"binding is {binding.state.value}")
        reasons = tuple(policy.rejection_reasons(belief, now))
        codes = {x.code for x in reasons}
        floor = tuple(r for r in floor_reasons(belief) if r.code not in codes)
        if floor:
            return Screened(item, belief, "rejected", reasons + floor)
        if not reasons:
            return Screened(item, belief, "accepted")
        if policy.admits_extracted(belief, now):
            return Screened(item, belief, "accepted", extracted=True)
        if policy.quotable(belief, now):
            if item.text_field is None:  # no field to show the marker in: never unmarked
                return Screened(item, belief, "rejected", reasons, note="cannot be shown quoted")
            if credential_kinds(item.text):  # its label may say "internal": the text decides
                return Screened(item, belief, "rejected", reasons, note="holds a credential")
            beside = beside_quote_problem(item)  # what it shows outside the marker, as stored
            if beside is not None:
                return Screened(item, belief, "rejected", reasons, note=beside)
            return Screened(item, belief, "quoted", reasons)
        return Screened(item, belief, "rejected", reasons)

    def log(
        self,
        screened: Sequence[Screened],
        *,
        query: str,
        k: int,
        now: datetime,
        policy: ContextPolicy,
        digest: str,
    ) -> None:
        """Log ``screened`` as one recall under ``policy``, as :meth:`screen` resolved it (once,
        with its ``digest``)."""
        result = RecallResult(
            query=query,
            policy=policy.name,
            policy_digest=digest,
            accepted=tuple(s.belief for s in screened if s.verdict == "accepted" and s.belief),
            quoted=tuple(
                QuotedItem(s.belief) for s in screened if s.verdict == "quoted" and s.belief
            ),
            rejected=tuple(
                RejectedItem(s.belief.id, s.reasons, s.belief.origin)
                for s in screened
                if s.verdict == "rejected" and s.belief
            ),
        )
        self.session._log_screened(result, policy, k=max(k, 1), now=now, source=self.store)

    def authorize_history(self, store_id: str, *, grant: Grant) -> None:
        """Check an auditor grant before a store's history is read, and log the read."""
        from gnomon.firewall.gate.grants import GrantAuthority

        s = self.session
        checked = self.wall.verifier.verify(
            grant,
            {GrantAuthority.AUDITOR},
            now=self.wall.clock(),
            operation="the audit path",
            project=s.project,
        )
        self.wall.commit(
            self.wall.draft(
                "audit.privileged_read",
                actor=checked.subject,
                now=self.wall.clock(),
                project=s.project,
                data={"grant_id": checked.id, "store": self.store, "history_of": store_id},
            )
        )

    # -- privileged path --------------------------------------------------------------------

    def audit(
        self, query: str | None, *, grant: Grant, limit: int = 100, backend: Any = None
    ) -> list[AuditView]:
        """:meth:`Firewall.audit` (quarantined and hidden included, itself logged) plus each
        belief's bindings and, where the backend keeps one, the store's own history."""
        entries: list[AuditEntry] = self.wall.audit(
            query, grant=grant, project=self.session.project, limit=limit
        )
        bindings = self.wall.store.bindings_for_beliefs([e.belief.id for e in entries])
        by_belief: dict[str, list[StoreBinding]] = {}
        for b in bindings:
            by_belief.setdefault(b.belief_id, []).append(b)
        views = []
        for entry in entries:
            mine = by_belief.get(entry.belief.id, [])
            history: list[dict[str, Any]] = []
            if backend is not None:
                for b in mine:
                    if b.store == self.store and b.store_id is not None:
                        history.extend(backend.history(b.store_id))
            views.append(AuditView(entry.belief, entry.revisions, tuple(mine), tuple(history)))
        return views


#: A guarded search asks its store for this many times the caller's ``top_k`` ...
OVERFETCH = 4
#: ... and at least this many hits (at most :data:`MAX_FETCH`): untrusted look-alikes must
#: outrank a trusted memory this many times over to push it out of ``top_k``.
MIN_FETCH = 50
MAX_FETCH = 1000


def fetch_size(k: int) -> int:
    """How many hits a guarded search asks its store for, for a caller's ``top_k`` of ``k``:
    enough that writes the policy withholds or quotes cannot crowd a trusted memory out of
    the ``k`` the caller sees (:func:`trusted_first` then keeps ``k``).

    >>> fetch_size(5), fetch_size(50), fetch_size(2000)
    (50, 200, 2000)
    """
    return max(k, min(max(k * OVERFETCH, MIN_FETCH), MAX_FETCH))


def _rank(s: Screened) -> int:
    if s.verdict == "accepted":
        return 1 if s.extracted else 0
    return 2


def trusted_first(screened: Sequence[Screened], limit: int) -> list[Screened]:
    """The hits that passed, trusted facts first, then extracted facts, then quoted data, each
    in store order, at most ``limit`` of them; then the hits withheld (reported, not shown).

    Hits that passed but rank past ``limit`` are left out altogether (never shown, so never
    logged as read): the store returned them only because the search over-fetched.

    >>> from gnomon.adapters.base import StoreItem
    >>> hits = [Screened(StoreItem(str(i), "t"), None, v) for i, v in
    ...         enumerate(["quoted", "rejected", "quoted", "accepted"])]
    >>> [(s.item.store_id, s.verdict) for s in trusted_first(hits, 2)]
    [('3', 'accepted'), ('0', 'quoted'), ('1', 'rejected')]
    """
    shown = sorted((s for s in screened if s.passed), key=_rank)[: max(limit, 0)]
    return [*shown, *(s for s in screened if not s.passed)]


def capped(screened: list[Screened], max_items: int) -> list[Screened]:
    """``screened`` with at most ``max_items`` quoted hits (the policy's ``quote.max_items``, in
    store order): each one past the cap is withheld with its reasons and the note
    :data:`~adapters.withheld.QUOTE_CAP`, so a store cannot flood a read with quoted data.

    >>> from gnomon.adapters.base import StoreItem
    >>> hits = [Screened(StoreItem(str(i), "t"), None, "quoted") for i in range(3)]
    >>> [s.verdict for s in capped(hits, 2)]
    ['quoted', 'quoted', 'rejected']
    """
    out, quoted = [], 0
    for s in screened:
        if s.verdict == "quoted":
            quoted += 1
            if quoted > max_items:
                note = f"{QUOTE_CAP}: the policy quotes at most {max_items} item(s) per read"
                s = Screened(s.item, s.belief, "rejected", s.reasons, note=note)
        out.append(s)
    return out


def rivals(old: Belief, new: Belief) -> bool:
    """True when ``new`` may not supersede ``old`` although it is as trusted: both are
    supported and standing, and ``new`` does not come from ``old``'s own origin (another
    user's statement contradicts a fact; only its own author revises it)."""
    return (
        old.truth_status == TruthStatus.SUPPORTED
        and new.truth_status == TruthStatus.SUPPORTED
        and stands(old)
        and stands(new)
        and not set(old.origin.origin_ids) <= set(new.origin.origin_ids)
    )


def outranks(belief: Belief, write: Origin) -> bool:
    """True when ``write`` may not retire ``belief``: the belief is supported and the write's
    label has lower integrity than the belief's own."""
    return (
        belief.truth_status == TruthStatus.SUPPORTED and write.integrity < belief.origin.integrity
    )


__all__ = [
    "DROP_IN_POLICY",
    "AuditView",
    "Guard",
    "Hits",
    "PendingWrite",
    "Screened",
    "annotated",
    "capped",
    "fetch_size",
    "outranks",
    "passed",
    "rivals",
    "trusted_first",
]
