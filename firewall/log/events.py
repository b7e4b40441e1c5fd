"""Events: canonical bytes, the SHA-256 hash chain, and chain verification.

Every state change is one event. An event's *body* is canonical JSON (sorted keys, compact
separators, UTF-8, timestamps in one fixed text form) and is stored as the exact bytes that were
hashed, so verification never depends on how a JSON library happens to re-encode a value. The
chain hash is domain-separated and covers the body through its digest (hash version 2)::

    digest(n) = SHA-256( b"gnomon.event-body.v1\\x00" || body(n) )
    hash(n)   = SHA-256( b"gnomon.event.v2\\x00" || u64be(n) || bytes(hash(n-1))
                         || bytes(digest(n)) )

with ``hash(0)`` the all-zero genesis. The sequence number is inside the hash, so a renumbered or
reordered log breaks the chain without the verifier having to parse any body. Because the link
needs only the body's digest, a shipped export (:mod:`firewall.audit.shipping`) can replace a body
above a sensitivity ceiling by its digest (:class:`RedactedBody`) and still verify, while any
change to a kept body, a digest, a link or the order still breaks it.

Hash version 1, written before, hashed the body itself::

    hash(n) = SHA-256( b"gnomon.event.v1\\x00" || u64be(n) || bytes(hash(n-1)) || body(n) )

Verifiers accept either version per event (:func:`link_holds`), so old logs, and logs that
continue an old one, still verify. The two domains differ, so no event verifies under one
version with the inputs of the other short of a SHA-256 collision. A version-1 event cannot be
redacted: its link needs the whole body.

The body carries the full snapshots of the records the event changed (``payload.records``), so
every projection can be rebuilt from the log alone with :func:`records_from_payload`.

Schema versions: 1 is every event but an import batch, unchanged since the first release; 2 is
the compact import batch, ``payload.imports`` (:mod:`firewall.log.batch`): one event for a whole
batch, a shared template and one compact row per record, from which the records are derived, not
restated; 3 is the compact move batch, ``payload.moves`` (:mod:`firewall.log.moves`): many belief
moves by one authority, each new version derived from the previous one. :data:`KNOWN_SCHEMAS`
are read; a body of any other version is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from gnomon.firewall.model import chain
from gnomon.firewall.model.clock import iso
from gnomon.firewall.model.errors import LogIntegrityError

if TYPE_CHECKING:
    from gnomon.firewall.log.batch import ImportBatch
    from gnomon.firewall.log.moves import BeliefMove, MoveBatch

#: The newest event body schema: 2 is an import batch (``payload.imports``); every other event
#: is written as schema 1, in the format earlier versions wrote.
SCHEMA_VERSION = 2
#: A move batch (``payload.moves``, :mod:`firewall.log.moves`).
MOVES_SCHEMA = 3
#: Event body schema versions this version of gnomon reads.
KNOWN_SCHEMAS = frozenset({1, 2, 3})
#: The payload key of an import batch (:mod:`firewall.log.batch`).
IMPORTS = "imports"
#: A human's approval of a belief for long-term memory (:mod:`firewall.host.review`): a user's
#: word, so a log import takes it only under a pinned key (:mod:`firewall.audit.import_check`).
REVIEW_APPROVED = "review.approved"
#: A sentinel's alert and an origin it flagged (:mod:`firewall.host.sentinels`): verdicts that
#: hold actions and quarantine beliefs, so a log import takes them only under a pinned key.
SENTINEL_ALERT = "sentinel.alert"
ORIGIN_FLAGGED = "origin.flagged"
#: How far a sentinel process has watched the log (its durable cursor: ``gnomon sentinel run``
#: resumes there instead of replaying from the start).
SENTINEL_CURSOR = "sentinel.cursor"
#: The tool listing of a server behind the MCP proxy, pinned (:mod:`firewall.host.mcp_listing`).
MCP_TOOLS_PINNED = "mcp.tools.pinned"
#: The payload key of a move batch (:mod:`firewall.log.moves`).
MOVES = "moves"
#: Hash version 1 (events written before hash version 2): the link covers the body's bytes.
DOMAIN = b"gnomon.event.v1\x00"
#: Hash version 2: the link covers the body's digest (:func:`body_digest`).
DOMAIN_V2 = b"gnomon.event.v2\x00"
BODY_DOMAIN = b"gnomon.event-body.v1\x00"
GENESIS_HASH = "0" * 64


@dataclass(frozen=True, slots=True)
class RedactedBody:
    """Where a shipped export withheld an event's body: its digest, and why (unhashed note)."""

    digest: str
    reason: str = ""


