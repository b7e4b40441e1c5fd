"""``gnomon setup claude-code|codex|cursor`` against each agent's real config file format.

Each test starts from a config the user already has (another MCP server, their own settings,
TOML comments), runs setup, and checks: the file still parses in the agent's own format with the
user's servers and settings intact; the old file is backed up; a second run changes nothing; and
the two servers it wrote really start: the entries are launched exactly as the agent would (the
command, args and env from the file) and driven with the real ``mcp`` client, the memory server
answering ``recall`` and the tools server relaying ``git_status`` of a real ``mcp-server-git``
through the action kernel. ``gnomon doctor`` then reports the installation healthy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import KeyPurpose, write_keypair
from gnomon.firewall.kernel.actionpolicy import preset_bytes

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home and project, a git repository for mcp-server-git, a signed proxy config."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    host = tmp_path / "host"
    host.mkdir()
    (host / "actions.yaml").write_bytes(preset_bytes("default"))
    key, _ = write_keypair(host, "operator", purpose=KeyPurpose.POLICY)
    signed = run("policy", "sign", str(host / "actions.yaml"), "--key", str(key))
    assert signed.exit_code == 0, signed.output
    (host / "proxy.yaml").write_text(
        "server: git\nproject: shop\nactor: coder\nuser: alice\npolicy: actions.yaml\n"
        "operator_keys: [operator.pub]\ntools:\n  git_status: {category: read, level: L0}\n"
    )
    return tmp_path


EXISTING = {
    "claude-code": (
        "work/.mcp.json",
        '{"mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["gh"]}},'
        ' "x-team-note": "keep me"}\n',
    ),
    "codex": (
        "home/.codex/config.toml",
        '# my Codex settings\nmodel = "gpt-5"\n\n[mcp_servers.github]\ncommand = "npx"\n'
        'args = ["-y", "gh"]\n',
    ),
    "cursor": (
        "work/.cursor/mcp.json",
        '{"mcpServers": {"github": {"command": "npx", "args": ["gh"], "env": {"T": "1"}}}}\n',
    ),
}


def _servers(agent: str, text: str) -> dict[str, Any]:
    """The servers, read the way the agent reads its file."""
    if agent == "codex":
        doc = tomllib.loads(text)
        assert doc["model"] == "gpt-5"
        servers: dict[str, Any] = doc["mcp_servers"]
        for entry in servers.values():  # Codex: command (string), args (strings), env (table)
            assert isinstance(entry["command"], str) and isinstance(entry["args"], list)
            assert isinstance(entry.get("env", {}), dict)
        return servers
    doc = json.loads(text)
    if agent == "claude-code":
        assert doc["x-team-note"] == "keep me"
        for entry in doc["mcpServers"].values():
            assert entry["type"] == "stdio"
    return dict(doc["mcpServers"])


def _launch(entry: dict[str, Any], script: Any) -> Any:
    """Start a configured server as the agent would, and drive it with the real MCP client."""
    env = {**entry.get("env", {}), "PYTHONPATH": str(REPO), "PATH": os.environ["PATH"]}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)

    async def main() -> Any:
        async with Client(params) as client:
            return await script(client)

    return anyio.run(main)


@pytest.mark.parametrize("agent", ["claude-code", "codex", "cursor"])
def test_setup_merges_a_working_config_and_doctor_calls_it_healthy(
    project: Path, gnomon_home: Path, agent: str
) -> None:
    relative, before = EXISTING[agent]
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(before)
    assert run("init").exit_code == 0
    upstream = ["--", sys.executable, "-m", "mcp_server_git", "-r", str(project / "repo")]
    args = ["setup", agent, "--project", "shop", "--proxy-config", str(project / "host/proxy.yaml")]
    done = run(*args, "--json", *upstream)
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["path"] == str(path)
    assert data["changed"] is True and data["other_servers"] == ["github"]
    assert data["disable_builtins"]  # it says which built-in tools bypass the proxy
    assert Path(data["backup"]).read_text() == before
    after = path.read_text()
    if agent == "codex":
        assert after.startswith("# my Codex settings")  # the user's comments are kept
    servers = _servers(agent, after)
    assert set(servers) == {"github", "gnomon-tools", "gnomon-memory"}
    assert servers["github"]["args"][-1] == "gh"
    again = json.loads(run(*args, "--json", *upstream).output)
    assert again["changed"] is False and path.read_text() == after  # idempotent

    async def recall(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    assert "recall" in _launch(servers["gnomon-memory"], recall)

    async def status(client: Client) -> Any:
        return await client.call_tool("git_status", {"repo_path": str(project / "repo")})

    result = _launch(servers["gnomon-tools"], status)
    assert not result.is_error, result

    # the rest of a healthy installation: pinned keys and the store's sealing key
    assert run("keys", "generate").exit_code == 0
    seal = gnomon_home / "seal"
    if not any(seal.glob("*.key")):  # created by the store once sealing lands; a stand-in here
        seal.mkdir(mode=0o700, exist_ok=True)
        (seal / "stand-in.key").write_bytes(b"k")
        (seal / "stand-in.key").chmod(0o600)
    report = run("doctor", "--json")
    found = json.loads(report.output)
    problems = [f for f in found["findings"] if f["severity"] == "problem"]
    assert problems == [] and found["healthy"] is True and report.exit_code == 0, found
    # the user's own server is reported, as a warning, because it bypasses the proxy
    assert any("runs directly" in f["problem"] for f in found["findings"])


def test_setup_refuses_a_config_it_cannot_read_and_leaves_it_alone(project: Path) -> None:
    path = project / "work" / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"a": ')
    done = run("setup", "cursor", "--project", "shop")
    assert done.exit_code == 1 and "not valid JSON" in done.stderr
    assert path.read_text() == '{"mcpServers": {"a": '
    assert not path.with_name("mcp.json.gnomon-backup").exists()


def test_setup_refuses_a_proxy_config_the_proxy_would_refuse(project: Path) -> None:
    bad = project / "host" / "bad.yaml"
    bad.write_text("server: git\nproject: shop\npolicy: a.yaml\noperator_keys: []\n")
    done = run("setup", "claude-code", "--project", "shop", "--proxy-config", str(bad))
    assert done.exit_code == 1 and "operator_keys" in done.stderr
    assert not (project / "work" / ".mcp.json").exists()
