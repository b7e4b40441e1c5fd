"""Rebuild: prove every derived table is exactly what the log says, or make it so.

The design promise is "no state change without its event, no event without its state". A rebuild
checks it: every event of the live store is appended, sealed as it is (nothing is re-hashed into
a new chain), to an empty :meth:`~firewall.store.base.Store.scratch` store of the same backend
through :meth:`~firewall.store.base.Store.append_sealed`, the same apply path an import uses,
which also re-verifies every link. Then the two stores are compared table by table:

* every record document (:meth:`~firewall.store.base.Store.projection_docs`, canonical JSON);
* every other value a query reads (:meth:`~firewall.store.base.Store.derived_rows`): the axis and
  scoping columns recall filters on, the text index itself (FTS5's index, not only its content
  column; PostgreSQL's ``tsvector`` and BM25 statistics), the belief history, decision
  dependencies, contradiction members, binding ids.

An edit to any one of them, made behind the log's back, shows up as a :class:`Difference` naming
its table and id. A live row that cannot even be read (not JSON, not a valid record, NULL) is a
difference of kind ``corrupt``, never a decoder traceback.

``apply=True`` then replaces the live projections from the log
(:meth:`~firewall.store.base.Store.rebuild_projections`, one transaction on SQLite and
PostgreSQL) and compares again.

>>> from gnomon.firewall.store.memory import MemoryStore
>>> report = rebuild(MemoryStore())
>>> report.ok, report.events
(True, 0)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from gnomon.firewall.log.events import RECORD_TYPES
from gnomon.firewall.model.chain import ChainModel
from gnomon.firewall.model.errors import LogIntegrityError
from gnomon.firewall.model.heap import cyclic_gc_paused
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore

#: Events appended to the replay store per call (bounded memory, few calls).
BATCH = 5000
#: How many differences a report lists (the counts are always complete).
MAX_LISTED = 100


#: The model each document table holds.
MODELS: dict[str, type[ChainModel]] = dict(RECORD_TYPES)


@dataclass(frozen=True, slots=True)
class Difference:
    table: str
    id: str
    problem: str
    #: ``missing`` (the log has it, the live store not), ``extra`` (not derived from the log),
    #: ``differs``, or ``corrupt`` (the live row cannot be read as its record).
    kind: str = "differs"

    def to_json(self) -> dict[str, str]:
        return {"table": self.table, "id": self.id, "kind": self.kind, "problem": self.problem}


@dataclass(frozen=True, slots=True)
class Corrupt:
    """A live document row that is not a valid record: why."""

    reason: str


@dataclass(frozen=True, slots=True)
class RebuildReport:
    events: int
    tables: dict[str, int]  # rows per table, as rebuilt from the log
    differences: tuple[Difference, ...]
    difference_count: int
    applied: bool = False
    #: After ``apply``: the differences that remain (should be none).
    remaining: int = 0
    by_table: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.difference_count == 0 if not self.applied else self.remaining == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events": self.events,
            "tables": self.tables,
            "differences": self.difference_count,
            "differences_by_table": self.by_table,
            "listed": [d.to_json() for d in self.differences],
            "applied": self.applied,
            "remaining": self.remaining,
        }


def canonical(table: str, doc: object) -> bytes | Corrupt:
    """A document row in canonical JSON, or why it is not a valid record of its table."""
    if doc is None:
        return Corrupt("the document is NULL")
    if isinstance(doc, memoryview):
        doc = bytes(doc)
    if not isinstance(doc, bytes | str):
        return Corrupt(f"the document is stored as {type(doc).__name__}, not JSON text")
    try:
        parsed = orjson.loads(doc)
    except orjson.JSONDecodeError as exc:
        return Corrupt(f"the document is not valid JSON ({exc})")
    model = MODELS.get(table)
    if model is not None:
        try:
            model.model_validate_json(doc, strict=False)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = ".".join(str(p) for p in first.get("loc", ())) or "the document"
            return Corrupt(f"not a valid {model.__name__}: {where}: {first.get('msg')}")
    return orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS)


def snapshot(store: Store) -> dict[str, dict[str, bytes | Corrupt]]:
    """``{table: {id: canonical JSON}}`` of every projection row of ``store`` (a row that is
    not a valid record maps to :class:`Corrupt`)."""
    out: dict[str, dict[str, bytes | Corrupt]] = {}
    for table, ident, doc in store.projection_docs():
        out.setdefault(table, {})["NULL" if ident is None else str(ident)] = canonical(table, doc)
    return out


def derived(store: Store) -> dict[str, dict[str, dict[str, Any]]]:
    """``{table: {id: {column: value}}}`` of every derived value of ``store``."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for table, ident, values in store.derived_rows():
        out.setdefault(table, {})[ident] = values
    return out


