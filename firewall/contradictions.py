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

from firewall.chain import Belief, Contradiction, Decision
from firewall.ids import new_id
from firewall.states import TruthStatus
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


__all__ = [
    "ACTIVE_TRUTH",
    "conflicting",
    "contradiction_record",
    "flag_decisions",
    "to_demote",
]
