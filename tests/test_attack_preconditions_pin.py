"""Attacks on what an approved push or write would do once it runs (issue 24, item 1).

The approver approves a push of a reviewed commit to a chosen remote, or a write to a path in
the workspace. Between the hold and the approval the agent changes what that would mean: it
moves the branch, re-points the remote (directly, or with a ``pushInsteadOf`` rewrite), adds
``--force``, plants a dangling symlink where the file will be written, or swaps the parent
directory. Real git repositories, real symlinks, real directories; each is refused at execution
and recorded, and the executor never runs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.kernel import ActionKernel
from gnomon.firewall.kernel.contracts import BUILTIN, ToolRegistry
from gnomon.firewall.kernel.preconditions import write_pinned
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import Host, host, make_repo


def _git(repo: Path, *args: str) -> str:
    ident = ("-c", "user.email=t@t", "-c", "user.name=t")
    done = subprocess.run(
        ["git", "-C", str(repo), *ident, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _refusals(wall: firewall.Firewall) -> list[str]:
    return [
        str(p)
        for e in wall.store.events()
        if e.kind == "action.refused"
        for p in e.payload["problems"]
    ]


def _run_held(
    h: Host, wall: firewall.Firewall, tool: str, args: dict[str, object], attack: Callable[[], None]
) -> tuple[str, tuple[str, ...]]:
    with wall.session(project="p", actor="coder", user="bob") as s:
        # the README names the values, so under per-value provenance the L3 write is held too
        named = " ".join(str(v) for v in args.values())
        s.observe(
            tool="read_file", content=f"do it: {named}", origin=Origin.external("file:README")
        )
        held = h.kernel.handle(s).request(tool, args)
    assert held.status == "held", held
    request = next(r for r in h.kernel.holds() if r.id == held.request_id)
    attack()
    result = h.kernel.submit(h.approver.approve(request, now=wall.clock()))
    return result.status, result.reasons


# -- git push ----------------------------------------------------------------------------------


def _other_commit(repo: Path) -> str:
    _git(repo, "checkout", "-q", "-b", "side")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "never reviewed")
    sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    return sha


ATTACKS: dict[str, tuple[Callable[[Path], None], str]] = {
    # the branch the push sends now names a commit nobody reviewed (HEAD stays where it was)
    "ref moved": (
        lambda r: _git(r, "update-ref", "refs/heads/release", _other_commit(r)),
        "commit",
    ),
    "remote re-pointed": (lambda r: _git(r, "remote", "set-url", "origin", "/srv/evil.git"), "url"),
    "push url added": (
        lambda r: _git(r, "config", "remote.origin.pushurl", "/srv/evil.git"),
        "url",
    ),
    "pushInsteadOf rewrite": (
        lambda r: _git(
            r, "config", "url./srv/evil.git.pushInsteadOf", str(r.parent / "origin.git")
        ),
        "url",
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_push_target_changed_after_the_hold_is_refused(attack: str) -> None:
    change, field = ATTACKS[attack]
    wall = firewall.open("memory://")
    with host(wall) as h:
        _git(h.repo, "branch", "release")  # pushed, not checked out: HEAD does not follow it
        head = _git(h.repo, "rev-parse", "HEAD")
        push = {"repo": str(h.repo), "remote": "origin", "branch": "release"}
        status, reasons = _run_held(h, wall, "git_push", push, lambda: change(h.repo))
        assert status == "refused", reasons
        assert h.ran == []
        problem = next(p for p in _refusals(wall) if p.startswith("git_push_target"))
        assert field in problem.split("changed", 1)[1]
        assert _git(h.repo, "rev-parse", "HEAD") == head  # HEAD never moved: only the pin saw it


def test_an_unchanged_push_runs_with_its_pins_recorded() -> None:
    """Control: nothing changed, the approved push runs, and the pinned target is recorded."""
    wall = firewall.open("memory://")
    with host(wall) as h:
        push = {"repo": str(h.repo), "remote": "origin", "branch": "main"}
        status, _ = _run_held(h, wall, "git_push", push, lambda: None)
        assert status == "executed" and [t for t, _ in h.ran] == ["git_push"]
        (proposed,) = [e for e in wall.store.events() if e.kind == "action.proposed"]
        (pin,) = [p for p in proposed.payload["preconditions"] if p["kind"] == "git_push_target"]
        assert '"refspec":"refs/heads/main:refs/heads/main"' in pin["value"]
        assert '"force":false' in pin["value"]
        assert _git(h.repo, "rev-parse", "main") in pin["value"]


def test_force_is_refused_unless_the_contract_allows_it(tmp_path: Path) -> None:
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="p", actor="coder") as s:
        push = {"repo": str(h.repo), "remote": "origin", "branch": "main", "force": True}
        with pytest.raises(InputError, match="force"):
            h.kernel.handle(s).request("git_push", push)
        assert h.ran == []
        # an operator who registers a contract that allows forcing gets force pinned too
        forcing = [c.model_copy(update={"allows_force": c.tool == "git_push"}) for c in BUILTIN]
        kernel = ActionKernel(
            wall,
            h.kernel._policy,
            operator_keys=[h.operator.public_key],
            approver_keys=[h.approver.public_key],
            registry=ToolRegistry(forcing),
            executors={"git_push": lambda a: h.ran.append(("git_push", a))},
        )
        held = kernel.handle(s).request("git_push", push)
        assert held.status == "held"
        (proposed,) = [
            e
            for e in wall.store.events()
            if e.kind == "action.proposed" and e.payload["request_id"] == held.request_id
        ]
        (pin,) = [p for p in proposed.payload["preconditions"] if p["kind"] == "git_push_target"]
        assert '"force":true' in pin["value"]


# -- file writes -------------------------------------------------------------------------------


def test_a_dangling_symlink_planted_after_the_hold_is_not_followed(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    target = workspace / "notes.txt"
    wall = firewall.open("memory://")
    with host(wall) as h:
        write = {"path": str(target), "content": "hello"}
        status, reasons = _run_held(
            h, wall, "write_file", write, lambda: target.symlink_to(outside / "authorized_keys")
        )
        assert status == "refused", reasons
        assert h.ran == []
        assert any(p.startswith("file_target") for p in _refusals(wall))
        assert not (outside / "authorized_keys").exists()


def test_a_parent_directory_swapped_after_the_hold_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    target = workspace / "sub" / "out.txt"

    def swap() -> None:
        os.rename(workspace / "sub", workspace / "sub.reviewed")
        (workspace / "sub").mkdir()  # same path, same real path: another directory

    wall = firewall.open("memory://")
    with host(wall) as h:
        write = {"path": str(target), "content": "hello"}
        status, reasons = _run_held(h, wall, "write_file", write, swap)
        assert status == "refused", reasons
        assert h.ran == []
        problem = next(p for p in _refusals(wall) if p.startswith("file_target"))
        assert "parent" in problem


def test_an_unchanged_write_target_runs(tmp_path: Path) -> None:
    """Control for the two file attacks: nothing planted, the approved write runs."""
    target = tmp_path / "notes.txt"
    wall = firewall.open("memory://")
    with host(wall) as h:
        write = {"path": str(target), "content": "hello"}
        status, _ = _run_held(h, wall, "write_file", write, lambda: None)
        assert status == "executed" and [t for t, _ in h.ran] == ["write_file"]


def test_make_repo_has_a_remote_and_main(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    assert _git(repo, "remote", "get-url", "origin").endswith("origin.git")
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def _racing_writer(
    wall: firewall.Firewall, plant: Callable[[], None], written: list[str]
) -> Callable[[dict[str, Any]], object]:
    """A write_file executor that writes with write_pinned, and the agent's race: ``plant``
    runs after the kernel's re-check, right before the write."""

    def run(args: dict[str, Any]) -> object:
        (proposed,) = [e for e in wall.store.events() if e.kind == "action.proposed"]
        (pin,) = [p for p in proposed.payload["preconditions"] if p["kind"] == "file_target"]
        plant()
        written.append(args["path"])
        return write_pinned(args["path"], args["content"].encode(), pin["value"])

    return run


