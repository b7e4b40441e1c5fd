"""The kit as an MCP server, so ``gnomon mcp proxy`` can front it like any other server.

``serve_stdio(kit)`` serves the kit's tools over stdio (each with its contract's input schema);
each call is checked against the contract and run by the kit's executor, and a refusal or bad
arguments come back as an error result, never a crash. The proxy config's ``tools:`` section is
``kit.proxy_tools()``, so the operator's contracts in front of the server are the kit's own::

    # kit_server.py, the command after `gnomon mcp proxy --config proxy.yaml --`
    anyio.run(serve_stdio, Toolkit(Files("/srv/work"), Sql("sqlite:///shop.db")))

``pip install 'gnomon[mcp]'``.
"""

from __future__ import annotations

from typing import Any

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.model.errors import GnomonError
from gnomon.tools.base import Toolkit

with sdk_imports("MCP", "mcp", extra="mcp"):
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server


def kit_server(kit: Toolkit, name: str = "gnomon-tools") -> Server[Any]:
    """A low-level MCP server over ``kit``."""
    listing = [
        types.Tool(
            name=tool,
            description=f"{tool} ({c.category.value}, {c.required_level.name})",
            input_schema=c.inputs.model_json_schema(),
        )
        for tool in kit.names()
        for c in [kit.tool(tool).contract]
    ]

    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text, is_error = call(kit, params.name, dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def call(kit: Toolkit, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
    """``(text, is_error)`` of one call: the arguments checked against the contract, then the
    executor; a refusal is an error result."""
    if tool not in kit.names():
        return f"gnomon: no tool {tool[:64]!r} (tools: {', '.join(kit.names())})", True
    found = kit.tool(tool)
    try:
        output = found.run(found.contract.checked_inputs(args))
    except GnomonError as exc:
        return f"gnomon: {exc}", True
    return str(output), False


async def serve_stdio(kit: Toolkit) -> None:
    """Serve ``kit`` over stdio until the client disconnects."""
    server = kit_server(kit)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


__all__ = ["call", "kit_server", "serve_stdio"]
