"""``rebuild``: projections replayed from the log equal the live ones, and a row changed behind
the log's back is named and can be restored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gnomon.firewall.audit.rebuild import rebuild, replay, snapshot
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.log_contract import populated_source


def _live(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "g.db")
    store.append_sealed(list(populated_source().events()))
    return store


def test_rebuild_of_an_untouched_store_is_clean(tmp_path: Path) -> None:
    store = _live(tmp_path)
    report = rebuild(store)
    assert report.ok and report.events == store.head()[0]
    assert report.tables["beliefs"] == 1 and report.tables["sessions"] == 1
    assert report.to_json()["differences"] == 0
    assert snapshot(replay(store)) == snapshot(store)
    store.close()


def test_rebuild_names_rows_changed_behind_the_log(tmp_path: Path) -> None:
    store = _live(tmp_path)
    belief_id = next(iter(snapshot(store)["beliefs"]))
    with sqlite3.connect(tmp_path / "g.db") as conn:
        conn.execute(
            "UPDATE beliefs SET doc = CAST(replace(CAST(doc AS TEXT), 'supported', 'normal') "
            "AS BLOB) WHERE id = ?",
            (belief_id,),
        )
        conn.execute("DELETE FROM claims")
        conn.execute("INSERT INTO sessions (id, project, doc) VALUES ('ses_x', 'p', '{}')")
    conn.close()
    report = rebuild(store)
    assert not report.ok and report.difference_count == 3
    found = {(d.table, d.problem.split()[0]) for d in report.differences}
    # the edited belief no longer validates, the planted session is no valid record either
    assert found == {("beliefs", "corrupt:"), ("claims", "missing"), ("sessions", "corrupt:")}
    assert report.by_table == {"beliefs": 1, "claims": 1, "sessions": 1}

    fixed = rebuild(store, apply=True)
    assert fixed.ok and fixed.applied and fixed.remaining == 0 and fixed.difference_count == 3
    assert rebuild(store).ok
    assert store.get_belief(belief_id) is not None and store.verify().ok
    store.close()
