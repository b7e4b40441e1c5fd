"""Every field of a signed grant or approval is covered by its signature: an agent that gets hold
of a signed record and edits any one field (here the ones that widen it most) holds a forgery."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall, policies
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import (
    GrantAuthority,
    GrantSigner,
    GrantVerifier,
    KeyPurpose,
    write_keypair,
)
from gnomon.firewall.kernel.signing import PolicySigner
from gnomon.firewall.model.errors import ForgedApprovalError, ForgedGrantError, KeyFileError
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


def test_attack_an_approvers_key_cannot_sign_the_action_policy(tmp_path: Path) -> None:
    """Whoever holds only an approval key (the person who approves holds) must not be able to
    rewrite the rules that decide what is held: a policy signed with that key is refused before
    any signature is written, by the library and by `gnomon policy sign`."""
    approver, _ = write_keypair(tmp_path / "keys", "approver", purpose=KeyPurpose.APPROVAL)
    policy = tmp_path / "actions.yaml"
    policy.write_bytes((Path(policies.__file__).parent / "actions" / "default.yaml").read_bytes())
    with pytest.raises(KeyFileError, match="is a approval key, not a policy key"):
        PolicySigner.from_file(approver)
    result = CliRunner().invoke(cli, ["policy", "sign", str(policy), "--key", str(approver)])
    assert result.exit_code != 0 and "not a policy key" in result.output, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "actions.yaml.sig").exists()
    operator, _ = write_keypair(tmp_path / "keys", "operator", purpose=KeyPurpose.POLICY)
    assert PolicySigner.from_file(operator).sign_file(policy).exists()  # the control
