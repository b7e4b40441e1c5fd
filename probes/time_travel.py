"""Probe: "what did we believe at T" returns the version held at T, not the current one.

**Scenario.** On day 0 the user says the payments api deploys on Fridays (subject
``payments.api``, predicate ``deploy_day``). On day 10 an operator records, on a user grant, that
a newer statement supersedes it. The store is asked what it believed on day 5 and on day 15, by
id, by subject and by text, and ``why`` is asked both times.

**Asserts.**
- As of day 5 every as-of query returns the old belief as ``supported`` (current, not superseded),
  although the current version is ``superseded``.
- As of day 15 the same queries return it ``superseded``, pointing at its successor.
- As of a moment before the belief was recorded, nothing is returned.
- ``why`` at day 5 shows the day-5 version and, next to it, the current one; its history has two
  versions whose recorded ranges meet at the supersession, with the grant's reason.

**Does not claim.** Anything about what the *source* said was valid when: ``valid_from`` and
``valid_to`` are carried as given, and this probe is about the system's belief time. Nor that a
history written with skewed clocks is ordered by real time: ranges follow ``updated_at``.
"""

from __future__ import annotations

from datetime import timedelta

from gnomon.firewall import TruthStatus
from gnomon.firewall.audit.why import why
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.probes._fixtures import coder_session, user_says
from gnomon.probes.runner import Checks, ProbeClock, ProbeResult, execute

NAME = "time_travel"
TITLE = "As-of queries return the version held at that time; supersession shows after, not before"


def check(url: str, c: Checks) -> None:
    clock = ProbeClock()
    start = clock.now
    with coder_session(url, NAME, clock=clock) as (wall, s):
        old = user_says(
            wall,
            s,
            "The payments api deploys on Fridays.",
            subject="payments.api",
            predicate="deploy_day",
        )
        clock.advance(timedelta(days=10))
        new = user_says(wall, s, "From now on the payments api deploys on Thursdays.")
        s.end()
        project = s.project
        wall.supersede(
            old.id,
            new.id,
            reason="release train moved",
            grant=wall.grant("user", "alice", beliefs=[old.id, new.id]),
        )
        store = wall.store
        day5, day15 = start + timedelta(days=5), start + timedelta(days=15)
        c.expect(
            store.get_belief(old.id).truth_status == TruthStatus.SUPERSEDED,  # type: ignore[union-attr]
            "the current version is superseded",
        )
        queries = {
            "subject": BeliefFilter(subject="payments.api", project=project),
            "text": BeliefFilter(text="payments fridays", project=project),
            "prefix": BeliefFilter(subject_prefix="payments.", project=project),
        }
        for how, where in queries.items():
            then = [b for b in store.find_beliefs_as_of(where, day5) if b.id == old.id]
            c.expect(
                [(b.truth_status, b.superseded_by) for b in then]
                == [(TruthStatus.SUPPORTED, None)],
                f"as of day 5, by {how}, the belief is the supported, unsuperseded version",
                got=[(b.truth_status.value, b.superseded_by) for b in then],
            )
            later = [b for b in store.find_beliefs_as_of(where, day15) if b.id == old.id]
            c.expect(
                [(b.truth_status, b.superseded_by) for b in later]
                == [(TruthStatus.SUPERSEDED, new.id)],
                f"as of day 15, by {how}, the belief is superseded by its successor",
                got=[(b.truth_status.value, b.superseded_by) for b in later],
            )
            c.expect(
                store.find_beliefs_as_of(where, start - timedelta(days=1)) == [],
                f"before it was recorded, by {how}, nothing was believed",
            )
        (entry,) = why(store, old.id, at=day5).entries
        c.expect(
            entry.belief.truth_status == TruthStatus.SUPPORTED
            and entry.current is not None
            and entry.current.truth_status == TruthStatus.SUPERSEDED,
            "why --at day 5 shows the day-5 version next to the current one",
        )
        first, second = entry.history
        c.expect(
            first.recorded_until == second.recorded_from
            and [r.reason for r in second.revisions] == ["release train moved"],
            "the history's two ranges meet at the supersession, with the grant's reason",
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
