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
``policy_unchanged`` (the action policy's digest); and, over a fixed target the operator wrote
(a proxied tool's preconditions, :mod:`firewall.host.mcp_config`), ``git_ref`` (the commit a ref
names), ``git_remote_url`` (a remote's push URL) and ``command_output`` (a host command's exit
status and output digest: argv only, no shell, a scoped environment, a timeout, output capped at
:data:`COMMAND_OUTPUT_CAP` bytes). The snapshots are part of what an approval signs (the contract
digest), so an edited set refuses the approval.
"""

from __future__ import annotations

import hashlib
import os
import selectors
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from gnomon.firewall.gate.policy import ContextPolicy, floor_reasons
from gnomon.firewall.kernel.contracts import ActionContract, Precondition, PreconditionKind
from gnomon.firewall.model.errors import ActionError
from gnomon.firewall.store.base import Store

BELIEF_CLEAN = "belief_clean"
POLICY_UNCHANGED = "policy_unchanged"
GIT_TIMEOUT_S = 10
#: the most output a ``command_output`` precondition reads (more is unreadable: refused)
COMMAND_OUTPUT_CAP = 1 << 20
#: the longest a ``command_output`` precondition may run (its own timeout is capped by this)
COMMAND_TIMEOUT_MAX_S = 60.0


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
    (``None`` while the parent does not exist) and what the path itself is (``lstat``: a link
    is never followed to decide)."""
    try:
        where = os.path.abspath(path)
        try:
            parent = os.stat(os.path.dirname(where))
            parent_id: list[int] | None = [parent.st_dev, parent.st_ino]
        except FileNotFoundError:  # a folder the write will create: absent must stay absent
            parent_id = None
        try:
            mode = os.lstat(where).st_mode
            kind = "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"
        except FileNotFoundError:
            kind = "absent"
        doc = {"real": os.path.realpath(where), "parent": parent_id, "is": kind}
    except (OSError, ValueError) as exc:
        return f"unreadable: {type(exc).__name__}"
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode()


def _fixed(target: str, *keys: str) -> list[str] | str:
    """The string fields ``keys`` of a JSON ``target``, or ``unreadable: ...``."""
    try:
        doc = orjson.loads(target)
        values = [doc[k] for k in keys]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "unreadable: not a " + "/".join(keys) + " target"
    if not all(isinstance(v, str) and v and not v.startswith("-") for v in values):
        return "unreadable: not a " + "/".join(keys) + " target"
    return values


def git_ref(target: str) -> str:
    """The commit the ref in ``target`` (JSON: repo, ref) names now."""
    found = _fixed(target, "repo", "ref")
    if isinstance(found, str):
        return found
    repo, ref = found
    return _git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")


def git_remote_url(target: str) -> str:
    """The push URL git resolves for the remote in ``target`` (JSON: repo, remote) now."""
    found = _fixed(target, "repo", "remote")
    if isinstance(found, str):
        return found
    repo, remote = found
    return _git(repo, "remote", "get-url", "--push", remote)


def command_output(target: str) -> str:
    """The exit status and SHA-256 of the output of the command in ``target`` (JSON: argv,
    cwd, timeout): run without a shell, stdin closed, with only ``PATH``, ``HOME`` and
    ``LC_ALL=C`` in its environment; output over :data:`COMMAND_OUTPUT_CAP` bytes, a timeout
    or a command that cannot start is unreadable (which refuses the execution)."""
    try:
        doc = orjson.loads(target)
        argv, cwd = doc["argv"], doc.get("cwd")
        timeout = min(float(doc.get("timeout", GIT_TIMEOUT_S)), COMMAND_TIMEOUT_MAX_S)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return "unreadable: not a command target"
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return "unreadable: not a command target"
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"}
    if "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return f"unreadable: the command cannot start ({type(exc).__name__})"
    out, problem = _bounded(proc, timeout)
    if problem:
        return problem
    doc = {"exit": proc.returncode, "sha256": hashlib.sha256(out).hexdigest()}
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode()


def _bounded(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, str]:
    """Read ``proc``'s output up to the cap before ``timeout``; kill it past either."""
    assert proc.stdout is not None
    deadline, chunks, size, problem = time.monotonic() + timeout, [], 0, ""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                problem = f"unreadable: the command ran past its {timeout:g}s timeout"
                break
            if not sel.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > COMMAND_OUTPUT_CAP:
                problem = f"unreadable: the command wrote over {COMMAND_OUTPUT_CAP} bytes"
                break
    if problem:
        proc.kill()
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        problem = problem or f"unreadable: the command ran past its {timeout:g}s timeout"
    proc.stdout.close()
    return b"".join(chunks), problem


_READERS = {
    PreconditionKind.FILE_UNCHANGED.value: file_digest,
    PreconditionKind.GIT_HEAD_UNCHANGED.value: git_head,
    PreconditionKind.GIT_PUSH_TARGET.value: push_target,
    PreconditionKind.FILE_TARGET.value: file_target,
    PreconditionKind.GIT_REF.value: git_ref,
    PreconditionKind.GIT_REMOTE_URL.value: git_remote_url,
    PreconditionKind.COMMAND_OUTPUT.value: command_output,
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
        parent_id = tuple(want["parent"] or ())
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


#: the target of a rooted argument that leads out of its root: no reader can read it (a NUL
#: byte is not a path), so its snapshot is unreadable and the execution is refused
OUTSIDE_ROOT = "\x00outside the root"


def _target(pre: Precondition, args: Mapping[str, Any]) -> str:
    """What precondition ``pre`` is about: its fixed target, or the argument it names (joined
    to its root when it has one: a path leading out of the root is :data:`OUTSIDE_ROOT`)."""
    if pre.target is not None:
        return pre.target
    if pre.kind == PreconditionKind.GIT_PUSH_TARGET:
        keys = ("remote", "branch", "force")
        push = {"repo": str(args[pre.arg]), **{k: args.get(k, False) for k in keys}}
        return orjson.dumps(push, option=orjson.OPT_SORT_KEYS).decode()
    value = str(args.get(pre.arg, ""))
    if pre.root is None:
        return value
    root = os.path.abspath(pre.root)
    joined = os.path.normpath(os.path.join(root, value))
    if os.path.isabs(value) or os.path.commonpath([root, joined]) != root:
        return OUTSIDE_ROOT
    return joined


def capture(
    contract: ActionContract, args: Mapping[str, Any], cites: Sequence[str], policy_digest: str
) -> list[Snapshot]:
    """The facts to revalidate at execution, read now."""
    targets = [(p.kind.value, _target(p, args)) for p in contract.preconditions]
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
    "COMMAND_OUTPUT_CAP",
    "POLICY_UNCHANGED",
    "Snapshot",
    "capture",
    "command_output",
    "file_digest",
    "file_target",
    "git_head",
    "git_ref",
    "git_remote_url",
    "push_target",
    "revalidate",
    "write_pinned",
]
