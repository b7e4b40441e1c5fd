"""Guarded tools as OpenAI Agents SDK ``FunctionTool`` objects.

A held or denied call returns an ordinary tool output (the model reads it as the call's
result) naming the verdict, rule and request id, so the agent can re-plan; it never raises
into the SDK's runner. The call runs in the runner's event loop (``GuardedTool.ainvoke``): a
hold waited out (``hold_timeout``) does not block the loop. ``pip install 'gnomon[openai-agents]'``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("OpenAI Agents", "agents", extra="openai-agents"):
    from agents import FunctionTool


def openai_agents_tools(tools: Sequence[GuardedTool]) -> list[FunctionTool]:
    """OpenAI Agents SDK function tools over guarded tools."""
    return [_one(tool) for tool in tools]


def _one(tool: GuardedTool) -> FunctionTool:
    async def invoke(_ctx: Any, raw: str) -> str:
        try:
            args = json.loads(raw or "{}")
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return f"gnomon: {tool.name} was not run: arguments must be a JSON object"
        return (await tool.ainvoke(args)).text

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.input_schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


__all__ = ["openai_agents_tools"]
