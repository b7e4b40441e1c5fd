"""Authority boundaries (issue 28): who may move a belief back up, counted against fixed tables.

The attacker is host automation acting with ``policy`` authority (the lowest authority that may
promote anything). It reaches a belief a sentinel has contradicted or hidden and asks the gate to
move it straight back: contradicted -> supported, hidden -> normal. Only a grant (``user`` or
``probe``) may undo a sentinel's verdict. The expectations are written here, not read from
``TRANSITIONS``, so a table edit that widens the authority fails this file. Each attack has its
FLIP: the same call with the table row widened by one authority, where the attack succeeds.

The same file holds the re-check at execution (issue 28: "a cited belief contradicted since the
hold still runs"): a sentinel contradicts, without deleting, a belief an approved hold cited;
:func:`revalidate` must report it. FLIP: the citation re-check removed, the hold would run.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gnomon import firewall
from gnomon.firewall import Authority, Origin
from gnomon.firewall.gate import gate
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.kernel import ActionContract, BlastRadius, Category, Level, Reversibility
from gnomon.firewall.kernel.contracts import _model
from gnomon.firewall.kernel.preconditions import BELIEF_CLEAN, Snapshot, capture, revalidate
from gnomon.firewall.model.errors import TransitionRefused
from gnomon.firewall.model.states import Axis, RetrievalStatus, TruthStatus
from tests.attested import attested

T, R = TruthStatus, RetrievalStatus
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
CONTRACT = ActionContract(
    tool="custom_tool",
    category=Category.READ,
    required_level=Level.L0,
    blast_radius=BlastRadius.SELF,
    reversibility=Reversibility.REVERSIBLE,
    inputs=_model("Nothing"),
)


def _fact(wall: firewall.Firewall, text: str) -> firewall.Belief:
    with wall.session(project="authority", actor="coder", user="alice") as s:
        belief = s.observe(
            tool="chat", content=text, origin=attested(wall, Origin.user("alice"))
        ).content[0]
    assert isinstance(belief, firewall.Belief)
    return belief


def _contradicted(wall: firewall.Firewall) -> firewall.Belief:
    belief = _fact(wall, "Backups run nightly at two")
    moved = wall.transition(
        belief.id,
        [Move(Axis.TRUTH, T.CONTRADICTED)],
        reason="a sentinel found the opposite",
        authority=Authority.SENTINEL,
    )
    assert moved.truth_status == T.CONTRADICTED
    return moved


def _hidden(wall: firewall.Firewall) -> firewall.Belief:
    belief = _fact(wall, "The staging token rotates weekly")
    moved = wall.transition(
        belief.id,
        [Move(Axis.RETRIEVAL, R.HIDDEN)],
        reason="a sentinel hid it",
        authority=Authority.SENTINEL,
    )
    assert moved.retrieval_status == R.HIDDEN
    return moved


def _widen(monkeypatch: pytest.MonkeyPatch, axis: Axis, move: tuple[str, str]) -> None:
    """The mutant: the table row for ``move`` also admits ``policy`` authority."""
    table = dict(gate.TRANSITIONS[axis])
    table[move] = table[move] | {Authority.POLICY}
    monkeypatch.setitem(gate.TRANSITIONS, axis, table)


def test_policy_authority_cannot_move_a_contradicted_belief_back_to_supported() -> None:
    wall = firewall.open("memory://")
    belief = _contradicted(wall)
    with pytest.raises(TransitionRefused, match="contradicted -> supported"):
        wall.transition(
            belief.id,
            [Move(Axis.TRUTH, T.SUPPORTED)],
            reason="policy says it is fine again",
            authority=Authority.POLICY,
        )
    with pytest.raises(TransitionRefused, match="contradicted -> unverified"):
        wall.transition(
            belief.id,
            [Move(Axis.TRUTH, T.UNVERIFIED)],
            reason="policy launders it through unverified",
            authority=Authority.POLICY,
        )
    assert wall.store.get_beliefs([belief.id])[belief.id].truth_status == T.CONTRADICTED
    # The other side of the boundary: policy may retire the contradicted belief.
    retired = wall.transition(
        belief.id,
        [Move(Axis.TRUTH, T.SUPERSEDED)],
        reason="replaced",
        authority=Authority.POLICY,
    )
    assert retired.truth_status == T.SUPERSEDED


def test_flip_a_table_admitting_policy_lets_the_contradicted_belief_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Widening contradicted -> unverified is the mutant that works alone: contradicted ->
    supported on policy authority is also held by the corroboration check (defence in depth),
    so the table row is the one mechanism that keeps a sentinel's verdict standing."""
    wall = firewall.open("memory://")
    belief = _contradicted(wall)
    _widen(monkeypatch, Axis.TRUTH, (T.CONTRADICTED, T.UNVERIFIED))
    moved = wall.transition(
        belief.id,
        [Move(Axis.TRUTH, T.UNVERIFIED)],
        reason="policy launders it through unverified",
        authority=Authority.POLICY,
    )
    assert moved.truth_status == T.UNVERIFIED  # the attack succeeds without the row's limit


