"""The MCP proxy's stdio transport in front: JSON-RPC lines on this process's stdin and stdout,
read and written in the event loop (non-blocking pipes), no worker thread per line.

The SDK's ``stdio_server`` reads each line and writes (and flushes) each message through a
worker thread: three thread hops per call, each a wake-up of another thread on a loaded
machine. This transport yields the same pair of streams of
:class:`~mcp.shared.message.SessionMessage` (parsed by the SDK's own JSON-RPC adapter), so the
relay does not know which one it serves. Like the SDK's, it takes the wire away from fd 0 and
fd 1 while it serves (fd 0 reads the null device, fd 1 writes to stderr): a stray ``print`` or a
child process cannot corrupt the wire. Both are restored on exit.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

#: The longest line accepted from the agent (a longer one is a parse error, and the rest of its
#: line is skipped, never read as a message of its own).
MAX_LINE = 16 * 1024 * 1024


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """``(read, write)`` over this process's stdin and stdout; see the module docstring."""
    wire_in, wire_out = _claim(0, os.O_RDONLY), _claim(1, os.O_WRONLY)
    try:
        incoming_w, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outgoing, outgoing_r = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as writing:
            writing.start_soon(_write_lines, wire_out, outgoing_r)
            async with anyio.create_task_group() as reading:
                reading.start_soon(_read_lines, wire_in, incoming_w)
                try:
                    yield incoming, outgoing
                finally:
                    reading.cancel_scope.cancel()
                    # what was sent is written before the wire is given back
                    outgoing.close()
    finally:
        _release(0, wire_in)
        _release(1, wire_out)


def _claim(fd: int, flags: int) -> int:
    """A private, non-blocking duplicate of ``fd`` (above the standard range); ``fd`` itself is
    pointed at the null device (stdin) or stderr (stdout)."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.set_blocking(private, False)
    diversion = os.open(os.devnull, flags) if fd == 0 else os.dup(2)
    os.dup2(diversion, fd)
    os.close(diversion)
    return private


def _release(fd: int, private: int) -> None:
    with suppress(OSError):
        os.set_blocking(private, True)
        os.dup2(private, fd)
        os.close(private)


class UnreadableMessage(ValueError):
    """A line that is no JSON-RPC message: ``code`` is the JSON-RPC error to answer with
    (parse error, or invalid request with the ``request_id`` it carried)."""

    def __init__(self, code: int, why: str, request_id: types.RequestId | None = None) -> None:
        super().__init__(why)
        self.code = code
        self.request_id = request_id


async def _read_lines(fd: int, out: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    async def line(data: bytes) -> None:
        await out.send(_parse(data))

    async def unreadable(why: str) -> None:
        await out.send(UnreadableMessage(types.PARSE_ERROR, why))

    async with out:
        await read_lines(fd, line, unreadable)


async def read_lines(
    fd: int,
    line: Callable[[bytes], Awaitable[None]],
    unreadable: Callable[[str], Awaitable[None]],
    limit: int = MAX_LINE,
) -> None:
    """Read newline-framed messages from the non-blocking ``fd`` until it ends: each non-blank
    line goes to ``line``; a line longer than ``limit`` goes to ``unreadable`` once (with why),
    and the rest of it is skipped, never read as a message of its own; so does input that ends
    inside a line. Shared by the front (the agent's lines) and the upstream client (the
    server's)."""
    buffer = bytearray()  # the line so far
    skipping = False  # inside a line already refused as too long: dropped up to its newline
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        except OSError:  # the pipe broke: as if it ended
            chunk = b""
        if not chunk:  # the writer closed its end
            if buffer.strip() and not skipping:
                await unreadable(CUT_OFF)
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not skipping:
                buffer += chunk[start:end]
                if len(buffer) > limit:
                    await unreadable(too_long(limit))
                elif buffer.strip():
                    await line(bytes(buffer))
            buffer.clear()
            skipping = False
            start = end + 1
        if not skipping:
            buffer += chunk[start:]
            if len(buffer) > limit:
                buffer.clear()
                skipping = True
                await unreadable(too_long(limit))


def too_long(limit: int) -> str:
    return f"a message longer than {limit} bytes (the rest of its line is skipped)"


async def write_all(fd: int, data: bytes) -> bool:
    """Write ``data`` to the non-blocking ``fd``, waiting while the pipe is full; ``False``
    when the reader is gone."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)
        except OSError:
            return False
    return True


_TOO_DEEP = "not JSON-RPC: nested too deeply to read"
CUT_OFF = "the input ended inside a message (each message ends with a newline)"
_NOT_A_REQUEST = (
    "not a JSON-RPC 2.0 message: one object per line, "
    '{"jsonrpc": "2.0", "id": <int or string>, "method": <string>, "params": <object>} '
    "(no batches)"
)


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        pass
    # the failure path only: JSON at all (then an invalid request, with its id if it has one)?
    try:
        doc = json.loads(line)
    except ValueError as exc:
        return UnreadableMessage(types.PARSE_ERROR, f"not JSON: {exc}"[:200])
    except RecursionError:  # the validator refused it; the fallback must not crash the relay
        return UnreadableMessage(types.PARSE_ERROR, _TOO_DEEP)
    found = doc.get("id") if isinstance(doc, dict) else None
    request_id = found if isinstance(found, int | str) and not isinstance(found, bool) else None
    return UnreadableMessage(types.INVALID_REQUEST, _NOT_A_REQUEST, request_id)


async def _write_lines(fd: int, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with messages:
        async for message in messages:
            json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            if not await write_all(fd, (json + "\n").encode()):
                return  # the agent is gone: nothing more can reach it


__all__ = [
    "CUT_OFF",
    "MAX_LINE",
    "UnreadableMessage",
    "read_lines",
    "stdio_pipes",
    "too_long",
    "write_all",
]
