"""The MCP proxy: an MCP server in front of another MCP server, with the action kernel between.

``gnomon mcp proxy --config proxy.yaml -- <server command>`` starts the real server as a
subprocess (stdio), lists its tools, and serves the same tools over its own stdio; the config's
``servers:`` puts more servers behind the same proxy, in one session (what the agent read
through one holds a consequential call to another). Each call:

* goes through the kernel under the operator's contract for that tool
(:mod:`firewall.host.mcp_config`);
  the server's annotations never raise trust, and an unlisted tool is denied (or gets the level
  the config names);
* when it runs, its result is recorded through a host channel as an envelope claim plus content
  claims labelled ``Origin.external("mcp:<server>/<tool>")``, so whatever the server returned
  (a README, a web page) taints the session and holds a later L3+ action;
* what each server says about its tools (``tools/list``: descriptions, schemas, annotations)
  is recorded like a result (external content labelled ``mcp:<server>/tools/list``) when the
  agent is first served it, is pinned at first listing, and a later change is refused until
  the operator accepts it; the operator's own descriptions may replace the server's
  (:mod:`firewall.host.mcp_listing`);
* the kernel's arbiters include the sentinel arbiter: once an operator or a sentinel flags an
  origin the session read (``gnomon origins flag external:mcp:<server>/<tool>``), every later
  call of that session is held, whatever its level (issue 11, the arbiter on the proxy path);
* when it is denied, held or refused, the client gets an ordinary tool result with
  ``isError: true`` and ``_meta`` ``{verdict, rule, request_id}``, so the agent can re-plan. A held
  call waits up to ``hold_timeout`` seconds for ``gnomon approve`` (another process, through the
  store); when none comes, the hold is withdrawn and the call is a denial (a later approval
  never runs it). A call that ran gets the server's result, its ``_meta`` verdict ``executed``
  and request id set by the proxy (a server cannot dress its result as a hold); one that ran
  and failed (the server answered an error) is ``isError`` with verdict ``failed``.

The agent's process holds only its MCP connection: no key, store handle or firewall object.
In front, the proxy serves stdio, or streamable HTTP at ``http://HOST:PORT/mcp`` with
``--http HOST:PORT`` (the SDK's DNS-rebinding protection is on for a loopback host). Every
HTTP client shares the proxy's one session, so what any of them read taints the next L3+ call
of all of them (the conservative join). Behind it, the server is a command (stdio) or, when the
command is one ``http(s)://`` URL, a server already running over streamable HTTP.
``pip install 'gnomon[mcp]'``.

The per-call path is kept short. Over stdio, :meth:`Proxy.relay` answers the agent's JSON-RPC
messages itself (``initialize``, ``ping``, ``tools/list``, ``tools/call``; anything else is
"method not found": a resource or prompt passed through would reach the agent unrecorded),
over :mod:`firewall.host.mcp_stdio` (non-blocking pipes, no worker thread per line), instead
of a second SDK server session. Calls take one lane: the previous call's record first, then the
kernel's decision, where an allowed call's proposal and execution claim are one commit, durable
before the upstream call, which is awaited in the event loop. A call that ran is recorded
(outcome and observation, one commit) once its reply is on the wire, and always before the
next decision. Behind the proxy, a server run as a command is spoken to at the message level
too (:mod:`firewall.host.mcp_upstream`: the proxy's own request ids, no SDK session); one
already running over streamable HTTP is the SDK's ``Client``. The agent's
``notifications/cancelled`` cancels the call it names (upstream too; recorded as aborted).
A call cut off (the
proxy terminated, SIGTERM or SIGINT, while its upstream call runs) is recorded as failed
(aborted) before the proxy exits, and the pending record is committed.
"""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel.server import Server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from gnomon import firewall
from gnomon.firewall.__about__ import __version__
from gnomon.firewall.gate.grants import KeyPurpose, load_public_key
from gnomon.firewall.host.approval_http import ApprovalChannel
from gnomon.firewall.host.guard import GuardedTool, Recording, ToolReply, guard, wait_for_approval
from gnomon.firewall.host.mcp_config import ProxyConfig
from gnomon.firewall.host.mcp_listing import check_pins, listing_text, pin_event, pinned, served
from gnomon.firewall.host.mcp_stdio import UnreadableMessage, stdio_pipes
from gnomon.firewall.host.mcp_upstream import open_stdio_upstream
from gnomon.firewall.host.sentinels import SentinelArbiter
from gnomon.firewall.host.session import Session
from gnomon.firewall.host.tool_calls import ToolCall
from gnomon.firewall.kernel import ActionKernel, load_action_policy
from gnomon.firewall.kernel.kernel import Run, ToolFailed
from gnomon.firewall.log.events import MCP_TOOLS_PINNED
from gnomon.firewall.model.content import content_blocks
from gnomon.firewall.model.errors import GnomonError, InputError
from gnomon.firewall.model.origin import Origin

