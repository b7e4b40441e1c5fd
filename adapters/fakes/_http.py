"""A tiny routing core shared by the in-process fake servers.

A fake server is a set of ``(method, path regex) -> handler`` routes over in-memory state. It
answers ``httpx.Request`` objects directly, so the same server sits behind an
``httpx.MockTransport`` (the examples, no test dependency) or behind respx routes (the tests,
which also assert what went over the wire). Faults are injected per route: an HTTP status, a
timeout, or a malformed body, each for the next ``times`` matching calls.

Each fake subclasses :class:`FakeServer` and declares a route on its handler with
:func:`route`; the routes are registered in the order the handlers are defined.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import httpx

Handler = Callable[..., httpx.Response]
H = TypeVar("H", bound=Handler)

TIMEOUT = "timeout"
MALFORMED = "malformed"


@dataclass
class Route:
    name: str
    method: str
    pattern: re.Pattern[str]
    handler: Handler


@dataclass
class Fault:
    route: str
    kind: int | str
    times: int
    body: Any = None


@dataclass
class Router:
    """Routes and faults of one fake server. ``prefix`` is stripped from every path."""

    prefix: str = ""
    routes: list[Route] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    calls: list[tuple[str, httpx.Request]] = field(default_factory=list)

    def add(self, name: str, method: str, path: str, handler: Handler) -> None:
        regex = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"
        self.routes.append(Route(name, method, re.compile(regex), handler))

    def __iter__(self) -> Iterator[Route]:
        return iter(self.routes)

    def fail(self, route: str, kind: int | str, *, times: int = 1, body: Any = None) -> None:
        """Make the next ``times`` calls of ``route`` fail with an HTTP status, ``"timeout"``
        (raises ``httpx.ReadTimeout``) or ``"malformed"`` (200 with ``body``, default junk)."""
        if route not in {r.name for r in self.routes}:
            raise KeyError(f"no route named {route!r}")
        self.faults.append(Fault(route, kind, times, body))

    def match(self, request: httpx.Request) -> tuple[Route, dict[str, str]] | None:
        path = request.url.path
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix) :]
        for route in self.routes:
            if route.method == request.method:
                found = route.pattern.match(path)
                if found:
                    return route, found.groupdict()
        return None

    def handle(self, request: httpx.Request) -> httpx.Response:
        matched = self.match(request)
        if matched is None:
            return httpx.Response(404, json={"detail": f"no route {request.method} {request.url}"})
        route, params = matched
        self.calls.append((route.name, request))
        for fault in self.faults:
            if fault.route == route.name and fault.times > 0:
                fault.times -= 1
                return _faulted(fault, request)
        try:
            return route.handler(request, **params)
        except ErrorReply as reply:
            return reply.response


class ErrorReply(Exception):
    """Raised by a fake's lookup or validation helper: the request ends with ``response``."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def route(name: str, method: str, path: str) -> Callable[[H], H]:
    """Declare the decorated handler as the answer to ``method path`` (``{param}`` segments
    reach it as keyword arguments), under the SDK's name for the call, ``name``."""

    def declare(handler: H) -> H:
        handler.__dict__.setdefault("fake_routes", []).append((name, method, path))
        return handler

    return declare


class FakeServer:
    """Base of the fake servers: collects the :func:`route` handlers into :attr:`router`.

    ``router.fail(name, ...)`` (or :meth:`fail`) injects faults; ``router.calls`` records
    traffic; :meth:`transport` serves the fake to an ``httpx`` client without a network.
    """

    #: stripped from every request path before matching (the API's version prefix)
    prefix: ClassVar[str] = ""

    def __init__(self) -> None:
        self.router = Router(prefix=self.prefix)
        for klass in reversed(type(self).__mro__):
            for attr, member in vars(klass).items():
                for name, method, path in getattr(member, "fake_routes", ()):
                    self.router.add(name, method, path, getattr(self, attr))

    def handle(self, request: httpx.Request) -> httpx.Response:
        return self.router.handle(request)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def fail(self, route: str, kind: int | str, *, times: int = 1, body: Any = None) -> None:
        self.router.fail(route, kind, times=times, body=body)


def _faulted(fault: Fault, request: httpx.Request) -> httpx.Response:
    if fault.kind == TIMEOUT:
        raise httpx.ReadTimeout("fake server: injected timeout", request=request)
    if fault.kind == MALFORMED:
        body = fault.body if fault.body is not None else {"unexpected": ["shape"]}
        return httpx.Response(200, json=body)
    assert isinstance(fault.kind, int)
    return httpx.Response(
        fault.kind,
        json=fault.body or {"detail": f"injected {fault.kind}", "error": {"message": "injected"}},
    )


def json_of(request: httpx.Request) -> Any:
    import json

    return json.loads(request.content or b"null")


def tokens(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if len(t) > 2}


def score(query: str | None, text: str) -> float:
    """Token overlap in [0, 1]; an empty query matches everything with a small score."""
    if not query:
        return 0.01
    q = tokens(query)
    if not q:
        return 0.01
    return len(q & tokens(text)) / len(q)
