"""The read side of recall: which beliefs a policy admits, quotes, rejects and surfaces.

Every condition of the policy is pushed into the store's indexed queries (accepted and quoted);
one more bounded, unranked query fetches up to ``k`` other matches so that each exclusion can
explain itself.
Nothing here writes: :meth:`firewall.host.session.Session.recall` logs the result it returns.

What the indexed queries return is not trusted on its own: the filter ran on the axis columns,
which a store file can have edited. Each belief is re-checked on its document against the
(re-validated) policy and against the hard floor (:func:`firewall.gate.policy.floor_reasons`:
quarantined, malicious, hidden, privileged_only and blocked never leave outside the audit path);
one that fails is reported as rejected, with its reasons, instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gnomon.firewall.gate.contested import Reader, as_seen_by, contradiction_views
from gnomon.firewall.gate.policy import ContextPolicy, Reason, floor_reasons, revalidate_with_digest
from gnomon.firewall.gate.recall import (
    ContradictionView,
    QuotedItem,
    RecallResult,
    RejectedItem,
    Uncertainty,
)
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import RetrievalStatus, SecurityStatus, TruthStatus

if TYPE_CHECKING:
    from gnomon.firewall.store.base import Store


def gather(
    store: Store,
    chosen: ContextPolicy,
    *,
    query: str,
    project: str,
    user: str | None,
    k: int,
    now: datetime,
) -> RecallResult:
    """Run the policy's queries for ``query`` and sort the matches into the recall buckets."""
    policy, digest = revalidate_with_digest(chosen)
    return collect(
        store, policy, digest, query=query, project=project, user=user, k=k, now=now
    ).result


@dataclass(frozen=True, slots=True)
class Gathered:
    """A recall's result and, for the host side only, the stored beliefs it rejected on age or
    expiry (what lazy decay moves). Never handed to the model: rejections carry no text."""

    result: RecallResult
    aged: tuple[Belief, ...]


def collect(
    store: Store,
    chosen: ContextPolicy,
    digest: str,
    *,
    query: str,
    project: str,
    user: str | None,
    k: int,
    now: datetime,
) -> Gathered:
    """:func:`gather` for a policy the caller has just re-validated
    (:func:`firewall.gate.policy.resolve_with_digest`), ``digest`` being that policy's."""
    found = store.find_beliefs(
        chosen.accept_filter(text=query, project=project, user=user, now=now, limit=k)
    )
    accepted = [
        b
        for b, reasons in zip(found, chosen.rejections(found, now), strict=True)
        if not reasons and not floor_reasons(b)
    ]
    taken = {b.id for b in accepted}
    quoted: list[Belief] = []
    quote_where = chosen.quote_filter(
        text=query,
        project=project,
        user=user,
        now=now,
        limit=chosen.quote.max_items,
    )
    if quote_where is not None:
        quoted = [
            b
            for b in store.find_beliefs(quote_where)
            if b.id not in taken and chosen.quotable(b, now) and not floor_reasons(b)
        ]
        taken |= {b.id for b in quoted}
    # The other matches only explain themselves (ids, reasons, no text): any k of them, not the
    # best-ranked, so that this query stops at k instead of ranking every match in the store.
    others = store.find_beliefs(
        BeliefFilter(
            text=query,
            project=project,
            user=user,
            exclude_ids=frozenset(taken),
            limit=k,
            unranked=True,
        )
    )
    # Contradictions as this reader may know them (firewall.gate.contested): a fact demoted only by
    # peers that no longer stand is seen as before, and one demoted only by peers the reader may
    # not know is seen unverified; a reinstated fact the policy admits joins the accepted ones.
    reader = Reader(chosen, project, user, now)
    seen = as_seen_by(store, reader, others)
    stored = {b.id: b for b in others}
    others = [seen.get(b.id, b) for b in others]
    # Each other match is judged once: no reason at all (policy or floor) means it is admitted.
    judged = [
        (b, tuple(_with_floor(reasons, b)))
        for b, reasons in zip(others, chosen.rejections(others, now), strict=True)
    ]
    reinstated = [b for b, reasons in judged if not reasons]
    accepted = [*accepted, *reinstated[: max(0, k - len(accepted))]]
    judged = [(b, reasons) for b, reasons in judged if reasons]
    others = [b for b, _ in judged]
    rejected = [RejectedItem(b.id, reasons, b.origin) for b, reasons in judged]
    uncertainties: list[Uncertainty] = []
    if chosen.surface_uncertainties:
        for b, r in zip(others, rejected, strict=True):
            if _uncertain(b, r):
                uncertainties.append(
                    Uncertainty(b.id, b.subject, b.origin, r.reasons, b.sensitivity)
                )
    views: list[ContradictionView] = []
    if chosen.surface_contradictions:
        views = contradiction_views(store, reader, [*accepted, *quoted, *others], seen)
    result = RecallResult(
        query=query,
        policy=chosen.name,
        policy_digest=digest,
        accepted=tuple(accepted),
        quoted=tuple(QuotedItem(b) for b in quoted),
        rejected=tuple(rejected),
        contradictions=tuple(views),
        uncertainties=tuple(uncertainties),
    )
    aged = tuple(stored[r.belief_id] for r in rejected if _AGED & set(r.codes))
    return Gathered(result, aged)


#: Rejection codes lazy freshness decay acts on.
_AGED = frozenset({"freshness", "expiry"})


def _with_floor(reasons: list[Reason], belief: Belief) -> list[Reason]:
    """The policy's reasons, then any of the floor's it did not give (same code)."""
    codes = {r.code for r in reasons}
    return reasons + [r for r in floor_reasons(belief) if r.code not in codes]


def _uncertain(belief: Belief, rejected: RejectedItem) -> bool:
    """Not trusted yet, but not hidden for security or access reasons either (above the
    sensitivity ceiling, its subject is not the reader's to know either)."""
    if belief.security_status != SecurityStatus.CLEAN or "sensitivity" in rejected.codes:
        return False
    if belief.retrieval_status not in (RetrievalStatus.NORMAL, RetrievalStatus.RESTRICTED):
        return False
    return belief.truth_status == TruthStatus.UNVERIFIED or "freshness" in rejected.codes


__all__ = ["Gathered", "collect", "gather"]
