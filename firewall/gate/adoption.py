"""Building claim → evidence → belief triples for new memories, with the gate deciding states.

This is the single place where a new belief gets its initial truth and retrieval status
(:func:`firewall.gate.gate.adoption_for`); observe, remember and import all come through it, so no
path can adopt a belief in a state the gate would not give it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from gnomon.firewall.gate.gate import adoption_for
from gnomon.firewall.model.chain import Belief, Claim, EvidenceItem
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Integrity, Origin, OriginClass
from gnomon.firewall.model.states import (
    ClaimKind,
    EvidenceQuality,
    EvidenceRelation,
    ExtractionMethod,
    Scope,
    SecurityStatus,
    Sensitivity,
)


@dataclass(frozen=True, slots=True)
class Context:
    """Who is writing: copied onto every record so that scoping never depends on joins."""

    project: str
    actor: str
    user: str | None
    session_id: str | None


@dataclass(frozen=True, slots=True)
class NewBelief:
    claim: Claim
    evidence: EvidenceItem
    belief: Belief


def user_statement(belief: Belief) -> bool:
    """A clean memory a user stated, attested by the host (its label names users only): an
    input an extracted fact may rest on and keep a clean lineage."""
    return (
        belief.origin.classes == {OriginClass.USER}
        and belief.origin.integrity == Integrity.ATTESTED
        and belief.security_status == SecurityStatus.CLEAN
    )


def clean_extracted(belief: Belief) -> bool:
    """A clean fact extracted earlier with a clean lineage (kind ``extracted``, a user
    lineage): a store memory a later extraction may read and keep a clean lineage."""
    return (
        belief.kind == ClaimKind.EXTRACTED
        and belief.origin.user_lineage
        and belief.security_status == SecurityStatus.CLEAN
    )


def independence_group(origin: Origin) -> str:
    """Evidence from the same set of origins is one witness, however many copies it sends."""
    return "|".join(sorted(origin.origin_ids))


def adopt(
    ctx: Context,
    *,
    kind: ClaimKind,
    statement: str,
    origin: Origin,
    quality: EvidenceQuality,
    extraction: ExtractionMethod,
    source: str,
    now: datetime,
    observation_ids: list[str] | None = None,
    subject: str | None = None,
    predicate: str | None = None,
    sensitivity: Sensitivity = Sensitivity.INTERNAL,
    scope: Scope = Scope.PROJECT,
    confidence: float | None = None,
    expires_at: datetime | None = None,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    contradicts: list[str] | None = None,
    observed_at: datetime | None = None,
) -> NewBelief:
    claim_id = new_id("clm")
    decided = adoption_for(origin, quality)
    claim = Claim(
        id=claim_id,
        kind=kind,
        statement=statement,
        subject=subject,
        predicate=predicate,
        observation_ids=observation_ids or [],
        extraction=extraction,
        scope=scope,
        project=ctx.project,
        user=ctx.user,
        session_id=ctx.session_id,
        sensitivity=sensitivity,
        origin=origin,
        created_at=now,
        valid_from=valid_from,
        valid_to=valid_to,
    )
    evidence = EvidenceItem(
        id=new_id("evi"),
        claim_id=claim_id,
        source=source,
        relation=EvidenceRelation.SUPPORTS,
        quality=quality,
        independence_group=independence_group(origin),
        origin=origin,
        observed_at=observed_at or now,
    )
    belief = Belief(
        id=new_id("bel"),
        claim_id=claim_id,
        kind=kind,
        statement=statement,
        subject=subject,
        predicate=predicate,
        confidence=confidence if confidence is not None else _confidence(decided.truth.value),
        scope=scope,
        project=ctx.project,
        user=ctx.user,
        session_id=ctx.session_id,
        authority=decided.authority,
        sensitivity=sensitivity,
        origin=origin,
        truth_status=decided.truth,
        retrieval_status=decided.retrieval,
        observed_at=observed_at or now,
        last_verified_at=now if decided.truth.value == "supported" else None,
        expires_at=expires_at,
        valid_from=valid_from,
        valid_to=valid_to,
        contradicts=contradicts or [],
        created_at=now,
        updated_at=now,
    )
    return NewBelief(claim, evidence, belief)


class Adopter:
    """:func:`adopt` for a run of records that differ only in statement, source and times.

    An import adopts thousands of records with one context, one origin and one evidence class,
    so the gate's decision and every shared field are the same for all of them. The first
    record goes through :func:`adopt` in full (strict validation, :func:`adoption_for`); each
    later one is a copy of that validated template with its own ids, statement, source,
    sensitivity and times. Those values are checked here with the same rules the models
    enforce, and anything unusual (a naive or non-``datetime`` time, a sensitivity that is not a
    :class:`Sensitivity`) goes through :func:`adopt`, so it fails exactly as it would there.
    The statement must already have passed :func:`firewall.model.content.statement_text`.
    """

    def __init__(
        self,
        ctx: Context,
        *,
        kind: ClaimKind,
        origin: Origin,
        quality: EvidenceQuality,
        extraction: ExtractionMethod,
    ) -> None:
        # the full path, with everything the run shares already bound
        self._adopt = functools.partial(
            adopt, ctx, kind=kind, origin=origin, quality=quality, extraction=extraction
        )
        self._template: NewBelief | None = None

    def adopt(
        self,
        statement: str,
        *,
        source: str,
        now: datetime,
        sensitivity: Sensitivity = Sensitivity.INTERNAL,
        observed_at: datetime | None = None,
    ) -> NewBelief:
        template = self._template
        if (
            template is None
            or type(statement) is not str
            or not statement
            or type(source) is not str
            or type(sensitivity) is not Sensitivity
            or not _plain_aware(now)
            or (observed_at is not None and not _plain_aware(observed_at))
        ):
            made = self._adopt(
                statement=statement,
                source=source,
                now=now,
                sensitivity=sensitivity,
                observed_at=observed_at,
            )
            if template is None:
                self._template = made
            return made
        observed = observed_at or now
        claim_id = new_id("clm")
        claim = template.claim.model_copy(
            update={
                "id": claim_id,
                "statement": statement,
                "sensitivity": sensitivity,
                "created_at": now,
            }
        )
        evidence = template.evidence.model_copy(
            update={
                "id": new_id("evi"),
                "claim_id": claim_id,
                "source": source,
                "observed_at": observed,
            }
        )
        belief = template.belief.model_copy(
            update={
                "id": new_id("bel"),
                "claim_id": claim_id,
                "statement": statement,
                "sensitivity": sensitivity,
                "observed_at": observed,
                "last_verified_at": None if template.belief.last_verified_at is None else now,
                "created_at": now,
                "updated_at": now,
            }
        )
        return NewBelief(claim, evidence, belief)


def _plain_aware(moment: object) -> bool:
    """What strict ``AwareDatetime`` accepts, narrowed to exact ``datetime`` instances."""
    return type(moment) is datetime and moment.utcoffset() is not None


def _confidence(truth: str) -> float:
    return 0.9 if truth == "supported" else 0.3


def quality_for(origin: Origin, *, envelope: bool = False) -> EvidenceQuality:
    """The evidence class a content origin provides. External and imported text is a document
    the agent read; agent text is inference; a trusted tool's own output is a direct observation.

    The class is capped by the label's integrity, so a label that names a user or tool origin
    but is only untrusted or derived (a join, or a hand-built label) is reading-class evidence,
    never a human assertion or an observation."""
    if envelope:
        return EvidenceQuality.TOOL_RESULT
    classes = {c.value for c in origin.classes}
    if origin.integrity == Integrity.UNTRUSTED or classes & {"external", "imported"}:
        return EvidenceQuality.EXTERNAL_DOCUMENT
    if origin.integrity <= Integrity.DERIVED or "agent" in classes:
        return EvidenceQuality.MODEL_INFERENCE
    if "probe" in classes:
        return EvidenceQuality.SYNTHETIC_PROBE
    if "user" in classes:
        return EvidenceQuality.HUMAN_ASSERTION
    return EvidenceQuality.DIRECT_OBSERVATION


__all__ = [
    "Adopter",
    "Context",
    "NewBelief",
    "adopt",
    "clean_extracted",
    "independence_group",
    "quality_for",
    "user_statement",
]
