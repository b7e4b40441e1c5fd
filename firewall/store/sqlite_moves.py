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

The batch is applied set-based: its rows go into a temporary table of the connection
(``temp.move_rows``, one ``executemany``), then one statement per phase reads them there: close
the open versions, one ``UPDATE … FROM`` per shape of move (the axes moved, from and to: the
count of rows it changed must be the count the shape has), one ``INSERT … SELECT`` of the new
versions in batch order. A batch names each belief once
(:func:`~firewall.log.moves.check_each_once`): two moves of one belief could not be applied in
order in one pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from gnomon.firewall.gate.gate import PINNED_RETRIEVAL
from gnomon.firewall.log.moves import MoveBatch, check_change, check_each_once
from gnomon.firewall.model.errors import StoreError
from gnomon.firewall.model.states import Axis
from gnomon.firewall.store import sqlite_schema as schema
from gnomon.firewall.store.keys import micros

#: The batch's rows while it is applied: one per belief, its shape (the axes it moves, from
#: and to: one ``UPDATE`` per shape), and each moved axis's ``to`` and ``from`` state in the
#: shape's order. A temporary table of this connection, emptied after each batch (and rolled
#: back with it).
_ROWS_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS move_rows (row INTEGER PRIMARY KEY, shape INTEGER NOT NULL, "
    "id TEXT NOT NULL, version INTEGER NOT NULL, "
    + ", ".join(f"to{i} TEXT, from{i} TEXT" for i in range(len(Axis)))
    + ")"
)
_INSERT_ROWS = (
    f"INSERT INTO temp.move_rows VALUES ({', '.join('?' for _ in range(4 + 2 * len(Axis)))})"
)
_NEW_VERSIONS = (
    f"INSERT INTO belief_versions ({', '.join(schema.VERSION_COLUMNS)}, move_seq, move_row) "
    f"SELECT b.id, m.version, ?1, NULL, "
    + ", ".join(f"b.{c}" for c in schema.VERSION_COLUMNS[4:-1])
    + ", x'', ?2, m.row FROM temp.move_rows m JOIN beliefs b ON b.id = m.id ORDER BY m.row"
)


def _state(axis: Axis, axes: tuple[Axis, ...]) -> str:
    """SQL for ``axis``'s state after the move: the moved value (the row's ``to`` column, in
    the shape's order) or the document's own."""
    if axis in axes:
        return f"m.to{axes.index(axis)}"
    return f"json_extract(CAST(doc AS TEXT), '$.{axis.value}_status')"


def _update_sql(axes: tuple[Axis, ...]) -> str:
    """One shape's rows applied in one statement. Parameters: ``?1`` the time text, ``?2``
    the shape."""
    sets = ", ".join(f"{a.value} = m.to{i}" for i, a in enumerate(axes))
    paths = ", ".join(f"'$.{a.value}_status', m.to{i}" for i, a in enumerate(axes))
    checks = " AND ".join(
        f"json_extract(CAST(doc AS TEXT), '$.{a.value}_status') = m.from{i}"
        for i, a in enumerate(axes)
    )
    moved = (
        f"CAST(json_set(CAST(doc AS TEXT), {paths}, '$.version', m.version, '$.updated_at', ?1) "
        "AS BLOB)"
    )
    # the new document is sealed as the host writes it (the seal of the one read was checked)
    sql = (
        f"UPDATE beliefs SET {sets}, doc = {moved}, "
        f"seal = {schema.ROW_SEAL_FUNCTION}({moved}) FROM temp.move_rows m "
        "WHERE m.shape = ?2 AND beliefs.id = m.id "
        f"AND json_extract(CAST(doc AS TEXT), '$.version') = m.version - 1 AND {checks}"
    )
    if Axis.SECURITY in axes or Axis.RETRIEVAL in axes:
        # the gate's cross-axis invariant on the version the move makes
        security, retrieval = _state(Axis.SECURITY, axes), _state(Axis.RETRIEVAL, axes)
        for pinned, allowed in PINNED_RETRIEVAL.items():
            listed = ", ".join(f"'{r}'" for r in sorted(allowed))
            sql += f" AND NOT ({security} = '{pinned}' AND {retrieval} NOT IN ({listed}))"
    return sql


def apply_moves(
    conn: sqlite3.Connection,
    batch: MoveBatch,
    seq: int,
    check_row: Callable[[bytes, bytes | None], None] | None = None,
) -> None:
    """Apply ``batch``, sealed as event ``seq``, inside the caller's transaction (see the
    module docstring). ``check_row(doc, seal)`` raises for a stored row that is not the
    host's: each moved row is checked before its document is rewritten and resealed."""
    #: each shape of move (the axes moved, from and to), checked once: its number and axes
    shapes: dict[tuple[tuple[str, str, str], ...], int] = {}
    axes_of: list[tuple[Axis, ...]] = []
    counts: list[int] = []
    rows: list[tuple[Any, ...]] = []
    pad = (None, None) * len(Axis)
    for row, (belief_id, version, _, changes) in enumerate(batch.rows):
        shape = tuple([(axis._value_, before, after) for _, axis, before, after in changes])
        number = shapes.get(shape)
        if number is None:
            for _, axis, before, after in changes:
                # re-checked here too: the batch object is not trusted to be the one add() built
                check_change(axis, before, after, batch.authority)
            number = shapes[shape] = len(axes_of)
            axes_of.append(tuple(axis for _, axis, _, _ in changes))
            counts.append(0)
        counts[number] += 1
        states = tuple([s for _, before, after in shape for s in (after, before)])
        rows.append((row, number, belief_id, version, *states, *pad[len(states) :]))
    try:
        check_each_once([r[2] for r in rows])
    except ValueError as exc:
        raise StoreError(
            f"{exc}; nothing was written", hint="split the moves into batches"
        ) from exc
    conn.execute(_ROWS_DDL)
    conn.execute("DELETE FROM temp.move_rows")
    conn.executemany(_INSERT_ROWS, rows)
    if check_row is not None:
        for doc, tag in conn.execute(
            "SELECT b.doc, b.seal FROM temp.move_rows m JOIN beliefs b ON b.id = m.id"
        ):
            check_row(doc, tag)
    # the open versions are closed first: the rule for keeping a document reads the belief's
    conn.execute(schema.CLOSE_VERSION_BY_MOVE, (micros(batch.now),))
    for number, axes in enumerate(axes_of):
        changed = conn.execute(_update_sql(axes), (batch.now_text, number)).rowcount
        if changed != counts[number]:
            raise StoreError(
                f"a move batch expected {counts[number]} beliefs at their recorded version and "
                f"states, found {changed}: a belief moved since it was read, or its stored "
                "document was edited; nothing was written",
                hint="run the move again (it re-reads the beliefs); `gnomon rebuild` shows edits",
            )
    conn.execute(_NEW_VERSIONS, (micros(batch.now), seq))
    conn.execute("DELETE FROM temp.move_rows")


__all__ = ["apply_moves"]
