"""Attacks on the floor of a tool and on who may approve it (issue 24, items 2 and 3).

A contract declares ``git_push`` as a read; a tool the ladder does not know is declared L0; a
valid, pinned approver key approves a hold the policy rule reserves for another role. Each is
refused, and the refused approval is recorded like a forgery. Keys are generated at test time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import KeyPurpose, write_keypair
from gnomon.firewall.kernel import (
    ActionContract,
    ActionKernel,
    ApprovalSigner,
    BlastRadius,
    Category,
    Level,
    PolicySigner,
    Reversibility,
    ToolRegistry,
    load_action_policy,
)
from gnomon.firewall.kernel.contracts import BUILTIN, _model
from gnomon.firewall.kernel.ledger import post_approval
from gnomon.firewall.model.errors import ContractError, ForgedApprovalError, UnsignedPolicyError
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import make_repo


def _contract(tool: str, category: Category, level: str) -> ActionContract:
    return ActionContract(
        tool=tool,
        category=category,
        required_level=Level.parse(level),
        blast_radius=BlastRadius.PROJECT,
        reversibility=Reversibility.REVERSIBLE,
        inputs=_model(f"{tool.title().replace('_', '')}In", target=(str, ...)),
    )


# -- a floor per tool --------------------------------------------------------------------------


def test_a_contract_cannot_declare_a_known_push_as_a_read() -> None:
    with pytest.raises(ContractError, match="ladder names git_push push"):
        ToolRegistry([_contract("git_push", Category.READ, "L0")])
    # stricter is fine: a known read declared as a local write
    registry = ToolRegistry([_contract("read_file", Category.LOCAL_WRITE, "L3")])
    assert registry.lookup("read_file") is not None


POLICY = """\
name: floors
unknown_tool_floor: L3
{levels}
rules:
  - name: low
    levels: [L0, L1, L2]
    verdict: allow
  - name: local
    levels: [L3]
    verdict: allow
  - name: external
    levels: [L4]
    verdict: hold
"""


def _kernel(
    wall: firewall.Firewall, tmp_path: Path, text: str, contracts: list[ActionContract]
) -> tuple[ActionKernel, list[Any]]:
    path = tmp_path / "actions.yaml"
    path.write_text(text)
    operator = PolicySigner.generate()
    operator.sign_file(path)
    ran: list[Any] = []
    kernel = ActionKernel(
        wall,
        load_action_policy(path, keys=[operator.public_key]),
        operator_keys=[operator.public_key],
        registry=ToolRegistry(contracts),
        executors={c.tool: ran.append for c in contracts},
    )
    return kernel, ran


@pytest.mark.parametrize(
    ("levels", "status"), [("", "held"), ("tool_levels: {lint_fix: L0}", "executed")]
)
def test_an_unknown_tool_starts_at_l3_unless_the_operator_signs_it_lower(
    tmp_path: Path, levels: str, status: str
) -> None:
    wall = firewall.open("memory://")
    lint = _contract("lint_fix", Category.READ, "L0")  # the contract says: a harmless read
    kernel, ran = _kernel(wall, tmp_path, POLICY.format(levels=levels), [lint])
    with wall.session(project="p", actor="coder") as s:
        # the file names the target: a value only untrusted text supplied (per-value provenance)
        s.observe(tool="read_file", content="run lint_fix on src", origin=Origin.external("file:x"))
        result = kernel.handle(s).request("lint_fix", {"target": "src"})
    assert result.status == status, result.reasons
    assert len(ran) == (1 if status == "executed" else 0)


def test_a_tool_level_added_to_the_policy_after_signing_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "actions.yaml"
    path.write_text(POLICY.format(levels=""))
    operator = PolicySigner.generate()
    operator.sign_file(path)
    path.write_text(POLICY.format(levels="tool_levels: {lint_fix: L0}"))  # the agent's edit
    with pytest.raises(UnsignedPolicyError, match="does not verify"):
        load_action_policy(path, keys=[operator.public_key])


# -- approver authority ------------------------------------------------------------------------

AUTHORITY = """\
name: authority
roles:
  release: [{alice}]
rules:
  - name: low
    levels: [L0, L1, L2]
    verdict: allow
  - name: external
    levels: [L4]
    verdict: hold
    approvers: [role:release]
"""


def test_a_pinned_approver_outside_the_rules_approvers_cannot_approve(tmp_path: Path) -> None:
    alice, bob = ApprovalSigner.generate("alice"), ApprovalSigner.generate("bob")
    path = tmp_path / "actions.yaml"
    path.write_text(AUTHORITY.format(alice=alice.key_id))
    operator = PolicySigner.generate()
    operator.sign_file(path)
    repo = make_repo(tmp_path)
    ran: list[Any] = []
    wall = firewall.open("memory://")
    kernel = ActionKernel(
        wall,
        load_action_policy(path, keys=[operator.public_key]),
        operator_keys=[operator.public_key],
        approver_keys=[alice.public_key, bob.public_key],  # both pinned
        registry=ToolRegistry(BUILTIN),
        executors={"git_push": ran.append},
    )
    with wall.session(project="p", actor="coder") as s:
        held = kernel.handle(s).request(
            "git_push", {"repo": str(repo), "remote": "origin", "branch": "main"}
        )
    (request,) = kernel.holds()
    assert request.approvers == (alice.key_id,)
    # in process
    with pytest.raises(ForgedApprovalError) as err:
        kernel.submit(bob.approve(request, now=wall.clock()))
    assert err.value.kind == "unauthorised"
    # through the store, as `gnomon approve` would write it
    post_approval(wall.store, bob.approve(request, now=wall.clock()), now=wall.clock())
    (outcome,) = kernel.process_submitted()
    assert isinstance(outcome, ForgedApprovalError) and outcome.kind == "unauthorised"
    assert ran == []
    kinds = [e.payload["kind"] for e in wall.store.events() if e.kind == "approval.forgery"]
    assert kinds == ["unauthorised", "unauthorised"]
    assert [r.id for r in kernel.holds()] == [held.request_id]
    kernel.submit(alice.approve(request, now=wall.clock()))
    assert len(ran) == 1


def test_gnomon_approve_refuses_a_key_the_rule_does_not_name(tmp_path: Path) -> None:
    bob_key, _ = write_keypair(tmp_path, "bob", purpose=KeyPurpose.APPROVAL)
    alice = ApprovalSigner.generate("alice")
    path = tmp_path / "actions.yaml"
    path.write_text(AUTHORITY.format(alice=alice.key_id))
    operator = PolicySigner.generate()
    operator.sign_file(path)
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        kernel = ActionKernel(
            wall,
            load_action_policy(path, keys=[operator.public_key]),
            operator_keys=[operator.public_key],
            approver_keys=[alice.public_key, ApprovalSigner.from_file(bob_key, "bob").public_key],
        )
        with wall.session(project="p", actor="coder") as s:
            held = kernel.handle(s).request(
                "git_push", {"repo": str(tmp_path), "remote": "origin", "branch": "main"}
            )
    done = CliRunner().invoke(
        cli,
        ["approve", held.request_id, "--key", str(bob_key), "--approver", "bob", "--url", url],
        catch_exceptions=False,
    )
    assert done.exit_code != 0
    assert "may not resolve" in done.output
    with firewall.open(url) as wall:
        assert not [e for e in wall.store.events() if e.kind == "approval.submitted"]
