"""``gnomon mcp serve``: a firewalled memory for any MCP client (``pip install 'gnomon[mcp]'``).

Three tools, all on one host-side :class:`~firewall.Session` the client never touches:

* ``recall(query, k)``: a recall through the server's (non-privileged) context policy, rendered
  as the model-bound block of :meth:`~firewall.gate.recall.RecallResult.render` (trusted facts, then
  quoted untrusted data, then caveats); quarantined and rejected memories never reach the client;
* ``why(belief_id)``: the provenance of a belief this connection was *shown* by ``recall`` (any
  other id, and one quarantined since it was shown, is answered "not shown to you");
* ``remember(statement)``: an agent-authored write, adopted unverified and labelled with
  everything the session has read (it can never be stored as the user's or a tool's word);
* ``forget(belief_id, reason)``: a request to erase a memory this connection was shown, recorded
  and held for an operator (``gnomon forget --requests``); nothing is erased on the agent's word.

There is no audit tool, no grant, no approval and no policy switch over MCP: the privileged
paths stay with the host's command line.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from gnomon import firewall
from gnomon.firewall.audit.why import why
from gnomon.firewall.gate.policy import floor_reasons
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.content import MAX_QUERY_CHARS, checked_text
from gnomon.firewall.model.errors import GnomonError
from gnomon.firewall.model.render import model_line


def _tool(name: str, description: str, properties: dict[str, Any], *required: str) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return types.Tool(name=name, description=description, input_schema=schema)


_TEXT = {"type": "string"}
TOOLS = [
    _tool(
        "recall",
        "Recall memories about QUERY, filtered by the firewall's context policy.",
        {"query": _TEXT, "k": {"type": "integer", "minimum": 1, "maximum": 50}},
        "query",
    ),
    _tool(
        "why",
        "Why a recalled memory is believed: its origin, truth status and evidence.",
        {"belief_id": _TEXT},
        "belief_id",
    ),
    _tool(
        "remember",
        "Remember a statement (stored as your own, unverified, note).",
        {"statement": _TEXT},
        "statement",
    ),
    _tool(
        "forget",
        "Ask the operator to erase a recalled memory (a held request: nothing is erased now).",
        {"belief_id": _TEXT, "reason": _TEXT},
        "belief_id",
    ),
]


class MemoryServer:
    """Host-side: the session behind one MCP connection, and the ids it was shown."""

    def __init__(self, wall: firewall.Firewall, session: Session, policy: str) -> None:
        self._wall = wall
        self._session = session
        self._policy = policy
        self._shown: set[str] = set()

    def call(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """``(text, is_error)`` for one tool call; bad input is an error result, not a crash."""
        try:
            if name == "recall":
                return self._recall(args), False
            if name == "why":
                return self._why(args)
            if name == "remember":
                statement = _str(args, "statement", self._wall.max_block_bytes)
                belief = self._session.remember(statement)
                return f"remembered {belief.id} (unverified, your own note)", False
            if name == "forget":
                return self._forget(args)
        except GnomonError as exc:
            return f"gnomon: {exc}", True
        shown = model_line(name[:MAX_TOOL_SHOWN])  # a name is echoed, never a payload
        return f"gnomon: no tool {shown!s} (tools: recall, why, remember, forget)", True

    def _recall(self, args: dict[str, Any]) -> str:
        k = args.get("k", 10)
        result = self._session.recall(_str(args, "query"), policy=self._policy, k=k)
        self._shown.update(b.id for b in result.shown())
        rendered = result.render()
        if result.accepted:  # the trusted facts carry no id in the block: name them for why
            rendered += "\n(ask why(belief_id) about the trusted facts above, in order: "
            rendered += ", ".join(model_line(b.id) for b in result.accepted) + ")"
        return rendered

    def _forget(self, args: dict[str, Any]) -> tuple[str, bool]:
        """A held erasure request for an id this connection was shown (any other is unknown)."""
        belief_id = _str(args, "belief_id", MAX_ID_CHARS, line=True)
        if belief_id not in self._shown:
            return f"{model_line(belief_id)}: not shown to you by recall on this connection", True
        reason = _str(args, "reason") if "reason" in args else ""
        request = self._session.request_forget(belief_id, reason)
        return (
            f"request {request} recorded and held for an operator; nothing was erased "
            "(the operator decides)",
            False,
        )

    def _why(self, args: dict[str, Any]) -> tuple[str, bool]:
        """``(text, is_error)``: an id this connection was not shown (or no longer may see) is
        an error result."""
        belief_id = _str(args, "belief_id", MAX_ID_CHARS, line=True)
        unknown = f"{model_line(belief_id)}: not shown to you by recall on this connection"
        if belief_id not in self._shown:
            return unknown, True
        (entry,) = why(self._wall.store, belief_id, limit=1).entries
        b = entry.belief
        if floor_reasons(b):  # quarantined (or hidden, blocked) since it was shown
            return unknown, True
        text = "\n".join(
            [
                f"belief {b.id}: {model_line(b.statement)}",
                f"truth: {b.truth_status}; origin: {model_line(b.origin.describe())}",
                f"verified against its source: {entry.verified_against_source}",
            ]
        )
        return text, False

    def server(self) -> Server[Any]:
        async def list_tools(
            _ctx: Any, _params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=TOOLS)

        async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            text, is_error = self.call(params.name, dict(params.arguments or {}))
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)

        return Server("gnomon-memory", on_list_tools=list_tools, on_call_tool=call_tool)


#: How much of an unknown tool's name an error result echoes.
MAX_TOOL_SHOWN = 64
#: The longest belief id ``why`` accepts (ids are far shorter).
MAX_ID_CHARS = 200


def _str(
    args: dict[str, Any], key: str, limit: int = MAX_QUERY_CHARS, *, line: bool = False
) -> str:
    """The string argument ``key``, bounded (:func:`firewall.model.content.checked_text`)."""
    from gnomon.firewall.model.errors import InputError

    value = args.get(key)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a string", hint=f"call with {{'{key}': '...'}}")
    return checked_text(key, value, limit=limit, line=line)


async def serve_memory(
    url: str, *, project: str, actor: str, user: str | None, policy: str = "default"
) -> None:
    """Serve the memory tools over this process's stdio until the client disconnects."""
    from gnomon.firewall.gate.policy import resolve

    if resolve(policy).privileged:
        from gnomon.firewall.model.errors import MissingGrantError

        raise MissingGrantError(
            f"policy {policy!r} is privileged: the audit path is never served over MCP",
            hint="use gnomon recall/why on the host for audits",
        )
    with firewall.open(url) as wall, wall.session(project=project, actor=actor, user=user) as s:
        server = MemoryServer(wall, s, policy).server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


__all__ = ["TOOLS", "MemoryServer", "serve_memory"]
