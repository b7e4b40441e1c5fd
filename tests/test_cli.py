"""The ``gnomon`` command line: every command's happy path and its bad-input path.

Most tests drive the click group in-process with :class:`click.testing.CliRunner`; a few run the
installed ``gnomon`` console script in a subprocess, as a user would, to prove the entry point,
the exit codes and the absence of tracebacks.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.host.demo import DemoResult, run_demo

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in its own working directory with no Gnomon environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")  # pytest-xdist workers set this; be the same without
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def fails(result: Result, *fragments: str) -> None:
    """A refused command: exit 1, an ``error:`` line naming the problem, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@dataclass
class Demo:
    url: str
    path: Path
    result: DemoResult


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    path = tmp_path / "store" / "demo.db"
    url = f"sqlite:///{path}"
    return Demo(url, path, run_demo(url))


@pytest.fixture
def operator_key(gnomon_home: Path) -> Path:
    result = run("keys", "generate")
    assert result.exit_code == 0, result.output
    return gnomon_home / "keys" / "operator.key"


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_on_the_embedded_default_with_no_configuration(
    tmp_path: Path, gnomon_home: Path
) -> None:
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert "VERDICT: PASS" in result.output
    demo_db = gnomon_home / "demo" / "demo.db"  # its own store, in the data directory
    assert str(demo_db.resolve()) in result.output
    assert f"gnomon log verify --url sqlite:///{demo_db}" in result.output
    assert not (tmp_path / ".gnomon").exists()  # nothing in the working tree
    assert not (gnomon_home / "gnomon.db").exists()  # nor in the default store
    assert demo_db.stat().st_mode & 0o777 == 0o600
    assert "ADMIN_TOKEN" not in result.output.split("## Quoted data")[0]
    again = run("demo")  # the demo store is recreated, not appended to
    assert again.exit_code == 0, again.output
    with firewall.open(f"sqlite:///{demo_db}") as wall:
        assert wall.verify_log().events == json.loads(run("demo", "--json").output)["events"]


