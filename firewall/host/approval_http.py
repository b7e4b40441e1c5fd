"""The proxy's HTTP approval channel (``gnomon mcp proxy --approvals HOST:PORT``) and its client
(``gnomon approve REQUEST_ID --http URL``).

An approver who cannot reach the store reaches the running host instead:

* ``GET /holds/REQUEST_ID``: the held request (tool, level, digests, arguments as shown, the
  approver keys its rule names), what the approver signs;
* ``POST /approvals``: a signed approval (the JSON ``ApprovalSigner`` makes). It is written to
  the log as it came (``approval.submitted``, :func:`~firewall.kernel.ledger.post_submitted`),
  and the waiting host verifies it with the same function as an approval ``gnomon approve``
  wrote to the store (:meth:`~firewall.kernel.ActionKernel.process_submitted`): a forged,
  replayed, expired, wrong-digest or wrong-approver approval is recorded as
  ``approval.forgery`` the same way, and nothing runs.

Nothing here verifies or trusts an approval: the channel only carries it. Bodies are capped at
:data:`MAX_BODY` bytes (``Content-Length`` required), every answer is JSON, an error is
``{"error", "message", "hint"}`` naming what was wrong, and a host failure is answered without
its details (those go to the operator's log). The channel listens on loopback unless the
operator names another address.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from gnomon import firewall
from gnomon.firewall.kernel.approvals import ApprovalRequest
from gnomon.firewall.kernel.ledger import FORGERY, RequestState, post_submitted, read_request
from gnomon.firewall.model.errors import GnomonError, InputError, UnknownIdError

logger = logging.getLogger(__name__)

#: the largest request body the channel reads (an approval is well under 2 KiB)
MAX_BODY = 64 * 1024
#: how long a POST waits for the host to verify the approval before answering ``submitted``
VERDICT_WAIT_S = 10.0
_RUNNING = frozenset({"approved", "executing"})  # verified, not finished: worth a short wait
_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class ApprovalChannel:
    """The HTTP approval channel over the store at ``url``, served from a daemon thread."""

    def __init__(self, url: str, host: str, port: int, *, wait: float = VERDICT_WAIT_S) -> None:
        self._url, self._wait = url, wait
        channel = self

        class Handler(_Handler):
            served = channel

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def __enter__(self) -> ApprovalChannel:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the two endpoints ------------------------------------------------------------------

    def hold(self, request_id: str) -> dict[str, Any]:
        with firewall.open(self._url) as wall:
            state = read_request(wall.store, request_id)
        if state is None or state.request is None:
            raise UnknownIdError("request", request_id)
        return {"status": state.status, "request": state.request.model_dump(mode="json")}

    def submit(self, doc: object) -> tuple[HTTPStatus, dict[str, Any]]:
        if not isinstance(doc, dict) or not isinstance(doc.get("request_id"), str):
            raise InputError(
                "the body must be a JSON object: a signed approval with its request_id",
                hint="sign it with `gnomon approve REQUEST_ID --http URL --key KEY`",
            )
        request_id = doc["request_id"]
        with firewall.open(self._url) as wall:
            seq = post_submitted(wall.store, request_id, doc, now=wall.clock()).seq
            deadline = time.monotonic() + self._wait
            while True:
                state = read_request(wall.store, request_id)
                if state is None or time.monotonic() > deadline:
                    break
                if seq in state.handled and state.status not in _RUNNING:
                    break
                time.sleep(0.05)
        return _verdict(request_id, seq, state)


def _verdict(
    request_id: str, seq: int, state: RequestState | None
) -> tuple[HTTPStatus, dict[str, Any]]:
    """What became of the submission ``seq``: verified (and the request's status), recorded as
    a forgery (its kind), or not picked up yet (no host is waiting on that hold)."""
    out: dict[str, Any] = {"request_id": request_id, "seq": seq}
    if state is None or seq not in state.handled:
        out["status"] = "submitted"
        out["message"] = "written to the log; no host has verified it yet"
        return HTTPStatus.ACCEPTED, out
    forged = [
        e.payload for e in state.events
        if e.kind == FORGERY and e.payload.get("submitted_seq") == seq
    ]  # fmt: skip
    if forged:
        kind = str(forged[0].get("kind"))
        out.update(error=kind, message=f"the host refused the approval ({kind}); recorded")
        return HTTPStatus.FORBIDDEN, out
    out["status"] = state.status
    return HTTPStatus.OK, out


class _Handler(BaseHTTPRequestHandler):
    served: ApprovalChannel
    timeout = 10  # a client that stops sending mid-body is dropped, not waited on forever
    server_version = "gnomon-approvals"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(lambda: self._get())

    def do_POST(self) -> None:
        self._answer(lambda: self._post())

    def _get(self) -> tuple[HTTPStatus, dict[str, Any]]:
        prefix = "/holds/"
        request_id = self.path[len(prefix) :] if self.path.startswith(prefix) else ""
        if not request_id or len(request_id) > 64 or not set(request_id) <= _ID:
            return _error(HTTPStatus.NOT_FOUND, "not_found", "GET /holds/REQUEST_ID only")
        return HTTPStatus.OK, self.served.hold(request_id)

    def _post(self) -> tuple[HTTPStatus, dict[str, Any]]:
        if self.path != "/approvals":
            return _error(HTTPStatus.NOT_FOUND, "not_found", "POST /approvals only")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return _error(
                HTTPStatus.LENGTH_REQUIRED, "length_required", "send a Content-Length header"
            )
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is never read
            return _error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "too_large",
                f"the body is {length} bytes; an approval is at most {MAX_BODY}",
            )
        raw = self.rfile.read(int(length))
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _error(HTTPStatus.BAD_REQUEST, "not_json", "the body is not JSON")
        return self.served.submit(doc)

    def _answer(self, work: Callable[[], tuple[HTTPStatus, dict[str, Any]]]) -> None:
        try:
            status, body = work()
        except UnknownIdError as exc:
            status, body = _error(HTTPStatus.NOT_FOUND, "unknown_request", exc.message, exc.hint)
        except GnomonError as exc:
            status, body = _error(HTTPStatus.BAD_REQUEST, "bad_request", exc.message, exc.hint)
        except Exception:  # the host's own text (paths, SQL) is the operator's, not the caller's
            logger.exception("gnomon approval channel: %s %s failed", self.command, self.path)
            status, body = _error(
                HTTPStatus.INTERNAL_SERVER_ERROR, "host_failed", "the host failed (in its log)"
            )
        data = orjson.dumps(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("gnomon approval channel: " + format, *args)


def _error(
    status: HTTPStatus, kind: str, message: str, hint: str | None = None
) -> tuple[HTTPStatus, dict[str, Any]]:
    return status, {"error": kind, "message": message, "hint": hint}


# -- the client side (``gnomon approve --http``) ----------------------------------------------


def fetch_hold(base: str, request_id: str) -> ApprovalRequest:
    """The held request ``request_id`` as the host at ``base`` serves it."""
    _, doc = _call("GET", f"{base.rstrip('/')}/holds/{request_id}", None)
    try:
        return ApprovalRequest.model_validate(doc["request"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{base} did not answer with a held request: {exc}") from None


def send_approval(base: str, approval: dict[str, Any]) -> dict[str, Any]:
    """POST a signed approval to the host at ``base``; its JSON answer (a refusal raises)."""
    return _call("POST", f"{base.rstrip('/')}/approvals", approval)[1]


def _call(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--http takes an http(s) URL, got {url!r}")
    data = orjson.dumps(body) if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=VERDICT_WAIT_S + 20) as answer:
            return answer.status, _json(answer.read(MAX_BODY))
    except urllib.error.HTTPError as exc:
        doc = _json(exc.read(MAX_BODY))
        raise InputError(
            f"the host refused: {doc.get('error', exc.code)}: {doc.get('message', exc.reason)}",
            hint=doc.get("hint") or None,
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(
            f"cannot reach the approval channel at {url}: {exc}",
            hint="start the proxy with --approvals HOST:PORT and pass http://HOST:PORT",
        ) from None


def _json(raw: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


__all__ = ["MAX_BODY", "ApprovalChannel", "fetch_hold", "send_approval"]
