"""An in-process fake of Zep Cloud's v4 API, in the exact wire format of ``zep-cloud`` 4.0
(``/api/v4`` paths, ``uuid`` wire names, ``{items, next_cursor, total_size}`` pages with an
opaque cursor, ``{"error": {...}}`` errors, the 10-scalar-key metadata rule).

Ingestion is deterministic instead of an LLM: every message or episode becomes an episode; each
sentence of it becomes a fact (an edge), and a sentence already known as a fact is merged into
that edge, whose ``episode_uuids`` then lists every episode it came from, as Zep's
deduplication does. Every capitalised word becomes an entity (a node) whose summary joins the
facts that mention it. Context strings use Zep's default FACTS/ENTITIES template and are built
from *everything* relevant, as the real server does: which is why the firewall rebuilds them.

>>> import httpx
>>> from zep_cloud.client import Zep
>>> server = FakeZepServer()
>>> zep = Zep(api_key="k", base_url="http://zep.test/api/v4", max_retries=0,
...           httpx_client=httpx.Client(transport=server.transport()))
>>> user = zep.user.create(user_id="ada")
>>> _ = zep.graph.episode.add(user.graph_uuid, data="Ada likes tea.", type="text")
>>> [e.fact for e in zep.graph.search_edges(user.graph_uuid, query="tea")]
['Ada likes tea.']
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from gnomon.adapters.fakes._http import ErrorReply, FakeServer, json_of, route, score
from gnomon.adapters.zep_context import render_context

if TYPE_CHECKING:
    from zep_cloud.client import Zep

PREFIX = "/api/v4"
DEFAULT_PAGE = 20
MAX_METADATA_KEYS = 10
SCALARS = (str, int, float, bool)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _uuid() -> str:
    return str(uuid.uuid4())


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def entity_names(text: str) -> list[str]:
    seen: list[str] = []
    for name in re.findall(r"\b[A-Z][a-zA-Z]{2,}\b", text):
        if name not in seen:
            seen.append(name)
    return seen


def metadata_error(metadata: Any) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return "metadata must be an object"
    if len(metadata) > MAX_METADATA_KEYS:
        return f"metadata may have at most {MAX_METADATA_KEYS} keys, got {len(metadata)}"
    for key, value in metadata.items():
        scalar_list = isinstance(value, list) and all(isinstance(v, SCALARS) for v in value)
        if not (value is None or isinstance(value, SCALARS) or scalar_list):
            return f"metadata value for {key!r} must be a scalar or a list of scalars"
    return None


def _paged(items: list[Any], request: httpx.Request) -> dict[str, Any]:
    params = request.url.params
    start = int(params.get("cursor") or 0)
    size = int(params.get("page_size") or DEFAULT_PAGE)
    page = items[start : start + size]
    more = start + size < len(items)
    return {
        "items": page,
        "next_cursor": str(start + size) if more else None,
        "total_size": len(items),
    }


class FakeZepServer(FakeServer):
    """Users, threads, messages, graphs (episodes, edges, nodes) held in dicts."""

    prefix = PREFIX

    def __init__(self) -> None:
        super().__init__()
        self.users: dict[str, dict[str, Any]] = {}
        self.threads: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.graphs: set[str] = set()

    # -- plumbing -------------------------------------------------------------------------

    def client(self) -> Zep:
        """A real ``zep_cloud`` client that talks to this fake, with no network and no retries
        (needs ``pip install 'gnomon[zep]'``)."""
        from zep_cloud.client import Zep

        return Zep(
            api_key="fake-key",
            base_url=f"http://zep.fake{PREFIX}",
            max_retries=0,
            httpx_client=httpx.Client(transport=self.transport()),
        )

    def handle(self, request: httpx.Request) -> httpx.Response:
        if not request.headers.get("authorization", "").startswith("Api-Key "):
            return self._error(401, "unauthorized", "missing Api-Key")
        return super().handle(request)

    @staticmethod
    def _error(status: int, code: str, message: str) -> httpx.Response:
        return httpx.Response(status, json={"error": {"code": code, "message": message}})

    def _missing(self, what: str, ident: str) -> httpx.Response:
        return self._error(404, "not_found", f"{what} {ident} not found")

    def _graph(self, graph_uuid: str) -> str | None:
        """A user's uuid may stand for their graph, as in Zep."""
        if graph_uuid in self.graphs:
            return graph_uuid
        user = self.users.get(graph_uuid)
        return user["graph_uuid"] if user else None

    def _graph_found(self, graph_uuid: str) -> str:
        graph = self._graph(graph_uuid)
        if graph is None:
            raise ErrorReply(self._missing("graph", graph_uuid))
        return graph

    def _body_with(self, request: httpx.Request, field: str) -> dict[str, Any]:
        """The JSON body, which must carry the string ``field``."""
        body: dict[str, Any] = json_of(request)
        if not isinstance(body.get(field), str):
            raise ErrorReply(self._error(400, "bad_request", f"{field} is required"))
        return body

    # -- ingestion ------------------------------------------------------------------------

    def ingest(self, graph: str, episode: dict[str, Any]) -> None:
        """Extract facts and entities from one episode (deterministically)."""
        for sentence in sentences(episode.get("content") or ""):
            key = sentence.lower()
            edge = next(
                (
                    e
                    for e in self.edges.values()
                    if e["graph_uuid"] == graph and e["fact"].lower() == key
                ),
                None,
            )
            if edge is None:
                edge = {
                    "uuid": _uuid(),
                    "fact": sentence,
                    "name": "RELATES_TO",
                    "graph_uuid": graph,
                    "episode_uuids": [],
                    "created_at": _now(),
                    "valid_at": episode["created_at"],
                    "attributes": {},
                }
                self.edges[edge["uuid"]] = edge
            if episode["uuid"] not in edge["episode_uuids"]:
                edge["episode_uuids"].append(episode["uuid"])
            for name in entity_names(sentence):
                node = next(
                    (
                        n
                        for n in self.nodes.values()
                        if n["graph_uuid"] == graph and n["name"] == name
                    ),
                    None,
                )
                if node is None:
                    node = {
                        "uuid": _uuid(),
                        "name": name,
                        "summary": "",
                        "labels": ["Entity"],
                        "graph_uuid": graph,
                        "episode_uuids": [],
                        "episode_uuids_truncated": False,
                        "created_at": _now(),
                        "attributes": {},
                    }
                    self.nodes[node["uuid"]] = node
                if episode["uuid"] not in node["episode_uuids"]:
                    node["episode_uuids"].append(episode["uuid"])
                    node["summary"] = f"{node['summary']} {sentence}".strip()
                edge.setdefault("source_node_uuid", node["uuid"])
                edge.setdefault("source_node_name", name)

    def _new_episode(self, graph: str, content: str, **fields: Any) -> dict[str, Any]:
        episode = {
            "uuid": fields.pop("uuid", None) or _uuid(),
            "content": content,
            "graph_uuid": graph,
            "created_at": _now(),
            "processed": True,
            "source": fields.pop("source", "text"),
            "metadata": fields.pop("metadata", None) or {},
            **fields,
        }
        self.episodes[episode["uuid"]] = episode
        self.ingest(graph, episode)
        return episode

    @staticmethod
    def _task(kind: str) -> dict[str, Any]:
        return {"uuid": _uuid(), "status": "succeeded", "type": kind, "created_at": _now()}

    # -- users and threads ----------------------------------------------------------------

    @route("user.create", "POST", "/users")
    def _user_create(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        problem = metadata_error(body.get("metadata"))
        if problem:
            return self._error(400, "bad_request", problem)
        graph = _uuid()
        self.graphs.add(graph)
        user = {
            "uuid": _uuid(),
            "user_id": body.get("user_id"),
            "graph_uuid": graph,
            "metadata": body.get("metadata") or {},
            "created_at": _now(),
        }
        self.users[user["uuid"]] = user
        return httpx.Response(201, json=user)

    @route("user.lookup", "POST", "/users/lookup")
    def _user_lookup(self, request: httpx.Request) -> httpx.Response:
        wanted = json_of(request).get("user_id")
        for user in self.users.values():
            if user["user_id"] == wanted:
                return httpx.Response(200, json=user)
        return self._missing("user", str(wanted))

    @route("user.get", "GET", "/users/{user_uuid}")
    def _user_get(self, request: httpx.Request, user_uuid: str) -> httpx.Response:
        user = self.users.get(user_uuid)
        return httpx.Response(200, json=user) if user else self._missing("user", user_uuid)

    @route("thread.create", "POST", "/threads")
    def _thread_create(self, request: httpx.Request) -> httpx.Response:
        user = self.users.get(json_of(request).get("user_uuid") or "")
        if user is None:
            return self._missing("user", str(json_of(request).get("user_uuid")))
        thread = {
            "uuid": _uuid(),
            "user_uuid": user["uuid"],
            "graph_uuid": user["graph_uuid"],
            "created_at": _now(),
        }
        self.threads[thread["uuid"]] = thread
        self.messages[thread["uuid"]] = []
        return httpx.Response(201, json=thread)

    @route("thread.get", "GET", "/threads/{thread_uuid}")
    def _thread_get(self, request: httpx.Request, thread_uuid: str) -> httpx.Response:
        thread = self.threads.get(thread_uuid)
        return httpx.Response(200, json=thread) if thread else self._missing("thread", thread_uuid)

    # -- messages -------------------------------------------------------------------------

    @route("thread.add_messages", "POST", "/threads/{thread_uuid}/messages")
    def _add_messages(self, request: httpx.Request, thread_uuid: str) -> httpx.Response:
        thread = self.threads.get(thread_uuid)
        if thread is None:
            return self._missing("thread", thread_uuid)
        body = json_of(request)
        raw = body.get("messages")
        if not isinstance(raw, list):
            return self._error(400, "bad_request", "messages must be a list")
        for m in raw:
            problem = metadata_error(m.get("metadata"))
            if problem:
                return self._error(400, "bad_request", problem)
            if m.get("uuid"):
                return self._error(400, "bad_request", "uuid is reserved")
        stored = []
        for m in raw:
            message = {
                "uuid": _uuid(),
                "role": m.get("role"),
                "name": m.get("name"),
                "content": m.get("content"),
                "metadata": m.get("metadata") or {},
                "thread_uuid": thread_uuid,
                "created_at": _now(),
                "processed": True,
            }
            self.messages[thread_uuid].append(message)
            stored.append(message)
            # The message is ingested into the user's graph as an episode with the same uuid.
            self._new_episode(
                thread["graph_uuid"],
                message["content"] or "",
                uuid=message["uuid"],
                source="message",
                thread_uuid=thread_uuid,
                role=message["role"],
                role_name=message["name"],
                metadata=dict(message["metadata"]),
            )
        out: dict[str, Any] = {"messages": stored, "task": self._task("add_messages")}
        if body.get("return_context"):
            out["context"] = self._context_for_thread(thread_uuid)
        return httpx.Response(200, json=out)

    @route("thread.list_messages", "GET", "/threads/{thread_uuid}/messages")
    def _list_messages(self, request: httpx.Request, thread_uuid: str) -> httpx.Response:
        if thread_uuid not in self.threads:
            return self._missing("thread", thread_uuid)
        items = list(self.messages[thread_uuid])
        if request.url.params.get("order") == "desc":
            items = items[::-1]
        return httpx.Response(200, json=_paged(items, request))

    @route("thread.message.get", "GET", "/threads/{thread_uuid}/messages/{message_uuid}")
    def _message_get(
        self, request: httpx.Request, thread_uuid: str, message_uuid: str
    ) -> httpx.Response:
        for m in self.messages.get(thread_uuid, []):
            if m["uuid"] == message_uuid:
                return httpx.Response(200, json=m)
        return self._missing("message", message_uuid)

    @route("thread.message.update", "PATCH", "/threads/{thread_uuid}/messages/{message_uuid}")
    def _message_update(
        self, request: httpx.Request, thread_uuid: str, message_uuid: str
    ) -> httpx.Response:
        metadata = json_of(request).get("metadata")
        problem = metadata_error(metadata)
        if problem:
            return self._error(400, "bad_request", problem)
        for m in self.messages.get(thread_uuid, []):
            if m["uuid"] == message_uuid:
                m["metadata"] = {**m["metadata"], **(metadata or {})}
                return httpx.Response(200, json=m)
        return self._missing("message", message_uuid)

    def _context_for_thread(self, thread_uuid: str) -> str:
        thread = self.threads[thread_uuid]
        recent = " ".join(m["content"] or "" for m in self.messages[thread_uuid][-4:])
        edges, nodes, _ = self._relevant(thread["graph_uuid"], recent, 10)
        return render_context(edges, nodes)

    @route("thread.get_context", "GET", "/threads/{thread_uuid}/context")
    def _thread_context(self, request: httpx.Request, thread_uuid: str) -> httpx.Response:
        if thread_uuid not in self.threads:
            return self._missing("thread", thread_uuid)
        return httpx.Response(200, json={"context": self._context_for_thread(thread_uuid)})

    # -- episodes -------------------------------------------------------------------------

    @route("graph.episode.add", "POST", "/graphs/{graph_uuid}/episodes")
    def _episode_add(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        graph = self._graph_found(graph_uuid)
        body = self._body_with(request, "data")
        problem = metadata_error(body.get("metadata"))
        if problem:
            return self._error(400, "bad_request", problem)
        episode = self._new_episode(
            graph,
            body["data"],
            source=body.get("type") or "text",
            source_description=body.get("source_description"),
            metadata=body.get("metadata"),
            document_id=body.get("document_id"),
        )
        return httpx.Response(202, json={"episode": episode, "task": self._task("add_episode")})

    def _in_graph(self, table: dict[str, dict[str, Any]], graph: str) -> list[dict[str, Any]]:
        return [item for item in table.values() if item["graph_uuid"] == graph]

    @route("graph.episode.list", "POST", "/graphs/{graph_uuid}/episodes/list")
    def _episode_list(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        graph = self._graph_found(graph_uuid)
        return httpx.Response(200, json=_paged(self._in_graph(self.episodes, graph), request))

    def _found(
        self, table: dict[str, dict[str, Any]], graph_uuid: str, ident: str, what: str
    ) -> dict[str, Any]:
        item = table.get(ident)
        if item is None or item["graph_uuid"] != self._graph(graph_uuid):
            raise ErrorReply(self._missing(what, ident))
        return item

    @route("graph.episode.get", "GET", "/graphs/{graph_uuid}/episodes/{episode_uuid}")
    def _episode_get(
        self, request: httpx.Request, graph_uuid: str, episode_uuid: str
    ) -> httpx.Response:
        return httpx.Response(
            200, json=self._found(self.episodes, graph_uuid, episode_uuid, "episode")
        )

    @route("graph.episode.update", "PATCH", "/graphs/{graph_uuid}/episodes/{episode_uuid}")
    def _episode_update(
        self, request: httpx.Request, graph_uuid: str, episode_uuid: str
    ) -> httpx.Response:
        episode = self._found(self.episodes, graph_uuid, episode_uuid, "episode")
        metadata = json_of(request).get("metadata") or {}
        merged = {**episode["metadata"], **metadata}
        problem = metadata_error(merged)
        if problem:
            return self._error(400, "bad_request", problem)
        episode["metadata"] = {k: v for k, v in merged.items() if v is not None}
        return httpx.Response(200, json=episode)

    @route("graph.episode.delete", "DELETE", "/graphs/{graph_uuid}/episodes/{episode_uuid}")
    def _episode_delete(
        self, request: httpx.Request, graph_uuid: str, episode_uuid: str
    ) -> httpx.Response:
        self._found(self.episodes, graph_uuid, episode_uuid, "episode")
        del self.episodes[episode_uuid]
        for table in (self.edges, self.nodes):
            for ident, item in list(table.items()):
                if episode_uuid in item["episode_uuids"]:
                    item["episode_uuids"].remove(episode_uuid)
                    if not item["episode_uuids"]:
                        del table[ident]
        return httpx.Response(202, json={"task": self._task("delete_episode")})

    @route("graph.edge.get", "GET", "/graphs/{graph_uuid}/edges/{edge_uuid}")
    def _edge_get(self, request: httpx.Request, graph_uuid: str, edge_uuid: str) -> httpx.Response:
        return httpx.Response(200, json=self._found(self.edges, graph_uuid, edge_uuid, "edge"))

    @route("graph.node.get", "GET", "/graphs/{graph_uuid}/nodes/{node_uuid}")
    def _node_get(self, request: httpx.Request, graph_uuid: str, node_uuid: str) -> httpx.Response:
        return httpx.Response(200, json=self._found(self.nodes, graph_uuid, node_uuid, "node"))

    @route("graph.edge.list", "POST", "/graphs/{graph_uuid}/edges/list")
    def _edge_list(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        graph = self._graph_found(graph_uuid)
        return httpx.Response(200, json=_paged(self._in_graph(self.edges, graph), request))

    # -- search and context ---------------------------------------------------------------

    def _ranked(
        self, items: list[dict[str, Any]], query: str, field: str, limit: int
    ) -> list[dict[str, Any]]:
        scored = [({**item, "score": score(query, item.get(field) or "")}) for item in items]
        scored = [item for item in scored if item["score"] > 0]
        scored.sort(key=lambda item: -item["score"])
        return scored[:limit]

    def _relevant(
        self, graph: str, query: str, limit: int
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        return (
            self._ranked(self._in_graph(self.edges, graph), query, "fact", limit),
            self._ranked(self._in_graph(self.nodes, graph), query, "summary", limit),
            self._ranked(self._in_graph(self.episodes, graph), query, "content", limit),
        )

    def _search(
        self, request: httpx.Request, graph_uuid: str, table: dict[str, Any], field: str
    ) -> httpx.Response:
        graph = self._graph_found(graph_uuid)
        body = self._body_with(request, "query")
        items = self._in_graph(table, graph)
        wanted = (body.get("filters") or {}).get("episode_uuids")
        if wanted and table is not self.episodes:
            items = [i for i in items if set(wanted) & set(i["episode_uuids"])]
        ranked = self._ranked(items, body["query"], field, 50)
        return httpx.Response(200, json=_paged(ranked, request))

    @route("graph.search_edges", "POST", "/graphs/{graph_uuid}/search/edges")
    def _search_edges(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        return self._search(request, graph_uuid, self.edges, "fact")

    @route("graph.search_nodes", "POST", "/graphs/{graph_uuid}/search/nodes")
    def _search_nodes(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        return self._search(request, graph_uuid, self.nodes, "summary")

    @route("graph.search_episodes", "POST", "/graphs/{graph_uuid}/search/episodes")
    def _search_episodes(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        return self._search(request, graph_uuid, self.episodes, "content")

    @route("graph.get_context", "POST", "/graphs/{graph_uuid}/context")
    def _graph_context(self, request: httpx.Request, graph_uuid: str) -> httpx.Response:
        graph = self._graph_found(graph_uuid)
        body = self._body_with(request, "query")
        edges, nodes, episodes = self._relevant(graph, body["query"], 10)
        out: dict[str, Any] = {"context": render_context(edges, nodes), "truncated": False}
        if body.get("include_results"):
            out["results"] = {"edges": edges, "nodes": nodes, "episodes": episodes}
        return httpx.Response(200, json=out)


__all__ = ["FakeZepServer", "render_context"]
