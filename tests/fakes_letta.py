"""respx routes over the fake Letta server, so tests drive the real ``Letta``/``AsyncLetta``
objects end to end and can assert what went over the wire (``routes["blocks.create"]``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import respx

from gnomon.adapters.fakes.letta import FakeLettaServer

BASE_URL = "http://letta.test"


@contextmanager
def letta_routes(server: FakeLettaServer | None = None) -> Iterator[respx.MockRouter]:
    """Mount every route of ``server`` (a fresh one by default) under :data:`BASE_URL`; any
    request the fake does not know fails the test (``assert_all_mocked``)."""
    server = server or FakeLettaServer()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as mock:
        for route in server.router:
            # Named groups would reach the side effect as keyword arguments: make them plain.
            pattern = re.sub(r"\(\?P<\w+>", "(?:", route.pattern.pattern.strip("^$"))
            mock.route(
                name=route.name,
                method=route.method,
                url__regex=re.escape(BASE_URL) + pattern + r"(\?.*)?$",
            ).mock(side_effect=server.handle)
        mock.server = server  # type: ignore[attr-defined]
        yield mock


def sync_client(**options: object) -> object:
    from letta_client import Letta

    return Letta(base_url=BASE_URL, max_retries=0, **options)  # type: ignore[arg-type]


def async_client(**options: object) -> object:
    from letta_client import AsyncLetta

    return AsyncLetta(base_url=BASE_URL, max_retries=0, **options)  # type: ignore[arg-type]


def request_json(mock: respx.MockRouter, route: str) -> object:
    import json

    request: httpx.Request = mock.routes[route].calls.last.request
    return json.loads(request.content)
