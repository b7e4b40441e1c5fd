"""Probe: a pending action cannot execute, and a granted approval still revalidates.

**Scenario.** An agent's push is held. The host (or a confused caller) tries to execute it
before any approval. Then, between the hold and the approval, someone commits to the repository
(real git, in a temporary repository), so HEAD moves; the approver signs anyway.

**Asserts.**
- Executing a held request raises ActionPendingError and runs nothing.
- The approved push is refused at execution because ``git_head_unchanged`` no longer holds,
  the executor never runs, and the refusal is in the log.

**Does not claim.** That changes the preconditions do not name (another file, a remote's
state) are noticed: only the recorded facts are revalidated.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from gnomon.firewall import open as open_firewall
from gnomon.firewall.model.errors import ActionPendingError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "action_two_phase"
TITLE = "A pending action cannot execute; an approved one still revalidates its preconditions"


def _git(repo: Path, *args: str) -> None:
    ident = ("-c", "user.email=probe@gnomon", "-c", "user.name=probe")
    subprocess.run(["git", "-C", str(repo), *ident, *args], check=True, capture_output=True)


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with tempfile.TemporaryDirectory(prefix="gnomon-probe-") as tmp, open_firewall(url) as wall:
        repo = Path(tmp)
        _git(repo, "init", "-q")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
        with host(wall) as h, wall.session(project=project, actor="a") as s:
            push = {"repo": str(repo), "remote": "origin", "branch": "main"}
            held = h.kernel.handle(s).request("git_push", push)
            c.expect(held.status == "held", "the push is held", got=held.status)
            c.raises(
                ActionPendingError,
                "a pending action cannot execute",
                h.kernel.execute,
                held.request_id,
            )
            c.expect(h.ran == [], "nothing ran while pending", got=h.ran)
            _git(repo, "commit", "-q", "--allow-empty", "-m", "two")  # HEAD moves
            request = next(r for r in h.kernel.holds() if r.id == held.request_id)
            result = h.kernel.submit(h.approver.approve(request, now=wall.clock()))
            c.expect(
                result.status == "refused",
                "the approved push is refused: git HEAD changed since the proposal",
                got=(result.status, result.reasons),
            )
            c.expect(h.ran == [], "the executor never ran", got=h.ran)


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