logger = logging.getLogger("gnomon.mcp_proxy")


def result_text(output: object) -> str:
    """The text of an MCP tool result, as recorded: every text the agent gets (text blocks, an
    embedded resource's text, a resource link's name and description, structured content
    unless a text block already carries it); binary blocks by their type."""
    if not isinstance(output, types.CallToolResult):
        return str(output)
    parts = [_block_text(block) for block in output.content]
    structured = output.structured_content
    if structured is not None and not any(_carries(part, structured) for part in parts):
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


def _checked(result: types.CallToolResult) -> types.CallToolResult:
    """The server's result; one it marks ``isError`` is a failed outcome (the agent still
    gets it as it is)."""
    if result.is_error:
        raise ToolFailed(f"the server answered isError: {result_text(result)}", result)
    return result


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        inner = block.resource
        if isinstance(inner, types.TextResourceContents):
            return f"[resource {inner.uri}]\n{inner.text}"
        return f"[resource {inner.uri}]"
    if isinstance(block, types.ResourceLink):
        said = (block.name, block.title, block.description)
        return " ".join([f"[resource_link {block.uri}]", *(s for s in said if s)])
    return f"[{block.type}]"


def _carries(text: str, structured: object) -> bool:
    """Whether ``text`` is the JSON of ``structured`` (a server's usual text twin of it)."""
    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False


class Upstream(Protocol):
    """A server behind the proxy: the SDK's ``Client`` (streamable HTTP) or a
    :class:`~firewall.host.mcp_upstream.StdioUpstream` (a subprocess)."""

    async def list_tools(self) -> types.ListToolsResult: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> types.CallToolResult: ...


