"""An in-process fake of the mem0 platform API, in the wire format ``mem0.MemoryClient`` 2.2
speaks: ``GET /v1/ping/`` (``org_id`` and ``project_id``), ``POST /v3/memories/add/``,
``POST /v3/memories/search/``, ``POST /v3/memories/`` (``page``/``page_size`` in the query
string, ``{"count", "next", "previous", "results"}``), ``GET/PUT/DELETE /v1/memories/{id}/``,
``DELETE /v1/memories/`` and ``GET /v1/memories/{id}/history/``; errors as ``{"detail": ...}``.

Memories live in a dict; search ranks by token overlap. ``add`` with ``infer`` true (the
platform's default) turns the messages into facts with ``extract`` (default: one fact per
non-system message), as the platform's LLM would. ``extract`` may also answer with event dicts,
``{"event": "UPDATE", "id": ..., "text": ...}`` or ``{"event": "DELETE", "id": ...}``, which the
fake applies to the stored memory and reports as mem0 does (the platform's LLM deciding to
rewrite or drop an existing memory).

>>> import httpx
>>> from mem0 import MemoryClient
>>> server = FakeMem0Platform()
>>> client = MemoryClient(api_key="k", host="http://mem0.test",
...                       client=httpx.Client(transport=server.transport()))
>>> client.add("Alice likes tea", user_id="alice", infer=False)["results"][0]["memory"]
'Alice likes tea'
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from gnomon.adapters.fakes._http import FakeServer, json_of, route, score

SCOPE = ("user_id", "agent_id", "run_id", "app_id")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _matches(row: Mapping[str, Any], filters: Any) -> bool:
    """Equality filters on scope and metadata keys, with ``AND``/``OR`` lists."""
    if not filters:
        return True
    if not isinstance(filters, Mapping):
        return False
    for key, want in filters.items():
        if key == "AND":
            if not all(_matches(row, f) for f in want):
                return False
        elif key == "OR":
            if not any(_matches(row, f) for f in want):
                return False
        elif key in SCOPE:
            if want not in ("*", row.get(key)):
                return False
        elif (row.get("metadata") or {}).get(key) != want:
            return False
    return True


class FakeMem0Platform(FakeServer):
    """State plus routes. ``router.fail(name, 429)`` injects faults; ``router.calls`` records
    traffic. Route names are the SDK's method names (``add``, ``search``, ``get_all``…)."""

    def __init__(
        self, *, extract: Callable[[list[dict[str, Any]]], list[Any]] | None = None
    ) -> None:
        super().__init__()
        self.memories: dict[str, dict[str, Any]] = {}
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.extract = extract

    # -- seeding (what a server already holds, written around any client) ----------------

    def put(self, text: str, *, metadata: Mapping[str, Any] | None = None, **scope: str) -> str:
        """Store a memory directly (around any client); returns its id."""
        return self._insert(text, dict(metadata or {}), scope)["id"]

    def _insert(self, text: str, metadata: dict[str, Any], scope: Mapping[str, Any]) -> dict:
        ident = str(uuid.uuid4())
        now = _now()
        row: dict[str, Any] = {
            "id": ident,
            "memory": text,
            "metadata": metadata or None,
            "categories": [],
            "created_at": now,
            "updated_at": now,
            **{k: scope[k] for k in SCOPE if scope.get(k)},
        }
        self.memories[ident] = row
        self._log(ident, None, text, "ADD")
        return row

    def _log(self, ident: str, old: str | None, new: str | None, event: str) -> None:
        now = _now()
        self.history.setdefault(ident, []).append(
            {
                "id": str(uuid.uuid4()),
                "memory_id": ident,
                "old_memory": old,
                "new_memory": new,
                "event": event,
                "created_at": now,
                "updated_at": now,
                "user_id": self.memories.get(ident, {}).get("user_id"),
            }
        )

    def _missing(self, ident: str) -> httpx.Response:
        return httpx.Response(404, json={"detail": f"Memory with id {ident} not found"})

    # -- routes ---------------------------------------------------------------------------

    @route("ping", "GET", "/v1/ping/")
    def _ping(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "status": "ok",
                "org_id": "org-fake",
                "project_id": "proj-fake",
                "user_email": None,
            },
        )

    @route("add", "POST", "/v3/memories/add/")
    def _add(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        messages = body.get("messages") or []
        metadata = dict(body.get("metadata") or {})
        if body.get("infer", True) is False:
            texts: list[Any] = [
                m["content"]
                for m in messages
                if m.get("role") != "system" and isinstance(m.get("content"), str)
            ]
        elif self.extract is not None:
            texts = list(self.extract(messages))
        else:
            texts = [m["content"] for m in messages if m.get("role") != "system"]
        results = [self._apply(t, dict(metadata), body) for t in texts]
        return httpx.Response(200, json={"results": [r for r in results if r is not None]})

    def _apply(
        self, fact: Any, metadata: dict[str, Any], body: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """One extracted fact (ADD) or event dict (UPDATE/DELETE of an existing memory)."""
        if isinstance(fact, str):
            row = self._insert(fact, metadata, body)
            return {"id": row["id"], "memory": row["memory"], "event": "ADD"}
        ident, event = fact.get("id"), fact.get("event")
        row = self.memories.get(ident) if isinstance(ident, str) else None
        if row is None:
            return None
        old = row["memory"]
        if event == "DELETE":
            self.memories.pop(ident)
            self._log(ident, old, None, "DELETE")
            return {"id": ident, "memory": old, "event": "DELETE"}
        row["memory"] = fact["text"]
        row["metadata"] = {**(row.get("metadata") or {}), **metadata}
        row["updated_at"] = _now()
        self._log(ident, old, row["memory"], "UPDATE")
        return {"id": ident, "memory": row["memory"], "event": "UPDATE"}

    def _select(self, filters: Any) -> list[dict[str, Any]]:
        return [r for r in self.memories.values() if _matches(r, filters)]

    @route("search", "POST", "/v3/memories/search/")
    def _search(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        query = body.get("query") or ""
        hits = [(score(query, r["memory"]), r) for r in self._select(body.get("filters"))]
        hits = sorted((h for h in hits if h[0] > 0), key=lambda h: -h[0])
        top_k = int(body.get("top_k") or 10)
        return httpx.Response(200, json={"results": [{**r, "score": s} for s, r in hits[:top_k]]})

    @route("get_all", "POST", "/v3/memories/")
    def _get_all(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        rows = self._select(body.get("filters"))
        params = request.url.params
        page = int(params.get("page", 1))
        size = int(params.get("page_size", 100))
        chunk = rows[(page - 1) * size : page * size]
        base = str(request.url.copy_with(query=None))

        def link(n: int) -> str:
            return f"{base}?page={n}&page_size={size}"

        return httpx.Response(
            200,
            json={
                "count": len(rows),
                "next": link(page + 1) if page * size < len(rows) else None,
                "previous": link(page - 1) if page > 1 else None,
                "results": chunk,
            },
        )

    @route("get", "GET", "/v1/memories/{memory_id}/")
    def _get(self, request: httpx.Request, memory_id: str) -> httpx.Response:
        row = self.memories.get(memory_id)
        return httpx.Response(200, json=row) if row else self._missing(memory_id)

    @route("update", "PUT", "/v1/memories/{memory_id}/")
    def _update(self, request: httpx.Request, memory_id: str) -> httpx.Response:
        row = self.memories.get(memory_id)
        if row is None:
            return self._missing(memory_id)
        body = json_of(request)
        old = row["memory"]
        if isinstance(body.get("text"), str):
            row["memory"] = body["text"]
        if isinstance(body.get("metadata"), Mapping):
            row["metadata"] = {**(row.get("metadata") or {}), **body["metadata"]}
        row["updated_at"] = _now()
        self._log(memory_id, old, row["memory"], "UPDATE")
        return httpx.Response(200, json=row)

    @route("delete", "DELETE", "/v1/memories/{memory_id}/")
    def _delete(self, request: httpx.Request, memory_id: str) -> httpx.Response:
        row = self.memories.pop(memory_id, None)
        if row is None:
            return self._missing(memory_id)
        self._log(memory_id, row["memory"], None, "DELETE")
        return httpx.Response(200, json={"message": "Memory deleted successfully!"})

    @route("delete_all", "DELETE", "/v1/memories/")
    def _delete_all(self, request: httpx.Request) -> httpx.Response:
        scope = {k: v for k, v in request.url.params.items() if k in SCOPE}
        for ident in [i for i, r in self.memories.items() if _matches(r, scope)]:
            row = self.memories.pop(ident)
            self._log(ident, row["memory"], None, "DELETE")
        return httpx.Response(200, json={"message": "Memories deleted successfully!"})

    @route("history", "GET", "/v1/memories/{memory_id}/history/")
    def _history(self, request: httpx.Request, memory_id: str) -> httpx.Response:
        if memory_id not in self.history:
            return self._missing(memory_id)
        return httpx.Response(200, json=self.history[memory_id])


__all__ = ["FakeMem0Platform"]
