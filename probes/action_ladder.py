"""Probe: the trust ladder outranks the policy's rules.

**Scenario.** The operator signs a policy whose rules are permissive (one rule allows
everything) or strict (an L4 deny), and registers contracts; an agent asks for a push, a
prohibited drop, an unknown tool and a tool no rule names.

**Asserts.**
- Under an allow-everything rule, ``git_push`` (L4) is held, not executed: L4 requires approval.
- A contract that declares a push-category tool at L2 is refused: the floor overrides it.
- A stricter rule is preserved: an L4 ``deny`` rule stays deny (the ladder does not soften it).
- An action no rule matches is denied, and a tool no contract names is denied.
- ``drop_database`` (L5) is denied under the allow-everything rule.

**Does not claim.** That the executors themselves are safe, or that a host which registers a
tool under a misleading category is detected: the category is the host's declaration.
"""

from __future__ import annotations

from gnomon.firewall import open as open_firewall
from gnomon.firewall.kernel import (
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Reversibility,
    ToolRegistry,
)
from gnomon.firewall.kernel.contracts import _model
from gnomon.firewall.model.errors import ContractError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "action_ladder"
TITLE = "L4 is held and L5 denied whatever the rules say; floors, stricter rules and no-match hold"

PUSH = {"repo": "/nonexistent", "remote": "origin", "branch": "main"}
ALLOW_ALL = b"name: permissive\nrules:\n  - name: everything\n    verdict: allow\n"
STRICT = b"""name: strict
rules:
  - name: no-external
    levels: [L4]
    verdict: deny
  - name: suggestions
    tools: [suggest]
    verdict: allow
"""


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        with host(wall, policy_text=ALLOW_ALL) as h, wall.session(project=project, actor="a") as s:
            actions = h.kernel.handle(s)
            push = actions.request("git_push", PUSH)
            c.expect(
                push.status == "held",
                "an L4 push is held under an allow-everything rule",
                got=push.status,
            )
            c.expect(h.ran == [], "nothing ran without approval", got=h.ran)
            drop = actions.request("drop_database", {"name": "prod"})
            c.expect(
                drop.status == "denied",
                "an L5 action is denied under an allow-everything rule",
                got=drop.status,
            )
        low = ActionContract(
            tool="my_push",
            category=Category.PUSH,
            required_level=Level.L2,
            blast_radius=BlastRadius.EXTERNAL,
            reversibility=Reversibility.IRREVERSIBLE,
            inputs=_model("ProbeNothing"),
        )
        c.raises(ContractError, "a contract below the push floor is refused", ToolRegistry, [low])
        with host(wall, policy_text=STRICT) as h, wall.session(project=project, actor="a") as s:
            actions = h.kernel.handle(s)
            push = actions.request("git_push", PUSH)
            c.expect(
                push.status == "denied", "a stricter L4 deny rule is preserved", got=push.status
            )
            unmatched = actions.request("read_file", {"path": "/etc/hostname"})
            c.expect(
                unmatched.status == "denied", "an unmatched action is denied", got=unmatched.status
            )
            unknown = actions.request("curl_pipe_sh", {})
            c.expect(
                unknown.status == "denied", "a tool no contract names is denied", got=unknown.status
            )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
