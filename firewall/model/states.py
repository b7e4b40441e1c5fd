"""The closed vocabularies of the epistemic chain.

Every enum is a ``StrEnum`` so that its value is what lands in YAML, JSON, SQL and the event log.
Orderings that the gate or the policy compare on (sensitivity, evidence strength, integrity) are
given explicitly as ranks rather than relying on declaration order.
"""

from __future__ import annotations

from enum import StrEnum


class TruthStatus(StrEnum):
    UNVERIFIED = "unverified"
    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    SUPERSEDED = "superseded"


class RetrievalStatus(StrEnum):
    HIDDEN = "hidden"
    RESTRICTED = "restricted"
    NORMAL = "normal"
    PRIVILEGED_ONLY = "privileged_only"
    BLOCKED = "blocked"


class SecurityStatus(StrEnum):
    CLEAN = "clean"
    SUSPICIOUS = "suspicious"
    QUARANTINED = "quarantined"
    MALICIOUS = "malicious"


class FreshnessStatus(StrEnum):
    FRESH = "fresh"
    STALE = "stale"
    EXPIRED = "expired"


class Sensitivity(StrEnum):
    # least sensitive first: the declared order is the rank (SENSITIVITY_RANK)
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    SECRET = "secret"

    @property
    def rank(self) -> int:
        return SENSITIVITY_RANK[self]


#: Sensitivity levels are declared least sensitive first: a level's rank is its position.
SENSITIVITY_RANK: dict[Sensitivity, int] = {level: rank for rank, level in enumerate(Sensitivity)}


class Axis(StrEnum):
    """The four independent status axes of a belief."""

    TRUTH = "truth"
    RETRIEVAL = "retrieval"
    SECURITY = "security"
    FRESHNESS = "freshness"


AXIS_FIELD: dict[Axis, str] = {
    Axis.TRUTH: "truth_status",
    Axis.RETRIEVAL: "retrieval_status",
    Axis.SECURITY: "security_status",
    Axis.FRESHNESS: "freshness_status",
}

AXIS_ENUM: dict[Axis, type[StrEnum]] = {
    Axis.TRUTH: TruthStatus,
    Axis.RETRIEVAL: RetrievalStatus,
    Axis.SECURITY: SecurityStatus,
    Axis.FRESHNESS: FreshnessStatus,
}


class ObservationTrust(StrEnum):
    RAW = "raw"
    VALIDATED = "validated"
    SYNTHETIC = "synthetic"


class ExtractionMethod(StrEnum):
    TOOL = "tool"
    LLM = "llm"
    HUMAN = "human"
    IMPORT = "import"


class ClaimKind(StrEnum):
    """Whether a claim is about a tool call having happened, or about what its content says."""

    ENVELOPE = "envelope"
    CONTENT = "content"
    STATEMENT = "statement"
    #: A fact a memory store's extractor (mem0 ``infer=True``, Zep's graph, a Letta agent)
    #: rewrote from its inputs; a ContextPolicy may admit it only when its lineage is clean.
    EXTRACTED = "extracted"


class EvidenceRelation(StrEnum):
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    CONTEXTUALIZES = "contextualizes"


class EvidenceQuality(StrEnum):
    DIRECT_OBSERVATION = "direct_observation"
    TOOL_RESULT = "tool_result"
    HUMAN_ASSERTION = "human_assertion"
    MODEL_INFERENCE = "model_inference"
    EXTERNAL_DOCUMENT = "external_document"
    SYNTHETIC_PROBE = "synthetic_probe"


# Reading-class evidence: what the agent read or inferred. It can never promote on its own
# (parallax), and it never corroborates anything (corroboration must be strictly stronger).
READING_CLASS: frozenset[EvidenceQuality] = frozenset(
    {EvidenceQuality.EXTERNAL_DOCUMENT, EvidenceQuality.MODEL_INFERENCE}
)

EVIDENCE_STRENGTH: dict[EvidenceQuality, int] = {
    EvidenceQuality.EXTERNAL_DOCUMENT: 0,
    EvidenceQuality.MODEL_INFERENCE: 0,
    EvidenceQuality.TOOL_RESULT: 1,
    EvidenceQuality.DIRECT_OBSERVATION: 2,
    EvidenceQuality.SYNTHETIC_PROBE: 3,
    EvidenceQuality.HUMAN_ASSERTION: 3,
}


class Authority(StrEnum):
    """Who is making a move. ``user`` and ``probe`` exist only as verified grants."""

    USER = "user"
    PROBE = "probe"
    POLICY = "policy"
    SENTINEL = "sentinel"
    REFLECTION = "reflection"
    AUTO_OBSERVATION = "auto_observation"
    SYSTEM = "system"


GRANTED_AUTHORITIES: frozenset[Authority] = frozenset({Authority.USER, Authority.PROBE})


class Scope(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    USER = "user"
    GLOBAL = "global"


__all__ = [
    "AXIS_ENUM",
    "AXIS_FIELD",
    "EVIDENCE_STRENGTH",
    "GRANTED_AUTHORITIES",
    "READING_CLASS",
    "SENSITIVITY_RANK",
    "Authority",
    "Axis",
    "ClaimKind",
    "EvidenceQuality",
    "EvidenceRelation",
    "ExtractionMethod",
    "FreshnessStatus",
    "ObservationTrust",
    "RetrievalStatus",
    "Scope",
    "SecurityStatus",
    "Sensitivity",
    "TruthStatus",
]
