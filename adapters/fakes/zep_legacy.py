"""An in-process fake of the legacy Zep v2 API (``/api/v2``, what ``zep-python`` 2.0.2 speaks):
sessions, their messages (``uuid`` wire names, caller metadata kept and merged on PATCH),
``memory`` reads with facts and a summary, and ``sessions/search``.

Fact extraction is deterministic instead of an LLM: every sentence of every message becomes a
session fact, so facts carry the text of whatever was written, with no provenance, as Zep's do.

>>> import httpx
>>> from zep_python.client import Zep
>>> from zep_python.types import Message
>>> server = FakeLegacyZepServer()
>>> zep = Zep(api_key="k", base_url="http://zep.test",
...           httpx_client=httpx.Client(transport=server.transport()))
>>> _ = zep.memory.add_session(session_id="s1")
>>> _ = zep.memory.add("s1", messages=[Message(role="ada", role_type="user", content="Hi.")])
>>> [m.content for m in zep.memory.get("s1").messages]
['Hi.']
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from gnomon.adapters.fakes._http import FakeServer, json_of, route, score

PREFIX = "/api/v2"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


class FakeLegacyZepServer(FakeServer):
    prefix = PREFIX

    def __init__(self) -> None:
        super().__init__()
        self.sessions: dict[str, dict[str, Any]] = {}
        #: session id -> its messages, oldest first
        self.messages: dict[str, list[dict[str, Any]]] = {}

    @staticmethod
    def _missing(what: str) -> httpx.Response:
        return httpx.Response(404, json={"message": f"{what} not found"})

    def message(self, session_id: str, message_uuid: str) -> dict[str, Any] | None:
        return next(
            (m for m in self.messages.get(session_id, []) if m["uuid"] == message_uuid), None
        )

    def facts(self, session_id: str) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for m in self.messages.get(session_id, []):
            for s in sentences(m["content"]):
                key = hashlib.sha256(f"{session_id}\n{s}".encode()).hexdigest()[:32]
                seen.setdefault(s, {"uuid": key, "fact": s, "rating": 1.0, "created_at": _now()})
        return list(seen.values())

    # handlers

    @route("memory.add_session", "POST", "/sessions")
    def _add_session(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        sid = body["session_id"]
        self.sessions.setdefault(
            sid,
            {
                "session_id": sid,
                "uuid": str(uuid.uuid4()),
                "user_id": body.get("user_id"),
                "metadata": body.get("metadata"),
                "created_at": _now(),
            },
        )
        self.messages.setdefault(sid, [])
        return httpx.Response(201, json=self.sessions[sid])

    @route("memory.get_session", "GET", "/sessions/{session_id}")
    def _get_session(self, request: httpx.Request, session_id: str) -> httpx.Response:
        if session_id not in self.sessions:
            return self._missing("session")
        return httpx.Response(200, json=self.sessions[session_id])

    @route("memory.add", "POST", "/sessions/{session_id}/memory")
    def _add(self, request: httpx.Request, session_id: str) -> httpx.Response:
        body = json_of(request)
        self.messages.setdefault(session_id, [])
        self.sessions.setdefault(session_id, {"session_id": session_id, "uuid": str(uuid.uuid4())})
        for m in body.get("messages") or []:
            if not isinstance(m.get("content"), str):
                return httpx.Response(400, json={"message": "content is required"})
            self.messages[session_id].append(
                {
                    "uuid": str(uuid.uuid4()),
                    "role": m.get("role"),
                    "role_type": m.get("role_type"),
                    "content": m["content"],
                    "metadata": m.get("metadata") or {},
                    "created_at": _now(),
                    "token_count": len(m["content"].split()),
                }
            )
        return httpx.Response(200, json={"message": "OK"})

    @route("memory.get", "GET", "/sessions/{session_id}/memory")
    def _get(self, request: httpx.Request, session_id: str) -> httpx.Response:
        if session_id not in self.messages:
            return self._missing("session")
        lastn = request.url.params.get("lastn") or ""  # zep-python sends "lastn=" when unset
        messages = self.messages[session_id]
        if lastn:
            messages = messages[-int(lastn) :]
        facts = self.facts(session_id)
        summary = None
        if self.messages[session_id]:
            text = " ".join(m["content"] for m in self.messages[session_id])
            summary = {"uuid": f"sum-{session_id}", "content": f"Summary: {text}"}
        return httpx.Response(
            200,
            json={
                "messages": messages,
                "relevant_facts": facts,
                "facts": [f["fact"] for f in facts],
                "summary": summary,
                "metadata": {},
            },
        )

    @route("memory.get_session_messages", "GET", "/sessions/{session_id}/messages")
    def _list(self, request: httpx.Request, session_id: str) -> httpx.Response:
        if session_id not in self.messages:
            return self._missing("session")
        params = request.url.params
        limit = int(params.get("limit") or 100)
        page = int(params.get("cursor") or 1)
        messages = self.messages[session_id]
        rows = messages[(page - 1) * limit : page * limit]
        return httpx.Response(
            200, json={"messages": rows, "row_count": len(rows), "total_count": len(messages)}
        )

    @route("memory.get_session_message", "GET", "/sessions/{session_id}/messages/{message_uuid}")
    def _message_get(
        self, request: httpx.Request, session_id: str, message_uuid: str
    ) -> httpx.Response:
        found = self.message(session_id, message_uuid)
        return httpx.Response(200, json=found) if found else self._missing("message")

    @route(
        "memory.update_message_metadata", "PATCH", "/sessions/{session_id}/messages/{message_uuid}"
    )
    def _message_update(
        self, request: httpx.Request, session_id: str, message_uuid: str
    ) -> httpx.Response:
        found = self.message(session_id, message_uuid)
        if found is None:
            return self._missing("message")
        found["metadata"] = {
            **(found.get("metadata") or {}),
            **(json_of(request)["metadata"] or {}),
        }
        return httpx.Response(200, json=found)

    @route("memory.search_sessions", "POST", "/sessions/search")
    def _search(self, request: httpx.Request) -> httpx.Response:
        body = json_of(request)
        limit = int(request.url.params.get("limit") or 10)
        text = body.get("text") or ""
        sessions = body.get("session_ids") or list(self.messages)
        scope = body.get("search_scope") or "messages"
        results: list[dict[str, Any]] = []
        for sid in sessions:
            if scope == "facts":
                for f in self.facts(sid):
                    results.append({"fact": f, "score": score(text, f["fact"]), "session_id": sid})
            else:
                for m in self.messages.get(sid, []):
                    results.append(
                        {"message": m, "score": score(text, m["content"]), "session_id": sid}
                    )
        results = [r for r in results if r["score"] > 0]
        results.sort(key=lambda r: -r["score"])
        return httpx.Response(200, json={"results": results[:limit]})
