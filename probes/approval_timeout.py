"""Probe: an approval timeout is a denial the agent can re-plan around.

**Scenario.** An agent's push is held with the policy's 15-minute deadline. Nobody answers;
the clock moves 16 minutes. Then an approver signs a long-lived approval for the stale request.

**Asserts.**
- After the deadline the request's status, as the agent reads it, is ``denied`` with a reason
  that says the approval timed out, and the hold is no longer listed.
- The late approval does not execute the push.

**Does not claim.** That the deadline is enforced without a clock the host controls: the
kernel uses the firewall's clock.
"""

from __future__ import annotations

from datetime import timedelta

from gnomon.firewall import open as open_firewall
from gnomon.firewall.model.errors import GnomonError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeClock, ProbeResult, execute, project_for

NAME = "approval_timeout"
TITLE = "A hold past its deadline becomes a denial; a late approval runs nothing"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    clock = ProbeClock()
    with (
        open_firewall(url, clock=clock) as wall,
        host(wall) as h,
        wall.session(project=project, actor="a") as s,
    ):
        actions = h.kernel.handle(s)
        held = actions.request(
            "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
        )
        request = next(r for r in h.kernel.holds() if r.id == held.request_id)
        late = h.approver.approve(request, now=clock(), ttl=timedelta(hours=4))
        clock.advance(timedelta(minutes=16))
        status = actions.status(held.request_id)
        c.expect(
            status.status == "denied",
            "after the deadline the request is denied",
            got=status.status,
        )
        c.expect(
            any("timed out" in r for r in status.reasons),
            "the agent is told the approval timed out",
            got=status.reasons,
        )
        c.expect(
            held.request_id not in {r.id for r in h.kernel.holds()},
            "the expired hold is no longer listed",
        )
        c.raises(GnomonError, "a late approval is refused", h.kernel.submit, late)
        c.expect(h.ran == [], "the late approval ran nothing", got=h.ran)


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
