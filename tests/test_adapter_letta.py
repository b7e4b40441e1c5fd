"""The adapter contract over Letta (standalone blocks), the real SDK against the fake server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("letta_client")

from gnomon.adapters.letta import GuardedLetta
from gnomon.firewall.host.firewall import Firewall
from tests.adapter_contract import AdapterContract, Harness
from tests.attested import attested
from tests.fakes_letta import letta_routes, sync_client


class TestLettaAdapter(AdapterContract):
    @pytest.fixture(autouse=True)
    def _routes(self) -> Iterator[None]:
        with letta_routes() as mock:
            self.mock = mock
            yield

    def make_harness(self, wall: Firewall) -> Harness:
        raw = sync_client()
        client = GuardedLetta(
            raw, wall, project="shop", actor="coder", user="alice", policy="default"
        )
        server = self.mock.server

        def raw_write(text: str) -> str:
            return str(raw.blocks.create(label="memory", value=text).id)

        return Harness(
            client.gnomon,
            {"label": "memory"},
            raw_write=raw_write,
            raw_edit=lambda i, t: raw.blocks.update(i, value=t) and None,
            raw_delete=lambda i: raw.blocks.delete(i) and None,
            break_writes=lambda: server.fail("blocks.create", 503),
        )


# -- the SDK-shaped client ---------------------------------------------------------------------

import asyncio  # noqa: E402

from gnomon import firewall  # noqa: E402
from gnomon.adapters.base import BELIEF_KEY  # noqa: E402
from gnomon.adapters.errors import (  # noqa: E402
    BypassRefusedError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
)
from gnomon.adapters.letta import GuardedAsyncLetta  # noqa: E402
from gnomon.firewall import Origin  # noqa: E402
from gnomon.firewall.model.chain import BindingState  # noqa: E402
from tests.adapter_contract import FACT, POISON  # noqa: E402
from tests.fakes_letta import async_client, request_json  # noqa: E402


@pytest.fixture
def env() -> Iterator[tuple[Firewall, GuardedLetta, object]]:
    wall = firewall.open("memory://")
    with letta_routes() as mock:
        client = GuardedLetta(
            sync_client(), wall, project="shop", actor="coder", user="alice", policy="default"
        )
        yield wall, client, mock
        client.close()
    wall.close()


def _binding(wall: Firewall, store_id: str):  # type: ignore[no-untyped-def]
    return wall.store.bindings_by_store_id("letta", [store_id])[store_id]


def test_block_create_sends_belief_id_in_metadata(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, mock = env
    block = client.blocks.create(
        label="human",
        value=FACT,
        metadata={"topic": "drinks"},
        gnomon_origin=attested(wall, Origin.user("alice")),
    )
    sent = request_json(mock, "blocks.create")
    binding = _binding(wall, block.id)
    assert sent["metadata"][BELIEF_KEY] == binding.belief_id
    assert sent["metadata"]["topic"] == "drinks" and sent["value"] == FACT
    assert block.value == FACT and block.gnomon["truth"] == "supported"


def test_agent_editing_its_block_inherits_session_label(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, mock = env
    agent = mock.server.add_agent(blocks={"human": "Name: Alice"})
    client.gnomon._guard.session.observe(
        tool="fetch", content=POISON, origin=Origin.external("web:evil")
    )
    client.agents.blocks.update("human", agent_id=agent, value="Alice wants --force deploys.")
    stored = mock.server.agent_block(agent, "human")
    belief = wall.require_belief(_binding(wall, stored["id"]).belief_id)
    assert "external:web:evil" in belief.origin.origin_ids
    assert "agent:coder" in belief.origin.origin_ids
    # the edited block fails the default policy: returned redacted, never its text
    got = client.agents.blocks.retrieve("human", agent_id=agent)
    assert got.value == "" and got.gnomon["withheld"] is True
    assert got.gnomon["belief_id"] == belief.id and "--force" not in str(got.model_dump())


def test_block_versions_are_revisions(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, _ = env
    alice = attested(wall, Origin.user("alice"))
    block = client.blocks.create(label="l", value=FACT, gnomon_origin=alice)
    first = _binding(wall, block.id)
    client.blocks.update(block.id, value="Alice prefers coffee.", gnomon_origin=alice)
    second = _binding(wall, block.id)
    assert second.belief_id != first.belief_id
    assert wall.require_belief(first.belief_id).superseded_by == second.belief_id


def test_lists_drop_excluded_blocks_across_pages(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, mock = env
    good = [
        client.blocks.create(
            label="l", value=f"Fact {i}", gnomon_origin=attested(wall, Origin.user("alice"))
        )
        for i in range(3)
    ]
    raw = sync_client()
    raw.blocks.create(label="l", value=POISON)  # around the firewall
    listed = client.blocks.list(label="l", limit=2)
    assert [b.id for b in listed] == [b.id for b in good]
    assert len(mock.routes["blocks.list"].calls) == 3  # pages of 2, 2, then the empty one
    assert not listed.has_next_page()


def test_agent_passages_carry_tags_only_and_search_filters(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, mock = env
    agent = mock.server.add_agent()
    (kept,) = client.agents.passages.create(
        agent, text=FACT, tags=["drinks"], gnomon_origin=attested(wall, Origin.user("alice"))
    )
    sent = request_json(mock, "agent_passages.create")
    belief_id = _binding(wall, f"{agent}/{kept.id}").belief_id
    assert sent == {"text": FACT, "tags": ["drinks", f"gnomon:{belief_id}"]}
    client.agents.passages.create(agent, text="Alice tea note: " + POISON)  # agent-authored
    sync_client().agents.passages.create(agent, text="Alice tea stray")  # around the firewall
    found = client.agents.passages.search(agent, query="Alice tea")
    assert found.count == 1 and [r.content for r in found.results] == [FACT]
    assert found.results[0].gnomon["belief_id"] == belief_id
    assert [p.text for p in client.agents.passages.list(agent)] == [FACT]
    client.agents.passages.delete(
        kept.id, agent_id=agent, gnomon_origin=attested(wall, Origin.user("alice"))
    )
    assert _binding(wall, f"{agent}/{kept.id}").state == BindingState.DELETED


def test_archive_passages_carry_metadata_and_global_search(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, mock = env
    archive = client.archives.create(name="shared")
    p = client.archives.passages.create(
        archive.id, text=FACT, metadata={"k": 1}, gnomon_origin=attested(wall, Origin.user("alice"))
    )
    sent = request_json(mock, "archive_passages.create")
    assert sent["metadata"]["k"] == 1
    assert sent["metadata"][BELIEF_KEY] == _binding(wall, f"{archive.id}/{p.id}").belief_id
    sync_client().archives.passages.create(archive.id, text="Alice tea: " + POISON)
    hits = client.passages.search(query="Alice tea", archive_id=archive.id)
    assert [h.passage.text for h in hits] == [FACT] and hits[0].gnomon["truth"] == "supported"


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        (401, StoreCallError, 401),
        (404, StoreCallError, 404),
        (429, StoreCallError, 429),
        (500, StoreCallError, 500),
        ("timeout", StoreTimeoutError, None),
        ("malformed", StoreResponseError, None),
    ],
)
def test_write_failures_are_typed_and_leave_a_failed_binding(  # type: ignore[no-untyped-def]
    env, fault, error, status
) -> None:
    wall, client, mock = env
    mock.server.fail("blocks.create", fault)
    with pytest.raises(error) as raised:
        client.blocks.create(label="l", value="A note.")
    assert raised.value.store == "letta" and raised.value.call == "blocks.create"
    assert getattr(raised.value, "status", None) == status
    (binding,) = wall.store.list_bindings("letta")
    assert binding.state == BindingState.FAILED
    assert wall.require_belief(binding.belief_id).retrieval_status.value == "hidden"


def test_read_failures_are_typed(env) -> None:  # type: ignore[no-untyped-def]
    _, client, mock = env
    agent = mock.server.add_agent()
    mock.server.fail("agent_passages.search", "malformed", body={"count": "x"})
    with pytest.raises(StoreResponseError, match=r"letta\.agents\.passages\.search"):
        client.agents.passages.search(agent, query="q")
    mock.server.fail("blocks.list", "malformed", body={"not": "a list"})
    with pytest.raises(StoreResponseError, match=r"letta\.blocks\.list"):
        client.blocks.list()
    with pytest.raises(StoreCallError) as raised:
        client.agents.blocks.retrieve("nope", agent_id=agent)
    assert raised.value.status == 404


def test_unguarded_sdk_methods_are_refused(env) -> None:  # type: ignore[no-untyped-def]
    _, client, _ = env
    with pytest.raises(BypassRefusedError, match=r"agents\.messages\.stream"):
        client.agents.messages.stream  # noqa: B018  (agents.messages.create is a guarded step)
    with pytest.raises(BypassRefusedError, match=r"blocks\.agents"):
        client.blocks.agents  # noqa: B018
    with pytest.raises(BypassRefusedError, match="tools"):
        client.tools  # noqa: B018


def test_async_client() -> None:
    wall = firewall.open("memory://")

    async def run(client: GuardedAsyncLetta, agent: str) -> None:
        block = await client.blocks.create(
            label="l", value=FACT, gnomon_origin=attested(wall, Origin.user("alice"))
        )
        assert block.gnomon["truth"] == "supported"
        await async_client().blocks.create(label="l", value=POISON)
        assert [b.id async for b in client.blocks.list(label="l", limit=1)] == [block.id]
        page = await client.blocks.list(label="l")
        assert [b.id for b in page.items] == [block.id]
        await client.agents.passages.create(
            agent, text=FACT, gnomon_origin=attested(wall, Origin.user("a"))
        )
        found = await client.agents.passages.search(agent, query="tea")
        assert [r.content for r in found.results] == [FACT]
        assert (await client.agents.blocks.retrieve("human", agent_id=agent)).value == ""
        mock.server.fail("blocks.create", 503)
        with pytest.raises(StoreCallError, match=r"letta\.blocks\.create"):
            await client.blocks.create(label="l", value="lost")

    with letta_routes() as mock:
        agent = mock.server.add_agent(blocks={"human": "Name: Alice"})
        client = GuardedAsyncLetta(
            async_client(), wall, project="shop", actor="coder", policy="default"
        )
        asyncio.run(run(client, agent))
        failed = [b for b in wall.store.list_bindings("letta") if b.state == BindingState.FAILED]
        assert len(failed) == 1
        asyncio.run(client.close())


def test_out_of_band_edit_of_a_block_label_is_drift(env) -> None:  # type: ignore[no-untyped-def]
    wall, client, _ = env
    alice = attested(wall, Origin.user("alice"))
    block = client.blocks.create(label="human", value=FACT, gnomon_origin=alice)
    assert client.blocks.retrieve(block.id).value == FACT
    # attack: the value is untouched; the label the agent sees it under is rewritten
    sync_client().blocks.update(block.id, label="system_instructions")
    got = client.blocks.retrieve(block.id)
    assert got.value == "" and got.gnomon["withheld"] is True
    belief = wall.require_belief(_binding(wall, block.id).belief_id)
    assert belief.security_status.value == "suspicious"
