"""A tool's contract says how sensitive its data is, and its recorded output takes that level
(issue 21, item 6).

The attack: the operator's contract marks ``vault_read`` secret. The agent reads the vault
through the guarded tool (the output is recorded by the host, from the tool itself), then, in a
later session, recalls it under the ``default`` policy (ceiling ``internal``): had the output
been recorded as ``internal`` (as before), the recall would hand it on; it must be withheld
for its sensitivity, and named nowhere in the rendered context.

Flip run by hand: recording the guarded tool's output without the contract's level (the
``sensitivity=`` of ``GuardedTool._record``) makes this test fail.
"""

from __future__ import annotations

from gnomon import firewall
from gnomon.firewall.host.guard import guard
from gnomon.firewall.host.mcp_config import AnyArgs
from gnomon.firewall.kernel import ActionKernel, load_action_policy
from gnomon.firewall.kernel.contracts import (
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Reversibility,
    ToolRegistry,
)
from gnomon.firewall.model.states import Sensitivity
from gnomon.probes._kernel import host

TOKEN = "vault root token s.Q7xvT2mK9"


def test_attack_a_secret_tools_output_is_recorded_secret() -> None:
    wall = firewall.open("memory://")
    vault = ActionContract(
        tool="vault_read",
        category=Category.READ,
        required_level=Level.L0,
        blast_radius=BlastRadius.PROJECT,
        reversibility=Reversibility.REVERSIBLE,
        data_sensitivity=Sensitivity.SECRET,
        inputs=AnyArgs,
    )
    with host(wall) as h, wall.session(project="shop", actor="coder", user="alice") as s:
        kernel = ActionKernel(
            wall,
            load_action_policy(h.folder / "actions.yaml", keys=[h.operator.public_key]),
            operator_keys=[h.operator.public_key],
            approver_keys=[h.approver.public_key],
            registry=ToolRegistry([vault]),
            executors={"vault_read": lambda _args: TOKEN},
        )
        (tool,) = guard(wall, kernel, s, ["vault_read"])
        reply = tool({})
        assert not reply.is_error and TOKEN in reply.text
        assert s.sensitivity == Sensitivity.SECRET
    with wall.session(project="shop", actor="coder", user="alice") as later:
        recalled = later.recall("vault root token")
    ids = {r.belief_id: r.codes for r in recalled.rejected}
    assert ids and all("sensitivity" in codes for codes in ids.values()), ids
    assert TOKEN not in recalled.render()
    assert later.sensitivity == Sensitivity.PUBLIC
