"""PostgreSQL's recall gate (schema 6) and import batch fast path, against a real server.

The gate (``beliefs.gate``, a generated column in the text index) only narrows which rows a text
query reads: these tests attack it with hostile project names and edited rows, check that the
exact conditions still decide, that nothing can set the gate apart from its row, that an older
store upgrades to it, and that a batch written by COPY is exactly what a replay of the log
derives.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.adoption import Adopter, Context
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.log.batch import ImportBatch
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.model.errors import StoreError, TamperedLogError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import (
    ClaimKind,
    EvidenceQuality,
    ExtractionMethod,
    RetrievalStatus,
    Scope,
    SecurityStatus,
    TruthStatus,
)
from gnomon.firewall.store import postgres_schema as schema
from gnomon.firewall.store.postgres import PostgresStore
from tests.factories import T0, belief_draft, make_belief
from tests.test_postgres_specific import pre_seal_writer

pytestmark = pytest.mark.postgres

ADMISSIBLE: dict[str, Any] = {
    "truth": frozenset({TruthStatus.SUPPORTED}),
    "retrieval": frozenset({RetrievalStatus.NORMAL}),
    "security": frozenset({SecurityStatus.CLEAN}),
}
NOW = datetime(2025, 1, 2, tzinfo=UTC)


def trusted(**overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "truth_status": TruthStatus.SUPPORTED,
        "retrieval_status": RetrievalStatus.NORMAL,
        "security_status": SecurityStatus.CLEAN,
        "statement": "the ledger settles at noon",
    }
    fields.update(overrides)
    return make_belief(**fields)


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(postgres_url, tenant=f"gate_{secrets.token_hex(6)}") as opened:
        yield opened


def _ids(found: list[Any]) -> set[str]:
    return {b.id for b in found}


def test_a_project_sharing_the_gate_prefix_is_not_read(store: PostgresStore) -> None:
    """The gate cuts a project name at 300 characters: two projects equal on their first 300
    share gate lexemes. A reader of one must still never get the other's beliefs: the exact
    project condition stays in the statement (removing it fails this test)."""
    mine = "p" * 300 + "-mine"
    theirs = "p" * 300 + "-theirs"
    own, other = trusted(project=mine), trusted(project=theirs)
    store.commit([belief_draft(own, other)])
    for where in (
        BeliefFilter(text="ledger", project=mine, **ADMISSIBLE),
        BeliefFilter(text="ledger", project=mine, unranked=True),
        BeliefFilter(text="ledger", project=mine),
    ):
        assert _ids(store.find_beliefs(where)) == {own.id}
        assert store.count_beliefs(where) == 1


@pytest.mark.parametrize(
    "project",
    ["it's", "back\\slash", "a | b & !c", "'", "x" * 2000, "ünïcødé ✓", "p:tenant:x"],
)
def test_hostile_project_names_are_one_lexeme(store: PostgresStore, project: str) -> None:
    """Quotes, backslashes, tsquery operators and over-long names cannot break the gate query
    (a syntax error would fail the recall) or widen it to other projects."""
    own = trusted(project=project)
    bystander = trusted(project="bystander")
    store.commit([belief_draft(own, bystander)])
    found = store.find_beliefs(BeliefFilter(text="ledger", project=project, **ADMISSIBLE))
    assert _ids(found) == {own.id}
    others = store.find_beliefs(BeliefFilter(text="ledger", project=project, unranked=True))
    assert _ids(others) == {own.id}


def test_global_and_inadmissible_beliefs(store: PostgresStore) -> None:
    shared = trusted(project="elsewhere", scope=Scope.GLOBAL)
    own = trusted(project="web")
    doubted = trusted(project="web", truth_status=TruthStatus.UNVERIFIED)
    quarantined = trusted(
        project="web",
        security_status=SecurityStatus.QUARANTINED,
        retrieval_status=RetrievalStatus.BLOCKED,
    )
    store.commit([belief_draft(shared, own, doubted, quarantined)])
    accept = BeliefFilter(text="ledger", project="web", **ADMISSIBLE)
    assert _ids(store.find_beliefs(accept)) == {shared.id, own.id}
    everything = BeliefFilter(text="ledger", project="web", limit=10, unranked=True)
    assert _ids(store.find_beliefs(everything)) == {shared.id, own.id, doubted.id, quarantined.id}
    # no project: the admissible gate alone
    assert _ids(store.find_beliefs(BeliefFilter(text="ledger", **ADMISSIBLE))) == {
        shared.id,
        own.id,
    }
    # a move out of the admissible states moves the gate with the row
    store.commit([belief_draft(own.model_copy(update={"truth_status": TruthStatus.CONTRADICTED}))])
    assert _ids(store.find_beliefs(accept)) == {shared.id}


def test_the_gate_cannot_be_set_apart_from_its_row(store: PostgresStore) -> None:
    """An attacker with the database cannot plant an admissible gate on a quarantined row: the
    column is generated. Editing the row's state columns moves the gate too, and the recall
    still re-checks the document: the edited row is read but never accepted."""
    bad = trusted(
        security_status=SecurityStatus.QUARANTINED, retrieval_status=RetrievalStatus.BLOCKED
    )
    store.commit([belief_draft(bad)])
    with psycopg.connect(store.conninfo, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.GeneratedAlways):
            conn.execute(
                "UPDATE beliefs SET gate = array_to_tsvector(ARRAY['a:x']) WHERE tenant = %s",
                (store.tenant,),
            )
        conn.execute(
            "UPDATE beliefs SET security = 'clean', retrieval = 'normal' WHERE tenant = %s",
            (store.tenant,),
        )
    found = store.find_beliefs(BeliefFilter(text="ledger", project=bad.project, **ADMISSIBLE))
    assert [b.security_status for b in found] == [SecurityStatus.QUARANTINED]
    wall = firewall.Firewall(store, clock=lambda: NOW)
    with wall.session(project=bad.project, actor="agent") as session:
        result = session.recall("ledger")
    assert result.accepted == () and bad.id in {r.belief_id for r in result.rejected}


def test_version_5_store_upgrades_to_the_gate(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"gnomon_v5_{secrets.token_hex(4)}"
    base = postgres_url.split("?", 1)[0]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    url = f"{base}?options=-csearch_path%3D{name}"
    try:
        own, shared = trusted(project="web"), trusted(project="x", scope=Scope.GLOBAL)
        doubted = trusted(project="web", truth_status=TruthStatus.UNVERIFIED)
        with monkeypatch.context() as patch:
            patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:5])
            patch.setattr(schema, "SCHEMA_VERSION", 5)
            pre_seal_writer(patch)
            with PostgresStore(url, tenant="a") as old:
                old.commit([belief_draft(own, shared, doubted)])
                wall = firewall.Firewall(old, clock=lambda: NOW)
                items = [ImportItem(text=f"ledger import {i}", source_id=f"m{i}") for i in range(5)]
                assert wall.import_records(items, store_name="mem0", project="web", bind=True) == 5
            with psycopg.connect(url, autocommit=True) as conn:
                columns = conn.execute(
                    "SELECT count(*) FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = 'beliefs' AND column_name = 'gate'",
                    (name,),
                ).fetchone()
                assert columns == (0,)
        with pytest.raises(StoreError, match="older"):
            PostgresStore(url, tenant="a")
        result = CliRunner().invoke(cli, ["db", "upgrade", "--url", url])
        assert result.exit_code == 0, result.output
        assert "applied 7: recall gate" in result.output
        with PostgresStore(url, tenant="a") as store:
            accept = BeliefFilter(text="ledger", project="web", limit=20, **ADMISSIBLE)
            # rows written before row sealing, over events written before sealing: refused
            # until the operator adopts the log (events sealed, rows rebuilt and sealed)
            with pytest.raises(TamperedLogError, match="carries no seal"):
                store.find_beliefs(accept)
            assert store.adopt_unsealed() == 2
            report = rebuild(store)
            assert report.ok, report.differences
            assert _ids(store.find_beliefs(accept)) == {own.id, shared.id}
            others = BeliefFilter(text="ledger", project="web", limit=20, unranked=True)
            assert len(store.find_beliefs(others)) == 3 + 5
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def _batch(project: str, texts: list[str]) -> ImportBatch:
    adopter = Adopter(
        Context(project, "importer", None, None),
        kind=ClaimKind.CONTENT,
        origin=Origin.imported("mem0"),
        quality=EvidenceQuality.EXTERNAL_DOCUMENT,
        extraction=ExtractionMethod.IMPORT,
    )
    batch = ImportBatch.start(adopter, store="mem0", now=NOW, bind=True)
    for i, text in enumerate(texts):
        batch.add(text, source=f"mem0:{i}", store_id=f"{project}-{i}", observed_at=T0)
    return batch


def _draft(batch: ImportBatch) -> EventDraft:
    return EventDraft(kind="memory.imported", actor="importer", at=NOW, project="web", batch=batch)


def test_batches_and_typed_records_in_one_commit_rebuild_exactly(store: PostgresStore) -> None:
    """COPY rows derived from the compact rows equal what a replay of the log derives through
    typed records, for several batches and typed drafts in one commit."""
    first, second = _batch("web", ["ledger one", "ledger two"]), _batch("api", ["ledger three"])
    store.commit([_draft(first), belief_draft(trusted()), _draft(second)])
    assert store.count_beliefs(BeliefFilter(text="ledger")) == 4
    assert store.bindings_by_store_id("mem0", ["web-0", "api-0"]).keys() == {"web-0", "api-0"}
    report = rebuild(store)
    assert report.ok, report.differences
    assert store.verify().ok


def test_a_batch_reusing_a_stored_id_writes_nothing(store: PostgresStore) -> None:
    """A batch row naming an id already stored (a forged or replayed batch) is refused by the
    primary key: nothing of the commit is written, nothing stored is overwritten."""
    batch = _batch("web", ["ledger original"])
    store.commit([_draft(batch)])
    head = store.head()
    replay = _batch("web", ["ledger overwritten"])
    replay.rows[0] = (batch.rows[0][0], *replay.rows[0][1:])
    with pytest.raises(StoreError):
        store.commit([belief_draft(trusted()), _draft(replay)])
    assert store.head() == head
    (kept,) = store.find_beliefs(BeliefFilter(text="ledger"))
    assert kept.statement == "ledger original"
    assert store.count_beliefs(BeliefFilter()) == 1
