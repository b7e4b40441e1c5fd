"""The MCP proxy's client behind it, for a server run as a subprocess: JSON-RPC lines over the
server's stdin and stdout, at the message level (the front, :mod:`firewall.host.mcp_stdio`,
already is).

The SDK's ``ClientSession`` validates, dispatches and wraps every message through memory
streams and tasks; on the proxy's path that was a fixed cost per call on top of the process
hop. This client does what the proxy needs and no more, over the same non-blocking pipes and
line framing as the front:

* its own request ids (integers it counts; the agent's ids never go upstream), and a reply is
  taken only for a request still waiting, by exact id (``"1"`` or ``true`` is not ``1``): a
  reply to an unknown or finished id, or a second reply, is dropped;
* the ``initialize`` handshake as the SDK does it (the latest handshake version offered; a
  version outside :data:`HANDSHAKE_PROTOCOL_VERSIONS` refused), then ``notifications/initialized``;
* the server's notifications (progress, logging, list changes) are dropped: nothing the server
  writes reaches the agent except a call's recorded result;
* the server's requests are answered as the SDK's client answers them without callbacks:
  ``ping`` with an empty result; sampling, elicitation and roots with "not supported"
  (``INVALID_REQUEST``); anything else "method not found";
* a call cancelled (the agent's ``notifications/cancelled``, the proxy shutting down) sends
  ``notifications/cancelled`` upstream and stops waiting; the kernel records it as aborted;
* a line that is not JSON-RPC or longer than :data:`~firewall.host.mcp_stdio.MAX_LINE`, or the
  server's end closing (it died), fails every call still waiting with :class:`UpstreamError`
  (a failed outcome, never a hang); once the server is gone, later calls fail at once;
* writes never block the reader: what the pipe does not take at once waits in a backlog,
  and a server that stops reading its input (past :data:`MAX_BACKLOG`) is treated as gone;
* the server's stderr is the proxy's; on exit the server's stdin is closed, and after a
  grace period its process group is terminated, then killed (the SDK's shutdown order).

The streamable HTTP upstream stays the SDK's ``Client`` (:func:`firewall.host.mcp_proxy.run_proxy`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from gnomon.firewall.__about__ import __version__
from gnomon.firewall.host.mcp_stdio import MAX_LINE, read_lines
from gnomon.firewall.model.errors import InputError

logger = logging.getLogger("gnomon.mcp_upstream")

#: Bytes waiting to be written to a server that does not read its input, past which it is
#: treated as gone (its pending calls fail).
MAX_BACKLOG = 1024 * 1024
#: Seconds a server has to exit after its stdin closes, then again after SIGTERM.
GRACE = 2.0
#: The most ``tools/list`` pages read at start (a server paging forever is refused).
MAX_PAGES = 100

#: What the SDK's client answers a server's request for which it has no callback.
_UNSUPPORTED = {
    "sampling/createMessage": "Sampling not supported",
    "elicitation/create": "Elicitation not supported",
    "roots/list": "List roots not supported",
}


def _dumps(message: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(message)
    except TypeError:  # an integer past 64 bits (JSON allows it): the slow path
        return json.dumps(message, separators=(",", ":")).encode()


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except ValueError:  # an integer past 64 bits is valid JSON too; anything else is refused
        return json.loads(line)


class UpstreamError(MCPError):
    """The server behind the proxy failed a call without answering it (it died, wrote a line
    that is not JSON-RPC, stopped reading) or answered with a result that is no result."""

    def __init__(self, message: str) -> None:
        super().__init__(types.INTERNAL_ERROR, message)


class _Waiting:
    """A request sent upstream, waiting for its reply."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: dict[str, Any] | None = None
        self.error: MCPError | None = None


