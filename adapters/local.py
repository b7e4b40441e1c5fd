"""The built-in local memory store, and its guarded client: the adapter contract with no SDK.

:class:`LocalMemory` is a small in-process memory store in mem0's shape (``add``, ``search``,
``get``, ``get_all``, ``update``, ``delete``, ``history``; dict results under ``"results"``),
ranked by the same tokens and BM25 the firewall's own stores use. It is what an agent uses when
it has no external memory store, and the store-free member of the adapter contract suite.

:class:`GuardedLocalMemory` wraps it like every other guarded client::

    memory = GuardedLocalMemory(LocalMemory(), wall, project="shop", actor="coder", user="alice")
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from gnomon.adapters.base import Page, StoreBackend, StoreItem
from gnomon.adapters.core import Constructed, Refusing
from gnomon.adapters.errors import BypassRefusedError, StoreCallError
from gnomon.adapters.guard import Screened, annotated, passed
from gnomon.firewall.host.channels import WriteOrigin
from gnomon.firewall.model.chain import content_hash
from gnomon.firewall.model.text import query_terms
from gnomon.firewall.store.keys import index_tokens
from gnomon.firewall.store.memory import K1, B, bm25_idf


class LocalMemory:
    """An in-process memory store (not thread-safe beyond one lock; not persistent)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, dict[str, Any]] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._postings: dict[str, set[str]] = {}
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._length = 0  # total tokens, for BM25's average document length

    def _index(self, ident: str, text: str) -> None:
        old = self._terms.pop(ident, None)
        for term in old or ():
            self._postings.get(term, set()).discard(ident)
        if old:
            self._length -= sum(old.values())
        terms = Counter(index_tokens(text))
        self._length += sum(terms.values())
        self._terms[ident] = terms
        for term in terms:
            self._postings.setdefault(term, set()).add(ident)

    def _log(self, ident: str, event: str, old: str | None, new: str | None) -> None:
        now = datetime.now(UTC).isoformat()
        self._history.setdefault(ident, []).append(
            {"memory_id": ident, "old_memory": old, "new_memory": new, "event": event, "at": now}
        )

    def add(
        self, text: str, *, user_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        with self._lock:
            ident = f"loc-{next(self._ids)}"
            now = datetime.now(UTC).isoformat()
            self._items[ident] = {
                "id": ident,
                "memory": text,
                "hash": content_hash(text),
                "metadata": dict(metadata or {}),
                "user_id": user_id,
                "created_at": now,
                "updated_at": now,
            }
            self._index(ident, text)
            self._log(ident, "ADD", None, text)
        return {"results": [{"id": ident, "memory": text, "event": "ADD"}]}

    def search(
        self, query: str, *, top_k: int = 10, filters: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        with self._lock:
            terms = [t for t in query_terms(query) if t in self._postings]
            candidates = {i for t in terms for i in self._postings[t]}
            rows = [self._items[i] for i in candidates if _matches(self._items[i], filters)]
            count = len(self._items) or 1
            avgdl = self._length / count
            scored = []
            for row in rows:
                tf = self._terms[row["id"]]
                norm = K1 * (1 - B + B * sum(tf.values()) / avgdl) if avgdl else K1
                score = sum(
                    bm25_idf(count, len(self._postings[t])) * tf[t] * (K1 + 1) / (tf[t] + norm)
                    for t in terms
                    if tf[t]
                )
                scored.append((-score, row["id"], row))
            scored.sort(key=lambda s: s[:2])
            return {"results": [{**r, "score": -s} for s, _, r in scored[:top_k]]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._items.get(memory_id)
            return dict(row) if row is not None else None

    def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 100,
        after: str | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            ids = sorted(self._items, key=_numeric)
            if after is not None:
                ids = [i for i in ids if _numeric(i) > _numeric(after)]
            rows = [self._items[i] for i in ids if _matches(self._items[i], filters)]
            return {"results": [dict(r) for r in rows[:top_k]]}

    def update(
        self, memory_id: str, text: str, metadata: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        with self._lock:
            row = self._items.get(memory_id)
            if row is None:
                raise ValueError(f"Memory with id {memory_id} not found")
            old = row["memory"]
            row.update(
                memory=text,
                hash=content_hash(text),
                metadata={**row["metadata"], **(metadata or {})},
                updated_at=datetime.now(UTC).isoformat(),
            )
            self._index(memory_id, text)
            self._log(memory_id, "UPDATE", old, text)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, Any]:
        with self._lock:
            row = self._items.pop(memory_id, None)
            if row is None:
                raise ValueError(f"Memory with id {memory_id} not found")
            self._index(memory_id, "")
            self._log(memory_id, "DELETE", row["memory"], None)
        return {"message": "Memory deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(h) for h in self._history.get(memory_id, [])]


def _numeric(ident: str) -> int:
    return int(ident.rpartition("-")[2])


def _matches(row: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    for key, value in (filters or {}).items():
        if key == "user_id":
            if row.get("user_id") != value:
                return False
        elif row["metadata"].get(key) != value:
            return False
    return True


def _item(row: Mapping[str, Any]) -> StoreItem:
    return StoreItem(
        store_id=row["id"],
        text=row["memory"],
        metadata=row.get("metadata") or {},
        scope={"user_id": row["user_id"]} if row.get("user_id") else {},
        raw=row,
        text_field="memory",
    )


class LocalBackend(StoreBackend):
    """Raw calls against a :class:`LocalMemory`."""

    name: ClassVar[str] = "local"

    def __init__(self, client: LocalMemory) -> None:
        self.client = client

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        result = self.client.add(text, user_id=scope.get("user_id"), metadata=metadata)
        row = self.client.get(result["results"][0]["id"])
        assert row is not None
        return _item(row)

    def get(self, store_id: str) -> StoreItem | None:
        row = self.client.get(store_id)
        return None if row is None else _item(row)

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        found = self.client.search(query, top_k=limit, filters=dict(scope))
        return [_item(r) for r in found["results"]]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        rows = self.client.get_all(filters=dict(scope), top_k=limit, after=cursor)["results"]
        return Page([_item(r) for r in rows], rows[-1]["id"] if len(rows) == limit else None)

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> None:
        try:
            self.client.update(store_id, text, metadata)
        except ValueError as exc:
            raise StoreCallError(str(exc), store=self.name, call="update", status=404) from exc

    def delete(self, store_id: str) -> None:
        try:
            self.client.delete(store_id)
        except ValueError as exc:
            raise StoreCallError(str(exc), store=self.name, call="delete", status=404) from exc

    def history(self, store_id: str) -> list[dict[str, Any]]:
        return self.client.history(store_id)


class GuardedLocalMemory(Constructed, Refusing):
    """:class:`LocalMemory` behind the firewall, with the same methods and return shapes.

    Hits that pass the policy carry a ``gnomon`` key with their labels; the others are not
    returned. ``gnomon_origin=`` (host code only) records a write with an explicit origin, e.g.
    ``Origin.user("alice")`` for something the user stated.
    """

    _store = "local"

    _GUARDED = frozenset({"add", "search", "get", "get_all", "update", "delete", "history"})

    def _adapter_backend(self, client: Any, sync_client: Any) -> StoreBackend:
        return LocalBackend(client)

    def add(
        self,
        text: str,
        *,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        gnomon_origin: WriteOrigin | None = None,
    ) -> dict[str, Any]:
        scope = {"user_id": user_id} if user_id else {}
        item, _ = self.gnomon.write(text, scope=scope, metadata=metadata, origin=gnomon_origin)
        return {"results": [{"id": item.store_id, "memory": item.text, "event": "ADD"}]}

    def search(
        self, query: str, *, top_k: int = 10, filters: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return self._shaped(self.gnomon.search(query, scope=dict(filters or {}), k=top_k))

    def get(self, memory_id: str) -> dict[str, Any] | None:
        screened = self.gnomon.get(memory_id)
        if screened is None or not screened.passed:
            return None
        return annotated(screened)

    def get_all(
        self, *, filters: Mapping[str, Any] | None = None, top_k: int = 100
    ) -> dict[str, Any]:
        return self._shaped(self.gnomon.list_items(scope=dict(filters or {}), limit=top_k))

    def _shaped(self, screened: list[Screened]) -> dict[str, Any]:
        """mem0's shape: the hits that passed, and beside them the contradiction channel."""
        ids = [s.item.store_id for s in screened]
        return {"results": passed(screened), "contradictions": self.gnomon.contradictions(ids=ids)}

    def update(
        self,
        memory_id: str,
        text: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        gnomon_origin: WriteOrigin | None = None,
    ) -> dict[str, Any]:
        self.gnomon.update(memory_id, text, metadata=metadata, origin=gnomon_origin)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str, *, gnomon_origin: WriteOrigin | None = None) -> dict[str, Any]:
        self.gnomon.delete(memory_id, origin=gnomon_origin)
        return {"message": "Memory deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Refused on the agent path: a store's history holds text the policy may exclude.
        Auditors see it through ``memory.gnomon.audit(query, grant=...)``."""
        raise BypassRefusedError(
            "history() is on the audit path",
            store="local",
            call="history",
            hint="use memory.gnomon.audit(query, grant=wall.grant('auditor', ...))",
        )


__all__ = ["GuardedLocalMemory", "LocalBackend", "LocalMemory"]
