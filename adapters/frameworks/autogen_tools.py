"""Guarded tools as AutoGen ``BaseTool`` objects (for ``autogen_agentchat`` agents such as
``AssistantAgent``).

A held or denied call returns an ordinary tool result (the model reads it as the call's output)
naming the verdict, rule and request id, so the agent can re-plan; bad arguments come back the
same way (the guard checks them against the contract), never as an exception into the agent's
loop. ``pip install 'gnomon[autogen]'``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from gnomon.adapters.errors import sdk_imports
from gnomon.firewall.host.guard import GuardedTool

with sdk_imports("AutoGen", "autogen-agentchat", extra="autogen"):
    from autogen_core import CancellationToken
    from autogen_core.tools import BaseTool


class _AnyArgs(BaseModel):
    """The arguments of a tool no contract names (the kernel denies every call to it)."""

    model_config = ConfigDict(extra="allow")


class AutoGenGuardedTool(BaseTool[BaseModel, str]):
    """One guarded tool as an AutoGen tool; its argument schema is the contract's inputs."""

    def __init__(self, tool: GuardedTool) -> None:
        super().__init__(tool.inputs_model or _AnyArgs, str, tool.name, tool.description)
        self._guarded = tool

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
        return (await self._guarded.ainvoke(args.model_dump(mode="json"))).text

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        # the raw arguments go to the guard, which checks them against the contract and answers
        # an invalid call with a tool message (AutoGen's own validation would raise instead)
        return (await self._guarded.ainvoke(dict(args))).text


def autogen_tools(tools: Sequence[GuardedTool]) -> list[AutoGenGuardedTool]:
    """AutoGen tools over guarded tools."""
    return [AutoGenGuardedTool(tool) for tool in tools]


__all__ = ["AutoGenGuardedTool", "autogen_tools"]
