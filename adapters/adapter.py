"""The store-independent surface every guarded client exposes as ``.gnomon``.

An :class:`Adapter` is a :class:`~adapters.guard.Guard` driving a
:class:`~adapters.base.StoreBackend`: write, search, get, list, update and delete with the firewall
around each raw call, the audit path, and import / export / sync (:mod:`adapters.transfer`).
SDK-shaped wrappers (``GuardedMemory``…) translate their SDK's signatures onto it, and the one
adapter contract suite (``tests/adapter_contract.py``) runs against it for every store.

>>> from gnomon import firewall
>>> from gnomon.adapters.local import LocalMemory, GuardedLocalMemory
>>> wall = firewall.open("memory://")
>>> memory = GuardedLocalMemory(LocalMemory(), wall, project="shop", actor="coder")
>>> item, binding = memory.gnomon.write("deploys go through ArgoCD", scope={"user_id": "u"})
>>> binding.state.value, binding.store_id == item.store_id
('written', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from gnomon.adapters.base import StoreBackend, StoreItem, merged_metadata
from gnomon.adapters.errors import AdapterError, StoreCallError
from gnomon.adapters.guard import AuditView, Guard, PendingWrite, Screened, fetch_size
from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.host.channels import WriteOrigin
from gnomon.firewall.model.arguments import checked_call
from gnomon.firewall.model.chain import StoreBinding
from gnomon.firewall.model.content import MAX_QUERY_CHARS, checked_text

if TYPE_CHECKING:
    from gnomon.adapters.bulk_delete import BulkDeleted

T = TypeVar("T")


class Adapter:
    """A guard over one backend. Build it through a guarded client, or directly."""

    def __init__(self, guard: Guard, backend: StoreBackend) -> None:
        self._guard = guard
        self._backend = backend

    @property
    def store(self) -> str:
        return self._backend.name

    # -- calls ------------------------------------------------------------------------------

    def call(self, call: str, fn: Callable[[], T]) -> T:
        """Run one raw call; anything the backend did not convert becomes a StoreCallError."""
        try:
            return fn()
        except AdapterError:
            raise
        except Exception as exc:
            raise StoreCallError(
                f"{type(exc).__name__}: {exc}", store=self.store, call=call
            ) from exc

    @checked_call
    def write(
        self,
        text: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        origin: WriteOrigin | None = None,
        derived_from: Sequence[str] | None = None,
        call: str = "add",
    ) -> tuple[StoreItem, StoreBinding]:
        """The write path: record, bind ``pending``, write through, bind ``written``/``failed``."""
        checked = merged_metadata(self.store, call, self._backend.limits, metadata)
        pending = self._guard.begin_write(text, checked, origin=origin, derived_from=derived_from)
        pending = replace(pending, rendered=self._backend.sent(pending.metadata, scope))
        item = self.write_through(pending, scope, call)
        return item, self._guard.confirm_write(pending, item.store_id, stored=item)

    def write_through(
        self, pending: PendingWrite, scope: Mapping[str, str], call: str
    ) -> StoreItem:
        try:
            return self.call(
                call, lambda: self._backend.write(pending.text, pending.metadata, scope)
            )
        except AdapterError as exc:
            self._guard.fail_write(pending, exc, call)
            raise

    @checked_call
    def search(self, query: str, *, scope: Mapping[str, str], k: int = 10) -> list[Screened]:
        """The store's search, screened: every hit with its verdict; a hit that failed the
        policy is withheld (:meth:`Screened.withheld`: no text, no belief). The store is asked
        for :func:`fetch_size` hits and the ``k`` shown are ranked trusted first, so untrusted
        look-alikes cannot crowd a trusted memory out; at most ``k`` are returned, those that
        passed first (every withheld one is in the recall's record)."""
        checked_text("query", query, limit=MAX_QUERY_CHARS)  # logged with the recall
        fetch = fetch_size(k)
        items = self.call("search", lambda: self._backend.search(query, limit=fetch, scope=scope))
        screened = self._guard.screen(items, query=query, k=k, limit=k)
        return [s.withheld() for s in screened[:k]]  # what passed first, then withheld ones

    def get(self, store_id: str) -> Screened | None:
        item = self.call("get", lambda: self._backend.get(store_id))
        if item is None:
            return None
        (screened,) = self._guard.screen([item], query=f"get {store_id}", k=1)
        return screened.withheld()

    def list_items(self, *, scope: Mapping[str, str], limit: int = 100) -> list[Screened]:
        page = self.call("list", lambda: self._backend.list_page(scope=scope, limit=limit))
        return [s.withheld() for s in self._guard.screen(page.items, query="list", k=limit)]

    def update(
        self,
        store_id: str,
        text: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        origin: WriteOrigin | None = None,
    ) -> StoreBinding:
        """A revision: the new text is a new belief (the agent's unless the host names the
        ``origin``) superseding the old one; a lower-integrity write aimed at a supported belief
        is refused (:class:`~adapters.errors.ProtectedBeliefError`, store untouched)."""
        checked = merged_metadata(self.store, "update", self._backend.limits, metadata)
        # what the item holds beside its text stays as its binding covered it
        current = self.call("get", lambda: self._backend.get(store_id))
        held = self._guard.held(current) if current is not None else None
        pending, _old = self._guard.begin_update(
            store_id, text, checked, origin=origin, rendered=held
        )
        try:
            replaced = self.call(
                "update",
                lambda: self._backend.update(
                    store_id, text=pending.text, metadata=pending.metadata
                ),
            )
        except AdapterError as exc:
            self._guard.fail_write(pending, exc, "update")
            raise
        # A store that cannot edit in place answers with the replacement item and its new id;
        # one that merges fields (mem0's metadata) answers with the item as it now stands.
        if replaced is None:
            return self._guard.confirm_write(pending, store_id)
        return self._guard.confirm_write(pending, replaced.store_id, stored=replaced, merged=True)

    def delete(self, store_id: str, *, origin: WriteOrigin | None = None) -> None:
        """A revision (binding ``deleted``, belief hidden), then the store's delete; a
        lower-integrity delete of a supported belief is refused, store untouched."""
        binding = self._guard.begin_delete(store_id, origin=origin)
        try:
            self.call("delete", lambda: self._backend.delete(store_id))
        except AdapterError as exc:
            if binding is not None:
                self._guard.fail_delete(binding, exc, "delete")
            raise

    def delete_all(
        self, scope: Mapping[str, str], *, origin: WriteOrigin | None = None
    ) -> BulkDeleted:
        """Delete the memories of ``scope`` this session may revise, then read the scope back:
        an unscoped or wildcard call is refused before any I/O, an item the store still returns
        raises :class:`~adapters.errors.PartialDeleteError` (:mod:`adapters.bulk_delete`)."""
        from gnomon.adapters.bulk_delete import delete_all

        return delete_all(self, scope, origin=origin)

    def contradictions(
        self, query: str | None = None, ids: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The contradiction channel (:mod:`adapters.conflicts`): every conflict among this
        store's memories that this client's reader may know of. ``ids``: belief ids or this
        store's item ids to ask about (default: every memory bound in this store); ``query``:
        keep the entries where a visible member's text contains every word of it."""
        from gnomon.adapters.conflicts import all_bound, bound_to, matching

        guard = self._guard
        if ids is None:
            wanted = all_bound(guard)
        else:
            given = [str(i) for i in ids]
            known = guard.wall.store.get_beliefs(given)
            wanted = [*known, *bound_to(guard, [i for i in given if i not in known])]
        return matching(guard.contradictions(wanted), query)

    # -- privileged path and transfers ------------------------------------------------------

    def audit(self, query: str | None = None, *, grant: Grant, limit: int = 100) -> list[AuditView]:
        return self._guard.audit(query, grant=grant, limit=limit, backend=self._backend)

    def import_(
        self,
        scope: Mapping[str, str],
        *,
        batch_size: int = 1000,
        page_size: int = 100,
        progress: bool | None = None,
    ) -> Any:
        """Import what ``scope`` holds in the store into this client's project (unverified)."""
        from gnomon.adapters.transfer import import_store

        return import_store(
            self, scope, batch_size=batch_size, page_size=page_size, progress=progress
        )

    def export(self, out: IO[str] | str | Path, **options: Any) -> int:
        from gnomon.adapters.transfer import export_store

        return export_store(self, out, **options)

    def sync(self, scope: Mapping[str, str], **options: Any) -> Any:
        from gnomon.adapters.transfer import sync_store

        return sync_store(self, scope, **options)

    def close(self) -> None:
        self._guard.close()


__all__ = ["Adapter"]
