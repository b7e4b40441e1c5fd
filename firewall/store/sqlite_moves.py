"""SQLite's fast path for a move batch (:mod:`firewall.moves`): the moves applied in SQL.

Each belief's new version is its stored document with the moved axes, the version and
``updated_at`` replaced (``json_set``), exactly what :func:`firewall.moves.apply_move` derives
from the same document in Python (a rebuild compares the two). No document is parsed into a
record: at a million beliefs that parse alone would take longer than the target for the whole
move.

The move is checked against the stored **document**, not the axis columns: an ``UPDATE`` only
matches the row whose document is at the version before and in every ``from`` state the batch
names, and one row that does not match rolls the whole transaction back (a belief changed by
someone else since the candidates were read, or a document edited behind the log's back). The
transitions themselves were checked against the gate's table when the batch was built
(:meth:`firewall.moves.MoveBatch.add`), and are checked again by every reader of the log.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from firewall.errors import StoreError
from firewall.moves import MoveBatch
from firewall.states import Axis
from firewall.store import sqlite_schema as schema
from firewall.store.keys import micros

#: The columns a new version row copies from the updated ``beliefs`` row, in
#: :data:`~firewall.store.sqlite_schema.VERSION_COLUMNS` order after ``until_us``.
_COPIED = ", ".join(schema.VERSION_COLUMNS[4:-1])

_NEW_VERSION = (
    f"INSERT INTO belief_versions ({', '.join(schema.VERSION_COLUMNS)}) "
    f"SELECT id, ?, ?, NULL, {_COPIED}, doc FROM beliefs WHERE id = ?"
)


def _update_sql(axes: tuple[Axis, ...]) -> str:
    sets = ", ".join(f"{a.value} = ?" for a in axes)
    paths = ", ".join(f"'$.{a.value}_status', ?" for a in axes)
    checks = " AND ".join(
        f"json_extract(CAST(doc AS TEXT), '$.{a.value}_status') = ?" for a in axes
    )
    return (
        f"UPDATE beliefs SET {sets}, doc = CAST(json_set(CAST(doc AS TEXT), {paths}, "
        "'$.version', ?, '$.updated_at', ?) AS BLOB) "
        f"WHERE id = ? AND json_extract(CAST(doc AS TEXT), '$.version') = ? AND {checks}"
    )


def apply_moves(conn: sqlite3.Connection, batch: MoveBatch) -> None:
    """Apply ``batch`` inside the caller's transaction (see the module docstring)."""
    at, at_us = batch.now_text, micros(batch.now)
    groups: dict[tuple[Axis, ...], list[tuple[Any, ...]]] = {}
    closes: list[tuple[int, str]] = []
    versions: list[tuple[int, int, str]] = []
    revisions: list[tuple[str, str, int, bytes]] = []
    reasons = list(batch.reasons)
    related = list(batch.related)
    authority = batch.authority.value
    dumps = orjson.dumps
    for belief_id, version, index, changes in batch.rows:
        axes = tuple(axis for _, axis, _, _ in changes)
        groups.setdefault(axes, []).append(
            (
                *(after for _, _, _, after in changes),
                *(after for _, _, _, after in changes),
                version,
                at,
                belief_id,
                version - 1,
                *(before for _, _, before, _ in changes),
            )
        )
        closes.append((at_us, belief_id))
        versions.append((version, at_us, belief_id))
        for rev, axis, before, after in changes:
            doc = {
                "id": rev,
                "belief_id": belief_id,
                "axis": axis.value,
                "from_state": before,
                "to_state": after,
                "authority": authority,
                "reason": reasons[index],
                "grant_id": None,
                "related_ids": related,
                "created_at": at,
            }
            revisions.append((rev, belief_id, at_us, dumps(doc)))
    for axes, rows in groups.items():
        cur = conn.executemany(_update_sql(axes), rows)
        if cur.rowcount != len(rows):
            raise StoreError(
                f"a move batch expected {len(rows)} beliefs at their recorded version and states, "
                f"found {cur.rowcount}: a belief moved since it was read, or its stored document "
                "was edited; nothing was written",
                hint="run the move again (it re-reads the beliefs); `gnomon rebuild` shows edits",
            )
    conn.executemany(schema.CLOSE_VERSION, closes)
    conn.executemany(_NEW_VERSION, versions)
    conn.executemany(schema.UPSERT_REVISION, revisions)


__all__ = ["apply_moves"]
