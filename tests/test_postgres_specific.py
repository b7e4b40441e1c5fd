"""What only the shared PostgreSQL store can get wrong: tenancy, migrations, concurrent writer
processes, a server that goes away mid-commit, conflicts, and the cross-session probe."""

from __future__ import annotations

import doctest
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall import Integrity, Origin, TruthStatus
from gnomon.firewall.cli import cli
from gnomon.firewall.model.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    UnsupportedURLError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import Authority
from gnomon.firewall.store import postgres_schema as schema
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.postgres import PostgresStore, upgrade_url
from gnomon.firewall.store.registry import open_store
from gnomon.probes.cross_session_sqlite import NOTE, _session_a
from tests.factories import (
    belief_draft,
    make_belief,
    make_binding,
    make_contradiction,
    make_decision,
    make_draft,
    make_records,
    make_revision,
)

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parent.parent


def tenant_url(url: str, tenant: str) -> str:
    return f"{url}&tenant={quote(tenant)}"


def fresh_tenant() -> str:
    return f"t_{secrets.token_hex(6)}"


@pytest.fixture
def fresh_schema(postgres_url: str) -> Iterator[str]:
    """A URL on a brand-new empty schema (for migration tests), dropped afterwards."""
    name = f"gnomon_mig_{os.getpid()}_{secrets.token_hex(4)}"
    base = postgres_url.split("?", 1)[0]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield f"{base}?options={quote(f'-csearch_path={name}', safe='')}"
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


@pytest.mark.parametrize(
    "module", ["gnomon.firewall.store.postgres", "gnomon.firewall.store.postgres_schema"]
)
def test_docstring_examples(module: str) -> None:
    failures, tried = doctest.testmod(__import__(module, fromlist=["_"]))
    assert tried > 0 and failures == 0


# -- URLs and opening -------------------------------------------------------------------------


def test_tenant_from_url_option_and_default(postgres_url: str) -> None:
    with open_store(tenant_url(postgres_url, "acme")) as store:
        assert isinstance(store, PostgresStore) and store.tenant == "acme"
        assert "tenant=acme" in store.url
    with open_store(postgres_url, tenant="umbrella") as store:
        assert isinstance(store, PostgresStore) and store.tenant == "umbrella"
    with open_store(postgres_url) as store:
        assert isinstance(store, PostgresStore) and store.tenant == "default"
    with pytest.raises(UnsupportedURLError, match="two tenants"):
        open_store(tenant_url(postgres_url, "a"), tenant="b")
    with pytest.raises(UnsupportedURLError, match="invalid tenant"):
        open_store(postgres_url, tenant="")


def test_unreachable_server_names_the_database_not_the_password() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as err:
        PostgresStore("postgresql://gnomon:s3cret@127.0.0.1:1/prod?tenant=a", timeout=2)
    assert time.monotonic() - started < 10
    assert "127.0.0.1:1/prod" in str(err.value)
    assert "s3cret" not in str(err.value)
    assert err.value.hint


def test_closed_store_refuses_work(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, tenant=fresh_tenant())
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.head()


# -- migrations -------------------------------------------------------------------------------


