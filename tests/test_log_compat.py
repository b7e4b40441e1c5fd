"""Logs written before the compact batch format (event schema 1) still verify, import and replay.

``tests/fixtures/log_schema1.ndjson`` was exported by the code of the commit that added it, before
the event schema changed: a session (channels, observations through a channel and without one, a
remembered note, a corroboration that promotes, a recall, a decision, an action and its outcome)
and ``import_records`` with and without bindings, one ``belief.imported`` event per record. Each
store must import it through the gate re-check, verify it, rebuild every derived table from it
exactly, and answer queries from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gnomon.firewall.audit.import_check import check_transitions
from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.log.ndjson import read_events, read_file
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sqlite import SQLiteStore

FIXTURE = Path(__file__).parent / "fixtures" / "log_schema1.ndjson"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        store: Store = MemoryStore()
    elif request.param == "sqlite":
        store = SQLiteStore(tmp_path / "old.db")
    else:
        from gnomon.firewall.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        store = PostgresStore(url, tenant=f"compat-{request.node.name[:40]}")
    yield store
    if request.param == "postgres":
        store.discard()
    else:
        store.close()


def test_schema1_log_imports_verifies_and_rebuilds(target: Store) -> None:
    events = read_events(read_file(FIXTURE), str(FIXTURE), head=target.head())
    assert len(events) == 19
    assert {e.body.count(b'"schema":1') >= 1 for e in events} == {True}
    check_transitions(target, events, verified=True)
    target.append_sealed(events)
    assert target.verify().ok
    report = rebuild(target)
    assert report.ok, report.differences
    assert report.tables["beliefs"] == 14 and report.tables["bindings"] == 5
    imported = target.find_beliefs(BeliefFilter(text="imported memory", project="acme", limit=50))
    assert len(imported) == 5
    assert {b.origin.describe() for b in imported} == {imported[0].origin.describe()}
    assert len(target.bindings_by_store_id("mem0", [f"m{i}" for i in range(5)])) == 5
