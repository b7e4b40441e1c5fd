"""The action side: contracts, a signed policy kernel, approvals bound to inputs, two-phase
execution.

Host side::

    policy = load_action_policy("actions.yaml", keys=[operator_pub])
    kernel = ActionKernel(wall, policy, operator_keys=[operator_pub],
                          approver_keys=[approver_pub], executors={"git_push": push})

Agent side: ``actions = kernel.handle(session)``, then
``actions.request("git_push", {...}, cites=[belief ids])`` returns an :class:`ActionResult`
(``executed``, ``held``, ``denied`` or ``refused``) the agent can re-plan on.
"""

from gnomon.firewall.kernel.actionpolicy import ActionPolicy, Outcome, Rule
from gnomon.firewall.kernel.approvals import (
    Approval,
    ApprovalRequest,
    ApprovalSigner,
    inputs_digest,
)
from gnomon.firewall.kernel.contracts import (
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Precondition,
    PreconditionKind,
    Reversibility,
    ToolRegistry,
)
from gnomon.firewall.kernel.kernel import ActionHandle, ActionKernel, ActionResult
from gnomon.firewall.kernel.signing import PolicySigner, SignedPolicy, load_action_policy

__all__ = [
    "ActionContract",
    "ActionHandle",
    "ActionKernel",
    "ActionPolicy",
    "ActionResult",
    "Approval",
    "ApprovalRequest",
    "ApprovalSigner",
    "BlastRadius",
    "Category",
    "Level",
    "Outcome",
    "PolicySigner",
    "Precondition",
    "PreconditionKind",
    "Reversibility",
    "Rule",
    "SignedPolicy",
    "ToolRegistry",
    "inputs_digest",
    "load_action_policy",
]