def _version(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        assert row is not None
        return int(row[0])


def test_open_creates_a_fresh_schema_once(fresh_schema: str) -> None:
    stores = []
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            stores.append(PostgresStore(fresh_schema, tenant="a"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert not errors and len(stores) == 4
    assert _version(fresh_schema) == schema.SCHEMA_VERSION


def test_create_false_refuses_an_empty_database(fresh_schema: str) -> None:
    with pytest.raises(StoreError, match="no Gnomon schema") as err:
        PostgresStore(fresh_schema, create=False)
    assert "gnomon db upgrade" in str(err.value.hint)


def test_newer_schema_says_upgrade_gnomon(fresh_schema: str) -> None:
    PostgresStore(fresh_schema).close()
    with psycopg.connect(fresh_schema, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
    with pytest.raises(StoreCorruptError, match="newer") as err:
        PostgresStore(fresh_schema)
    assert "upgrade gnomon" in str(err.value.hint)
    with pytest.raises(StoreCorruptError, match="newer"):
        upgrade_url(fresh_schema)


def test_older_schema_says_run_db_upgrade(
    fresh_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(fresh_schema, tenant="a") as store:
        store.commit([belief_draft(make_belief(statement="kept across the upgrade"))])
    nxt = schema.SCHEMA_VERSION + 1
    extra = schema.Migration(nxt, "test column", "ALTER TABLE beliefs ADD COLUMN probe_note text")
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, extra))
    monkeypatch.setattr(schema, "SCHEMA_VERSION", nxt)
    with pytest.raises(StoreError, match="older") as err:
        PostgresStore(fresh_schema, tenant="a")
    assert "gnomon db upgrade" in str(err.value.hint)

    result = CliRunner().invoke(cli, ["db", "upgrade", "--url", fresh_schema])
    assert result.exit_code == 0, result.output
    assert f"applied {nxt}: test column" in result.output
    assert f"schema version {nxt}" in result.output
    again = CliRunner().invoke(cli, ["db", "upgrade", "--url", fresh_schema, "--json"])
    assert again.exit_code == 0 and json.loads(again.output)["applied"] == []
    with PostgresStore(fresh_schema, tenant="a") as store:
        assert store.count_beliefs(BeliefFilter(text="upgrade")) == 1
        assert store.verify().ok


def pre_seal_writer(patch: pytest.MonkeyPatch) -> None:
    """Make this process write events as a writer of a schema before version 8 did: without
    the ``seal`` columns (the seals computed are dropped by the statements)."""
    from gnomon.firewall.store import postgres

    old = postgres.INSERT_EVENTS_MOVE_HEAD.replace(
        "hash, seal) SELECT %s, * FROM unnest(",
        "hash) SELECT %s, q, k, a, c, s, b, p, h FROM unnest(",
    ).replace("%b::bytea[])", "%b::bytea[]) AS u(q, k, a, c, s, b, p, h, t)")
    assert old != postgres.INSERT_EVENTS_MOVE_HEAD
    patch.setattr(postgres, "INSERT_EVENTS_MOVE_HEAD", old)
    # nor belief row seals (version 9): the seal array is passed and dropped
    rows = (
        postgres.UPSERT_BELIEFS.replace("doc, seal) SELECT", "doc) SELECT")
        .replace("u.c17, u.c18 FROM", "u.c17 FROM")
        .replace(", seal = excluded.seal", "")
    )
    assert rows.count("seal") == 0
    patch.setattr(postgres, "UPSERT_BELIEFS", rows)
    patch.setattr(postgres.PostgresStore, "_reseal_rows", lambda self: None)
    # an import batch's COPY of beliefs: the row's seal (after its document) dropped
    patch.setattr(postgres, "COPY_BELIEFS", postgres.COPY_BELIEFS.replace(", seal)", ")"))
    write_row = psycopg.Copy.write_row

    def unsealed_row(self: psycopg.Copy, row: Sequence[Any]) -> None:
        sealed = len(row) > 2 and isinstance(row[-2], bytes) and isinstance(row[-1], bytes)
        write_row(self, row[:-1] if sealed else row)

    patch.setattr(psycopg.Copy, "write_row", unsealed_row)


def test_version_1_schema_upgrades_to_bindings(
    fresh_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
        patch.setattr(schema, "SCHEMA_VERSION", 1)
        pre_seal_writer(patch)
        # a version 1 writer kept no belief history
        patch.setattr(PostgresStore, "_write_versions", lambda self, cur, rows: None)
        old = make_belief(statement="before bindings")
        with PostgresStore(fresh_schema, tenant="a") as store:
            store.commit([belief_draft(old)])
    with pytest.raises(StoreError, match="older"):
        PostgresStore(fresh_schema, tenant="a")
    result = CliRunner().invoke(cli, ["db", "upgrade", "--url", fresh_schema])
    assert result.exit_code == 0, result.output
    assert "applied 2: store bindings" in result.output
    assert "applied 3: belief history" in result.output
    binding = make_binding(store_id="m-1")
    with PostgresStore(fresh_schema, tenant="a") as store:
        store.commit([make_draft(make_records(bindings=[binding]))])
        assert store.bindings_by_store_id("mem0", ["m-1"]) == {"m-1": binding}
        assert store.count_beliefs(BeliefFilter(text="bindings")) == 1
        # the upgrade gave every existing belief its current version as history
        assert store.belief_history(old.id) == [old]
        assert store.find_beliefs_as_of(BeliefFilter(text="bindings"), old.updated_at) == [old]


def test_bindings_do_not_cross_a_tenant(postgres_url: str) -> None:
    left, right = fresh_tenant(), fresh_tenant()
    binding = make_binding(store_id="m-1", belief_id="bel_shared")
    with PostgresStore(postgres_url, tenant=left) as store:
        store.commit([make_draft(make_records(bindings=[binding]))])
    with PostgresStore(postgres_url, tenant=right) as store:
        assert store.bindings_by_store_id("mem0", ["m-1"]) == {}
        assert store.bindings_for_beliefs(["bel_shared"]) == []
        assert store.list_bindings("mem0") == []
        other = make_binding(store_id="m-1", belief_id="bel_shared", detail="right")
        store.commit([make_draft(make_records(bindings=[other]))])  # same key, other tenant
        assert store.list_bindings("mem0") == [other]
    with PostgresStore(postgres_url, tenant=left) as store:
        assert store.list_bindings("mem0") == [binding]


def test_db_upgrade_creates_and_refuses_foreign_tables(fresh_schema: str) -> None:
    with psycopg.connect(fresh_schema, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (id int)")
    result = CliRunner().invoke(cli, ["db", "upgrade", "--url", fresh_schema])
    assert result.exit_code == 1
    assert "no Gnomon schema_migrations" in result.output
    with pytest.raises(StoreCorruptError):
        PostgresStore(fresh_schema)


def test_db_upgrade_on_sqlite_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["db", "upgrade", "--url", f"sqlite:///{tmp_path}/x.db"])
    assert result.exit_code == 1 and "PostgreSQL" in result.output


# -- concurrent writers in several processes --------------------------------------------------

WRITER = """
import sys
from gnomon.firewall.store.postgres import PostgresStore
from tests.factories import belief_draft, make_belief, make_draft
url, tenant, name, commits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with PostgresStore(url, tenant=tenant, pool_size=1) as store:
    for i in range(commits):
        store.commit([belief_draft(make_belief(statement=f"{name} fact {i}")), make_draft()])
"""


def _writers(url: str, jobs: list[tuple[str, str]], commits: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, tenant, name, str(commits)], env=env, cwd=REPO
        )
        for tenant, name in jobs
    ]
    for proc in procs:
        assert proc.wait(timeout=240) == 0


def test_eight_writer_processes_one_gap_free_chain(postgres_url: str) -> None:
    tenant = fresh_tenant()
    names = [f"writer{i}" for i in range(8)]
    _writers(postgres_url, [(tenant, n) for n in names], commits=25)
    with PostgresStore(postgres_url, tenant=tenant) as store:
        assert [e.seq for e in store.events()] == list(range(1, 401))
        report = store.verify()
        assert report.ok and report.events == 400
        for name in names:
            assert store.count_beliefs(BeliefFilter(text=name)) == 25


def test_two_tenants_written_concurrently_keep_two_chains(postgres_url: str) -> None:
    left, right = fresh_tenant(), fresh_tenant()
    jobs = [(t, f"{t}w{i}") for t in (left, right) for i in range(4)]
    _writers(postgres_url, jobs, commits=20)
    for tenant in (left, right):
        with PostgresStore(postgres_url, tenant=tenant) as store:
            assert [e.seq for e in store.events()] == list(range(1, 161))
            assert store.verify().ok
            assert store.count_beliefs(BeliefFilter()) == 80
            assert store.count_beliefs(BeliefFilter(text="fact")) == 80


# -- tenancy ----------------------------------------------------------------------------------


def test_no_read_path_crosses_a_tenant(postgres_url: str) -> None:
    url_a = tenant_url(postgres_url, fresh_tenant())
    url_b = tenant_url(postgres_url, fresh_tenant())
    project = "tenancy"
    with firewall.open(url_a) as wall_a, firewall.open(url_b) as wall_b:
        with wall_a.session(project=project, actor="coder", user="alice") as s:
            seen = s.observe(
                tool="read_file",
                args={"path": "NOTES.md"},
                content="the zanzibar secret rotates on tuesdays",
                origin=Origin.external("file:NOTES.md"),
            )
            mine = s.remember("zanzibar deploys run from the blue cluster")
            decision = s.decide("use the blue cluster", depends_on=[seen.envelope.id])
        note = seen.content[0]
        auditor_a = wall_a.grant("auditor", "sec")
        wall_a.quarantine(note.id, reason="tenancy probe", authority=Authority.SENTINEL)
        claim_id = note.claim_id
        observation_id = seen.observation.id
        revision = make_revision(belief_id=mine.id)
        contradiction = make_contradiction(belief_ids=[mine.id, note.id])
        wall_a.store.commit(
            [make_draft(make_records(revisions=[revision], contradictions=[contradiction]))]
        )
        ids = [seen.envelope.id, note.id, mine.id]

        # tenant A sees its own rows (the check below is meaningful)
        a = wall_a.store
        assert len(a.get_beliefs(ids)) == 3
        assert a.count_beliefs(BeliefFilter(text="zanzibar")) == 2
        assert a.get_claim(claim_id) is not None
        assert a.get_observation(observation_id) is not None
        assert a.get_evidence(claim_id).items
        assert a.decisions_depending_on(seen.envelope.id) == [decision]
        assert a.revisions_for(mine.id)
        assert a.contradictions_for([mine.id])
        assert len(wall_a.audit("zanzibar", grant=auditor_a)) == 2

        # tenant B, same database, sees none of it through any path
        b = wall_b.store
        assert b.get_beliefs(ids) == {}
        for belief_id in ids:
            assert b.get_belief(belief_id) is None
            assert b.revisions_for(belief_id) == []
            assert b.decisions_depending_on(belief_id) == []
        assert b.contradictions_for(ids) == []
        assert b.find_beliefs(BeliefFilter(text="zanzibar")) == []
        assert b.find_beliefs(BeliefFilter(limit=1000)) == []
        assert b.count_beliefs(BeliefFilter()) == 0
        assert b.count_beliefs(BeliefFilter(text="zanzibar blue cluster")) == 0
        assert b.find_beliefs(BeliefFilter(project=project)) == []
        assert b.get_claim(claim_id) is None
        assert b.get_observation(observation_id) is None
        assert b.get_evidence(claim_id).items == []
        assert b.get_decision(decision.id) is None
        assert b.get_session(s.id) is None
        assert b.head() == (0, "0" * 64)
        assert list(b.events()) == [] and list(b.chain_rows()) == []
        assert b.verify().ok and b.verify().events == 0

        with wall_b.session(project=project, actor="coder", user="alice") as other:
            for preset in ("default", "planner", "reference"):
                result = other.recall("zanzibar secret deploys blue cluster", preset)
                assert result.shown() == [] and result.rejected == (), preset
                assert result.uncertainties == () and result.contradictions == ()
        auditor_b = wall_b.grant("auditor", "sec")
        assert wall_b.audit("zanzibar", grant=auditor_b) == []
        assert wall_b.audit(None, grant=auditor_b, project=project) == []
        # B's own writes (its recalls and audits) form B's chain; A's chain is untouched by them
        assert wall_b.verify_log().ok and wall_a.verify_log().ok
        kinds_b = {e.kind for e in wall_b.store.events()}
        assert "belief.quarantined" not in kinds_b
        assert all(e.session_id != s.id for e in wall_b.store.events())


# -- failure behaviour ------------------------------------------------------------------------


def _sleep_trigger(conn: psycopg.Connection[tuple[object, ...]], tenant: str) -> None:
    conn.execute(
        f"""
        CREATE OR REPLACE FUNCTION gnomon_test_stall() RETURNS trigger AS $$
        BEGIN
            IF NEW.tenant = '{tenant}' THEN PERFORM pg_sleep(30); END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER gnomon_test_stall BEFORE INSERT ON decisions
            FOR EACH ROW EXECUTE FUNCTION gnomon_test_stall();
        """
    )


def test_connection_killed_mid_commit(postgres_url: str) -> None:
    tenant = fresh_tenant()
    store = PostgresStore(postgres_url, tenant=tenant, pool_size=2)
    with store, psycopg.connect(postgres_url, autocommit=True) as other:
        store.commit([make_draft()])
        _sleep_trigger(other, tenant)
        try:
            belief = make_belief(statement="half written if the store is wrong")
            draft = make_draft(make_records(beliefs=[belief], decisions=[make_decision()]))
            failure: list[BaseException] = []

            def write() -> None:
                try:
                    store.commit([make_draft(), draft])
                except BaseException as exc:
                    failure.append(exc)

            writer = threading.Thread(target=write)
            writer.start()
            deadline = time.monotonic() + 20
            killed = 0
            while not killed and time.monotonic() < deadline:
                row = other.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE wait_event = 'PgSleep' AND query LIKE '%%decisions%%' "
                    "AND pid <> pg_backend_pid()"
                ).fetchone()
                killed = int(row[0]) if row else 0
                time.sleep(0.02)
            writer.join(timeout=30)
            assert killed == 1
        finally:
            other.execute("DROP TRIGGER gnomon_test_stall ON decisions")
        (error,) = failure
        assert isinstance(error, StoreError)
        assert store.database in str(error) and "nothing was written" in str(error)
        # nothing half-written: not the events, not the belief, not the head
        assert store.head()[0] == 1
        assert [e.seq for e in store.events()] == [1]
        assert store.get_belief(belief.id) is None
        assert store.find_beliefs(BeliefFilter(text="half")) == []
        # and the same store keeps working
        store.commit([draft])
        assert store.head()[0] == 2 and store.verify().ok
        assert store.get_belief(belief.id) == belief


def test_reconnects_after_every_backend_is_terminated(postgres_url: str) -> None:
    app = f"gnomon_reconnect_{secrets.token_hex(4)}"
    url = f"{postgres_url}&application_name={app}"
    with PostgresStore(url, tenant=fresh_tenant(), pool_size=3) as store:
        store.commit([belief_draft(make_belief(statement="before the restart"))])
        assert store.count_beliefs(BeliefFilter()) == 1
        with psycopg.connect(postgres_url, autocommit=True) as other:
            row = other.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (app,),
            ).fetchone()
            assert row is not None and int(row[0]) >= 1
        time.sleep(0.2)
        store.commit([belief_draft(make_belief(statement="after the restart"))])
        assert store.count_beliefs(BeliefFilter(text="restart")) == 2
        assert store.verify().ok


