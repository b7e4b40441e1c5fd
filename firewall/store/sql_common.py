"""What SQL backends derive from one commit the same way, whatever their driver.

:class:`ProjectionRows` collects the records of a batch of sealed events into one entry per
``(table, id)``: the *last* version of a record wins (a commit may carry several versions of one
belief) while the record keeps the position of its *first* appearance, which is what an upsert
does to a row's insertion order (SQLite's rowid, PostgreSQL's identity column). Each record is
paired with the JSON document the event payload already holds, so no record is serialized twice.

:func:`belief_keys` is the tuple of indexed values every SQL backend stores next to a belief's
document: the four axes, the sensitivity rank, the time keys in integer microseconds
(:func:`firewall.store.keys.micros`) and the scoping columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import orjson

from gnomon.firewall.log.batch import ImportBatch, record_docs
from gnomon.firewall.log.events import RECORD_TYPES, Event
from gnomon.firewall.model import chain
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    SENSITIVITY_RANK,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)
from gnomon.firewall.store.keys import micros

#: The states a belief must hold for a policy to be able to admit it into trusted context: what
#: each SQL backend's admissible text index (or gate) covers.
ADMISSIBLE_TRUTH = TruthStatus.SUPPORTED.value
ADMISSIBLE_RETRIEVAL = RetrievalStatus.NORMAL.value
ADMISSIBLE_SECURITY = SecurityStatus.CLEAN.value


def status_conditions(where: BeliefFilter) -> list[tuple[str, list[str]]] | None:
    """The status columns ``where`` restricts, each with its allowed values sorted, or None
    when one of them allows no value at all (nothing can match)."""
    found: list[tuple[str, list[str]]] = []
    for column, values in (
        ("truth", where.truth),
        ("retrieval", where.retrieval),
        ("security", where.security),
        ("freshness", where.freshness),
    ):
        if values is None:
            continue
        if not values:
            return None
        found.append((column, sorted(values)))
    return found


def equality_conditions(where: BeliefFilter) -> list[tuple[str, str]]:
    """The columns ``where`` requires to equal one value: subject, predicate, session."""
    return [
        (column, value)
        for column, value in (
            ("subject", where.subject),
            ("predicate", where.predicate),
            ("session_id", where.session_id),
        )
        if value is not None
    ]


#: One row of the log as a SQL backend reads it: ``(seq, body, prev_hash, hash)``.
ChainRow = tuple[int, bytes, str, str]
#: A row of the log whose first column is its seq (a chain row, or one with its seal).
Row = TypeVar("Row", bound=tuple[Any, ...])


def log_pages(
    fetch: Callable[[int, int], Sequence[Row]],
    after: int,
    limit: int | None,
    *,
    page_size: int,
) -> Iterator[Row]:
    """The log's rows after seq ``after`` (at most ``limit`` of them), read a page at a time by
    ``fetch(after_seq, size)``, so that no cursor, connection or lock is held while the caller
    consumes them."""
    remaining = limit
    cursor = after
    while remaining is None or remaining > 0:
        size = page_size if remaining is None else min(page_size, remaining)
        page = fetch(cursor, size)
        yield from page
        if len(page) < size:
            return
        cursor = page[-1][0]
        if remaining is not None:
            remaining -= len(page)


def within_admissible(where: BeliefFilter) -> bool:
    """True when every belief ``where`` can match holds the admissible states, so a query may
    start from an index that holds only admissible beliefs (a superset of its matches)."""
    return (
        where.truth is not None
        and where.retrieval is not None
        and where.security is not None
        and where.truth <= {TruthStatus(ADMISSIBLE_TRUTH)}
        and where.retrieval <= {RetrievalStatus(ADMISSIBLE_RETRIEVAL)}
        and where.security <= {SecurityStatus(ADMISSIBLE_SECURITY)}
    )


class BeliefKeys(NamedTuple):
    truth: str
    retrieval: str
    security: str
    freshness: str
    sensitivity_rank: int
    anchor_us: int
    observed_us: int
    expires_us: int | None
    project: str
    scope: str
    user: str | None
    subject: str | None
    predicate: str | None
    session_id: str | None


def belief_keys(b: chain.Belief) -> BeliefKeys:
    """The indexed columns of a belief (enum members bind as their text value)."""
    observed = micros(b.observed_at)
    verified = b.last_verified_at
    expires = b.expires_at
    return BeliefKeys(
        b.truth_status,
        b.retrieval_status,
        b.security_status,
        b.freshness_status,
        SENSITIVITY_RANK[b.sensitivity],
        observed if verified is None else micros(verified),
        observed,
        None if expires is None else micros(expires),
        b.project,
        b.scope,
        b.user,
        b.subject,
        b.predicate,
        b.session_id,
    )


class BatchRow(NamedTuple):
    """One record of an import batch as a SQL backend stores it: ids, the statement, the
    indexed columns and the three documents (JSON bytes)."""

    belief_id: str
    claim_id: str
    evidence_id: str
    statement: str
    keys: BeliefKeys
    claim: bytes
    evidence: bytes
    belief: bytes


def batch_keys(batch: ImportBatch) -> Iterator[BeliefKeys]:
    """The indexed columns of each row of an import batch, in order, straight from its compact
    rows: what :func:`belief_keys` gives the record the batch would build (no record is built)."""
    t = batch.template.belief
    now = micros(batch.now)
    verified = t.last_verified_at is not None
    expires = None if t.expires_at is None else micros(t.expires_at)
    status = (t.truth_status, t.retrieval_status, t.security_status, t.freshness_status)
    shared = (t.project, t.scope, t.user, t.subject, t.predicate, t.session_id)
    make = BeliefKeys._make
    for row in batch.rows:
        _bid, _cid, _eid, _text, _source, sens, observed, _sid, _digest = row
        seen = now if observed is None else micros(observed)
        yield make(
            (*status, SENSITIVITY_RANK[sens], now if verified else seen, seen, expires, *shared)
        )


def batch_rows(batch: ImportBatch, docs: dict[str, list[dict[str, Any]]]) -> Iterator[BatchRow]:
    """The rows of an import batch, straight from its compact rows and its expanded documents
    (:func:`firewall.log.batch.expand` of the sealed payload): no typed record is built; the
    keys are :func:`batch_keys`."""
    dumps = orjson.dumps
    for row, keys, claim, evidence, belief in zip(
        batch.rows,
        batch_keys(batch),
        docs["claims"],
        docs["evidence"],
        docs["beliefs"],
        strict=True,
    ):
        belief_id, claim_id, evidence_id, text = row[:4]
        yield BatchRow(
            belief_id,
            claim_id,
            evidence_id,
            text,
            keys,
            dumps(claim),
            dumps(evidence),
            dumps(belief),
        )


def _table() -> dict[str, Any]:
    return {}


@dataclass
class ProjectionRows:
    """One commit's records, per table, as ``{id: (record, json_doc)}`` in first-seen order."""

    sessions: dict[str, tuple[chain.SessionInfo, bytes]] = field(default_factory=_table)
    observations: dict[str, tuple[chain.Observation, bytes]] = field(default_factory=_table)
    claims: dict[str, tuple[chain.Claim, bytes]] = field(default_factory=_table)
    evidence: dict[str, tuple[chain.EvidenceItem, bytes]] = field(default_factory=_table)
    beliefs: dict[str, tuple[chain.Belief, bytes]] = field(default_factory=_table)
    decisions: dict[str, tuple[chain.Decision, bytes]] = field(default_factory=_table)
    actions: dict[str, tuple[chain.Action, bytes]] = field(default_factory=_table)
    outcomes: dict[str, tuple[chain.Outcome, bytes]] = field(default_factory=_table)
    revisions: dict[str, tuple[chain.Revision, bytes]] = field(default_factory=_table)
    contradictions: dict[str, tuple[chain.Contradiction, bytes]] = field(default_factory=_table)
    bindings: dict[str, tuple[chain.StoreBinding, bytes]] = field(default_factory=_table)
    #: The belief history: one ``(belief, doc)`` per event that wrote the belief, in order.
    versions: list[tuple[chain.Belief, bytes]] = field(default_factory=list)

    @classmethod
    def of(cls, events: list[Event], records: list[Any]) -> ProjectionRows:
        """Collect the records (:class:`~firewall.log.events.Records`) sealed as ``events``."""
        rows = cls()
        for event, rec in zip(events, records, strict=True):
            if rec:
                rows.add(rec, record_docs(event.payload))
        return rows

    def add(self, rec: Any, payload: dict[str, list[dict[str, Any]]]) -> None:
        dumps = orjson.dumps
        for name, _model in RECORD_TYPES:
            items: tuple[chain.ChainModel, ...] = getattr(rec, name)
            if not items:
                continue
            table: dict[str, tuple[Any, bytes]] = getattr(self, name)
            for item, doc in zip(items, with_moved(name, items, payload), strict=True):
                # assignment to an existing key keeps its position: last version, first place
                table[item.id] = (item, dumps(doc))  # type: ignore[attr-defined]
            if name == "beliefs":
                last = {b.id: table[b.id] for b in items}  # type: ignore[attr-defined]
                self.versions.extend(last.values())


