"""``gnomon log verify | checkpoint | export | import`` and ``gnomon rebuild`` (CliRunner)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gnomon.firewall.cli import cli
from gnomon.firewall.host.demo import run_demo
from gnomon.firewall.store.paths import keys_dir


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def fails(result: Result, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture
def demo(tmp_path: Path) -> tuple[str, Path]:
    path = tmp_path / "store" / "demo.db"
    run_demo(f"sqlite:///{path}")
    return f"sqlite:///{path}", path


@pytest.fixture
def keys(gnomon_home: Path) -> tuple[str, str]:
    assert run("keys", "generate").exit_code == 0
    folder = gnomon_home / "keys"
    return str(folder / "operator.key"), str(folder / "operator.pub")


def test_checkpoint_then_verify_with_the_key(demo: tuple[str, Path], keys: tuple[str, str]) -> None:
    url, _ = demo
    private, public = keys
    fails(run("log", "verify", "--url", url, "--key", public), "no checkpoint signed")
    result = run("log", "checkpoint", "--url", url, "--key", private, "--out", "cp.json")
    assert result.exit_code == 0, result.output
    assert "checkpoint: seq" in result.output and Path("cp.json").exists()
    result = run("log", "verify", "--url", url, "--key", public, "--checkpoint", "cp.json")
    assert result.exit_code == 0, result.output
    assert "signed: checkpoints by the pinned key cover seq" in result.output
    data = json.loads(run("log", "verify", "--url", url, "--key", public, "--json").output)
    assert data["ok"] and data["checkpoints"] == 1 and data["signatures_checked"]


def test_verify_catches_a_truncated_tail(demo: tuple[str, Path], keys: tuple[str, str]) -> None:
    url, path = demo
    private, public = keys
    run("log", "checkpoint", "--url", url, "--key", private)
    run("log", "checkpoint", "--url", url, "--key", private, "--out", "cp.json")
    with sqlite3.connect(path) as conn:
        (last,) = conn.execute("SELECT max(seq) FROM events").fetchone()
        head = last - 1  # the file covers the head before its own log.checkpoint event
        conn.execute("DELETE FROM events WHERE seq >= ?", (head,))
    conn.close()
    # still a valid chain, but below the head the host sealed (its watermark): refused too
    plain = run("log", "verify", "--url", url)
    assert plain.exit_code == 1 and "removed from its tail" in plain.output, plain.output
    fails(
        run("log", "verify", "--url", url, "--key", public, "--checkpoint", "cp.json"),
        "truncated",
        f"at seq {head}",
    )
    result = run("log", "verify", "--url", url, "--checkpoint", "cp.json", "--json")
    assert result.exit_code == 1 and json.loads(result.output)["first_bad_seq"] == head


def test_verify_refuses_an_unpinned_signer(demo: tuple[str, Path], keys: tuple[str, str]) -> None:
    url, _ = demo
    _, public = keys
    other = run("keys", "generate", "--name", "mallory", "--trusted-keys", "elsewhere")
    assert other.exit_code == 0
    run("log", "checkpoint", "--url", url, "--key", str(keys_dir() / "mallory.key"))
    fails(run("log", "verify", "--url", url, "--key", public), "not pinned")


def test_export_import_round_trip(
    demo: tuple[str, Path], keys: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = demo
    private, public = keys
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    run("log", "export", "--url", url, "--out", "unsigned.ndjson")
    # the demo holds users' statements and grants: no key, no import of that authority
    fails(run("log", "import", "unsigned.ndjson", "--url", target), "no pinned key vouches")
    assert run("log", "checkpoint", "--url", url, "--key", private).exit_code == 0
    result = run("log", "export", "--url", url, "--out", "log.ndjson")
    assert result.exit_code == 0 and "exported" in result.stderr
    stdout = run("log", "export", "--url", url)
    assert stdout.stdout_bytes == Path("log.ndjson").read_bytes()
    result = run("log", "import", "log.ndjson", "--url", target, "--key", public, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["imported"] > 10
    assert run("rebuild", "--url", target).exit_code == 0
    again = run("log", "import", "log.ndjson", "--url", target, "--key", public)
    assert again.exit_code == 0 and "imported 0 events" in again.output
    as_file_log = run("log", "verify", "--url", "memory:///log.ndjson")
    assert as_file_log.exit_code == 0, as_file_log.output


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (lambda d: d[:-30], ("incomplete", "truncated")),
        (lambda d: d.replace(b"alice", b"al\xffce", 1), ("not valid UTF-8",)),
        (lambda d: d.replace(b'\\"schema\\":1', b'\\"schema\\":9', 1), ("seq 1",)),
        (lambda d: d.replace(b'"version":1', b'"version":2', 1), ("unknown log format version",)),
        (lambda d: d.replace(b"alice", b"mallo", 1), ("hash does not match",)),
    ],
    ids=["truncated", "utf8", "schema", "format", "edited"],
)
def test_import_of_a_bad_file_imports_nothing(
    demo: tuple[str, Path], tmp_path: Path, edit: object, fragments: tuple[str, ...]
) -> None:
    url, _ = demo
    run("log", "export", "--url", url, "--out", "log.ndjson")
    path = Path("log.ndjson")
    path.write_bytes(edit(path.read_bytes()))  # type: ignore[operator]
    target = tmp_path / "copy.db"
    fails(
        run("log", "import", "log.ndjson", "--url", f"sqlite:///{target}"),
        "log.ndjson line",
        *fragments,
    )
    with sqlite3.connect(target) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
    conn.close()


def test_import_with_the_wrong_key(
    demo: tuple[str, Path], keys: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = demo
    private, _ = keys
    run("log", "checkpoint", "--url", url, "--key", private)
    run("log", "export", "--url", url, "--out", "log.ndjson")
    run("keys", "generate", "--name", "other", "--trusted-keys", "elsewhere")
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    fails(
        run("log", "import", "log.ndjson", "--url", target, "--key", str(keys_dir() / "other.pub")),
        "not pinned",
    )
    assert json.loads(run("log", "verify", "--url", target, "--json").output)["events"] == 0


def test_rebuild_reports_and_applies(demo: tuple[str, Path]) -> None:
    url, path = demo
    result = run("rebuild", "--url", url)
    assert result.exit_code == 0 and "ok: the live projections equal" in result.output
    with sqlite3.connect(path) as conn:
        conn.execute(
            "DELETE FROM observations WHERE rowid IN (SELECT rowid FROM observations LIMIT 1)"
        )
    conn.close()
    fails(run("rebuild", "--url", url), "differ from the log in 1 record", "observations: 1")
    data = json.loads(run("rebuild", "--url", url, "--json").output)
    assert data["ok"] is False and data["listed"][0]["table"] == "observations"
    applied = run("rebuild", "--url", url, "--apply")
    assert applied.exit_code == 0 and "1 difference(s) before, 0 after" in applied.output
    assert run("rebuild", "--url", url).exit_code == 0


def _unseal(path: Path) -> None:
    """What a store written before sealing looks like: no event or row seals, no key."""
    from gnomon.firewall.store.sealing import file_identity, forget_keys

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET seal = NULL")
        conn.execute("UPDATE beliefs SET seal = NULL")
    conn.close()
    forget_keys(file_identity(path))


def test_log_adopt_seals_a_log_from_before_sealing(
    demo: tuple[str, Path], keys: tuple[str, str]
) -> None:
    url, path = demo
    private, public = keys
    assert run("log", "checkpoint", "--url", url, "--key", private).exit_code == 0
    _unseal(path)
    # without the operator's key: refused, nothing sealed
    fails(run("log", "adopt", "--url", url), "needs --key PUBFILE")
    fails(run("log", "verify", "--url", url, "--seal-key", "nowhere.verify"), "nowhere.verify")
    result = run("log", "adopt", "--url", url, "--key", public, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["adopted"] == data["head_seq"] > 0 and Path(data["verify"]).exists()
    checked = run("log", "verify", "--url", url)
    assert checked.exit_code == 0 and "seals verify with the host key" in checked.output
    # the host acts on it again: every row was rebuilt and sealed with the new key
    from gnomon import firewall

    with firewall.open(url) as wall, wall.session(project="demo", actor="a") as s:
        s.recall("deploy")
        s.remember("now it acts")


def test_log_adopt_refuses_a_log_no_pinned_checkpoint_covers(
    demo: tuple[str, Path], keys: tuple[str, str]
) -> None:
    url, path = demo
    _, public = keys
    _unseal(path)
    fails(run("log", "adopt", "--url", url, "--key", public), "checkpoint")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE seal IS NOT NULL").fetchone() == (0,)
    conn.close()


def _rechained(lines: list[bytes]) -> list[bytes]:
    """What an agent does to an export after editing a body: recompute every link (the seals,
    made with keys it does not hold, stay as they were)."""
    import orjson

    from gnomon.firewall.log.events import GENESIS_HASH, chain_hash

    out, prev = [lines[0]], GENESIS_HASH
    for raw in lines[1:]:
        doc = orjson.loads(raw)
        doc["prev_hash"] = prev
        doc["hash"] = prev = chain_hash(doc["seq"], prev, doc["body"].encode())
        out.append(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))
    return out


def test_an_export_carries_the_seals_and_the_auditor_checks_them(
    demo: tuple[str, Path], tmp_path: Path
) -> None:
    from gnomon.firewall.store.sealing import file_identity, store_key_path

    url, path = demo
    verify_key = str(store_key_path(file_identity(path)).with_suffix(".verify"))
    assert run("log", "export", "--url", url, "--out", "log.ndjson").exit_code == 0
    lines = Path("log.ndjson").read_bytes().splitlines()
    assert all(b'"seal":"' in line for line in lines[1:])
    checked = run("log", "verify", "--file", "log.ndjson", "--seal-key", verify_key)
    assert checked.exit_code == 0, checked.output
    assert "seals verify with the auditor's key" in checked.output
    # the attack: an exported event's body edited and the export re-chained
    import orjson

    edited = lines[:]
    doc = orjson.loads(edited[3])
    doc["body"] = doc["body"].replace('"actor":"', '"actor":"x', 1)
    edited[3] = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    assert edited[3] != lines[3]
    Path("edited.ndjson").write_bytes(b"\n".join(_rechained(edited)) + b"\n")
    # the flip: the keyless chain alone accepts the re-chained export
    assert run("log", "verify", "--file", "edited.ndjson").exit_code == 0
    fails(
        run("log", "verify", "--file", "edited.ndjson", "--seal-key", verify_key),
        "not sealed by the host",
        "auditor's key",
    )
