"""SQLite's fast path for a move batch (:mod:`firewall.log.moves`): the moves applied in SQL.

Each belief's new version is its stored document with the moved axes, the version and
``updated_at`` replaced (``json_set``), exactly what :func:`firewall.log.moves.apply_move` derives
from the same document in Python (a rebuild compares the two). No document is parsed into a
record: at a million beliefs that parse alone would take longer than the target for the whole
move.

The move is checked against the stored **document**, not the axis columns: an ``UPDATE`` only
matches the row whose document is at the version before and in every ``from`` state the batch
names, and whose new version keeps the gate's cross-axis invariant (quarantined stays
privileged-only or blocked); one row that does not match rolls the whole transaction back (a
belief changed since the candidates were read, or a document edited behind the log's back).
Each transition is checked against the gate's table here again (it was when the batch was
built, :meth:`firewall.log.moves.MoveBatch.add`), and by every reader of the log.

One document is written per belief (schema 10): the belief's. Its new history row holds no
document (the open version is the belief's current one) and names the batch event and row
(``move_seq``, ``move_row``), from which reads derive the revisions the move records; the row it
closes keeps no copy either (see :mod:`firewall.store.sqlite_schema`, version 10).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from gnomon.firewall.gate.gate import PINNED_RETRIEVAL
from gnomon.firewall.log.moves import MoveBatch, check_change
from gnomon.firewall.model.errors import StoreError
from gnomon.firewall.model.states import Axis
from gnomon.firewall.store import sqlite_schema as schema
from gnomon.firewall.store.keys import micros

#: The columns a new version row copies from the updated ``beliefs`` row, in
#: :data:`~firewall.store.sqlite_schema.VERSION_COLUMNS` order after ``until_us``.
_COPIED = ", ".join(schema.VERSION_COLUMNS[4:-1])

_NEW_VERSION = (
    f"INSERT INTO belief_versions ({', '.join(schema.VERSION_COLUMNS)}, move_seq, move_row) "
    f"SELECT id, ?, ?, NULL, {_COPIED}, x'', ?, ? FROM beliefs WHERE id = ?"
)


def _state(axis: Axis, axes: tuple[Axis, ...]) -> str:
    """SQL for ``axis``'s state after the move: the moved value (the row's ``to`` parameter,
    in ``sets`` order) or the document's own."""
    if axis in axes:
        return f"?{axes.index(axis) + 1}"
    return f"json_extract(CAST(doc AS TEXT), '$.{axis.value}_status')"


def _update_sql(axes: tuple[Axis, ...]) -> str:
    """Numbered parameters: ``?1..?n`` the new states, then version, time, id, the version
    before and the ``from`` states."""
    n = len(axes)
    sets = ", ".join(f"{a.value} = ?{i + 1}" for i, a in enumerate(axes))
    paths = ", ".join(f"'$.{a.value}_status', ?{i + 1}" for i, a in enumerate(axes))
    checks = " AND ".join(
        f"json_extract(CAST(doc AS TEXT), '$.{a.value}_status') = ?{n + 5 + i}"
        for i, a in enumerate(axes)
    )
    sql = (
        f"UPDATE beliefs SET {sets}, doc = CAST(json_set(CAST(doc AS TEXT), {paths}, "
        f"'$.version', ?{n + 1}, '$.updated_at', ?{n + 2}) AS BLOB) "
        f"WHERE id = ?{n + 3} AND json_extract(CAST(doc AS TEXT), '$.version') = ?{n + 4} "
        f"AND {checks}"
    )
    if Axis.SECURITY in axes or Axis.RETRIEVAL in axes:
        # the gate's cross-axis invariant on the version the move makes
        security, retrieval = _state(Axis.SECURITY, axes), _state(Axis.RETRIEVAL, axes)
        for pinned, allowed in PINNED_RETRIEVAL.items():
            listed = ", ".join(f"'{r}'" for r in sorted(allowed))
            sql += f" AND NOT ({security} = '{pinned}' AND {retrieval} NOT IN ({listed}))"
    return sql


def apply_moves(conn: sqlite3.Connection, batch: MoveBatch, seq: int) -> None:
    """Apply ``batch``, sealed as event ``seq``, inside the caller's transaction (see the
    module docstring)."""
    at, at_us = batch.now_text, micros(batch.now)
    #: the rows of each shape of move (the axes moved, from and to), checked once per shape
    groups: dict[tuple[tuple[str, str, str], ...], list[tuple[Any, ...]]] = {}
    axes_of: dict[tuple[tuple[str, str, str], ...], tuple[Axis, ...]] = {}
    closes: list[tuple[int, str]] = []
    versions: list[tuple[int, int, int, int, str]] = []
    for row, (belief_id, version, _, changes) in enumerate(batch.rows):
        shape = tuple([(axis._value_, before, after) for _, axis, before, after in changes])
        rows = groups.get(shape)
        if rows is None:
            for _, axis, before, after in changes:
                # re-checked here too: the batch object is not trusted to be the one add() built
                check_change(axis, before, after, batch.authority)
            rows = groups[shape] = []
            axes_of[shape] = tuple(axis for _, axis, _, _ in changes)
        rows.append(
            (
                *(after for _, _, after in shape),
                version,
                at,
                belief_id,
                version - 1,
                *(before for _, before, _ in shape),
            )
        )
        closes.append((at_us, belief_id))
        versions.append((version, at_us, seq, row, belief_id))
    # the open versions are closed first: the rule for keeping a document reads the belief's
    conn.executemany(schema.CLOSE_VERSION_BY_MOVE, closes)
    for shape, rows in groups.items():
        cur = conn.executemany(_update_sql(axes_of[shape]), rows)
        if cur.rowcount != len(rows):
            raise StoreError(
                f"a move batch expected {len(rows)} beliefs at their recorded version and states, "
                f"found {cur.rowcount}: a belief moved since it was read, or its stored document "
                "was edited; nothing was written",
                hint="run the move again (it re-reads the beliefs); `gnomon rebuild` shows edits",
            )
    conn.executemany(_NEW_VERSION, versions)


__all__ = ["apply_moves"]
