"""Contradiction detection and its consequences, as pure functions over beliefs.

Two beliefs contradict when they share a subject and a predicate but state different things, or
when one is linked to the other explicitly. Detection always records a
:class:`~firewall.chain.Contradiction`. Whether it also moves truth states depends on who is
arguing: when two *supported* beliefs conflict, both become ``contradicted`` (policy authority)
and every decision that rested on them is flagged. An unverified belief that conflicts with a
supported one is recorded and surfaced, but cannot demote the supported one, so an attacker who
plants a conflicting note cannot knock true facts out of context.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from firewall.adoption import NewBelief
from firewall.chain import Belief, Contradiction, Decision, Revision
from firewall.gate import Move, apply_moves
from firewall.ids import new_id
from firewall.states import Authority, Axis, TruthStatus
from firewall.store.base import BeliefFilter, Store
from firewall.text import normalize

ACTIVE_TRUTH = frozenset({TruthStatus.UNVERIFIED, TruthStatus.SUPPORTED, TruthStatus.CONTRADICTED})


def _same_statement(a: Belief, b: Belief) -> bool:
    return " ".join(normalize(a.statement).split()) == " ".join(normalize(b.statement).split())


def conflicting(new: Belief, existing: Iterable[Belief]) -> list[Belief]:
    """Existing active beliefs on the same subject and predicate that say something else."""
    if new.subject is None or new.predicate is None:
        return []
    return [
        old
        for old in existing
        if old.id != new.id
        and old.subject == new.subject
        and old.predicate == new.predicate
        and old.truth_status in ACTIVE_TRUTH
        and not _same_statement(old, new)
    ]


def contradiction_record(members: Sequence[Belief], *, reason: str, now: datetime) -> Contradiction:
    first = members[0]
    return Contradiction(
        id=new_id("con"),
        belief_ids=[b.id for b in members],
        subject=first.subject,
        predicate=first.predicate,
        reason=reason,
        detected_at=now,
    )


def to_demote(members: Sequence[Belief]) -> list[Belief]:
    """Members whose truth must move to ``contradicted``: only when supported meets supported."""
    supported = [b for b in members if b.truth_status == TruthStatus.SUPPORTED]
    return supported if len(supported) >= 2 else []


def flag_decisions(decisions: Iterable[Decision], belief_id: str, *, why: str) -> list[Decision]:
    """New versions of the decisions that depended on ``belief_id``, each with a flag."""
    flag = f"dependency {belief_id} {why}"
    return [
        d.model_copy(update={"flags": [*d.flags, flag]}) for d in decisions if flag not in d.flags
    ]


def detect(
    store: Store, made: Sequence[NewBelief], now: datetime
) -> tuple[dict[str, tuple[Any, ...]], list[str], dict[str, Belief]]:
    """Records for new beliefs plus any contradictions they create with existing beliefs,
    and the current version of every belief touched (new ones may already be demoted)."""
    beliefs = {m.belief.id: m.belief for m in made}
    decisions: list[Decision] = []
    revisions: list[Revision] = []
    found: list[Contradiction] = []
    for m in made:
        new = m.belief
        groups: list[list[Belief]] = []
        if new.subject and new.predicate:
            existing = store.find_beliefs(
                BeliefFilter(
                    project=new.project,
                    subject=new.subject,
                    predicate=new.predicate,
                    truth=ACTIVE_TRUTH,
                    limit=50,
                )
            )
            rivals = conflicting(new, existing)
            if rivals:
                groups.append([new, *rivals])
        if new.contradicts:
            linked = store.get_beliefs(new.contradicts)
            groups.append([new, *linked.values()])
        for group in groups:
            found.append(
                contradiction_record(
                    group, reason=f"{new.subject}/{new.predicate} conflict", now=now
                )
            )
            for member in to_demote([beliefs.get(b.id, b) for b in group]):
                moved, revs = apply_moves(
                    member,
                    [Move(Axis.TRUTH, TruthStatus.CONTRADICTED)],
                    authority=Authority.POLICY,
                    reason=f"conflicts with a supported belief in {found[-1].id}",
                    now=now,
                    related_ids=[b.id for b in group if b.id != member.id],
                )
                beliefs[member.id] = moved
                revisions.extend(revs)
                decisions.extend(
                    flag_decisions(
                        store.decisions_depending_on(member.id),
                        member.id,
                        why="contradicted",
                    )
                )
    records: dict[str, tuple[Any, ...]] = {
        "claims": tuple(m.claim for m in made),
        "evidence": tuple(m.evidence for m in made),
        "beliefs": tuple(beliefs.values()),
        "revisions": tuple(revisions),
        "decisions": tuple(decisions),
        "contradictions": tuple(found),
    }
    return records, [c.id for c in found], beliefs


__all__ = [
    "ACTIVE_TRUTH",
    "conflicting",
    "contradiction_record",
    "detect",
    "flag_decisions",
    "to_demote",
]
