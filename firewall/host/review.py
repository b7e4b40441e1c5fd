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

The approval is pinned to what the human saw: it names the belief's version (and may name its
statement hash), and is refused (:class:`BeliefChangedError`) if the belief is no longer at that
version (revised, quarantined) or says something else. The re-check and the commit cannot be
split either: the approval is committed only if the log's head is still the one the check read
(:meth:`Store.commit_if_head <firewall.store.base.Store.commit_if_head>`, one transaction on every
backend), so a quarantine or an alert landing between them makes the commit fail; the log is read
again and the approval re-checked (and refused) on what it now says.

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
from gnomon.firewall.log.events import REVIEW_APPROVED
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

APPROVED_KIND = REVIEW_APPROVED
#: How many beliefs one listing reads per bucket.
DEFAULT_LIMIT = 200
#: Beliefs read per page while looking for candidates, and the most pages read.
PAGE = 500
MAX_PAGES = 200
#: How many times an approval re-reads the log when other events land between its check and
#: its commit, before giving up (each try reads only the events since the last).
PIN_ATTEMPTS = 8


class NotACandidateError(InputError):
    """The belief is not (or no longer) a candidate for long-term memory."""


class BeliefChangedError(InputError):
    """The belief changed since the version the approval names: the human approved something
    else than what the store now holds."""


class ReviewBusyError(InputError):
    """The log kept moving between the approval's check and its commit."""


@dataclass
class ReviewLog:
    """What the log says that the projections do not: alerts, flagged origins, approvals."""

    sentinels: SentinelState = field(default_factory=SentinelState)
    approved: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, store: Store) -> ReviewLog:
        state = cls()
        state.catch_up(store)
        return state

    @property
    def seq(self) -> int:
        """The last event this projection has read."""
        return self.sentinels.seq

    def catch_up(self, store: Store) -> None:
        """Read the events after :attr:`seq` (an indexed tail read) and learn them."""
        for event in self.sentinels.catch_up(store):
            if event.kind == APPROVED_KIND:
                self.approved.add(str(event.payload["belief_id"]))

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
    #: whether more candidates or flagged beliefs exist than are listed (the limit, or the
    #: scan's bound, was reached): the listing says so rather than end silently
    truncated: bool = False

    def to_json(self, shown: Callable[[Belief], str] | None = None) -> dict[str, object]:
        """The queue as JSON; ``shown`` gives the text to print for a statement (the CLI passes
        the trust report's redactor, so text above its ceiling or holding a credential is
        replaced by a marker and its hash)."""

        def item(belief: Belief, **extra: str) -> dict[str, object]:
            return {
                "id": belief.id,
                "version": belief.version,
                "statement_hash": content_hash(belief.statement),
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
            "truncated": self.truncated,
        }


