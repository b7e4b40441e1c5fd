"""Every field of a signed grant or approval is covered by its signature: an agent that gets hold
of a signed record and edits any one field (here the ones that widen it most) holds a forgery."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gnomon.firewall.gate.grants import GrantAuthority, GrantSigner, GrantVerifier
from gnomon.firewall.kernel.approvals import ApprovalRequest, ApprovalSigner, check_approval
from gnomon.firewall.model.errors import ForgedApprovalError, ForgedGrantError

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_attack_a_grant_widened_to_every_project_is_forged() -> None:
    signer = GrantSigner.generate()
    verifier = GrantVerifier.pinning(signer.public_key)
    grant = signer.issue(GrantAuthority.USER, "alice", project="shop", beliefs=["bel_1"], now=NOW)
    assert verifier.verify(grant, {GrantAuthority.USER}, now=NOW, project="shop") == grant
    widened = grant.model_copy(update={"project": None})  # None: every project
    with pytest.raises(ForgedGrantError):
        verifier.verify(widened, {GrantAuthority.USER}, now=NOW, project="warehouse")


def test_attack_a_denial_edited_into_an_approval_is_forged() -> None:
    approver = ApprovalSigner.generate("alice")
    request = ApprovalRequest(
        id="req_1",
        action_id="act_1",
        session_id="ses_1",
        project="shop",
        tool="git_push",
        level="L4",
        inputs_digest="inputs",
        policy_digest="policy",
        reasons=("L4 is always held",),
        created_at=NOW,
        deadline=NOW + timedelta(minutes=15),
    )
    denial = approver.deny(request, now=NOW)
    assert check_approval(denial, request, [approver.public_key], now=NOW).decision == "deny"
    edited = denial.model_copy(update={"decision": "approve"})
    with pytest.raises(ForgedApprovalError, match="does not verify"):
        check_approval(edited, request, [approver.public_key], now=NOW)
