"""An agent names a decision or an action that does not exist (or that an ended session can no
longer reach): nothing is recorded, and the refusal is typed."""

from __future__ import annotations

import pytest

from gnomon import firewall
from gnomon.firewall.model.errors import InputError, UnknownIdError


def test_attack_an_action_on_a_made_up_decision_is_refused_and_not_recorded() -> None:
    wall = firewall.open("memory://")
    with wall.session(project="p", actor="agent") as s:
        before = len(wall.store.session_events(s.id))
        with pytest.raises(UnknownIdError, match="dec_made_up"):
            s.act("dec_made_up", "deploy")
        with pytest.raises(UnknownIdError, match="act_made_up"):
            s.record_outcome("act_made_up", success=True, summary="it worked")
        assert len(wall.store.session_events(s.id)) == before


def test_attack_an_ended_session_records_no_outcome() -> None:
    wall = firewall.open("memory://")
    with wall.session(project="p", actor="agent") as s:
        pass
    with pytest.raises(InputError, match="has ended"):
        s.record_outcome("act_made_up", success=True)
