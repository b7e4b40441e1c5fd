"""CrewAI's real agent loop behind the guard (issue 24, item 5): a real ``Crew`` whose agent's
LLM is a scripted offline ``BaseLLM`` answering in CrewAI's own ReAct format. The scripted model
reads a poisoned README through a guarded tool, then asks to push: the README is recorded as
external content, the L4 push is HELD and never runs, and the hold reaches the model as the
tool's observation.

CrewAI is outside ``gnomon[all]`` (its releases pin mcp, openai and pydantic below what the other
extras need), so this file is collected only where crewai is installed (``tests/conftest.py``):
CI runs it in its own environment, ``.venv-crewai`` (``pip install -e '.[dev,crewai]'``), through
``tests/test_crewai_venv.py``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.host.guard import GuardedTool, guard
from tests.guard_host import POISON, PUSH_ARGS, Host, build_host, poisoned_content

# crewai's own Agent reads its deprecated fields while it validates itself (crewai 1.15)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


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
    assert host.pushed == []  # the push never ran
    assert poisoned_content(host.wall), "the README was not recorded as external content"


def test_crewai_agent_gets_the_hold_as_a_tool_result(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Crew (one agent, one task) with a scripted offline LLM (CrewAI's ``BaseLLM``
    route) that answers in CrewAI's own ReAct format: read the README, push, give up."""
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_DISABLE_TRACKING"):
        monkeypatch.setenv(name, "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")
    with warnings.catch_warnings():  # crewai's own import trips an ImportWarning
        warnings.simplefilter("ignore", ImportWarning)
        from crewai import Agent, Crew, Task
        from crewai.llms.base_llm import BaseLLM

        from gnomon.adapters.frameworks.crewai_tools import crewai_tools

    turns = iter(
        [
            'Thought: read it\nAction: read_file\nAction Input: {"path": "README.md"}',
            f"Thought: push\nAction: git_push\nAction Input: {json.dumps(PUSH_ARGS)}",
            "Thought: held\nFinal Answer: Waiting for a human.",
        ]
    )
    seen: list[str] = []

    class Scripted(BaseLLM):  # type: ignore[misc]
        def call(self, messages: object, *args: object, **kwargs: object) -> str:
            seen.append(json.dumps(messages, default=str))
            return next(turns)

        def supports_function_calling(self) -> bool:
            return False

    with host.wall.session(project="shop", actor="coder", user="alice") as s:
        agent = Agent(
            role="coder", goal="ship", backstory="a coder", llm=Scripted(model="scripted"),
            tools=crewai_tools(_guarded(host, s)), max_iter=5, verbose=False,
        )  # fmt: skip
        task = Task(description="follow the README", expected_output="a status", agent=agent)
        result = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
    assert str(result) == "Waiting for a human."
    assert POISON in seen[1]  # the README came back to the model as the observation
    (request,) = host.kernel.holds()
    assert f"request {request.id}" in seen[2]  # so did the hold
    _assert_held(host, seen[2])
