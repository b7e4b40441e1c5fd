"""Probe: freshness decay moves an old fact to stale (an event), and a stale fact leaves the
default context.

**Scenario.** A user states one fact on day 0 and one on day 25,
and a third carries an ``expires_at`` of day 2. On day 35 the host runs bulk
decay (``gnomon decay``), then the agent recalls under ``default``.

**Asserts.**
- After decay the day-0 fact is ``stale`` and the expiring one ``expired``, each moved by a
  ``belief.decayed`` event on ``system`` authority; the day-25 fact stays ``fresh``.
- Under ``default`` the stale and expired facts are not accepted and their rejection says
  ``freshness is stale`` / ``expired``; the fresh one is accepted.
- ``system`` authority cannot move the stale fact back to ``fresh``.

**Does not claim.** That wall clocks are honest (the host's clock decides), or that facts the
source states as timeless are treated differently (they are not).
"""

from __future__ import annotations

from datetime import timedelta

from gnomon.firewall import Authority, Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.host.decay import DECAY_KIND, decay_all
from gnomon.firewall.model.errors import TransitionRefused
from gnomon.firewall.model.states import Axis, FreshnessStatus
from gnomon.probes.runner import Checks, ProbeClock, ProbeResult, execute, project_for

NAME = "decay_stale_context"
TITLE = "Decay moves old facts to stale and expired, as events; they leave the default context"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    clock = ProbeClock()
    with open_firewall(url, clock=clock) as wall:
        user = wall.channel(Origin.user("alice"), project=project)

        def state(text: str, **kw: object) -> str:
            with wall.session(project=project, actor="coder", user="alice") as s:
                return s.observe(tool="chat", content=text, origin=user, **kw).content[0].id  # type: ignore[arg-type]

        old = state("The release manager is wombat-rm")
        gone = state("The canary host is wombat-canary", expires_at=clock() + timedelta(days=2))
        clock.advance(timedelta(days=25))
        young = state("The release train is wombat-train")
        clock.advance(timedelta(days=10))
        head = wall.store.head()[0]
        decay_all(wall)
        # what the decay events moved: each records a freshness revision per belief (a move
        # batch derives the new versions from the previous ones instead of restating them)
        moved = {
            r.belief_id
            for e in wall.store.events(after=head)
            if e.kind == DECAY_KIND
            for r in e.records().revisions
            if r.axis == Axis.FRESHNESS
        }
        got = {i: wall.require_belief(i).freshness_status for i in (old, gone, young)}
        c.expect(
            got[old] == FreshnessStatus.STALE and old in moved,
            "the day-0 fact is stale after decay, moved by a belief.decayed event",
            got=got[old].value,
        )
        c.expect(
            got[gone] == FreshnessStatus.EXPIRED and gone in moved,
            "the fact past its expires_at is expired, moved by a belief.decayed event",
            got=got[gone].value,
        )
        c.expect(got[young] == FreshnessStatus.FRESH, "the day-25 fact stays fresh")
        with wall.session(project=project, actor="coder", user="alice") as s:
            result = s.recall("wombat release manager canary train", "default")
        why = {r.belief_id: " ".join(x.detail for x in r.reasons) for r in result.rejected}
        c.expect(
            old not in result.accepted_ids and "freshness is stale" in why.get(old, ""),
            "the stale fact is rejected under default as stale",
            got=why.get(old),
        )
        c.expect(
            gone not in result.accepted_ids and "expired" in why.get(gone, ""),
            "the expired fact is rejected under default",
        )
        c.expect(young in result.accepted_ids, "the fresh fact is accepted")
        c.raises(
            TransitionRefused,
            "system authority cannot refresh a stale fact",
            wall.transition,
            old,
            [Move(Axis.FRESHNESS, FreshnessStatus.FRESH)],
            reason="refresh",
            authority=Authority.SYSTEM,
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
