"""``gnomon doctor`` against installations an agent could reach, each driven as the attack or
the mistake that causes it, then the promise: doctor names it, gives the fix, exits 1.

Attacks: the store or the keys inside the git working tree the agent runs shell commands in; a
store file or a pinned-keys folder others can write (an agent pins its own key); an agent
config written by ``gnomon setup`` edited so its tools run directly instead of through the
proxy. Mistakes: no pinned keys, no sealing key, a store left at the old ``./.gnomon`` default
(a warning: it still opens with --url).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gnomon.firewall.cli import cli
from gnomon.firewall.host import doctor


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def healthy(tmp_path: Path, gnomon_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A healthy installation: store, pinned keys, a sealing key; the working dir is a repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert run("init").exit_code == 0
    assert run("keys", "generate").exit_code == 0
    seal = gnomon_home / "seal"
    assert any(seal.glob("*.key"))  # `gnomon init` created the store, which created its key
    verify = list(seal.glob("*.verify"))
    assert verify  # the auditor's verification key, written once at key creation
    for file in verify:  # the operator takes it off the host, as doctor says
        file.unlink()
    report = run("doctor")
    assert report.exit_code == 0 and "ok: healthy" in report.output, report.output
    return gnomon_home


def problems(result: Result) -> list[dict[str, Any]]:
    """The problems of a ``doctor --json`` run that must have failed."""
    data = json.loads(result.output)
    assert result.exit_code == 1 and data["healthy"] is False, data
    return [f for f in data["findings"] if f["severity"] == "problem"]


def test_a_store_moved_into_the_working_tree_is_a_problem(
    healthy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the operator points GNOMON_HOME into the repository the agent works in
    inside = tmp_path / "vendor" / "gnomon"
    monkeypatch.setenv("GNOMON_HOME", str(inside))
    assert run("init").exit_code == 0 and run("keys", "generate").exit_code == 0
    found = problems(run("doctor", "--json"))
    in_tree = [f for f in found if "git working tree" in f["problem"]]
    assert {f["check"] for f in in_tree} >= {"store", "operator keys", "data directory"}
    assert all(str(tmp_path) in f["problem"] and "move it" in f["fix"] for f in in_tree)


def test_a_store_others_can_write_is_a_problem(healthy: Path) -> None:
    (healthy / "gnomon.db").chmod(0o666)
    (found,) = problems(run("doctor", "--json"))
    assert found["check"] == "store" and "666" in found["problem"]
    assert found["fix"] == f"chmod 600 {healthy / 'gnomon.db'}"
    (healthy / "gnomon.db").chmod(0o600)
    assert run("doctor").exit_code == 0  # the fix it gave is the fix


def test_an_agent_that_can_write_the_pinned_keys_folder_is_a_problem(healthy: Path) -> None:
    pins = healthy / "trusted_keys"
    pins.chmod(0o777)
    (pins / "mallory.pub").write_bytes((pins / "operator.pub").read_bytes())
    (pins / "mallory.pub").chmod(0o666)
    found = problems(run("doctor", "--json"))
    named = {Path(f["problem"].split(" has mode")[0].split()[-1]) for f in found}
    assert named == {pins, pins / "mallory.pub"}


def test_a_private_key_others_can_read_is_a_problem(healthy: Path) -> None:
    (healthy / "keys" / "operator.key").chmod(0o644)
    (found,) = problems(run("doctor", "--json"))
    assert "others can read" in found["problem"] and found["fix"].startswith("chmod 600")


def test_missing_keys_are_problems_with_the_command_that_makes_them(healthy: Path) -> None:
    for pub in (healthy / "trusted_keys").glob("*.pub"):
        pub.unlink()
    for key in (healthy / "seal").glob("*.key"):
        key.unlink()
    found = {f["check"]: f for f in problems(run("doctor", "--json"))}
    assert "gnomon keys generate" in found["operator keys"]["fix"]
    assert "read-only for authority" in found["sealing key"]["problem"]


def test_a_setup_config_edited_to_bypass_the_proxy_is_a_problem(
    healthy: Path, tmp_path: Path
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "proxy.yaml").write_text(
        "server: git\nproject: shop\npolicy: actions.yaml\noperator_keys: [operator.pub]\n"
    )
    upstream = ["--", sys.executable, "-m", "mcp_server_git", "-r", str(tmp_path)]
    args = ["setup", "cursor", "--project", "shop", "--proxy-config", str(host / "proxy.yaml")]
    assert run(*args, *upstream).exit_code == 0
    assert run("doctor").exit_code == 0
    # the agent rewrites its own config: the git server now runs directly, the kernel never
    # sees a call
    path = tmp_path / ".cursor" / "mcp.json"
    doc = json.loads(path.read_text())
    doc["mcpServers"]["gnomon-tools"] = {"command": sys.executable, "args": upstream[1:]}
    path.write_text(json.dumps(doc))
    (found,) = problems(run("doctor", "--json"))
    assert found["check"] == "agent config" and "gnomon mcp proxy" in found["problem"]
    assert "gnomon setup cursor" in found["fix"]
    path.write_text("{")  # and a file the agent broke is named, not a traceback
    (broken,) = problems(run("doctor", "--json"))
    assert "not valid JSON" in broken["problem"]


def test_a_store_at_the_old_default_is_a_warning_and_still_opens(
    healthy: Path, tmp_path: Path
) -> None:
    old = f"sqlite:///{tmp_path / '.gnomon' / 'gnomon.db'}"
    assert run("init", "--url", "sqlite:///./.gnomon/gnomon.db").exit_code == 0
    assert run("beliefs", "list", "--url", old).exit_code == 0  # named explicitly, it opens
    report = run("doctor", "--json")
    data = json.loads(report.output)
    assert report.exit_code == 0 and data["healthy"] is True
    (warning,) = [f for f in data["findings"] if "old default" in f["problem"]]
    assert warning["severity"] == "warning"
    assert f"mv {tmp_path / '.gnomon' / 'gnomon.db'}" in warning["fix"]
    text = run("doctor")
    assert "warning [legacy store]" in text.output and "ok: healthy (" in text.output


def test_git_worktree_walks_up_to_the_repository(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / ".git").write_text("gitdir: elsewhere\n")  # a linked worktree's .git file
    assert doctor.git_worktree(tmp_path / "a" / "b" / "x.db") == tmp_path / "a"
    assert doctor.git_worktree(tmp_path / "x.db") != tmp_path / "a"
