"""What one reader may learn about contradictions: fair to clean facts, silent about hidden peers.

Truth is global (a belief is ``contradicted`` for everyone), but who may *know* about a conflict
is not: a recall reader sees only beliefs within its tenant (project, user scope), its policy's
sensitivity ceiling, and out of quarantine. The contradiction channel must not become a side
door to what the reader may not see. So, for one reader:

* **Members it may not know** (another tenant, above its sensitivity ceiling, not ``clean``, or
  hidden/privileged-only/blocked) are left out of every contradiction view entirely: no id, no
  count. A view with fewer than two members left is dropped.
* **A fact demoted only by peers that no longer stand** (quarantined, marked malicious, hidden
  or superseded after the fact) is shown as it was before the demotion: a peer the host has
  judged hostile must not keep a clean fact out of context.
* **A fact demoted by standing peers the reader may not know** (e.g. a ``secret`` statement
  seen through an ``internal`` ceiling) is shown as ``unverified``: not trusted, surfaced as an
  uncertainty, and without the peer. The reader learns that the fact is unconfirmed, never
  that a hidden belief contradicts it.

Only demotions the policy made because of a contradiction (:mod:`firewall.gate.contradictions`,
recorded with the peers as related ids) are re-read this way. A fact a user marked
contradicted, or contradicted by independent evidence, stays contradicted for every reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gnomon.firewall.gate.contradictions import stands
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.gate.recall import ContradictionView
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.states import Authority, Axis, Scope, TruthStatus

if TYPE_CHECKING:
    from gnomon.firewall.store.base import Store


#: Truth states in which a peer still argues against a fact it conflicted with.
ARGUING = frozenset({TruthStatus.SUPPORTED, TruthStatus.CONTRADICTED})


@dataclass(frozen=True, slots=True)
class Reader:
    """Who is reading: the policy (its ceiling) and the tenant the recall is scoped to."""

    policy: ContextPolicy
    project: str
    user: str | None
    now: datetime

    def may_know(self, belief: Belief) -> bool:
        """True if this reader may learn that ``belief`` exists (never its text, by itself)."""
        if not stands(belief):  # quarantined, malicious, hidden, privileged-only, blocked
            return False
        if belief.sensitivity.rank > self.policy.sensitivity_ceiling.rank:
            return False
        return in_scope(belief, self.project, self.user)


def in_scope(belief: Belief, project: str, user: str | None) -> bool:
    """True if a reader in ``project`` (as ``user``) may read ``belief`` at all: its project
    (or a global belief), and a user-scoped belief only its own user's."""
    if belief.project != project and belief.scope != Scope.GLOBAL:
        return False
    return not (belief.scope == Scope.USER and belief.user != user)


def as_seen_by(store: Store, reader: Reader, beliefs: Iterable[Belief]) -> dict[str, Belief]:
    """The reader's version of each belief whose contradiction it may not be told about.

    Returns only the beliefs that change: a demotion whose peers no longer stand is undone
    (truth back to what it was), one whose standing peers are all unknown to the reader reads
    ``unverified``. Every other belief is seen as stored.
    """
    out: dict[str, Belief] = {}
    for belief in beliefs:
        if belief.truth_status != TruthStatus.CONTRADICTED:
            continue
        cause = _peer_demotion(store, belief)
        if cause is None:
            continue
        before, peers = cause
        arguing = [p for p in peers if stands(p) and p.truth_status in ARGUING]
        if not arguing:
            out[belief.id] = belief.model_copy(update={"truth_status": before})
        elif not any(reader.may_know(p) for p in arguing):
            out[belief.id] = belief.model_copy(update={"truth_status": TruthStatus.UNVERIFIED})
    return out


def _peer_demotion(store: Store, belief: Belief) -> tuple[TruthStatus, list[Belief]] | None:
    """``(truth before, the peers)`` if the belief's last truth move was the policy demoting it
    for conflicting with other beliefs; ``None`` for any other cause (a grant, a sentinel,
    contradicting evidence), which every reader sees as it is."""
    last = next((r for r in reversed(store.revisions_for(belief.id)) if r.axis == Axis.TRUTH), None)
    if (
        last is None
        or last.authority != Authority.POLICY
        or last.to_state != TruthStatus.CONTRADICTED
        or last.from_state != TruthStatus.SUPPORTED
        or not last.related_ids
    ):
        return None
    peers = store.get_beliefs(last.related_ids)
    if len(peers) != len(set(last.related_ids)):
        return None  # related to evidence, not (only) to peers: not a peer demotion
    return TruthStatus.SUPPORTED, list(peers.values())


def contradiction_views(
    store: Store, reader: Reader, matched: Sequence[Belief], seen: dict[str, Belief]
) -> list[ContradictionView]:
    """The contradictions among ``matched`` that this reader may be told about.

    Members the reader may not know are left out without a trace (the view's record lists
    only the members the reader may know); of the others, those the
    policy shows (quoted, or admitted but for their truth) are visible and the rest withheld by
    id. A record with fewer than two members left is not a contradiction for this reader.
    ``seen`` (from :func:`as_seen_by`) supplies the reader's version of members it changes.
    """
    records = store.contradictions_for([b.id for b in matched])
    if not records:
        return []
    stored = store.get_beliefs(sorted({i for c in records for i in c.belief_ids}))
    unseen = [b for b in stored.values() if b.id not in seen]
    members = {**stored, **as_seen_by(store, reader, unseen), **seen}
    policy, now = reader.policy, reader.now
    views = []
    for record in records:
        visible: list[Belief] = []
        withheld: list[str] = []
        for ident in record.belief_ids:
            b = members.get(ident)
            if b is None or not reader.may_know(b):
                continue
            if policy.quotable(b, now) or _admits_but_truth(policy, b, now):
                visible.append(b)
            else:
                withheld.append(b.id)
        known = [b.id for b in visible] + withheld
        if len(known) >= 2:
            # the record as this reader may know it: its hidden members are not even named
            shown = record.model_copy(
                update={"belief_ids": [i for i in record.belief_ids if i in known]}
            )
            views.append(ContradictionView(shown, tuple(visible), tuple(withheld)))
    return views


def _admits_but_truth(policy: ContextPolicy, belief: Belief, now: datetime) -> bool:
    return all(r.code.value == "truth" for r in policy.rejection_reasons(belief, now))


__all__ = ["ARGUING", "Reader", "as_seen_by", "contradiction_views"]
