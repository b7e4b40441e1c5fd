"""The contradiction channel through the guarded Zep client (issue 14), as attacks, with the
real zep-cloud SDK against the wire-format fake (Graphiti's invalidation is the server setting
``invalid_at``/``expired_at`` on an edge, as Zep does server-side):

* a fact from the user's episode, invalidated by a fact from a web page: a lower-integrity
  replacement only contests it; the user's edge stays in the results, the link is in the channel,
  and no longer reads as drift (it was flagged suspicious before);
* two trusted episodes in conflict (another user's statement over alice's): both contradicted,
  both in the channel, neither in the results, the dependent decision flagged;
* a quarantined conflicting member is not revealed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("zep_cloud")

from gnomon import firewall
from gnomon.adapters.errors import ConflictingBeliefError
from gnomon.adapters.zep import GuardedAsyncZep, GuardedZep
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.states import Authority, SecurityStatus, TruthStatus
from tests.adapter_contract import quoting_policy
from tests.attested import attested
from tests.fakes_zep import async_client, sync_client, zep_routes

WHEN = "2026-11-20T10:00:00Z"


@pytest.fixture
def env() -> Iterator[tuple[Firewall, GuardedZep, Any, str]]:
    wall = firewall.open("memory://")
    with zep_routes() as mock:
        raw = sync_client()
        graph = raw.user.create(user_id="alice").graph_uuid
        zep = GuardedZep(raw, wall, project="shop", actor="coder", user="alice", policy="default")
        yield wall, zep, mock.server, graph
        zep.close()
    wall.close()


def _invalidated_by_a_page(wall: Firewall, zep: GuardedZep, server: Any, graph: str) -> Any:
    quoter = GuardedZep(sync_client(), wall, project="shop", actor="coder", policy=quoting_policy())
    alice = attested(wall, Origin.user("alice"))
    zep.graph.episode.add(graph, data="Ada lives in Lisbon.", gnomon_origin=alice)
    (lisbon,) = list(quoter.graph.search_edges(graph, query="Lisbon"))
    # attack: a web page's claim lands in the graph and Graphiti invalidates the user's fact
    zep.graph.episode.add(
        graph, data="Ada lives in Porto.", gnomon_origin=Origin.external("web:evil.example")
    )
    server.edges[lisbon.uuid_].update(invalid_at=WHEN, expired_at=WHEN)
    return quoter, lisbon


def test_zep_edge_invalidated_by_an_untrusted_fact_stays_and_is_in_the_channel(env: Any) -> None:
    wall, zep, server, graph = env
    quoter, lisbon = _invalidated_by_a_page(wall, zep, server, graph)
    found = quoter.graph.search_edges(graph, query="Ada lives")
    assert "Ada lives in Lisbon." in [e.gnomon["text"] for e in found]  # contested, not retired
    (entry,) = found.gnomon.contradictions
    old = lisbon.gnomon["belief_id"]
    assert old in entry["belief_ids"] and "zep.graph.search_edges" in entry["reason"]
    belief = wall.require_belief(old)
    assert belief.security_status == SecurityStatus.CLEAN  # the signal, not drift
    assert belief.truth_status != TruthStatus.SUPERSEDED
    assert quoter.gnomon.contradictions(query="Lisbon") == [entry]
    context = quoter.graph.get_context(graph, query="Ada lives")
    assert context.gnomon.contradictions == [entry]  # the context read carries it too


def test_zep_two_trusted_facts_both_leave_results_and_flag_the_decision(env: Any) -> None:
    wall, zep, _server, graph = env
    alice = attested(wall, Origin.user("alice"))
    item, binding = zep.gnomon.write(
        "Ada lives in Lisbon.", scope={"graph_uuid": graph}, origin=alice
    )
    decision = zep.gnomon._guard.session.decide("ship to Lisbon", [binding.belief_id])
    bob = attested(wall, Origin.user("bob"))
    with pytest.raises(ConflictingBeliefError) as refused:
        zep.gnomon.update(item.store_id, "Ada lives in Porto.", origin=bob)
    found = zep.graph.search_episodes(graph, query="Ada lives")
    assert list(found) == []
    (entry,) = found.gnomon.contradictions
    assert set(entry["belief_ids"]) == {binding.belief_id, refused.value.candidate_id}
    assert {m["truth"] for m in entry["beliefs"]} == {"contradicted"}
    flagged = wall.store.get_decision(decision.id)
    assert flagged is not None and any(binding.belief_id in f for f in flagged.flags)


def test_zep_quarantined_conflicting_member_is_not_revealed(env: Any) -> None:
    wall, zep, server, graph = env
    quoter, lisbon = _invalidated_by_a_page(wall, zep, server, graph)
    first = quoter.graph.search_edges(graph, query="Ada lives")
    (entry,) = first.gnomon.contradictions
    (rival,) = set(entry["belief_ids"]) - {lisbon.gnomon["belief_id"]}
    wall.quarantine(rival, reason="poisoned", authority=Authority.SENTINEL)
    found = quoter.graph.search_edges(graph, query="Ada lives")
    assert [e.gnomon["text"] for e in found] == ["Ada lives in Lisbon."]
    assert found.gnomon.contradictions == [] and quoter.gnomon.contradictions() == []
    assert rival not in repr(found.gnomon)


def test_zep_sync_links_an_invalidation_zep_recorded_out_of_band(env: Any) -> None:
    wall, zep, server, graph = env
    quoter = GuardedZep(sync_client(), wall, project="shop", actor="coder", policy=quoting_policy())
    alice = attested(wall, Origin.user("alice"))
    zep.graph.episode.add(graph, data="Ada lives in Lisbon.", gnomon_origin=alice)
    (lisbon,) = list(quoter.graph.search_edges(graph, query="Lisbon"))
    # out of band: a page lands and Zep invalidates the user's fact; nobody reads edges after
    zep.graph.episode.add(
        graph, data="Ada lives in Porto.", gnomon_origin=Origin.external("web:evil.example")
    )
    server.edges[lisbon.uuid_].update(invalid_at=WHEN, expired_at=WHEN)
    report = zep.gnomon.sync({"graph_uuid": graph})
    assert len(report.conflicts) == 1 and f"edge:{lisbon.uuid_}@" in report.conflicts[0]
    assert report.deleted == ()  # a bound edge is not an episode that went missing
    (entry,) = quoter.gnomon.contradictions()
    assert (
        lisbon.gnomon["belief_id"] in entry["belief_ids"]
        and "zep.graph.edge.list" in entry["reason"]
    )
    assert zep.gnomon.sync({"graph_uuid": graph}).conflicts == ()  # linked once


def test_zep_async_client_carries_the_same_channel(env: Any) -> None:
    wall, zep, server, graph = env
    _quoter, lisbon = _invalidated_by_a_page(wall, zep, server, graph)

    async def read() -> Any:
        client = GuardedAsyncZep(
            async_client(), wall, project="shop", actor="coder", policy=quoting_policy()
        )
        try:
            return await client.graph.search_edges(graph, query="Ada lives")
        finally:
            await client.close()

    found = asyncio.run(read())
    (entry,) = found.gnomon.contradictions
    assert lisbon.gnomon["belief_id"] in entry["belief_ids"]
    assert "Ada lives in Lisbon." in [e.gnomon["text"] for e in found.items]