def _differs(want: object, have: object) -> str:
    if isinstance(have, Corrupt):
        return f"corrupt: {have.reason}"
    if isinstance(want, dict) and isinstance(have, dict):
        columns = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        return "stored columns differ from the log's: " + ", ".join(columns)
    return "differs from the log's last version"


def compare(
    expected: dict[str, dict[str, Any]], live: dict[str, dict[str, Any]]
) -> Iterator[Difference]:
    """Differences between the log's tables (``expected``) and the live ones; rows are
    documents (:func:`snapshot`) or column maps (:func:`derived`)."""
    for table in sorted(set(expected) | set(live)):
        want, have = expected.get(table, {}), live.get(table, {})
        for ident in sorted(set(want) | set(have)):
            if ident not in have:
                yield Difference(table, ident, "missing from the live store", "missing")
            elif isinstance(have[ident], Corrupt):
                yield Difference(table, ident, _differs(None, have[ident]), "corrupt")
            elif ident not in want:
                yield Difference(table, ident, "not derived from the log", "extra")
            elif want[ident] != have[ident]:
                yield Difference(table, ident, _differs(want[ident], have[ident]))


def replay(store: Store, into: Store | None = None) -> Store:
    """``into`` (a fresh memory store by default) holding ``store``'s log, its projections
    rebuilt from it. An event that cannot be read is a :class:`LogIntegrityError`."""
    fresh = MemoryStore() if into is None else into
    with cyclic_gc_paused():  # the whole log's records are held at once (firewall.model.heap)
        _replay_into(store, fresh)
    return fresh


def _replay_into(store: Store, fresh: Store) -> None:
    batch = []
    seq = 0
    try:
        for event in store.events():
            seq = event.seq
            batch.append(event)
            if len(batch) >= BATCH:
                fresh.append_sealed(batch)
                batch = []
        if batch:
            fresh.append_sealed(batch)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        raise LogIntegrityError(
            seq + 1 if not batch else seq, f"the event cannot be read ({exc})"
        ) from exc


def _expected(store: Store) -> tuple[int, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    scratch = store.scratch()
    try:
        replay(store, scratch)
        return scratch.head()[0], dict(snapshot(scratch)), derived(scratch)
    finally:
        scratch.discard()


def _differences(
    store: Store, docs: dict[str, dict[str, Any]], rows: dict[str, dict[str, Any]]
) -> list[Difference]:
    """Document differences, then derived ones for rows whose document was not already named."""
    found = list(compare(docs, dict(snapshot(store))))
    named = {(d.table, d.id) for d in found}
    found.extend(d for d in compare(rows, derived(store)) if (d.table, d.id) not in named)
    return found


def rebuild(store: Store, *, apply: bool = False) -> RebuildReport:
    """Rebuild every projection from ``store``'s log and compare (see the module docstring)."""
    events, expected, rows = _expected(store)
    found = _differences(store, expected, rows)
    by_table: dict[str, int] = {}
    for diff in found:
        by_table[diff.table] = by_table.get(diff.table, 0) + 1
    remaining = 0
    if apply:
        store.rebuild_projections()
        remaining = len(_differences(store, expected, rows))
    return RebuildReport(
        events=events,
        tables={table: len(rows) for table, rows in sorted(expected.items())},
        differences=tuple(found[:MAX_LISTED]),
        difference_count=len(found),
        applied=apply,
        remaining=remaining,
        by_table=by_table,
    )


__all__ = [
    "Corrupt",
    "Difference",
    "RebuildReport",
    "canonical",
    "compare",
    "derived",
    "rebuild",
    "replay",
    "snapshot",
]
