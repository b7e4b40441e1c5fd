"""Attack: a hostile store floods a guarded read with quoted data.

The drop-in ``assistant`` preset returns unverified clean content as ``<quoted-data>`` text, up
to its ``quote.max_items`` per read (100, one default mem0 page; these attacks run the preset
with a cap of 20 so that a flood fits in one page of every SDK). A store written around
Gnomon holds far more clean unverified items than that (each becomes an unbound external
belief, clean and quotable), so without a cap one read would fill the model's context with
them. The promise, on every adapter's read path (mem0 search/get_all, sync and async; Letta
blocks and passages; Zep thread messages; legacy Zep messages): at most ``max_items`` hits
come back quoted, the rest are withheld, and the ``gnomon`` report counts them (reason
``quote_cap``).

Skipped only when mem0 is not installed, and never under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters.mem0 import AsyncGuardedMemory, GuardedMemory
from gnomon.adapters.testing import HashEmbedder, offline_config, offline_memory
from gnomon.firewall.gate.policy import resolve
from gnomon.firewall.host.firewall import Firewall
from tests.fakes_zep import served_client, served_legacy_client

ASSISTANT = resolve("assistant")
CAP = 20
SMALL = ASSISTANT.model_copy(
    update={"quote": ASSISTANT.quote.model_copy(update={"max_items": CAP})}
)
FLOOD = CAP + 7
TEXTS = [f"Ticket {i} is ready for review." for i in range(FLOOD)]


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


def _held(summary: Any, shown: int) -> None:
    """The cap held, and the report says how many it withheld."""
    assert shown == CAP
    assert summary["quoted"] == CAP and summary["returned"] == CAP
    assert summary["withheld"] == FLOOD - CAP
    assert summary["reasons"] == {"quote_cap": FLOOD - CAP}


def test_mem0_get_all_and_search_quote_at_most_max_items(wall: Firewall) -> None:
    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    for text in TEXTS:  # around the firewall
        raw.add(text, user_id="alice", infer=False)
    with wall.session(project="shop", actor="coder", user="alice") as session:
        memory = GuardedMemory(raw, wall, session=session, policy=SMALL)
        listed = memory.get_all(filters={"user_id": "alice"}, top_k=100)
        found = memory.search("ticket ready review", filters={"user_id": "alice"}, top_k=100)
    for out in (listed, found):
        assert all(r["gnomon"]["quoted"] for r in out["results"])
        _held(out["gnomon"], len(out["results"]))


def test_async_mem0_get_all_quotes_at_most_max_items(wall: Firewall) -> None:
    from mem0 import AsyncMemory

    raw = AsyncMemory.from_config(offline_config(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"])))
    raw.embedding_model = HashEmbedder()

    async def run() -> Any:
        for text in TEXTS:
            await raw.add(text, user_id="alice", infer=False)
        memory = AsyncGuardedMemory(
            raw, wall, project="shop", actor="coder", user="alice", policy=SMALL
        )
        try:
            return await memory.get_all(filters={"user_id": "alice"}, top_k=100)
        finally:
            await memory.close()

    out = asyncio.run(run())
    _held(out["gnomon"], len(out["results"]))


def _letta() -> tuple[Any, Any]:
    from letta_client import Letta

    from gnomon.adapters.fakes.letta import FakeLettaServer

    server = FakeLettaServer()
    letta = Letta(
        base_url="http://letta.local",
        max_retries=0,
        http_client=httpx.Client(transport=server.transport()),
    )
    return server, letta


def test_letta_blocks_and_passages_quote_at_most_max_items(wall: Firewall) -> None:
    from gnomon.adapters.letta import GuardedLetta

    server, letta = _letta()
    agent = server.add_agent(blocks={f"notes{i}": t for i, t in enumerate(TEXTS)})
    archive = letta.archives.create(name="shared")
    for text in TEXTS:  # around the firewall
        letta.archives.passages.create(archive.id, text=text)
    with wall.session(project="shop", actor="coder", user="alice") as session:
        client = GuardedLetta(letta, wall, session=session, policy=SMALL)
        blocks = client.agents.blocks.list(agent)
        hits = client.passages.search(query="ticket", archive_id=archive.id, limit=100)
    assert all(b.value.startswith("<quoted-data ") for b in blocks.items)
    _held(blocks.gnomon, len(blocks.items))
    _held(hits.gnomon, len(hits))


def test_zep_thread_messages_quote_at_most_max_items(wall: Firewall) -> None:
    from zep_cloud import AddMessage

    from gnomon.adapters.fakes.zep import FakeZepServer
    from gnomon.adapters.zep import GuardedZep

    raw, _graph, thread = served_client(FakeZepServer().transport())
    raw.thread.add_messages(thread, messages=[AddMessage(role="tool", content=t) for t in TEXTS])
    with wall.session(project="shop", actor="coder", user="alice") as session:
        zep = GuardedZep(raw, wall, session=session, policy=SMALL)
        page = zep.thread.list_messages(thread, page_size=100)
    _held(page.gnomon, len(page.items))


def test_legacy_zep_messages_quote_at_most_max_items(wall: Firewall) -> None:
    from zep_python.types import Message

    from gnomon.adapters.fakes.zep_legacy import FakeLegacyZepServer
    from gnomon.adapters.zep_legacy import GuardedLegacyZep

    server = FakeLegacyZepServer()
    raw = served_legacy_client(server.transport())
    raw.memory.add_session(session_id="s", user_id="alice")
    raw.memory.add("s", messages=[Message(role="x", role_type="tool", content=t) for t in TEXTS])
    zep = GuardedLegacyZep(raw, wall, project="shop", actor="coder", user="alice", policy=SMALL)
    try:
        listed = zep.memory.get_session_messages("s", limit=100)
    finally:
        zep.close()
    _held(listed.gnomon, len(listed.messages))


def test_a_zep_context_blob_quotes_at_most_max_items(wall: Firewall) -> None:
    """The rebuilt context blob's QUOTED section is one read: at most ``max_items`` lines,
    edges and nodes together, and the response's report counts the rest."""
    from gnomon.adapters.zep import GuardedZep

    small = ASSISTANT.model_copy(
        update={"quote": ASSISTANT.quote.model_copy(update={"max_items": 3})}
    )
    from gnomon.adapters.fakes.zep import FakeZepServer

    raw, graph, _thread = served_client(FakeZepServer().transport())
    for i in range(8):  # around the firewall: each sentence an edge Zep extracts
        raw.graph.episode.add(graph, data=f"Ticket {i} review is ready. Ticket {i} owner is Bo.")
    with wall.session(project="shop", actor="coder", user="alice") as session:
        zep = GuardedZep(raw, wall, session=session, policy=small)
        ctx = zep.graph.get_context(graph, query="ticket review owner", include_results=True)
    _facts, quoted = ctx.context.split("<QUOTED>")
    assert len([line for line in quoted.splitlines() if line.startswith("  - ")]) == 3
    assert ctx.gnomon["quoted"] == 3 and ctx.gnomon["reasons"].get("quote_cap", 0) >= 1


def test_the_drop_in_preset_caps_quotes_at_one_default_page() -> None:
    """The preset keeps a cap, at mem0's default page (100): a default read is not cut short,
    a read asking for more is."""
    assert ASSISTANT.quote.enabled and ASSISTANT.quote.max_items == 100
