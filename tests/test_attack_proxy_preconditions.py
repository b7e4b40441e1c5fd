"""Attacks on what a proxied call approved by a human would act on (issue 24, item 1).

The operator's proxy config pins a proxied ``push`` to the world the approver reviews: the
release notes' digest, the repository's HEAD, the commit ``refs/heads/main`` names, the URL
``origin`` pushes to, and the output of a host command (``git tag --list``). The proxy reads
them when the call is held, the approval signs them (the contract digest), and the proxy reads
them again right before the call runs. Between the hold and the approval the agent changes one:
edits the notes, moves the ref, re-points the remote, adds a tag. A real ``gnomon mcp proxy``
subprocess in front of a real MCP server subprocess, a real repository, a real
``gnomon approve``; each change refuses the call (the server's ``push`` never runs), recorded as
``action.refused``, and the agent gets an error result.

Flip: the same sequence with the preconditions left out of the config: every change goes
through and the push runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.kernel.ledger import read_ledger

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")

from mcp import Client

from tests.test_mcp_proxy import GNOMON, PUSH_SERVER, _env, _host, _run, _text

PINS = (
    "    preconditions:\n"
    "      - file: repo/release.md\n"
    "      - git: repo\n"
    "        head: true\n"
    "        ref: refs/heads/main\n"
    "        remote: origin\n"
    "      - command: [git, tag, --list]\n"
    "        cwd: repo\n"
    "        timeout: 10\n"
)


def _tools(pinned: bool) -> str:
    return (
        "  read_readme: {category: read, level: L0}\n"
        "  push:\n    category: push\n    level: L4\n" + (PINS if pinned else "")
    )


def _git(repo: Path, *args: str) -> str:
    ident = ("-c", "user.email=t@t", "-c", "user.name=t")
    done = subprocess.run(
        ["git", "-C", str(repo), *ident, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _repo(folder: Path) -> Path:
    repo = folder / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "release.md").write_text("v1: the reviewed release\n")
    _git(repo, "add", "release.md")
    _git(repo, "commit", "-q", "-m", "release v1")
    _git(repo, "tag", "v1")
    _git(repo, "remote", "add", "origin", "https://git.example/shop.git")
    return repo


def _ref_moved(repo: Path) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "never reviewed")


def _ref_moved_head_kept(repo: Path) -> None:
    """Only the ref moves: HEAD is detached at the reviewed commit."""
    _git(repo, "checkout", "-q", "--detach")
    _git(repo, "update-ref", "refs/heads/main", _other(repo))


def _other(repo: Path) -> str:
    tree = _git(repo, "write-tree")
    return _git(repo, "commit-tree", tree, "-m", "never reviewed")


ATTACKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "proxied file changed": (
        lambda r: (r / "release.md").write_text("v1: and ship the keys too\n") and None,
        "file_unchanged",
    ),
    "ref moved": (_ref_moved_head_kept, "git_ref"),
    "HEAD moved": (_ref_moved, "git_head_unchanged"),
    "remote re-pointed": (
        lambda r: _git(r, "remote", "set-url", "origin", "https://evil.example/x.git") and None,
        "git_remote_url",
    ),
    "command output changed": (
        lambda r: _git(r, "tag", "v2-unreviewed") and None,
        "command_output",
    ),
}


def _approve_after(folder: Path, attack: Callable[[], None]) -> threading.Thread:
    """The human at another terminal; the agent's change lands between the hold and the
    approval."""

    def run() -> None:
        url = f"sqlite:///{folder}/g.db"
        for _ in range(300):
            if (folder / "g.db").exists():
                with firewall.open(url) as wall:
                    holds = read_ledger(wall.store).holds()
                if holds:
                    attack()
                    subprocess.run(
                        [*GNOMON, "approve", holds[0].request_id, "--key",
                         str(folder / "approver.key"), "--approver", "alice", "--url", url],
                        env=_env(), capture_output=True, check=True,
                    )  # fmt: skip
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _push_after(tmp_path: Path, *, pinned: bool, attack: Callable[[Path], None]) -> Any:
    repo = _repo(tmp_path)
    config = _host(tmp_path, "pushy", _tools(pinned), timeout=60)

    async def agent(client: Client) -> Any:
        await client.call_tool("read_readme", {})
        approver = _approve_after(tmp_path, lambda: attack(repo))
        pushed = await client.call_tool("push", {"branch": "main"})
        approver.join(timeout=30)
        return pushed

    return _run(config, [sys.executable, PUSH_SERVER, str(tmp_path)], agent)


def _refusals(folder: Path) -> list[str]:
    with firewall.open(f"sqlite:///{folder}/g.db") as wall:
        return [
            str(p) for e in wall.store.events() if e.kind == "action.refused"
            for p in e.payload["problems"]
        ]  # fmt: skip


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_a_change_after_the_approval_refuses_the_proxied_call(
    name: str, tmp_path: Path
) -> None:
    attack, kind = ATTACKS[name]
    pushed = _push_after(tmp_path, pinned=True, attack=attack)
    assert pushed.is_error, _text(pushed)
    assert (pushed.meta or {}).get("verdict") == "refused", pushed.meta
    assert not (tmp_path / "pushed").exists()  # the server's push never ran
    refusals = _refusals(tmp_path)
    assert any(r.startswith(kind) for r in refusals), refusals


def test_with_nothing_changed_the_pinned_call_runs(tmp_path: Path) -> None:
    pushed = _push_after(tmp_path, pinned=True, attack=lambda _: None)
    assert not pushed.is_error and _text(pushed) == "pushed main", _text(pushed)
    assert (tmp_path / "pushed").read_text() == "main\n"


def test_flip_without_the_preconditions_every_change_goes_through(tmp_path: Path) -> None:
    def every(repo: Path) -> None:
        for name in ("proxied file changed", "remote re-pointed", "command output changed"):
            ATTACKS[name][0](repo)
        _ref_moved_head_kept(repo)

    pushed = _push_after(tmp_path, pinned=False, attack=every)
    assert not pushed.is_error and _text(pushed) == "pushed main", _text(pushed)
    assert (tmp_path / "pushed").read_text() == "main\n"
    assert _refusals(tmp_path) == []
