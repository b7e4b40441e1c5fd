"""The storage contract every backend implements.

A store holds two things that must never disagree: the append-only, hash-chained event log and
the projections (sessions, observations, claims, evidence, beliefs, decisions, …) derived from it.
:meth:`Store.commit` writes both in one transaction; there is no other write path.

Policy filters arrive as a :class:`~firewall.model.filters.BeliefFilter` and must be answered by an
indexed query, so the
cost of a recall grows with the number of results and not with the number of stored beliefs.
Backends convert their driver errors into :mod:`firewall.model.errors` types at their own edge.

One contract test suite (``tests/store_contract.py``) runs against every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from typing import Any, NamedTuple

from gnomon.firewall.log.events import (
    Event,
    EventDraft,
    VerifyReport,
    digest_link,
    erased_marker,
    link_holds,
    verify_chain,
    vouch_problem,
    vouched,
)
from gnomon.firewall.log.seal import Auditor, SealReport, check_seals
from gnomon.firewall.model.chain import (
    Action,
    Belief,
    Claim,
    Contradiction,
    Decision,
    EvidenceSet,
    Observation,
    Revision,
    SessionInfo,
    StoreBinding,
)
from gnomon.firewall.model.errors import (
    GnomonError,
    InputError,
    LogIntegrityError,
    StoreError,
    TamperedLogError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    FreshnessStatus,
)
from gnomon.firewall.store.keys import micros
from gnomon.firewall.store.sealing import StoreSeal, tamper_draft

#: The kind of the event an execution claim commits (the action kernel writes it).
EXECUTION_CLAIM_KIND = "action.executing"

#: The payload field naming the claim an event was committed with when it is not an execution
#: (:func:`claim_of`): a single-use grant's spend is the claim :func:`grant_claim`.
CLAIM_FIELD = "claim"


def grant_claim(grant_id: str) -> str:
    """The claim that spends the single-use grant ``grant_id`` (:meth:`Store.claim_execution`)."""
    return f"grant:{grant_id}"


def claim_of(event: Event) -> str | None:
    """The claim ``event`` was committed with, or ``None``: the request id of an execution
    (:data:`EXECUTION_CLAIM_KIND`), or the :data:`CLAIM_FIELD` of its payload."""
    if event.kind == EXECUTION_CLAIM_KIND:
        request_id = event.payload.get("request_id")
        return request_id if isinstance(request_id, str) and request_id else None
    claim = event.payload.get(CLAIM_FIELD)
    return claim if isinstance(claim, str) else None


def claims_in(events: Sequence[Event]) -> list[tuple[str, int]]:
    """``(claim, seq)`` for every event of ``events`` committed with a claim (:func:`claim_of`):
    what a store appending sealed events, or rebuilding, derives into its claims table, so a
    store replayed from a log holds the claims its first store granted."""
    return [(claim, e.seq) for e in events if (claim := claim_of(e)) is not None]


#: Kinds of the events that belong to one action request (the kernel's ledger, each naming it as
#: ``payload.request_id``): what :meth:`Store.request_events` indexes.
REQUEST_KIND_PREFIXES = ("action.", "approval.")


def is_request_kind(kind: str) -> bool:
    """Whether events of ``kind`` are indexed by request id (:data:`REQUEST_KIND_PREFIXES`)."""
    return kind.startswith(REQUEST_KIND_PREFIXES)


class DecayRow(NamedTuple):
    """A belief due for freshness decay, as :meth:`Store.decay_rows` returns it."""

    belief_id: str
    version: int
    #: Its current freshness state.
    freshness: str
    #: True if its ``expires_at`` has passed (else it is due by age).
    expired: bool


def claim_drafts(drafts: Sequence[EventDraft]) -> Sequence[EventDraft]:
    """``drafts`` for :meth:`Store.claim_execution`, which needs at least one (an empty claim
    would be indistinguishable from a lost race)."""
    if not drafts:
        raise InputError(
            "claim_execution() needs at least one event draft",
            hint="pass the action.executing draft (and any event to commit with it)",
        )
    return drafts


class OriginRow(NamedTuple):
    """A belief whose origin label includes a flagged origin, as
    :meth:`Store.origin_rows` returns it: what the fan-out needs to decide its quarantine."""

    belief_id: str
    version: int
    security: str
    retrieval: str


class Store(ABC):
    """Abstract store: one transactional commit, log reads, and indexed projection reads.

    **Sealing** (:mod:`firewall.store.sealing`). Every event a store commits carries the host's
    seal. A store opened without its key refuses every write with
    :class:`~firewall.model.errors.UnsealedStoreError`. A store with its key verifies the events
    it reads from storage someone else could have written (:meth:`events`,
    :meth:`session_events`, :meth:`request_events`: what the kernel, the holds, the sentinels,
    calibration, replay and rebuild read): an event whose link or seal does not verify raises
    :class:`~firewall.model.errors.TamperedLogError`, recorded once as a ``log.tamper_detected``
    event, and is never returned.
    """

    #: Human-readable location used in error messages ("sqlite:///path", "memory://").
    url: str
    #: The store's sealing key, watermark and tamper record (set by every backend at open).
    _seal: StoreSeal

    @property
    def sealed(self) -> bool:
        """Whether this store holds its sealing key (else it is read-only for authority)."""
        return self._seal.sealed

    @property
    def seal_key_path(self) -> str | None:
        """The key file this store's seals are made with (``None``: in-process key)."""
        path = self._seal.key_path
        return None if path is None else str(path)

    def _verified(self, events: Iterable[Event], *, contiguous: bool = False) -> Iterator[Event]:
        """``events`` read from storage, each checked (:meth:`StoreSeal.problem`; with
        ``contiguous``, a run of the log, also each link to the one before); the first bad one
        is recorded and raised, and nothing after it is returned."""
        seal = self._seal
        if not seal.sealed:
            yield from events
            return
        problem_of = seal.problem
        last: Event | None = None
        for event in events:
            problem = problem_of(event)
            if problem is not None and (marker := erased_marker(event.body)) is not None:
                problem = self._erased_problem(event, marker)
            if problem is None and contiguous and last is not None:
                if event.seq != last.seq + 1:
                    problem = f"events {last.seq + 1} to {event.seq - 1} are missing (deleted)"
                elif event.prev_hash != last.hash:
                    problem = "its prev_hash is not the previous event's hash (re-chained)"
            if problem is not None:
                raise self._tampered(event.seq, problem)
            last = event
            yield event

    def _erased_problem(self, event: Event, marker: Any) -> str | None:
        """What is wrong with an erased event as read (:mod:`firewall.log.erasure`): its link
        must hold through the digest its marker keeps, its seal must verify, and the later
        erasure event its marker names (read, and so verified, the same way) must list it with
        its body's digest. Anyone can write a marker; only a sealed erasure event vouches."""
        if digest_link(event.seq, event.prev_hash, marker["body_digest"]) != event.hash:
            return "its hash does not match its body (edited)"
        sealer = self._seal.sealer
        if sealer is not None:
            problem = sealer.check(event.seq, event.hash, event.tag)
            if problem is not None:
                return problem
        by = marker["by"]
        if by <= event.seq:
            return f"its erasure marker names event {by}, not a later one (forged)"
        # one verified read and one listing per erasure event (a read of many erased events
        # names the same one): what was verified once stays the authentic listing
        cache: dict[int, tuple[Event, dict[int, str]]] = self.__dict__.setdefault("_vouched", {})
        held = cache.get(by)
        if held is None:
            found = list(self.events(after=by - 1, limit=1))
            if not found or found[0].seq != by:
                return f"its erasure marker names event {by}, which the log does not hold"
            if len(cache) > 64:
                cache.clear()
            held = cache[by] = (found[0], vouched(found[0]))
        erasure, listing = held
        return vouch_problem(erasure, event.seq, event.body, listing)

    def erase_bodies(
        self, rewrites: Mapping[int, bytes], draft: EventDraft, head: int
    ) -> list[Event] | None:
        """Replace the bodies of the events ``rewrites`` names by their erased bodies, rebuild
        every projection from the log (documents, history, text indexes), and commit ``draft``
        (the erasure event that vouches for them), in one transaction, provided the chain head
        is still ``head`` (else ``None``, nothing done: plan again). Only
        :mod:`firewall.audit.erasure` calls this; it checks each rewrite keeps its link."""
        raise StoreError(
            f"{self.url} cannot erase event bodies in place",
            hint="use a memory://, sqlite:/// or postgresql:// store",
        )

    def _verify_since(self, request_id: str) -> None:
        """Before an execution claim: every event from the request's first one to the head
        verified, link by link and seal by seal (the head's seal authenticates the whole chain
        behind it). A claim event deleted and its successors renamed, or a filler put in its
        place, is found here, so an approved action never runs twice."""
        mine = self.request_events(request_id)
        if mine:
            for _ in self.events(after=mine[0].seq - 1):
                pass

    def _tampered(self, seq: int, problem: str) -> TamperedLogError:
        """Record a tamper problem once (host-private file, and a ``log.tamper_detected``
        event when the log can still be extended) and return its error to raise."""
        if self._seal.record(seq, problem) and self._seal.sealed:
            with suppress(GnomonError):
                self.commit([tamper_draft(seq, problem)])
        return TamperedLogError(seq, problem)

    def _row_tampered(self, table: str, ident: str, problem: str) -> TamperedLogError:
        """The error for the projection row ``table/ident`` that fails its seal (not recorded:
        :meth:`_recorded`)."""
        return TamperedLogError(
            0,
            problem,
            row=f"{table}/{ident}",
            hint="something other than the host wrote the store's files; nothing was obeyed. "
            "`gnomon rebuild --apply` re-derives every row from the verified log",
        )

    def _recorded(self, error: TamperedLogError) -> TamperedLogError:
        """``error`` recorded once (:meth:`_tampered`; a row's at seq 0), returned to raise."""
        if error.row is None:
            self._tampered(error.seq, error.problem)
        else:
            self._tampered(0, f"row {error.row}: {error.problem}")
        return error

    def adopt_unsealed(self, *, checkpoint_keys: Sequence[Any] = ()) -> int:
        """Seal the events a store holds without a seal (written before sealing existed), once,
        by an operator: the whole chain is verified first (and with ``checkpoint_keys``, pinned
        Ed25519 public keys, a signed checkpoint must cover it, :func:`verify_log`), an event
        whose seal is present but bad is refused (that is tampering, not age), and a store
        without its key gets one. Returns how many events were sealed.

        Adopting says "this log, as it stands, is mine": run it only on a log you trust, e.g.
        after checking its checkpoints. An event of an epoch the key already ratcheted past
        cannot be adopted (:class:`~firewall.model.errors.TamperedLogError`). The projections
        are then rebuilt from the adopted log, so every row carries this key's seal."""
        from gnomon.firewall.log.checkpoints import verify_log

        report = (
            verify_log(self.chain_rows(), keys=list(checkpoint_keys))
            if checkpoint_keys
            else verify_chain(self.chain_rows())
        )
        report.raise_for_problem()
        if not self._seal.sealed:
            seal = self._seal
            self._seal = StoreSeal.open(seal.identity, seal.where, empty=True, key=seal.key_path)
        sealer = self._seal.require("adopting unsealed events")
        tags: list[tuple[int, bytes]] = []
        for seq, digest, tag in self.seal_rows():
            if tag is None:
                tags.append((seq, sealer.tag(seq, digest)))
                continue
            problem = sealer.check(seq, digest, tag)
            if problem is not None:
                raise self._tampered(seq, problem)
        if tags:
            self._set_seals(tags)
        if report.head_seq and self._seal.watermark is not None:
            self._seal.watermark.advance(report.head_seq, report.head_hash)
        # every projection row re-derived from the adopted log, sealed with this key
        self.rebuild_projections()
        return len(tags)

    def _reseal_rows(self) -> None:
        """Seal the projection rows stored without a seal (a backend that seals rows
        re-derives them from the verified log); nothing for one that keeps no rows on disk."""
        return

    def _set_seals(self, tags: Sequence[tuple[int, bytes]]) -> None:
        """Store ``(seq, seal)`` for events stored without one (:meth:`adopt_unsealed`)."""
        raise StoreError(
            f"{self.url} cannot seal events in place",
            hint="export the log (`gnomon log export`) and import it into a new store, which "
            "reseals every event it takes",
        )

    def seal_report(self, auditor: Auditor | None = None) -> SealReport | None:
        """Every event's seal checked, naming the unsealed and forged ones: with ``auditor``
        (the forward-secure epoch tags, from the auditor's verification file), else with this
        host's key plus the sealed head watermark; ``None`` without either."""
        if auditor is not None:
            return check_seals(self.seal_rows(), auditor)
        sealer = self._seal.sealer
        if sealer is None:
            return None
        report = check_seals(self.seal_rows(), sealer)
        watermark = self._seal.watermark
        if watermark is not None:
            head_seq, head_hash = self.head()
            problem = watermark.problem(head_seq, head_hash)
            if problem is not None:
                bad = (*report.bad, (head_seq, problem))
                report = SealReport(report.events, bad, report.bad_count + 1)
        return report

    def sealed_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str, bytes | None]]:
        """``(seq, body, prev_hash, hash, seal)`` in order, unverified: one walk for
        :meth:`verify` (a backend may read them in one pass)."""
        for (seq, body, prev, digest), (_, _, tag) in zip(
            self.chain_rows(after), self.seal_rows(after), strict=True
        ):
            yield seq, body, prev, digest, tag

    def seal_rows(self, after: int = 0) -> Iterator[tuple[int, str, bytes | None]]:
        """``(seq, hash, seal)`` in order, unverified: what :meth:`verify` checks the seals of.
        Backends whose :meth:`events` verify override it with a raw read."""
        return ((e.seq, e.hash, e.tag) for e in self.events(after))

    # -- the only write path --------------------------------------------------------------

    @abstractmethod
    def commit(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Seal the drafts onto the chain and apply their records, all in one transaction.

        Either every event and every projection row is written, or none is. Concurrent
        committers (threads or processes) must produce one gap-free chain.
        """

    @abstractmethod
    def append_sealed(self, events: Sequence[Event]) -> None:
        """Append events that were sealed elsewhere (an NDJSON import, a rebuild) and apply
        their records, in one transaction. Nothing is re-sealed: inside the transaction the
        store checks that the events continue its own head, seq by seq, and that each hash
        recomputes from its body (:func:`check_continues`); otherwise it raises
        :class:`~firewall.model.errors.LogIntegrityError` naming the seq and writes nothing.
        """

    @abstractmethod
    def rebuild_projections(self) -> int:
        """Replace every projection row by replaying the whole log's records, in one
        transaction; returns the number of events replayed."""

    @abstractmethod
    def projection_docs(self) -> Iterator[tuple[str, str, bytes]]:
        """``(table, id, JSON document)`` for every projection row (tables named as in
        :data:`firewall.log.events.RECORD_TYPES`), in no particular order: what ``gnomon rebuild``
        compares against a replay of the log."""

    def derived_rows(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(table, id, {column: value})`` for every stored value a query reads that is *not*
        a record document: indexed columns, link tables, the text index, the belief history,
        corpus statistics. ``gnomon rebuild`` compares them with a :meth:`scratch` replay of
        the log, so an edit to any of them alone is reported by table and id. Values are only
        compared with the same backend's, so each backend names them as it stores them. The
        memory backend derives nothing that is stored apart from its documents."""
        return iter(())

    def scratch(self) -> Store:
        """An empty store of the same backend, for a rebuild to replay the log into: it derives
        every table exactly as this one does. Release it with :meth:`discard`."""
        from gnomon.firewall.store.memory import MemoryStore

        return MemoryStore()

    def discard(self) -> None:
        """Close a :meth:`scratch` store and remove everything it wrote."""
        self.close()

    @abstractmethod
    def commit_if_head(self, drafts: Sequence[EventDraft], head: int) -> list[Event] | None:
        """Commit ``drafts`` only if the chain's last seq is still ``head``; else ``None``.

        The check and the commit are one transaction (under the same lock every writer takes),
        so nothing can be committed between them: a caller that decided on the state the log
        had at ``head`` (read after it) commits on exactly that state or not at all, and reads
        again. This is how a review approval is pinned to what was checked
        (:func:`firewall.host.review.approve`)."""

    @abstractmethod
    def claim_execution(self, request_id: str, drafts: Sequence[EventDraft]) -> list[Event] | None:
        """Claim the one execution of ``request_id``, committing ``drafts`` with the claim.

        Atomic across threads and processes: of any number of concurrent callers for one
        request id, exactly one gets its events back (claim and every event written in one
        transaction, e.g. an allowed action's proposal and its execution claim); every other
        call, now or later, returns ``None`` and writes nothing. The claim row names the seq
        of the last event.
        This is how the action kernel executes an approved action at most once, and how a
        single-use grant is spent once (:func:`grant_claim`). Claims are a lock table, not a
        projection: a rebuild never removes one, but every claim an event of the log records
        (:func:`claims_in`) is derived again by :meth:`append_sealed` and
        :meth:`rebuild_projections`, so a store replayed from the log holds them all, and
        ``gnomon rebuild`` compares them (table ``execution_claims``).
        """

    # -- the log --------------------------------------------------------------------------

    @abstractmethod
    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the last event, ``(0, GENESIS_HASH)`` when empty."""

    @abstractmethod
    def events(self, after: int = 0, limit: int | None = None) -> Iterator[Event]:
        """Events with ``seq > after`` in order."""

    @abstractmethod
    def chain_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str]]:
        """``(seq, body, prev_hash, hash)`` in order: the raw material of verification."""

    def verify(self) -> VerifyReport:
        """The chain from genesis, then (with the key) every event's seal and the sealed head
        watermark: the report names the first bad seq."""
        sealer = self._seal.sealer
        if sealer is None:
            return verify_chain(self.chain_rows())
        report = sealer.verify(self.sealed_rows())
        if not report.ok:
            return report
        watermark = self._seal.watermark
        head_problem = (
            None if watermark is None else watermark.problem(report.head_seq, report.head_hash)
        )
        if head_problem is not None:
            return VerifyReport(
                False,
                report.events,
                report.head_seq,
                report.head_hash,
                report.head_seq,
                head_problem,
            )
        return report

    # -- projections ----------------------------------------------------------------------

    @abstractmethod
    def get_session(self, session_id: str) -> SessionInfo | None: ...

    @abstractmethod
    def get_observation(self, observation_id: str) -> Observation | None: ...

    @abstractmethod
    def get_claim(self, claim_id: str) -> Claim | None: ...

    @abstractmethod
    def get_evidence(self, claim_id: str) -> EvidenceSet: ...

    @abstractmethod
    def get_beliefs(self, belief_ids: Sequence[str]) -> dict[str, Belief]:
        """The current version of each id that exists (missing ids are simply absent)."""

    def get_belief(self, belief_id: str) -> Belief | None:
        return self.get_beliefs([belief_id]).get(belief_id)

    @abstractmethod
    def find_beliefs(self, where: BeliefFilter) -> list[Belief]:
        """Beliefs matching every condition, ordered as :class:`BeliefFilter` describes."""

    @abstractmethod
    def count_beliefs(self, where: BeliefFilter) -> int:
        """How many beliefs match (``limit`` and ``offset`` ignored)."""

    # -- belief history -------------------------------------------------------------------

    @abstractmethod
    def belief_history(self, belief_id: str) -> list[Belief]:
        """Every recorded version of a belief, oldest first (empty for an unknown id).

        A version is what one commit left: the system held it from its ``updated_at``
        (``recorded_from``) until the next version's ``updated_at`` (``recorded_until``, never
        earlier than its own start), the last one until now. This is the system's belief time;
        the validity the source states is ``valid_from``/``valid_to`` on the belief itself.
        """

    def find_belief_versions(
        self,
        where: BeliefFilter,
        *,
        at: datetime | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Belief]:
        """Past and present versions matching ``where``, answered by one indexed query.

        With ``at``: for each belief, the version held at ``at`` (``recorded_from <= at <
        recorded_until``), if it matches: "what did I believe on date X". With ``since`` and/or
        ``until`` (and no ``at``): every matching version held at some moment of the window
        ``[since, until]``, so a belief may appear more than once. With neither: every version.
        Ordered as :meth:`find_beliefs` orders (then newest version first); ``limit`` and
        ``offset`` apply to versions.
        """
        if at is not None:
            since = until = at
        return self._versions_held(
            where,
            None if since is None else micros(since),
            None if until is None else micros(until),
        )

    @abstractmethod
    def _versions_held(
        self, where: BeliefFilter, since_us: int | None, until_us: int | None
    ) -> list[Belief]:
        """:meth:`find_belief_versions` with its window in integer microseconds (``at`` is both
        bounds): the versions matching ``where`` that started at or before ``until_us`` and were
        still held after ``since_us``; a bound that is None does not limit."""

    def find_beliefs_as_of(self, where: BeliefFilter, at: datetime) -> list[Belief]:
        """The versions matching ``where`` that the system held at ``at``."""
        return self.find_belief_versions(where, at=at)

    def session_events(self, session_id: str) -> list[Event]:
        """The events of one session, in order. Backends override with an indexed read;
        this fallback scans the log."""
        return [e for e in self.events() if e.session_id == session_id]

    def request_events(self, request_id: str) -> list[Event]:
        """The events of one action request, in order: those of a kind in
        :data:`REQUEST_KIND_PREFIXES` whose ``payload.request_id`` is ``request_id``. What the
        action kernel folds into a request's state on every proposal, status read and approval,
        so backends answer it from an index (its cost grows with the request's few events, not
        with the log); this fallback scans the log."""
        return [
            e
            for e in self.events()
            if is_request_kind(e.kind) and e.payload.get("request_id") == request_id
        ]

    def beliefs_with_origin(self, origin_id: str) -> list[Belief]:
        """Every current belief whose origin label includes ``origin_id``, ordered by id: what
        a flagged origin quarantines (:meth:`firewall.Firewall.flag_origin`). Labels only grow
        along derivation, so this is everything derived from the origin. One pass over the
        belief projection (the same on every backend: ``projection_docs``); no per-belief
        query."""
        import orjson

        needle = orjson.dumps(origin_id)[1:-1]  # as the id appears inside a JSON document
        found = []
        for table, _ident, doc in self.projection_docs():
            if table != "beliefs" or needle not in doc:
                continue
            belief = Belief.model_validate_json(doc)
            if origin_id in belief.origin.origin_ids:
                found.append(belief)
        return sorted(found, key=lambda b: b.id)

    def origin_rows(self, origin_id: str) -> list[OriginRow]:
        """:meth:`beliefs_with_origin` as compact rows, in the same order (a backend may read
        them without a typed belief; each move is checked against the stored version when it
        is applied)."""
        return [
            OriginRow(b.id, b.version, b.security_status.value, b.retrieval_status.value)
            for b in self.beliefs_with_origin(origin_id)
        ]

    def decisions_citing(self, belief_ids: Sequence[str]) -> list[tuple[str, Decision]]:
        """``(belief id, decision)`` for every decision citing one of ``belief_ids``: in the
        order of ``belief_ids``, each belief's decisions as :meth:`decisions_depending_on`
        orders them. Backends may answer it with one query per page of ids."""
        return [(b, d) for b in dict.fromkeys(belief_ids) for d in self.decisions_depending_on(b)]

    def decay_rows(
        self, *, stale_before: datetime, now: datetime, after: str = "", limit: int = 1000
    ) -> list[DecayRow]:
        """:meth:`decay_candidates` as compact rows, in the same order: what bulk decay needs
        to decide a move, without a typed belief (a backend may read them from its columns;
        the move itself is checked against the stored version when it is applied)."""
        return [
            DecayRow(
                b.id,
                b.version,
                b.freshness_status.value,
                b.expires_at is not None and b.expires_at <= now,
            )
            for b in self.decay_candidates(
                stale_before=stale_before, now=now, after=after, limit=limit
            )
        ]

    def decay_candidates(
        self, *, stale_before: datetime, now: datetime, after: str = "", limit: int = 1000
    ) -> list[Belief]:
        """Beliefs whose freshness is due to move (:mod:`firewall.host.decay`), ordered by id, with
        ``id > after`` (keyset pages): not yet ``expired`` and ``expires_at <= now``, or
        ``fresh`` and anchored (``coalesce(last_verified_at, observed_at)``) before
        ``stale_before``. SQL backends answer it with one query per page; this fallback scans
        the belief projection."""
        found = []
        for table, ident, doc in self.projection_docs():
            if table != "beliefs" or ident <= after:
                continue
            belief = Belief.model_validate_json(doc)
            anchor = belief.last_verified_at or belief.observed_at
            expiring = belief.expires_at is not None and belief.expires_at <= now
            if (expiring and belief.freshness_status != FreshnessStatus.EXPIRED) or (
                belief.freshness_status == FreshnessStatus.FRESH and anchor < stale_before
            ):
                found.append(belief)
        return sorted(found, key=lambda b: b.id)[:limit]

    @abstractmethod
    def get_decision(self, decision_id: str) -> Decision | None: ...

    @abstractmethod
    def get_action(self, action_id: str) -> Action | None:
        """The action with this id (indexed, not a replay of the log)."""

    @abstractmethod
    def decisions_depending_on(self, belief_id: str) -> list[Decision]:
        """Every decision that cites ``belief_id`` (indexed, not a scan)."""

    @abstractmethod
    def revisions_for(self, belief_id: str) -> list[Revision]:
        """The belief's revisions, oldest first."""

    @abstractmethod
    def revisions_by_grant(self, grant_id: str) -> list[Revision]:
        """The revisions made on the grant ``grant_id``, oldest first (indexed, not a scan):
        how the firewall knows a single-use grant was already spent, across processes."""

    @abstractmethod
    def contradictions_for(self, belief_ids: Sequence[str]) -> list[Contradiction]:
        """Contradictions that involve any of the given beliefs."""

    # -- store bindings (beliefs written through to an external memory store) ----------------

    @abstractmethod
    def bindings_by_store_id(self, store: str, store_ids: Sequence[str]) -> dict[str, StoreBinding]:
        """``{store_id: binding}`` for the given ids of ``store`` that have a binding (indexed).

        Should two bindings name one store id (never through an adapter), either may be returned.
        """

    def bound_store_ids(self, store: str, store_ids: Sequence[str]) -> set[str]:
        """The ids among ``store_ids`` that have a binding in ``store``: what an idempotent
        import skips. Backends may answer from the index alone; this builds the bindings."""
        return set(self.bindings_by_store_id(store, store_ids))

    @abstractmethod
    def bindings_for_beliefs(self, belief_ids: Sequence[str]) -> list[StoreBinding]:
        """Every binding (in any store) of the given beliefs, ordered by ``(belief_id, store)``."""

    @abstractmethod
    def list_bindings(
        self, store: str, *, after: str | None = None, limit: int = 1000
    ) -> list[StoreBinding]:
        """The bindings of ``store`` ordered by ``belief_id``; keyset pagination: pass the last
        ``belief_id`` of a page as ``after`` to get the next one."""

    # -- lifecycle ------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_continues(event: Event, seq: int, prev: str) -> None:
    """Raise :class:`~firewall.model.errors.LogIntegrityError` unless ``event`` is the next link
    after
    ``(seq, prev)`` and its hash recomputes from its body."""
    if event.seq != seq + 1:
        raise LogIntegrityError(
            event.seq,
            f"does not continue the log: the next seq is {seq + 1} (events missing, duplicated "
            "or reordered)",
        )
    if event.prev_hash != prev:
        raise LogIntegrityError(
            event.seq, "prev_hash does not match the head of the log it is appended to"
        )
    if not link_holds(event.seq, prev, event.body, event.hash):
        # an erased body keeps its link through the digest it keeps; the erasure event that
        # vouches for it is checked when the event is read (Store._verified) or walked
        marker = erased_marker(event.body)
        if marker is None or digest_link(event.seq, prev, marker["body_digest"]) != event.hash:
            raise LogIntegrityError(event.seq, "hash does not match the event body")


__all__ = [
    "CLAIM_FIELD",
    "EXECUTION_CLAIM_KIND",
    "REQUEST_KIND_PREFIXES",
    "BeliefFilter",
    "DecayRow",
    "Store",
    "check_continues",
    "claim_of",
    "claims_in",
    "grant_claim",
    "is_request_kind",
]
