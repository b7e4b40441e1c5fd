"""The fake Letta server speaks letta-client's wire format: raw SDK calls round-trip."""

from __future__ import annotations

import asyncio
import os

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("letta_client")

import letta_client

from tests.fakes_letta import async_client, letta_routes, request_json, sync_client


def test_core_memory_blocks_round_trip() -> None:
    with letta_routes() as mock:
        agent = mock.server.add_agent(blocks={"human": "Name: Ada", "persona": "Helpful"})
        client = sync_client()
        assert client.agents.blocks.retrieve("human", agent_id=agent).value == "Name: Ada"
        updated = client.agents.blocks.update(
            "human", agent_id=agent, value="Name: Ada L.", metadata={"k": "v"}
        )
        assert updated.value == "Name: Ada L." and updated.metadata == {"k": "v"}
        assert request_json(mock, "agent_blocks.update") == {
            "value": "Name: Ada L.",
            "metadata": {"k": "v"},
        }
        assert sorted(b.label for b in client.agents.blocks.list(agent)) == ["human", "persona"]
        with pytest.raises(letta_client.NotFoundError):
            client.agents.blocks.retrieve("missing", agent_id=agent)


def test_array_pages_paginate_with_after_and_end_on_an_empty_page() -> None:
    with letta_routes() as mock:
        client = sync_client()
        made = [client.blocks.create(label=f"l{i}", value=f"v{i}", tags=["t"]) for i in range(5)]
        seen = [b.id for b in client.blocks.list(limit=2, tags=["t"])]
        assert seen == [b.id for b in made]
        afters = [c.request.url.params.get("after") for c in mock.routes["blocks.list"].calls]
        assert afters == [None, made[1].id, made[3].id, made[4].id]


def test_passages_tags_metadata_and_search() -> None:
    with letta_routes() as mock:
        agent = mock.server.add_agent()
        client = sync_client()
        created = client.agents.passages.create(agent, text="Ada likes tea", tags=["gnomon:b1"])
        assert created[0].tags == ["gnomon:b1"] and created[0].metadata == {}
        hits = client.agents.passages.search(agent, query="tea", tags=["gnomon:b1"])
        assert hits.count == 1 and hits.results[0].content == "Ada likes tea"
        archive = client.archives.create(name="shared")
        p = client.archives.passages.create(archive.id, text="Bob likes tea", metadata={"x": 1})
        found = client.passages.search(query="tea", archive_id=archive.id)
        assert [h.passage.id for h in found] == [p.id] and found[0].passage.metadata == {"x": 1}
        assert [x.id for x in client.agents.passages.list(agent)] == [created[0].id]
        client.agents.passages.delete(created[0].id, agent_id=agent)
        assert client.agents.passages.list(agent) == []


def test_injected_faults_map_to_sdk_errors() -> None:
    with letta_routes() as mock:
        client = sync_client()
        mock.server.fail("blocks.create", 401)
        with pytest.raises(letta_client.AuthenticationError):
            client.blocks.create(label="a", value="b")
        mock.server.fail("blocks.create", 429)
        with pytest.raises(letta_client.RateLimitError):
            client.blocks.create(label="a", value="b")
        mock.server.fail("blocks.create", 503)
        with pytest.raises(letta_client.InternalServerError):
            client.blocks.create(label="a", value="b")
        mock.server.fail("blocks.create", "timeout")
        with pytest.raises(letta_client.APITimeoutError):
            client.blocks.create(label="a", value="b")
        assert client.blocks.create(label="a", value="b").value == "b"


def test_async_client_round_trips() -> None:
    async def run() -> list[str]:
        client = async_client()
        await client.blocks.create(label="a", value="one")
        await client.blocks.create(label="b", value="two")
        return [b.value async for b in client.blocks.list(limit=1)]

    with letta_routes():
        assert asyncio.run(run()) == ["one", "two"]
