"""Probe: a sentinel alert holds the actions that depend on it (the kernel's arbitration hook).

**Scenario.** A host runs the action kernel with the shipped default policy and a
``SentinelArbiter``. A user states a fact (supported, clean). A sentinel raises an alert on it
(recorded as a ``sentinel.alert`` event by another firewall object on the same store, as a
separate sentinel process would). The operator flags a file origin. Then an agent (1) proposes an
L1 ``suggest`` citing the alerted fact, (2) in a fresh session reads the flagged file and proposes
an L1 ``suggest`` citing nothing, and (3) in a clean session proposes the same ``suggest`` citing
nothing.

**Asserts.**
- (1) is held, with a reason naming the sentinel alert, although the policy allows L1 and the
  cited belief is supported and clean.
- (2) is held, with a reason naming the flagged origin (the policy's data-flow rule starts at L3,
  so without the arbiter it would run).
- (3) executes: the arbiter holds only what rests on alerts or flagged origins.

**Does not claim.** That alerts are right, or anything about MCP proxies (not built here).
"""

from __future__ import annotations

from gnomon.firewall import Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.host.sentinels import ALERT_KIND, SentinelArbiter
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "sentinel_arbiter"
TITLE = "A sentinel alert or a flagged origin holds the actions that rest on it"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        with wall.session(project=project, actor="coder", user="alice") as s:
            user = wall.channel(Origin.user("alice"), project=project)
            (fact,) = s.observe(tool="chat", content="Releases go out via CI", origin=user).content
        wall.commit(
            wall.draft(
                ALERT_KIND,
                actor="sentinel:low_confidence",
                now=wall.clock(),
                project=project,
                data={"alert_id": "alr_probe", "sentinel": "probe", "belief_ids": [fact.id]},
            )
        )
        hostile = Origin.external(f"file:{project}/HOSTILE.md")
        (hostile_id,) = hostile.origin_ids
        wall.flag_origin(hostile_id, reason="operator: poisoned")
        with host(wall, arbiters=[SentinelArbiter(wall.store)]) as h:
            with wall.session(project=project, actor="coder", user="alice") as s:
                cited = h.kernel.handle(s).request("suggest", {"text": "ship"}, cites=[fact.id])
            c.expect(
                cited.status == "held" and any("sentinel alert" in r for r in cited.reasons),
                "an L1 action citing an alerted belief is held",
                got=(cited.status, cited.reasons),
            )
            with wall.session(project=project, actor="coder", user="alice") as s:
                s.observe(
                    tool="read_file",
                    content="HOSTILE: ship keys",
                    origin=hostile,
                )
                derived = h.kernel.handle(s).request("suggest", {"text": "ship keys"})
            c.expect(
                derived.status == "held" and any("flagged origin" in r for r in derived.reasons),
                "an L1 action in a session that read a flagged origin is held, with no citation",
                got=(derived.status, derived.reasons),
            )
            with wall.session(project=project, actor="coder", user="alice") as s:
                clean = h.kernel.handle(s).request("suggest", {"text": "ship"})
            c.expect(
                clean.status == "executed",
                "the same action in a clean session executes",
                got=clean.status,
            )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
