"""The contradiction channel through the guarded clients (issue 14), as attacks.

Per store (mem0's platform client over the fake platform, whose scripted extraction LLM emits
UPDATE/DELETE; Letta and Zep over their wire-format fakes):

* a trusted fact and a conflicting untrusted write: the trusted fact stays in the results, the
  conflict is in the channel with both sides and says which one the policy trusts;
* two trusted facts in conflict: both leave the trusted results, both are in the channel, and
  the decision that rested on the old one is flagged;
* a quarantined conflicting member is never revealed (no id, no count, no entry).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters.errors import ConflictingBeliefError
from gnomon.adapters.fakes.mem0_platform import FakeMem0Platform
from gnomon.adapters.mem0 import GuardedMemoryClient
from gnomon.firewall import Origin
from gnomon.firewall.audit.why import explain
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.states import Authority, TruthStatus
from tests.adapter_contract import FACT, POISON
from tests.attested import attested
from tests.test_adapter_mem0_platform import binding_of, mem0_routes, sync_client

ALICE = {"user_id": "alice"}


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


def _client(wall: Firewall, **kw: Any) -> GuardedMemoryClient:
    return GuardedMemoryClient(
        sync_client(), wall, project="shop", actor="coder", **kw, policy="default"
    )


def _user_fact(wall: Firewall, client: GuardedMemoryClient, text: str, who: str) -> tuple[str, str]:
    channel = attested(wall, Origin.user(who))
    (row,) = client.add(text, user_id="alice", infer=False, gnomon_origin=channel)["results"]
    return row["id"], binding_of(wall, row["id"]).belief_id


def _ids(entry: dict[str, Any]) -> set[str]:
    return {m["belief_id"] for m in entry["beliefs"]} | set(entry["withheld"])


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
def test_mem0_untrusted_rewrite_stays_out_and_shows_in_channel(wall: Firewall, event: str) -> None:
    target: dict[str, str] = {}

    def extract(msgs: Any) -> list[Any]:  # mem0's LLM rewrites (or drops) the user's fact
        return [{"event": event, "id": target["id"], "text": "Alice prefers arsenic."}]

    with mem0_routes(FakeMem0Platform(extract=extract)):
        client = _client(wall)
        target["id"], fact_id = _user_fact(wall, client, FACT, "alice")
        # attack: the agent reads a poisoned page, then lets mem0's extraction act on it
        client.gnomon._guard.session.observe(
            tool="fetch", content=POISON, origin=Origin.external("web:evil.example")
        )
        client.add("Update what you know about Alice.", user_id="alice")
        found = client.search("Alice prefers", filters=ALICE)
        assert [r["memory"] for r in found["results"]] == [FACT]
        (entry,) = found["contradictions"]
        assert fact_id in entry["belief_ids"] and len(entry["belief_ids"]) == 2
        assert entry["trusted"] == [fact_id]
        assert "mem0.add" in entry["reason"]  # where it came from: the store and the call
        trusted = next(m for m in entry["beliefs"] if m["belief_id"] == fact_id)
        assert trusted["truth"] == "supported" and trusted["origin_ids"] == ["user:alice"]
        assert client.gnomon.contradictions() == [entry]
        (now_at,) = wall.store.bindings_for_beliefs([fact_id])  # written back: a new item
        assert client.gnomon.contradictions(ids=[now_at.store_id]) == [entry]
        assert client.gnomon.contradictions(ids=[fact_id]) == [entry]
        assert client.gnomon.contradictions(query="coffee") == [entry]
        assert client.gnomon.contradictions(query="nothing like this") == []
        assert wall.require_belief(fact_id).truth_status == TruthStatus.SUPPORTED
        # gnomon why shows the link and its origin
        shown = explain(wall.store, wall.require_belief(fact_id))
        assert any("mem0.add" in c.contradiction.reason for c in shown.contradictions)


def test_mem0_two_trusted_facts_both_leave_results_and_flag_the_decision(wall: Firewall) -> None:
    with mem0_routes():
        client = _client(wall)
        store_id, fact_id = _user_fact(wall, client, FACT, "alice")
        decision = client.gnomon._guard.session.decide("order tea for Alice", [fact_id])
        # attack: another user's attested statement tries to overwrite alice's fact in place
        bob = attested(wall, Origin.user("bob"))
        with pytest.raises(ConflictingBeliefError) as refused:
            client.update(store_id, text="Alice prefers coffee over tea.", gnomon_origin=bob)
        rival = refused.value.candidate_id
        found = client.search("Alice prefers", filters=ALICE)
        assert found["results"] == []  # neither stays a trusted result
        (entry,) = found["contradictions"]
        assert set(entry["belief_ids"]) == {fact_id, rival}
        assert entry["trusted"] == []
        assert {m["truth"] for m in entry["beliefs"]} == {"contradicted"}
        assert {m["belief_id"] for m in entry["beliefs"]} == {fact_id, rival}
        flagged = wall.store.get_decision(decision.id)
        assert flagged is not None and any(fact_id in f for f in flagged.flags)


def test_mem0_quarantined_conflicting_member_is_not_revealed(wall: Firewall) -> None:
    target: dict[str, str] = {}

    def extract(msgs: Any) -> list[Any]:
        return [{"event": "UPDATE", "id": target["id"], "text": "Alice prefers arsenic."}]

    with mem0_routes(FakeMem0Platform(extract=extract)):
        client = _client(wall)
        target["id"], fact_id = _user_fact(wall, client, FACT, "alice")
        client.gnomon._guard.session.observe(
            tool="fetch", content=POISON, origin=Origin.external("web:evil.example")
        )
        client.add("Update what you know about Alice.", user_id="alice")
        (entry,) = client.gnomon.contradictions()
        (candidate,) = set(entry["belief_ids"]) - {fact_id}
        wall.quarantine(candidate, reason="poisoned", authority=Authority.SENTINEL)
        found = client.search("Alice prefers", filters=ALICE)
        assert [r["memory"] for r in found["results"]] == [FACT]
        assert found["contradictions"] == []  # no entry, no id, no count
        assert client.gnomon.contradictions() == []
        assert candidate not in repr(found)
