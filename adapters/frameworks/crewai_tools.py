"""Guarded tools as CrewAI ``BaseTool`` objects (for ``crewai.Agent(tools=...)``).

A held or denied call returns an ordinary tool result (the agent reads it as the observation)
naming the verdict, rule and request id, so it can re-plan; bad arguments come back the same way,
never as an exception into the crew. ``pip install 'gnomon[crewai]'`` (not part of
``gnomon[all]``: CrewAI pins ``mcp``, ``openai`` and ``pydantic`` below what the other extras
need, so install it in its own environment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("CrewAI", "crewai", extra="crewai"):
    from crewai.tools import BaseTool


class _AnyArgs(BaseModel):
    """The arguments of a tool no contract names (the kernel denies every call to it)."""

    model_config = ConfigDict(extra="allow")


class CrewAIGuardedTool(BaseTool):  # type: ignore[misc]
    """One guarded tool as a CrewAI tool; its argument schema is the contract's inputs."""

    _guarded: GuardedTool = PrivateAttr()

    def _run(self, *args: Any, **kwargs: Any) -> str:
        if args:
            return f"gnomon: {self.name} was not run: pass the arguments by name"
        kwargs.pop(_CREWAI_CONTEXT, None)  # CrewAI's own, added to every call
        return self._guarded(kwargs).text


#: the argument CrewAI adds to every tool call (the agent's fingerprint)
_CREWAI_CONTEXT = "security_context"


def _schema(tool: GuardedTool) -> type[BaseModel]:
    """The contract's inputs, open to CrewAI's own ``security_context`` (and to anything else
    the model passes: the guard checks the arguments against the contract, strictly, and answers
    extra ones with a tool message)."""
    inputs = tool.inputs_model
    if inputs is None:
        return _AnyArgs
    config = ConfigDict(**{**inputs.model_config, "extra": "allow", "strict": False})
    made: type[BaseModel] = type(f"{inputs.__name__}ForCrewAI", (inputs,), {"model_config": config})
    return made


def crewai_tools(tools: Sequence[GuardedTool]) -> list[CrewAIGuardedTool]:
    """CrewAI tools over guarded tools."""
    out = []
    for tool in tools:
        made = CrewAIGuardedTool(
            name=tool.name,
            description=tool.description,
            args_schema=_schema(tool),
        )
        made._guarded = tool
        out.append(made)
    return out


__all__ = ["CrewAIGuardedTool", "crewai_tools"]
