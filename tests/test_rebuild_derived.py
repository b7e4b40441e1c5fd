"""Attacks on the derived tables: an edit to one table a query reads, made behind the log's
back and leaving every record document intact, is named by ``rebuild`` (table and id), and a
row that cannot even be read is reported as corrupt, never as a traceback. SQLite files and the
real PostgreSQL server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.cli import cli
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import TruthStatus
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.postgres import PostgresStore
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.log_contract import populated_source


def _ids(store: Store) -> tuple[str, str, str]:
    """(belief id, decision id, contradiction id) of the populated log."""
    docs = {(t, i) for t, i, _ in store.projection_docs()}
    belief = next(i for t, i in docs if t == "beliefs")
    decision = next(i for t, i in docs if t == "decisions")
    contradiction = next(i for t, i in docs if t == "contradictions")
    return belief, decision, contradiction


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Path]]:
    path = tmp_path / "g.db"
    store = SQLiteStore(path)
    store.append_sealed(list(populated_source().events()))
    assert rebuild(store).ok
    yield store, path
    store.close()


def _tamper(path: Path, *sql: tuple[str, tuple[object, ...]]) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement, params in sql:
            conn.execute(statement, params)
    conn.close()


def _named(store: Store) -> set[tuple[str, str, str]]:
    report = rebuild(store)
    assert not report.ok
    return {(d.table, d.id, d.kind) for d in report.differences}


def test_status_column_flipped_alone_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    belief, _, _ = _ids(store)
    # the poisoned belief's doc still says quarantined-free "supported"; make recall's indexed
    # filter see it as supported *and* clean/normal whatever the doc says: flip columns only
    _tamper(path, ("UPDATE beliefs SET truth = 'contradicted' WHERE id = ?", (belief,)))
    assert store.find_beliefs(BeliefFilter(truth=frozenset({TruthStatus.CONTRADICTED})))
    report = rebuild(store)
    assert [(d.table, d.id) for d in report.differences] == [("beliefs", belief)]
    assert "truth" in report.differences[0].problem
    assert rebuild(store, apply=True).remaining == 0 and rebuild(store).ok


def test_fts_row_planted_to_match_every_query_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    belief, _, _ = _ids(store)
    (rid,) = (
        sqlite3.connect(path).execute("SELECT rid FROM beliefs WHERE id = ?", (belief,)).fetchone()
    )
    # plant tokens in the FTS5 index only: beliefs.terms and the doc are untouched
    _tamper(
        path,
        ("INSERT INTO beliefs_fts (rowid, terms) VALUES (?, 'password payroll invoice')", (rid,)),
    )
    assert [b.id for b in store.find_beliefs(BeliefFilter(text="payroll"))] == [belief]
    assert ("beliefs_fts", belief, "differs") in _named(store)
    assert rebuild(store, apply=True).remaining == 0
    assert store.find_beliefs(BeliefFilter(text="payroll")) == []


def test_fts_entry_for_a_rowid_with_no_belief_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    _tamper(path, ("INSERT INTO beliefs_fts (rowid, terms) VALUES (999, 'ghost')", ()))
    assert ("beliefs_fts", "rowid 999 (no such belief)", "extra") in _named(store)


def test_decision_dependency_deleted_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    belief, decision, _ = _ids(store)
    _tamper(path, ("DELETE FROM decision_deps WHERE decision_id = ?", (decision,)))
    # a contradiction of the belief would no longer flag the decision
    assert store.decisions_depending_on(belief) == []
    assert _named(store) == {("decision_deps", f"{decision} {belief}", "missing")}


def test_contradiction_member_removed_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    belief, _, contradiction = _ids(store)
    _tamper(path, ("DELETE FROM contradiction_members WHERE belief_id = ?", (belief,)))
    assert store.contradictions_for([belief]) == []
    assert _named(store) == {("contradiction_members", f"{contradiction} {belief}", "missing")}


def test_history_version_rewritten_is_named(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    belief, _, _ = _ids(store)
    # "what did I believe then": make the first version look supported (columns only)
    _tamper(
        path,
        (
            "UPDATE belief_versions SET truth = 'supported' WHERE belief_id = ? AND version = 1",
            (belief,),
        ),
    )
    assert _named(store) == {("belief_versions", f"{belief}#1", "differs")}


def test_binding_and_index_columns_are_compared(live: tuple[SQLiteStore, Path]) -> None:
    store, path = live
    _tamper(
        path,
        ("UPDATE bindings SET store_id = 'hijacked'", ()),
        ("UPDATE evidence SET claim_id = 'clm_elsewhere'", ()),
    )
    tables = {t for t, _, _ in _named(store)}
    assert tables == {"bindings", "evidence"}


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"id": "x"}', "not a valid Belief"),
        (b'{"statement": null}', "not a valid Belief"),
        (None, "NULL"),
    ],
)
def test_corrupt_projection_row_is_reported_not_raised(
    live: tuple[SQLiteStore, Path], doc: bytes | None, reason: str
) -> None:
    store, path = live
    belief, _, _ = _ids(store)
    conn = sqlite3.connect(path)
    if doc is None:
        # NOT NULL is a schema promise, not a guarantee: a file edited with writable_schema
        # (or another tool) can hold NULL in any column
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_schema SET sql = replace(sql, 'doc              BLOB NOT NULL', "
            "'doc BLOB') WHERE name = 'beliefs'"
        )
        conn.commit()
        conn.close()
        conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE beliefs SET doc = ? WHERE id = ?", (doc, belief))
    conn.close()
    store.close()
    reopened = SQLiteStore(path)
    report = rebuild(reopened)
    corrupt = [d for d in report.differences if d.kind == "corrupt"]
    assert [(d.table, d.id) for d in corrupt] == [("beliefs", belief)]
    assert reason in corrupt[0].problem
    result = CliRunner().invoke(cli, ["rebuild", "--url", f"sqlite:///{path}"])
    assert (result.exit_code == 1 and result.exception is None) or isinstance(
        result.exception, SystemExit
    )
    assert "Traceback" not in result.output and f"beliefs {belief}: corrupt" in result.output
    reopened.close()


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture
def pg(postgres_url: str, request: pytest.FixtureRequest) -> Iterator[PostgresStore]:
    tenant = f"rebuild-{request.node.name[:40]}"
    store = PostgresStore(postgres_url, tenant=tenant)
    store.append_sealed(list(populated_source().events()))
    assert rebuild(store).ok
    yield store
    store.discard()


def _pg_tamper(url: str, sql: str, params: tuple[object, ...]) -> None:
    with psycopg.connect(url.split("?")[0] + "?" + url.split("?")[1], autocommit=True) as conn:
        conn.execute(sql, params)


@pytest.mark.postgres
def test_pg_status_column_flipped_alone_is_named(postgres_url: str, pg: PostgresStore) -> None:
    belief, _, _ = _ids(pg)
    _pg_tamper(
        postgres_url,
        "UPDATE beliefs SET truth = 'contradicted' WHERE tenant = %s AND id = %s",
        (pg.tenant, belief),
    )
    report = rebuild(pg)
    assert [(d.table, d.id) for d in report.differences] == [("beliefs", belief)]
    assert "truth" in report.differences[0].problem
    assert rebuild(pg, apply=True).remaining == 0 and rebuild(pg).ok


@pytest.mark.postgres
def test_pg_decision_dependency_deleted_is_named(postgres_url: str, pg: PostgresStore) -> None:
    belief, decision, _ = _ids(pg)
    _pg_tamper(postgres_url, "DELETE FROM decision_deps WHERE tenant = %s", (pg.tenant,))
    assert pg.decisions_depending_on(belief) == []
    assert _named(pg) == {("decision_deps", f"{decision} {belief}", "missing")}


@pytest.mark.postgres
def test_pg_text_index_and_bm25_statistics_are_compared(
    postgres_url: str, pg: PostgresStore
) -> None:
    belief, _, _ = _ids(pg)
    _pg_tamper(
        postgres_url,
        "UPDATE beliefs SET tsv = tsv || 'payroll:1'::tsvector WHERE tenant = %s AND id = %s",
        (pg.tenant, belief),
    )
    _pg_tamper(postgres_url, "UPDATE term_stats SET df = df + 7 WHERE tenant = %s", (pg.tenant,))
    tables = {t for t, _, _ in _named(pg)}
    assert tables == {"beliefs", "term_stats"}


@pytest.mark.postgres
def test_pg_scratch_tenant_leaves_nothing_behind(postgres_url: str, pg: PostgresStore) -> None:
    rebuild(pg)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        left = conn.execute(
            "SELECT count(*) FROM chain_heads WHERE tenant LIKE 'gnomon-rebuild-%%'"
        ).fetchone()
    assert left == (0,)
