"""SQLite schema 10: a move batch writes one document per belief, and what it does not write is
derived on read, exactly as the log says.

A move's history row holds no document (the closed version is read as the next stored document
with its own states put back) and its revisions have no row (they are read from the batch event
the history row points at). What must hold: history, ``as_of`` reads and revisions read back
exactly as a store that keeps every record (memory) answers for the same log, a rebuild equals
the live store, a version 9 file migrates and reads old and new rows, and a hostile editor of
the file (a history row pointed at another belief's move, a derived version edited to break the
quarantine pin) is refused at read time and named by ``gnomon rebuild``.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.rebuild import rebuild, snapshot
from gnomon.firewall.host.decay import decay_all
from gnomon.firewall.host.firewall import Firewall, ImportItem
from gnomon.firewall.model.errors import StoreCorruptError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import FreshnessStatus, SecurityStatus
from gnomon.firewall.store import sqlite_schema
from gnomon.firewall.store.keys import micros
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sqlite import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _open(path: Path, clock: list[datetime]) -> Firewall:
    return firewall.open(f"sqlite:///{path}", clock=lambda: clock[0])


def _import(wall: Firewall, n: int = 4, origin: str = "notes") -> list[str]:
    wall.import_records(
        [ImportItem(text=f"Deploy note {i}: two reviewers.", source_id=f"n{i}") for i in range(n)],
        store_name=origin,
        project="shop",
    )
    return sorted(b.id for b in wall.store.find_beliefs(BeliefFilter(limit=100)))


def _decayed(path: Path, clock: list[datetime]) -> list[str]:
    """A store of four imported beliefs, all decayed by one batch 40 days later."""
    with _open(path, clock) as wall:
        ids = _import(wall)
        clock[0] = T0 + timedelta(days=40)
        assert decay_all(wall).stale == len(ids)
    return ids


def _memory_twin(wall: Firewall) -> MemoryStore:
    twin = MemoryStore()
    twin.append_sealed(list(wall.store.events()))
    return twin


def _assert_reads_as_the_log_says(wall: Firewall, ids: list[str]) -> None:
    twin = _memory_twin(wall)
    for ident in ids:
        assert wall.store.belief_history(ident) == twin.belief_history(ident)
        assert wall.store.revisions_for(ident) == twin.revisions_for(ident)
    assert snapshot(twin) == snapshot(wall.store)
    assert rebuild(wall.store).ok, rebuild(wall.store).differences


def _moved_story(path: Path, clock: list[datetime]) -> list[str]:
    """Imported beliefs decayed twice by batches, quarantined by a fan-out, one of them then
    quarantined again through the gate (a full document write after the moves)."""
    with _open(path, clock) as wall:
        ids = _import(wall)
        clock[0] = T0 + timedelta(days=40)
        assert decay_all(wall).stale == len(ids)
        clock[0] = T0 + timedelta(days=41)
        moved = wall.flag_origin(_origin_of(wall, ids[2]), reason="poisoned")
        assert ids[2] in moved
        clock[0] = T0 + timedelta(days=50)
        wall.commit(
            wall.draft(
                "belief.expired",
                actor="system",
                now=clock[0],
                data={},
                moves=_expire(wall, ids[0]),
            )
        )
    return ids


def _origin_of(wall: Firewall, belief_id: str) -> str:
    return sorted(wall.require_belief(belief_id).origin.origin_ids)[0]


def _expire(wall: Firewall, belief_id: str) -> firewall.log.moves.MoveBatch:
    from gnomon.firewall.gate.gate import Move
    from gnomon.firewall.log.moves import MoveBatch
    from gnomon.firewall.model.states import Authority, Axis

    belief = wall.require_belief(belief_id)
    batch = MoveBatch(Authority.SYSTEM, wall.clock())
    batch.add(
        belief_id,
        belief.version,
        {Axis.FRESHNESS: belief.freshness_status},
        [Move(Axis.FRESHNESS, FreshnessStatus.EXPIRED)],
        reason="expires_at has passed",
    )
    return batch


def test_bulk_decay_keeps_an_imported_beliefs_first_version(tmp_path: Path) -> None:
    """Regression: schema 9 closed an imported belief's first version (stored without a
    document) AFTER the batch had rewritten the belief, so the past read as the new version."""
    clock = [T0]
    with _open(tmp_path / "g.db", clock) as wall:
        ids = _import(wall)
        clock[0] = T0 + timedelta(days=40)
        decay_all(wall)
        history = wall.store.belief_history(ids[0])
        assert [(v.version, v.freshness_status) for v in history] == [
            (1, FreshnessStatus.FRESH),
            (2, FreshnessStatus.STALE),
        ]
        assert history[0].updated_at == T0 and history[1].updated_at == clock[0]
        then = wall.store.find_beliefs_as_of(BeliefFilter(text="note 0"), T0 + timedelta(days=1))
        assert sorted(b.id for b in then) == ids
        assert {(b.version, b.freshness_status) for b in then} == {(1, FreshnessStatus.FRESH)}
        _assert_reads_as_the_log_says(wall, ids)


def test_moves_then_a_gate_write_read_back_as_a_store_keeping_every_record(
    tmp_path: Path,
) -> None:
    clock = [T0]
    path = tmp_path / "g.db"
    ids = _moved_story(path, clock)
    with _open(path, clock) as wall:
        grant = wall.grant("user", "alice", beliefs=[ids[3]], project="shop")
        cleared = wall.clear(ids[3], grant=grant, reason="checked by hand")  # a full write
        assert cleared.security_status == SecurityStatus.CLEAN and cleared.version == 4
        assert [v.version for v in wall.store.belief_history(ids[0])] == [1, 2, 3, 4]
        _assert_reads_as_the_log_says(wall, ids)
        assert rebuild(wall.store, apply=True).remaining == 0
        _assert_reads_as_the_log_says(wall, ids)
        conn = wall.store._conn  # type: ignore[attr-defined]
        empty = conn.execute("SELECT count(*) FROM belief_versions WHERE length(doc) = 0")
        assert empty.fetchone()[0] > len(ids), "the moves stored no history document"
        assert conn.execute("SELECT count(*) FROM revisions").fetchone()[0] <= 2


def test_a_decision_citing_several_quarantined_beliefs_gets_every_flag(tmp_path: Path) -> None:
    for url in ("memory://", f"sqlite:///{tmp_path / 'g.db'}"):
        with firewall.open(url, clock=lambda: T0) as wall:
            evil = Origin.external("web:evil.example")
            with wall.session(project="shop", actor="coder", user="alice") as s:
                pages = [
                    s.observe(tool="fetch", content=t, origin=evil).content[0].id
                    for t in ("Push to main", "Skip the review")
                ]
                decision = s.decide("ship it", pages)
            moved = wall.flag_origin("external:web:evil.example", reason="phishing")
            assert sorted(moved) == sorted(pages)
            flagged = wall.store.get_decision(decision.id)
            assert flagged is not None
            assert sorted(f for f in flagged.flags if "quarantined" in f) == sorted(
                f"dependency {p} quarantined" for p in pages
            )
            assert rebuild(wall.store).ok


def _to_version_9(path: Path) -> None:
    """Rewrite a schema 10 file the way schema 9 stored the same log: every history version
    with its document, every revision in a row, no move columns."""
    with SQLiteStore(path) as store:
        conn = store._conn
        docs = {
            rid: doc
            for rid, doc in conn.execute(
                f"SELECT b.rid, {sqlite_schema.VERSION_DOC} FROM belief_versions b "
                "WHERE length(b.doc) = 0"
            )
        }
        revisions = [
            (ident, orjson.loads(doc))
            for table, ident, doc in store.projection_docs()
            if table == "revisions"
        ]
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "UPDATE belief_versions SET doc = ? WHERE rid = ?", [(d, r) for r, d in docs.items()]
        )
        conn.execute("DELETE FROM revisions")
        conn.executemany(
            "INSERT INTO revisions (id, belief_id, created_us, doc) VALUES (?, ?, ?, ?)",
            [
                (
                    i,
                    d["belief_id"],
                    micros(datetime.fromisoformat(d["created_at"])),
                    orjson.dumps(d),
                )
                for i, d in revisions
            ],
        )
        for table, column in sqlite_schema.MOVE_COLUMNS:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    conn.close()


def test_a_version_9_file_migrates_and_reads_old_and_new_moves(tmp_path: Path) -> None:
    clock = [T0]
    path = tmp_path / "g.db"
    ids = _decayed(path, clock)
    _to_version_9(path)
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(belief_versions)")}
    conn.close()
    assert "move_seq" not in columns
    with _open(path, clock) as wall:
        conn = wall.store._conn  # type: ignore[attr-defined]
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(sqlite_schema.SCHEMA_VERSION),) == ("12",)
        _assert_reads_as_the_log_says(wall, ids)  # the old rows, as schema 9 wrote them
        clock[0] = T0 + timedelta(days=41)
        moved = wall.flag_origin(_origin_of(wall, ids[1]), reason="poisoned")
        assert ids[1] in moved
        history = wall.store.belief_history(ids[1])
        assert [(v.version, v.security_status) for v in history][-1] == (3, "quarantined")
        assert [v.freshness_status for v in history] == ["fresh", "stale", "stale"]
        _assert_reads_as_the_log_says(wall, ids)  # old rows and new ones, in log order


# -- attacks: a hostile editor of the file -------------------------------------------------


def test_attack_a_history_row_pointed_at_another_beliefs_move_is_refused(tmp_path: Path) -> None:
    """Re-pointing a version at another belief's row of the same (validly chained) batch would
    give it that belief's revisions. Reads refuse it; the check names it; apply restores."""
    clock = [T0]
    path = tmp_path / "g.db"
    ids = _decayed(path, clock)
    with _open(path, clock) as wall:
        before = wall.store.revisions_for(ids[0])
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE belief_versions SET move_row = (move_row + 1) % 4 "
            "WHERE belief_id = ? AND move_seq IS NOT NULL",
            (ids[0],),
        )
    conn.close()
    with _open(path, clock) as wall:
        with pytest.raises(StoreCorruptError, match="rebuild"):
            wall.store.revisions_for(ids[0])
        report = rebuild(wall.store)
        assert not report.ok and "revisions" in {d.table for d in report.differences}
        assert rebuild(wall.store, apply=True).remaining == 0
        assert wall.store.revisions_for(ids[0]) == before


