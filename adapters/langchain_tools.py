"""Guarded tools as LangChain ``BaseTool`` objects (for LangGraph's ``ToolNode`` and agents).

A held or denied call comes back as an ordinary ``ToolMessage`` (``status="error"``) that names
the verdict, rule and request id, so the model can re-plan; ``artifact`` carries the structured
verdict. ``pip install gnomon[langchain]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnomon.adapters.errors import MissingSDKError
from gnomon.firewall.host.guard import GuardedTool

try:
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingSDKError("LangChain", "langchain", "langchain_core") from exc


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
