"""Guarded tools as pydantic-ai ``Tool`` objects.

A held or denied call returns an ordinary tool return (the model reads it as the call's
result) naming the verdict, rule and request id, so the agent can re-plan; it never raises
into the agent's graph. The call runs in the agent's event loop (``GuardedTool.ainvoke``): a
hold waited out (``hold_timeout``) does not block the loop. ``pip install 'gnomon[pydantic-ai]'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("pydantic-ai", "pydantic_ai"):
    from pydantic_ai import Tool


def pydantic_ai_tools(tools: Sequence[GuardedTool]) -> list[Tool[Any]]:
    """pydantic-ai tools over guarded tools (their JSON schemas are the contracts' inputs)."""
    return [_one(tool) for tool in tools]


def _one(tool: GuardedTool) -> Tool[Any]:
    async def run(**kwargs: Any) -> str:
        return (await tool.ainvoke(kwargs)).text

    made: Tool[Any] = Tool.from_schema(
        run, name=tool.name, description=tool.description, json_schema=tool.input_schema
    )
    return made


__all__ = ["pydantic_ai_tools"]
