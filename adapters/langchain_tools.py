"""Guarded tools as LangChain ``BaseTool`` objects (for LangGraph's ``ToolNode`` and agents).

A held or denied call comes back as an ordinary ``ToolMessage`` (``status="error"``) that names
the verdict, rule and request id, so the model can re-plan; ``artifact`` carries the structured
verdict. ``pip install gnomon[langchain]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("LangChain", "langchain_core", extra="langchain"):
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import StructuredTool


class GuardedStructuredTool(StructuredTool):
    """A ``StructuredTool`` whose ``ToolMessage`` says ``status="error"`` when the call was held
    or denied (LangChain marks a returned result ``"success"`` unless the tool raised)."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """LangChain's run, with the status of a held or denied call set to ``"error"``."""
        return _status(super().run(*args, **kwargs))

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        """LangChain's arun, with the status of a held or denied call set to ``"error"``."""
        return _status(await super().arun(*args, **kwargs))


def _status(output: Any) -> Any:
    artifact = output.artifact if isinstance(output, ToolMessage) else None
    if isinstance(artifact, dict) and artifact.get("is_error"):
        output.status = "error"
    return output


def langchain_tools(tools: Sequence[GuardedTool]) -> list[GuardedStructuredTool]:
    """LangChain tools over guarded tools (their argument schemas are the contracts' inputs)."""
    return [_one(tool) for tool in tools]


def _one(tool: GuardedTool) -> GuardedStructuredTool:
    def run(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        reply = tool(kwargs)
        return reply.text, {"is_error": reply.is_error, **reply.meta}

    async def arun(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        # in the event loop, not a worker thread: a hold is waited out without blocking it
        reply = await tool.ainvoke(kwargs)
        return reply.text, {"is_error": reply.is_error, **reply.meta}

    made = GuardedStructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=tool.name,
        description=tool.description,
        args_schema=tool.inputs_model or tool.input_schema,
        response_format="content_and_artifact",
    )
    return cast(GuardedStructuredTool, made)


__all__ = ["GuardedStructuredTool", "langchain_tools"]
