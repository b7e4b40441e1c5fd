"""The fake Zep server speaks zep-cloud's wire format: raw SDK calls round-trip."""

from __future__ import annotations

import asyncio
import os

import httpx
import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("zep_cloud")

from zep_cloud import AddMessage
from zep_cloud.errors import BadRequestError, NotFoundError, UnauthorizedError

from tests.fakes_zep import async_client, request_json, sync_client, zep_routes


def test_threads_messages_and_context() -> None:
    with zep_routes() as mock:
        zep = sync_client()
        user = zep.user.create(user_id="ada")
        thread = zep.thread.create(user_uuid=user.uuid_)
        result = zep.thread.add_messages(
            thread.uuid_,
            messages=[
                AddMessage(
                    role="user",
                    name="Ada",
                    content="Ada likes tea.",
                    metadata={"gnomon_belief": "b1"},
                )
            ],
        )
        assert result.messages[0].metadata == {"gnomon_belief": "b1"}
        body = request_json(mock, "thread.add_messages")
        assert body["messages"][0] == {
            "role": "user",
            "name": "Ada",
            "content": "Ada likes tea.",
            "metadata": {"gnomon_belief": "b1"},
        }
        assert "Ada likes tea." in zep.thread.get_context(thread.uuid_).context
        assert [m.content for m in zep.thread.list_messages(thread.uuid_)] == ["Ada likes tea."]
        with pytest.raises(NotFoundError):
            zep.thread.get_context("nope")


def test_episodes_edges_join_and_pagination() -> None:
    with zep_routes() as mock:
        zep = sync_client()
        graph = zep.user.create(user_id="ada").graph_uuid
        one = zep.graph.episode.add(
            graph, data="Ada likes tea. Ada lives in Lisbon.", type="text", metadata={"k": "v"}
        ).episode
        two = zep.graph.episode.add(graph, data="Ada likes tea.", type="text").episode
        edges = list(zep.graph.search_edges(graph, query="Ada tea", page_size=1))
        tea = next(e for e in edges if e.fact == "Ada likes tea.")
        assert tea.episode_uuids == [one.uuid_, two.uuid_]
        cursors = [
            c.request.url.params.get("cursor") for c in mock.routes["graph.search_edges"].calls
        ]
        assert cursors == [None, "1"]
        nodes = list(zep.graph.search_nodes(graph, query="tea"))
        assert [n.name for n in nodes] == ["Ada"]
        ctx = zep.graph.get_context(graph, query="tea", include_results=True)
        assert ctx.results.edges[0].fact == "Ada likes tea." and "Ada likes tea." in ctx.context
        assert zep.graph.episode.get(graph, one.uuid_).metadata == {"k": "v"}
        assert len(list(zep.graph.episode.list(graph))) == 2
        zep.graph.episode.delete(graph, two.uuid_)
        assert zep.graph.edge.get(graph, tea.uuid_).episode_uuids == [one.uuid_]


def test_metadata_rule_and_auth() -> None:
    with zep_routes() as mock:
        zep = sync_client()
        graph = zep.user.create(user_id="ada").graph_uuid
        with pytest.raises(BadRequestError):
            zep.graph.episode.add(graph, data="x", metadata={f"k{i}": i for i in range(11)})
        with pytest.raises(BadRequestError):
            zep.graph.episode.add(graph, data="x", metadata={"nested": {"a": 1}})
        mock.server.fail("user.create", 401)
        with pytest.raises(UnauthorizedError):
            zep.user.create(user_id="x")
        mock.server.fail("user.create", "timeout")
        with pytest.raises(httpx.ReadTimeout):
            zep.user.create(user_id="x")


def test_async_client_round_trips() -> None:
    async def run() -> list[str]:
        zep = async_client()
        graph = (await zep.user.create(user_id="ada")).graph_uuid
        await zep.graph.episode.add(graph, data="Ada likes tea.")
        pager = await zep.graph.search_edges(graph, query="tea")
        return [e.fact async for e in pager]

    with zep_routes():
        assert asyncio.run(run()) == ["Ada likes tea."]
