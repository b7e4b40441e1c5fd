"""Read-path boundary (issue 28): an item whose binding was deleted is never screened as live.

The user deletes her fact through the firewall (its binding becomes ``deleted``). The attacker,
with access to the raw store, puts the item back under the same id with the same text (or the
store's delete was never durable), so the store serves it again and its hash still matches.
The delete also hides the belief; here the user later restores the belief (not the store item),
so the policy would admit it. The promise: the adapter's read path still drops the item ("binding is
deleted"). The FLIP blinds the one check (the binding-state test in the guard's verdict) and the
deleted item is shown to the agent again.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gnomon import firewall
from gnomon.adapters import guard as guard_module
from gnomon.adapters.local import GuardedLocalMemory, LocalMemory
from gnomon.firewall import Origin
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.states import Axis, RetrievalStatus
from tests.attested import attested

FACT = "Alice prefers tea over coffee."


def _deleted_then_restored() -> tuple[firewall.Firewall, GuardedLocalMemory, str]:
    wall = firewall.open("memory://")
    raw = LocalMemory()
    memory = GuardedLocalMemory(
        raw, wall, project="shop", actor="coder", user="alice", policy="default"
    )
    alice = attested(wall, Origin.user("alice"))
    (row,) = memory.add(FACT, user_id="alice", gnomon_origin=alice)["results"]
    ident = str(row["id"])
    assert [h["id"] for h in memory.search("tea", filters={"user_id": "alice"})["results"]] == [
        ident
    ]  # the other side: a live binding is shown
    saved: dict[str, Any] = dict(raw._items[ident])
    memory.delete(ident, gnomon_origin=alice)
    (binding,) = wall.store.bindings_by_store_id(memory.gnomon.store, [ident]).values()
    assert binding.state == BindingState.DELETED
    # the delete also hid the belief; the user later restores the belief itself (not the store
    # item), so the binding's state is the one thing between the item and the agent
    grant = wall.grant("user", "alice", beliefs=[binding.belief_id])
    restored = wall.transition(
        binding.belief_id,
        [Move(Axis.RETRIEVAL, RetrievalStatus.NORMAL)],
        reason="alice wants the fact back in the firewall's memory",
        grant=grant,
    )
    assert restored.retrieval_status == RetrievalStatus.NORMAL
    raw._items[ident] = saved  # the attack: the raw store serves the deleted item again
    raw._index(ident, FACT)
    return wall, memory, ident


def _shown(memory: GuardedLocalMemory) -> list[str]:
    return [h["id"] for h in memory.search("tea", filters={"user_id": "alice"})["results"]]


def test_an_item_whose_binding_was_deleted_is_dropped_on_read() -> None:
    _, memory, ident = _deleted_then_restored()
    assert ident not in _shown(memory)
    (screened,) = memory.gnomon.search("tea", scope={"user_id": "alice"})
    assert not screened.passed and screened.note == "binding is deleted"


def test_flip_without_the_binding_state_check_the_deleted_item_is_live(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, memory, ident = _deleted_then_restored()
    blind = SimpleNamespace(
        PENDING=BindingState.PENDING,
        FAILED=BindingState.FAILED,
        DELETED=object(),
        WRITTEN=BindingState.WRITTEN,
        DRIFTED=BindingState.DRIFTED,
    )
    monkeypatch.setattr(guard_module, "BindingState", blind)
    assert ident in _shown(memory)  # the attack succeeds: the deleted fact is shown again
