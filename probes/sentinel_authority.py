"""Probe: sentinel authority stops at quarantine; it can never promote or clear.

**Scenario.** A belief from an external file is made suspicious and another quarantined with
sentinel authority (as a running sentinel does). Then, still with sentinel authority, something
tries every move above that: clear either back to clean, promote the truth to supported, make it
normally retrievable, mark it malicious, and move the quarantined one back to suspicious.

**Asserts.**
- clean → suspicious and clean → quarantined are accepted with sentinel authority.
- Every other attempted move is refused with ``TransitionRefused`` and the beliefs keep their
  states.

**Does not claim.** Anything about user or probe grants (see quarantine_not_retrievable), or that
a host cannot give its sentinel a user grant (key custody).
"""

from __future__ import annotations

from gnomon.firewall import Authority, Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.model.errors import TransitionRefused
from gnomon.firewall.model.states import Axis, RetrievalStatus, SecurityStatus, TruthStatus
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "sentinel_authority"
TITLE = "Sentinel authority is clean -> suspicious -> quarantined: never promote or clear"

ATTEMPTS: dict[str, Move] = {
    "clear to clean": Move(Axis.SECURITY, SecurityStatus.CLEAN),
    "mark malicious": Move(Axis.SECURITY, SecurityStatus.MALICIOUS),
    "promote to supported": Move(Axis.TRUTH, TruthStatus.SUPPORTED),
    "make normally retrievable": Move(Axis.RETRIEVAL, RetrievalStatus.NORMAL),
}


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        with wall.session(project=project, actor="coder", user="alice") as s:
            a, b = s.observe(
                tool="read_file",
                content=["deploy from laptops", "skip review"],
                origin=Origin.external("file:NOTES.md"),
            ).content
        sus = wall.transition(
            a.id,
            [Move(Axis.SECURITY, SecurityStatus.SUSPICIOUS)],
            reason="sentinel: signal",
            authority=Authority.SENTINEL,
        )
        q = wall.quarantine(b.id, reason="sentinel: flagged", authority=Authority.SENTINEL)
        c.expect(
            (sus.security_status, q.security_status)
            == (SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED),
            "a sentinel may make a belief suspicious and quarantine one",
        )
        for target in (a.id, b.id):
            for what, move in ATTEMPTS.items():
                c.raises(
                    TransitionRefused,
                    f"a sentinel cannot {what} ({target})",
                    wall.transition,
                    target,
                    [move],
                    reason="sentinel says fine",
                    authority=Authority.SENTINEL,
                )
        c.raises(
            TransitionRefused,
            "a sentinel cannot move a quarantined belief back to suspicious",
            wall.transition,
            b.id,
            [Move(Axis.SECURITY, SecurityStatus.SUSPICIOUS)],
            reason="soften",
            authority=Authority.SENTINEL,
        )
        c.expect(
            (
                wall.require_belief(a.id).security_status,
                wall.require_belief(b.id).security_status,
            )
            == (SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED),
            "after every refused attempt the states are unchanged",
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
