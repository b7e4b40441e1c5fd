"""A bulk delete that cannot spill, for stores whose SDK has none (Letta, Zep).

Letta deletes a passage or a block by its id, and Zep an episode; neither SDK deletes "every
memory of this scope" short of deleting the container itself (a Letta agent or archive, a Zep
graph, user or thread, which the guarded clients refuse). :func:`delete_all` gives every
adapter (``client.gnomon.delete_all(scope)``) the bulk delete users ask for, with the promises
of mem0's guarded ``delete_all``:

* an unscoped call, or one with an empty or wildcard (``*``) value, is refused
  (:class:`~adapters.errors.BypassRefusedError`) before any I/O;
* only items bound to beliefs the session may revise (its project and user) are deleted: an
  item another tenant wrote into a shared agent or graph, or one written around the firewall,
  is left where it is and reported in ``kept``;
* a supported belief the delete's origin may not retire refuses the whole call, store
  untouched (as ``delete``);
* the scope is read back afterwards: an item it still returns raises
  :class:`~adapters.errors.PartialDeleteError` instead of being reported deleted; the answer
  lists exactly the ids deleted.

>>> from gnomon import firewall
>>> from gnomon.adapters.local import GuardedLocalMemory, LocalMemory
>>> wall = firewall.open("memory://")
>>> memory = GuardedLocalMemory(LocalMemory(), wall, project="shop", actor="coder")
>>> item, _ = memory.gnomon.write("deploys go through ArgoCD", scope={"user_id": "u"})
>>> memory.gnomon.delete_all({"user_id": "u"}).deleted == (item.store_id,)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gnomon.adapters.errors import AdapterError, BypassRefusedError, PartialDeleteError
from gnomon.firewall.gate.contested import in_scope

if TYPE_CHECKING:
    from gnomon.adapters.adapter import Adapter
    from gnomon.firewall.host.channels import WriteOrigin

CALL = "delete_all"
#: "Any value" in a store's filters: never a bulk delete's scope.
WILDCARD = "*"


@dataclass(frozen=True)
class BulkDeleted:
    """What :func:`delete_all` deleted (read back: gone), and what it left in the scope."""

    store: str
    scope: dict[str, str]
    deleted: tuple[str, ...]
    kept: tuple[str, ...]


def checked_scope(
    store: str,
    scope: Mapping[str, str],
    *,
    hint: str = "pass the scope to delete, e.g. {'agent_id': ...} or {'graph_uuid': ...}",
) -> dict[str, str]:
    """``scope`` if it names one container; refused (before any I/O) when it could spill: no
    scope at all, or an empty or wildcard value. ``hint`` says how to scope this store's call."""
    given = {str(k): v for k, v in dict(scope).items()}
    if not given:
        raise BypassRefusedError(
            "delete_all() without a scope would delete every memory the store holds, "
            "every user's memories",
            store=store,
            call=CALL,
            hint=hint,
        )
    loose = sorted(
        k for k, v in given.items() if not isinstance(v, str) or v.strip() in ("", WILDCARD)
    )
    if loose:
        raise BypassRefusedError(
            f"delete_all() scope {loose[0]}={given[loose[0]]!r} matches more than one "
            "container: it could delete other users' memories",
            store=store,
            call=CALL,
            hint=f"name the one {loose[0]} whose memories to delete",
        )
    return given


def delete_all(
    adapter: Adapter, scope: Mapping[str, str], *, origin: WriteOrigin | None = None
) -> BulkDeleted:
    """Delete the memories of ``scope`` this session may revise, and read the scope back (see
    the module docstring)."""
    guard, backend = adapter._guard, adapter._backend
    wanted = checked_scope(backend.name, scope)
    items = adapter.call("list", lambda: list(backend.walk(wanted)))
    ids = [i.store_id for i in items]
    bindings = guard.wall.store.bindings_by_store_id(backend.name, ids)
    beliefs = guard.wall.store.get_beliefs([b.belief_id for b in bindings.values()])
    session = guard.session
    own = [
        i
        for i in ids
        if i in bindings
        and (belief := beliefs.get(bindings[i].belief_id)) is not None
        and in_scope(belief, session.project, session.user)
    ]
    for store_id in own:  # refused as a whole, store untouched
        guard.check_delete(bindings[store_id], origin=origin, call=CALL)
    retired = [(i, b) for i in own if (b := guard.begin_delete(i, origin=origin, call=CALL))]
    for n, (store_id, _) in enumerate(retired):
        try:
            adapter.call("delete", lambda i=store_id: backend.delete(i))  # type: ignore[misc]
        except AdapterError as exc:
            for _, undone in retired[n:]:
                guard.fail_delete(undone, exc, CALL)
            raise
    left = {i.store_id for i in adapter.call("list", lambda: list(backend.walk(wanted)))}
    remaining = [i for i in own if i in left]
    if remaining:
        raise PartialDeleteError(
            f"the store reported the deletes done, but still returns {len(remaining)} of the "
            f"{len(own)} memories: {', '.join(remaining[:10])}",
            store=backend.name,
            call=CALL,
            remaining=remaining,
        )
    return BulkDeleted(
        store=backend.name,
        scope=wanted,
        deleted=tuple(own),
        kept=tuple(i for i in ids if i not in own),
    )


__all__ = ["CALL", "WILDCARD", "BulkDeleted", "checked_scope", "delete_all"]
