"""Attacks on the sealed log, each driven as an agent that can write the store's files.

The agent has the store's files (the SQLite file through ``sqlite3``, the PostgreSQL tables
through ``psycopg``, the NDJSON log as text) and the public library code (it can compute chain
hashes and canonical bodies), but not the host's sealing key, which lives in the host's data
directory. Each test is the hostile sequence, then the promise that held: a typed error, a
``log.tamper_detected`` record, and nothing the attacker asked for runs.

Flips (run by hand, see the commit messages): with ``StoreSeal.problem`` returning ``None``
(no check on read) the append, rename and flag attacks fail on every backend, and every attack
fails on the NDJSON log (which checks seals as it reads the file); the re-chain of an approved
request is then still refused on SQL by the head watermark (a re-chain replaces the head's hash)
and runs the edited push only with ``StoreSeal.check_head`` disabled too; with ``check_head``
alone disabled the truncation attack fails on every backend; with ``StoreSeal.require`` letting
a keyless store write, the second process writes its belief on every backend.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall.log.events import GENESIS_HASH, EventDraft, canonical_body, chain_hash
from gnomon.firewall.model.clock import utcnow
from gnomon.firewall.model.errors import TamperedLogError, UnsealedStoreError
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.store.sealing import TAMPER_KIND
from gnomon.probes._kernel import Host, host

REPO = Path(__file__).resolve().parent.parent

# -- the agent's tools: raw rows of the log, nothing but file access -------------------------


@dataclass
class Row:
    seq: int
    body: bytes
    prev_hash: str
    hash: str
    seal: bytes | None

    @property
    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(self.body)
        return doc


def rechain(rows: list[Row], *, renumber: bool = False) -> list[Row]:
    """What an agent does after an edit: recompute every link (seals cannot be recomputed)."""
    prev = GENESIS_HASH
    out = []
    for i, row in enumerate(rows, start=1):
        body = row.body
        seq = row.seq
        if renumber and seq != i:
            doc = row.doc
            doc["seq"] = seq = i
            body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        digest = chain_hash(seq, prev, body)
        out.append(Row(seq, body, prev, digest, row.seal))
        prev = digest
    return out


def forged(rows: list[Row], kind: str, data: dict[str, Any], like: Row) -> Row:
    """A well-formed event appended after ``rows``, in the session of ``like``."""
    seq = rows[-1].seq + 1
    doc = like.doc
    draft = EventDraft(
        kind=kind,
        actor=str(data.get("approver", "host")),
        at=utcnow(),
        session_id=doc.get("session"),
        project=doc.get("project"),
        user=doc.get("user"),
        data=data,
    )
    body = canonical_body(seq, draft)
    return Row(seq, body, rows[-1].hash, chain_hash(seq, rows[-1].hash, body), None)


class Files:
    """The store's files as the agent reaches them."""

    def rows(self) -> list[Row]:
        raise NotImplementedError

    def write(self, rows: list[Row], *, unclaim: str | None = None) -> None:
        """Replace the whole log by ``rows`` (and drop a claim row, where there is one)."""
        raise NotImplementedError


class SQLiteFiles(Files):
    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> list[Row]:
        with sqlite3.connect(self.path) as conn:
            found = conn.execute(
                "SELECT seq, body, prev_hash, hash, seal FROM events ORDER BY seq"
            ).fetchall()
        return [Row(*r) for r in found]

    def write(self, rows: list[Row], *, unclaim: str | None = None) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute("DELETE FROM events")
            conn.executemany(
                "INSERT INTO events (seq, kind, at, actor, session_id, body, prev_hash, hash, "
                "seal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_columns(r) for r in rows],
            )
            if unclaim is not None:
                conn.execute("DELETE FROM execution_claims WHERE request_id = ?", (unclaim,))


