"""Attack: a store edit changes who said a Zep message, or its metadata.

A message's ``role``/``name`` (v2: ``role``/``role_type``) and metadata reach the caller next to
its content: a store edit that turns an agent's note into the user's words, or a user's message
into the admin's, changes what the model believes about it. The promise: the binding's hash
covers them, so an edit around the firewall is drift (the memory turns suspicious and is
withheld), while a binding recorded before they were covered still verifies (its text matched)
and is upgraded on the record, after which an edit is drift too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gnomon import firewall
from gnomon.adapters.errors import StoreCallError
from gnomon.adapters.guard import EARLIER_HASH_UPGRADE
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState, content_hash
from gnomon.firewall.model.states import SecurityStatus
from tests.fakes_zep import served_client, served_legacy_client

FACT = "Deploys go through ArgoCD."


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


def _zep(wall: Firewall) -> tuple[Any, Any, str, str]:
    from zep_cloud import AddMessage

    from gnomon.adapters.fakes.zep import FakeZepServer
    from gnomon.adapters.zep import GuardedZep

    server = FakeZepServer()
    raw, graph, thread = served_client(server.transport())
    alice = wall.channel(Origin.user("alice"), project="shop")
    zep = GuardedZep(raw, wall, project="shop", actor="coder", user="alice", user_channel=alice)
    zep.thread.add_messages(
        thread, messages=[AddMessage(role="user", name="Alice", content=FACT, metadata={"k": "v"})]
    )
    return server, zep, thread, graph


def _read(zep: Any, thread: str, graph: str) -> tuple[list[str], list[str]]:
    messages = [m.content for m in zep.thread.list_messages(thread).items]
    episodes = [e.content for e in zep.graph.episode.list(graph).items]
    return messages, episodes


def test_the_written_message_and_its_episode_verify(wall: Firewall) -> None:
    _server, zep, thread, graph = _zep(wall)
    assert _read(zep, thread, graph) == ([FACT], [FACT])
    (binding,) = wall.store.list_bindings("zep")
    assert binding.state == BindingState.WRITTEN and binding.content_hash != content_hash(FACT)


@pytest.mark.parametrize(
    "edit",
    [
        {"name": "Admin"},
        {"role": "system"},
        {"metadata": {"k": "v", "approved_by": "security-team"}},
    ],
)
def test_a_zep_message_speaker_or_metadata_edit_is_drift(
    wall: Firewall, edit: dict[str, Any]
) -> None:
    server, zep, thread, _graph = _zep(wall)
    server.messages[thread][0].update(edit)  # around the firewall
    messages = zep.thread.list_messages(thread)
    assert messages.items == [] and messages.gnomon["withheld"] == 1
    (binding,) = wall.store.list_bindings("zep")
    assert binding.state == BindingState.DRIFTED
    assert wall.require_belief(binding.belief_id).security_status == SecurityStatus.SUSPICIOUS


def test_a_binding_from_before_still_verifies_then_an_edit_is_drift(wall: Firewall) -> None:
    """A binding recorded when the hash covered the text alone (simulated: moved back to it)."""
    server, zep, thread, graph = _zep(wall)
    guard = zep.gnomon._guard
    (binding,) = wall.store.list_bindings("zep")
    guard.rebind(binding, content_hash(FACT), "as recorded before name/metadata were covered")
    assert _read(zep, thread, graph) == ([FACT], [FACT])  # still verifies ...
    (upgraded,) = wall.store.list_bindings("zep")
    assert upgraded.state == BindingState.WRITTEN and upgraded.detail == EARLIER_HASH_UPGRADE
    assert upgraded.content_hash == binding.content_hash  # ... and now covers the fields
    server.messages[thread][0]["name"] = "Admin"
    assert zep.thread.list_messages(thread).items == []


def _legacy(wall: Firewall) -> tuple[Any, Any]:
    from zep_python.types import Message

    from gnomon.adapters.fakes.zep_legacy import FakeLegacyZepServer
    from gnomon.adapters.zep_legacy import GuardedLegacyZep

    server = FakeLegacyZepServer()
    raw = served_legacy_client(server.transport())
    raw.memory.add_session(session_id="s", user_id="alice")
    alice = wall.channel(Origin.user("alice"), project="shop")
    zep = GuardedLegacyZep(
        raw, wall, project="shop", actor="coder", user="alice", user_channel=alice
    )
    zep.memory.add(
        "s", messages=[Message(role="alice", role_type="user", content=FACT, metadata={"k": 1})]
    )
    return server, zep


@pytest.mark.parametrize(
    "edit", [{"role": "admin"}, {"role_type": "system"}, {"metadata": {"k": 1, "ok": True}}]
)
def test_a_legacy_zep_message_speaker_or_metadata_edit_is_drift(
    wall: Firewall, edit: dict[str, Any]
) -> None:
    server, zep = _legacy(wall)
    assert [m.content for m in zep.memory.get_session_messages("s").messages] == [FACT]
    server.messages["s"][0].update(edit)  # around the firewall
    listed = zep.memory.get_session_messages("s")
    assert listed.messages == [] and listed.gnomon["withheld"] == 1
    assert [m.content for m in zep.memory.get("s").messages or []] == []
    ident = f"s/{server.messages['s'][0]['uuid']}"
    binding = wall.store.bindings_by_store_id("zep-legacy", [ident])[ident]
    assert binding.state == BindingState.DRIFTED


def test_a_legacy_binding_from_before_still_verifies(wall: Firewall) -> None:
    server, zep = _legacy(wall)
    (binding,) = wall.store.list_bindings("zep-legacy")
    zep.gnomon._guard.rebind(binding, content_hash(FACT), "as recorded before")
    assert [m.content for m in zep.memory.get_session_messages("s").messages] == [FACT]
    (upgraded,) = wall.store.list_bindings("zep-legacy")
    assert upgraded.detail == EARLIER_HASH_UPGRADE
    server.messages["s"][0]["role"] = "admin"
    assert zep.memory.get_session_messages("s").messages == []


def test_the_guarded_client_refuses_to_edit_a_bound_legacy_messages_metadata(
    wall: Firewall,
) -> None:
    server, zep = _legacy(wall)
    uuid = server.messages["s"][0]["uuid"]
    with pytest.raises(StoreCallError, match="not edited in place"):
        zep.memory.update_message_metadata("s", uuid, metadata={"approved": True})
    assert server.messages["s"][0]["metadata"].get("approved") is None
    assert [m.content for m in zep.memory.get_session_messages("s").messages] == [FACT]
