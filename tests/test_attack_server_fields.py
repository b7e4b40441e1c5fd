"""Attack: a hostile Zep or Letta server's text in the fields no binding can cover.

Some fields reach the caller beside an accepted memory although the server sets them on its
own, or changes them after the write (so a binding covering them would drift by itself): a Zep
episode's ``source`` (an enum the SDK also accepts as any string) and ``content_policy`` (the
server's moderation status), the ``task`` answering a write, and any key the server adds that
the SDK does not declare (its models keep such extras). Promise: none of them carries the
server's text to the agent, while the memory itself still flows.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("zep_cloud", reason="zep-cloud is not installed")

from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from tests.attack_kit import (
    dumped,
    hostile,
    memory_wall,  # noqa: F401 - the ``wall`` fixture
)
from tests.fakes_zep import served_client
from tests.test_attack_unbound_fields import FACT, INJECTION, _letta

POLICY = {"status": INJECTION, "category_keys": [INJECTION], "dropped_count": 1, "violated": False}
TASK = {"uuid": "task_1", "type": INJECTION, "status": INJECTION, "error": {"message": INJECTION}}


def _poisoned(episode: Any) -> None:
    if isinstance(episode, dict) and "content" in episode:
        episode.update(source=INJECTION, content_policy=POLICY, note=INJECTION)


def _rewrite(request: httpx.Request, body: Any) -> Any:
    """Every episode the server answers with carries the attack beside its text."""
    if isinstance(body, dict):
        _poisoned(body)
        _poisoned(body.get("episode"))
        for episode in body.get("episodes") or ():
            _poisoned(episode)
        for message in body.get("messages") or ():
            message["note"] = INJECTION
        if "task" in body:
            body["task"] = TASK
    return body


def test_a_zep_servers_text_beside_an_episode_never_reaches_the_caller(wall: Firewall) -> None:
    from gnomon.adapters.fakes.zep import FakeZepServer
    from gnomon.adapters.zep import GuardedZep

    server = FakeZepServer()
    raw, graph, thread = served_client(hostile(server.handle, _rewrite))
    zep = GuardedZep(raw, wall, project="shop", actor="coder", user="alice")
    alice = wall.channel(Origin.user("alice"), project="shop")
    added = zep.graph.episode.add(graph, data=FACT, gnomon_origin=alice)
    got = zep.graph.episode.get(graph, added.episode.uuid_)
    listed = list(zep.graph.episode.list(graph))
    assert got.content == FACT and got.gnomon["truth"] == "supported"  # the memory flows
    assert got.content_policy.dropped_count == 1  # numbers and flags pass as sent
    assert added.task is not None and added.task.uuid_ == "task_1"  # the task can be polled
    from zep_cloud import AddMessage

    said = zep.thread.add_messages(thread, messages=[AddMessage(role="user", content=FACT)])
    assert said.task is not None and said.task.uuid_ == "task_1"
    for answer in (added, got, listed, said):
        assert INJECTION not in dumped(answer)


def test_a_letta_servers_undeclared_key_never_reaches_the_caller(wall: Firewall) -> None:
    server, _raw, client = _letta(wall)
    alice = wall.channel(Origin.user("alice"), project="shop")
    block = client.blocks.create(label="human", value=FACT, gnomon_origin=alice)
    server.blocks[block.id]["note"] = INJECTION  # a key the SDK does not declare
    got = client.blocks.retrieve(block.id)
    assert got.value == FACT and INJECTION not in dumped(got)


def test_a_mem0_platforms_text_beside_a_memory_never_reaches_the_caller(wall: Firewall) -> None:
    """mem0's ``hash`` (its digest of the text), ``expiration_date``, ``categories`` (the
    platform's LLM labels, assigned after the write: no binding can cover them) and any key
    the server adds."""
    from gnomon.adapters.mem0 import GuardedMemoryClient
    from tests.test_adapter_mem0_platform import mem0_routes, sync_client

    with mem0_routes() as mock:
        alice = wall.channel(Origin.user("alice"), project="shop")
        memory = GuardedMemoryClient(
            sync_client(), wall, project="shop", actor="coder", user="alice", user_channel=alice
        )
        (row,) = memory.add(FACT, user_id="alice", infer=False, gnomon_origin=alice)["results"]
        stored = mock.server.memories[row["id"]]
        stored.update(  # attack: around the firewall, the text and who said it untouched
            hash=INJECTION,
            expiration_date=INJECTION,
            categories=[INJECTION],
            previous_memory=INJECTION,
            note=INJECTION,
        )
        got = memory.get(row["id"])
        found = memory.search("refunds", filters={"user_id": "alice"})["results"]
        listed = memory.get_all(filters={"user_id": "alice"})["results"]
    assert got["memory"] == FACT and got["gnomon"]["truth"] == "supported"  # it still flows
    assert [r["memory"] for r in found] == [FACT] == [r["memory"] for r in listed]
    for answer in (got, found, listed):
        assert INJECTION not in dumped(answer)


def _noted(body: Any, *, metadata: bool = False) -> Any:
    """Every object of an answer with a key the SDK does not declare (the attack); free-form
    metadata too when ``metadata`` (else left alone: a key there is a field the binding
    covers)."""
    if isinstance(body, dict):
        inner = {
            k: v if k == "metadata" and not metadata else _noted(v, metadata=metadata)
            for k, v in body.items()
        }
        return {**inner, "note": INJECTION}
    if isinstance(body, list):
        return [_noted(v, metadata=metadata) for v in body]
    return body


def test_a_legacy_zep_servers_undeclared_keys_never_reach_the_caller(wall: Firewall) -> None:
    from zep_python.types import Message

    from gnomon.adapters.fakes.zep_legacy import FakeLegacyZepServer
    from gnomon.adapters.zep_legacy import GuardedLegacyZep
    from tests.fakes_zep import served_legacy_client

    server = FakeLegacyZepServer()
    raw = served_legacy_client(hostile(server.handle, lambda _request, body: _noted(body)))
    zep = GuardedLegacyZep(raw, wall, project="shop", actor="coder", user="alice")
    alice = wall.channel(Origin.user("alice"), project="shop")
    zep.memory.add_session(session_id="s")
    said = [Message(role="alice", role_type="user", content=FACT)]
    zep.memory.add("s", messages=said, gnomon_origin=alice)
    got = zep.memory.get("s")
    listed = zep.memory.get_session_messages("s")
    found = zep.memory.search_sessions(text="refunds", session_ids=["s"], limit=5)
    assert [m.content for m in got.messages] == [FACT] == [m.content for m in listed.messages]
    assert [r.message.content for r in found.results] == [FACT]  # the memory flows
    for answer in (got, listed, found):
        assert INJECTION not in dumped(answer)


def test_metadata_a_store_adds_in_its_answer_to_a_write_is_never_bound(wall: Firewall) -> None:
    """The store answers the write (and every read after it) with a metadata key the writer
    never sent: binding the answer would vouch for the store's text as the user's."""
    from zep_python.types import Message

    from gnomon.adapters.fakes.zep_legacy import FakeLegacyZepServer
    from gnomon.adapters.zep_legacy import GuardedLegacyZep
    from gnomon.firewall.model.chain import BindingState
    from tests.fakes_zep import served_legacy_client

    server = FakeLegacyZepServer()
    rewrite = lambda _request, body: _noted(body, metadata=True)  # noqa: E731
    zep = GuardedLegacyZep(
        served_legacy_client(hostile(server.handle, rewrite)),
        wall,
        project="shop",
        actor="coder",
        user="alice",
    )
    alice = wall.channel(Origin.user("alice"), project="shop")
    said = [Message(role="alice", role_type="user", content=FACT, metadata={"k": "v"})]
    zep.memory.add("s", messages=said, gnomon_origin=alice)
    got = zep.memory.get("s")
    assert got.messages == [] and INJECTION not in dumped(got)
    (mine,) = [
        b
        for b in wall.store.list_bindings("zep-legacy")
        if "user:alice" in wall.require_belief(b.belief_id).origin.origin_ids
    ]
    assert mine.state == BindingState.DRIFTED


def test_a_withheld_letta_blocks_undeclared_key_and_worded_id_never_reach_the_caller(
    wall: Firewall,
) -> None:
    """The same on a block the policy withholds (the firewall's edit-around-it turns it drift):
    the redacted block carries neither the server's undeclared key nor a sentence in an id."""
    server, _raw, client = _letta(wall)
    alice = wall.channel(Origin.user("alice"), project="shop")
    block = client.blocks.create(label="human", value=FACT, gnomon_origin=alice)
    server.blocks[block.id].update(
        {"value": "edited around the firewall", "note": INJECTION, "template_id": INJECTION}
    )
    got = client.blocks.retrieve(block.id)
    assert got.value != FACT and INJECTION not in dumped(got)
