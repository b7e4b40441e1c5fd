"""Preconditions: facts recorded when an action is proposed and revalidated when it executes.

Between a hold and its approval the world can change: the file the agent meant to overwrite was
edited, someone pushed (HEAD moved), a belief the action rested on was contradicted or
quarantined, the operator rotated the policy. Execution is two-phase: every fact captured at
proposal is read again right before the executor runs, and any difference refuses the
execution (the agent may propose again, and the new proposal is arbitrated afresh).

Shipped kinds: ``file_unchanged`` (SHA-256 of the file's bytes), ``git_head_unchanged`` (real
``git rev-parse HEAD``), ``belief_clean`` (each cited belief still accepted by the citation
ContextPolicy), ``policy_unchanged`` (the action policy's digest).
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from gnomon.firewall.gate.policy import ContextPolicy, floor_reasons
from gnomon.firewall.kernel.contracts import ActionContract, PreconditionKind
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


_READERS = {
    PreconditionKind.FILE_UNCHANGED.value: file_digest,
    PreconditionKind.GIT_HEAD_UNCHANGED.value: git_head,
}


def capture(
    contract: ActionContract, args: Mapping[str, Any], cites: Sequence[str], policy_digest: str
) -> list[Snapshot]:
    """The facts to revalidate at execution, read now."""
    out = [
        Snapshot(
            kind=p.kind.value, target=str(args[p.arg]), value=_READERS[p.kind](str(args[p.arg]))
        )
        for p in contract.preconditions
    ]
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
                problems.append(
                    f"{snap.kind}: {snap.target} changed ({snap.value[:12]} -> {current[:12]})"
                )
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


__all__ = [
    "BELIEF_CLEAN",
    "POLICY_UNCHANGED",
    "Snapshot",
    "capture",
    "file_digest",
    "git_head",
    "revalidate",
]
