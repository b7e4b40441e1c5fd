"""Attacks on the MCP proxy's client behind it (``firewall.host.mcp_upstream``): a hostile server
(``tests/fixtures/mcp_raw_server.py``, a real subprocess speaking JSON-RPC by hand) lies on the
wire. The promises: a call takes only the reply to its own id (no forged, stale or look-alike
id); the server's requests are answered as the SDK's client answers them and never reach the
agent, nor do its notifications; a server that writes garbage or an endless line, dies, or
stops reading fails the calls waiting on it (failed outcomes), never a hang; a call the agent
cancels is cancelled upstream and recorded as aborted.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gnomon import firewall
from gnomon.firewall.host.mcp_upstream import StdioUpstream, UpstreamError, open_stdio_upstream
from gnomon.firewall.kernel.ledger import read_ledger
from tests.test_mcp_proxy import GNOMON, REPO, _env, _external, _host, _outcomes

RAW_SERVER = str(REPO / "tests" / "fixtures" / "mcp_raw_server.py")
RAW_TOOLS = "".join(
    f"  {name}: {{category: read, level: L0}}\n"
    for name in ("echo", "forged", "stale", "ask", "chatty", "garbage", "die", "slow")
)


def _upstream(
    folder: Path, script: Callable[[StdioUpstream], Awaitable[Any]], *, limit: int = 1 << 24
) -> Any:
    """``script(upstream)`` against the raw server, with a deadline: a hang fails the test."""
    params = StdioServerParameters(
        command=sys.executable, args=[RAW_SERVER, str(folder)], env=_env()
    )

    async def main() -> Any:
        with anyio.fail_after(60):
            async with open_stdio_upstream(params, "raw", limit=limit) as upstream:
                return await script(upstream)

    return anyio.run(main)


def _text(result: Any) -> str:
    return "\n".join(getattr(b, "text", "") for b in result.content)


def test_a_call_takes_only_the_reply_to_its_own_id(tmp_path: Path) -> None:
    """The server answers first under ids that are not the call's: the id as a string, as a
    float (``2.0`` equals ``2`` in Python), ``true``, the next call's id, ``null``; then it
    answers a later call under the finished call's id. Each call gets its own answer; the
    forged next-id answer is not kept for the next call."""

    async def script(upstream: StdioUpstream) -> list[str]:
        return [
            _text(await upstream.call_tool(name, {"text": "mine"}))
            for name in ("forged", "echo", "stale")
        ]

    assert _upstream(tmp_path, script) == ["real", "mine", "fresh"]


def test_the_servers_requests_are_answered_like_the_sdk_client_answers_them(
    tmp_path: Path,
) -> None:
    """Mid-call, the server asks the client for a ping, sampling, roots, elicitation and a
    made-up method: ping is answered, the three callbacks the proxy does not offer are
    "not supported" (invalid request), the rest "method not found"; the call then completes."""

    async def script(upstream: StdioUpstream) -> Any:
        return await upstream.call_tool("ask", {})

    asked = _upstream(tmp_path, script)
    answers = asked.structured_content["answers"]
    assert answers == {"p": "ok", "s": -32600, "r": -32600, "e": -32600, "x": -32601}


@pytest.mark.parametrize(
    ("tool", "args", "complaint"),
    [
        ("garbage", {}, "not a JSON-RPC 2.0 message"),
        ("huge", {"size": 50_000}, "longer than 10000 bytes"),
    ],
)
def test_an_unreadable_line_fails_the_waiting_call_and_the_next_call_works(
    tmp_path: Path, tool: str, args: dict[str, Any], complaint: str
) -> None:
    """The server writes a line that is no JSON-RPC, or one past the line limit, and never
    answers: the waiting call fails at once (it would otherwise wait forever); the rest of an
    overlong line is skipped, not read as a message; the next call is answered."""

    async def script(upstream: StdioUpstream) -> tuple[str, str]:
        with pytest.raises(UpstreamError) as failed:
            await upstream.call_tool(tool, args)
        return str(failed.value), _text(await upstream.call_tool("echo", {"text": "after"}))

    why, after = _upstream(tmp_path, script, limit=10_000)
    assert complaint in why and after == "after"


def test_a_server_that_dies_mid_call_fails_that_call_and_every_later_one(tmp_path: Path) -> None:
    async def script(upstream: StdioUpstream) -> list[str]:
        out = []
        for name in ("die", "echo"):
            with pytest.raises(UpstreamError) as failed:
                await upstream.call_tool(name, {})
            out.append(str(failed.value))
        return out

    died, later = _upstream(tmp_path, script)
    assert "exited with code 3" in died and later == died


def test_a_server_that_stops_reading_fails_the_calls_instead_of_hanging(tmp_path: Path) -> None:
    """The server stops reading its input; the proxy's next request (3 MiB of arguments) can
    never be written whole. Past the backlog limit the server is treated as gone: both calls
    fail, and the proxy's reads of the server are not blocked meanwhile."""

    async def script(upstream: StdioUpstream) -> list[str]:
        failures: list[str] = []

        async def call(name: str, args: dict[str, Any]) -> None:
            try:
                await upstream.call_tool(name, args)
            except UpstreamError as exc:
                failures.append(str(exc))

        async with anyio.create_task_group() as calls:
            calls.start_soon(call, "deaf", {})
            await anyio.sleep(0.5)
            calls.start_soon(call, "echo", {"text": "x" * (3 << 20)})
        return failures

    failures = _upstream(tmp_path, script)
    assert len(failures) == 2 and all("stopped reading its input" in f for f in failures)


