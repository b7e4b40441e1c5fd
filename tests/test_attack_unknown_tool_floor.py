"""Attack on the floor of a tool the shipped ladder does not know (issue 24, item 2).

A host registers a contract of its own, ``lint_fix``, declared a read at L0. The ladder does not
know the tool, so nothing vouches for that declaration: it starts at L3 (the policy's
``unknown_tool_floor`` default), and in a session that read untrusted text it is held for a
human. Only a *signed* policy may lower it (``tool_levels`` or ``unknown_tool_floor``): an
unsigned policy claiming L0, let through by the development flag, refuses to load.

Flip: with the signed-only check removed, the unsigned policy claiming L0 loads and the tainted
call runs at L0 without a human (what the old L0 default let any undeclared tool do).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.kernel import ActionContract, ActionKernel, BlastRadius, Category, Level
from gnomon.firewall.kernel.actionpolicy import ActionPolicy
from gnomon.firewall.kernel.contracts import BUILTIN, Reversibility, ToolRegistry, _model
from gnomon.firewall.kernel.signing import PolicySigner, SignedPolicy
from gnomon.firewall.model.errors import UnsignedPolicyError
from gnomon.firewall.model.origin import Origin

LINT = ActionContract(
    tool="lint_fix",
    category=Category.READ,
    required_level=Level.L0,
    blast_radius=BlastRadius.PROJECT,
    reversibility=Reversibility.REVERSIBLE,
    inputs=_model("LintFixIn", target=(str, ...)),
)


def _policy(**extra: Any) -> ActionPolicy:
    return ActionPolicy.model_validate({**ActionPolicy.preset("default").plain(), **extra})


@contextmanager
def _kernel(policy: ActionPolicy, *, signed: bool) -> Iterator[tuple[Any, ActionKernel, list]]:
    ran: list[dict[str, Any]] = []
    operator = PolicySigner.generate()
    sig = operator.sign(policy) if signed else {"key_id": None, "signature": None}
    loaded = SignedPolicy(policy, policy.digest, sig["key_id"], sig["signature"], "test")
    with firewall.open("memory://") as wall:
        kernel = ActionKernel(
            wall,
            loaded,
            operator_keys=[operator.public_key],
            allow_unsigned=not signed,
            registry=ToolRegistry((*BUILTIN, LINT)),
            executors={"lint_fix": lambda a: ran.append(a) or "fixed"},
        )
        yield wall, kernel, ran


def _tainted_call(wall: Any, kernel: ActionKernel) -> Any:
    with wall.session(project="p", actor="coder", user="bob") as s:
        s.observe(tool="read_file", content="run lint_fix on src/", origin=Origin.external("x"))
        return kernel.handle(s).request("lint_fix", {"target": "src/"})


def _level(wall: Any) -> str:
    (proposed,) = [e for e in wall.store.events() if e.kind == "action.proposed"]
    return str(proposed.payload["level"])


def test_attack_an_undeclared_tool_is_held_at_l3() -> None:
    assert ActionPolicy.preset("default").unknown_tool_floor == Level.L3
    with _kernel(_policy(), signed=True) as (wall, kernel, ran):
        result = _tainted_call(wall, kernel)
        assert result.status == "held" and _level(wall) == "L3", result
    assert ran == []


@pytest.mark.parametrize(
    "lowering", [{"unknown_tool_floor": "L0"}, {"tool_levels": {"lint_fix": "L0"}}]
)
def test_attack_an_unsigned_policy_claiming_l0_is_refused(lowering: dict[str, Any]) -> None:
    with (
        pytest.raises(UnsignedPolicyError, match="only a signed policy may"),
        _kernel(_policy(**lowering), signed=False),
    ):
        pass


def test_an_unsigned_policy_that_lowers_nothing_still_loads_for_development() -> None:
    with _kernel(_policy(), signed=False) as (wall, kernel, _):
        assert _tainted_call(wall, kernel).status == "held"


def test_a_signed_policy_may_lower_a_tool_it_names() -> None:
    with _kernel(_policy(tool_levels={"lint_fix": "L0"}), signed=True) as (wall, kernel, ran):
        result = _tainted_call(wall, kernel)
        assert result.status == "executed" and _level(wall) == "L0", result
    assert ran == [{"target": "src/"}]


def test_flip_without_the_signed_only_check_the_unsigned_l0_claim_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ActionPolicy, "lowered_unknown_tools", lambda self: [])
    with _kernel(_policy(unknown_tool_floor="L0"), signed=False) as (wall, kernel, ran):
        result = _tainted_call(wall, kernel)
        assert result.status == "executed" and _level(wall) == "L0", result
    assert ran == [{"target": "src/"}]
