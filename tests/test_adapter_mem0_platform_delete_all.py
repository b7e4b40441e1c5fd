"""A guarded ``delete_all`` that cannot spill, on mem0's platform client: the real
``MemoryClient`` against the fake platform (``adapters/fakes/mem0_platform.py``) over respx, in
the wire format the SDK sends.

Promises: an unscoped call, a wildcard one (``user_id="*"``, the platform's "any value") and one
for another user than the session's are refused before any request; a scoped one sends that
scope, deletes only it, and reports exactly the ids it deleted; a platform that answers success
and deletes nothing is caught by the read-back and raised as :class:`PartialDeleteError`. FLIP:
without the read-back the lie is reported as a complete delete.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

import respx

from gnomon import firewall
from gnomon.adapters import bulk_delete, mem0_guard
from gnomon.adapters.errors import BypassRefusedError, PartialDeleteError
from gnomon.adapters.fakes.mem0_platform import FakeMem0Platform
from gnomon.adapters.mem0 import GuardedMemoryClient
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState
from tests.attested import attested
from tests.test_adapter_mem0_platform import mem0_routes, sync_client

ALICE = ["Alice drinks tea every morning", "Alice lives in Springfield"]
BOB = "Bob drinks coffee at noon"


@pytest.fixture
def setup() -> Iterator[tuple[Firewall, respx.MockRouter, GuardedMemoryClient, list[str]]]:
    wall = firewall.open("memory://")
    with mem0_routes() as mock:
        client = GuardedMemoryClient(
            sync_client(), wall, project="shop", actor="coder", user="alice"
        )
        server: FakeMem0Platform = mock.server  # type: ignore[attr-defined]
        ids = [server.put(text, user_id="alice") for text in ALICE]
        server.put(BOB, user_id="bob")
        client.gnomon.import_({"user_id": "alice"}, progress=False)
        yield wall, mock, client, ids
    wall.close()


def texts(mock: respx.MockRouter, user: str) -> list[str]:
    server: FakeMem0Platform = mock.server  # type: ignore[attr-defined]
    return sorted(r["memory"] for r in server.memories.values() if r.get("user_id") == user)


def requests_made(mock: respx.MockRouter) -> int:
    return sum(route.call_count for route in mock.routes)


def test_an_unscoped_wildcard_or_foreign_delete_all_is_refused_before_any_request(
    setup: Any,
) -> None:
    _, mock, client, _ = setup
    before = requests_made(mock)
    with pytest.raises(BypassRefusedError, match="every user's memories"):
        client.delete_all()
    with pytest.raises(BypassRefusedError, match=r"user_id='\*'"):
        client.delete_all(user_id="*")
    with pytest.raises(BypassRefusedError, match=r"agent_id='\*'"):
        client.delete_all(user_id="alice", agent_id="*")
    with pytest.raises(BypassRefusedError, match="beyond this session's user"):
        client.delete_all(user_id="bob")
    assert requests_made(mock) == before
    assert texts(mock, "alice") == sorted(ALICE) and texts(mock, "bob") == [BOB]


def test_a_scoped_delete_all_sends_its_scope_and_reports_exactly_what_it_deleted(
    setup: Any,
) -> None:
    wall, mock, client, ids = setup
    out = client.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert sorted(out["gnomon"]["deleted"]) == sorted(ids) and "message" in out
    (call,) = mock.routes["delete_all"].calls
    assert dict(call.request.url.params) == {"user_id": "alice"}
    assert texts(mock, "alice") == [] and texts(mock, "bob") == [BOB]
    assert {b.state for b in wall.store.list_bindings("mem0")} == {BindingState.DELETED}


def _lie(mock: respx.MockRouter) -> None:
    """The platform answers the bulk delete with success and deletes nothing."""
    server: FakeMem0Platform = mock.server  # type: ignore[attr-defined]
    server.fail("delete_all", "malformed", body={"message": "Memories deleted successfully!"})


def test_attack_a_platform_that_lies_about_its_delete_is_caught(setup: Any) -> None:
    wall, mock, client, ids = setup
    _lie(mock)
    with pytest.raises(PartialDeleteError) as caught:
        client.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert sorted(caught.value.remaining) == sorted(ids)
    assert texts(mock, "alice") == sorted(ALICE)


def test_attack_flip_without_the_read_back_the_lie_is_reported_as_done(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall, mock, client, _ = setup
    _lie(mock)
    monkeypatch.setattr(
        mem0_guard._Guarded,
        "_deleted",
        lambda self, out, rows, left: {**out, "gnomon": {"deleted": ["all"]}},
    )
    out = client.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert out["gnomon"]["deleted"] and texts(mock, "alice") == sorted(ALICE)  # the lie stands


def test_attack_a_wildcard_is_refused_even_where_no_user_is_bound(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session with no user has no foreign-user check: the wildcard refusal alone keeps a
    ``user_id="*"`` from reaching every user. FLIP: without it, Bob's memory goes too."""
    wall, mock, _, _ = setup
    anyone = GuardedMemoryClient(sync_client(), wall, project="shop", actor="coder")
    with pytest.raises(BypassRefusedError, match=r"user_id='\*'"):
        anyone.delete_all(user_id="*")
    assert texts(mock, "bob") == [BOB]
    monkeypatch.setattr(bulk_delete, "WILDCARD", object())
    anyone.delete_all(user_id="*")
    assert texts(mock, "bob") == []  # every user's memories: the spill the check prevents