class Proxy:
    """Host-side: the kernel, the session and the guarded tools of the proxied servers.

    Every call takes the proxy's one lane (an async lock, FIFO): it first commits the previous
    call's record if that is still pending, then decides, claims and runs (the upstream call
    awaited in the event loop). A call that ran is recorded (its outcome and observation, one
    commit) before the reply, or, with ``call(..., defer=True)`` (the stdio relay), after the
    reply is on the wire (:meth:`flush`): the next decision still comes after the record, so it
    sees what this call read (label, log), but the agent does not wait for the record. A record
    that fails stops the proxy: every later call is refused (its decision could not see what
    the failed record carried)."""

    def __init__(
        self,
        config: ProxyConfig,
        wall: firewall.Firewall,
        session: Session,
        upstream: Upstream | Mapping[str, Upstream],
    ) -> None:
        self._config = config
        self._wall = wall
        self._session = session
        # server name -> its client; one client is the server named ``config.server``
        self._upstreams = (
            dict(upstream) if isinstance(upstream, Mapping) else {config.server: upstream}
        )
        self._served_by: dict[str, str] = {}  # tool name -> the server that offers it
        self._tools: list[types.Tool] = []
        self._listing: dict[str, Any] = {}  # the tools/list result, serialized once
        self._guarded: dict[str, GuardedTool] = {}
        self._kernel: ActionKernel | None = None
        self._lane = anyio.Lock()  # one call at a time: the last record, decide, run
        self._pending: tuple[GuardedTool, Recording] | None = None  # the last call's record
        self._broken: BaseException | None = None  # a record that failed
        self._said: list[ToolCall] = []  # what the servers wrote in the listing, to record
        self._listed = False  # whether the agent has been served the listing (and it recorded)

    async def start(self) -> None:
        """List every server's tools, check them against their pins (a change is refused with
        :class:`~firewall.model.errors.ListingChangedError`), record new pins, and build the
        kernel over them."""
        listings: dict[str, list[types.Tool]] = {}
        for server, client in self._upstreams.items():
            listings[server] = (await client.list_tools()).tools
            for tool in listings[server]:
                other = self._served_by.setdefault(tool.name, server)
                if other != server:
                    raise InputError(
                        f"servers {other!r} and {server!r} both offer a tool {tool.name!r}",
                        hint="put them behind two proxies, or drop one from servers:",
                    )
        session = self._session
        fresh = check_pins(self._config, listings, pinned(self._wall.store, session.project))
        said: dict[str, list[dict[str, Any]]] = {}
        for server, tools in listings.items():
            for tool in tools:
                shown, theirs = served(self._config, server, tool)
                self._tools.append(shown)
                if theirs is not None:
                    said.setdefault(server, []).append(theirs)
        for server, docs in said.items():
            # too large or too many to record is refused now, not when the agent lists them
            blocks = content_blocks(listing_text(docs), self._wall.max_block_bytes)
            origin = Origin.external(f"mcp:{server}/tools/list")
            channel = self._wall.channel(origin, project=session.project)
            self._said.append(ToolCall(tool="tools/list", content=blocks, origin=channel))
        for pin in fresh:
            session._commit(MCP_TOOLS_PINNED, data=pin_event(pin))
        self._listing = types.ListToolsResult(tools=self._tools).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        names = [t.name for t in self._tools]
        config = self._config
        operator = [load_public_key(p, purpose=KeyPurpose.POLICY) for p in config.operator_keys]
        approver = [load_public_key(p, purpose=KeyPurpose.APPROVAL) for p in config.approver_keys]
        self._kernel = ActionKernel(
            self._wall,
            load_action_policy(config.policy, keys=operator),
            operator_keys=operator,
            approver_keys=approver,
            registry=config.registry(names),
            executors={name: self._executor(name) for name in names},
            # alerts and flagged origins any process wrote (`gnomon origins flag`, a sentinel
            # following the store) hold a call whose session read from them, at any level
            arbiters=[SentinelArbiter(self._wall.store)],
            summarize=result_text,  # the text the agent got, not the result object's repr
        )
        # the host loop after a restart: an approved call no process claimed (the proxy died
        # between the approval and the run) runs now, its approval checked again (its expiry
        # too); the outcome is recorded, as nobody waits for its reply any more
        await anyio.to_thread.run_sync(self._kernel.process_submitted)

    def _executor(self, name: str) -> Any:
        def run(args: dict[str, Any]) -> types.CallToolResult:
            # an approved hold runs in a worker thread (see _wait): call back into the loop
            client = self._upstreams[self._served_by[name]]
            return _checked(anyio.from_thread.run(client.call_tool, name, args))

        return run

    async def _run(self, step: Run) -> types.CallToolResult:
        """An allowed call's upstream call, awaited in the event loop."""
        client = self._upstreams[self._served_by[step.tool]]
        return _checked(await client.call_tool(step.tool, step.args))

    def _tool(self, name: str) -> GuardedTool:
        tool = self._guarded.get(name)
        if tool is None:
            assert self._kernel is not None
            server = self._served_by.get(name, self._config.server)
            origin = Origin.external(f"mcp:{server}/{name}")
            (tool,) = guard(
                self._wall,
                self._kernel,
                self._session,
                [name],
                origins={name: origin},
                text_of=result_text,
            )
            self._guarded[name] = tool
        return tool

    async def call(self, name: str, args: dict[str, Any], *, defer: bool = False) -> ToolReply:
        """One call: through the kernel, and a hold waited out (up to ``hold_timeout``). With
        ``defer``, the record of a call that ran is left pending: :meth:`flush` (or the next
        call, first thing) commits it."""
        async with self._in_lane():
            self._settle()
            if self._broken is not None:
                meta = {"verdict": "refused", "rule": None, "request_id": None}
                text = (
                    f"gnomon: {name} was not run: the proxy could not record an earlier result "
                    f"({type(self._broken).__name__}, in the operator's log); restart it"
                )
                return ToolReply(text, True, meta)
            try:
                tool = self._tool(name)
                reply, recording = await tool.acall(args, self._run)
            except GnomonError as exc:  # a tool name no label or contract can hold
                meta = {"verdict": "denied", "rule": None, "request_id": None}
                return ToolReply(f"gnomon: {name} was not run: {exc}", True, meta)
            if recording is not None:
                self._pending = (tool, recording)
                if not defer:
                    self._settle()
            if reply.meta.get("verdict") != "held":
                return reply
            request_id = str(reply.meta["request_id"])
            return await anyio.to_thread.run_sync(self._wait, tool, request_id)

    @asynccontextmanager
    async def _in_lane(self) -> AsyncIterator[None]:
        """The lane, FIFO; taken at once when it is free, without a trip through the event loop
        (a cancelled caller is still stopped here)."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            self._lane.acquire_nowait()
        except anyio.WouldBlock:
            await self._lane.acquire()
        try:
            yield
        finally:
            self._lane.release()

    def _record(self, tool: GuardedTool, recording: Recording) -> None:
        """Commit a call's outcome and observation."""
        tool.record(recording)

    def _settle(self) -> None:
        """Commit the pending record, if any (the lane is held); remember a failure."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            self._record(*pending)
        except Exception as exc:
            if self._broken is None:
                self._broken = exc
            # the agent already has the result; the operator hears of the lost record here
            logger.error("gnomon mcp proxy: a tool result could not be recorded: %r", exc)

    async def flush(self) -> None:
        """Commit the pending record now (the relay calls it once a reply is on the wire)."""
        async with self._in_lane():
            self._settle()

    async def listing(self) -> dict[str, Any]:
        """The ``tools/list`` result the agent is served. The first time, what the servers
        wrote in it is recorded first (external content of each server, through a host channel):
        the session's label takes it before the agent can read it."""
        if not self._listed:
            async with self._in_lane():
                self._settle()
                if not self._listed:
                    for call in self._said:
                        self._session._observe_call(call)
                    self._listed = True
        return self._listing

    def _wait(self, tool: GuardedTool, request_id: str) -> ToolReply:
        """A held call, in a worker thread (the lane is held): poll for ``gnomon approve``."""
        kernel = self._kernel
        assert kernel is not None
        reason = (
            f"approval timed out: no approval within {self._config.hold_timeout:g}s "
            "(denied; a later approval does not run it)"
        )
        timeout, poll = self._config.hold_timeout, self._config.poll_interval
        return tool._reply(wait_for_approval(kernel, request_id, timeout, poll, reason))

    # -- the MCP server in front ------------------------------------------------------------

    def server(self) -> Server[Any]:
        """The SDK's lowlevel server over this proxy (streamable HTTP, in-process clients)."""

        async def list_tools(
            _ctx: Any, _params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            await self.listing()
            return types.ListToolsResult(tools=self._tools)

        async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return to_result(await self.call(params.name, params.arguments or {}))

        return Server("gnomon-mcp-proxy", on_list_tools=list_tools, on_call_tool=call_tool)

    async def relay(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
    ) -> None:
        """Serve the agent's side of a transport (stdio) at the message level: each JSON-RPC
        request is parsed once by the transport and answered here, without the SDK's server
        session (no second validation, dispatch and context per message). ``initialize``,
        ``ping``, ``tools/list`` and ``tools/call`` are answered; every other request is
        "method not found" (the proxy offers tools only: a resource or prompt passed through
        would reach the agent unrecorded); notifications need no answer, except the agent's
        ``notifications/cancelled``: the request it names (still in flight) is cancelled, its
        upstream call too (recorded as aborted), and it gets no reply."""
        inflight: dict[tuple[type, types.RequestId], anyio.CancelScope] = {}
        async with anyio.create_task_group() as tasks:
            async for item in read:
                if isinstance(item, UnreadableMessage):
                    await write.send(_error(item.request_id, item.code, str(item)))
                elif isinstance(item, Exception):
                    await write.send(_error(None, types.PARSE_ERROR, f"unreadable message: {item}"))
                elif isinstance(item.message, types.JSONRPCRequest):
                    tasks.start_soon(self._answer, item.message, write, inflight)
                elif isinstance(item.message, types.JSONRPCNotification):
                    _cancel(item.message, inflight)

    async def _answer(
        self,
        request: types.JSONRPCRequest,
        write: WriteStream[SessionMessage],
        inflight: dict[tuple[type, types.RequestId], anyio.CancelScope],
    ) -> None:
        key = (type(request.id), request.id)  # "1" and 1 are two requests
        with anyio.CancelScope() as scope:
            mine = inflight.setdefault(key, scope) is scope  # an id reused in flight: the first
            try:
                reply = await self._reply(request)
            except Exception as exc:  # never a crashed relay: the agent gets a JSON-RPC error
                # naming the kind of failure; the host's own text (paths, SQL) is the operator's
                logger.exception("gnomon mcp proxy: %s failed", request.method)
                why = (
                    f"gnomon mcp proxy: the host failed ({type(exc).__name__}, in the "
                    "operator's log)"
                )
                reply = _error(request.id, types.INTERNAL_ERROR, why)
            finally:
                if mine:
                    del inflight[key]
        if scope.cancelled_caught:  # the agent cancelled it: no reply (the record still goes)
            await self.flush()
            return
        try:
            await write.send(reply)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # the agent no longer reads its replies: the call itself is decided and recorded
            # all the same (the record below), and the relay goes on until stdin closes
            logger.info("gnomon mcp proxy: a reply could not be written (the agent is gone)")
        if self._pending is not None:
            await anyio.lowlevel.checkpoint()  # the transport writes the reply first
            await self.flush()

    async def _reply(self, request: types.JSONRPCRequest) -> SessionMessage:
        params = request.params or {}
        method = request.method
        reply: SessionMessage
        if method == "tools/call":
            name, args = params.get("name"), params.get("arguments")
            if not isinstance(name, str) or not isinstance(args, dict | None):
                why = "tools/call takes params {name: string, arguments: object}"
                reply = _error(request.id, types.INVALID_PARAMS, why)
            else:
                result = to_result(await self.call(name, args or {}, defer=True))
                reply = _response(request.id, result.model_dump(**_WIRE))
        elif method == "tools/list":
            reply = _response(request.id, await self.listing())
        elif method == "ping":
            reply = _response(request.id, {})
        elif method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
            reply = _response(request.id, _initialized(version))
        else:
            why = f"gnomon mcp proxy offers tools only: {method!r} is not relayed"
            reply = _error(request.id, types.METHOD_NOT_FOUND, why)
        return reply


def _cancel(
    notification: types.JSONRPCNotification,
    inflight: dict[tuple[type, types.RequestId], anyio.CancelScope],
) -> None:
    """The agent's ``notifications/cancelled``: cancel the request it names, if in flight."""
    if notification.method != "notifications/cancelled":
        return
    named = (notification.params or {}).get("requestId")
    if isinstance(named, int | str) and not isinstance(named, bool):
        scope = inflight.get((type(named), named))
        if scope is not None:
            scope.cancel()


#: How a result is written on the wire (the SDK's own serialization of a result).
_WIRE: dict[str, Any] = {"mode": "json", "by_alias": True, "exclude_none": True}


def _initialized(version: str) -> dict[str, Any]:
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=types.Implementation(name="gnomon-mcp-proxy", version=__version__),
    )
    return result.model_dump(**_WIRE)


