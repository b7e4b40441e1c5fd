"""The kernel's one execution flow, driven synchronously and asynchronously: an allowed action's
proposal and its execution claim are one commit, durable before the tool runs; the outcome is
committed with the observation of what the tool returned (the guard), or alone (the kernel)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from gnomon import firewall
from gnomon.firewall.host.guard import guard
from gnomon.firewall.kernel import ActionKernel
from gnomon.firewall.kernel.actionpolicy import ActionPolicy
from gnomon.firewall.kernel.signing import SignedPolicy
from gnomon.firewall.model.errors import StoreError
from gnomon.firewall.model.origin import Origin


def _kernel(wall: firewall.Firewall, executors: dict[str, Any]) -> ActionKernel:
    policy = ActionPolicy.preset("default")
    signed = SignedPolicy(policy, policy.digest, None, None, "default")
    return ActionKernel(wall, signed, allow_unsigned=True, executors=executors)


def test_an_allowed_call_is_claimed_in_its_proposal_commit_before_the_tool_runs() -> None:
    wall = firewall.open("memory://")
    commits: list[list[str]] = []
    wall.subscribe(lambda events: commits.append([e.kind for e in events]))
    seen: list[list[str]] = []

    def read_file(_args: dict[str, Any]) -> str:
        seen.append([e.kind for e in wall.store.events()][-2:])
        return "hello"

    kernel = _kernel(wall, {"read_file": read_file})
    with wall.session(project="shop", actor="coder") as s:
        commits.clear()
        result = kernel.handle(s).request("read_file", {"path": "README.md"})
        done = list(commits)
    assert result.status == "executed" and result.output == "hello"
    # durable before the tool ran: the proposal and the claim, committed together
    assert seen == [["action.proposed", "action.executing"]]
    assert done == [["action.proposed", "action.executing"], ["action.executed"]]


def test_the_guard_commits_the_outcome_with_the_observation() -> None:
    wall = firewall.open("memory://")
    commits: list[list[str]] = []
    wall.subscribe(lambda events: commits.append([e.kind for e in events]))
    kernel = _kernel(wall, {"read_file": lambda _a: "the README says: push to main"})
    with wall.session(project="shop", actor="coder") as s:
        (read,) = guard(wall, kernel, s, ["read_file"])
        commits.clear()
        reply = read({"path": "README.md"})
        assert not reply.is_error
        assert commits == [
            ["action.proposed", "action.executing"],
            ["action.executed", "observation.recorded"],
        ]
        assert s.label is not None and "external:tool:read_file" in s.label.origin_ids


def test_an_async_tool_runs_in_the_event_loop_and_its_record_can_wait() -> None:
    """``GuardedTool.acall`` awaits the tool and leaves the record to the host; until
    :meth:`record`, the session's label does not have what the tool returned."""
    wall = firewall.open("memory://")

    async def read_file(_args: dict[str, Any]) -> str:
        await anyio.sleep(0)
        return "a web page"

    kernel = _kernel(wall, {"read_file": read_file})
    origin = Origin.external("web:example")

    async def main() -> tuple[Any, ...]:
        with wall.session(project="shop", actor="coder") as s:
            (tool,) = guard(wall, kernel, s, ["read_file"], origins={"read_file": origin})
            reply, recording = await tool.acall({"path": "page.html"})
            before = s.label
            tool.record(recording)
            return reply, before, s.label

    reply, before, after = anyio.run(main)
    assert not reply.is_error and reply.text == "a web page"
    assert before is None
    assert after is not None and "external:web:example" in after.origin_ids
    kinds = [e.kind for e in wall.store.events()]
    assert kinds[-3:] == ["action.executed", "observation.recorded", "session.ended"]


def test_an_interrupted_call_keeps_its_interruption_when_the_aborted_record_fails() -> None:
    """A tool interrupted mid-call (Ctrl-C, shutdown) gets an aborted outcome; when that record
    itself cannot be committed (the store is gone), the caller still sees the interruption,
    not the store's error in its place."""
    wall = firewall.open("memory://")

    def read_file(_args: dict[str, Any]) -> str:
        commit = wall.commit

        def broken(*_drafts: Any) -> Any:  # fails once: the aborted record
            wall.commit = commit  # type: ignore[method-assign]
            raise StoreError("the store went away")

        wall.commit = broken  # type: ignore[method-assign]
        raise KeyboardInterrupt

    kernel = _kernel(wall, {"read_file": read_file})
    with (
        wall.session(project="shop", actor="coder") as s,
        pytest.raises(KeyboardInterrupt) as raised,
    ):
        kernel.handle(s).request("read_file", {"path": "README.md"})
    assert any("the store went away" in note for note in raised.value.__notes__)
