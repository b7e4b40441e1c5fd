"""Attack: an agent tries to forget the user's fact. Agents can ask; the host decides.

The agent holds an MCP connection to the memory server (the same ``MemoryServer.call`` the
stdio server runs) or a session: it can call ``forget`` on a fact it was shown, name ids it was
not shown, and build a grant object by hand. The promise: the user's fact keeps its text, the
request is recorded and held for an operator, and only an operator's signed eraser grant erases.
FLIP: with the grant check removed, the agent's hand-built grant erases the user's fact, so the
check is what holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.erasure import ErasureTarget, TargetKind, held_requests
from gnomon.firewall.gate import grants as grants_mod
from gnomon.firewall.gate.grants import Grant, GrantAuthority
from gnomon.firewall.model.clock import utcnow
from gnomon.firewall.model.errors import ForgedGrantError
from tests.attested import observe_as

pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")

from gnomon.firewall.host.mcp_memory import MemoryServer

FACT = "Alice's delivery address is 12 Oak Street, Springfield"


Setup = tuple[firewall.Firewall, MemoryServer, str]


@pytest.fixture
def setup() -> Iterator[Setup]:
    """A user's fact, and the memory server of an agent's connection."""
    wall = firewall.open("memory://")
    with wall.session(project="shop", actor="host") as s:
        fact = observe_as(wall, s, Origin.user("alice"), tool="chat", content=FACT)
    with wall.session(project="shop", actor="agent") as agent:
        yield wall, MemoryServer(wall, agent, "reference"), fact.content[0].id


def _forged_grant() -> Grant:
    """What an agent can build: a grant object with the right shape and no valid signature."""
    now = utcnow()
    return Grant(
        id="grt_agent",
        authority=GrantAuthority.ERASER,
        subject="agent",
        project="shop",
        issued_at=now,
        expires_at=now + timedelta(minutes=5),
        key_id="0" * 16,
        signature="AAAA",
    )


def test_attack_an_agent_asks_to_forget_the_users_fact_and_nothing_is_erased(
    setup: Setup,
) -> None:
    wall, server, belief_id = setup
    server.call("recall", {"query": "delivery address"})
    text, is_error = server.call("forget", {"belief_id": belief_id, "reason": "user said so"})
    assert not is_error and "held for an operator" in text and "nothing was erased" in text
    belief = wall.store.get_belief(belief_id)
    assert belief is not None and belief.statement == FACT
    assert not any(e.kind == "erasure" for e in wall.store.events())
    (request,) = held_requests(wall.store)
    assert request.belief_id == belief_id and request.actor == "agent"
    # an id it was not shown is unknown to it; a hand-built grant is refused
    _, unknown = server.call("forget", {"belief_id": "bel_nobody_has"})
    assert unknown
    with pytest.raises(ForgedGrantError):
        wall.forget(ErasureTarget(TargetKind.BELIEF, belief_id), grant=_forged_grant())
    assert wall.store.get_belief(belief_id).statement == FACT  # type: ignore[union-attr]
    # the operator decides: a signed eraser grant erases, and the request is no longer held
    wall.forget(
        ErasureTarget(TargetKind.BELIEF, belief_id),
        grant=wall.grant("eraser", "ops", project="shop"),
    )
    assert FACT not in wall.store.get_belief(belief_id).statement  # type: ignore[union-attr]
    assert held_requests(wall.store) == []


def test_attack_flip_without_the_grant_check_the_agents_grant_erases(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall, _, belief_id = setup
    forged = _forged_grant()
    monkeypatch.setattr(grants_mod.GrantVerifier, "verify", lambda self, grant, *a, **k: grant)
    wall.forget(ErasureTarget(TargetKind.BELIEF, belief_id), grant=forged)
    assert FACT not in wall.store.get_belief(belief_id).statement  # type: ignore[union-attr]