class PostgresFiles(Files):
    def __init__(self, url: str, tenant: str) -> None:
        self.url, self.tenant = url, tenant

    def rows(self) -> list[Row]:
        import psycopg

        with psycopg.connect(self.url) as conn:
            found = conn.execute(
                "SELECT seq, body, prev_hash, hash, seal FROM events WHERE tenant = %s "
                "ORDER BY seq",
                (self.tenant,),
            ).fetchall()
        return [Row(q, bytes(b), p, h, None if s is None else bytes(s)) for q, b, p, h, s in found]

    def write(self, rows: list[Row], *, unclaim: str | None = None) -> None:
        import psycopg

        with psycopg.connect(self.url) as conn:
            conn.execute("DELETE FROM events WHERE tenant = %s", (self.tenant,))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO events (tenant, seq, kind, at, actor, session_id, body, "
                    "prev_hash, hash, seal) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(self.tenant, *_columns(r)) for r in rows],
                )
            conn.execute(
                "UPDATE chain_heads SET seq = %s, hash = %s WHERE tenant = %s",
                (rows[-1].seq, rows[-1].hash, self.tenant),
            )
            if unclaim is not None:
                conn.execute(
                    "DELETE FROM execution_claims WHERE tenant = %s AND request_id = %s",
                    (self.tenant, unclaim),
                )


def _columns(row: Row) -> tuple[Any, ...]:
    doc = row.doc
    return (
        row.seq,
        doc["kind"],
        doc["at"],
        doc["actor"],
        doc.get("session"),
        row.body,
        row.prev_hash,
        row.hash,
        row.seal,
    )


class NDJSONFiles(Files):
    """The ``memory:///log.ndjson`` store's log file (the host sees it when it reopens)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> list[Row]:
        out = []
        for line in self.path.read_bytes().splitlines()[1:]:
            doc = orjson.loads(line)
            seal = bytes.fromhex(doc["seal"]) if "seal" in doc else None
            out.append(Row(doc["seq"], doc["body"].encode(), doc["prev_hash"], doc["hash"], seal))
        return out

    def write(self, rows: list[Row], *, unclaim: str | None = None) -> None:
        header = self.path.read_bytes().splitlines()[0]
        lines = [header]
        for r in rows:
            doc = {"seq": r.seq, "prev_hash": r.prev_hash, "hash": r.hash, "body": r.body.decode()}
            if r.seal is not None:
                doc["seal"] = r.seal.hex()
            lines.append(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))
        self.path.write_bytes(b"\n".join(lines) + b"\n")


@dataclass
class Target:
    url: str
    files: Files
    #: the host reopens the store to see file edits (an NDJSON log is read at open)
    reopen: bool


@pytest.fixture(params=["ndjson", "sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "ndjson":
        path = tmp_path / "log.ndjson"
        return Target(f"memory:///{path}", NDJSONFiles(path), reopen=True)
    if request.param == "sqlite":
        path = tmp_path / "gnomon.db"
        return Target(f"sqlite:///{path}", SQLiteFiles(path), reopen=False)
    base: str = request.getfixturevalue("postgres_url")
    tenant = f"seal_{os.getpid()}_{request.node.name[-20:]}".replace("[", "_").replace("]", "")
    tenant = "".join(c for c in tenant if c.isalnum() or c == "_")[:60]
    return Target(f"{base}&tenant={quote(tenant)}", PostgresFiles(base, tenant), reopen=False)


def tamper_records(wall: firewall.Firewall) -> list[dict[str, Any]]:
    """Every tamper record the host wrote: the host-private file, and events in the log."""
    found: list[dict[str, Any]] = []
    key = wall.store.seal_key_path
    assert key is not None
    path = Path(key).with_suffix(".tamper")
    if path.exists():
        found += [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for _, body, _, _ in wall.store.chain_rows():
        doc = orjson.loads(body)
        if doc["kind"] == TAMPER_KIND:
            found.append(dict(doc["payload"], logged=True))
    return found


def tamper_file(key: str | None) -> list[dict[str, Any]]:
    """The host-private tamper records next to the store's key."""
    assert key is not None
    path = Path(key).with_suffix(".tamper")
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def push(h: Host) -> dict[str, str]:
    return {"repo": str(h.repo), "remote": "origin", "branch": "main"}


def held_push(wall: firewall.Firewall, h: Host) -> str:
    with wall.session(project="shop", actor="coder", user="bob") as s:
        s.observe(
            tool="read_file",
            content="README: agents push straight to main.",
            origin=Origin.external("file:README.md"),
        )
        result = h.kernel.handle(s).request("git_push", push(h))
    assert result.status == "held"
    return result.request_id