def test_demo_json() -> None:
    result = run("demo", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["passed"] is True
    assert data["poison_in_trusted_context"] == 0
    assert {c["name"] for c in data["checks"]} >= {"default: user fact accepted"}


def test_demo_refuses_an_existing_store(demo: Demo) -> None:
    fails(run("demo", "--url", demo.url), "already exists")


# -- beliefs ---------------------------------------------------------------------------------


def test_beliefs_list(demo: Demo) -> None:
    result = run("beliefs", "list", "--url", demo.url, "--limit", "100")
    assert result.exit_code == 0, result.output
    assert demo.result.poison_content_id in result.output


def test_beliefs_list_filters_json(demo: Demo) -> None:
    result = run("beliefs", "list", "--url", demo.url, "--security", "quarantined", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # the sentinel's quarantine, then the DEVELOPMENT.md origin flag's fan-out (the summary)
    expected = {demo.result.poison_content_id, *demo.result.fanout_ids}
    assert sorted(b["id"] for b in data["beliefs"]) == sorted(expected)
    supported = json.loads(
        run("beliefs", "list", "--url", demo.url, "--truth", "supported", "--json").output
    )
    assert supported["beliefs"]
    assert {b["truth_status"] for b in supported["beliefs"]} == {"supported"}
    assert demo.result.user_fact_id in {b["id"] for b in supported["beliefs"]}


def test_global_url_option_before_the_command(demo: Demo) -> None:
    result = run("--url", demo.url, "beliefs", "list", "--json", "--limit", "1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["total"] > 1


def test_gnomon_url_environment(demo: Demo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GNOMON_URL", demo.url)
    result = run("beliefs", "show", demo.result.user_fact_id, "--json")
    assert result.exit_code == 0, result.output


def test_beliefs_show_has_four_axes_origin_and_revisions(demo: Demo) -> None:
    ident = demo.result.poison_content_id
    result = run("beliefs", "show", ident, "--url", demo.url)
    assert result.exit_code == 0, result.output
    for word in (
        "truth",
        "retrieval",
        "security",
        "freshness",
        "quarantined",
        "sentinel",
        "external:file:DEVELOPMENT.md",
        "revisions (2)",
    ):
        assert word in result.output
    data = json.loads(run("beliefs", "show", ident, "--url", demo.url, "--json").output)
    assert data["security_status"] == "quarantined"
    # reported without a channel: the agent's word for what it read (issue 21)
    assert data["origin_label"] == "untrusted [agent:coder-agent, external:file:DEVELOPMENT.md]"
    assert [r["to_state"] for r in data["revisions"]] == ["quarantined", "privileged_only"]


def test_beliefs_show_unknown_id(demo: Demo) -> None:
    fails(run("beliefs", "show", "bel_nope", "--url", demo.url), "unknown belief id 'bel_nope'")


def test_missing_store_is_an_error_not_an_empty_store(gnomon_home: Path) -> None:
    fails(run("beliefs", "list"), "no Gnomon store", "hint: run `gnomon init`")
    assert not (gnomon_home / "gnomon.db").exists()
    # the hint is right: `gnomon init` creates the default store, which then opens empty
    assert run("init").exit_code == 0
    assert (gnomon_home / "gnomon.db").exists()
    listed = run("beliefs", "list", "--json")
    assert listed.exit_code == 0 and json.loads(listed.output)["total"] == 0


def test_bad_choice_is_a_usage_error(demo: Demo) -> None:
    result = run("beliefs", "list", "--url", demo.url, "--truth", "true")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# -- recall ----------------------------------------------------------------------------------

QUERY = "payment config admin token deploy main"


def test_recall_default_accepts_the_user_fact_only(demo: Demo) -> None:
    result = run("recall", QUERY, "--project", "shop", "--user", "alice", "--url", demo.url)
    assert result.exit_code == 0, result.output
    assert "accepted (1)" in result.output
    assert "quoted (0)" in result.output
    assert "ADMIN_TOKEN" not in result.output  # rejected items are shown by id, never by text
    data = json.loads(
        run(
            "recall",
            QUERY,
            "--project",
            "shop",
            "--user",
            "alice",
            "--url",
            demo.url,
            "--json",
            "-k",
            "50",
        ).output
    )
    assert [b["id"] for b in data["accepted"]] == [demo.result.user_fact_id]
    rejected = {r["belief_id"] for r in data["rejected"]}
    assert set(demo.result.poison_ids) - {demo.result.poison_content_id} <= rejected


def test_recall_reference_quotes_poison(demo: Demo) -> None:
    data = json.loads(
        run(
            "recall",
            QUERY,
            "--project",
            "shop",
            "--policy",
            "reference",
            "--url",
            demo.url,
            "--json",
        ).output
    )
    assert data["policy"] == "reference"
    poison = set(demo.result.poison_ids)
    quoted = {b["id"] for b in data["quoted"]}
    # the poison is never trusted: quoted as data, or withheld (it holds a live key, which the
    # one credential rule keeps out of every rendering), and its key never reaches the context
    assert quoted <= poison
    assert not poison & {b["id"] for b in data["accepted"]}
    assert poison & (quoted | {r["belief_id"] for r in data["rejected"]})


def test_recall_with_policy_file(demo: Demo, tmp_path: Path) -> None:
    custom = tmp_path / "mine.yaml"
    custom.write_text(ContextPolicy.preset("planner").replace(name="mine").to_yaml())
    result = run(
        "recall", QUERY, "--project", "shop", "--policy", str(custom), "--url", demo.url, "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["policy"] == "mine"


def test_recall_unknown_policy(demo: Demo) -> None:
    fails(
        run("recall", QUERY, "--project", "shop", "--policy", "lenient", "--url", demo.url),
        "unknown policy preset 'lenient'",
    )
    fails(
        run("recall", QUERY, "--project", "shop", "--policy", "nope.yaml", "--url", demo.url),
        "nope.yaml: no such policy file",
    )


def test_recall_refuses_the_privileged_preset(demo: Demo) -> None:
    fails(
        run("recall", QUERY, "--project", "shop", "--policy", "audit", "--url", demo.url),
        "privileged",
    )


def test_recall_requires_project(demo: Demo) -> None:
    assert run("recall", QUERY, "--url", demo.url).exit_code == 2


# -- keys and privileged moves ----------------------------------------------------------------


def test_keys_generate_writes_and_pins(tmp_path: Path, gnomon_home: Path) -> None:
    result = run("keys", "generate")
    assert result.exit_code == 0, result.output
    keys = gnomon_home / "keys"
    assert (keys / "operator.key").stat().st_mode & 0o777 == 0o600
    pinned = gnomon_home / "trusted_keys" / "operator.pub"
    assert pinned.read_bytes() == (keys / "operator.pub").read_bytes()
    assert pinned.stat().st_mode & 0o777 == 0o600  # the agent cannot pin a key of its own
    for folder in (keys, pinned.parent):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert str(keys / "operator.key") in result.output
    assert not (tmp_path / ".gnomon").exists()
    fails(run("keys", "generate"), "already exists")


def test_keys_generate_custom_dirs(tmp_path: Path) -> None:
    result = run("keys", "generate", "--dir", "k", "--name", "ops", "--trusted-keys", "pins")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "k" / "ops.key").exists()
    assert (tmp_path / "pins" / "ops.pub").exists()


def test_promote_without_pinned_keys(demo: Demo, tmp_path: Path) -> None:
    fails(
        run(
            "promote",
            demo.result.source_file_id,
            "--key",
            "x.key",
            "--reason",
            "ok",
            "--url",
            demo.url,
        ),
        "no pinned operator keys",
        "gnomon keys generate",
    )


def test_promote_with_missing_key_file(demo: Demo, operator_key: Path) -> None:
    fails(
        run(
            "promote",
            demo.result.source_file_id,
            "--key",
            "missing.key",
            "--reason",
            "ok",
            "--url",
            demo.url,
        ),
        "cannot read key file missing.key",
    )


def test_promote_with_unpinned_key(demo: Demo, operator_key: Path) -> None:
    assert run("keys", "generate", "--dir", "rogue", "--trusted-keys", "elsewhere").exit_code == 0
    fails(
        run(
            "promote",
            demo.result.source_file_id,
            "--key",
            "rogue/operator.key",
            "--reason",
            "ok",
            "--url",
            demo.url,
        ),
        "which is not pinned",
    )
    with firewall.open(demo.url) as wall:
        assert wall.require_belief(demo.result.source_file_id).truth_status == "unverified"


def test_promote_with_pinned_key(demo: Demo, operator_key: Path) -> None:
    ident = demo.result.source_file_id
    result = run(
        "promote",
        ident,
        "--key",
        str(operator_key),
        "--reason",
        "alice confirmed",
        "--url",
        demo.url,
    )
    assert result.exit_code == 0, result.output
    assert "truth=supported" in result.output
    data = json.loads(run("beliefs", "show", ident, "--url", demo.url, "--json").output)
    assert data["truth_status"] == "supported"
    assert data["revisions"][0]["authority"] == "user"
    assert data["revisions"][0]["grant_id"]


def test_trusted_keys_from_environment(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("keys", "generate", "--dir", "k", "--trusted-keys", "pins").exit_code == 0
    monkeypatch.setenv("GNOMON_TRUSTED_KEYS", str(tmp_path / "pins"))
    result = run(
        "promote",
        demo.result.source_file_id,
        "--key",
        "k/operator.key",
        "--reason",
        "ok",
        "--url",
        demo.url,
    )
    assert result.exit_code == 0, result.output


def test_promote_unknown_id(demo: Demo, operator_key: Path) -> None:
    fails(
        run("promote", "bel_nope", "--key", str(operator_key), "--reason", "ok", "--url", demo.url),
        "unknown belief id",
    )


def test_quarantine_as_sentinel_then_clear(demo: Demo, operator_key: Path) -> None:
    ident = demo.result.copy_ids[0]
    result = run("quarantine", ident, "--reason", "planted", "--url", demo.url)
    assert result.exit_code == 0, result.output
    assert "sentinel" in result.output and "security=quarantined" in result.output
    result = run(
        "clear", ident, "--key", str(operator_key), "--reason", "false positive", "--url", demo.url
    )
    assert result.exit_code == 0, result.output
    assert "security=clean" in result.output
    data = json.loads(run("beliefs", "show", ident, "--url", demo.url, "--json").output)
    assert data["security_status"] == "clean"
    assert data["retrieval_status"] == "restricted"


def test_quarantine_with_key(demo: Demo, operator_key: Path) -> None:
    result = run(
        "quarantine",
        demo.result.copy_ids[1],
        "--reason",
        "planted",
        "--key",
        str(operator_key),
        "--url",
        demo.url,
    )
    assert result.exit_code == 0, result.output
    assert "user grant" in result.output


def test_quarantine_unknown_id(demo: Demo) -> None:
    fails(run("quarantine", "bel_nope", "--reason", "x", "--url", demo.url), "unknown belief id")


def test_clear_without_pinned_keys(demo: Demo) -> None:
    fails(
        run(
            "clear",
            demo.result.poison_content_id,
            "--key",
            "k.key",
            "--reason",
            "x",
            "--url",
            demo.url,
        ),
        "gnomon keys generate",
    )


# -- policy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default", "planner", "reference"])
def test_policy_check_presets(name: str) -> None:
    path = REPO / "policies" / f"{name}.yaml"
    result = run("policy", "check", str(path))
    assert result.exit_code == 0, result.output
    assert ContextPolicy.preset(name).digest in result.output
    data = json.loads(run("policy", "check", str(path), "--json").output)
    assert data["digest"] == ContextPolicy.preset(name).digest


def test_policy_check_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntruth: [supported]\nretrieval: [nope]\n")
    result = run("policy", "check", str(bad))
    fails(result, "bad.yaml", "'nope' is not a retrieval status")
    fails(run("policy", "check", "missing.yaml"), "missing.yaml: no such policy file")
    bad.write_text("name: [unclosed\n")
    fails(run("policy", "check", str(bad)), "bad.yaml")


def test_policy_schema_validates_the_presets() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run("policy", "schema")
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["$schema"].startswith("https://json-schema.org/")
    for name in ("default", "planner", "reference"):
        jsonschema.validate(ContextPolicy.preset(name).model_dump(mode="json"), schema)


# -- log -------------------------------------------------------------------------------------


def test_log_verify(demo: Demo) -> None:
    result = run("log", "verify", "--url", demo.url)
    assert result.exit_code == 0, result.output
    assert f"{demo.result.events} events verified" in result.output
    data = json.loads(run("log", "verify", "--url", demo.url, "--json").output)
    assert data["ok"] is True and data["first_bad_seq"] is None


def _tamper(path: Path, seq: int, sql: str) -> None:
    with sqlite3.connect(path) as conn:
        changed = conn.execute(f"UPDATE events SET body = {sql} WHERE seq = ?", (seq,)).rowcount
    conn.close()
    assert changed == 1


def test_log_verify_names_the_tampered_seq(demo: Demo) -> None:
    _tamper(demo.path, 5, "CAST(replace(CAST(body AS TEXT), 'alice', 'mallor') AS BLOB)")
    fails(
        run("log", "verify", "--url", demo.url),
        "fails verification at seq 5",
        "hash does not match",
    )
    result = run("log", "verify", "--url", demo.url, "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["ok"] is False and data["first_bad_seq"] == 5


def test_log_verify_when_tampering_changes_the_body_type(demo: Demo) -> None:
    _tamper(demo.path, 5, "replace(body, 'alice', 'mallory')")  # replace() returns TEXT
    fails(run("log", "verify", "--url", demo.url), "fails verification at seq 5")


# -- probes ----------------------------------------------------------------------------------


@dataclass
class FakeProbe:
    name: str
    passed: bool
    detail: str


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    module = types.ModuleType("gnomon.probes.runner")
    monkeypatch.setitem(sys.modules, "gnomon.probes.runner", module)
    yield module


def test_probes_run_all_pass(fake_runner: types.ModuleType) -> None:
    fake_runner.run_all = lambda: [FakeProbe("a", True, "held"), FakeProbe("b", True, "held")]
    result = run("probes", "run")
    assert result.exit_code == 0, result.output
    assert "all 2 probes held" in result.output
    data = json.loads(run("probes", "run", "--json").output)
    assert data == {
        "passed": True,
        "probes": [
            {"name": "a", "passed": True, "skipped": None, "detail": "held"},
            {"name": "b", "passed": True, "skipped": None, "detail": "held"},
        ],
    }


def test_probes_run_a_failure_exits_1(fake_runner: types.ModuleType) -> None:
    fake_runner.run_all = lambda: [FakeProbe("a", True, "held"), FakeProbe("b", False, "leaked")]
    result = run("probes", "run")
    fails(result, "1 of 2 probes failed: b")
    assert "leaked" in result.output
    assert run("probes", "run", "--json").exit_code == 1


def test_probes_run_without_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gnomon.probes.runner", None)
    fails(run("probes", "run"), "gnomon.probes.runner")


def test_probes_run_real_harness() -> None:
    """The real harness is wired: every probe runs and holds, in JSON, and the command exits 0."""

    from gnomon import probes

    result = run("probes", "run", "--json")
    data = json.loads(result.output)
    failed = {p["name"]: p["detail"] for p in data["probes"] if not p["passed"]}
    assert failed == {}
    assert data["passed"] is True and result.exit_code == 0
    assert [p["name"] for p in data["probes"]] == list(probes.runner.PROBE_MODULES)


def test_probes_run_fails_when_a_probe_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe whose promise broke makes `gnomon probes run` exit 1 and say which."""
    import gnomon.probes.auto_observation_gate as probe

    def broken(url: str, c: object) -> None:
        c.expect(False, "the promise held")  # type: ignore[attr-defined]

    monkeypatch.setattr(probe, "check", broken)
    result = run("probes", "run", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 1 and data["passed"] is False
    assert [p["name"] for p in data["probes"] if not p["passed"]] == [probe.NAME]


# -- the installed script --------------------------------------------------------------------


def _gnomon() -> Path:
    script = Path(sys.executable).parent / "gnomon"
    if not script.exists():
        if os.environ.get("CI"):
            pytest.fail(f"the gnomon script is not installed next to {sys.executable}")
        pytest.skip("gnomon is not installed in this environment (pip install -e .)")
    return script


def _script(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNOMON_")}
    env["GNOMON_HOME"] = str(cwd / "home")  # a user's data directory, never the real one
    return subprocess.run(
        [str(_gnomon()), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_script_demo_then_verify(tmp_path: Path) -> None:
    demo = _script(tmp_path, "demo")
    assert demo.returncode == 0, demo.stderr
    assert "VERDICT: PASS" in demo.stdout
    demo_db = tmp_path / "home" / "demo" / "demo.db"
    assert demo_db.exists() and not (tmp_path / ".gnomon").exists()
    verify = _script(tmp_path, "log", "verify", "--url", f"sqlite:///{demo_db}")
    assert verify.returncode == 0, verify.stderr
    assert "events verified" in verify.stdout


def test_script_bad_input_exits_1_without_traceback(tmp_path: Path) -> None:
    assert _script(tmp_path, "demo").returncode == 0
    demo_url = f"sqlite:///{tmp_path / 'home' / 'demo' / 'demo.db'}"
    shown = _script(tmp_path, "beliefs", "show", "bel_nope", "--url", demo_url)
    assert shown.returncode == 1
    assert shown.stderr.startswith("error: unknown belief id 'bel_nope'")
    assert "hint: " in shown.stderr
    assert "Traceback" not in shown.stderr
    missing = _script(
        tmp_path,
        "promote",
        "bel_x",
        "--key",
        "k.key",
        "--reason",
        "x",
        "--url",
        demo_url,
    )
    assert missing.returncode == 1
    assert "gnomon keys generate" in missing.stderr


def test_script_version_and_help(tmp_path: Path) -> None:
    version = _script(tmp_path, "--version")
    assert version.returncode == 0 and firewall.__version__ in version.stdout
    helped = _script(tmp_path, "--help")
    assert helped.returncode == 0
    for command in (
        "demo",
        "beliefs",
        "recall",
        "promote",
        "quarantine",
        "clear",
        "policy",
        "log",
        "keys",
        "probes",
    ):
        assert command in helped.stdout
