"""Attack: a Letta block's fields beside its value, from the store and from the agent.

A block reaches the caller (and the agent's core memory) with its label, description,
``metadata`` and ``tags`` next to its value. Promises:

* a hostile store (or an edit around the firewall) that rewrites any of them after the write is
  drift: the block is withheld, its belief suspicious, the injected text nowhere in the answer;
* the agent cannot use an update *without* ``value=`` (description, label or metadata alone) to
  rewrite how a user's block is shown, nor to turn the user's memory suspicious: such an update
  is a revision of the block like any other, refused for a lower-integrity writer;
* nor to launder a block it was never shown: the revision keeps the label of what it revises.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("letta_client", reason="letta-client is not installed")

from gnomon.adapters.errors import ProtectedBeliefError, StoreCallError
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.states import SecurityStatus
from tests.attack_kit import (
    dumped,
    memory_wall,  # noqa: F401 - the ``wall`` fixture
)
from tests.test_attack_unbound_fields import FACT, INJECTION, _letta


def _user_block(wall: Firewall) -> tuple[Any, Any, Any]:
    server, _raw, client = _letta(wall)
    alice = wall.channel(Origin.user("alice"), project="shop")
    block = client.blocks.create(
        label="human", value=FACT, metadata={"team": "billing"}, gnomon_origin=alice
    )
    assert client.blocks.retrieve(block.id).gnomon["truth"] == "supported"
    return server, client, block


@pytest.mark.parametrize(
    "edit", [{"metadata": {"team": INJECTION}}, {"tags": [INJECTION]}, {"metadata": None}]
)
def test_a_blocks_metadata_or_tags_edited_in_the_store_is_drift(
    wall: Firewall, edit: dict[str, Any]
) -> None:
    server, client, block = _user_block(wall)
    server.blocks[block.id].update(edit)  # attack: around the firewall, the value untouched
    got = client.blocks.retrieve(block.id)
    assert got.value == "" and got.gnomon["withheld"] and INJECTION not in dumped(got)
    assert list(client.blocks.list()) == []
    (binding,) = wall.store.list_bindings("letta")
    assert binding.state == BindingState.DRIFTED
    assert wall.require_belief(binding.belief_id).security_status == SecurityStatus.SUSPICIOUS


@pytest.mark.parametrize(
    "change", [{"description": INJECTION}, {"label": "system"}, {"metadata": {"team": "x"}}]
)
def test_the_agent_cannot_restyle_a_users_block_without_a_value(
    wall: Firewall, change: dict[str, Any]
) -> None:
    server, client, block = _user_block(wall)
    before = dict(server.blocks[block.id])
    with pytest.raises(ProtectedBeliefError):
        client.blocks.update(block.id, **change)  # attack: the agent, no value=
    assert server.blocks[block.id] == before  # the store was not touched
    got = client.blocks.retrieve(block.id)
    assert got.value == FACT and got.gnomon["truth"] == "supported"
    written = [b for b in wall.store.list_bindings("letta") if b.state == BindingState.WRITTEN]
    assert [wall.require_belief(b.belief_id).security_status for b in written] == [
        SecurityStatus.CLEAN
    ]


def test_the_user_restyles_a_block_without_a_value_and_it_stays_trusted(wall: Firewall) -> None:
    _server, client, block = _user_block(wall)
    alice = wall.channel(Origin.user("alice"), project="shop")
    client.blocks.update(block.id, description="Alice, the customer", gnomon_origin=alice)
    got = client.blocks.retrieve(block.id)
    assert (got.value, got.description) == (FACT, "Alice, the customer")
    assert got.gnomon["truth"] == "supported"


def test_the_agent_cannot_launder_a_block_it_was_never_trusted_with(wall: Firewall) -> None:
    server, _raw, client = _letta(wall)
    planted = server._new_block({"label": "human", "value": INJECTION})  # around the firewall
    assert client.blocks.retrieve(planted["id"]).gnomon["quoted"]  # unverified: quoted data
    with contextlib.suppress(StoreCallError):  # refusing is as good as keeping its label
        client.blocks.update(planted["id"], description="verified notes")  # attack: no value=
    got = client.blocks.retrieve(planted["id"])
    assert got.gnomon.get("quoted") or got.gnomon.get("withheld")
    assert got.gnomon.get("integrity", "untrusted") == "untrusted"