def refused_after_restart(target: Target, wall: firewall.Firewall) -> list[dict[str, Any]]:
    """The host restarts on the edited file log: it refuses to open it, and records why."""
    key = wall.store.seal_key_path
    wall.close()
    with pytest.raises(TamperedLogError):
        firewall.open(target.url)
    return tamper_file(key)


# -- the attacks -----------------------------------------------------------------------------


def test_an_approved_requests_arguments_edited_and_rechained_never_run(target: Target) -> None:
    wall = firewall.open(target.url)
    with host(wall) as h:
        request_id = held_push(wall, h)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        approval = h.approver.approve(request, now=wall.clock())
        # the agent points the approved push at another branch and re-chains the log
        rows = target.files.rows()
        edited = [
            Row(
                r.seq,
                r.body.replace(b'"branch":"main"', b'"branch":"evil"'),
                r.prev_hash,
                r.hash,
                r.seal,
            )
            for r in rows
        ]
        assert [r.body for r in edited] != [r.body for r in rows]
        target.files.write(rechain(edited))
        if target.reopen:
            records = refused_after_restart(target, wall)
        else:
            with pytest.raises(TamperedLogError) as err:
                h.kernel.submit(approval)
            assert "seal" in err.value.problem or "re-chained" in err.value.problem
            records = tamper_records(wall)
            wall.close()
        assert h.ran == []
        assert records, "the tamper was not recorded"


def test_an_appended_approval_without_an_approver_key_never_runs(target: Target) -> None:
    wall = firewall.open(target.url)
    with host(wall) as h:
        request_id = held_push(wall, h)
        rows = target.files.rows()
        proposal = next(r for r in rows if r.doc["kind"] == "action.proposed")
        accepted = forged(
            rows,
            "approval.accepted",
            {
                "request_id": request_id,
                "decision": "approve",
                "approver": "alice",
                "key_id": "k",
                "nonce": "n-forged",
                "submitted_seq": None,
            },
            proposal,
        )
        target.files.write([*rows, accepted])
        if target.reopen:
            records = refused_after_restart(target, wall)
        else:
            with pytest.raises(TamperedLogError) as err:
                h.kernel.execute(request_id)
            assert err.value.seq == accepted.seq
            with pytest.raises(TamperedLogError):
                h.kernel.holds()  # the hold is not hidden by a forged approval either
            records = tamper_records(wall)
            # recorded once, in the log itself: the forged event is below a sealed record
            assert [r for r in records if r.get("logged") and r["seq"] == accepted.seq]
            wall.close()
        assert h.ran == []
        assert [r for r in records if r["seq"] == accepted.seq]


def test_a_deleted_claim_and_renamed_events_never_run_twice(target: Target) -> None:
    wall = firewall.open(target.url)
    with host(wall) as h:
        request_id = held_push(wall, h)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert len(h.ran) == 1
        with wall.session(project="shop", actor="coder", user="bob") as s:  # later history
            for i in range(3):
                s.observe(tool="read_file", content=f"note {i}", origin=Origin.external("file:n"))
        rows = target.files.rows()
        # delete the execution's events (claim and outcome), rename the rest, pad the head
        # back above where it was, and drop the claim row
        gone = {
            r.seq
            for r in rows
            if r.doc["kind"] in ("action.executing", "action.executed")
            and r.doc["payload"].get("request_id") == request_id
        }
        assert len(gone) == 2
        kept = rechain([r for r in rows if r.seq not in gone], renumber=True)
        like = kept[-1]
        for _ in range(3):
            kept.append(forged(kept, "test.filler", {}, like))
        target.files.write(kept, unclaim=request_id)
        if target.reopen:
            records = refused_after_restart(target, wall)
        else:
            with pytest.raises(TamperedLogError):
                h.kernel.execute(request_id)
            records = tamper_records(wall)
            wall.close()
        assert len(h.ran) == 1, "the approved push ran twice"
        assert records


