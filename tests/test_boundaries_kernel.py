"""The action kernel at its boundaries: the hold's deadline and the auto-approve ceiling.

The attacker's approval is genuine and its own expiry far off, but it arrives when the hold's
deadline has come and nobody has run ``expire()`` since (issue 28: "an approval arriving after
its hold's deadline executing when nobody expired the hold first"). At the deadline it must not
run; one tick before, it runs (the FLIP). The ladder's ceiling: a tool at the ceiling under an
allow rule runs unasked, one level above it is held, both sides for every ceiling a policy may
set.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.kernel import (
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Reversibility,
)
from gnomon.firewall.kernel.actionpolicy import ActionPolicy
from gnomon.firewall.kernel.contracts import _model
from gnomon.firewall.kernel.decide import Outcome, rule_verdict
from gnomon.firewall.kernel.ledger import EXPIRED
from gnomon.firewall.model.errors import ActionPendingError
from gnomon.probes._kernel import host, make_repo
from gnomon.probes.runner import ProbeClock

TICK = timedelta(microseconds=1)


@pytest.mark.parametrize("before_deadline", [TICK, timedelta(0)])
def test_an_approval_arriving_at_the_holds_deadline_never_runs(
    tmp_path: Path, before_deadline: timedelta
) -> None:
    repo = make_repo(tmp_path)
    clock = ProbeClock()
    wall = firewall.open("memory://", clock=clock)
    push = {"repo": str(repo), "remote": "origin", "branch": "main"}
    with host(wall) as h, wall.session(project="p", actor="a") as s:
        held = h.kernel.handle(s).request("git_push", push)
        assert held.status == "held"
        request = h.kernel.holds()[0]
        approval = h.approver.approve(request, now=clock(), ttl=timedelta(hours=2))
        clock.advance(request.deadline - clock() - before_deadline)  # nobody calls expire()
        if before_deadline:  # FLIP: one tick before the deadline the approval runs the push
            assert h.kernel.submit(approval).status == "executed"
            assert [t for t, _ in h.ran] == ["git_push"]
            return
        with pytest.raises(ActionPendingError, match="not held"):
            h.kernel.submit(approval)
        assert h.ran == []
        assert EXPIRED in [e.kind for e in wall.store.events()]


def _contract(level: Level) -> ActionContract:
    return ActionContract(
        tool="custom_tool",
        category=Category.READ,
        required_level=level,
        blast_radius=BlastRadius.SELF,
        reversibility=Reversibility.REVERSIBLE,
        inputs=_model("Nothing"),
    )


@pytest.mark.parametrize("ceiling", [Level.L0, Level.L1, Level.L2, Level.L3])
def test_one_level_above_the_auto_approve_ceiling_is_held(ceiling: Level) -> None:
    policy = ActionPolicy.from_yaml_text(
        f"name: x\nauto_approve_ceiling: {ceiling.name}\n"
        "rules:\n  - name: everything\n    verdict: allow\n"
    )
    at = rule_verdict(policy, _contract(ceiling), ceiling)
    assert at.outcome == Outcome.ALLOW, at.reasons  # FLIP: at the ceiling, allowed
    above = Level(ceiling + 1)
    ruled = rule_verdict(policy, _contract(above), above)
    assert ruled.outcome == Outcome.HOLD, ruled.reasons
    assert any("above the auto-approve ceiling" in r for r in ruled.reasons)
