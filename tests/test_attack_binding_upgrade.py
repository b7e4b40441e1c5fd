"""Attack: a field added around the firewall passing as a binding from an earlier adapter.

An adapter that starts covering more fields (:attr:`adapters.base.StoreItem.earlier_hashes`)
lets a binding holding an earlier hash verify once and move to the current one. When those
earlier hashes are made by the same function as the current one, a memory written *today*
with none of the newer fields (a Letta passage without tags, a Zep episode without a source
description) has a hash equal to the "text alone" earlier hash: a hostile store that adds the
field afterwards gets its edit accepted as an upgrade, bound and returned as trusted context.
Promise: a binding the current adapter wrote never takes the upgrade path; an added field is
drift (withheld, belief suspicious), while a binding truly recorded before still verifies. (The
Zep attack is ``test_a_zep_episodes_source_description_edited_in_the_store_is_drift[False]``.)
"""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("letta_client", reason="letta-client is not installed")

from gnomon.adapters.base import legacy_item_hash
from gnomon.adapters.guard import EARLIER_HASH_UPGRADE
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from tests.attack_kit import (
    drifted,
    dumped,
    memory_wall,  # noqa: F401 - the ``wall`` fixture
)
from tests.test_attack_unbound_fields import FACT, INJECTION, _letta


@pytest.mark.parametrize(
    "edit", [{"tags": ["approved-by-security"]}, {"metadata": {"n": INJECTION}}]
)
def test_a_field_added_to_a_bare_letta_passage_is_drift_not_an_upgrade(
    wall: Firewall, edit: dict[str, Any]
) -> None:
    server, _raw, client = _letta(wall)
    agent = server.add_agent()
    alice = wall.channel(Origin.user("alice"), project="shop")
    (made,) = client.agents.passages.create(agent, text=FACT, gnomon_origin=alice)  # no tags
    assert [p.gnomon["truth"] for p in client.agents.passages.list(agent)] == ["supported"]
    server.passages[made.id].update(edit)  # attack: around the firewall
    listed = list(client.agents.passages.list(agent))
    assert listed == [] and INJECTION not in dumped([dumped(p) for p in listed])
    drifted(wall, "letta")


def test_a_binding_truly_from_before_still_upgrades_once(wall: Firewall) -> None:
    """The flip side: a text-only hash recorded by the earlier adapter verifies and moves."""
    server, _raw, client = _letta(wall)
    agent = server.add_agent()
    alice = wall.channel(Origin.user("alice"), project="shop")
    (made,) = client.agents.passages.create(agent, text=FACT, tags=["refunds"], gnomon_origin=alice)
    (binding,) = wall.store.list_bindings("letta")
    client.gnomon._guard.rebind(binding, legacy_item_hash(FACT), "as recorded before")
    assert [p.text for p in client.agents.passages.list(agent)] == [FACT]
    (upgraded,) = wall.store.list_bindings("letta")
    assert upgraded.detail == EARLIER_HASH_UPGRADE and upgraded.content_hash == binding.content_hash
    server.passages[made.id]["tags"] = ["approved-by-security"]  # now covered
    assert list(client.agents.passages.list(agent)) == []
    drifted(wall, "letta")


def test_sync_reports_an_upgraded_binding_as_upgraded_notdrifted(wall: Firewall) -> None:
    """Sync and the read path agree: a binding from before is upgraded by both, never
    reported as an edit around the firewall (which would send the host chasing a non-event)."""
    server, _raw, client = _letta(wall)
    agent = server.add_agent()
    alice = wall.channel(Origin.user("alice"), project="shop")
    client.agents.passages.create(agent, text=FACT, tags=["refunds"], gnomon_origin=alice)
    (binding,) = wall.store.list_bindings("letta")
    client.gnomon._guard.rebind(binding, legacy_item_hash(FACT), "as recorded before")
    report = client.gnomon.sync({"agent_id": agent})
    (upgraded,) = wall.store.list_bindings("letta")
    assert report.drifted == () and upgraded.detail == EARLIER_HASH_UPGRADE