def with_moved(
    name: str, items: Sequence[Any], payload: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The payload's documents of table ``name``; for ``beliefs``, followed by the documents
    of the versions a move batch made (:func:`firewall.log.moves.resolve_moves` appends them to
    the records; the payload does not restate them)."""
    docs = payload.get(name) or []
    if name == "beliefs" and len(docs) < len(items):
        return [*docs, *(b.to_json_dict() for b in items[len(docs) :])]
    return docs


def version_rows(
    versions: list[tuple[chain.Belief, bytes]],
) -> tuple[list[tuple[str, int]], list[tuple[chain.Belief, bytes, int, int | None]]]:
    """``(closes, inserts)`` for the history rows of one commit, in order.

    Each belief's first version in the commit closes the row already stored (``(belief_id,
    from_us)``); a later version of the same belief closes the previous one of the commit. A
    version is never closed before its own start, whatever the clocks said.
    """
    closes: list[tuple[str, int]] = []
    rows: list[tuple[chain.Belief, bytes, int, int | None]] = []
    open_at: dict[str, int] = {}
    for belief, doc in versions:
        start = micros(belief.updated_at)
        index = open_at.get(belief.id)
        if index is None:
            closes.append((belief.id, start))
        else:
            prev = rows[index]
            rows[index] = (prev[0], prev[1], prev[2], max(start, prev[2]))
        open_at[belief.id] = len(rows)
        rows.append((belief, doc, start, None))
    return closes, rows


#: ``(table, id expression)`` of every table holding a record document.
PROJECTION_KEYS = (
    ("sessions", "id"),
    ("observations", "id"),
    ("claims", "id"),
    ("evidence", "id"),
    ("beliefs", "id"),
    ("decisions", "id"),
    ("actions", "id"),
    ("outcomes", "id"),
    ("revisions", "id"),
    ("contradictions", "id"),
    ("bindings", "store || ':' || belief_id"),
)

#: ``(table, id expression, columns)``: what each document table stores next to its document
#: for queries to filter, join or order on (beliefs and their history are listed per backend).
INDEXED_COLUMNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("sessions", "id", ("project",)),
    ("observations", "id", ("session_id",)),
    ("evidence", "id", ("claim_id",)),
    ("decisions", "id", ("session_id", "created_us")),
    ("actions", "id", ("decision_id", "session_id")),
    ("outcomes", "id", ("action_id", "session_id")),
    ("revisions", "id", ("belief_id", "created_us")),
    ("contradictions", "id", ("detected_us",)),
    ("bindings", "store || ':' || belief_id", ("store_id",)),
)
#: Link tables: ``(table, owner id column)``; each row links a belief to its owner.
LINK_TABLES = (("decision_deps", "decision_id"), ("contradiction_members", "contradiction_id"))
#: The tables both SQL backends derive from the log alike (a rebuild empties them): one per record
#: type, the link tables and the belief history; each backend adds its own.
DERIVED_TABLES = (
    *(table for table, _ in PROJECTION_KEYS),
    *(table for table, _ in LINK_TABLES),
    "belief_versions",
)
#: A history row's id: its belief and its place in that belief's history (oldest is 1).
VERSION_ID = "belief_id || '#' || row_number() OVER (PARTITION BY belief_id ORDER BY from_us, rid)"


def derived_queries(
    belief_columns: tuple[str, ...],
    version_columns: tuple[str, ...],
    where: str,
    *,
    versions_from: str = "belief_versions",
) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(table, SELECT id, columns…, columns)`` for every derived value both SQL backends
    store the same way; ``where`` scopes each query (PostgreSQL's tenant) or is empty;
    ``versions_from`` is what the history is read from (a backend that stores some versions
    without their document names a subquery that puts it back)."""
    queries = [
        (table, f"SELECT {key}, {', '.join(cols)} FROM {source} {where}", cols)
        for table, source, key, cols in (
            *((t, t, k, c) for t, k, c in INDEXED_COLUMNS),
            ("beliefs", "beliefs", "id", belief_columns),
            ("belief_versions", f"{versions_from} belief_versions", VERSION_ID, version_columns),
        )
    ]
    queries.extend(
        (table, f"SELECT {owner} || ' ' || belief_id FROM {table} {where}", ())
        for table, owner in LINK_TABLES
    )
    return queries


def derived_row(columns: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    """One row as ``{column: value}``; a stored document (bytes) is named by the digest of its
    canonical JSON (or of its raw bytes, should it not be JSON: that differs too)."""
    return {
        name: _digest(v) if isinstance(v, bytes | memoryview) else v
        for name, v in zip(columns, values, strict=True)
    }


def _digest(doc: bytes | memoryview) -> str:
    import hashlib

    raw = bytes(doc)
    with suppress(orjson.JSONDecodeError):
        raw = orjson.dumps(orjson.loads(raw), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()


__all__ = [
    "ADMISSIBLE_RETRIEVAL",
    "ADMISSIBLE_SECURITY",
    "ADMISSIBLE_TRUTH",
    "DERIVED_TABLES",
    "INDEXED_COLUMNS",
    "LINK_TABLES",
    "PROJECTION_KEYS",
    "BatchRow",
    "BeliefKeys",
    "ChainRow",
    "ProjectionRows",
    "batch_keys",
    "batch_rows",
    "belief_keys",
    "derived_queries",
    "derived_row",
    "equality_conditions",
    "log_pages",
    "status_conditions",
    "version_rows",
    "with_moved",
    "within_admissible",
]
