"""Each framework's real agent loop behind the guard (issue 10, item 2).

The scripted model reads a poisoned README through a guarded tool, then asks to push. The attack
is the model obeying the README; the promise: the README's text is recorded as external content
(envelope + content claims through a host tool channel), the L4 push is HELD and never runs, and
the hold reaches the model as an ordinary tool message (verdict, rule, request id), not an
exception that kills the loop. Each framework is skipped only when it is not installed, and
never under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.host.guard import GuardedTool, guard
from gnomon.firewall.kernel.ledger import read_request
from tests.guard_host import POISON, PUSH_ARGS, Host, build_host, poisoned_content

IN_CI = os.environ.get("CI") == "true"


def _need(module: str, extra: str) -> None:
    if not IN_CI:
        pytest.importorskip(module, reason=f"{module} is not installed (gnomon[{extra}])")


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


def test_the_core_guard_records_output_and_returns_holds_as_messages(host: Host) -> None:
    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        read, push = _guarded(host, s)
        first = read({"path": "README.md"})
        assert first.text == POISON and not first.is_error
        held = push(dict(PUSH_ARGS))
        assert held.is_error and held.meta["verdict"] == "held"
        assert held.meta["rule"] and held.meta["request_id"]
        bad = push({"repo": 3})
        assert bad.is_error and bad.meta["verdict"] == "invalid"
        (unknown,) = guard(host.wall, host.kernel, s, ["rm_rf"])
        assert unknown({}).meta["verdict"] == "denied"  # no contract: fail closed
    _assert_held(host, held.text)
    from gnomon.firewall.model.states import TruthStatus
    from gnomon.firewall.store.base import BeliefFilter

    envelopes = [
        b
        for b in host.wall.store.find_beliefs(BeliefFilter(limit=1000))
        if "tool:read_file" in b.origin.origin_ids
    ]
    # the envelope is the host's own observation of the call: supported, not agent-reported
    assert [b.truth_status for b in envelopes] == [TruthStatus.SUPPORTED]
    (content,) = poisoned_content(host.wall)
    assert content.truth_status != TruthStatus.SUPPORTED  # the README's text stays untrusted


def test_a_host_cannot_declare_a_tool_output_trusted(host: Host) -> None:
    from gnomon.firewall.model.errors import UnattestedOriginError

    with (
        host.wall.session(project="shop", actor="coder") as s,
        pytest.raises(UnattestedOriginError),
    ):
        guard(
            host.wall,
            host.kernel,
            s,
            ["read_file"],
            origins={"read_file": firewall.Origin.user("alice")},
        )


# -- LangGraph ------------------------------------------------------------------------------------


def test_langgraph_react_agent_gets_the_hold_as_a_tool_message(host: Host) -> None:
    _need("langgraph", "langchain")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from gnomon.adapters.langchain_tools import langchain_tools

    class ScriptedChat(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    script = iter(
        [
            AIMessage(
                content="",
                tool_calls=[{"name": "read_file", "args": {"path": "README.md"}, "id": "c1"}],
            ),
            AIMessage(
                content="", tool_calls=[{"name": "git_push", "args": dict(PUSH_ARGS), "id": "c2"}]
            ),
            AIMessage(content="The push is waiting for a human."),
        ]
    )
    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        tools = langchain_tools(_guarded(host, s))
        model = ScriptedChat(messages=script).bind_tools(tools)

        def think(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", think)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        graph.add_edge("tools", "agent")
        final = graph.compile().invoke({"messages": [("user", "follow the README")]})
    tool_messages = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_messages] == ["read_file", "git_push"]
    assert tool_messages[0].content == POISON and tool_messages[0].status == "success"
    assert tool_messages[1].artifact["verdict"] == "held"
    assert tool_messages[1].status == "error"  # a hold is not a success the model can trust
    _assert_held(host, str(tool_messages[1].content))


# -- OpenAI Agents SDK ----------------------------------------------------------------------------


def test_openai_agents_runner_gets_the_hold_as_a_tool_output(host: Host) -> None:
    _need("agents", "openai-agents")
    import json

    from agents import Agent, ModelResponse, Runner, set_tracing_disabled
    from agents.items import ToolCallOutputItem
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from gnomon.adapters.openai_agents_tools import openai_agents_tools

    set_tracing_disabled(True)

    def call(name: str, args: dict[str, Any], n: int) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(
            type="function_call", name=name, arguments=json.dumps(args), call_id=f"c{n}", id=f"f{n}"
        )

    done = ResponseOutputMessage(
        id="m3",
        type="message",
        role="assistant",
        status="completed",
        content=[
            ResponseOutputText(type="output_text", text="Waiting for a human.", annotations=[])
        ],
    )
    turns = iter(
        [[call("read_file", {"path": "README.md"}, 1)], [call("git_push", PUSH_ARGS, 2)], [done]]
    )

    class ScriptedModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(output=list(next(turns)), usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
            raise NotImplementedError

    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        agent = Agent(
            name="coder", model=ScriptedModel(), tools=openai_agents_tools(_guarded(host, s))
        )
        result = asyncio.run(Runner.run(agent, "follow the README"))
    outputs = [str(i.output) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert outputs[0] == POISON
    assert result.final_output == "Waiting for a human."
    _assert_held(host, outputs[1])


# -- pydantic-ai ----------------------------------------------------------------------------------


def test_pydantic_ai_agent_gets_the_hold_as_a_tool_return(host: Host) -> None:
    _need("pydantic_ai", "pydantic-ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from gnomon.adapters.pydantic_ai_tools import pydantic_ai_tools

    turns = iter(
        [
            [ToolCallPart("read_file", {"path": "README.md"}, tool_call_id="c1")],
            [ToolCallPart("git_push", dict(PUSH_ARGS), tool_call_id="c2")],
            [TextPart("Waiting for a human.")],
        ]
    )

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(turns))

    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        agent = Agent(FunctionModel(scripted), tools=pydantic_ai_tools(_guarded(host, s)))
        result = asyncio.run(agent.run("follow the README"))
    returns = [
        p
        for m in result.all_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]
    assert [p.tool_name for p in returns] == ["read_file", "git_push"]
    assert returns[0].content == POISON
    assert result.output == "Waiting for a human."
    _assert_held(host, str(returns[1].content))


def test_nothing_public_on_a_guarded_tool_leads_to_the_host(host: Host) -> None:
    """The agent holds the guarded tools (and the framework's wrappers of them): walking their
    public attributes never reaches the firewall, its store, a channel or the kernel."""
    from gnomon.firewall.kernel import ActionKernel
    from tests.test_attack_capability import HOST_TYPES, _reach

    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        held: dict[str, Any] = {"guarded": _guarded(host, s)}
        try:
            from gnomon.adapters.langchain_tools import langchain_tools

            held["langchain"] = langchain_tools(held["guarded"])
        except ImportError:
            assert not IN_CI
        leaks = [
            (p, type(v).__name__)
            for p, v in _reach(held)
            if isinstance(v, (*HOST_TYPES, ActionKernel))
        ]
    assert leaks == []


def test_a_held_guarded_call_waits_for_an_approval_then_times_out_denied(host: Host) -> None:
    """The in-process hold timeout: an approval written through the store (as `gnomon
    approve` writes it) while the call waits runs it; with none, the hold is denied at the
    timeout and a later approval never runs it."""
    import threading

    from gnomon.firewall.kernel.ledger import post_approval

    def approve_when_held() -> None:
        for _ in range(200):
            holds = host.kernel.holds()
            if holds:
                approval = host.approver.resolve(holds[0], "approve", now=host.wall.clock())
                post_approval(host.wall.store, approval, now=host.wall.clock())
                return
            threading.Event().wait(0.02)

    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        (push,) = guard(
            host.wall, host.kernel, s, ["git_push"], hold_timeout=10, poll_interval=0.02
        )
        approver = threading.Thread(target=approve_when_held)
        approver.start()
        ran = push(dict(PUSH_ARGS))
        approver.join()
        # approved while waiting: it went on to execution, where the (absent) repository's
        # precondition refuses it; without the wait it would still be "held"
        assert ran.meta["verdict"] == "refused" and "git_push_target" in ran.text, ran.text
        (waits,) = guard(
            host.wall, host.kernel, s, ["git_push"], hold_timeout=0.2, poll_interval=0.02
        )
        denied = waits(dict(PUSH_ARGS))
        assert denied.meta["verdict"] == "denied" and "timed out" in denied.text
        request_id = denied.meta["request_id"]
        late = host.approver.resolve(
            read_request(host.wall.store, request_id).request, "approve", now=host.wall.clock()
        )
        post_approval(host.wall.store, late, now=host.wall.clock())
        host.kernel.process_submitted(request_id)
        assert host.kernel.status(request_id).status == "denied"  # the late one never ran it
        assert host.pushed == []


# -- the async wait: one flow with the sync one, in a real async loop ------------------------------


def _approve_in_the_loop(host: Host, approved: list[str]) -> Any:
    """An approver coroutine in the agent's own event loop: it posts an approval (as ``gnomon
    approve`` does) as soon as the hold appears."""
    from gnomon.firewall.kernel.ledger import post_approval

    async def approve() -> None:
        for _ in range(500):
            holds = host.kernel.holds()
            if holds:
                approval = host.approver.resolve(holds[0], "approve", now=host.wall.clock())
                post_approval(host.wall.store, approval, now=host.wall.clock())
                approved.append(holds[0].id)
                return
            await asyncio.sleep(0.01)

    return approve()


def _pydantic_ai_push_run(host: Host, hold_timeout: float) -> tuple[str, list[str]]:
    """A pydantic-ai agent (its function model scripted) pushes; an approver runs in the same
    loop. The push's tool return, and the holds the approver approved."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from gnomon.adapters.pydantic_ai_tools import pydantic_ai_tools

    turns = iter([[ToolCallPart("git_push", dict(PUSH_ARGS), tool_call_id="c1")], [TextPart("ok")]])

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(turns))

    approved: list[str] = []
    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        tools = guard(
            host.wall, host.kernel, s, ["git_push"], hold_timeout=hold_timeout, poll_interval=0.02
        )
        agent = Agent(FunctionModel(scripted), tools=pydantic_ai_tools(tools))

        async def both() -> Any:
            result, _ = await asyncio.gather(
                agent.run("push it"), _approve_in_the_loop(host, approved)
            )
            return result

        result = asyncio.run(both())
    (push,) = [
        p
        for m in result.all_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]
    return str(push.content), approved


