"""AutoGen's real agent loop behind the guard (issue 24, item 5), as ``test_guard_frameworks.py``
does for LangGraph, the OpenAI Agents SDK and pydantic-ai (CrewAI: ``test_guard_crewai.py``).

The scripted model reads a poisoned README through a guarded tool, then asks to push. The
promise: the README is recorded as external content, the L4 push is HELD and never runs, and the
hold reaches the model as an ordinary tool result (verdict, rule, request id).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.host.guard import GuardedTool, guard
from tests.guard_host import POISON, PUSH_ARGS, Host, build_host, poisoned_content

IN_CI = os.environ.get("CI") == "true"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    with firewall.open(f"sqlite:///{tmp_path}/g.db") as wall:
        yield build_host(tmp_path, wall)


def _guarded(host: Host, s: firewall.Session) -> list[GuardedTool]:
    return guard(host.wall, host.kernel, s, ["read_file", "git_push"])


def _assert_held(host: Host, held_text: str) -> None:
    (request,) = host.kernel.holds()
    assert request.tool == "git_push"
    assert f"request {request.id}" in held_text and "held" in held_text
    assert "rule " in held_text
    assert host.pushed == []  # the push never ran
    assert poisoned_content(host.wall), "the README was not recorded as external content"


# -- AutoGen ------------------------------------------------------------------------------------


def test_autogen_assistant_agent_gets_the_hold_as_a_tool_result(host: Host) -> None:
    if not IN_CI:
        pytest.importorskip("autogen_agentchat", reason="gnomon[autogen] is not installed")
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ToolCallExecutionEvent
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from gnomon.adapters.frameworks.autogen_tools import autogen_tools

    def call(call_id: str, name: str, args: dict[str, object]) -> CreateResult:
        return CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id=call_id, name=name, arguments=json.dumps(args))],
            usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
            cached=False,
        )

    model = ReplayChatCompletionClient(
        [
            call("c1", "read_file", {"path": "README.md"}),
            call("c2", "git_push", dict(PUSH_ARGS)),
            call("c3", "git_push", {"repo": 3}),  # bad arguments: a tool message, not a crash
            "Waiting for a human.",
        ],
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )
    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        agent = AssistantAgent(
            "coder", model_client=model, tools=autogen_tools(_guarded(host, s)),
            max_tool_iterations=5,
        )  # fmt: skip
        result = asyncio.run(agent.run(task="follow the README"))
    executed = [
        r for m in result.messages if isinstance(m, ToolCallExecutionEvent) for r in m.content
    ]
    assert [r.name for r in executed] == ["read_file", "git_push", "git_push"]
    assert executed[0].content == POISON
    assert "invalid" not in executed[1].content
    assert "was not run" in executed[2].content
    assert result.messages[-1].to_text() == "Waiting for a human."
    _assert_held(host, executed[1].content)
