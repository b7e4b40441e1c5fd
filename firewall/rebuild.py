"""Rebuild: prove the projections are exactly what the log says, or make them so.

The design promise is "no state change without its event, no event without its state". A rebuild
checks it: every event of the live store is appended, sealed as it is (nothing is re-hashed into
a new chain), to a fresh :class:`~firewall.store.memory.MemoryStore` through
:meth:`~firewall.store.base.Store.append_sealed`, the same apply path an import uses, which also
re-verifies every link. Then both stores' projections are snapshotted
(:meth:`~firewall.store.base.Store.projection_docs`, each document in canonical JSON) and compared
record by record. A row edited, added or deleted behind the log's back shows up as a difference
naming its table and id.

``apply=True`` then replaces the live projections from the log
(:meth:`~firewall.store.base.Store.rebuild_projections`, one transaction on SQLite and
PostgreSQL) and compares again.

>>> from firewall.store.memory import MemoryStore
>>> report = rebuild(MemoryStore())
>>> report.ok, report.events
(True, 0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from firewall.store.base import Store
from firewall.store.memory import MemoryStore

#: Events appended to the replay store per call (bounded memory, few calls).
BATCH = 5000
#: How many differences a report lists (the counts are always complete).
MAX_LISTED = 100


@dataclass(frozen=True, slots=True)
class Difference:
    table: str
    id: str
    problem: str  # "missing from the live store" | "not derived from the log" | "differs"

    def to_json(self) -> dict[str, str]:
        return {"table": self.table, "id": self.id, "problem": self.problem}


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


def snapshot(store: Store) -> dict[str, dict[str, bytes]]:
    """``{table: {id: canonical JSON}}`` of every projection row of ``store``."""
    out: dict[str, dict[str, bytes]] = {}
    loads, dumps, sort = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS
    for table, ident, doc in store.projection_docs():
        out.setdefault(table, {})[ident] = dumps(loads(doc), option=sort)
    return out


def compare(
    expected: dict[str, dict[str, bytes]], live: dict[str, dict[str, bytes]]
) -> Iterable[Difference]:
    """Differences between the log's projections (``expected``) and the live ones."""
    for table in sorted(set(expected) | set(live)):
        want, have = expected.get(table, {}), live.get(table, {})
        for ident in sorted(set(want) | set(have)):
            if ident not in have:
                yield Difference(table, ident, "missing from the live store")
            elif ident not in want:
                yield Difference(table, ident, "not derived from the log")
            elif want[ident] != have[ident]:
                yield Difference(table, ident, "differs from the log's last version")


def replay(store: Store) -> MemoryStore:
    """A fresh memory store holding ``store``'s log, its projections rebuilt from it."""
    fresh = MemoryStore()
    batch = []
    for event in store.events():
        batch.append(event)
        if len(batch) >= BATCH:
            fresh.append_sealed(batch)
            batch = []
    if batch:
        fresh.append_sealed(batch)
    return fresh


def rebuild(store: Store, *, apply: bool = False) -> RebuildReport:
    """Rebuild every projection from ``store``'s log and compare (see the module docstring)."""
    rebuilt = replay(store)
    expected = snapshot(rebuilt)
    events = rebuilt.head()[0]
    rebuilt.close()
    found = list(compare(expected, snapshot(store)))
    by_table: dict[str, int] = {}
    for diff in found:
        by_table[diff.table] = by_table.get(diff.table, 0) + 1
    remaining = 0
    if apply:
        store.rebuild_projections()
        remaining = sum(1 for _ in compare(expected, snapshot(store)))
    return RebuildReport(
        events=events,
        tables={table: len(rows) for table, rows in sorted(expected.items())},
        differences=tuple(found[:MAX_LISTED]),
        difference_count=len(found),
        applied=apply,
        remaining=remaining,
        by_table=by_table,
    )


__all__ = ["Difference", "RebuildReport", "compare", "rebuild", "replay", "snapshot"]