def test_serialization_failures_are_retried_then_reported(postgres_url: str) -> None:
    tenant = fresh_tenant()
    attempts = {"n": 0}
    with PostgresStore(postgres_url, tenant=tenant, retries=3) as store:
        original = store._write

        def flaky(conn: psycopg.Connection[object], drafts: object) -> object:
            attempts["n"] += 1
            if attempts["n"] <= fail_times:
                # a real 40001 from the server, inside the real transaction
                conn.execute(
                    "DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' "
                    "USING ERRCODE = 'serialization_failure'; END $$"
                )
            return original(conn, drafts)  # type: ignore[arg-type]

        store._write = flaky  # type: ignore[method-assign]
        fail_times = 2
        (event,) = store.commit([belief_draft(make_belief(statement="eventually written"))])
        assert attempts["n"] == 3 and event.seq == 1

        attempts["n"] = 0
        fail_times = 100
        belief = make_belief(statement="never written")
        with pytest.raises(StoreLockedError, match="gave up after 4 attempts") as err:
            store.commit([belief_draft(belief)])
        assert isinstance(err.value.__cause__, psycopg.errors.SerializationFailure)
        assert attempts["n"] == 4
        assert store.head()[0] == 1 and store.get_belief(belief.id) is None
        assert store.verify().ok


