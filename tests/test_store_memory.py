"""The store contract against the ``memory://`` backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore
from tests.store_contract import StoreContract


class TestMemoryStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return MemoryStore()

    def tamper_body(self, store: Store, seq: int, body: bytes) -> None:
        assert isinstance(store, MemoryStore)
        events = store._events
        events[seq - 1] = dataclasses.replace(events[seq - 1], body=body)
