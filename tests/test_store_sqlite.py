"""The store contract against ``sqlite:///``, plus what only a file-backed store can do wrong."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gnomon.firewall.model.errors import StoreCorruptError, StoreError, StoreLockedError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import belief_draft, make_belief, make_decision, make_draft, make_records
from tests.store_contract import StoreContract

REPO = Path(__file__).resolve().parent.parent


class TestSQLiteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return SQLiteStore(tmp_path / "gnomon.db")

    def tamper_body(self, store: Store, seq: int, body: bytes) -> None:
        assert isinstance(store, SQLiteStore)
        store._conn.execute("UPDATE events SET body = ? WHERE seq = ?", (body, seq))


def test_in_memory_database() -> None:
    with SQLiteStore(":memory:") as store:
        store.commit([belief_draft(make_belief())])
        assert store.count_beliefs(BeliefFilter()) == 1


def test_data_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "gnomon.db"
    belief = make_belief()
    with SQLiteStore(path) as store:
        store.commit([belief_draft(belief), make_draft()])
        head = store.head()
    with SQLiteStore(path) as store:
        assert store.head() == head
        assert store.get_belief(belief.id) == belief
        assert store.find_beliefs(BeliefFilter(text="stripe")) == [belief]
        assert store.verify().ok


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is a text file, not SQLite\n" * 200)
    with pytest.raises(StoreCorruptError) as err:
        SQLiteStore(path)
    assert str(path) in str(err.value)


def test_database_of_another_application(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE todo (id INTEGER PRIMARY KEY, title TEXT)")
    conn.close()
    with pytest.raises(StoreCorruptError, match="not a Gnomon store") as err:
        SQLiteStore(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("application", "someone-else", "another application"), ("schema_version", "99", "newer")],
)
def test_foreign_or_newer_meta(tmp_path: Path, key: str, value: str, message: str) -> None:
    path = tmp_path / "gnomon.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.close()
    with pytest.raises(StoreCorruptError, match=message) as err:
        SQLiteStore(path)
    assert str(path) in str(err.value)
    assert err.value.hint


def test_locked_database(tmp_path: Path) -> None:
    path = tmp_path / "gnomon.db"
    with SQLiteStore(path, busy_timeout=0.1) as store:
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StoreLockedError) as err:
                store.commit([make_draft()])
            assert str(path) in str(err.value)
            other.execute("ROLLBACK")
        finally:
            other.close()
        # the lock is gone: the store works again
        assert store.commit([make_draft()])[0].seq == 1


def test_failure_midway_through_projections_rolls_back(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gnomon.db")
    with store:
        store._conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON decisions BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
        belief = make_belief()
        draft = make_draft(make_records(beliefs=[belief], decisions=[make_decision()]))
        with pytest.raises(StoreError, match="boom"):
            store.commit([make_draft(), draft])
        assert store.head()[0] == 0
        assert store.get_belief(belief.id) is None
        assert store.find_beliefs(BeliefFilter(text="stripe")) == []


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gnomon.db")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.head()


WRITER = """
import sys
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import belief_draft, make_belief
with SQLiteStore(sys.argv[1], busy_timeout=30) as store:
    for i in range(200):
        store.commit([belief_draft(make_belief(statement=f"{sys.argv[2]} fact {i}"))])
"""


def test_two_processes_append_one_gap_free_chain(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], env=env, cwd=REPO)
        for name in ("left", "right")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    with SQLiteStore(path) as store:
        assert [e.seq for e in store.events()] == list(range(1, 401))
        report = store.verify()
        assert report.ok and report.events == 400
        assert store.count_beliefs(BeliefFilter(text="left")) == 200
        assert store.count_beliefs(BeliefFilter(text="right")) == 200


def test_relevance_order_matches_the_memory_backend(tmp_path: Path) -> None:
    """FTS5's bm25() over the Python tokens and the memory backend's BM25 rank alike."""
    words = "payment stripe deploy argo cafe service key rotation billing".split()
    beliefs = [
        make_belief(
            id=f"bel_{i:03d}",
            statement=" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(1 + i % 9)),
        )
        for i in range(60)
    ]
    with SQLiteStore(tmp_path / "gnomon.db") as sqlite, MemoryStore() as memory:
        for store in (sqlite, memory):
            store.commit([belief_draft(*beliefs)])
        for query in ("stripe", "payment argo", "cafe key rotation", "billing service deploy"):
            where = BeliefFilter(text=query, limit=100)
            assert [b.id for b in sqlite.find_beliefs(where)] == [
                b.id for b in memory.find_beliefs(where)
            ], query


@pytest.mark.parametrize("old_version", ["1", "2"])
def test_older_file_gains_the_bindings_table(tmp_path: Path, old_version: str) -> None:
    from gnomon.firewall.store import sqlite_schema
    from tests.factories import make_binding

    path = tmp_path / f"v{old_version}.db"
    belief = make_belief(statement="written before bindings existed")
    with SQLiteStore(path) as store:
        store.commit([belief_draft(belief)])
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE bindings")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (old_version,))
    conn.commit()
    conn.close()
    binding = make_binding(belief_id=belief.id, store_id="m-1")
    with SQLiteStore(path) as store:
        assert store.get_belief(belief.id) == belief
        store.commit([make_draft(make_records(bindings=[binding]))])
        assert store.bindings_by_store_id("mem0", ["m-1"]) == {"m-1": binding}
        assert store.verify().ok
    conn = sqlite3.connect(path)
    (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert version == str(sqlite_schema.SCHEMA_VERSION)