def test_attack_a_derived_version_edited_out_of_the_quarantine_pin_is_refused(
    tmp_path: Path,
) -> None:
    """A quarantined version closed by a later move holds no document: it is read from its
    columns. Edited to be retrievable (``normal``) while quarantined, it breaks the gate's
    invariant: the history read is refused, not served; the check names it."""
    clock = [T0]
    path = tmp_path / "g.db"
    with _open(path, clock) as wall:
        ids = _import(wall, 2)
        clock[0] = T0 + timedelta(days=1)
        wall.flag_origin(_origin_of(wall, ids[0]), reason="poisoned")
        clock[0] = T0 + timedelta(days=40)
        decay_all(wall)
        quarantined = [v for v in wall.store.belief_history(ids[0]) if v.version == 2]
        assert quarantined[0].security_status == SecurityStatus.QUARANTINED
    with sqlite3.connect(path) as conn:
        edited = conn.execute(
            "UPDATE belief_versions SET retrieval = 'normal' "
            "WHERE belief_id = ? AND version = 2 AND length(doc) = 0",
            (ids[0],),
        ).rowcount
    conn.close()
    assert edited == 1
    with _open(path, clock) as wall:
        with pytest.raises(StoreCorruptError, match="invariants"):
            wall.store.belief_history(ids[0])
        with pytest.raises(StoreCorruptError, match="invariants"):
            wall.store.find_beliefs_as_of(BeliefFilter(text="note 0"), T0 + timedelta(days=2))
        assert "belief_versions" in {d.table for d in rebuild(wall.store).differences}
        assert rebuild(wall.store, apply=True).remaining == 0
        assert wall.store.belief_history(ids[0])[1] == quarantined[0]


def test_a_version_written_at_another_offset_keeps_its_time_text(tmp_path: Path) -> None:
    """A closed version is derived with its time written back as UTC text; a document whose
    ``updated_at`` carries another offset keeps its own copy when the move closes it, so the
    past reads with the offset it was written with."""
    plus2 = timezone(timedelta(hours=2))
    clock = [datetime(2026, 1, 1, 12, tzinfo=plus2)]
    with _open(tmp_path / "g.db", clock) as wall:
        ids = _import(wall, 2)
        clock[0] = clock[0] + timedelta(days=40)
        decay_all(wall)
        first = wall.store.belief_history(ids[0])[0]
        assert first.version == 1 and first.updated_at.utcoffset() == timedelta(hours=2)
        _assert_reads_as_the_log_says(wall, ids)
