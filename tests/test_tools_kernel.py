"""The tool kit behind the kernel and the guard, registered in one line each: the contracts'
levels decide what runs, holds and needs a human; an escape the kernel allowed (an L0/L3 call)
is still refused by the tool at execution, and the refusal is recorded as the call's failed
outcome and answered with an ordinary tool message."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.host.guard import guard
from gnomon.firewall.kernel import ActionKernel, ApprovalSigner, PolicySigner, load_action_policy
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.firewall.kernel.ledger import read_request
from gnomon.tools import Files, Git, Http, Sql, Toolkit


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[firewall.Firewall, ActionKernel, ApprovalSigner, Path]]:
    root = tmp_path / "work"
    origin = tmp_path / "origin.git"
    ident = ["-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(origin)], check=True)
    subprocess.run(
        ["git", *ident, "-C", str(root), "commit", "-q", "--allow-empty", "-m", "init"],
        check=True,
    )
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table items (name text)")
        conn.execute("insert into items values ('lamp')")
    conn.close()
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    kit = Toolkit(Files(root), Git([root]), Http(["http://127.0.0.1:9"]), Sql(f"sqlite:///{db}"))
    (tmp_path / "actions.yaml").write_bytes(preset_bytes("default"))
    operator, approver = PolicySigner.generate(), ApprovalSigner.generate("alice")
    operator.sign_file(tmp_path / "actions.yaml")
    with firewall.open(f"sqlite:///{tmp_path}/g.db") as wall:
        kernel = ActionKernel(
            wall,
            load_action_policy(tmp_path / "actions.yaml", keys=[operator.public_key]),
            operator_keys=[operator.public_key],
            approver_keys=[approver.public_key],
            registry=kit.registry(),  # one line: the shipped contracts and the kit's
            executors=kit.executors(),  # one line: the kit's executors
        )
        yield wall, kernel, approver, root


def test_the_kit_behind_the_kernel_and_the_guard(
    setup: tuple[firewall.Firewall, ActionKernel, ApprovalSigner, Path],
) -> None:
    wall, kernel, approver, root = setup
    names = ["fs_write", "git_push", "git_status", "http_get", "sql_query"]
    with wall.session(project="shop", actor="coder", user="alice") as s:
        fs_write, git_push, git_status, http_get, sql_query = guard(wall, kernel, s, names)
        # L3 on a clean session runs; L0 reads run
        wrote = fs_write({"path": "notes.txt", "content": "hello"})
        assert not wrote.is_error, wrote.text
        assert (root / "notes.txt").read_text() == "hello"
        assert '"rows":[["lamp"]]' in sql_query({"sql": "select name from items"}).text
        assert "notes.txt" in git_status({"repo": str(root)}).text
        # L4 is held for a human: the agent gets an ordinary tool message
        held = http_get({"url": "http://127.0.0.1:9/"})
        assert held.is_error and held.meta["verdict"] == "held"
        pushed = git_push({"repo": str(root), "remote": "origin", "branch": "main"})
        assert pushed.meta["verdict"] == "held"
        # the human approves the push: it runs, through the kit's executor
        request = next(r for r in kernel.holds() if r.tool == "git_push")
        done = kernel.submit(approver.approve(request, now=wall.clock()))
        assert done.status == "executed" and done.failure is None, done
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        assert f'"commit":"{head}"' in str(done.output)


def test_attack_an_allowed_read_escaping_the_root_is_refused_and_recorded(
    setup: tuple[firewall.Firewall, ActionKernel, ApprovalSigner, Path],
) -> None:
    """fs_read is L0, so the kernel lets the call through; the tool itself refuses the ``..``
    path, the kernel records the refusal as the call's failed outcome, and the agent reads an
    ordinary tool message, not the secret."""
    wall, kernel, _, _ = setup
    with wall.session(project="shop", actor="coder", user="alice") as s:
        (fs_read,) = guard(wall, kernel, s, ["fs_read"])
        reply = fs_read({"path": "../secret.txt"})
    assert reply.is_error and reply.meta["verdict"] == "failed"
    assert "TOP SECRET" not in reply.text and "climbs out" in reply.text
    state = read_request(wall.store, reply.meta["request_id"])
    assert state is not None and state.status == "executed"
    outcomes = [e for e in wall.store.events() if e.kind == "action.executed"]
    assert outcomes and "ToolRefused" in str(outcomes[-1].payload)


def test_the_kit_served_over_mcp_behind_the_proxys_config(tmp_path: Path) -> None:
    """The kit as a real MCP server subprocess, reached through the proxy's own stdio upstream
    client; the proxy config's tools are ``kit.proxy_tools()`` (the kit's own contracts). A
    ``..`` read comes back as an error result and the server stays up."""
    import sys

    import anyio
    from mcp.client.stdio import StdioServerParameters

    from gnomon.firewall.host.mcp_config import ProxyConfig
    from gnomon.firewall.host.mcp_upstream import open_stdio_upstream

    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    script = tmp_path / "kit_server.py"
    script.write_text(
        "import sys, anyio\n"
        "from gnomon.tools import Files, Toolkit\n"
        "from gnomon.tools.mcp_server import serve_stdio\n"
        "anyio.run(serve_stdio, Toolkit(Files(sys.argv[1])))\n"
    )
    kit = Toolkit(Files(root))
    config = ProxyConfig.model_validate(
        {
            "server": "kit",
            "store": "memory://",
            "project": "shop",
            "policy": "actions.yaml",
            "operator_keys": ["operator.pub"],
            "tools": kit.proxy_tools(),
        }
    )
    registry = config.registry(kit.names())
    for name in kit.names():
        ours, theirs = kit.registry().lookup(name), registry.lookup(name)
        assert ours is not None and theirs is not None
        assert (theirs.category, theirs.required_level) == (ours.category, ours.required_level)
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(root)], env=env)

    async def main() -> list[tuple[str, bool]]:
        with anyio.fail_after(60):
            async with open_stdio_upstream(params, "kit") as upstream:
                listed = [t.name for t in (await upstream.list_tools()).tools]
                assert listed == kit.names()
                out = []
                for args in ({"path": "a.txt"}, {"path": "../secret.txt"}, {"path": "a.txt"}):
                    result = await upstream.call_tool("fs_read", args)
                    text = "\n".join(getattr(b, "text", "") for b in result.content)
                    out.append((text, bool(result.is_error)))
                return out

    good, escape, again = anyio.run(main)
    assert '"text":"hello"' in good[0] and not good[1]
    assert escape[1] and "climbs out" in escape[0] and "TOP SECRET" not in escape[0]
    assert again == good
