"""The review queue: a harvest projection of what may become long-term memory, and what a human
should look at.

``gnomon review`` lists two things for a project:

* **candidates**: supported, clean, durable lessons (what content said, or a statement; never a
  tool envelope): truth ``supported``, retrieval ``normal``,
  security ``clean``, freshness ``fresh``, not expiring, not superseded, not past the validity
  the source stated, with an origin of at least ``observed`` integrity (never the agent's own
  writing nor external text, however it got promoted), not alerted by a sentinel, not derived
  from a flagged origin, and not approved already;
* **flagged**: beliefs a human should check: suspicious or quarantined ones, ones a sentinel
  alerted on, ones whose label includes a flagged origin.

Approving a candidate for long-term memory (:func:`approve`) needs a ``user`` grant that covers
the belief (:mod:`firewall.gate.grants`); the approval is an event (``review.approved``) naming the
grant, and the belief is re-checked at that moment: a belief that stopped being a candidate since
the list was read (quarantined, alerted, stale) is refused, whatever the list said.

The projection is rebuilt from the store and the log on every call: nothing here is a second
source of truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from gnomon.firewall.gate.grants import Grant, GrantAuthority
from gnomon.firewall.host.sentinels import SentinelState
from gnomon.firewall.model.arguments import checked_call
from gnomon.firewall.model.chain import Belief, content_hash
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Integrity
from gnomon.firewall.model.states import (
    ClaimKind,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)
from gnomon.firewall.store.base import Store

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

APPROVED_KIND = "review.approved"
#: How many beliefs one listing reads per bucket.
DEFAULT_LIMIT = 200


class NotACandidateError(InputError):
    """The belief is not (or no longer) a candidate for long-term memory."""


@dataclass
class ReviewLog:
    """What the log says that the projections do not: alerts, flagged origins, approvals."""

    sentinels: SentinelState = field(default_factory=SentinelState)
    approved: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, store: Store) -> ReviewLog:
        state = cls()
        for event in state.sentinels.catch_up(store):
            if event.kind == APPROVED_KIND:
                state.approved.add(str(event.payload["belief_id"]))
        return state

    def flagged_origins_of(self, belief: Belief) -> list[str]:
        return sorted(belief.origin.origin_ids & self.sentinels.flagged_origins)


def why_not_candidate(belief: Belief, log: ReviewLog, now: datetime) -> str | None:
    """Why ``belief`` is not a candidate for long-term memory, or ``None`` if it is."""
    checks = (
        (belief.kind == ClaimKind.ENVELOPE, "it records that a tool ran, not a lesson"),
        (
            belief.security_status != SecurityStatus.CLEAN,
            f"security is {belief.security_status.value}",
        ),
        (belief.truth_status != TruthStatus.SUPPORTED, f"truth is {belief.truth_status.value}"),
        (
            belief.retrieval_status != RetrievalStatus.NORMAL,
            f"retrieval is {belief.retrieval_status.value}",
        ),
        (
            belief.freshness_status != FreshnessStatus.FRESH,
            f"freshness is {belief.freshness_status.value}",
        ),
        (belief.expires_at is not None, "it expires: not a durable lesson"),
        (belief.superseded_by is not None, f"superseded by {belief.superseded_by}"),
        (belief.valid_to is not None and belief.valid_to <= now, "its stated validity is over"),
        (
            belief.origin.integrity < Integrity.OBSERVED,
            f"its origin is {belief.origin.integrity.name.lower()} (derived or external text)",
        ),
        (belief.id in log.sentinels.alerted_beliefs, "a sentinel alerted on it"),
        (bool(log.flagged_origins_of(belief)), "it derives from a flagged origin"),
        (belief.id in log.approved, "already approved"),
    )
    return next((reason for failed, reason in checks if failed), None)


def why_flagged(belief: Belief, log: ReviewLog) -> str | None:
    """Why a human should check ``belief``, or ``None``."""
    if belief.security_status in (SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED):
        return f"security is {belief.security_status.value}"
    if belief.id in log.sentinels.alerted_beliefs:
        return "a sentinel alerted on it"
    origins = log.flagged_origins_of(belief)
    if origins:
        return f"derives from flagged origin(s) {', '.join(origins)}"
    return None


@dataclass(frozen=True, slots=True)
class Flagged:
    belief: Belief
    reason: str


@dataclass(frozen=True, slots=True)
class ReviewQueue:
    project: str
    candidates: tuple[Belief, ...]
    flagged: tuple[Flagged, ...]

    def to_json(self, shown: Callable[[Belief], str] | None = None) -> dict[str, object]:
        """The queue as JSON; ``shown`` gives the text to print for a statement (the CLI passes
        the trust report's redactor, so text above its ceiling or holding a credential is
        replaced by a marker and its hash)."""

        def item(belief: Belief, **extra: str) -> dict[str, object]:
            return {
                "id": belief.id,
                "statement": belief.statement if shown is None else shown(belief),
                "sensitivity": belief.sensitivity.value,
                "security": belief.security_status.value,
                "truth": belief.truth_status.value,
                "origin": sorted(belief.origin.origin_ids),
                **extra,
            }

        return {
            "project": self.project,
            "candidates": [item(b) for b in self.candidates],
            "flagged": [item(f.belief, reason=f.reason) for f in self.flagged],
        }


def harvest(
    store: Store, project: str, *, now: datetime, limit: int = DEFAULT_LIMIT
) -> ReviewQueue:
    """The review queue of ``project`` at ``now`` (see the module docstring)."""
    log = ReviewLog.read(store)
    supported = store.find_beliefs(
        BeliefFilter(
            project=project,
            truth=frozenset({TruthStatus.SUPPORTED}),
            retrieval=frozenset({RetrievalStatus.NORMAL}),
            security=frozenset({SecurityStatus.CLEAN}),
            freshness=frozenset({FreshnessStatus.FRESH}),
            not_expired_at=now,
            limit=limit,
        )
    )
    candidates = tuple(b for b in supported if why_not_candidate(b, log, now) is None)
    suspects = store.find_beliefs(
        BeliefFilter(
            project=project,
            security=frozenset({SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED}),
            limit=limit,
        )
    )
    alerted = store.get_beliefs(sorted(log.sentinels.alerted_beliefs)).values()
    derived = (
        b for o in sorted(log.sentinels.flagged_origins) for b in store.beliefs_with_origin(o)
    )
    flagged: dict[str, Flagged] = {}
    for belief in _chain(suspects, alerted, derived):
        reason = why_flagged(belief, log)
        if belief.project == project and reason is not None and belief.id not in flagged:
            flagged[belief.id] = Flagged(belief, reason)
    return ReviewQueue(project, candidates, tuple(flagged.values())[:limit])


def _chain(*groups: Iterable[Belief]) -> Iterable[Belief]:
    for group in groups:
        yield from group


@checked_call
def approve(wall: Firewall, belief_id: str, *, grant: Grant, reason: str) -> Belief:
    """Approve a candidate for long-term memory on a ``user`` grant that covers it; one
    ``review.approved`` event. Refused (typed) without a grant, with a forged, expired, wrong
    authority or wrong-scope grant, or when the belief is not a candidate now."""
    if not isinstance(reason, str) or not reason:
        raise InputError("an approval needs a reason", hint="pass reason='...'")
    belief = wall.require_belief(belief_id)
    now = wall.clock()
    checked = wall.verifier.verify(
        grant,
        {GrantAuthority.USER},
        now=now,
        operation=f"approving {belief_id} for long-term memory",
        belief=belief,
    )
    why = why_not_candidate(belief, ReviewLog.read(wall.store), now)
    if why is not None:
        raise NotACandidateError(
            f"{belief_id} is not a candidate for long-term memory: {why}",
            hint="`gnomon review` lists the candidates; a flagged belief needs checking first",
        )
    wall.commit(
        wall.draft(
            APPROVED_KIND,
            actor=f"user:{checked.subject}",
            now=now,
            project=belief.project,
            data={
                "belief_id": belief.id,
                "grant_id": checked.id,
                "reason": reason,
                "statement_hash": content_hash(belief.statement),
            },
        )
    )
    return belief


__all__ = [
    "APPROVED_KIND",
    "Flagged",
    "NotACandidateError",
    "ReviewLog",
    "ReviewQueue",
    "approve",
    "harvest",
    "why_flagged",
    "why_not_candidate",
]