class StdioUpstream:
    """A message-level MCP client over a server subprocess's stdio; see the module docstring.
    Open it with :func:`open_stdio_upstream`."""

    def __init__(self, process: subprocess.Popen[bytes], name: str, limit: int = MAX_LINE) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._name = name
        self._limit = limit
        self._wire_in = process.stdout.fileno()
        self._wire_out = process.stdin.fileno()
        os.set_blocking(self._wire_in, False)
        os.set_blocking(self._wire_out, False)
        self._next_id = 0
        self._waiting: dict[int, _Waiting] = {}
        self._backlog = bytearray()
        self._wake = anyio.Event()  # set when the backlog has bytes for the writer task
        self._gone: str | None = None  # why the server can no longer be called
        self.server_info: types.InitializeResult | None = None

    # -- calls ----------------------------------------------------------------------------

    async def list_tools(self) -> types.ListToolsResult:
        """Every tool the server lists (all pages)."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = {} if cursor is None else {"cursor": cursor}
            page = types.ListToolsResult.model_validate(
                await self.request("tools/list", params), by_name=False
            )
            tools.extend(page.tools)
            if page.next_cursor is None:
                return types.ListToolsResult(tools=tools)
            cursor = page.next_cursor
        raise UpstreamError(f"the server's tools/list runs past {MAX_PAGES} pages")

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> types.CallToolResult:
        """The server's result for one ``tools/call``; its JSON-RPC error raises
        :class:`~mcp.shared.exceptions.MCPError` (as the SDK's client does)."""
        raw = await self.request("tools/call", {"name": name, "arguments": arguments or {}})
        try:
            return types.CallToolResult.model_validate(raw, by_name=False)
        except ValidationError as exc:
            raise UpstreamError(
                f"the server answered {name} with no CallToolResult ({exc.error_count()} problems)"
            ) from None

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its reply (its ``result``)."""
        if self._gone is not None:
            raise UpstreamError(self._gone)
        self._next_id += 1
        request_id = self._next_id
        waiting = self._waiting[request_id] = _Waiting()
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            self._post(message)
            await waiting.done.wait()
        except BaseException:  # cancelled: the server is told, its late reply dropped
            if self._waiting.pop(request_id, None) is not None and self._gone is None:
                cancelled = {"requestId": request_id, "reason": "the proxy's caller cancelled"}
                self._post(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled}
                )
            raise
        if waiting.error is not None:
            raise waiting.error
        assert waiting.result is not None
        return waiting.result

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._post(message)

    async def initialize(self) -> types.InitializeResult:
        """The handshake, as the SDK's client makes it."""
        params = {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "gnomon-mcp-proxy", "version": __version__},
        }
        result = types.InitializeResult.model_validate(
            await self.request("initialize", params), by_name=False
        )
        if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise InputError(
                f"server {self._name!r} answered initialize with protocol version "
                f"{result.protocol_version!r}, which this proxy does not speak",
                hint=f"a server speaking one of {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}",
            )
        self.notify("notifications/initialized")
        self.server_info = result
        return result

    # -- the wire -------------------------------------------------------------------------

    def _post(self, message: Mapping[str, Any]) -> None:
        """Write one message now if the pipe takes it, else leave it to the writer task;
        never blocks (the reader posts answers to the server's requests)."""
        if self._gone is not None:
            return
        data = _dumps(message) + b"\n"
        if not self._backlog:
            try:
                data = data[os.write(self._wire_out, data) :]
            except BlockingIOError:
                pass
            except OSError:
                self._lose("the server closed its input (it exited?)")
                return
            if not data:
                return
            self._wake.set()
        self._backlog += data
        if len(self._backlog) > MAX_BACKLOG:
            self._lose(f"the server stopped reading its input ({MAX_BACKLOG} bytes waiting)")

    async def _write_backlog(self) -> None:
        while self._gone is None:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._backlog and self._gone is None:
                await anyio.wait_writable(self._wire_out)
                try:
                    del self._backlog[: os.write(self._wire_out, self._backlog)]
                except BlockingIOError:
                    continue
                except OSError:
                    self._lose("the server closed its input (it exited?)")

    async def _read(self) -> None:
        await read_lines(self._wire_in, self._line, self._unreadable, self._limit)
        with anyio.move_on_after(1):  # its output ends as it exits: name how, if it did
            while self._process.poll() is None:
                await anyio.sleep(0.01)
        code = self._process.returncode
        self._lose(
            "the server closed its output"
            + (" (it is still running)" if code is None else f" (it exited with code {code})")
        )

    async def _unreadable(self, why: str) -> None:
        self._fail_waiting(f"the server wrote an unreadable line: {why}")

    async def _line(self, line: bytes) -> None:
        try:
            message = _loads(line)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._fail_waiting("the server wrote a line that is not a JSON-RPC 2.0 message")
            return
        method = message.get("method")
        request_id = message.get("id")
        if isinstance(method, str):
            if "id" in message:  # a request of the server's: answered here, never relayed
                self._answer(request_id, method)
            return  # a notification: dropped (nothing unrecorded reaches the agent)
        waiting = self._waiting.pop(request_id, None) if type(request_id) is int else None
        if waiting is None:
            logger.warning(
                "gnomon mcp proxy: server %r answered no request waiting (id %r): dropped",
                self._name,
                request_id if isinstance(request_id, int | str) else type(request_id).__name__,
            )
            return
        result, error = message.get("result"), message.get("error")
        if isinstance(error, dict):
            code, said = error.get("code"), error.get("message")
            code = code if type(code) is int else types.INTERNAL_ERROR
            waiting.error = MCPError(code, said if isinstance(said, str) else str(said))
        elif isinstance(result, dict):
            waiting.result = result
        else:
            waiting.error = UpstreamError("the server answered with neither a result nor an error")
        waiting.done.set()

    def _answer(self, request_id: object, method: str) -> None:
        if type(request_id) is not int and not isinstance(request_id, str):
            return  # no id to answer to
        if method == "ping":
            self._post({"jsonrpc": "2.0", "id": request_id, "result": {}})
            return
        unsupported = _UNSUPPORTED.get(method)
        code = types.INVALID_REQUEST if unsupported else types.METHOD_NOT_FOUND
        error = {"code": code, "message": unsupported or "Method not found"}
        self._post({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _fail_waiting(self, why: str) -> None:
        logger.warning("gnomon mcp proxy: server %r: %s", self._name, why)
        waiting, self._waiting = self._waiting, {}
        for call in waiting.values():
            call.error = UpstreamError(why)
            call.done.set()

    def _lose(self, why: str) -> None:
        """The server can no longer be called: every waiting call fails, and every later one."""
        if self._gone is None:
            self._gone = why
            self._backlog.clear()
            self._wake.set()
            self._fail_waiting(why)

    # -- shutdown -------------------------------------------------------------------------

    async def _stop(self) -> None:
        """Close the server's stdin, wait out the grace period, then terminate and kill its
        process group (it was started in a session of its own)."""
        process = self._process
        self._gone = self._gone or "the proxy is shutting down"
        assert process.stdin is not None
        with suppress(OSError):
            process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with anyio.move_on_after(GRACE):
                while process.poll() is None:
                    await anyio.sleep(0.01)
            if process.returncode is not None:
                return
        logger.warning(
            "gnomon mcp proxy: server %r (pid %d) outlived SIGKILL", self._name, process.pid
        )


@asynccontextmanager
async def open_stdio_upstream(
    params: StdioServerParameters, name: str, *, limit: int = MAX_LINE
) -> AsyncIterator[StdioUpstream]:
    """Start ``params``' server, make the handshake, and yield its client; on exit, stop it."""
    try:
        process = subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=get_default_environment() | (params.env or {}),
            cwd=params.cwd,
            bufsize=0,
            start_new_session=True,  # its process group is stopped with it
        )
    except OSError as exc:
        raise InputError(
            f"server {name!r} could not be started: {exc}",
            hint="check the server command after -- (or servers: in the config)",
        ) from None
    upstream = StdioUpstream(process, name, limit)
    problem: InputError | None = None
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(upstream._read)
            tasks.start_soon(upstream._write_backlog)
            try:
                try:
                    await upstream.initialize()
                except InputError as exc:
                    problem = exc
                except (MCPError, ValidationError) as exc:
                    # raised once the task group is closed: inside it, the CLI would get it
                    # wrapped in an exception group, not as the typed error it is
                    problem = InputError(
                        f"server {name!r} failed the initialize handshake: {exc}"[:500],
                        hint="check that the command after -- starts an MCP server on stdio",
                    )
                else:
                    yield upstream
            finally:
                with anyio.CancelScope(shield=True):
                    await upstream._stop()
                tasks.cancel_scope.cancel()
    finally:
        for pipe in (process.stdin, process.stdout):
            with suppress(OSError):
                if pipe is not None:
                    pipe.close()
    if problem is not None:
        raise problem


__all__ = ["MAX_BACKLOG", "StdioUpstream", "UpstreamError", "open_stdio_upstream"]
