"""Guarded tools as LangChain ``BaseTool`` objects (for LangGraph's ``ToolNode`` and agents).

A held or denied call comes back as an ordinary ``ToolMessage`` (``status="error"``) that names
the verdict, rule and request id, so the model can re-plan; ``artifact`` carries the structured
verdict. ``pip install gnomon[langchain]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("LangChain", "langchain_core", extra="langchain"):
    from langchain_core.tools import StructuredTool


def langchain_tools(tools: Sequence[GuardedTool]) -> list[StructuredTool]:
    """LangChain tools over guarded tools (their argument schemas are the contracts' inputs)."""
    return [_one(tool) for tool in tools]


def _one(tool: GuardedTool) -> StructuredTool:
    def run(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        reply = tool(kwargs)
        return reply.text, {"is_error": reply.is_error, **reply.meta}

    made: StructuredTool = StructuredTool.from_function(
        func=run,
        name=tool.name,
        description=tool.description,
        args_schema=tool.inputs_model or tool.input_schema,
        response_format="content_and_artifact",
    )
    return made


__all__ = ["langchain_tools"]
