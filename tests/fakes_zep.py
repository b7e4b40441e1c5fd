"""respx routes over the fake Zep Cloud server (``/api/v4``), so tests drive the real
``Zep``/``AsyncZep`` objects end to end and can assert what went over the wire."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import respx

from gnomon.adapters.fakes.zep import PREFIX, FakeZepServer

HOST = "http://zep.test"
BASE_URL = HOST + PREFIX


@contextmanager
def zep_routes(server: FakeZepServer | None = None) -> Iterator[respx.MockRouter]:
    server = server or FakeZepServer()
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
    from zep_cloud.client import Zep

    return Zep(api_key="test-key", base_url=BASE_URL, max_retries=0, **options)  # type: ignore[arg-type]


def async_client(**options: object) -> object:
    from zep_cloud.client import AsyncZep

    return AsyncZep(api_key="test-key", base_url=BASE_URL, max_retries=0, **options)  # type: ignore[arg-type]


def request_json(mock: respx.MockRouter, route: str) -> object:
    request: httpx.Request = mock.routes[route].calls.last.request
    return json.loads(request.content)


def served_client(transport: httpx.BaseTransport) -> tuple[Any, str, str]:
    """A real ``Zep`` served by ``transport`` (a fake server's, or one wrapping it), with user
    ``alice`` and one thread: ``(client, her graph, the thread)``."""
    from zep_cloud.client import Zep

    raw = Zep(
        api_key="k",
        base_url=BASE_URL,
        max_retries=0,
        httpx_client=httpx.Client(transport=transport),
    )
    user = raw.user.create(user_id="alice")
    return raw, user.graph_uuid, raw.thread.create(user_uuid=user.uuid_).uuid_


def served_legacy_client(transport: httpx.BaseTransport) -> Any:
    """A real ``zep_python`` (v2) ``Zep`` served by ``transport``."""
    from zep_python.client import Zep

    return Zep(
        api_key="k", base_url="http://zep.test", httpx_client=httpx.Client(transport=transport)
    )
