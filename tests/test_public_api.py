"""The public surface is deliberate: pinned here so that changes to it are visible in review."""

from __future__ import annotations

from gnomon import firewall

EXPECTED = [
    "Action",
    "AuditEntry",
    "Authority",
    "Belief",
    "Claim",
    "ContextPolicy",
    "Contradiction",
    "Decision",
    "EvidenceItem",
    "EvidenceSet",
    "Firewall",
    "FreshnessStatus",
    "GnomonError",
    "Grant",
    "GrantAuthority",
    "GrantSigner",
    "GrantVerifier",
    "ImportItem",
    "Integrity",
    "Observation",
    "Observed",
    "Origin",
    "OriginClass",
    "Outcome",
    "RecallResult",
    "RetrievalStatus",
    "Revision",
    "SecurityStatus",
    "Sensitivity",
    "Session",
    "ToolCall",
    "TruthStatus",
    "__version__",
    "open",
]


def test_all_is_sorted_and_pinned() -> None:
    assert firewall.__all__ == sorted(firewall.__all__)
    assert firewall.__all__ == EXPECTED
    for name in firewall.__all__:
        assert hasattr(firewall, name), name


def test_error_root() -> None:
    from gnomon.firewall.model import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.GnomonError), name
