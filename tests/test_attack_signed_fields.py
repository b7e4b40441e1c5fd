"""Every field of a signed grant or approval is covered by its signature: an agent that gets hold
of a signed record and edits any one field (here the ones that widen it most) holds a forgery."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gnomon import firewall
from gnomon.firewall.gate.grants import GrantAuthority, GrantSigner, GrantVerifier
from gnomon.firewall.model.errors import ForgedApprovalError, ForgedGrantError
from gnomon.probes._kernel import host

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
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="shop", actor="coder", user="alice") as s:
        push = {"repo": "/nonexistent", "remote": "origin", "branch": "main"}
        held = h.kernel.handle(s).request("git_push", push)
        request = next(r for r in h.kernel.holds() if r.id == held.request_id)
        denial = h.approver.deny(request)
        with pytest.raises(ForgedApprovalError, match="does not verify"):
            h.kernel.submit(denial.model_copy(update={"decision": "approve"}))
        assert h.ran == []