def test_policy_authority_cannot_move_a_hidden_belief_straight_to_normal() -> None:
    wall = firewall.open("memory://")
    belief = _hidden(wall)
    for target in (R.NORMAL, R.RESTRICTED):
        with pytest.raises(TransitionRefused, match=f"hidden -> {target}"):
            wall.transition(
                belief.id,
                [Move(Axis.RETRIEVAL, target)],
                reason="policy unhides it",
                authority=Authority.POLICY,
            )
    assert wall.store.get_beliefs([belief.id])[belief.id].retrieval_status == R.HIDDEN
    # The other side: policy may still tighten a hidden belief to privileged-only.
    tighter = wall.transition(
        belief.id,
        [Move(Axis.RETRIEVAL, R.PRIVILEGED_ONLY)],
        reason="tighten",
        authority=Authority.POLICY,
    )
    assert tighter.retrieval_status == R.PRIVILEGED_ONLY


def test_flip_a_table_admitting_policy_lets_the_hidden_belief_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall = firewall.open("memory://")
    belief = _hidden(wall)
    _widen(monkeypatch, Axis.RETRIEVAL, (R.HIDDEN, R.NORMAL))
    moved = wall.transition(
        belief.id,
        [Move(Axis.RETRIEVAL, R.NORMAL)],
        reason="policy unhides it",
        authority=Authority.POLICY,
    )
    assert moved.retrieval_status == R.NORMAL  # the attack succeeds without the row's limit


@pytest.mark.parametrize(
    ("axis", "move"),
    [
        (Axis.TRUTH, (T.CONTRADICTED, T.SUPPORTED)),
        (Axis.TRUTH, (T.CONTRADICTED, T.UNVERIFIED)),
        (Axis.RETRIEVAL, (R.HIDDEN, R.NORMAL)),
        (Axis.RETRIEVAL, (R.HIDDEN, R.RESTRICTED)),
        (Axis.RETRIEVAL, (R.PRIVILEGED_ONLY, R.NORMAL)),
    ],
)
def test_undoing_a_sentinel_verdict_needs_a_grant(axis: Axis, move: tuple[str, str]) -> None:
    """Pinned: only the granted authorities undo a sentinel's verdict on these rows."""
    assert gate.TRANSITIONS[axis][move] <= {Authority.USER, Authority.PROBE}


# -- re-checks at execution: a cited belief contradicted (not deleted) since the hold ---------


def _held_on(wall: firewall.Firewall) -> tuple[firewall.Belief, list[Snapshot]]:
    cited = _fact(wall, "The release branch is frozen")
    assert (cited.truth_status, cited.retrieval_status) == (T.SUPPORTED, R.NORMAL)
    return cited, capture(CONTRACT, {}, [cited.id], "a" * 64)


def _recheck(wall: firewall.Firewall, snapshots: list[Snapshot]) -> list[str]:
    policy = ContextPolicy.preset("default")
    return revalidate(
        snapshots, store=wall.store, citation_policy=policy, policy_digest="a" * 64, now=NOW
    )


def test_a_cited_belief_contradicted_since_the_hold_is_noticed_at_execution() -> None:
    wall = firewall.open("memory://")
    cited, snapshots = _held_on(wall)
    assert _recheck(wall, snapshots) == []  # the other side: nothing changed, nothing reported
    wall.transition(
        cited.id,
        [Move(Axis.TRUTH, T.CONTRADICTED)],
        reason="an independent check says the branch is open",
        authority=Authority.SENTINEL,
    )
    problems = _recheck(wall, snapshots)
    assert len(problems) == 1
    assert problems[0].startswith(f"{BELIEF_CLEAN}: belief {cited.id} is no longer accepted")
    assert "contradicted" in problems[0]


def test_flip_without_the_citation_recheck_the_contradicted_belief_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall = firewall.open("memory://")
    cited, snapshots = _held_on(wall)
    wall.transition(
        cited.id,
        [Move(Axis.TRUTH, T.CONTRADICTED)],
        reason="an independent check says the branch is open",
        authority=Authority.SENTINEL,
    )
    monkeypatch.setattr(ContextPolicy, "rejection_reasons", lambda *_a, **_k: [])
    assert _recheck(wall, snapshots) == []  # the attack succeeds: the hold would run