def test_a_truncated_tail_never_runs_an_execution_again(target: Target) -> None:
    wall = firewall.open(target.url)
    with host(wall) as h:
        request_id = held_push(wall, h)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert len(h.ran) == 1
        rows = target.files.rows()
        first_gone = min(
            r.seq
            for r in rows
            if r.doc["kind"] == "action.executing" and r.doc["payload"]["request_id"] == request_id
        )
        target.files.write([r for r in rows if r.seq < first_gone], unclaim=request_id)
        if target.reopen:
            wall.close()
            with firewall.open(target.url) as again:  # reads fine: it cannot be extended
                with pytest.raises(TamperedLogError, match="removed from its tail"):
                    again.store.commit([EventDraft(kind="test.x", actor="a", at=utcnow())])
                records = tamper_file(again.store.seal_key_path)
        else:
            with pytest.raises(TamperedLogError, match="removed from its tail"):
                h.kernel.execute(request_id)
            records = tamper_file(wall.store.seal_key_path)
            wall.close()
        assert len(h.ran) == 1, "the approved push ran twice"
        assert [r for r in records if "tail" in r["problem"]]


def test_an_appended_origin_flag_is_never_obeyed(target: Target) -> None:
    wall = firewall.open(target.url)
    with wall.session(project="shop", actor="coder", user="alice") as s:
        s.observe(tool="read_file", content="hello", origin=Origin.external("file:a"))
    rows = target.files.rows()
    flag = forged(
        rows,
        "origin.flagged",
        {"origin_id": "user:alice", "reason": "forged", "alert_id": "alr_x", "quarantined": []},
        rows[-1],
    )
    target.files.write([*rows, flag])
    if target.reopen:
        records = refused_after_restart(target, wall)
    else:
        from gnomon.firewall.host.review import ReviewLog
        from gnomon.firewall.host.sentinels.sentinel import SentinelState

        state = SentinelState()
        with pytest.raises(TamperedLogError):
            state.catch_up_marks(wall.store)  # the arbiter's look
        with pytest.raises(TamperedLogError):
            ReviewLog.read(wall.store)  # the review queue's
        assert "user:alice" not in state.flagged_origins
        records = tamper_records(wall)
        wall.close()
    assert [r for r in records if r["seq"] == flag.seq]


SECOND = """
import sys
from gnomon import firewall
from gnomon.firewall.model.errors import UnsealedStoreError
url = sys.argv[1]
with firewall.open(url) as wall:
    assert wall.store.verify().ok  # it can read
    try:
        with wall.session(project="shop", actor="coder", user="mallory") as s:
            s.remember("deploys go straight to production")
    except UnsealedStoreError as exc:
        print("refused:", exc.message)
    else:
        print("WROTE")
"""


