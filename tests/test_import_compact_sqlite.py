"""SQLite store schema 8: an import batch keeps one document per record.

Claims and evidence items of a batch have no row of their own (``batch_members`` points each
claim at its event and row), and a belief's first history version holds no document while it is
the current one. These tests pin that what reads return is exactly what the log says:

* claims, evidence and history of imported beliefs read back as the expanded batch documents,
  before and after the belief moves (the closing version takes its document along);
* evidence added later to an imported claim comes after the batch's item;
* an attack on the file (``batch_members`` pointed at another record's row) is refused on read,
  named by ``rebuild`` and repaired by ``rebuild --apply``;
* a version 7 file opens, migrates, and reads its old full rows next to new compact ones.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.host.firewall import Firewall, ImportItem
from gnomon.firewall.log.batch import IMPORTS, expand
from gnomon.firewall.model.chain import Belief, Claim, EvidenceItem
from gnomon.firewall.model.errors import StoreCorruptError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    Authority,
    EvidenceQuality,
    EvidenceRelation,
    SecurityStatus,
)
from gnomon.firewall.store import sqlite_schema
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import make_draft, make_origin, make_records

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _items(n: int, prefix: str = "m") -> list[ImportItem]:
    return [
        ImportItem(text=f"memory {prefix}{i} about the deploy", source_id=f"{prefix}{i}")
        for i in range(n)
    ]


def _open(path: Path, clock: list[datetime] | None = None) -> Firewall:
    times = clock if clock is not None else [NOW]
    return firewall.open(f"sqlite:///{path}", clock=lambda: times[0])


def _conn(wall: Firewall) -> sqlite3.Connection:
    conn: sqlite3.Connection = wall.store._conn  # type: ignore[attr-defined]
    return conn


def _expanded(wall: Firewall) -> dict[str, list[dict[str, object]]]:
    docs: dict[str, list[dict[str, object]]] = {"claims": [], "evidence": [], "beliefs": []}
    for event in wall.store.events():
        if IMPORTS in event.payload:
            for table, found in expand(event.payload[IMPORTS]).items():
                docs.setdefault(table, []).extend(found)
    return docs


def test_batch_records_read_back_as_the_log_says(tmp_path: Path) -> None:
    with _open(tmp_path / "g.db") as wall:
        wall.import_records(_items(30), store_name="mem0", project="p", batch_size=7, bind=True)
        conn = _conn(wall)
        # one document per record: no claim or evidence row, history rows without documents
        assert conn.execute("SELECT count(*) FROM claims").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM evidence").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM batch_members").fetchone() == (30,)
        assert conn.execute(
            "SELECT count(*) FROM belief_versions WHERE length(doc) = 0"
        ).fetchone() == (30,)
        docs = _expanded(wall)
        for claim, evidence, belief in zip(
            docs["claims"], docs["evidence"], docs["beliefs"], strict=True
        ):
            c = wall.store.get_claim(str(claim["id"]))
            assert c == Claim.model_validate(claim, strict=False)
            got = wall.store.get_evidence(str(claim["id"]))
            assert got.items == [EvidenceItem.model_validate(evidence, strict=False)]
            b = Belief.model_validate(belief, strict=False)
            assert wall.store.belief_history(b.id) == [b]
            assert wall.store.find_beliefs_as_of(BeliefFilter(text=b.statement), NOW)[0] == b
        assert rebuild(wall.store).ok


def test_a_moved_batch_belief_keeps_its_first_version(tmp_path: Path) -> None:
    clock = [NOW]
    with _open(tmp_path / "g.db", clock) as wall:
        wall.import_records(_items(5), store_name="mem0", project="p")
        first = wall.store.find_beliefs(BeliefFilter(text="m3", limit=1))[0]
        clock[0] = NOW + timedelta(hours=1)
        moved = wall.quarantine(first.id, reason="poisoned", authority=Authority.SENTINEL)
        assert moved.security_status == SecurityStatus.QUARANTINED
        history = wall.store.belief_history(first.id)
        assert history == [first, moved]  # the closed version took the old document along
        before = wall.store.find_beliefs_as_of(BeliefFilter(text="m3"), NOW + timedelta(minutes=1))
        assert before == [first]
        assert wall.store.find_beliefs_as_of(BeliefFilter(text="m3"), clock[0]) == [moved]
        # later evidence on an imported claim comes after the batch's own item
        item = EvidenceItem(
            id="evi_later",
            claim_id=first.claim_id,
            source="obs_x",
            relation=EvidenceRelation.SUPPORTS,
            quality=EvidenceQuality.DIRECT_OBSERVATION,
            independence_group="tool:ci",
            origin=make_origin("tool", "ci"),
            observed_at=clock[0],
        )
        wall.store.commit([make_draft(make_records(evidence=[item]))])
        items = wall.store.get_evidence(first.claim_id).items
        assert [i.id for i in items][1:] == ["evi_later"] and items[0].source == "mem0:m3"
        assert rebuild(wall.store).ok


def test_a_batch_member_pointed_at_another_row_is_refused(tmp_path: Path) -> None:
    """Attack: an edit of the file re-points an imported claim at another record's row of the
    same (validly chained) batch, to make the claim say something else. Reads refuse it, the
    rebuild check names it, and ``rebuild --apply`` restores it."""
    path = tmp_path / "g.db"
    with _open(path) as wall:
        wall.import_records(_items(3), store_name="mem0", project="p")
        victim = wall.store.find_beliefs(BeliefFilter(text="m0", limit=1))[0]
        row = (
            _conn(wall)
            .execute("SELECT row FROM batch_members WHERE claim_id = ?", (victim.claim_id,))
            .fetchone()[0]
        )
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE batch_members SET row = ? WHERE claim_id = ?", ((row + 1) % 3, victim.claim_id)
        )
    conn.close()
    with _open(path) as wall:
        with pytest.raises(StoreCorruptError, match="another claim"):
            wall.store.get_claim(victim.claim_id)
        with pytest.raises(StoreCorruptError, match="rebuild"):
            wall.store.get_evidence(victim.claim_id)
        report = rebuild(wall.store)
        assert not report.ok and {d.table for d in report.differences} >= {"claims"}
        assert rebuild(wall.store, apply=True).remaining == 0
        claim = wall.store.get_claim(victim.claim_id)
        assert claim is not None and claim.statement == victim.statement
        assert rebuild(wall.store).ok and wall.verify_log().ok


def test_a_version_7_file_migrates_and_reads_old_and_new_rows(tmp_path: Path) -> None:
    source = firewall.open("memory://", clock=lambda: NOW)
    source.import_records(_items(4, "old"), store_name="mem0", project="p")
    path = tmp_path / "v7.db"
    with SQLiteStore(path) as store:
        store.append_sealed(list(source.store.events()))
        # a version 7 file held a full claim and evidence row for every imported record
        claims = [store.get_claim(b.claim_id) for b in store.find_beliefs(BeliefFilter(limit=9))]
        full = [(c.id, c.model_dump_json().encode()) for c in claims if c is not None]
        items = [i for c in claims if c is not None for i in store.get_evidence(c.id).items]
    assert len(full) == len(items) == 4
    with sqlite3.connect(path) as conn:
        conn.executemany("INSERT INTO claims (id, doc) VALUES (?, ?)", full)
        conn.executemany(
            "INSERT INTO evidence (id, claim_id, doc) VALUES (?, ?, ?)",
            [(i.id, i.claim_id, i.model_dump_json().encode()) for i in items],
        )
        conn.execute("DROP TABLE batch_members")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.close()
    with _open(path) as wall:
        (version,) = (
            _conn(wall).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        )
        assert version == str(sqlite_schema.SCHEMA_VERSION) == "12"
        wall.import_records(_items(4, "new"), store_name="mem0", project="p")
        for belief in wall.store.find_beliefs(BeliefFilter(limit=100)):
            claim = wall.store.get_claim(belief.claim_id)
            assert claim is not None and claim.statement == belief.statement
            assert len(wall.store.get_evidence(belief.claim_id).items) == 1
            assert wall.store.belief_history(belief.id) == [belief]
        assert len(wall.store.find_beliefs(BeliefFilter(limit=100))) == 8
        assert rebuild(wall.store).ok and wall.verify_log().ok


def test_bound_store_ids_answers_as_the_bindings_do(tmp_path: Path) -> None:
    with _open(tmp_path / "g.db") as wall:
        wall.import_records(_items(5), store_name="mem0", project="p", bind=True)
        wall.import_records(_items(2, "x"), store_name="letta", project="p", bind=True)
        asked = ["m1", "m4", "x0", "nope", "m1"]
        assert wall.store.bound_store_ids("mem0", asked) == {"m1", "m4"}
        assert wall.store.bound_store_ids("mem0", asked) == set(
            wall.store.bindings_by_store_id("mem0", asked)
        )
        assert wall.store.bound_store_ids("letta", asked) == {"x0"}
        assert wall.store.bound_store_ids("mem0", []) == set()
