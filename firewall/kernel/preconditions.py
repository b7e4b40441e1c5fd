"""Preconditions: facts recorded when an action is proposed and revalidated when it executes.

Between a hold and its approval the world can change: the file the agent meant to overwrite was
edited, someone pushed (HEAD moved), a belief the action rested on was contradicted or
quarantined, the operator rotated the policy. Execution is two-phase: every fact captured at
proposal is read again right before the executor runs, and any difference refuses the
execution (the agent may propose again, and the new proposal is arbitrated afresh).

Shipped kinds: ``file_unchanged`` (SHA-256 of the file's bytes), ``git_head_unchanged`` (real
``git rev-parse HEAD``), ``git_push_target`` (what a push sends where: the commit the branch
names, the remote's push URL as git resolves it from the real ``.git/config``, the refspec and
the force flag), ``file_target`` (where a write lands: the real path, the parent directory's
``(st_dev, st_ino)`` and whether the path is absent, a file or a link, read without following
it), ``belief_clean`` (each cited belief still accepted by the citation ContextPolicy),
``policy_unchanged`` (the action policy's digest). The snapshots are part of what an approval
signs (the contract digest), so an edited set refuses the approval.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from gnomon.firewall.gate.policy import ContextPolicy, floor_reasons
from gnomon.firewall.kernel.contracts import ActionContract, PreconditionKind
from gnomon.firewall.model.errors import ActionError
from gnomon.firewall.store.base import Store

BELIEF_CLEAN = "belief_clean"
POLICY_UNCHANGED = "policy_unchanged"
GIT_TIMEOUT_S = 10


class Snapshot(BaseModel):
    """One recorded fact: ``kind`` of ``target`` had ``value``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    target: str
    value: str


def file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"
    except (OSError, ValueError) as exc:
        return f"unreadable: {type(exc).__name__}"


