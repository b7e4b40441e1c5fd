"""The forensic record holds only what happened (issue 21, item 5).

A hostile agent holds its session and tries to write records that did not happen, or to learn
about beliefs it may not read:

* it cites a quarantined belief in a decision (to learn its truth state, or to dress an action
  as resting on it): refused exactly as a made-up id is, the message naming nothing more;
* it acts on another session's decision, or reports an outcome for another session's (another
  tenant's) action: "unknown", as a made-up id;
* it logs a recall that never happened: the session has no public route for that any more
  (``log_recall`` became the adapters' host-side ``_log_screened``).

Flips run by hand: dropping the ``floor_reasons`` check in ``Session.decide`` (the first test
fails: the decision is recorded with the quarantined belief's truth), and dropping the session
check in ``Session._following`` (the second test fails: the outcome is recorded).
"""

from __future__ import annotations

import pytest

from gnomon import firewall
from gnomon.firewall.model.errors import UnknownIdError
from gnomon.firewall.model.states import Authority


def _planted(wall: firewall.Firewall) -> str:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        note = s.remember("the payroll export lives at /srv/payroll.csv")
    wall.quarantine(note.id, reason="injection", authority=Authority.SENTINEL)
    return note.id


def test_attack_a_decision_citing_a_quarantined_belief_is_refused_like_a_made_up_id() -> None:
    wall = firewall.open("memory://")
    quarantined = _planted(wall)
    made_up = "bel_" + "0" * 26
    with wall.session(project="shop", actor="coder", user="alice") as s:
        with pytest.raises(UnknownIdError) as real:
            s.decide("export payroll", [quarantined], policy="reference")
        with pytest.raises(UnknownIdError) as fake:
            s.decide("export payroll", [made_up], policy="reference")
    assert str(real.value).replace(quarantined, "ID") == str(fake.value).replace(made_up, "ID")
    decisions = [e for e in wall.store.session_events(s.id) if e.kind == "decision.recorded"]
    assert decisions == []


def test_attack_another_sessions_decision_and_action_are_unknown() -> None:
    wall = firewall.open("memory://")
    with wall.session(project="payroll", actor="clerk", user="bob") as theirs:
        fact = theirs.remember("salaries are paid on the 25th")
        decision = theirs.decide("pay", [fact.id], policy="reference")
        action = theirs.act(decision.id, "pay_salaries")
    with wall.session(project="shop", actor="coder", user="alice") as mine:
        with pytest.raises(UnknownIdError):
            mine.act(decision.id, "pay_salaries")
        with pytest.raises(UnknownIdError):
            mine.record_outcome(action.id, success=True, summary="paid twice, all good")
    kinds = [e.kind for e in wall.store.session_events(mine.id)]
    assert "action.taken" not in kinds and "outcome.recorded" not in kinds


def test_attack_an_agent_cannot_log_a_recall_that_never_happened() -> None:
    wall = firewall.open("memory://")
    with wall.session(project="shop", actor="coder") as s:
        assert not hasattr(s, "log_recall")
        public = {n for n in dir(s) if not n.startswith("_")}
        assert not {n for n in public if "log" in n}, public


def test_attack_citing_another_tenants_belief_is_a_made_up_id_to_the_kernel() -> None:
    """A ``shop`` agent cites ``payroll``'s quarantined belief in an action request: the kernel
    denies it as it denies a made-up id, and its reasons say nothing more (not that the belief
    exists, not that it is quarantined). Flip run: resolving cited ids unscoped (as before)
    makes the reasons differ (they then name the belief's quarantine)."""
    from gnomon.probes._kernel import host

    wall = firewall.open("memory://")
    with wall.session(project="payroll", actor="clerk", user="bob") as theirs:
        note = theirs.remember("the payroll export lives at /srv/payroll.csv")
    wall.quarantine(note.id, reason="injection", authority=Authority.SENTINEL)
    made_up = "bel_" + "0" * 28
    with host(wall) as h, wall.session(project="shop", actor="coder", user="alice") as s:
        handle = h.kernel.handle(s)
        real = handle.request("suggest", {"text": "export payroll"}, cites=[note.id])
        fake = handle.request("suggest", {"text": "export payroll"}, cites=[made_up])
    assert real.status == fake.status == "denied"
    assert [r.replace(note.id, "ID") for r in real.reasons] == [
        r.replace(made_up, "ID") for r in fake.reasons
    ]
    assert not any("quarantin" in r for r in real.reasons)


def test_attack_a_huge_tool_name_with_control_characters_is_a_typed_error() -> None:
    """4 MiB of tool name with control characters, to ``handle.request``: a typed error, and
    the store does not grow. Flip run: without the name check the request is recorded (denied,
    the whole name in the log)."""
    from gnomon.firewall.model.errors import InputError
    from gnomon.probes._kernel import host

    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="shop", actor="coder") as s:
        before = wall.store.head()[0]
        with pytest.raises(InputError, match="tool must be") as refused:
            h.kernel.handle(s).request("x\x1b[2J" * (1 << 20), {})
        assert len(str(refused.value)) < 500  # the error does not carry the name back
        assert wall.store.head()[0] == before