def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path) -> None:
    async def script(upstream: StdioUpstream) -> str:
        async with anyio.create_task_group() as calls:
            calls.start_soon(upstream.call_tool, "slow", {})
            while not (tmp_path / "slow.started").exists():
                await anyio.sleep(0.02)
            calls.cancel_scope.cancel()
        while not (tmp_path / "cancelled").exists():
            await anyio.sleep(0.02)
        return _text(await upstream.call_tool("echo", {"text": "still here"}))

    assert _upstream(tmp_path, script) == "still here"
    (called_id, name) = json.loads((tmp_path / "calls").read_text().splitlines()[0])
    assert name == "slow"
    assert json.loads((tmp_path / "cancelled").read_text())["requestId"] == called_id


# -- through the proxy, with the SDK's client as the agent -----------------------------------


def _proxied(folder: Path, script: Callable[[Client, list[Any]], Awaitable[Any]]) -> Any:
    """``script(client, notified)`` through ``gnomon mcp proxy`` in front of the raw server;
    ``notified`` collects every notification or request the agent's client receives."""
    config = _host(folder, "raw", RAW_TOOLS, timeout=0.05)
    server = [sys.executable, RAW_SERVER, str(folder)]
    params = StdioServerParameters(
        command=GNOMON[0],
        args=[*GNOMON[1:], "mcp", "proxy", "--config", str(config), "--", *server],
        # the host keeps its data (the store's sealing key) where the test's other processes do
        env={"PYTHONPATH": str(REPO), "GNOMON_HOME": os.environ["GNOMON_HOME"]},
    )
    notified: list[Any] = []

    async def handler(message: Any) -> None:
        notified.append(message)

    async def main() -> Any:
        with anyio.fail_after(120):
            async with Client(params, message_handler=handler) as client:
                return await script(client, notified)

    return anyio.run(main)


def test_through_the_proxy_the_agent_gets_and_the_log_keeps_only_real_answers(
    tmp_path: Path,
) -> None:
    """The agent calls the lying tools through the proxy: it gets the real answers, and what
    the log records as read from the server is the real answer, never a forged one; the
    server's notifications (a logging message carrying text) and requests never reach the
    agent; a server that dies mid-call is a failed outcome for the agent and the log."""

    async def script(client: Client, notified: list[Any]) -> list[Any]:
        results = [await client.call_tool(name, {"count": 300}) for name in ("forged", "chatty")]
        results.append(await client.call_tool("ask", {}))
        results.append(await client.call_tool("die", {}))
        return [*results, list(notified)]

    forged, chatty, ask, died, notified = _proxied(tmp_path, script)
    assert _text(forged) == "real" and _text(chatty) == "done talking", (forged, chatty)
    assert not ask.is_error and ask.structured_content["answers"]["p"] == "ok"
    assert notified == []
    read = " ".join(str(b.statement) for b in _external(tmp_path, "mcp:raw/forged"))
    assert "real" in read and "FORGED" not in read
    assert died.is_error and died.meta["verdict"] == "failed", died
    assert "exited with code 3" in _text(died)
    assert _outcomes(tmp_path, "die") == [("executed", [False])]


def test_a_call_the_agent_cancels_is_cancelled_upstream_and_recorded_as_aborted(
    tmp_path: Path,
) -> None:
    """The agent gives up on a slow call and stays: its SDK client sends
    ``notifications/cancelled``. The proxy cancels the upstream call (the server is told), the
    claimed request is recorded as aborted (failed), and the next call goes through."""

    async def script(client: Client, _notified: list[Any]) -> Any:
        async with anyio.create_task_group() as calls:
            calls.start_soon(client.call_tool, "slow", {})
            while not (tmp_path / "slow.started").exists():
                await anyio.sleep(0.05)
            calls.cancel_scope.cancel()
        with anyio.fail_after(20):
            while not (tmp_path / "cancelled").exists():
                await anyio.sleep(0.05)
        return await client.call_tool("echo", {"text": "next"})

    after = _proxied(tmp_path, script)
    assert _text(after) == "next"
    assert _outcomes(tmp_path, "slow") == [("executed", [False])]
    with firewall.open(f"sqlite:///{tmp_path}/g.db") as wall:
        ledger = read_ledger(wall.store)
    (slow,) = [r for r in ledger.requests.values() if r.proposal["tool"] == "slow"]
    assert any("aborted" in reason for reason in slow.reasons), slow.reasons


def test_arguments_and_results_past_the_fast_json_path_still_go_through(tmp_path: Path) -> None:
    """JSON allows integers past 64 bits and escaped lone surrogates, which the fast encoder
    refuses: such a call still reaches the server, and its answer comes back."""

    async def script(upstream: StdioUpstream) -> str:
        return _text(await upstream.call_tool("echo", {"text": "big \ud800", "n": 2**70}))

    assert _upstream(tmp_path, script) == "big \ud800"
