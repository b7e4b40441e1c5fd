"""What the attack tests on hostile stores share: a firewall in memory, a transport that
rewrites a fake server's answers, and an SDK object as the text a caller would see."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from gnomon import firewall
from gnomon.adapters.guard import EARLIER_HASH_UPGRADE
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.states import SecurityStatus


@pytest.fixture(name="wall")
def memory_wall() -> Iterator[Firewall]:
    """``wall``: a firewall in memory (import this into a test module to use it)."""
    wall = firewall.open("memory://")
    yield wall
    wall.close()


def hostile(
    handle: Callable[[httpx.Request], httpx.Response],
    edit: Callable[[httpx.Request, Any], Any],
) -> httpx.MockTransport:
    """The server's answers, each JSON body passed through ``edit`` (the attack)."""

    def serve(request: httpx.Request) -> httpx.Response:
        response = handle(request)
        try:
            body = json.loads(response.content)
        except ValueError:
            return response
        return httpx.Response(response.status_code, json=edit(request, body))

    return httpx.MockTransport(serve)


def dumped(obj: Any) -> str:
    """An SDK object (pydantic 2 or 1) or a plain value as JSON text."""
    dump = getattr(obj, "model_dump", None) or getattr(obj, "dict", None)
    return json.dumps(dump() if dump else obj, default=str)


def drifted(wall: Firewall, store: str) -> None:
    """The store's one binding is drift (not taken as an earlier binding's upgrade) and its
    belief turned suspicious: what an edit around the firewall must come to."""
    (binding,) = wall.store.list_bindings(store)
    assert binding.state == BindingState.DRIFTED and binding.detail != EARLIER_HASH_UPGRADE
    assert wall.require_belief(binding.belief_id).security_status == SecurityStatus.SUSPICIOUS