def test_lock_timeout_is_a_typed_error(postgres_url: str) -> None:
    tenant = fresh_tenant()
    with PostgresStore(postgres_url, tenant=tenant, lock_timeout=0.2) as store:
        store.commit([make_draft()])
        with psycopg.connect(postgres_url) as holder:
            holder.execute("SELECT 1 FROM chain_heads WHERE tenant = %s FOR UPDATE", (tenant,))
            with pytest.raises(StoreLockedError) as err:
                store.commit([make_draft()])
            assert store.database in str(err.value)
            holder.rollback()
        assert store.commit([make_draft()])[0].seq == 2


# -- ranking ----------------------------------------------------------------------------------


def test_relevance_order_matches_the_memory_backend(postgres_url: str) -> None:
    words = "payment stripe deploy argo cafe service key rotation billing".split()
    beliefs = [
        make_belief(
            id=f"bel_{i:03d}",
            statement=" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(1 + i % 9)),
        )
        for i in range(60)
    ]
    with PostgresStore(postgres_url, tenant=fresh_tenant()) as pg, MemoryStore() as memory:
        for store in (pg, memory):
            store.commit([belief_draft(*beliefs[:40])])
            store.commit([belief_draft(*beliefs[30:])])  # upserts move the statistics too
        for query in ("stripe", "payment argo", "cafe key rotation", "billing service deploy"):
            where = BeliefFilter(text=query, limit=100)
            assert [b.id for b in pg.find_beliefs(where)] == [
                b.id for b in memory.find_beliefs(where)
            ], query


