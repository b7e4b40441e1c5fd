"""A proxy that cannot start tells the MCP client why, in its answer to ``initialize``.

The client is the ``mcp`` SDK's real one, starting ``gnomon mcp proxy`` over stdio as an agent
does. Each broken setup (a config that lowers a tool below its floor, a config with a field the
proxy does not know, a config that is not there) must reach the client as an error whose message
carries the config problem and its fix, not as "Connection closed". The proxy still prints the
error on its stderr and exits 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
GNOMON = [sys.executable, "-m", "gnomon.firewall.cli"]
SERVER = [sys.executable, "-m", "mcp_server_git", "-r", "."]


def _initialize(config: Path) -> str:
    """Connect as an agent would; the text of the error the client raised."""
    params = StdioServerParameters(
        command=GNOMON[0],
        args=[*GNOMON[1:], "mcp", "proxy", "--config", str(config), "--", *SERVER],
        env={"PYTHONPATH": str(REPO), "PATH": os.environ["PATH"]},
    )

    async def main() -> str:
        with pytest.raises(Exception) as caught:  # whatever the SDK raises for an error reply
            async with Client(params) as client:
                await client.list_tools()
        return " | ".join(_leaves(caught.value))

    return anyio.run(main)


def _leaves(error: BaseException) -> list[str]:
    """The messages of ``error`` and of every exception a task group wrapped it in."""
    if isinstance(error, BaseExceptionGroup):
        return [text for inner in error.exceptions for text in _leaves(inner)]
    return [f"{type(error).__name__}: {error}"]


@pytest.mark.parametrize(
    ("body", "problem", "fix"),
    [
        (
            "server: git\nproject: shop\npolicy: a.yaml\noperator_keys: [k.pub]\n"
            "tools:\n  push: {category: push, level: L0}\n",
            "tools.push declares L0, below the push floor",
            "a contract can raise a tool's level, never lower it",
        ),
        (
            "server: git\nproject: shop\npolicy: a.yaml\noperator_keys: [k.pub]\nstroe: x\n",
            "stroe: Extra inputs are not permitted",
            "fix stroe; the fields and an example are in the MCP proxy page",
        ),
    ],
    ids=["below-floor", "unknown-field"],
)
def test_a_bad_config_reaches_the_client_in_initialize(
    tmp_path: Path, body: str, problem: str, fix: str
) -> None:
    config = tmp_path / "proxy.yaml"
    config.write_text(body)
    said = _initialize(config)
    assert "gnomon mcp proxy cannot start" in said and problem in said and fix in said, said
    assert "Connection closed" not in said


def test_a_missing_config_reaches_the_client_and_stderr(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    said = _initialize(missing)
    assert f"cannot read the proxy config {missing}" in said, said
    # the same process run by hand (a terminal, nothing on stdin) prints it and exits 1
    done = subprocess.run(
        [*GNOMON, "mcp", "proxy", "--config", str(missing), "--", *SERVER],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("error: cannot read the proxy config")
    assert "Traceback" not in done.stderr