#: An event body as a verifier sees it: the bytes, or only their digest in a shipped export.
Body = bytes | RedactedBody


@dataclass(frozen=True, slots=True)
class Records:
    """Typed snapshots of the projection rows one event writes (each a full new version)."""

    sessions: tuple[chain.SessionInfo, ...] = ()
    observations: tuple[chain.Observation, ...] = ()
    claims: tuple[chain.Claim, ...] = ()
    evidence: tuple[chain.EvidenceItem, ...] = ()
    beliefs: tuple[chain.Belief, ...] = ()
    decisions: tuple[chain.Decision, ...] = ()
    actions: tuple[chain.Action, ...] = ()
    outcomes: tuple[chain.Outcome, ...] = ()
    revisions: tuple[chain.Revision, ...] = ()
    contradictions: tuple[chain.Contradiction, ...] = ()
    bindings: tuple[chain.StoreBinding, ...] = ()
    #: Belief moves of a move batch (:mod:`firewall.log.moves`): each new version is derived from
    #: the one the store holds, not restated. Never in :meth:`to_payload`.
    moves: tuple[BeliefMove, ...] = ()

    def to_payload(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for name in _RECORD_NAMES:
            items: tuple[chain.ChainModel, ...] = getattr(self, name)
            if items:
                out[name] = [item.to_json_dict() for item in items]
        return out

    def __bool__(self) -> bool:
        # on every commit's hot path: one short-circuit expression, no generator
        return bool(
            self.sessions
            or self.observations
            or self.claims
            or self.evidence
            or self.beliefs
            or self.decisions
            or self.actions
            or self.outcomes
            or self.revisions
            or self.contradictions
            or self.bindings
            or self.moves
        )


RECORD_TYPES: tuple[tuple[str, type[chain.ChainModel]], ...] = (
    ("sessions", chain.SessionInfo),
    ("observations", chain.Observation),
    ("claims", chain.Claim),
    ("evidence", chain.EvidenceItem),
    ("beliefs", chain.Belief),
    ("decisions", chain.Decision),
    ("actions", chain.Action),
    ("outcomes", chain.Outcome),
    ("revisions", chain.Revision),
    ("contradictions", chain.Contradiction),
    ("bindings", chain.StoreBinding),
)


_RECORD_NAMES = tuple(name for name, _ in RECORD_TYPES)


def records_from_payload(payload: Mapping[str, Any]) -> Records:
    """Rebuild typed records from an event payload (the inverse of :meth:`Records.to_payload`;
    an import batch's rows are expanded from its template first, :func:`firewall.log.batch.expand`).
    """
    from gnomon.firewall.log.batch import docs_and_moves, read_batch

    imports = payload.get(IMPORTS)
    raw, moves = docs_and_moves(
        {k: v for k, v in payload.items() if k != IMPORTS} if imports else payload
    )
    parts: dict[str, tuple[chain.ChainModel, ...]] = {}
    for name, model in RECORD_TYPES:
        items = raw.get(name)
        if items:
            parts[name] = tuple(model.model_validate(item, strict=False) for item in items)
    if imports is not None:
        # validated template, rows checked by type: the records expand() then validation give
        batch = read_batch(imports).records()
        for name in ("claims", "evidence", "beliefs", "bindings"):
            derived = getattr(batch, name)
            if derived:
                parts[name] = (*parts.get(name, ()), *derived)
    if moves is not None:
        return Records(**parts, moves=tuple(moves))  # type: ignore[arg-type]
    return Records(**parts)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An event before the store gives it a sequence number and a place in the chain."""

    kind: str
    actor: str
    at: datetime
    session_id: str | None = None
    project: str | None = None
    user: str | None = None
    versions: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)
    records: Records = field(default_factory=Records)
    #: An import batch (schema 2): its records are derived from one template, see
    #: :mod:`firewall.log.batch`. A draft carries ``records`` or a batch, not both.
    batch: ImportBatch | None = None
    #: A move batch (schema 3): belief moves derived from the versions the store holds, see
    #: :mod:`firewall.log.moves`. May come with ``records`` (e.g. decisions it flags).
    moves: MoveBatch | None = None

    def payload(self) -> dict[str, Any]:
        out = dict(self.data)
        if self.records:
            out["records"] = self.records.to_payload()
        if self.batch is not None:
            out[IMPORTS] = self.batch.payload()
        if self.moves is not None:
            out[MOVES] = self.moves.payload()
        return out

    def typed_records(self) -> Records:
        """Every record this draft writes, typed (an import batch builds them on first use;
        a move batch's moves stay moves, see :func:`firewall.log.moves.resolve_moves`)."""
        if self.moves is not None:
            moved = self.moves.records()
            return replace(
                self.records,
                revisions=(*self.records.revisions, *moved.revisions),
                moves=moved.moves,
            )
        return self.records if self.batch is None else self.batch.records()


@dataclass(frozen=True, slots=True)
class Event:
    """A sealed event: its canonical body bytes and its place in the chain."""

    seq: int
    kind: str
    at: str
    actor: str
    session_id: str | None
    project: str | None
    user: str | None
    versions: Mapping[str, Any]
    payload: Mapping[str, Any]
    prev_hash: str
    hash: str
    body: bytes
    #: The host's seal (:mod:`firewall.log.seal`): 64 bytes, or ``None`` for an event stored
    #: without one (written without the key, before sealing existed, or read from an export).
    tag: bytes | None = None

    @classmethod
    def from_body(
        cls, seq: int, body: bytes, prev_hash: str, digest: str, tag: bytes | None = None
    ) -> Event:
        return cls.from_doc(seq, orjson.loads(body), body, prev_hash, digest, tag)

    @classmethod
    def from_doc(
        cls,
        seq: int,
        doc: Mapping[str, Any],
        body: bytes,
        prev_hash: str,
        digest: str,
        tag: bytes | None = None,
    ) -> Event:
        """The event whose parsed ``body`` is ``doc`` (a missing required field: ``KeyError``)."""
        return cls(
            seq=seq,
            kind=doc["kind"],
            at=doc["at"],
            actor=doc["actor"],
            session_id=doc.get("session"),
            project=doc.get("project"),
            user=doc.get("user"),
            versions=doc.get("versions", {}),
            payload=doc.get("payload", {}),
            prev_hash=prev_hash,
            hash=digest,
            body=body,
            tag=tag,
        )

    def records(self) -> Records:
        return records_from_payload(self.payload)


def canonical_body(seq: int, draft: EventDraft) -> bytes:
    """The exact bytes that are hashed and stored for an event."""
    return orjson.dumps(_doc(seq, draft), option=orjson.OPT_SORT_KEYS)


_ZERO = timedelta(0)


def _iso(moment: datetime) -> str:
    """:func:`firewall.model.clock.iso`, without ``strftime`` for the usual UTC moment."""
    if moment.utcoffset() == _ZERO and moment.year >= 1000:
        # isoformat(timespec="microseconds") of a UTC moment is the same text up to the suffix
        return moment.isoformat(timespec="microseconds")[:-6] + "Z"
    return iso(moment)


def _doc(seq: int, draft: EventDraft) -> dict[str, Any]:
    """The body of ``draft`` sealed as ``seq``, before its canonical encoding."""
    payload = draft.payload()
    return {
        "schema": MOVES_SCHEMA if MOVES in payload else SCHEMA_VERSION if IMPORTS in payload else 1,
        "seq": seq,
        "kind": draft.kind,
        "at": _iso(draft.at),
        "actor": draft.actor,
        "session": draft.session_id,
        "project": draft.project,
        "user": draft.user,
        "versions": dict(draft.versions),
        "payload": payload,
    }


_BODY_STATE = hashlib.sha256(BODY_DOMAIN)


def body_digest(body: bytes) -> str:
    """The digest a version-2 link covers (hex), and what a redacted event keeps."""
    h = hashlib.sha256(BODY_DOMAIN)
    h.update(body)
    return h.hexdigest()


def digest_link(seq: int, prev_hash: str, digest: str) -> str:
    """The version-2 chain hash from the body's digest."""
    return hashlib.sha256(
        DOMAIN_V2 + seq.to_bytes(8, "big") + bytes.fromhex(prev_hash) + bytes.fromhex(digest)
    ).hexdigest()


def chain_hash(seq: int, prev_hash: str, body: bytes) -> str:
    """The chain hash every new event gets (hash version 2): :func:`digest_link` of
    :func:`body_digest`, without the round trip through hex (it is on every commit)."""
    inner = _BODY_STATE.copy()
    inner.update(body)
    return hashlib.sha256(
        DOMAIN_V2 + seq.to_bytes(8, "big") + bytes.fromhex(prev_hash) + inner.digest()
    ).hexdigest()


def link_digest(seq: bytes, prev: bytes, body: bytes) -> bytes:
    """:func:`chain_hash` as bytes, from ``seq`` as 8 big-endian bytes and the previous hash as
    bytes: a walk along the chain keeps each hash as bytes for the next link (and its seal)."""
    inner = _BODY_STATE.copy()
    inner.update(body)
    return hashlib.sha256(DOMAIN_V2 + seq + prev + inner.digest()).digest()


def link_state() -> tuple[Callable[[], Any], bytes, Callable[[bytes], Any]]:
    """What :func:`link_digest` computes with, for a loop that inlines it: a fresh copy of the
    body hash state, the link domain and the SHA-256 constructor."""
    return _BODY_STATE.copy, DOMAIN_V2, hashlib.sha256


def chain_hash_v1(seq: int, prev_hash: str, body: bytes) -> str:
    """The chain hash of hash version 1 (old logs)."""
    return hashlib.sha256(
        DOMAIN + seq.to_bytes(8, "big") + bytes.fromhex(prev_hash) + body
    ).hexdigest()


def link_holds(seq: int, prev_hash: str, body: Body, digest: str) -> bool:
    """Does ``digest`` chain ``body`` (or a redacted body's digest) after ``prev_hash``?

    A kept body is accepted under version 2 or version 1; a redacted one only under version 2,
    the only version whose link can be checked without the body."""
    if isinstance(body, RedactedBody):
        return _is_hex64(body.digest) and digest_link(seq, prev_hash, body.digest) == digest
    if chain_hash(seq, prev_hash, body) == digest:
        return True
    return chain_hash_v1(seq, prev_hash, body) == digest


#: The top-level key of an erased body (:mod:`firewall.log.erasure`): the digest of the body it
#: replaced (what the chain covers), the erasure event that vouches for it, the grant and the date.
ERASED = "erased"
#: How an erased body's canonical bytes show it (sorted keys: ``body_digest`` comes first).
_ERASED_MARK = b'"erased":{"body_digest":"'
#: The kind of the event that records an erasure and vouches for every body it rewrote.
ERASURE_KIND = "erasure"


def erased_marker(body: bytes) -> Mapping[str, Any] | None:
    """The erasure marker of an erased body (``body_digest``, ``by``, ``grant``, ``on``), or
    ``None`` for a body as it was committed. A marker says nothing until the erasure event it
    names vouches for the body (:class:`ErasureLedger`): anyone can write one."""
    if _ERASED_MARK not in body:
        return None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    marker = doc.get(ERASED) if isinstance(doc, dict) else None
    if (
        not isinstance(marker, dict)
        or not _is_hex64(marker.get("body_digest"))
        or type(marker.get("by")) is not int
    ):
        return None
    return marker


def vouched(erasure: Event) -> dict[int, str]:
    """``{seq: digest of its erased body}`` for every event ``erasure`` lists (empty when it is
    not an erasure)."""
    listed = erasure.payload.get("events") if erasure.kind == ERASURE_KIND else None
    out: dict[int, str] = {}
    if isinstance(listed, list):
        for item in listed:
            if isinstance(item, dict) and type(item.get("seq")) is int:
                out[item["seq"]] = str(item.get("erased_digest"))
    return out


def vouch_problem(
    erasure: Event, seq: int, body: bytes, listing: Mapping[int, str] | None = None
) -> str | None:
    """What is wrong with the erased ``body`` of event ``seq`` given the erasure event its
    marker names (and that event's :func:`vouched` listing, when the caller has it), or
    ``None`` when that event lists it with this body's digest."""
    if erasure.kind != ERASURE_KIND:
        return f"its erasure marker names event {erasure.seq}, which is not an erasure"
    digest = (vouched(erasure) if listing is None else listing).get(seq)
    if digest is None:
        return f"erasure event {erasure.seq} does not list it (a forged erasure)"
    if digest != body_digest(body):
        return f"erasure event {erasure.seq} vouches for another body (edited)"
    return None


class ErasureLedger:
    """A chain walk's link check that also accepts erased bodies, each only once the erasure
    event its marker names (later in the chain, sealed like any event) lists it with its digest.

    Use :meth:`holds` for every event in order, then :meth:`unvouched`; :attr:`problem` says why
    the last failed check failed."""

    def __init__(self) -> None:
        self._holds = link_checker()
        #: erasure seq -> [(erased seq, the stored erased body)]: an event whose seq is a key
        #: is an erasure an earlier erased body names, which a walk must show to :meth:`holds`
        #: even when its own link is plain.
        self.awaiting: dict[int, list[tuple[int, bytes]]] = {}
        self.problem: str | None = None
        #: The event the last failed check is about (an erased one, when its voucher failed).
        self.bad_seq = 0
        #: How many erased bodies the walk found.
        self.erased = 0

    def holds(self, seq: int, prev_hash: str, body: Body, digest: str) -> bool:
        self.problem = None
        self.bad_seq = seq
        if not self._holds(seq, prev_hash, body, digest):
            if not isinstance(body, bytes):
                return False
            marker = erased_marker(body)
            if marker is None or digest_link(seq, prev_hash, marker["body_digest"]) != digest:
                return False
            by = marker["by"]
            if by <= seq:
                self.problem = f"its erasure marker names event {by}, not a later one (forged)"
                return False
            self.awaiting.setdefault(by, []).append((seq, body))
            self.erased += 1
        if self.awaiting and seq in self.awaiting and isinstance(body, bytes):
            erasure = Event.from_body(seq, body, prev_hash, digest)
            listing = vouched(erasure)
            for erased_seq, erased_body in self.awaiting.pop(seq):
                problem = vouch_problem(erasure, erased_seq, erased_body, listing)
                if problem is not None:
                    self.problem = f"event {erased_seq}: {problem}"
                    self.bad_seq = erased_seq
                    return False
        return True

    def unvouched(self) -> tuple[int, str] | None:
        """The first erased body no erasure event vouched for (its event is missing), if any."""
        if not self.awaiting:
            return None
        by = min(self.awaiting)
        seq = self.awaiting[by][0][0]
        return seq, f"its erasure marker names event {by}, which the log does not hold"


def link_checker() -> Callable[[int, str, Body, str], bool]:
    """:func:`link_holds` for a walk along a chain: the version the previous event matched is
    tried first (a log is long runs of one version), so verifying an old log costs one hash per
    event, not two. Accepts exactly what :func:`link_holds` accepts."""
    order = [chain_hash, chain_hash_v1]

    def holds(seq: int, prev_hash: str, body: Body, digest: str) -> bool:
        if type(body) is not bytes:
            return link_holds(seq, prev_hash, body, digest)
        if order[0](seq, prev_hash, body) == digest:
            return True
        if order[1](seq, prev_hash, body) == digest:
            order.reverse()
            return True
        return False

    return holds


def _is_hex64(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and set(value) <= frozenset("0123456789abcdef")
    )


class Tagger(Protocol):
    """What seals an event's place in the chain (:class:`firewall.log.seal.Sealer`)."""

    def tag(self, seq: int, digest: str, msg: bytes | None = None) -> bytes: ...


def seal(seq: int, prev_hash: str, draft: EventDraft, sealer: Tagger | None = None) -> Event:
    """Give a draft its sequence number and chain hash, and with ``sealer`` the host's seal
    (:mod:`firewall.log.seal`). Called by a store inside its lock.

    The payload is built once: the body is its canonical encoding and the sealed event keeps
    the same dict, so a store can reuse ``event.payload["records"]`` for its projection rows.
    """
    doc = _doc(seq, draft)
    body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    if sealer is None:
        return Event.from_doc(seq, doc, body, prev_hash, chain_hash(seq, prev_hash, body), None)
    # the hash as bytes once: the link's hex, and the seal's message, without a round trip
    place = seq.to_bytes(8, "big")
    raw = link_digest(place, bytes.fromhex(prev_hash), body)
    digest = raw.hex()
    tag = sealer.tag(seq, digest, place + raw)
    return Event.from_doc(seq, doc, body, prev_hash, digest, tag)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_chain` found. ``first_bad_seq`` and ``problem`` are set when not ok."""

    ok: bool
    events: int
    head_seq: int
    head_hash: str
    first_bad_seq: int | None = None
    problem: str | None = None

    def raise_for_problem(self) -> None:
        if not self.ok:
            assert self.first_bad_seq is not None and self.problem is not None
            raise LogIntegrityError(self.first_bad_seq, self.problem)


def verify_chain(rows: Iterable[tuple[int, bytes, str, str]]) -> VerifyReport:
    """Verify ``(seq, body, prev_hash, hash)`` rows in order, from genesis.

    Returns a report naming the first bad sequence number instead of raising, so that callers
    can render it; :meth:`VerifyReport.raise_for_problem` turns it into a typed error.
    """
    expected_seq = 1
    prev = GENESIS_HASH
    count = 0
    ledger = ErasureLedger()
    holds = ledger.holds
    for seq, body, prev_hash, digest in rows:
        if not isinstance(body, bytes):
            problem = f"event body is stored as {type(body).__name__}, not bytes (edited?)"
            return VerifyReport(False, count, expected_seq - 1, prev, seq, problem)
        if seq != expected_seq:
            problem = f"expected seq {expected_seq}, found {seq} (events missing or reordered)"
            return VerifyReport(False, count, expected_seq - 1, prev, expected_seq, problem)
        if prev_hash != prev:
            return VerifyReport(
                False, count, seq - 1, prev, seq, "prev_hash does not match the previous event"
            )
        if not holds(seq, prev, body, digest):
            problem = ledger.problem or "hash does not match the event body"
            return VerifyReport(False, count, seq - 1, prev, ledger.bad_seq, problem)
        prev = digest
        expected_seq += 1
        count += 1
    missing = ledger.unvouched()
    if missing is not None:
        return VerifyReport(False, count, expected_seq - 1, prev, *missing)
    return VerifyReport(True, count, expected_seq - 1, prev)


__all__ = [
    "BODY_DOMAIN",
    "DOMAIN",
    "DOMAIN_V2",
    "ERASED",
    "ERASURE_KIND",
    "GENESIS_HASH",
    "IMPORTS",
    "KNOWN_SCHEMAS",
    "MCP_TOOLS_PINNED",
    "MOVES",
    "MOVES_SCHEMA",
    "ORIGIN_FLAGGED",
    "RECORD_TYPES",
    "REVIEW_APPROVED",
    "SCHEMA_VERSION",
    "SENTINEL_ALERT",
    "SENTINEL_CURSOR",
    "Body",
    "ErasureLedger",
    "Event",
    "EventDraft",
    "Records",
    "RedactedBody",
    "Tagger",
    "VerifyReport",
    "body_digest",
    "canonical_body",
    "chain_hash",
    "chain_hash_v1",
    "digest_link",
    "erased_marker",
    "link_checker",
    "link_digest",
    "link_holds",
    "link_state",
    "records_from_payload",
    "seal",
    "verify_chain",
    "vouch_problem",
    "vouched",
]
