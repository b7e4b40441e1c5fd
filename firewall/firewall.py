"""The host-side object: opens a store, mints grants, runs privileged operations.

A :class:`Firewall` is held by the host application. Agents get :class:`~firewall.session.Session`
objects (``wall.session(...)``), which can observe, remember, recall and decide but can never
mint authority: promotion, quarantine clearance and the audit path all need a
:class:`~firewall.grants.Grant` that this object (or an operator's key) signed.

>>> import firewall
>>> wall = firewall.open("memory://")
>>> with wall.session(project="shop", actor="coder", user="alice") as s:
...     said = firewall.Origin.user("alice")
...     fact = s.observe(tool="chat", content="We deploy on Fridays", origin=said)
...     s.recall("deploy").accepted[0].statement
'We deploy on Fridays'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from firewall import __about__
from firewall.adoption import Adopter, Context
from firewall.arguments import check_value, checked_call
from firewall.chain import (
    Belief,
    BindingState,
    Contradiction,
    Decision,
    Revision,
    StoreBinding,
    content_hash,
)
from firewall.checkpoints import Checkpoint, CheckpointSigner, write_checkpoint
from firewall.clock import Clock, utcnow
from firewall.content import DEFAULT_MAX_BLOCK_BYTES, checked_arg_names, statement_text
from firewall.contradictions import contradiction_record, flag_decisions
from firewall.errors import InputError, MissingGrantError, UnknownIdError
from firewall.events import SCHEMA_VERSION, Event, EventDraft, Records, VerifyReport
from firewall.gate import GATE_VERSION, Move, apply_moves
from firewall.grants import DEFAULT_TTL, Grant, GrantAuthority, GrantSigner, GrantVerifier
from firewall.origin import Origin
from firewall.states import (
    Authority,
    Axis,
    ClaimKind,
    EvidenceQuality,
    ExtractionMethod,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)
from firewall.store.base import BeliefFilter, Store
from firewall.store.registry import default_url, open_store

if TYPE_CHECKING:
    from firewall.session import Session

GRANT_TO_AUTHORITY = {GrantAuthority.USER: Authority.USER, GrantAuthority.PROBE: Authority.PROBE}


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One record brought in from an existing store: always lands unverified and restricted."""

    text: str
    source_id: str
    created_at: datetime | None = None
    sensitivity: Sensitivity = Sensitivity.INTERNAL


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
        # Argument names whose short values envelope statements may show (firewall.content).
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
        if pinned:
            self._signer = signer
            self.verifier = GrantVerifier.pinning(*pinned)
        else:
            # No operator keys: an ephemeral key that lives only in this host-side object.
            self._signer = signer or GrantSigner.generate()
            self.verifier = GrantVerifier.pinning(self._signer.public_key)

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
        )

    def commit(self, *drafts: EventDraft) -> list[Event]:
        events = self.store.commit(drafts)
        every = self.checkpoint_every
        # periodic checkpoints: one integer comparison per commit unless a multiple was crossed
        if every and events and events[-1].seq // every != (events[0].seq - 1) // every:
            self.checkpoint()
        return events

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
        from firewall.session import Session

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

    # -- grants ---------------------------------------------------------------------------

    @checked_call
    def grant(
        self, authority: GrantAuthority | str, subject: str, *, ttl: timedelta = DEFAULT_TTL
    ) -> Grant:
        """Mint a grant (host-side only). With pinned operator keys, pass ``signer=`` at open."""
        if self._signer is None:
            raise MissingGrantError(
                "this firewall pins operator keys and holds no signing key",
                hint="issue grants with GrantSigner.from_file(<operator.key>).issue(...)",
            )
        if authority not in {a.value for a in GrantAuthority}:
            known = ", ".join(a.value for a in GrantAuthority)
            raise InputError(f"unknown grant authority {authority!r}", hint=f"use one of: {known}")
        return self._signer.issue(authority, subject, ttl=ttl, now=self.clock())

    def _authority(self, grant: Grant | None, operation: str) -> Authority:
        checked = self.verifier.verify(
            grant,
            {GrantAuthority.USER, GrantAuthority.PROBE},
            now=self.clock(),
            operation=operation,
        )
        return GRANT_TO_AUTHORITY[checked.authority]

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
    ) -> Belief:
        """Apply gate moves to one belief. ``user``/``probe`` authority only via a grant;
        host automation may act as ``sentinel``, ``policy`` or ``system``."""
        if not reason or not isinstance(reason, str):
            raise InputError("a transition needs a reason", hint="pass reason='...'")
        if grant is not None:
            acting = self._authority(grant, f"{kind} on {belief_id}")
        elif authority is None or authority in GRANT_TO_AUTHORITY.values():
            acting = self._authority(None, f"{kind} on {belief_id}")
        else:
            acting = authority
        belief = self.require_belief(belief_id)
        now = self.clock()
        updated, revisions = apply_moves(
            belief,
            moves,
            authority=acting,
            reason=reason,
            now=now,
            grant_id=grant.id if grant else None,
            evidence=self.store.get_evidence(belief.claim_id),
        )
        if not revisions:
            return updated  # already in the requested states: nothing to record
        extra_records: list[Decision] = []
        if updated.truth_status == TruthStatus.CONTRADICTED != belief.truth_status:
            extra_records = flag_decisions(
                self.store.decisions_depending_on(belief_id), belief_id, why="contradicted"
            )
        self.commit(
            self.draft(
                kind,
                actor=grant.subject if grant else acting.value,
                now=now,
                project=belief.project,
                data={
                    "belief_id": belief_id,
                    "authority": acting.value,
                    "grant_id": grant.id if grant else None,
                    "reason": reason,
                },
                records=Records(
                    beliefs=(updated,),
                    revisions=tuple(revisions),
                    decisions=tuple(extra_records),
                ),
            )
        )
        return updated

    @checked_call
    def promote(self, belief_id: str, *, grant: Grant, reason: str) -> Belief:
        """Make a belief supported and normally retrievable, on a user or probe grant."""
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
        """Clear a suspicious or quarantined belief back to clean and restricted (user grant)."""
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
        now = self.clock()
        record = contradiction_record(
            [self.require_belief(belief_id), other], reason=reason, now=now
        )
        updated = self.transition(
            belief_id,
            [Move(Axis.TRUTH, TruthStatus.CONTRADICTED)],
            reason=reason,
            grant=grant,
            kind="belief.contradicted",
        )
        self._record_contradiction(record, actor=grant.subject, project=updated.project)
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
        """Replace ``old_id`` by ``new_id``; the old belief stays, for audit, as superseded."""
        acting = self._authority(grant, f"supersede {old_id}")
        if old_id == new_id:
            raise InputError("a belief cannot supersede itself")
        old, new = self.require_belief(old_id), self.require_belief(new_id)
        now = self.clock()
        moved, revisions = apply_moves(
            old,
            [Move(Axis.TRUTH, TruthStatus.SUPERSEDED)],
            authority=acting,
            reason=reason,
            now=now,
            grant_id=grant.id,
            related_ids=[new_id],
        )
        moved = moved.model_copy(update={"superseded_by": new_id})
        successor = new.model_copy(
            update={"supersedes": old_id, "updated_at": now, "version": new.version + 1}
        )
        self.commit(
            self.draft(
                "belief.superseded",
                actor=grant.subject,
                now=now,
                project=old.project,
                data={"old": old_id, "new": new_id, "reason": reason, "grant_id": grant.id},
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
        """Everything, quarantined and blocked included, with history. Needs an auditor grant,
        and each call is itself logged as a privileged read."""
        checked = self.verifier.verify(
            grant, {GrantAuthority.AUDITOR}, now=self.clock(), operation="the audit path"
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

    @checked_call
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
        """Bring in records an existing store holds: one chained event per record, batched.

        Whatever a record says about itself ("verified by the user"), it lands unverified and
        restricted with an ``imported`` origin: the import path cannot mint authority.

        With ``bind=True`` each ``source_id`` is the id ``store_name`` gave the item: the event
        also writes a :class:`~firewall.chain.StoreBinding` (``written``, hash of the text), and
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
                self.commit(
                    *(
                        self._import_draft(
                            item, adopter, store_name, project, actor, versions, bind
                        )
                        for item in chunk
                    )
                )
                count += len(chunk)
            if progress is not None:
                progress(handled)
        return count

    def _unbound(self, store_name: str, chunk: list[ImportItem]) -> list[ImportItem]:
        """The items of ``chunk`` whose store id has no binding yet (first of duplicates)."""
        bound = self.store.bindings_by_store_id(store_name, [i.source_id for i in chunk])
        fresh: dict[str, ImportItem] = {}
        for item in chunk:
            if item.source_id not in bound:
                fresh.setdefault(item.source_id, item)
        return list(fresh.values())

    def _import_draft(
        self,
        item: ImportItem,
        adopter: Adopter,
        store_name: str,
        project: str,
        actor: str,
        versions: dict[str, Any],
        bind: bool,
    ) -> EventDraft:
        text = statement_text(item.text, self.max_block_bytes)
        now = self.clock()
        made = adopter.adopt(
            text,
            source=f"{store_name}:{item.source_id}",
            now=now,
            sensitivity=item.sensitivity,
            observed_at=item.created_at,
        )
        bindings: tuple[StoreBinding, ...] = ()
        if bind:
            bindings = (
                StoreBinding(
                    id=StoreBinding.key(store_name, made.belief.id),
                    store=store_name,
                    store_id=item.source_id,
                    belief_id=made.belief.id,
                    content_hash=content_hash(item.text),
                    state=BindingState.WRITTEN,
                    detail="imported",
                    updated_at=now,
                ),
            )
        return EventDraft(
            kind="belief.imported",
            actor=actor,
            at=now,
            project=project,
            versions=versions,
            data={"store": store_name, "source_id": item.source_id},
            records=Records(
                claims=(made.claim,),
                evidence=(made.evidence,),
                beliefs=(made.belief,),
                bindings=bindings,
            ),
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
        check_value("import_records()", "items", item)
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


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

    With no URL, ``$GNOMON_URL`` or the embedded default ``sqlite:///./.gnomon/gnomon.db``.
    With ``checkpoint_signer`` and ``checkpoint_every=N``, a signed ``log.checkpoint`` event is
    appended each time the log crosses a multiple of N events.
    ``envelope_args`` names the tool arguments whose short, identifier-like values the trusted
    envelope statement may show (e.g. ``{"path", "url"}``); by default every argument appears
    only as a digest (see :func:`firewall.content.render_args`).
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


__all__ = ["AuditEntry", "Firewall", "ImportItem", "open"]
