"""The host-side object: opens a store, mints grants, runs privileged operations.

A :class:`Firewall` is held by the host application. Agents get
:class:`~firewall.host.session.Session`
objects (``wall.session(...)``), which can observe, remember, recall and decide but can never
mint authority: promotion, quarantine clearance and the audit path all need a
:class:`~firewall.gate.grants.Grant` that this object (or an operator's key) signed, and a user's,
probe's or trusted tool's origin enters only through a :class:`~firewall.host.channels.Channel` this
object opened (:meth:`Firewall.channel`).

>>> from gnomon import firewall
>>> wall = firewall.open("memory://")
>>> chat = wall.channel(firewall.Origin.user("alice"))  # host-side: the user's chat
>>> with wall.session(project="shop", actor="coder", user="alice") as s:
...     fact = s.observe(tool="chat", content="We deploy on Fridays", origin=chat)
...     s.recall("deploy").accepted[0].statement
'We deploy on Fridays'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall import __about__
from gnomon.firewall.audit.erasure import (
    DerivedMode,
    ErasureResult,
    ErasureTarget,
    TargetKind,
    erase,
)
from gnomon.firewall.gate.adoption import Adopter, Context
from gnomon.firewall.gate.contradictions import (
    cited_flags,
    contradiction_record,
    transition_flags,
)
from gnomon.firewall.gate.gate import GATE_VERSION, Move, apply_moves
from gnomon.firewall.gate.grants import (
    DEFAULT_TTL,
    Grant,
    GrantAuthority,
    GrantSigner,
    GrantVerifier,
    check_scope,
    revalidated,
)
from gnomon.firewall.host.channels import Channel
from gnomon.firewall.log.batch import ImportBatch
from gnomon.firewall.log.checkpoints import Checkpoint, CheckpointSigner, write_checkpoint
from gnomon.firewall.log.events import (
    ORIGIN_FLAGGED,
    SCHEMA_VERSION,
    Event,
    EventDraft,
    Records,
    VerifyReport,
)
from gnomon.firewall.log.moves import MoveBatch
from gnomon.firewall.model.arguments import check_value, checked_call, checked_streaming
from gnomon.firewall.model.chain import (
    Belief,
    Contradiction,
    Revision,
    content_hash,
)
from gnomon.firewall.model.clock import Clock, utcnow
from gnomon.firewall.model.content import (
    DEFAULT_MAX_BLOCK_BYTES,
    checked_arg_names,
    lone_surrogate,
    statement_text,
)
from gnomon.firewall.model.errors import (
    ForgedChannelError,
    InputError,
    InvalidOriginError,
    MissingGrantError,
    SpentGrantError,
    StoreCorruptError,
    UnknownIdError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.heap import cyclic_gc_paused
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Integrity, Origin
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    ClaimKind,
    EvidenceQuality,
    ExtractionMethod,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)
from gnomon.firewall.store.base import CLAIM_FIELD, Store, grant_claim
from gnomon.firewall.store.registry import default_url, open_store

if TYPE_CHECKING:
    from gnomon.firewall.host.session import Session

GRANT_TO_AUTHORITY = {GrantAuthority.USER: Authority.USER, GrantAuthority.PROBE: Authority.PROBE}


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One record brought in from an existing store: always lands unverified and restricted."""

    text: str
    source_id: str
    created_at: datetime | None = None
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    #: the hash a binding records (an adapter's hash covers the item's other rendered fields);
    #: default: the text's own hash
    content_hash: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    belief: Belief
    revisions: tuple[Revision, ...]


