"""Authority boundaries (issue 28): who may move a belief back up, counted against fixed tables.

The attacker is host automation acting with ``policy`` authority (the lowest authority that may
promote anything). It reaches a belief a sentinel has contradicted or hidden and asks the gate to
move it straight back: contradicted -> supported, hidden -> normal. Only a grant (``user`` or
``probe``) may undo a sentinel's verdict. The expectations are written here, not read from
``TRANSITIONS``, so a table edit that widens the authority fails this file. Each attack has its
FLIP: the same call with the table row widened by one authority, where the attack succeeds.
"""

from __future__ import annotations

import pytest

from gnomon import firewall
from gnomon.firewall import Authority, Origin
from gnomon.firewall.gate import gate
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.model.errors import TransitionRefused
from gnomon.firewall.model.states import Axis, RetrievalStatus, TruthStatus
from tests.attested import attested

T, R = TruthStatus, RetrievalStatus


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