def harvest(
    store: Store, project: str, *, now: datetime, limit: int = DEFAULT_LIMIT
) -> ReviewQueue:
    """The review queue of ``project`` at ``now`` (see the module docstring)."""
    BeliefFilter(limit=limit)  # the one check of a page size (a typed error, never LIMIT -1)
    log = ReviewLog.read(store)
    # filter, then limit: the store is read page by page until ``limit`` candidates are found,
    # so a flood of supported non-candidates (envelopes of guarded calls) cannot push the real
    # ones out of the window; the scan is bounded, and a bounded scan says it truncated
    candidates: list[Belief] = []
    truncated = False
    for page in range(MAX_PAGES):
        supported = store.find_beliefs(
            BeliefFilter(
                project=project,
                truth=frozenset({TruthStatus.SUPPORTED}),
                retrieval=frozenset({RetrievalStatus.NORMAL}),
                security=frozenset({SecurityStatus.CLEAN}),
                freshness=frozenset({FreshnessStatus.FRESH}),
                not_expired_at=now,
                limit=PAGE,
                offset=page * PAGE,
            )
        )
        candidates.extend(b for b in supported if why_not_candidate(b, log, now) is None)
        if len(candidates) > limit:
            truncated = True
            break
        if len(supported) < PAGE:
            break
    else:
        truncated = True
    suspects = store.find_beliefs(
        BeliefFilter(
            project=project,
            security=frozenset({SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED}),
            limit=limit + 1,
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
    truncated = truncated or len(flagged) > limit
    return ReviewQueue(
        project, tuple(candidates[:limit]), tuple(flagged.values())[:limit], truncated
    )


def _chain(*groups: Iterable[Belief]) -> Iterable[Belief]:
    for group in groups:
        yield from group


@checked_call
def approve(
    wall: Firewall,
    belief_id: str,
    *,
    grant: Grant,
    reason: str,
    version: int | None = None,
    statement_hash: str | None = None,
) -> Belief:
    """Approve a candidate for long-term memory on a ``user`` grant that covers it; one
    ``review.approved`` event naming the version approved and its statement hash.

    ``version`` (and ``statement_hash``) pin what the human saw (``gnomon review`` shows both);
    without ``version`` the approval pins the version current when it is called. Refused
    (typed) without a grant, with a forged, expired, wrong authority or wrong-scope grant, when
    the belief is not a candidate now, or when it is not at the pinned version or statement
    (:class:`BeliefChangedError`). Committed only on the log the check read (module docstring).
    """
    if not isinstance(reason, str) or not reason:
        raise InputError("an approval needs a reason", hint="pass reason='...'")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise InputError(
            f"version must be a whole number, got {type(version).__name__}",
            hint="the version `gnomon review` listed, e.g. version=3",
        )
    log = ReviewLog.read(wall.store)
    for _ in range(PIN_ATTEMPTS):
        head = log.seq
        # read after the log: a belief newer than ``head`` moves the head, and the commit fails
        belief = wall.require_belief(belief_id)
        if version is None:
            version = belief.version
        _check_pinned(belief, version, statement_hash)
        now = wall.clock()
        checked = wall.verifier.verify(
            grant,
            {GrantAuthority.USER},
            now=now,
            operation=f"approving {belief_id} for long-term memory",
            belief=belief,
        )
        why = why_not_candidate(belief, log, now)
        if why is not None:
            raise NotACandidateError(
                f"{belief_id} is not a candidate for long-term memory: {why}",
                hint="`gnomon review` lists the candidates; a flagged belief needs checking first",
            )
        draft = wall.draft(
            APPROVED_KIND,
            actor=f"user:{checked.subject}",
            now=now,
            project=belief.project,
            data={
                "belief_id": belief.id,
                "version": belief.version,
                "grant_id": checked.id,
                "reason": reason,
                "statement_hash": content_hash(belief.statement),
            },
        )
        if wall.commit_if_head(head, draft) is not None:
            return belief
        log.catch_up(wall.store)  # something landed between the check and the commit
    raise ReviewBusyError(
        f"approving {belief_id}: the log moved between the check and the commit "
        f"{PIN_ATTEMPTS} times; nothing was approved",
        hint="try again when the store is quieter",
    )


def _check_pinned(belief: Belief, version: int, statement_hash: str | None) -> None:
    if belief.version != version:
        raise BeliefChangedError(
            f"{belief.id} changed since version {version}: it is at version {belief.version} "
            f"now (truth {belief.truth_status.value}, security {belief.security_status.value})",
            hint="list it again with `gnomon review` and approve the version you see",
        )
    if statement_hash is not None and content_hash(belief.statement) != statement_hash:
        raise BeliefChangedError(
            f"{belief.id} says something else than the statement {statement_hash} named",
            hint="list it again with `gnomon review` and approve the statement you see",
        )


__all__ = [
    "APPROVED_KIND",
    "PIN_ATTEMPTS",
    "BeliefChangedError",
    "Flagged",
    "NotACandidateError",
    "ReviewBusyError",
    "ReviewLog",
    "ReviewQueue",
    "approve",
    "harvest",
    "why_flagged",
    "why_not_candidate",
]
