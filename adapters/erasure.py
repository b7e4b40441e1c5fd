"""Erasing from a wrapped memory store (mem0, Letta, Zep) through its own SDK, then checking.

After :meth:`firewall.Firewall.forget` erased beliefs from Gnomon's store and log, the copies a
wrapped store holds must go too. :func:`erase_in_store` deletes every item bound to those
beliefs through the store's SDK (mem0 ``Memory.delete``, Letta passage delete, Zep episode
delete: the backend's ``delete``), then reads each one back: an item the store still returns,
whatever its delete call answered, is reported in ``remaining`` (a store that reports success
after a partial delete is a known failure), and a certificate that lists it never verifies
(:func:`firewall.audit.erasure_certificate.check_against`)::

    done = wall.forget(ErasureTarget(TargetKind.ORIGIN, "user:alice"), grant=grant)
    wrapped = erase_in_store(memory.gnomon, done.beliefs)
    assert not wrapped.remaining
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress

from gnomon.adapters.adapter import Adapter
from gnomon.adapters.errors import AdapterError
from gnomon.firewall.audit.erasure_certificate import WrappedErasure


def erase_in_store(adapter: Adapter, belief_ids: Sequence[str]) -> WrappedErasure:
    """Delete the items of ``adapter``'s store bound to ``belief_ids``, and check none remains."""
    backend = adapter._backend
    bindings = adapter._guard.wall.store.bindings_for_beliefs(list(belief_ids))
    ids = sorted({b.store_id for b in bindings if b.store == backend.name and b.store_id})
    asked: list[str] = []
    for store_id in ids:
        with suppress(AdapterError):  # the read-back below decides whether it is gone
            backend.delete(store_id)
        asked.append(store_id)
    remaining = []
    for store_id in asked:
        try:
            still = backend.get(store_id) is not None
        except AdapterError:
            still = True  # cannot tell: never certified as erased
        if still:
            remaining.append(store_id)
    deleted = tuple(i for i in asked if i not in remaining)
    return WrappedErasure(store=backend.name, deleted=deleted, remaining=tuple(remaining))


__all__ = ["erase_in_store"]