class Firewall:
    """A memory firewall over one store. Create it with :func:`firewall.open`."""

    def __init__(
        self,
        store: Store,
        *,
        trusted_keys: Iterable[Ed25519PublicKey] | None = None,
        signer: GrantSigner | None = None,
        clock: Clock = utcnow,
        max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
        checkpoint_signer: CheckpointSigner | None = None,
        checkpoint_every: int | None = None,
        envelope_args: Iterable[str] = (),
    ) -> None:
        self.store = store
        # Argument names whose short values envelope statements may show (firewall.model.content).
        self.envelope_args = checked_arg_names(envelope_args)
        self.clock = clock
        self.max_block_bytes = max_block_bytes
        if checkpoint_every is not None and (checkpoint_every < 1 or checkpoint_signer is None):
            raise InputError(
                "checkpoint_every needs a checkpoint_signer and a positive number of events",
                hint="firewall.open(url, checkpoint_signer=CheckpointSigner.from_file(KEY), "
                "checkpoint_every=1000)",
            )
        self.checkpoint_signer = checkpoint_signer
        self.checkpoint_every = checkpoint_every
        pinned = list(trusted_keys or [])
        for key in pinned:
            if not isinstance(key, Ed25519PublicKey):
                raise InputError(
                    f"trusted_keys holds {type(key).__name__}, not an Ed25519 public key",
                    hint="load each `gnomon keys generate` public PEM with "
                    "gnomon.firewall.gate.grants.load_public_key(path)",
                )
        if pinned:
            self._signer = signer
            self.verifier = GrantVerifier.pinning(*pinned)
        else:
            # No operator keys: an ephemeral key that lives only in this host-side object.
            self._signer = signer or GrantSigner.generate()
            self.verifier = GrantVerifier.pinning(self._signer.public_key)
        # Channels this object opened, by id: the only ones a session accepts (see channel()).
        self._channels: dict[str, Channel] = {}
        # In-process subscribers to the event stream (firewall.host.sentinels): called after commit.
        self._subscribers: list[Callable[[list[Event]], None]] = []

    # -- plumbing shared with sessions ----------------------------------------------------

    def versions(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "package": __about__.__version__,
            "schema": SCHEMA_VERSION,
            "gate": GATE_VERSION,
        }
        if extra:
            out.update({k: v for k, v in extra.items() if v is not None})
        return out

    def draft(
        self,
        kind: str,
        *,
        actor: str,
        now: datetime,
        session_id: str | None = None,
        project: str | None = None,
        user: str | None = None,
        data: Mapping[str, Any] | None = None,
        records: Records | None = None,
        versions: Mapping[str, Any] | None = None,
        moves: MoveBatch | None = None,
    ) -> EventDraft:
        return EventDraft(
            kind=kind,
            actor=actor,
            at=now,
            session_id=session_id,
            project=project,
            user=user,
            versions=self.versions(versions),
            data=dict(data or {}),
            records=records or Records(),
            moves=moves,
        )

    def commit(self, *drafts: EventDraft) -> list[Event]:
        return self._committed(self.store.commit(drafts))

    def commit_if_head(self, head: int, *drafts: EventDraft) -> list[Event] | None:
        """:meth:`commit`, only if the log's last seq is still ``head`` (checked in the same
        transaction, :meth:`Store.commit_if_head <firewall.store.base.Store.commit_if_head>`);
        ``None`` and nothing written otherwise."""
        events = self.store.commit_if_head(drafts, head)
        return None if events is None else self._committed(events)

    def claim_execution(self, request_id: str, drafts: Sequence[EventDraft]) -> list[Event] | None:
        """:meth:`Store.claim_execution`, then what follows every commit (checkpoints,
        subscribers) when the claim was won."""
        events = self.store.claim_execution(request_id, drafts)
        return None if events is None else self._committed(events)

    def spend(self, grant_id: str, draft: EventDraft) -> Event:
        """Commit ``draft`` as the one use of the single-use grant ``grant_id``: the store's
        atomic claim (:func:`~firewall.store.base.grant_claim`) decides, across threads and
        processes, so of concurrent spenders exactly one commits and every other one raises
        :class:`SpentGrantError` having written nothing."""
        claim = grant_claim(grant_id)
        events = self.claim_execution(
            claim, [replace(draft, data={**draft.data, CLAIM_FIELD: claim})]
        )
        if events is None:
            raise SpentGrantError(
                f"{draft.kind}: grant {grant_id} was already used; a grant that promotes is "
                "single-use",
                hint="issue a fresh grant for this promotion",
            )
        return events[0]

    def _committed(self, events: list[Event]) -> list[Event]:
        """After a durable commit: periodic checkpoints, then the subscribers."""
        every = self.checkpoint_every
        # periodic checkpoints: one integer comparison per commit unless a multiple was crossed
        if every and events and events[-1].seq // every != (events[0].seq - 1) // every:
            self.checkpoint()
        for subscriber in tuple(self._subscribers):
            subscriber(events)
        return events

    def subscribe(self, subscriber: Callable[[list[Event]], None]) -> None:
        """Call ``subscriber`` with the events of every commit, after it is durable (host-side:
        how an in-process sentinel watches the stream). What it raises propagates to the
        committer, after the commit: a failing sentinel is loud, never silently skipped."""
        self._subscribers.append(subscriber)

    @checked_call
    def flag_origin(
        self, origin_id: str, *, reason: str, actor: str = "operator", alert_id: str | None = None
    ) -> list[str]:
        """Flag ``origin_id`` as hostile and quarantine, with sentinel authority, every belief
        whose label includes it (so everything derived from it), in ONE event and transaction
        however many there are. The event (``origin.flagged``) carries the reason and the alert
        id; each quarantine revision names the alert in ``related_ids``; every decision that
        cited a quarantined belief gets a flag. Returns the ids of the beliefs that moved, in
        id order (already quarantined or malicious ones stay as they are).

        The candidates are compact rows (:meth:`~firewall.store.base.Store.origin_rows`), the
        decisions to flag one lookup for all of them: no typed belief is built, so a million
        beliefs are one pass."""
        if not isinstance(origin_id, str) or not origin_id:
            raise InputError("an origin id must be a non-empty string", hint="e.g. user:mallory")
        if not isinstance(reason, str) or not reason:
            raise InputError("flagging an origin needs a reason", hint="pass reason='...'")
        # a million rows of short-lived containers and no cycles: the cyclic collector would
        # walk them again and again (measured: 8x the batch's Python time at 1M beliefs)
        with cyclic_gc_paused():
            return self._flag_origin(origin_id, reason=reason, actor=actor, alert_id=alert_id)

    def _flag_origin(
        self, origin_id: str, *, reason: str, actor: str, alert_id: str | None
    ) -> list[str]:
        now = self.clock()
        batch = MoveBatch(Authority.SENTINEL, now, related=[alert_id] if alert_id else [])
        why = f"origin {origin_id} flagged: {reason}"
        quarantine = [Move(Axis.SECURITY, SecurityStatus.QUARANTINED)]
        done = {SecurityStatus.QUARANTINED.value, SecurityStatus.MALICIOUS.value}
        plans: dict[tuple[str, str], tuple[tuple[Axis, str, str], ...]] = {}
        moved: list[str] = []
        for row in self.store.origin_rows(origin_id):
            if row.security in done:
                continue
            if type(row.version) is not int or not _known_states(row.security, row.retrieval):
                raise StoreCorruptError(
                    f"belief {row.belief_id} carries flagged origin {origin_id}, but its stored "
                    "document does not read as a belief version; nothing was quarantined",
                    hint="run `gnomon rebuild --apply` to restore the projections from the log, "
                    "then flag the origin again",
                )
            plan = plans.get((row.security, row.retrieval))
            if plan is None:  # the gate is asked once per pair of states, not once per belief
                current = {Axis.SECURITY: row.security, Axis.RETRIEVAL: row.retrieval}
                plan = plans[row.security, row.retrieval] = batch.plan(current, quarantine)
            if batch.add_planned(row.belief_id, row.version, plan, reason=why):
                moved.append(row.belief_id)
        cited = self.store.decisions_citing(moved)
        flags = cited_flags(cited, why=SecurityStatus.QUARANTINED.value)
        self.commit(
            self.draft(
                ORIGIN_FLAGGED,
                actor=actor,
                now=now,
                data={
                    "origin_id": origin_id,
                    "reason": reason,
                    "alert_id": alert_id,
                    "quarantined": moved,
                },
                records=Records(decisions=tuple(flags)),
                moves=batch,
            )
        )
        return moved

    def checkpoint(self) -> Checkpoint:
        """Sign the chain head with the checkpoint key and append it as a ``log.checkpoint``."""
        if self.checkpoint_signer is None:
            raise MissingGrantError(
                "this firewall holds no checkpoint signing key",
                hint="open it with checkpoint_signer=CheckpointSigner.from_file(KEY), or run "
                "`gnomon log checkpoint --key KEY`",
            )
        return write_checkpoint(self.store, self.checkpoint_signer, now=self.clock())

    @checked_call
    def require_belief(self, belief_id: str) -> Belief:
        if not isinstance(belief_id, str):
            raise InputError(f"belief id must be a string, got {type(belief_id).__name__}")
        belief = self.store.get_belief(belief_id)
        if belief is None:
            raise UnknownIdError("belief", belief_id)
        return belief

    # -- sessions -------------------------------------------------------------------------

    @contextmanager
    def session(
        self,
        *,
        project: str,
        actor: str,
        user: str | None = None,
        model_id: str | None = None,
        prompt_id: str | None = None,
        tool_version: str | None = None,
    ) -> Iterator[Session]:
        from gnomon.firewall.host.session import Session

        s = Session.start(
            self,
            project=project,
            actor=actor,
            user=user,
            model_id=model_id,
            prompt_id=prompt_id,
            tool_version=tool_version,
        )
        try:
            yield s
        finally:
            s.end()

    # -- channels -------------------------------------------------------------------------

    def channel(
        self, origin: Origin, *, grant: Grant | None = None, project: str | None = None
    ) -> Channel:
        """Open a channel for an authority-bearing origin (host-side only).

        Writes that carry the channel are recorded with ``origin``, a host-observed envelope
        and ``validated`` trust (``synthetic`` for a probe). A user or probe channel rests on a
        grant of that authority whose subject is the origin's name: pass one, or let this
        firewall issue it when it holds a signing key (it refuses when it pins operator keys
        and holds none). A tool channel needs no grant: opening it is the host's own act. With
        ``project``, the channel is accepted only by sessions of that project. The opening is
        logged as a ``channel.opened`` event that names the grant.

        >>> from gnomon import firewall
        >>> wall = firewall.open("memory://")
        >>> wall.channel(firewall.Origin.tool("pytest")).origin.describe()
        'observed [tool:pytest]'
        """
        if type(origin) is not Origin:
            raise InvalidOriginError(
                f"a channel is opened for a firewall.Origin, got {type(origin).__name__}",
                hint="wall.channel(Origin.user('alice')) or wall.channel(Origin.tool('pytest'))",
            )
        grant_id = None
        if origin.integrity == Integrity.ATTESTED:
            # User or probe authority: it rests on a grant for exactly that name.
            if len(origin.origin_ids) != 1:
                raise InvalidOriginError(
                    f"a user or probe channel names one origin, got {origin.describe()}",
                    hint="open one channel per user (wall.channel(Origin.user('alice')))",
                )
            (klass,) = origin.classes
            (ident,) = origin.origin_ids
            name = ident.removeprefix(f"{klass.value}:")
            authority = GrantAuthority(klass.value)
            operation = f"opening a channel for {ident}"
            if grant is None:
                if self._signer is None:
                    raise MissingGrantError(
                        f"{operation} needs a {authority.value} grant: this firewall pins "
                        "operator keys and holds no signing key",
                        hint="pass grant=GrantSigner.from_file(<operator.key>).issue(...)",
                    )
                # A grant for the channel alone: it covers no belief, so it can attest this
                # origin and nothing else (it can never promote or clear).
                grant = self._signer.issue(authority, name, project=project, now=self.clock())
            checked = self.verifier.verify(
                grant, {authority}, now=self.clock(), operation=operation, project=project
            )
            if checked.subject != name:
                raise MissingGrantError(
                    f"grant {checked.id} is for {checked.subject!r}; the channel is for {ident}",
                    hint=f"issue a {authority.value} grant whose subject is {name!r}",
                )
            grant_id = checked.id
        opened = Channel(new_id("chn"), origin, project, grant_id)
        self.commit(
            self.draft(
                "channel.opened",
                actor="host",
                now=self.clock(),
                project=project,
                data={
                    "channel_id": opened.id,
                    "origin": origin.json_dict(),
                    "grant_id": grant_id,
                },
            )
        )
        self._channels[opened.id] = opened
        return opened

    def attested_by(self, channel: object, *, project: str) -> Channel:
        """The channel, if this firewall opened it for ``project``; a forgery is refused."""
        known = self._channels.get(channel.id) if isinstance(channel, Channel) else None
        if known is None or known is not channel:
            raise ForgedChannelError(
                "this channel was not opened by the session's firewall",
                hint="channels come only from Firewall.channel(...) on the host",
            )
        if known.project is not None and known.project != project:
            raise ForgedChannelError(
                f"channel {known.id} is open for project {known.project!r}, not {project!r}",
                hint="open a channel for this project with wall.channel(origin, project=...)",
            )
        return known

    # -- grants ---------------------------------------------------------------------------

    @checked_call
    def grant(
        self,
        authority: GrantAuthority | str,
        subject: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        project: str | None = None,
        beliefs: Sequence[str] | None = None,
        subject_prefix: str | None = None,
        store: str | None = None,
    ) -> Grant:
        """Mint a grant (host-side only). With pinned operator keys, pass ``signer=`` at open.

        ``store=`` (with ``project=``) covers every memory imported from that store in the
        project: what :func:`firewall.host.store_adoption.adopt_store` promotes in one step.

        A ``user`` or ``probe`` grant must name what it covers: ``beliefs=[ids]`` (its project
        is then theirs) and/or ``subject_prefix=`` with ``project=``. One that promotes or
        clears is spent by that use. An ``auditor`` grant reads one ``project``, or every
        project when none is given.
        """
        if self._signer is None:
            raise MissingGrantError(
                "this firewall pins operator keys and holds no signing key",
                hint="issue grants with GrantSigner.from_file(<operator.key>).issue(...)",
            )
        if authority not in {a.value for a in GrantAuthority}:
            known = ", ".join(a.value for a in GrantAuthority)
            raise InputError(f"unknown grant authority {authority!r}", hint=f"use one of: {known}")
        if isinstance(beliefs, str):
            raise InputError("beliefs must be a list of belief ids, not one string")
        ids = list(dict.fromkeys(beliefs or ()))
        if str(authority) in (GrantAuthority.AUDITOR, GrantAuthority.ERASER):
            if ids or subject_prefix is not None or store is not None:
                raise InputError(
                    f"an {authority} grant covers a whole project; it names no beliefs",
                    hint="pass project='...' (or nothing, for every project)",
                )
        elif not ids and subject_prefix is None and store is None:
            raise InputError(
                f"a {authority} grant must name what it covers",
                hint="pass beliefs=[belief ids], or subject_prefix='...' with project='...'",
            )
        elif ids:
            project = self._project_of(ids, project)
        elif project is None:
            raise InputError(
                "a grant over a subject prefix or a store must name its project",
                hint="pass project='...' as well as subject_prefix='...'",
            )
        return self._signer.issue(
            authority,
            subject,
            project=project,
            beliefs=ids,
            subject_prefix=subject_prefix,
            store=store,
            ttl=ttl,
            now=self.clock(),
        )

    def _project_of(self, ids: Sequence[str], project: str | None) -> str:
        """The one project the beliefs ``ids`` live in (and ``project``, if named)."""
        found = self.store.get_beliefs(ids)
        for ident in ids:
            if ident not in found:
                raise UnknownIdError("belief", ident)
        projects = {b.project for b in found.values()} | ({project} if project else set())
        if len(projects) != 1:
            raise InputError(
                f"a grant covers one project; these beliefs are in {', '.join(sorted(projects))}",
                hint="issue one grant per project",
            )
        return projects.pop()

    def _authority(
        self, grant: Grant | None, operation: str, belief: Belief, *, spends: bool = False
    ) -> tuple[Authority, Grant]:
        """Verify a user/probe ``grant`` for ``operation`` on ``belief`` (scope included).

        ``spends``: the operation promotes or clears, so the grant must not have been used
        before; "used" is read from the store (revisions carry the grant id), so it holds across
        processes and restarts. This check gives the clear error early, and it is what keeps
        a grant spent before spends were claims (an older log: no ``grant:<id>`` claim) spent;
        concurrent spenders are decided by the atomic claim in :meth:`spend`.
        """
        checked = self.verifier.verify(
            grant,
            {GrantAuthority.USER, GrantAuthority.PROBE},
            now=self.clock(),
            operation=operation,
            belief=belief,
        )
        if spends:
            used = self.store.revisions_by_grant(checked.id)
            if used:
                raise SpentGrantError(
                    f"{operation}: grant {checked.id} was already used (on belief "
                    f"{used[0].belief_id}); a grant that promotes is single-use",
                    hint="issue a fresh grant for this promotion",
                )
        return GRANT_TO_AUTHORITY[checked.authority], checked

    # -- privileged moves -----------------------------------------------------------------

    @checked_call
    def transition(
        self,
        belief_id: str,
        moves: Sequence[Move],
        *,
        reason: str,
        grant: Grant | None = None,
        authority: Authority | None = None,
        kind: str = "belief.transitioned",
        related_ids: Sequence[str] = (),
    ) -> Belief:
        """Apply gate moves to one belief. ``user``/``probe`` authority only via a grant that
        covers the belief; host automation may act as ``sentinel``, ``policy`` or ``system``.
        A grant used to promote or clear (see :func:`promoting`) is single-use."""
        if not reason or not isinstance(reason, str):
            raise InputError("a transition needs a reason", hint="pass reason='...'")
        belief = self.require_belief(belief_id)
        checked: Grant | None = None
        spends = grant is not None and promoting(belief, moves)
        if grant is not None:
            acting, checked = self._authority(
                grant, f"{kind} on {belief_id}", belief, spends=spends
            )
        elif authority is None or authority in GRANT_TO_AUTHORITY.values():
            acting, checked = self._authority(None, f"{kind} on {belief_id}", belief)
        else:
            acting = authority
        now = self.clock()
        updated, revisions = apply_moves(
            belief,
            moves,
            authority=acting,
            reason=reason,
            now=now,
            grant_id=checked.id if checked else None,
            evidence=self.store.get_evidence(belief.claim_id),
            related_ids=related_ids,
        )
        if not revisions:
            return updated  # already in the requested states: nothing to record
        # a dependency contradicted, quarantined or marked malicious flags its decisions
        extra_records = transition_flags(self.store, belief, updated)
        draft = self.draft(
            kind,
            actor=checked.subject if checked else acting.value,
            now=now,
            project=belief.project,
            data={
                "belief_id": belief_id,
                "related_ids": list(related_ids),
                "authority": acting.value,
                "grant_id": checked.id if checked else None,
                "reason": reason,
            },
            records=Records(
                beliefs=(updated,),
                revisions=tuple(revisions),
                decisions=tuple(extra_records),
            ),
        )
        if spends and checked is not None:
            self.spend(checked.id, draft)
        else:
            self.commit(draft)
        return updated

    @checked_call
    def promote(self, belief_id: str, *, grant: Grant, reason: str) -> Belief:
        """Make a belief supported and normally retrievable, on a user or probe grant that
        covers it (single-use)."""
        return self.transition(
            belief_id,
            [Move(Axis.TRUTH, TruthStatus.SUPPORTED), Move(Axis.RETRIEVAL, RetrievalStatus.NORMAL)],
            reason=reason,
            grant=grant,
            kind="belief.promoted",
        )

    @checked_call
    def quarantine(
        self,
        belief_id: str,
        *,
        reason: str,
        grant: Grant | None = None,
        authority: Authority | None = None,
    ) -> Belief:
        """Quarantine (one-way without a user grant): only the audit path can see it after."""
        return self.transition(
            belief_id,
            [Move(Axis.SECURITY, SecurityStatus.QUARANTINED)],
            reason=reason,
            grant=grant,
            authority=authority,
            kind="belief.quarantined",
        )

    @checked_call
    def clear(self, belief_id: str, *, grant: Grant, reason: str) -> Belief:
        """Clear a suspicious or quarantined belief back to clean and restricted (user grant,
        single-use)."""
        return self.transition(
            belief_id,
            [
                Move(Axis.SECURITY, SecurityStatus.CLEAN),
                Move(Axis.RETRIEVAL, RetrievalStatus.RESTRICTED),
            ],
            reason=reason,
            grant=grant,
            kind="belief.cleared",
        )

    @checked_call
    def mark_malicious(self, belief_id: str, *, grant: Grant, reason: str) -> Belief:
        return self.transition(
            belief_id,
            [Move(Axis.SECURITY, SecurityStatus.MALICIOUS)],
            reason=reason,
            grant=grant,
            kind="belief.marked_malicious",
        )

    @checked_call
    def mark_contradicted(self, belief_id: str, *, by: str, reason: str, grant: Grant) -> Belief:
        """Record that ``by`` contradicts ``belief_id`` and route the latter to contradictions."""
        other = self.require_belief(by)
        target = self.require_belief(belief_id)
        _, checked = self._authority(grant, f"mark {belief_id} contradicted", target)
        check_scope(checked, f"mark {belief_id} contradicted by {by}", project=None, belief=other)
        now = self.clock()
        record = contradiction_record([target, other], reason=reason, now=now)
        updated = self.transition(
            belief_id,
            [Move(Axis.TRUTH, TruthStatus.CONTRADICTED)],
            reason=reason,
            grant=checked,
            kind="belief.contradicted",
        )
        self._record_contradiction(record, actor=checked.subject, project=updated.project)
        return updated

    def _record_contradiction(self, record: Contradiction, *, actor: str, project: str) -> None:
        self.commit(
            self.draft(
                "contradiction.detected",
                actor=actor,
                now=record.detected_at,
                project=project,
                data={"belief_ids": record.belief_ids, "reason": record.reason},
                records=Records(contradictions=(record,)),
            )
        )

    @checked_call
    def supersede(
        self, old_id: str, new_id: str, *, reason: str, grant: Grant
    ) -> tuple[Belief, Belief]:
        """Replace ``old_id`` by ``new_id``; the old belief stays, for audit, as superseded.
        The grant must cover both beliefs."""
        if old_id == new_id:
            raise InputError("a belief cannot supersede itself")
        old, new = self.require_belief(old_id), self.require_belief(new_id)
        acting, checked = self._authority(grant, f"supersede {old_id}", old)
        check_scope(checked, f"supersede {old_id} by {new_id}", project=None, belief=new)
        now = self.clock()
        moved, revisions = apply_moves(
            old,
            [Move(Axis.TRUTH, TruthStatus.SUPERSEDED)],
            authority=acting,
            reason=reason,
            now=now,
            grant_id=checked.id,
            related_ids=[new_id],
        )
        moved = moved.model_copy(update={"superseded_by": new_id})
        successor = new.model_copy(
            update={"supersedes": old_id, "updated_at": now, "version": new.version + 1}
        )
        self.commit(
            self.draft(
                "belief.superseded",
                actor=checked.subject,
                now=now,
                project=old.project,
                data={"old": old_id, "new": new_id, "reason": reason, "grant_id": checked.id},
                records=Records(beliefs=(moved, successor), revisions=tuple(revisions)),
            )
        )
        return moved, successor

    # -- the privileged read path -----------------------------------------------------------

    @checked_call
    def audit(
        self,
        query: str | None = None,
        *,
        grant: Grant,
        project: str | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        """Everything, quarantined and blocked included, with history. Needs an auditor grant
        for ``project`` (default: the grant's own project; every project only with a grant for
        every project), and each call is itself logged as a privileged read."""
        if project is None and type(grant) is Grant:
            project = revalidated(grant).project
        checked = self.verifier.verify(
            grant,
            {GrantAuthority.AUDITOR},
            now=self.clock(),
            operation="the audit path",
            project=project,
        )
        beliefs = self.store.find_beliefs(
            BeliefFilter(text=query or None, project=project, limit=limit)
        )
        entries = [AuditEntry(b, tuple(self.store.revisions_for(b.id))) for b in beliefs]
        self.commit(
            self.draft(
                "audit.privileged_read",
                actor=checked.subject,
                now=self.clock(),
                project=project,
                data={
                    "grant_id": checked.id,
                    "query": query,
                    "returned": [b.id for b in beliefs],
                },
            )
        )
        return entries

    # -- bulk import ------------------------------------------------------------------------

    @checked_streaming("items")  # _chunks checks each item as it is consumed
    def import_records(
        self,
        items: Iterable[ImportItem],
        *,
        store_name: str,
        project: str,
        actor: str = "importer",
        batch_size: int = 1000,
        bind: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Bring in records an existing store holds: one chained event per batch.

        Whatever a record says about itself ("verified by the user"), it lands unverified and
        restricted with an ``imported`` origin: the import path cannot mint authority.

        Each batch of ``batch_size`` records is one event in the compact import form
        (:mod:`firewall.log.batch`, event schema 2): the gate's adoption once, as a template, and
        one
        compact row per record, committed with its projections in one transaction.

        With ``bind=True`` each ``source_id`` is the id ``store_name`` gave the item: the event
        also writes a :class:`~firewall.model.chain.StoreBinding` (``written``, hash of the text),
        and
        an item whose store id is already bound is skipped, so importing twice imports once (a
        bound item whose text changed is for sync to flag as drifted, never re-imported).
        ``progress`` is called with the number of items handled after each batch. Returns how
        many records were imported.
        """
        ctx = Context(project=project, actor=actor, user=None, session_id=None)
        adopter = Adopter(
            ctx,
            kind=ClaimKind.CONTENT,
            origin=Origin.imported(store_name),
            quality=EvidenceQuality.EXTERNAL_DOCUMENT,
            extraction=ExtractionMethod.IMPORT,
        )
        versions = self.versions()
        count = 0
        for chunk in _chunks(items, max(1, batch_size)):
            handled = len(chunk)
            if bind:
                chunk = self._unbound(store_name, chunk)
            if chunk:
                with cyclic_gc_paused():  # a batch's short-lived containers hold no cycles
                    draft = self._import_batch(
                        chunk, adopter, store_name, project, actor, versions, bind
                    )
                    self.commit(draft)
                count += len(chunk)
            if progress is not None:
                progress(handled)
        return count

    def _unbound(self, store_name: str, chunk: list[ImportItem]) -> list[ImportItem]:
        """The items of ``chunk`` whose store id has no binding yet (first of duplicates)."""
        bound = self.store.bound_store_ids(store_name, [i.source_id for i in chunk])
        fresh: dict[str, ImportItem] = {}
        for item in chunk:
            if item.source_id not in bound:
                fresh.setdefault(item.source_id, item)
        return list(fresh.values())

    def _import_batch(
        self,
        chunk: list[ImportItem],
        adopter: Adopter,
        store_name: str,
        project: str,
        actor: str,
        versions: dict[str, Any],
        bind: bool,
    ) -> EventDraft:
        now = self.clock()
        batch = ImportBatch.start(adopter, store=store_name, now=now, bind=bind)
        limit = self.max_block_bytes
        for item in chunk:
            batch.add(
                statement_text(item.text, limit),
                source=f"{store_name}:{item.source_id}",
                sensitivity=item.sensitivity,
                observed_at=item.created_at,
                store_id=item.source_id if bind else None,
                digest=(item.content_hash or content_hash(item.text)) if bind else None,
            )
        return EventDraft(
            kind="beliefs.imported",
            actor=actor,
            at=now,
            project=project,
            versions=versions,
            data={"store": store_name, "count": len(batch)},
            batch=batch,
        )

    # -- erasure ----------------------------------------------------------------------------

    def forget(
        self,
        target: ErasureTarget,
        *,
        grant: Grant,
        derived: DerivedMode | str = DerivedMode.LIST,
    ) -> ErasureResult:
        """Erase what ``target`` selects from the store and the log, on an ``eraser`` grant
        (:mod:`firewall.audit.erasure`): its text is replaced by "erased on DATE by GRANT" in
        every event body, document, history row and index; the chain and the seals still
        verify. A grant for one project erases in that project only. Beliefs derived from the
        erased origin are erased too (``derived="erase"``) or listed (``"list"``)."""
        try:
            mode = DerivedMode(derived)
        except ValueError as exc:
            raise InputError(
                f"unknown derived mode {derived!r}", hint="use 'erase' or 'list'"
            ) from exc
        if not isinstance(target, ErasureTarget):
            raise InputError(
                "forget() takes an ErasureTarget",
                hint="ErasureTarget(TargetKind.ORIGIN, 'user:alice')",
            )
        scope = revalidated(grant).project if type(grant) is Grant else None
        project = target.value if target.kind is TargetKind.PROJECT else scope
        checked = self.verifier.verify(
            grant,
            {GrantAuthority.ERASER},
            now=self.clock(),
            operation="forgetting",
            project=project,
        )
        return erase(
            self.store,
            target,
            grant_id=checked.id,
            actor=f"operator:{checked.subject}",
            now=self.clock(),
            derived=mode,
            project=checked.project,
            versions=self.versions(),
        )

    # -- log ------------------------------------------------------------------------------

    def verify_log(self) -> VerifyReport:
        return self.store.verify()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Firewall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Per axis, the states ranked by how much trust or visibility they give (higher: more).
_RANK: dict[Axis, dict[str, int]] = {
    Axis.TRUTH: {TruthStatus.SUPPORTED: 1},
    Axis.FRESHNESS: {FreshnessStatus.FRESH: 1},
    Axis.RETRIEVAL: {
        RetrievalStatus.BLOCKED: -1,
        RetrievalStatus.PRIVILEGED_ONLY: -1,
        RetrievalStatus.HIDDEN: -1,
        RetrievalStatus.NORMAL: 1,
    },
    Axis.SECURITY: {
        SecurityStatus.MALICIOUS: -2,
        SecurityStatus.QUARANTINED: -2,
        SecurityStatus.SUSPICIOUS: -1,
    },
}


def promoting(belief: Belief, moves: Sequence[Move]) -> bool:
    """Does any move make ``belief`` more trusted or more visible (to supported, to normal, out
    of hidden, quarantine or suspicion)? A grant used for that is spent."""
    for move in moves:
        rank = _RANK.get(move.axis, {})
        if rank.get(str(move.to_state), 0) > rank.get(str(belief.status(move.axis)), 0):
            return True
    return False


def _chunks(items: Iterable[ImportItem], size: int) -> Iterator[list[ImportItem]]:
    chunk: list[ImportItem] = []
    if isinstance(items, str | bytes):
        raise InputError("items must be a collection of ImportItem, not text")
    for item in items:
        if type(item) is not ImportItem:
            raise InputError(
                f"import_records() takes ImportItem records, got {type(item).__name__}",
                hint="wrap each record: ImportItem(text=..., source_id=...)",
            )
        if not _plain_item(item):
            check_value("import_records()", "items", item)
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _plain_item(item: ImportItem) -> bool:
    """True when ``check_value`` has nothing to refuse in ``item`` and every field has its
    declared type (the common case, checked without walking the dataclass generically)."""
    text, source_id, digest, created = item.text, item.source_id, item.content_hash, item.created_at
    if (
        type(text) is not str
        or type(source_id) is not str
        or type(item.sensitivity) is not Sensitivity
    ):
        return False
    if digest is not None and (type(digest) is not str or lone_surrogate(digest) is not None):
        return False
    if created is not None and (type(created) is not datetime or created.utcoffset() is None):
        return False
    return lone_surrogate(text) is None and lone_surrogate(source_id) is None


@checked_call
def open(
    url: str | None = None,
    *,
    trusted_keys: Iterable[Ed25519PublicKey] | None = None,
    signer: GrantSigner | None = None,
    clock: Clock = utcnow,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
    checkpoint_signer: CheckpointSigner | None = None,
    checkpoint_every: int | None = None,
    envelope_args: Iterable[str] = (),
    **store_options: Any,
) -> Firewall:
    """Open a firewall over ``url`` (``memory://``, ``sqlite:///path``, ``postgresql://…``).

    With no URL, ``$GNOMON_URL`` or the embedded default, ``gnomon.db`` in the user's data
    directory (:func:`firewall.store.paths.data_dir`).
    With ``checkpoint_signer`` and ``checkpoint_every=N``, a signed ``log.checkpoint`` event is
    appended each time the log crosses a multiple of N events.
    ``envelope_args`` names the tool arguments whose short, identifier-like values the trusted
    envelope statement may show (e.g. ``{"path", "url"}``); by default every argument appears
    only as a digest (see :func:`firewall.model.content.render_args`).
    """
    store = open_store(url or default_url(), **store_options)
    return Firewall(
        store,
        trusted_keys=trusted_keys,
        signer=signer,
        clock=clock,
        max_block_bytes=max_block_bytes,
        checkpoint_signer=checkpoint_signer,
        checkpoint_every=checkpoint_every,
        envelope_args=envelope_args,
    )


_SECURITY_STATES = frozenset(s.value for s in SecurityStatus)
_RETRIEVAL_STATES = frozenset(r.value for r in RetrievalStatus)


def _known_states(security: object, retrieval: object) -> bool:
    return security in _SECURITY_STATES and retrieval in _RETRIEVAL_STATES


__all__ = ["AuditEntry", "Firewall", "ImportItem", "open"]
