"""Probe: the review harvest lists only supported, clean, durable lessons; approving needs a grant.

**Scenario.** In one project a user states two facts (one of them later quarantined), states a
third that expires, a file is read (external, unverified), and the agent writes a summary that a
user then promotes to supported. Someone asks for the review queue, then tries to approve.

**Asserts.**
- The candidates are exactly the one user fact that stays clean: never the quarantined one, the
  expiring one, the unverified file content, the tool envelopes, or the derived summary (even
  though it is supported).
- The quarantined fact is listed as flagged, with its reason.
- Approving without a grant, or with a user grant for another belief, is refused with a typed
  error and records nothing; with a grant covering it, one ``review.approved`` event is written.

**Does not claim.** That a candidate is true: it is what the gate and the user let through, ready
for a human to look at.
"""

from __future__ import annotations

from datetime import timedelta

from gnomon.firewall import Authority, Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.host.review import APPROVED_KIND, approve, harvest
from gnomon.firewall.model.errors import GrantScopeError, MissingGrantError
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "harvest_candidates"
TITLE = "The review harvest lists only supported clean durable lessons; approval needs a grant"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        user = wall.channel(Origin.user("alice"), project=project)
        with wall.session(project=project, actor="coder", user="alice") as s:

            def said(text: str, **kw: object) -> str:
                return s.observe(tool="chat", content=text, origin=user, **kw).content[0].id  # type: ignore[arg-type]

            lesson = said("Wombat deploys go through ArgoCD")
            leaked = said("The wombat staging password rotates monthly")
            expiring = said("The wombat freeze ends Friday", expires_at=wall.clock() + timedelta(3))
            read = s.observe(
                tool="read_file", content="wombat README", origin=Origin.external("file:W.md")
            )
            summary = s.remember("Summary: wombat deploys use ArgoCD").id
        wall.promote(
            summary, grant=wall.grant("user", "alice", beliefs=[summary]), reason="checked"
        )
        wall.quarantine(leaked, reason="leaked", authority=Authority.SENTINEL)
        queue = harvest(wall.store, project, now=wall.clock())
        got = [b.id for b in queue.candidates]
        c.expect(got == [lesson], "the only candidate is the clean, durable user fact", got=got)
        never = {leaked, expiring, summary, read.content[0].id, read.envelope.id}
        c.expect(not never & set(got), "no quarantined, expiring, unverified, envelope or derived")
        flagged = {f.belief.id: f.reason for f in queue.flagged}
        c.expect(leaked in flagged, "the quarantined fact is flagged for a human", got=flagged)
        c.raises(
            MissingGrantError,
            "approving without a grant is refused",
            approve,
            wall,
            lesson,
            grant=None,
            reason="x",
        )
        c.raises(
            GrantScopeError,
            "approving with a grant for another belief is refused",
            approve,
            wall,
            lesson,
            grant=wall.grant("user", "alice", beliefs=[expiring]),
            reason="x",
        )
        approvals = [
            e for e in wall.store.events() if e.kind == APPROVED_KIND and e.project == project
        ]
        c.expect(not approvals, "a refused approval records nothing")
        approve(wall, lesson, grant=wall.grant("user", "alice", beliefs=[lesson]), reason="ok")
        approvals = [
            e for e in wall.store.events() if e.kind == APPROVED_KIND and e.project == project
        ]
        c.expect(len(approvals) == 1, "an approval on a covering grant is one event")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
