"""Probe: replaying a session under a stricter policy says what it would have excluded.

**Scenario.** The user tells the agent where the okapi release key lives. Twenty days later the
agent recalls it under the ``reference`` policy (90-day freshness window), where it is accepted,
and records a decision that cites it. Afterwards an operator quarantines the belief. The session
is then replayed under ``reference`` and under the stricter ``planner`` policy (7-day window).

**Asserts.**
- Under ``reference`` the recall really accepted the belief and the decision cites it.
- Replayed under ``reference``, the recall is unchanged and no decision is flagged, although the
  belief is quarantined *now*: replay evaluates the belief as it was at the recall (as-of), not as
  it is today.
- Replayed under ``planner``, the recall loses the belief, with a ``freshness`` reason, and the
  decision is flagged as resting on a belief ``planner`` excludes (and that a recall accepted).

**Does not claim.** That replay re-runs the agent: later recalls and decisions are the ones that
really happened, not the ones the agent would have made had it seen other memories. Nor that
ranking is replayed exactly: the first ``k`` matches are taken by today's ranking.
"""

from __future__ import annotations

from datetime import timedelta

from gnomon.firewall import Authority
from gnomon.firewall.audit.replay import replay
from gnomon.probes._fixtures import coder_session, expect_accepted, user_says
from gnomon.probes.runner import Checks, ProbeClock, ProbeResult, execute

NAME = "replay_stricter_policy"
TITLE = "Replay under a stricter policy names the lost belief and flags the dependent decision"

FACT = "The okapi release signing key lives in vault path kv/okapi/release."
QUERY = "okapi release signing key"


def check(url: str, c: Checks) -> None:
    clock = ProbeClock()
    with coder_session(url, NAME, clock=clock, actor="releaser") as (wall, s):
        fact = user_says(wall, s, FACT)
        clock.advance(timedelta(days=20))
        result = s.recall(QUERY, policy="reference")
        expect_accepted(c, result, fact.id, "the 20-day-old user fact is accepted under reference")
        clock.advance(timedelta(seconds=1))
        decision = s.decide("sign the release with the okapi key", [fact.id], policy="reference")
        s.end()
        clock.advance(timedelta(seconds=1))
        wall.quarantine(fact.id, reason="key rotated", authority=Authority.SENTINEL)

        same = replay(wall.store, s.id, "reference")
        (recall,) = same.recalls
        c.expect(
            recall.accepted == recall.actually_accepted and not recall.changed,
            "replayed under reference, the recall is unchanged despite today's quarantine",
            got=(recall.accepted, recall.actually_accepted),
        )
        c.expect(not same.decisions, "replayed under reference, no decision is flagged")

        strict = replay(wall.store, s.id, "planner")
        (recall,) = strict.recalls
        c.expect(fact.id in recall.lost, "replayed under planner, the recall loses the fact")
        reasons = recall.lost_reasons.get(fact.id, ())
        c.expect(
            any(r.startswith("freshness") for r in reasons),
            "the loss is explained by freshness",
            got=reasons,
        )
        flagged = [(d.decision_id, d.belief_id, d.was_accepted) for d in strict.decisions]
        c.expect(
            flagged == [(decision.id, fact.id, True)],
            "the decision is flagged as resting on a belief planner excludes",
            got=flagged,
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
