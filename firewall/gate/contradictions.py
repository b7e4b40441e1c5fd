"""Contradiction detection and its consequences, as pure functions over beliefs.

Two beliefs contradict when they share a subject and a predicate but state different things, or
when one is linked to the other explicitly. Detection always records a
:class:`~firewall.model.chain.Contradiction`. Whether it also moves truth states depends on who is
arguing: when two *standing* supported beliefs conflict, both become ``contradicted`` (policy
authority) and every decision that rested on them is flagged. A member stands only while it is
``clean`` and retrievable: a quarantined, malicious, hidden or blocked belief is on the record
but demotes nothing, so a peer the host has judged hostile cannot knock a clean fact out of
context. An unverified belief that conflicts with a supported one is recorded and surfaced, but
cannot demote the supported one, so an attacker who plants a conflicting note cannot knock true
facts out of context either.

Evidence counts the same way (:func:`detect_on_evidence`): contradicting evidence is weighed by
the corroboration rule itself (stronger than reading, from an origin independent of the claim,
not the agent's own action), so a planted file saying "that is false" counts for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from gnomon.firewall.gate.adoption import NewBelief
from gnomon.firewall.gate.gate import Move, apply_moves
from gnomon.firewall.model.chain import (
    Belief,
    Contradiction,
    Decision,
    EvidenceItem,
    EvidenceSet,
    Revision,
)
from gnomon.firewall.model.errors import ParallaxError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    EvidenceRelation,
    RetrievalStatus,
    Scope,
    SecurityStatus,
    TruthStatus,
)

if TYPE_CHECKING:
    from gnomon.firewall.store.base import Store

from gnomon.firewall.model.text import normalize

ACTIVE_TRUTH = frozenset({TruthStatus.UNVERIFIED, TruthStatus.SUPPORTED, TruthStatus.CONTRADICTED})

#: Retrieval states that take a belief out of every ordinary read: such a belief argues nothing.
WITHDRAWN = frozenset(
    {RetrievalStatus.HIDDEN, RetrievalStatus.PRIVILEGED_ONLY, RetrievalStatus.BLOCKED}
)


def _same_statement(a: Belief, b: Belief) -> bool:
    return " ".join(normalize(a.statement).split()) == " ".join(normalize(b.statement).split())


def stands(belief: Belief) -> bool:
    """True if ``belief`` may weigh in a contradiction: ``clean`` and not withdrawn from reads.

    A quarantined or malicious peer (or one the host hid or blocked) is still recorded as a
    member of the contradiction, for audit, but never demotes anything.
    """
    return (
        belief.security_status == SecurityStatus.CLEAN and belief.retrieval_status not in WITHDRAWN
    )


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
    """Members whose truth must move to ``contradicted``: only when two standing supported
    members meet. A quarantined or malicious member neither demotes nor counts."""
    supported = [b for b in members if b.truth_status == TruthStatus.SUPPORTED and stands(b)]
    return supported if len(supported) >= 2 else []


def flag_decisions(decisions: Iterable[Decision], belief_id: str, *, why: str) -> list[Decision]:
    """New versions of the decisions that depended on ``belief_id``, each with a flag."""
    flag = f"dependency {belief_id} {why}"
    return [
        d.model_copy(update={"flags": [*d.flags, flag]}) for d in decisions if flag not in d.flags
    ]


def cited_flags(cited: Iterable[tuple[str, Decision]], *, why: str) -> list[Decision]:
    """The flagged versions of the decisions in ``cited`` (``(belief id, decision)`` pairs,
    :meth:`~firewall.store.base.Store.decisions_citing`) when each of those beliefs moves for
    ``why``: one version per decision, carrying a flag for every one of its beliefs that moved,
    in order."""
    flagged: dict[str, Decision] = {}
    for belief_id, decision in cited:
        for d in flag_decisions([flagged.get(decision.id, decision)], belief_id, why=why):
            flagged[d.id] = d
    return list(flagged.values())


#: Security states a dependency can fall into that every decision resting on it must show.
_FLAGGED_SECURITY = frozenset({SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS})


def transition_flags(store: Store, before: Belief, after: Belief) -> list[Decision]:
    """The decision flags a move of one belief from ``before`` to ``after`` raises.

    Whoever makes the move (a sentinel, a grant, the policy), the decisions that rested on the
    belief carry a flag when it becomes ``contradicted`` or ``quarantined``/``malicious``; the
    trust report of the decision's session shows it, however much later it happens.
    """
    whys = []
    if after.truth_status == TruthStatus.CONTRADICTED != before.truth_status:
        whys.append("contradicted")
    if after.security_status in _FLAGGED_SECURITY and after.security_status != (
        before.security_status
    ):
        whys.append(after.security_status.value)
    if not whys:
        return []
    decisions = store.decisions_depending_on(after.id)
    flagged: dict[str, Decision] = {}
    for why in whys:
        current = [flagged.get(d.id, d) for d in decisions]
        for d in flag_decisions(current, after.id, why=why):
            flagged[d.id] = d
    return list(flagged.values())


# -- detection ----------------------------------------------------------------------------------


def _same_tenant(a: Belief, b: Belief) -> bool:
    return a.project == b.project or Scope.GLOBAL in (a.scope, b.scope)


def _groups(store: Store, new: Belief) -> list[list[Belief]]:
    """The conflicts ``new`` takes part in: its subject/predicate rivals, and explicit links.

    An explicit link to another tenant's belief is dropped: a contradiction never spans
    projects, so a write in one project cannot put a record next to another project's fact.
    """
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
        linked = [
            b
            for b in store.get_beliefs(new.contradicts).values()
            if b.id != new.id and _same_tenant(b, new)
        ]
        if linked:
            groups.append([new, *linked])
    return groups


class _Found:
    """What one detection pass accumulates: the touched beliefs and the records to commit."""

    def __init__(self, store: Store, beliefs: dict[str, Belief]) -> None:
        self.store = store
        self.beliefs = beliefs
        self.revisions: list[Revision] = []
        self.decisions: dict[str, Decision] = {}
        self.contradictions: list[Contradiction] = []

    def record(self, group: Sequence[Belief], *, reason: str, now: datetime) -> None:
        record = contradiction_record(group, reason=reason, now=now)
        self.contradictions.append(record)
        for member in to_demote([self.beliefs.get(b.id, b) for b in group]):
            self.move(
                member,
                TruthStatus.CONTRADICTED,
                reason=f"conflicts with a supported belief in {record.id}",
                related=[b.id for b in group if b.id != member.id],
                now=now,
            )

    def move(
        self, belief: Belief, to: TruthStatus, *, reason: str, related: list[str], now: datetime
    ) -> Belief:
        moved, revs = apply_moves(
            belief,
            [Move(Axis.TRUTH, to)],
            authority=Authority.POLICY,
            reason=reason,
            now=now,
            related_ids=related,
        )
        self.beliefs[belief.id] = moved
        self.revisions.extend(revs)
        known = [self.decisions.get(d.id, d) for d in self.store.decisions_depending_on(belief.id)]
        for d in flag_decisions(known, belief.id, why="contradicted"):
            self.decisions[d.id] = d
        return moved

    def records(
        self, made: Sequence[NewBelief] = (), evidence: Sequence[EvidenceItem] = ()
    ) -> dict[str, tuple[Any, ...]]:
        return {
            "claims": tuple(m.claim for m in made),
            "evidence": (*(m.evidence for m in made), *evidence),
            "beliefs": tuple(self.beliefs.values()),
            "revisions": tuple(self.revisions),
            "decisions": tuple(self.decisions.values()),
            "contradictions": tuple(self.contradictions),
        }


def linked(
    store: Store, members: Sequence[Belief], *, reason: str, now: datetime
) -> dict[str, tuple[Any, ...]]:
    """Records for an explicit conflict link between existing beliefs (a memory store's own
    conflict signal): the record, the demotion of standing supported members (when two meet)
    and the flags on every decision that rested on them, exactly as :func:`detect` would."""
    found = _Found(store, {b.id: b for b in members})
    found.record(members, reason=reason, now=now)
    return found.records()


def detect(
    store: Store, made: Sequence[NewBelief], now: datetime
) -> tuple[dict[str, tuple[Any, ...]], list[str], dict[str, Belief]]:
    """Records for new beliefs plus any contradictions they create with existing beliefs,
    and the current version of every belief touched (new ones may already be demoted)."""
    found = _Found(store, {m.belief.id: m.belief for m in made})
    for m in made:
        new = m.belief
        for group in _groups(store, new):
            found.record(group, reason=f"{new.subject}/{new.predicate} conflict", now=now)
    return found.records(made), [c.id for c in found.contradictions], found.beliefs


# -- evidence -----------------------------------------------------------------------------------


def independent_contradiction(evidence: EvidenceSet, belief: Belief) -> int:
    """Independence groups of evidence that contradicts ``belief`` and would count if it
    supported it: the corroboration rule itself, read the other way, so one rule decides
    which evidence counts, whichever way it points."""
    against = [
        item.model_copy(update={"relation": EvidenceRelation.SUPPORTS})
        for item in evidence.items
        if item.relation == EvidenceRelation.CONTRADICTS
    ]
    if not against:
        return 0
    return EvidenceSet(claim_id=evidence.claim_id, items=against).independent_corroboration(
        belief.origin
    )


class EvidenceOutcome(NamedTuple):
    """What :func:`detect_on_evidence` decided, ready to commit with the evidence item."""

    #: Record tuples by :class:`~firewall.log.events.Records` field: the evidence item itself, and
    #: the beliefs, revisions, decisions and contradictions it moved or recorded.
    records: dict[str, tuple[Any, ...]]
    #: Ids of the contradictions recorded.
    contradictions: list[str]
    #: The belief's new version (the stored one when nothing moved).
    belief: Belief
    #: True if the belief became ``supported`` on this evidence.
    promoted: bool


def detect_on_evidence(
    store: Store, belief: Belief, item: EvidenceItem, now: datetime, *, required: int = 1
) -> EvidenceOutcome:
    """Weigh one new evidence item for ``belief``: promotion, demotion, re-detection.

    Contract (the caller is :meth:`firewall.host.session.Session.corroborate`):

    * ``belief`` is the stored version; ``item`` is the new evidence item for its claim, built
      and checked by the caller (origin, quality, self-promotion refusal) and **not yet
      committed**. The caller commits ``Records(**outcome.records)`` (which holds ``item``)
      in one event; nothing here writes.
    * Contradicting evidence counts against, by the corroboration rule
      (:func:`independent_contradiction`): planted or reading-class "that is false" counts for
      nothing, an independent trusted observation counts once per independence group.
    * A belief facing counted contradicting evidence is **never promoted** on policy
      authority, however much support it has; only a user or probe grant can decide it.
    * A ``supported`` belief facing counted contradicting evidence moves to ``contradicted``
      (policy authority, related to the evidence source) and the decisions resting on it are
      flagged.
    * Otherwise a ``supports`` item may promote an ``unverified``, ``clean`` belief to
      ``supported`` + ``normal`` if the gate's parallax check passes with ``required``
      independent corroborations (a :class:`~firewall.model.errors.ParallaxError` just leaves it
      unverified: the evidence is still recorded).
    * When the belief ends up ``supported``, contradiction detection is re-run for it, as for
      a new belief: a standing supported rival on the same subject/predicate (or explicitly
      linked) demotes both, and a new :class:`~firewall.model.chain.Contradiction` is recorded for
      rivals not already on record with it.

    >>> from gnomon.firewall.model.chain import EvidenceItem
    >>> from gnomon.firewall.model.states import EvidenceQuality, EvidenceRelation
    >>> import firewall, datetime as dt
    >>> wall = firewall.open("memory://")
    >>> with wall.session(project="p", actor="coder") as s:
    ...     note = s.remember("the build is green")
    >>> item = EvidenceItem(id="evi_x", claim_id=note.claim_id, source="obs_x",
    ...     relation=EvidenceRelation.CONTRADICTS, quality=EvidenceQuality.DIRECT_OBSERVATION,
    ...     independence_group="tool:ci", origin=firewall.Origin.tool("ci"),
    ...     observed_at=note.observed_at)
    >>> out = detect_on_evidence(wall.store, note, item, dt.datetime.now(dt.UTC))
    >>> out.promoted, out.belief.truth_status.value
    (False, 'unverified')
    """
    stored = store.get_evidence(belief.claim_id)
    evidence = EvidenceSet(
        claim_id=belief.claim_id,
        items=[*(i for i in stored.items if i.id != item.id), item],
    )
    found = _Found(store, {})
    current = belief
    promoted = False
    against = independent_contradiction(evidence, belief)
    if against:
        if belief.truth_status == TruthStatus.SUPPORTED:
            current = found.move(
                belief,
                TruthStatus.CONTRADICTED,
                reason=f"{against} independent observation(s) contradict it ({item.source})",
                related=[item.source],
                now=now,
            )
    elif (
        item.relation == EvidenceRelation.SUPPORTS
        and belief.truth_status == TruthStatus.UNVERIFIED
        and belief.security_status == SecurityStatus.CLEAN
    ):
        try:
            current, revisions = apply_moves(
                belief,
                [
                    Move(Axis.TRUTH, TruthStatus.SUPPORTED),
                    Move(Axis.RETRIEVAL, RetrievalStatus.NORMAL),
                ],
                authority=Authority.POLICY,
                reason=f"corroborated by independent {item.quality.value} ({item.source})",
                now=now,
                related_ids=[item.source],
                evidence=evidence,
                required=required,
            )
        except ParallaxError:
            pass  # not enough independent corroboration yet: the evidence is still recorded
        else:
            promoted = True
            found.beliefs[belief.id] = current
            found.revisions.extend(revisions)
    if promoted:
        _redetect(store, found, current, now)
        current = found.beliefs.get(belief.id, current)
    records = found.records(evidence=[item])
    return EvidenceOutcome(records, [c.id for c in found.contradictions], current, promoted)


def _redetect(store: Store, found: _Found, belief: Belief, now: datetime) -> None:
    """Contradiction detection for a belief that just became supported."""
    on_record = {
        i for c in store.contradictions_for([belief.id]) for i in c.belief_ids if i != belief.id
    }
    for group in _groups(store, belief):
        rivals = [b for b in group if b.id != belief.id]
        fresh = [b for b in rivals if b.id not in on_record]
        if fresh:
            found.record(
                [belief, *fresh],
                reason=f"{belief.subject}/{belief.predicate} conflict on corroboration",
                now=now,
            )
        # Rivals already on record (recorded while this belief was unverified) are weighed
        # again now that it is supported: two standing supported members demote both.
        known = [b for b in rivals if b.id in on_record]
        members = [found.beliefs.get(b.id, b) for b in [belief, *known]]
        for member in to_demote(members):
            if member.truth_status == TruthStatus.SUPPORTED:
                found.move(
                    member,
                    TruthStatus.CONTRADICTED,
                    reason="conflicts with a supported belief on record",
                    related=[b.id for b in members if b.id != member.id],
                    now=now,
                )


__all__ = [
    "ACTIVE_TRUTH",
    "WITHDRAWN",
    "EvidenceOutcome",
    "cited_flags",
    "conflicting",
    "contradiction_record",
    "detect",
    "detect_on_evidence",
    "flag_decisions",
    "independent_contradiction",
    "stands",
    "to_demote",
    "transition_flags",
]
