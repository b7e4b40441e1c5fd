"""The adapter contract over the built-in local store, plus its SDK-shaped wrapper."""

from __future__ import annotations

import pytest

from gnomon import firewall
from gnomon.adapters.errors import BypassRefusedError
from gnomon.adapters.local import GuardedLocalMemory, LocalMemory
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from tests.adapter_contract import FACT, AdapterContract, Harness
from tests.attested import attested


class TestLocalAdapter(AdapterContract):
    def make_harness(self, wall: Firewall) -> Harness:
        raw = LocalMemory()
        memory = GuardedLocalMemory(
            raw, wall, project="shop", actor="coder", user="alice", policy="default"
        )

        def raw_write(text: str) -> str:
            return str(raw.add(text, user_id="alice")["results"][0]["id"])

        def break_writes() -> None:
            def fail(*args: object, **kwargs: object) -> None:
                raise ConnectionError("local store is down")

            raw.add = fail  # type: ignore[method-assign,assignment]

        return Harness(
            memory.gnomon,
            {"user_id": "alice"},
            raw_write=raw_write,
            raw_edit=lambda i, t: raw.update(i, t) and None,
            raw_delete=lambda i: raw.delete(i) and None,
            break_writes=break_writes,
        )


def test_sdk_shapes_and_annotation() -> None:
    wall = firewall.open("memory://")
    raw = LocalMemory()
    memory = GuardedLocalMemory(
        raw, wall, project="shop", actor="coder", user="alice", policy="default"
    )
    added = memory.add(FACT, user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    (row,) = added["results"]
    assert row["event"] == "ADD" and row["memory"] == FACT
    found = memory.search("tea", filters={"user_id": "alice"})
    (hit,) = found["results"]
    assert hit["id"] == row["id"] and hit["gnomon"]["truth"] == "supported"
    assert memory.get(row["id"])["gnomon"]["belief_id"] == hit["gnomon"]["belief_id"]
    assert [r["id"] for r in memory.get_all(filters={"user_id": "alice"})["results"]] == [row["id"]]
    alice = attested(wall, Origin.user("alice"))  # the user revises her own fact
    assert memory.update(row["id"], "Alice prefers coffee.", gnomon_origin=alice) == {
        "message": "Memory updated successfully!"
    }
    assert memory.delete(row["id"], gnomon_origin=alice) == {
        "message": "Memory deleted successfully!"
    }


def test_unguarded_methods_are_refused() -> None:
    wall = firewall.open("memory://")
    memory = GuardedLocalMemory(LocalMemory(), wall, project="shop", policy="default")
    with pytest.raises(BypassRefusedError, match="history"):
        memory.history("loc-1")
    with pytest.raises(BypassRefusedError, match="reset"):
        memory.reset  # noqa: B018
