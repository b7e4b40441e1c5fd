"""Evidence that contradicts counts against (issue 8, item 5), through
:func:`firewall.gate.contradictions.detect_on_evidence`, the function ``Session.corroborate`` calls.

The direct tests build the evidence item the way ``corroborate`` does and commit the outcome the
way its contract says (the item plus ``outcome.records`` in one event), on a real store. The last
test drives the same attack end to end through ``Session.corroborate``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.gate.adoption import independence_group, quality_for
from gnomon.firewall.gate.contradictions import EvidenceOutcome, detect_on_evidence
from gnomon.firewall.host.session import Session
from gnomon.firewall.log.events import Records
from gnomon.firewall.model.chain import Belief, EvidenceItem
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.states import Authority, Axis, EvidenceRelation, TruthStatus
from tests.attested import attested, observe_as

SUBJECT = {"subject": "gecko-service", "predicate": "primary_region"}


@pytest.fixture
def wall() -> Iterator[firewall.Firewall]:
    with firewall.open("memory://") as opened:
        yield opened


def evidence_from(
    wall: firewall.Firewall,
    s: Session,
    belief: Belief,
    origin: Origin,
    relation: EvidenceRelation,
    content: str = "checked",
) -> EvidenceItem:
    """An observation through ``origin`` and the evidence item ``corroborate`` makes of it."""
    obs = observe_as(wall, s, origin, tool=f"tool_{len(origin.origin_ids)}", content=content)
    o = obs.observation
    return EvidenceItem(
        id=new_id("evi"),
        claim_id=belief.claim_id,
        source=o.id,
        relation=relation,
        quality=quality_for(o.origin),
        independence_group=independence_group(o.origin),
        origin=o.origin,
        observed_at=o.captured_at,
    )


def weigh(
    wall: firewall.Firewall, s: Session, belief: Belief, item: EvidenceItem
) -> EvidenceOutcome:
    """Call the function and commit its outcome as its contract says."""
    out = detect_on_evidence(wall.store, wall.require_belief(belief.id), item, wall.clock())
    wall.commit(
        wall.draft(
            "evidence.added",
            actor=s.actor,
            now=wall.clock(),
            session_id=s.id,
            project=s.project,
            data={"belief_id": belief.id, "promoted": out.promoted},
            records=Records(**out.records),
        )
    )
    return out


def planted_claim(s: Session) -> Belief:
    (note,) = s.observe(
        tool="read_file",
        content="The gecko service runs in us-east-1.",
        origin=Origin.external("file:NOTES.md"),
        **SUBJECT,
    ).content
    return note


def test_independent_contradicting_evidence_blocks_promotion(wall: firewall.Firewall) -> None:
    with wall.session(project="p", actor="coder") as s:
        note = planted_claim(s)
        against = evidence_from(
            wall, s, note, Origin.tool("cloud_api"), EvidenceRelation.CONTRADICTS
        )
        first = weigh(wall, s, note, against)
        assert (first.promoted, first.belief.truth_status) == (False, TruthStatus.UNVERIFIED)
        # the attacker finds one independent supporting witness: it is not enough
        support = evidence_from(wall, s, note, Origin.tool("ci"), EvidenceRelation.SUPPORTS)
        out = weigh(wall, s, note, support)
    assert out.promoted is False
    assert wall.require_belief(note.id).truth_status == TruthStatus.UNVERIFIED
    assert len(wall.store.get_evidence(note.claim_id).items) == 3  # adoption + both items


def test_supporting_evidence_alone_still_promotes(wall: firewall.Firewall) -> None:
    # control for the test above: the same witness, without the contradiction, promotes
    with wall.session(project="p", actor="coder") as s:
        note = planted_claim(s)
        support = evidence_from(wall, s, note, Origin.tool("ci"), EvidenceRelation.SUPPORTS)
        out = weigh(wall, s, note, support)
    assert out.promoted and wall.require_belief(note.id).truth_status == TruthStatus.SUPPORTED


def test_a_supported_fact_facing_independent_contradiction_is_demoted_by_policy(
    wall: firewall.Firewall,
) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        (fact,) = observe_as(
            wall, s, Origin.tool("inventory"), tool="inventory", content="gecko: eu-west-1"
        ).content
        decision = s.decide("deploy gecko to eu-west-1", [fact.id])
        against = evidence_from(
            wall, s, fact, Origin.tool("cloud_api"), EvidenceRelation.CONTRADICTS
        )
        out = weigh(wall, s, fact, against)
    assert out.belief.truth_status == TruthStatus.CONTRADICTED
    assert wall.require_belief(fact.id).truth_status == TruthStatus.CONTRADICTED
    (rev,) = [r for r in wall.store.revisions_for(fact.id) if r.axis == Axis.TRUTH]
    assert rev.authority == Authority.POLICY and rev.related_ids == [against.source]
    flagged = wall.store.get_decision(decision.id)
    assert flagged is not None and f"dependency {fact.id} contradicted" in flagged.flags


@pytest.mark.parametrize(
    "witness",
    [
        Origin.external("web:evil"),  # a planted page saying "that is false"
        Origin.join(Origin.tool("ci"), Origin.external("web:evil")),  # a tool echoing it
        Origin.user("alice"),  # the fact's own origin, a second time
    ],
    ids=["planted", "echoed", "same-origin"],
)
def test_contradicting_evidence_that_would_not_corroborate_counts_for_nothing(
    wall: firewall.Firewall, witness: Origin
) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        (fact,) = observe_as(
            wall, s, Origin.user("alice"), tool="chat", content="gecko runs in eu-west-1"
        ).content
        against = evidence_from(wall, s, fact, witness, EvidenceRelation.CONTRADICTS)
        out = weigh(wall, s, fact, against)
    assert out.records["revisions"] == ()
    assert wall.require_belief(fact.id).truth_status == TruthStatus.SUPPORTED


def test_promotion_re_runs_contradiction_detection(wall: firewall.Firewall) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        (fact,) = observe_as(
            wall, s, Origin.user("alice"), tool="chat", content="Gecko runs in eu-west-1.",
            **SUBJECT,
        ).content  # fmt: skip
        decision = s.decide("deploy gecko to eu-west-1", [fact.id])
        note = planted_claim(s)  # recorded against the fact, demotes nothing: unverified
        assert wall.require_belief(fact.id).truth_status == TruthStatus.SUPPORTED
        support = evidence_from(wall, s, note, Origin.tool("ci"), EvidenceRelation.SUPPORTS)
        out = weigh(wall, s, note, support)
    # the note is now supported and meets a supported fact: both are contradicted
    assert out.promoted
    assert out.belief.truth_status == TruthStatus.CONTRADICTED
    assert wall.require_belief(fact.id).truth_status == TruthStatus.CONTRADICTED
    flagged = wall.store.get_decision(decision.id)
    assert flagged is not None and f"dependency {fact.id} contradicted" in flagged.flags


def test_corroborated_claim_cannot_stand_beside_a_conflicting_fact(
    wall: firewall.Firewall,
) -> None:
    # The attack end to end: a planted note on the fact's subject gets one independent witness;
    # after corroboration the recall must not accept two conflicting "facts".
    with wall.session(project="p", actor="coder", user="alice") as s:
        (fact,) = observe_as(
            wall, s, Origin.user("alice"), tool="chat", content="Gecko runs in eu-west-1.",
            **SUBJECT,
        ).content  # fmt: skip
        note = planted_claim(s)
        ci = observe_as(wall, s, Origin.tool("ci"), tool="ci", content="checked")
        s.corroborate(note.id, ci, via=attested(wall, Origin.tool("ci")))  # the host's link
        result = s.recall("gecko")
    assert not {fact.id, note.id} <= set(result.accepted_ids)
    assert wall.require_belief(fact.id).truth_status == TruthStatus.CONTRADICTED