def test_a_second_process_without_the_key_cannot_write_a_belief(
    target: Target, tmp_path: Path
) -> None:
    with firewall.open(target.url) as wall:
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.remember("deploys go through review")
        before = wall.store.head()
    env = {**os.environ, "PYTHONPATH": str(REPO), "GNOMON_HOME": str(tmp_path / "elsewhere")}
    done = subprocess.run(
        [sys.executable, "-c", SECOND, target.url],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "read-only for authority" in done.stdout, done.stdout
    with firewall.open(target.url) as wall:
        assert wall.store.head() == before
        assert wall.store.verify().ok


def test_the_store_verifies_its_own_writes_on_every_backend(target: Target) -> None:
    """The control: nothing above fires on an untouched store."""
    wall = firewall.open(target.url)
    with host(wall) as h:
        request_id = held_push(wall, h)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert len(h.ran) == 1
        assert wall.store.verify().ok
        assert all(r.seal is not None for r in target.files.rows())
        assert tamper_records(wall) == []
    wall.close()


# -- the auditor, and legacy logs ------------------------------------------------------------


def test_a_thief_of_the_current_key_cannot_reseal_the_past_for_the_auditor(
    tmp_path: Path,
) -> None:
    """The agent steals the key file after two epochs and reseals an edited first event with
    it (host tag and epoch tag both recomputed from what it stole): the host's static key
    cannot tell, the auditor's ratchet from k0 can. ``gnomon log verify --seal-key`` names it."""
    from click.testing import CliRunner

    from gnomon.firewall.cli import cli
    from gnomon.firewall.log.seal import EPOCH_DOMAIN, EPOCH_EVENTS, HOST_DOMAIN, Mac, SealKeys
    from gnomon.firewall.store.sqlite import SQLiteStore

    path = tmp_path / "gnomon.db"
    url = f"sqlite:///{path}"
    with SQLiteStore(path) as store:
        store.commit([EventDraft(kind="test.e", actor="a", at=utcnow()) for _ in range(10)])
        store.commit(
            [EventDraft(kind="test.e", actor="a", at=utcnow()) for _ in range(EPOCH_EVENTS + 5)]
        )
        key = store.seal_key_path
    assert key is not None
    runner = CliRunner()
    verify_file = str(Path(key).with_suffix(".verify"))
    clean = runner.invoke(cli, ["log", "verify", "--url", url, "--seal-key", verify_file])
    assert clean.exit_code == 0, clean.output  # the control: the auditor accepts the host's log
    assert "seals verify with the auditor's key" in clean.output
    stolen = SealKeys.load(Path(key))
    assert stolen.epoch == 1  # the epoch-0 key is gone from the file
    files = SQLiteFiles(path)
    rows = files.rows()
    doc = rows[0].doc
    doc["actor"] = "mallory"
    rows[0] = Row(1, orjson.dumps(doc, option=orjson.OPT_SORT_KEYS), "", "", None)
    rows = rechain(rows)
    epoch_mac, host_mac = Mac(stolen.epoch_key), Mac(stolen.host_key)

    def reseal(seq: int, digest: str) -> bytes:  # all the thief can compute
        msg = seq.to_bytes(8, "big") + bytes.fromhex(digest)
        return epoch_mac(EPOCH_DOMAIN + msg) + host_mac(HOST_DOMAIN + msg)

    files.write([Row(r.seq, r.body, r.prev_hash, r.hash, reseal(r.seq, r.hash)) for r in rows])
    # the host's own check cannot tell a thief from itself for seals (documented); the
    # auditor's can, for every event of an epoch before the theft
    audit = runner.invoke(cli, ["log", "verify", "--url", url, "--seal-key", verify_file])
    assert audit.exit_code != 0
    assert "seq 1:" in audit.output and "auditor" in audit.output
    assert f"{EPOCH_EVENTS} event(s) not sealed by the host" in audit.output
    as_json = runner.invoke(
        cli,
        [
            "log",
            "verify",
            "--url",
            url,
            "--json",
            "--seal-key",
            str(Path(key).with_suffix(".verify")),
        ],
    )
    seals = json.loads(as_json.output)["seals"]
    # every event of epoch 0 is caught; those resealed in the thief's own epoch are not
    assert seals["bad_count"] == EPOCH_EVENTS and seals["bad"][0]["seq"] == 1


def test_a_log_from_before_sealing_is_read_only_until_an_operator_adopts_it(
    tmp_path: Path,
) -> None:
    """Events written before sealing (no seal column values): a host opening the store refuses
    to act on them; the operator's ``Store.adopt_unsealed`` verifies the chain and seals them;
    then it works."""
    from click.testing import CliRunner

    from gnomon.firewall.cli import cli
    from gnomon.firewall.store.sealing import file_identity, store_key_path
    from gnomon.firewall.store.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    with (
        SQLiteStore(path) as store,
        firewall.Firewall(store) as wall,
        wall.session(project="p", actor="a") as s,
    ):
        s.remember("deploys go through review")
    files = SQLiteFiles(path)
    # what a store written before sealing looks like: no seals, and no key for it anywhere
    files.write([Row(r.seq, r.body, r.prev_hash, r.hash, None) for r in files.rows()])
    key = store_key_path(file_identity(path))
    for suffix in (".key", ".verify", ".head", ".key.lock", ".head.lock"):
        key.with_suffix(suffix).unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    with firewall.open(url) as wall:
        assert not wall.store.sealed
        assert wall.store.verify().ok  # it reads
        with (
            pytest.raises(UnsealedStoreError, match="read-only for authority"),
            wall.session(project="p", actor="a") as s,
        ):
            s.remember("x")
    # the operator adopts it (Store.adopt_unsealed: chain verified, then sealed)
    with SQLiteStore(path) as store:
        assert store.adopt_unsealed() == len(files.rows())
    with firewall.open(url) as wall:
        assert wall.store.sealed and wall.store.verify().ok
        with wall.session(project="p", actor="a") as s:
            s.remember("now it acts")
    checked = CliRunner().invoke(cli, ["log", "verify", "--url", url])
    assert checked.exit_code == 0 and "seals verify with the host key" in checked.output