def _race(tmp_path: Path, target: Path, plant: Callable[[], None]) -> tuple[str, list[str]]:
    wall = firewall.open("memory://")
    written: list[str] = []
    with host(wall, executors={"write_file": _racing_writer(wall, plant, written)}) as h:
        write = {"path": str(target), "content": "ssh-ed25519 AAAA attacker"}
        status, reasons = _run_held(h, wall, "write_file", write, lambda: None)
        assert status == "executed" and written == [str(target)]  # it got to the write
        (executed,) = [e for e in wall.store.events() if e.kind == "action.executed"]
        assert executed.payload["success"] is False
        return str(executed.payload["reasons"]), reasons


def test_a_link_planted_after_the_recheck_is_not_followed_by_the_write(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    target = workspace / "notes.txt"
    why, _ = _race(tmp_path, target, lambda: target.symlink_to(outside / "authorized_keys"))
    assert "link is never followed" in why
    assert not (outside / "authorized_keys").exists()


def test_a_parent_swapped_after_the_recheck_is_refused_by_the_write(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    target = workspace / "sub" / "out.txt"

    def swap() -> None:
        os.rename(workspace / "sub", workspace / "sub.reviewed")
        (workspace / "sub").symlink_to(outside, target_is_directory=True)

    why, _ = _race(tmp_path, target, swap)
    assert "not the one approved" in why
    assert list(outside.iterdir()) == []
