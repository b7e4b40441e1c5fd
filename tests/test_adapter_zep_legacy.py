"""The adapter contract over legacy Zep (zep-python 2.x, ``/api/v2`` session messages), the real
SDK against the fake server, plus: belief ids in the metadata sent, poison filtered from
``search_sessions`` and ``memory.get`` (facts too), a server error leaving a failed binding."""

from __future__ import annotations

import json
import os

import httpx
import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("zep_python")

from zep_python.client import Zep
from zep_python.types import Message

from gnomon import firewall
from gnomon.adapters.base import BELIEF_KEY
from gnomon.adapters.errors import BypassRefusedError, MissingSDKError, StoreCallError
from gnomon.adapters.fakes.zep_legacy import FakeLegacyZepServer
from gnomon.adapters.zep_legacy import GuardedLegacyZep
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState
from tests.adapter_contract import FACT, POISON, AdapterContract, Harness
from tests.attested import attested

HOST = "http://zep.test"
SESSION = "s-alice"


def raw_client(server: FakeLegacyZepServer) -> Zep:
    return Zep(
        api_key="test-key", base_url=HOST, httpx_client=httpx.Client(transport=server.transport())
    )


class TestLegacyZepAdapter(AdapterContract):
    updates_in_place = False

    def make_harness(self, wall: Firewall) -> Harness:
        server = FakeLegacyZepServer()
        raw = raw_client(server)
        raw.memory.add_session(session_id=SESSION, user_id="alice")
        zep = GuardedLegacyZep(
            raw, wall, project="shop", actor="coder", user="alice", policy="default"
        )

        def raw_write(text: str) -> str:
            raw.memory.add(SESSION, messages=[Message(role="x", role_type="user", content=text)])
            return f"{SESSION}/{server.messages[SESSION][-1]['uuid']}"

        def raw_edit(ident: str, text: str) -> None:
            found = server.message(*ident.rsplit("/", 1))
            assert found is not None
            found["content"] = text  # v2 has no edit call

        def raw_delete(ident: str) -> None:
            sid, uuid = ident.rsplit("/", 1)
            server.messages[sid] = [m for m in server.messages[sid] if m["uuid"] != uuid]

        return Harness(
            zep.gnomon,
            {"session_id": SESSION},
            raw_write=raw_write,
            raw_edit=raw_edit,
            raw_delete=raw_delete,
            break_writes=lambda: server.fail("memory.add", 503),
        )


@pytest.fixture
def env():  # type: ignore[no-untyped-def]
    wall = firewall.open("memory://")
    server = FakeLegacyZepServer()
    calls: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return server.handle(request)

    raw = Zep(
        api_key="k", base_url=HOST, httpx_client=httpx.Client(transport=httpx.MockTransport(handle))
    )
    zep = GuardedLegacyZep(raw, wall, project="shop", actor="coder", user="alice", policy="default")
    zep.memory.add_session(session_id=SESSION, user_id="alice")
    yield wall, zep, server, calls
    zep.close()
    wall.close()


def test_metadata_sent_carries_the_belief_id(env) -> None:  # type: ignore[no-untyped-def]
    wall, zep, server, calls = env
    zep.memory.add(
        SESSION,
        messages=[Message(role="alice", role_type="user", content=FACT, metadata={"k": "v"})],
        gnomon_origin=attested(wall, Origin.user("alice")),
    )
    (sent,) = [
        json.loads(r.content)
        for r in calls
        if r.method == "POST" and r.url.path.endswith("/memory")
    ]
    metadata = sent["messages"][0]["metadata"]
    (binding,) = wall.store.list_bindings("zep-legacy")
    assert metadata[BELIEF_KEY] == binding.belief_id and metadata["k"] == "v"
    assert binding.state == BindingState.WRITTEN
    assert binding.store_id == f"{SESSION}/{server.messages[SESSION][0]['uuid']}"
    assert calls[0].url.path.startswith("/api/v2/")


def test_search_and_get_filter_poison(env) -> None:  # type: ignore[no-untyped-def]
    wall, zep, server, _ = env
    zep.memory.add(
        SESSION,
        messages=[Message(role="alice", role_type="user", content=FACT)],
        gnomon_origin=attested(wall, Origin.user("alice")),
    )
    raw_client(server).memory.add(  # written around the firewall
        SESSION, messages=[Message(role="web", role_type="user", content="Alice: " + POISON)]
    )
    found = zep.memory.search_sessions(text="Alice tea deploy", session_ids=[SESSION], limit=10)
    assert [r.message.content for r in found.results] == [FACT]
    assert found.results[0].message.gnomon["origin_ids"] == ["user:alice"]
    facts = zep.memory.search_sessions(text="deploy force", search_scope="facts", limit=10)
    assert facts.results == []  # facts have no provenance: unbound external, filtered
    memory = zep.memory.get(SESSION)
    assert [m.content for m in memory.messages] == [FACT]
    assert "force" not in str(memory.dict())  # neither the message, a fact nor the summary


def test_server_error_is_typed_and_leaves_a_failed_binding(env) -> None:  # type: ignore[no-untyped-def]
    wall, zep, server, _ = env
    server.fail("memory.add", 500)
    with pytest.raises(StoreCallError) as raised:
        zep.memory.add(SESSION, messages=[Message(role="a", role_type="user", content="lost")])
    assert raised.value.status == 500 and raised.value.call == "memory.add"
    (binding,) = wall.store.list_bindings("zep-legacy")
    assert binding.state == BindingState.FAILED
    with pytest.raises(BypassRefusedError):
        zep.memory.delete  # noqa: B018
    with pytest.raises(BypassRefusedError):
        zep.memory.get_fact  # noqa: B018


def test_missing_sdk_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "zep_python", None)
    monkeypatch.setitem(sys.modules, "zep_python.client", None)
    monkeypatch.delitem(sys.modules, "gnomon.adapters.zep_legacy", raising=False)
    with pytest.raises(MissingSDKError) as raised:
        importlib.import_module("gnomon.adapters.zep_legacy")
    assert raised.value.command == "pip install 'gnomon[zep-legacy]'"