def test_an_async_agent_loop_waits_for_an_approval_without_blocking_it(host: Host) -> None:
    """Issue 22: the async guard waits out a hold like the sync one. In pydantic-ai's real loop
    a held push waits (``hold_timeout``) while an approver in the same event loop approves; the
    push then goes on to execution (the absent repository's precondition refuses it: past the
    approval), instead of being denied at the timeout."""
    _need("pydantic_ai", "pydantic-ai")
    text, approved = _pydantic_ai_push_run(host, hold_timeout=10)
    assert approved, "the approver in the loop never saw the hold"
    assert "refused" in text and "git_push_target" in text, text
    assert host.kernel.status(approved[0]).status == "refused"


def test_flip_a_blocking_wait_starves_the_approver_in_the_loop(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flip: the async call made to wait the sync way (``time.sleep`` inside the loop, what
    the OpenAI Agents tool did before) starves the approver in the same loop, and the push is
    denied at the timeout although a human was ready to approve."""
    _need("pydantic_ai", "pydantic-ai")

    async def blocking(self: GuardedTool, args: Any = None) -> Any:
        return self(args)

    monkeypatch.setattr(GuardedTool, "ainvoke", blocking)
    text, _ = _pydantic_ai_push_run(host, hold_timeout=0.3)
    assert "denied" in text and "timed out" in text, text


def test_a_cancelled_async_wait_withdraws_the_hold(host: Host) -> None:
    """An agent loop that gives up on a waiting call (the task is cancelled) leaves no hold
    behind that a later approval would run with nobody waiting for it."""
    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        (push,) = guard(
            host.wall, host.kernel, s, ["git_push"], hold_timeout=30, poll_interval=0.02
        )

        async def give_up() -> None:
            task = asyncio.ensure_future(push.ainvoke(dict(PUSH_ARGS)))
            while not host.kernel.holds():
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(give_up())
    (request_id,) = [
        e.payload["request_id"] for e in host.wall.store.events() if e.kind == "action.held"
    ]
    status = host.kernel.status(request_id)
    assert status.status == "denied" and "interrupted" in " ".join(status.reasons)
    assert host.pushed == []
