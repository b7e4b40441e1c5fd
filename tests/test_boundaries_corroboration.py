"""Corroboration boundaries (issue 28): what may count as an independent witness.

The attacker wants an untrusted belief promoted to ``supported`` on policy authority without a
grant. It plants evidence that is strong on paper: a synthetic probe record (the firewall's own
canary, never a witness) from an otherwise independent, trusted origin, or an independent
trusted observation that CONTRADICTS the claim. Neither may count; the honest witness, the same
item as a tool result that supports the claim, counts once (the other side of the boundary).
Each attack's FLIP removes the one clause of :meth:`EvidenceSet.independent_corroboration`
(by rebinding the enum the clause reads), and the planted item then promotes the belief.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from gnomon.firewall import Authority, Origin
from gnomon.firewall.gate.adoption import Context, adopt
from gnomon.firewall.gate.gate import check_parallax
from gnomon.firewall.model import chain
from gnomon.firewall.model.chain import Belief, EvidenceItem, EvidenceSet
from gnomon.firewall.model.errors import ParallaxError
from gnomon.firewall.model.states import (
    ClaimKind,
    EvidenceQuality,
    EvidenceRelation,
    ExtractionMethod,
)

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _belief() -> Belief:
    made = adopt(
        Context(project="corroboration", actor="coder", user="alice", session_id=None),
        kind=ClaimKind.CONTENT,
        statement="the deploy key may be shared",
        origin=Origin.external("file:notes.md"),
        quality=EvidenceQuality.EXTERNAL_DOCUMENT,
        extraction=ExtractionMethod.TOOL,
        source="test",
        now=NOW,
    )
    return made.belief


def _evidence(belief: Belief, quality: EvidenceQuality, relation: EvidenceRelation) -> EvidenceSet:
    witness = Origin.tool("ci")
    return EvidenceSet(
        claim_id=belief.claim_id,
        items=[
            EvidenceItem(
                id="evi_1",
                claim_id=belief.claim_id,
                source="obs_1",
                relation=relation,
                quality=quality,
                independence_group="|".join(sorted(witness.origin_ids)),
                origin=witness,
                observed_at=NOW,
            )
        ],
    )


def test_an_honest_independent_tool_result_counts_once() -> None:
    """The other side of both boundaries: the same witness, supporting, as a tool result."""
    belief = _belief()
    evidence = _evidence(belief, EvidenceQuality.TOOL_RESULT, EvidenceRelation.SUPPORTS)
    assert evidence.independent_corroboration(belief.origin) == 1
    check_parallax(belief, evidence, Authority.POLICY)  # promotes: no error


def test_a_synthetic_probe_record_is_not_a_witness() -> None:
    belief = _belief()
    evidence = _evidence(belief, EvidenceQuality.SYNTHETIC_PROBE, EvidenceRelation.SUPPORTS)
    assert evidence.independent_corroboration(belief.origin) == 0
    with pytest.raises(ParallaxError, match="0 independent corroboration"):
        check_parallax(belief, evidence, Authority.POLICY)


def test_flip_without_the_probe_clause_a_synthetic_record_promotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    belief = _belief()
    evidence = _evidence(belief, EvidenceQuality.SYNTHETIC_PROBE, EvidenceRelation.SUPPORTS)
    monkeypatch.setattr(chain, "EvidenceQuality", SimpleNamespace(SYNTHETIC_PROBE=object()))
    assert evidence.independent_corroboration(belief.origin) == 1
    check_parallax(belief, evidence, Authority.POLICY)  # the attack succeeds


def test_contradicting_evidence_is_not_support() -> None:
    belief = _belief()
    evidence = _evidence(belief, EvidenceQuality.TOOL_RESULT, EvidenceRelation.CONTRADICTS)
    assert evidence.independent_corroboration(belief.origin) == 0
    with pytest.raises(ParallaxError, match="0 independent corroboration"):
        check_parallax(belief, evidence, Authority.POLICY)


def test_flip_without_the_relation_clause_contradiction_promotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    belief = _belief()
    evidence = _evidence(belief, EvidenceQuality.TOOL_RESULT, EvidenceRelation.CONTRADICTS)
    monkeypatch.setattr(
        chain, "EvidenceRelation", SimpleNamespace(SUPPORTS=EvidenceRelation.CONTRADICTS)
    )
    assert evidence.independent_corroboration(belief.origin) == 1
    check_parallax(belief, evidence, Authority.POLICY)  # the attack succeeds
