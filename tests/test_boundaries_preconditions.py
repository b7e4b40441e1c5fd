"""Re-checks at execution: what a hold captured is read again before the action runs.

The attacker has an approved hold and changes the world between the hold and the run: the
operator's action policy is rotated (issue 28: "a policy rotated between hold and approval not
noticed"), or a belief the action cited is deleted. :func:`revalidate` must report each; the
FLIP is the unchanged world, where it reports nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gnomon import firewall
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.kernel import ActionContract, BlastRadius, Category, Level, Reversibility
from gnomon.firewall.kernel.contracts import _model
from gnomon.firewall.kernel.preconditions import (
    BELIEF_CLEAN,
    POLICY_UNCHANGED,
    Snapshot,
    capture,
    revalidate,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CONTRACT = ActionContract(
    tool="custom_tool",
    category=Category.READ,
    required_level=Level.L0,
    blast_radius=BlastRadius.SELF,
    reversibility=Reversibility.REVERSIBLE,
    inputs=_model("Nothing"),
)


def test_a_policy_rotated_since_the_hold_is_noticed() -> None:
    wall = firewall.open("memory://")
    snapshots = capture(CONTRACT, {}, [], "a" * 64)
    policy = ContextPolicy.preset("default")
    same = revalidate(
        snapshots, store=wall.store, citation_policy=policy, policy_digest="a" * 64, now=NOW
    )
    assert same == []  # FLIP: the policy of the hold
    rotated = revalidate(
        snapshots, store=wall.store, citation_policy=policy, policy_digest="b" * 64, now=NOW
    )
    assert rotated == [f"{POLICY_UNCHANGED}: the action policy changed since the proposal"]


def test_a_cited_belief_deleted_since_the_hold_is_noticed_and_unknown_kinds_fail_closed() -> None:
    wall = firewall.open("memory://")
    policy = ContextPolicy.preset("default")
    gone = [Snapshot(kind=BELIEF_CLEAN, target="bel_missing", value="accepted")]
    problems = revalidate(gone, store=wall.store, citation_policy=policy, policy_digest="", now=NOW)
    assert problems == [f"{BELIEF_CLEAN}: belief bel_missing is gone"]
    odd = [Snapshot.model_construct(kind="made_up", target="x", value="y")]
    problems = revalidate(odd, store=wall.store, citation_policy=policy, policy_digest="", now=NOW)
    assert problems and "fail closed" in problems[0]
