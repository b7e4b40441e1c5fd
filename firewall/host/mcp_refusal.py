"""A proxy that cannot start says why where the user looks: in the MCP client's ``initialize``.

An MCP client starts ``gnomon mcp proxy`` itself and shows the user what the server answers; the
proxy's stderr goes to a log few people open. So when the proxy cannot start (a bad config, an
unsigned policy, a server that will not launch), it reads the client's requests and answers each
with a JSON-RPC error carrying the problem and its fix, until the client's ``initialize`` is
answered (then it exits) or the client closes the pipe. Plain JSON lines, standard library only:
it must work when the ``mcp`` package itself is what is missing.

>>> import io
>>> wire_in = io.BytesIO(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}\\n')
>>> wire_out = io.BytesIO()
>>> refuse_requests("proxy.yaml: tools.push.level: bad", "see docs", wire_in, wire_out)
1
>>> reply = json.loads(wire_out.getvalue())
>>> reply["id"], reply["error"]["code"]
(1, -32000)
>>> reply["error"]["message"]
'gnomon mcp proxy cannot start: proxy.yaml: tools.push.level: bad (fix: see docs)'
"""

from __future__ import annotations

import json
from typing import BinaryIO

#: The JSON-RPC error code of the answer (the implementation-defined server-error range).
STARTUP_ERROR = -32000


def refuse_requests(message: str, hint: str | None, wire_in: BinaryIO, wire_out: BinaryIO) -> int:
    """Answer every request read from ``wire_in`` with the startup error, until ``initialize``
    is answered or the input ends; return how many requests were answered."""
    text = f"gnomon mcp proxy cannot start: {message}" + (f" (fix: {hint})" if hint else "")
    answered = 0
    for line in wire_in:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or "method" not in request or "id" not in request:
            continue  # a notification, or not a message: nothing to answer
        error = {"code": STARTUP_ERROR, "message": text, "data": {"problem": message, "fix": hint}}
        reply = {"jsonrpc": "2.0", "id": request["id"], "error": error}
        wire_out.write(json.dumps(reply).encode("utf-8") + b"\n")
        wire_out.flush()
        answered += 1
        if request.get("method") == "initialize":
            break
    return answered


__all__ = ["STARTUP_ERROR", "refuse_requests"]
