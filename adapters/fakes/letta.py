"""An in-process fake of the Letta server's memory API, in the exact wire format of
``letta-client`` 1.12 (paths, JSON bodies, array pages that end on an empty page after
``?after=``, ``{"detail": ...}`` errors).

It keeps agents (with core-memory blocks attached by label and one archive for their archival
memory), standalone blocks, archives and passages in dicts, and answers searches by token
overlap. ``agents.messages.create`` runs one scripted agent step: the server first compiles the
agent's system prompt from its *attached* blocks, as Letta does (kept in :attr:`compiled`, one
prompt per step, and returned by ``agents.recompile``), then runs the step's script
(:meth:`FakeLettaServer.on_step`; by default a user message ``remember X`` appends ``X`` to the
``human`` block with ``core_memory_append``), answering in ``LettaResponse``'s wire format.
Use it without a network:

>>> import httpx
>>> from letta_client import Letta
>>> server = FakeLettaServer()
>>> agent = server.add_agent(blocks={"human": "Name: Ada"})
>>> client = Letta(base_url="http://letta.test", max_retries=0,
...                http_client=httpx.Client(transport=server.transport()))
>>> client.agents.blocks.retrieve("human", agent_id=agent).value
'Name: Ada'
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from gnomon.adapters.fakes._http import ErrorReply, FakeServer, json_of, route, score

DEFAULT_PAGE = 50


def _id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4()}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _page(items: list[dict[str, Any]], request: httpx.Request) -> list[dict[str, Any]]:
    """Cursor pagination as the Letta server does it: ``after``/``before`` are item ids."""
    params = request.url.params
    ids = [item["id"] for item in items]
    if params.get("order") == "desc":
        items, ids = items[::-1], ids[::-1]
    if "after" in params:
        after = params["after"]
        items = items[ids.index(after) + 1 :] if after in ids else []
    if "before" in params:
        before = params["before"]
        items = items[: ids.index(before)] if before in ids else []
    limit = int(params.get("limit", DEFAULT_PAGE))
    return items[:limit]


class FakeLettaServer(FakeServer):
    """State plus routes. ``router.fail(name, 401)`` injects faults; ``calls`` records traffic."""

    def __init__(self) -> None:
        super().__init__()
        self.agents: dict[str, dict[str, Any]] = {}
        self.blocks: dict[str, dict[str, Any]] = {}
        self.archives: dict[str, dict[str, Any]] = {}
        self.passages: dict[str, dict[str, Any]] = {}
        #: The system prompt compiled at the start of each step, per agent.
        self.compiled: dict[str, list[str]] = {}
        self._scripts: dict[str, Callable[[FakeStep], str]] = {}

    # -- seeding (what a server already holds, written around any firewall) ---------------

    def add_agent(
        self, agent_id: str | None = None, *, blocks: dict[str, str] | None = None
    ) -> str:
        agent_id = agent_id or _id("agent")
        archive = self._new_archive(f"{agent_id} archival memory")
        self.agents[agent_id] = {"blocks": {}, "archive_id": archive["id"]}
        for label, value in (blocks or {}).items():
            block = self._new_block({"label": label, "value": value})
            self.agents[agent_id]["blocks"][label] = block["id"]
        return agent_id

    def agent_block(self, agent_id: str, label: str) -> dict[str, Any]:
        return self.blocks[self.agents[agent_id]["blocks"][label]]

    def _new_block(self, body: dict[str, Any]) -> dict[str, Any]:
        block = {
            "id": _id("block"),
            "label": body.get("label"),
            "value": body.get("value", ""),
            "limit": body.get("limit", 20000),
            "description": body.get("description"),
            "metadata": body.get("metadata") or {},
            "tags": body.get("tags") or [],
            "read_only": body.get("read_only", False),
            "hidden": body.get("hidden"),
            "project_id": body.get("project_id"),
            "is_template": body.get("is_template", False),
        }
        self.blocks[block["id"]] = block
        return block

    def _new_archive(self, name: str) -> dict[str, Any]:
        archive = {"id": _id("archive"), "name": name, "created_at": _now()}
        self.archives[archive["id"]] = archive
        return archive

    def _new_passage(
        self, archive_id: str, body: dict[str, Any], *, metadata: bool
    ) -> dict[str, Any]:
        now = _now()
        passage = {
            "id": _id("passage"),
            "text": body["text"],
            "archive_id": archive_id,
            "tags": body.get("tags") or [],
            "metadata": (body.get("metadata") or {}) if metadata else {},
            "created_at": body.get("created_at") or now,
            "updated_at": now,
            "is_deleted": False,
        }
        self.passages[passage["id"]] = passage
        return passage

    def _missing(self, what: str, ident: str) -> httpx.Response:
        return httpx.Response(404, json={"detail": f"{what} {ident} not found"})

    def _agent(self, agent_id: str) -> dict[str, Any]:
        agent = self.agents.get(agent_id)
        if agent is None:
            raise ErrorReply(self._missing("agent", agent_id))
        return agent

    def _labelled_block(self, agent_id: str, label: str) -> dict[str, Any]:
        """The block attached to the agent under ``label``."""
        agent = self._agent(agent_id)
        if label not in agent["blocks"]:
            raise ErrorReply(self._missing("block with label", label))
        return self.blocks[agent["blocks"][label]]

    @staticmethod
    def _body_with(request: httpx.Request, field: str) -> dict[str, Any]:
        """The JSON body, which must carry the string ``field``."""
        body: dict[str, Any] = json_of(request)
        if not isinstance(body.get(field), str):
            raise ErrorReply(httpx.Response(422, json={"detail": f"{field} is required"}))
        return body

    # -- core memory ----------------------------------------------------------------------

    @route("agent_blocks.retrieve", "GET", "/v1/agents/{agent_id}/core-memory/blocks/{label}")
    def _agent_block_get(self, request: httpx.Request, agent_id: str, label: str) -> httpx.Response:
        return httpx.Response(200, json=self._labelled_block(agent_id, label))

    @route("agent_blocks.update", "PATCH", "/v1/agents/{agent_id}/core-memory/blocks/{label}")
    def _agent_block_patch(
        self, request: httpx.Request, agent_id: str, label: str
    ) -> httpx.Response:
        block = self._labelled_block(agent_id, label)
        block.update({k: v for k, v in json_of(request).items() if v is not None})
        return httpx.Response(200, json=block)

    @route("agent_blocks.list", "GET", "/v1/agents/{agent_id}/core-memory/blocks")
    def _agent_blocks(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        items = [self.blocks[b] for b in self._agent(agent_id)["blocks"].values()]
        return httpx.Response(200, json=_page(items, request))

    # -- standalone blocks ----------------------------------------------------------------

    @route("blocks.create", "POST", "/v1/blocks/")
    def _block_create(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        if not isinstance(body.get("label"), str) or not isinstance(body.get("value"), str):
            return httpx.Response(422, json={"detail": "label and value are required"})
        return httpx.Response(200, json=self._new_block(body))

    @route("blocks.list", "GET", "/v1/blocks/")
    def _block_list(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        items = list(self.blocks.values())
        if "label" in params:
            items = [b for b in items if b["label"] == params["label"]]
        wanted = params.get_list("tags")
        if wanted:
            test = all if params.get("match_all_tags") == "true" else any
            items = [b for b in items if test(t in b["tags"] for t in wanted)]
        if "value_search" in params:
            items = [b for b in items if params["value_search"].lower() in b["value"].lower()]
        return httpx.Response(200, json=_page(items, request))

    @route("blocks.retrieve", "GET", "/v1/blocks/{block_id}")
    def _block_get(self, request: httpx.Request, block_id: str) -> httpx.Response:
        if block_id not in self.blocks:
            return self._missing("block", block_id)
        return httpx.Response(200, json=self.blocks[block_id])

    @route("blocks.update", "PATCH", "/v1/blocks/{block_id}")
    def _block_patch(self, request: httpx.Request, block_id: str) -> httpx.Response:
        if block_id not in self.blocks:
            return self._missing("block", block_id)
        self.blocks[block_id].update({k: v for k, v in json_of(request).items() if v is not None})
        return httpx.Response(200, json=self.blocks[block_id])

    @route("blocks.delete", "DELETE", "/v1/blocks/{block_id}")
    def _block_delete(self, request: httpx.Request, block_id: str) -> httpx.Response:
        if self.blocks.pop(block_id, None) is None:
            return self._missing("block", block_id)
        for agent in self.agents.values():
            agent["blocks"] = {k: v for k, v in agent["blocks"].items() if v != block_id}
        return httpx.Response(200, json={})

    # -- the agent loop -------------------------------------------------------------------

    def on_step(self, agent_id: str, script: Callable[[FakeStep], str]) -> None:
        """What the agent does in its next steps: ``script(step)`` edits memory through
        ``step`` (as the agent's memory tools would) and returns the assistant's reply."""
        self._scripts[agent_id] = script

    def compile(self, agent_id: str) -> str:
        """The core-memory part of the system prompt, from the blocks attached right now."""
        lines = ["<memory_blocks>", "The following memory blocks are in your core memory:"]
        for label, block_id in self.agents[agent_id]["blocks"].items():
            block = self.blocks[block_id]
            lines += [f"<{label}>", "<description>", block["description"] or "", "</description>"]
            lines += ["<value>", block["value"], "</value>", f"</{label}>"]
        return "\n".join([*lines, "</memory_blocks>"])

    @route("agent_messages.create", "POST", "/v1/agents/{agent_id}/messages")
    def _agent_step(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        if agent_id not in self.agents:
            return self._missing("agent", agent_id)
        body = json_of(request)
        if body.get("streaming"):
            return httpx.Response(422, json={"detail": "the fake does not stream"})
        self.compiled.setdefault(agent_id, []).append(self.compile(agent_id))
        step = FakeStep(self, agent_id, _texts(body))
        reply = self._scripts.get(agent_id, _remember)(step)
        messages = [*step.messages, _message("assistant_message", content=reply)]
        return httpx.Response(
            200,
            json={
                "messages": messages,
                "stop_reason": {"message_type": "stop_reason", "stop_reason": "end_turn"},
                "usage": {"message_type": "usage_statistics", "step_count": 1},
            },
        )

    @route("agents.recompile", "POST", "/v1/agents/{agent_id}/recompile")
    def _recompile(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        if agent_id not in self.agents:
            return self._missing("agent", agent_id)
        return httpx.Response(200, json=self.compile(agent_id))

    def _agent_state(self, agent_id: str) -> httpx.Response:
        blocks = [self.blocks[b] for b in self.agents[agent_id]["blocks"].values()]
        return httpx.Response(200, json={"id": agent_id, "name": agent_id, "blocks": blocks})

    @route(
        "agent_blocks.attach", "PATCH", "/v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}"
    )
    def _agent_block_attach(
        self, request: httpx.Request, agent_id: str, block_id: str
    ) -> httpx.Response:
        if agent_id not in self.agents or block_id not in self.blocks:
            return self._missing("agent or block", f"{agent_id}/{block_id}")
        self.agents[agent_id]["blocks"][self.blocks[block_id]["label"]] = block_id
        return self._agent_state(agent_id)

    @route(
        "agent_blocks.detach", "PATCH", "/v1/agents/{agent_id}/core-memory/blocks/detach/{block_id}"
    )
    def _agent_block_detach(
        self, request: httpx.Request, agent_id: str, block_id: str
    ) -> httpx.Response:
        agent = self.agents.get(agent_id)
        if agent is None or block_id not in agent["blocks"].values():
            return self._missing("attached block", block_id)
        agent["blocks"] = {k: v for k, v in agent["blocks"].items() if v != block_id}
        return self._agent_state(agent_id)

    # -- archival memory ------------------------------------------------------------------

    def _agent_archive(self, agent_id: str) -> str | None:
        agent = self.agents.get(agent_id)
        return agent["archive_id"] if agent else None

    @route("agent_passages.create", "POST", "/v1/agents/{agent_id}/archival-memory")
    def _agent_passage_create(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        archive = self._agent(agent_id)["archive_id"]
        body = self._body_with(request, "text")
        if "metadata" in body:
            return httpx.Response(422, json={"detail": "extra field: metadata"})
        return httpx.Response(200, json=[self._new_passage(archive, body, metadata=False)])

    def _in_archive(self, archive_id: str) -> list[dict[str, Any]]:
        return [p for p in self.passages.values() if p["archive_id"] == archive_id]

    @route("agent_passages.list", "GET", "/v1/agents/{agent_id}/archival-memory")
    def _agent_passage_list(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        archive = self._agent(agent_id)["archive_id"]
        items = self._in_archive(archive)
        params = request.url.params
        if "search" in params:
            items = [p for p in items if params["search"].lower() in p["text"].lower()]
        if params.get("ascending") == "false":
            items = items[::-1]
        return httpx.Response(200, json=_page(items, request))

    @route("agent_passages.search", "GET", "/v1/agents/{agent_id}/archival-memory/search")
    def _agent_passage_search(self, request: httpx.Request, agent_id: str) -> httpx.Response:
        archive = self._agent(agent_id)["archive_id"]
        params = request.url.params
        hits = self._search(
            self._in_archive(archive),
            params.get("query"),
            params.get_list("tags"),
            params.get("tag_match_mode", "any"),
            int(params.get("top_k", 10)),
        )
        results = [
            {"id": p["id"], "content": p["text"], "timestamp": p["created_at"], "tags": p["tags"]}
            for p, _ in hits
        ]
        return httpx.Response(200, json={"count": len(results), "results": results})

    @route("agent_passages.delete", "DELETE", "/v1/agents/{agent_id}/archival-memory/{passage_id}")
    def _agent_passage_delete(
        self, request: httpx.Request, agent_id: str, passage_id: str
    ) -> httpx.Response:
        passage = self.passages.get(passage_id)
        if passage is None or passage["archive_id"] != self._agent_archive(agent_id):
            return self._missing("passage", passage_id)
        del self.passages[passage_id]
        return httpx.Response(200, json={})

    @route("archives.create", "POST", "/v1/archives/")
    def _archive_create(self, request: httpx.Request) -> httpx.Response:
        body = self._body_with(request, "name")
        return httpx.Response(200, json=self._new_archive(body["name"]))

    @route("archive_passages.create", "POST", "/v1/archives/{archive_id}/passages")
    def _archive_passage_create(self, request: httpx.Request, archive_id: str) -> httpx.Response:
        if archive_id not in self.archives:
            return self._missing("archive", archive_id)
        body = self._body_with(request, "text")
        return httpx.Response(200, json=self._new_passage(archive_id, body, metadata=True))

    @route("archive_passages.delete", "DELETE", "/v1/archives/{archive_id}/passages/{passage_id}")
    def _archive_passage_delete(
        self, request: httpx.Request, archive_id: str, passage_id: str
    ) -> httpx.Response:
        passage = self.passages.get(passage_id)
        if passage is None or passage["archive_id"] != archive_id:
            return self._missing("passage", passage_id)
        del self.passages[passage_id]
        return httpx.Response(204)

    @route("passages.search", "POST", "/v1/passages/search")
    def _passage_search(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        items = list(self.passages.values())
        if body.get("archive_id"):
            items = [p for p in items if p["archive_id"] == body["archive_id"]]
        if body.get("agent_id"):
            items = [p for p in items if p["archive_id"] == self._agent_archive(body["agent_id"])]
        hits = self._search(
            items,
            body.get("query"),
            body.get("tags") or [],
            body.get("tag_match_mode", "any"),
            int(body.get("limit", 50)),
        )
        return httpx.Response(
            200,
            json=[{"passage": p, "score": s, "metadata": p["metadata"] or None} for p, s in hits],
        )

    def _search(
        self,
        items: list[dict[str, Any]],
        query: str | None,
        tags: list[str],
        mode: str,
        limit: int,
    ) -> list[tuple[dict[str, Any], float]]:
        if tags:
            test = all if mode == "all" else any
            items = [p for p in items if test(t in p["tags"] for t in tags)]
        scored = [(p, score(query, p["text"])) for p in items]
        scored = [(p, s) for p, s in scored if s > 0]
        scored.sort(key=lambda hit: -hit[1])
        return scored[:limit]


class FakeStep:
    """One agent step of the fake: the inputs' texts, and the agent's memory tools (each edit
    answered with a tool call and its return, as the server reports them)."""

    def __init__(self, server: FakeLettaServer, agent_id: str, texts: list[str]) -> None:
        self.server, self.agent_id, self.texts = server, agent_id, texts
        self.messages: list[dict[str, Any]] = []

    def _tool(self, name: str, arguments: dict[str, Any], result: str) -> None:
        call_id = _id("call")
        call = {"name": name, "arguments": json.dumps(arguments), "tool_call_id": call_id}
        self.messages.append(_message("tool_call_message", tool_call=call))
        self.messages.append(
            _message(
                "tool_return_message",
                name=name,
                status="success",
                tool_call_id=call_id,
                tool_return=result,
            )
        )

    def block(self, label: str) -> dict[str, Any]:
        return self.server.agent_block(self.agent_id, label)

    def append(self, label: str, text: str) -> None:
        """``core_memory_append``: only a block attached to the agent can be edited."""
        self.block(label)["value"] += f"\n{text}"
        self._tool("core_memory_append", {"label": label, "content": text}, "None")

    def replace(self, label: str, old: str, new: str) -> None:
        block = self.block(label)
        block["value"] = block["value"].replace(old, new)
        self._tool("core_memory_replace", {"label": label, "old": old, "new": new}, "None")

    def fetch(self, url: str, text: str) -> None:
        """A tool the agent ran whose output it read (a web page)."""
        self._tool("web_fetch", {"url": url}, text)


def _remember(step: FakeStep) -> str:
    for text in step.texts:
        if text.startswith("remember ") and "human" in step.server.agents[step.agent_id]["blocks"]:
            step.append("human", text.removeprefix("remember "))
    return "ok"


def _texts(body: dict[str, Any]) -> list[str]:
    given = body.get("input")
    texts = [given] if isinstance(given, str) else []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
    return texts


def _message(kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": _id("message"), "date": _now(), "message_type": kind, **fields}


__all__ = ["FakeLettaServer", "FakeStep"]