# -- the cross-session probe (issue 4, item 4) ------------------------------------------------

SESSION_B = """
import json, sys
from gnomon import firewall
url, project, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = {}
with firewall.open(url) as wall:
    note = wall.require_belief(ids["note"])
    out["truth"] = note.truth_status.value
    out["origins"] = sorted(note.origin.origin_ids)
    out["integrity"] = note.origin.integrity.name
    with wall.session(project=project, actor="coder", user="alice") as b:
        for preset in ("default", "planner"):
            result = b.recall("pangolin deploys skip review verified user", preset)
            out[preset] = {"accepted": result.accepted_ids, "rendered": result.render()}
        out["happened"] = b.recall("read_file called session", "default").accepted_ids
    auditor = wall.grant("auditor", "sec-team")
    out["audit"] = [e.belief.id for e in wall.audit("pangolin", grant=auditor, project=project)]
    envelope = wall.require_belief(ids["envelope"])
    out["envelope"] = [envelope.truth_status.value, envelope.statement]
    out["verify"] = wall.verify_log().ok
print(json.dumps(out))
"""


def test_cross_session_probe_on_postgres(postgres_url: str) -> None:
    url = tenant_url(postgres_url, fresh_tenant())
    project = "probe-cross-session-postgres"
    ids = _session_a(url, project)  # session A: a separate process reads and imports the note
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SESSION_B, url, project, json.dumps(ids)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["truth"] == TruthStatus.UNVERIFIED.value
    assert "external:file:MEMORY.md" in out["origins"]
    assert out["integrity"] == Integrity.UNTRUSTED.name
    for preset in ("default", "planner"):
        assert ids["note"] not in out[preset]["accepted"], preset
        assert "skip review" not in out[preset]["rendered"], preset
    assert ids["note"] in out["audit"]
    assert out["envelope"][0] == TruthStatus.SUPPORTED.value
    assert ids["session"] in out["envelope"][1]
    assert ids["envelope"] in out["happened"]
    assert out["verify"] is True
    assert "VERIFIED BY THE USER" in NOTE