def git_head(repo: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--verify", "HEAD"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"unreadable: {type(exc).__name__}"
    if done.returncode != 0:
        return "unreadable: not a git repository with a HEAD"
    return done.stdout.strip()


def _git(repo: str, *args: str) -> str:
    """``git -C repo args`` stdout, or ``unreadable: ...``."""
    try:
        done = subprocess.run(
            ["git", "-C", repo, *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"unreadable: {type(exc).__name__}"
    if done.returncode != 0:
        return f"unreadable: git {args[0]} failed"
    return done.stdout.strip()


def push_target(target: str) -> str:
    """What the push described by ``target`` (JSON: repo, remote, branch, force) would send
    where, read from the repository now."""
    try:
        push = orjson.loads(target)
        repo, remote, branch = str(push["repo"]), str(push["remote"]), str(push["branch"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "unreadable: not a push target"
    if remote.startswith("-") or branch.startswith("-"):
        return "unreadable: not a remote or branch name"
    ref = f"refs/heads/{branch}"
    doc = {
        "commit": _git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"),
        "url": _git(repo, "remote", "get-url", "--push", remote),
        "refspec": f"{ref}:{ref}",
        "force": push.get("force") is True,
    }
    if any(str(v).startswith("unreadable") for v in doc.values()):
        return "unreadable: " + "; ".join(
            str(v) for v in doc.values() if str(v)[:10] == "unreadabl"
        )
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode()


def file_target(path: str) -> str:
    """Where a write to ``path`` would land: its real path, its parent directory's identity
    and what the path itself is (``lstat``: a link is never followed to decide)."""
    try:
        where = os.path.abspath(path)
        parent = os.stat(os.path.dirname(where))
        try:
            mode = os.lstat(where).st_mode
            kind = "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"
        except FileNotFoundError:
            kind = "absent"
        doc = {
            "real": os.path.realpath(where),
            "parent": [parent.st_dev, parent.st_ino],
            "is": kind,
        }
    except (OSError, ValueError) as exc:
        return f"unreadable: {type(exc).__name__}"
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode()


_READERS = {
    PreconditionKind.FILE_UNCHANGED.value: file_digest,
    PreconditionKind.GIT_HEAD_UNCHANGED.value: git_head,
    PreconditionKind.GIT_PUSH_TARGET.value: push_target,
    PreconditionKind.FILE_TARGET.value: file_target,
}


def write_pinned(path: str, data: bytes, pinned: str) -> int:
    """Write ``data`` to ``path`` the way a ``file_target`` snapshot (``pinned``, its value)
    allows, closing the gap between the kernel's re-check and the write: the parent directory
    is opened and its ``(st_dev, st_ino)`` compared with the pinned one on the open descriptor,
    and the file is opened relative to it with ``O_NOFOLLOW``, so a link planted or a directory
    swapped after the re-check is refused (:class:`ActionError`), never followed. For an
    executor of a tool whose contract pins ``file_target``; returns the bytes written."""
    try:
        want = orjson.loads(pinned)
        parent_id = tuple(want["parent"])
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ActionError(f"not a file_target snapshot: {type(exc).__name__}") from None
    where = os.path.abspath(path)
    try:
        dir_fd = os.open(os.path.dirname(where), os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise ActionError(f"cannot open the directory of {path}: {exc.strerror}") from None
    try:
        st = os.fstat(dir_fd)
        if (st.st_dev, st.st_ino) != parent_id:
            raise ActionError(f"the directory of {path} is not the one approved: refused")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(os.path.basename(where), flags, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            raise ActionError(
                f"{path} cannot be written as approved ({exc.strerror}): a link is never followed"
            ) from None
        with os.fdopen(fd, "wb") as out:
            return out.write(data)
    finally:
        os.close(dir_fd)


def _target(kind: PreconditionKind, arg: str, args: Mapping[str, Any]) -> str:
    """What a precondition of ``kind`` over argument ``arg`` is about."""
    if kind == PreconditionKind.GIT_PUSH_TARGET:
        keys = ("remote", "branch", "force")
        push = {"repo": str(args[arg]), **{k: args.get(k, False) for k in keys}}
        return orjson.dumps(push, option=orjson.OPT_SORT_KEYS).decode()
    return str(args[arg])


def capture(
    contract: ActionContract, args: Mapping[str, Any], cites: Sequence[str], policy_digest: str
) -> list[Snapshot]:
    """The facts to revalidate at execution, read now."""
    targets = [(p.kind.value, _target(p.kind, p.arg, args)) for p in contract.preconditions]
    out = [Snapshot(kind=k, target=t, value=_READERS[k](t)) for k, t in targets]
    out.extend(Snapshot(kind=BELIEF_CLEAN, target=i, value="accepted") for i in cites)
    out.append(Snapshot(kind=POLICY_UNCHANGED, target="action-policy", value=policy_digest))
    return out


def revalidate(
    snapshots: Sequence[Snapshot],
    *,
    store: Store,
    citation_policy: ContextPolicy,
    policy_digest: str,
    now: datetime,
) -> list[str]:
    """What changed since the snapshots were taken (empty: every fact still holds)."""
    problems = []
    for snap in snapshots:
        if snap.kind in _READERS:
            current = _READERS[snap.kind](snap.target)
            if current.startswith("unreadable") or current != snap.value:
                problems.append(f"{snap.kind}: {snap.target} changed{_diff(snap.value, current)}")
        elif snap.kind == BELIEF_CLEAN:
            belief = store.get_belief(snap.target)
            if belief is None:
                problems.append(f"{BELIEF_CLEAN}: belief {snap.target} is gone")
                continue
            reasons = [*floor_reasons(belief), *citation_policy.rejection_reasons(belief, now)]
            if reasons:
                why = "; ".join(str(r) for r in reasons)
                problems.append(
                    f"{BELIEF_CLEAN}: belief {snap.target} is no longer accepted: {why}"
                )
        elif snap.kind == POLICY_UNCHANGED:
            if snap.value != policy_digest:
                problems.append(f"{POLICY_UNCHANGED}: the action policy changed since the proposal")
        else:
            problems.append(f"unknown precondition kind {snap.kind!r}: refused (fail closed)")
    return problems


def _diff(before: str, now: str) -> str:
    """What changed between two readings, for the refusal's reason."""
    try:
        was, is_ = orjson.loads(before), orjson.loads(now)
    except orjson.JSONDecodeError:
        return f" ({before[:12]} -> {now[:12]})"
    if not isinstance(was, dict) or not isinstance(is_, dict):
        return f" ({before[:12]} -> {now[:12]})"
    changed = [k for k in sorted(was) if was.get(k) != is_.get(k)]
    return (
        f" ({', '.join(changed)}: {[was[k] for k in changed]} -> {[is_.get(k) for k in changed]})"
    )


__all__ = [
    "BELIEF_CLEAN",
    "POLICY_UNCHANGED",
    "Snapshot",
    "capture",
    "file_digest",
    "file_target",
    "git_head",
    "push_target",
    "revalidate",
    "write_pinned",
]