def _response(request_id: types.RequestId, result: dict[str, Any]) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))


def _error(request_id: types.RequestId | None, code: int, message: str) -> SessionMessage:
    error = types.ErrorData(code=code, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def to_result(reply: ToolReply) -> types.CallToolResult:
    """The MCP result for a guarded reply: the server's own result when the tool ran, else an
    ``isError`` result. Its ``_meta`` verdict, rule and request id are the kernel's, always: a
    server's own ``_meta`` keeps its other keys, but cannot pass its result off as a hold."""
    meta = {k: reply.meta.get(k) for k in ("verdict", "rule", "request_id")}
    if isinstance(reply.output, types.CallToolResult):  # it ran (its verdict: executed, failed)
        served = reply.output
        return served.model_copy(update={"meta": {**(served.meta or {}), **meta}})
    return types.CallToolResult(
        content=[types.TextContent(text=reply.text)],
        is_error=reply.is_error,
        _meta=meta,
    )


def parse_listen(text: str, option: str = "--http") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) for ``--http`` and ``--approvals``, or a typed
    error.

    >>> parse_listen("127.0.0.1:8765")
    ('127.0.0.1', 8765)
    """
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(
            f"{option} takes HOST:PORT, got {text!r}",
            hint=f"gnomon mcp proxy --config proxy.yaml {option} 127.0.0.1:8765 -- <server>",
        )
    return host, int(port)


def _target(command: list[str]) -> str | StdioServerParameters:
    """One streamable HTTP URL (a server already running), or a command line (stdio)."""
    if len(command) == 1 and command[0].startswith(("http://", "https://")):
        return command[0]
    return StdioServerParameters(command=command[0], args=command[1:])


async def _serve_http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def run_proxy(
    config: ProxyConfig,
    command: Sequence[str],
    *,
    http: tuple[str, int] | None = None,
    approvals: tuple[str, int] | None = None,
) -> None:
    """Serve ``command``'s MCP server (a command line, or one streamable HTTP URL) behind the
    kernel, over this process's stdio or, with ``http=(host, port)``, over streamable HTTP at
    ``http://host:port/mcp``; with ``approvals=(host, port)``, the HTTP approval channel
    (:mod:`firewall.host.approval_http`) at ``http://host:port``."""
    targets: dict[str, str | StdioServerParameters] = {}
    if command:
        targets[config.server] = _target(list(command))
    for name, spec in config.servers.items():
        if name in targets:
            raise InputError(
                f"servers.{name} has the name of the server after --",
                hint="give it another name, or drop the command after --",
            )
        targets[name] = spec.url if spec.url is not None else _target(spec.command or [])
    if not targets:
        raise InputError(
            "no server command given",
            hint="gnomon mcp proxy --config proxy.yaml -- <server command> (or servers: in it)",
        )
    problem: GnomonError | None = None
    async with AsyncExitStack() as stack:
        upstreams: dict[str, Upstream] = {
            name: await stack.enter_async_context(
                Client(target) if isinstance(target, str) else open_stdio_upstream(target, name)
            )
            for name, target in targets.items()
        }
        wall = stack.enter_context(firewall.open(config.store))
        if approvals is not None:
            stack.enter_context(ApprovalChannel(config.store, *approvals))
        session = stack.enter_context(
            wall.session(project=config.project, actor=config.actor, user=config.user)
        )
        proxy = Proxy(config, wall, session, upstreams)
        try:
            await proxy.start()
        except GnomonError as exc:
            # raised after the clients close: inside them it would reach the CLI wrapped in
            # their task groups' exception group, not as the typed error it is
            problem = exc
        else:
            try:
                if http is not None:
                    await _serve_http(proxy.server(), *http)
                else:
                    read, write = await stack.enter_async_context(stdio_pipes())
                    async with anyio.create_task_group() as serving:
                        # terminated (the SDK's client does so two seconds after it closes our
                        # stdin): cancel the calls in flight, each recorded as aborted
                        serving.start_soon(_stop_on_signal, serving.cancel_scope)
                        await proxy.relay(read, write)
                        serving.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    await proxy.flush()
    if problem is not None:
        raise problem


__all__ = ["Proxy", "parse_listen", "result_text", "run_proxy", "to_result"]
