"""mem0's platform clients (``MemoryClient``, ``AsyncMemoryClient``) as the real SDK objects
against respx routes over the fake platform (``adapters/fakes/mem0_platform.py``), in the wire
format mem0 2.2 sends; ``AsyncMemory`` for real, offline. The adapter contract, what the guarded
clients send, screening, errors, pagination, and the missing-SDK error.

Skipped only when mem0 is not installed, and never under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

import httpx
import respx

from gnomon import firewall
from gnomon.adapters.base import BELIEF_KEY, HASH_KEY, INTEGRITY_KEY, ORIGIN_KEY
from gnomon.adapters.errors import (
    BypassRefusedError,
    StoreCallError,
    StoreResponseError,
    StoreTimeoutError,
)
from gnomon.adapters.fakes.mem0_platform import FakeMem0Platform
from gnomon.adapters.guard import fetch_size
from gnomon.adapters.mem0 import (
    AsyncGuardedMemory,
    AsyncGuardedMemoryClient,
    GuardedMemoryClient,
)
from gnomon.adapters.testing import HashEmbedder, offline_config
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import BindingState, content_hash
from gnomon.firewall.model.origin import Integrity
from gnomon.firewall.model.states import RetrievalStatus, TruthStatus
from tests.adapter_contract import FACT, POISON, AdapterContract, Harness
from tests.attested import attested

BASE_URL = "http://mem0.test"
_MEM0_DIR = os.environ["MEM0_DIR"]


@contextmanager
def mem0_routes(server: FakeMem0Platform | None = None) -> Iterator[respx.MockRouter]:
    """Every route of ``server`` under :data:`BASE_URL`; unknown requests fail the test."""
    server = server or FakeMem0Platform()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as mock:
        for route in server.router:
            pattern = re.sub(r"\(\?P<\w+>", "(?:", route.pattern.pattern.strip("^$"))
            mock.route(
                name=route.name,
                method=route.method,
                url__regex=re.escape(BASE_URL) + pattern + r"(\?.*)?$",
            ).mock(side_effect=server.handle)
        mock.server = server  # type: ignore[attr-defined]
        yield mock


def sync_client() -> Any:
    from mem0 import MemoryClient

    return MemoryClient(api_key="m0-test", host=BASE_URL)


def async_client(monkeypatch: pytest.MonkeyPatch) -> Any:
    from mem0 import AsyncMemoryClient

    # AsyncMemoryClient pings with `requests`, which respx does not intercept
    def validated(self: Any) -> None:
        self.org_id, self.project_id = "org-fake", "proj-fake"

    monkeypatch.setattr(AsyncMemoryClient, "_validate_api_key", validated)
    return AsyncMemoryClient(api_key="m0-test", host=BASE_URL)


def sent(mock: respx.MockRouter, route: str, index: int = -1) -> Any:
    return json.loads(mock.routes[route].calls[index].request.content)


def binding_of(wall: Firewall, store_id: str) -> Any:
    return wall.store.bindings_by_store_id("mem0", [store_id])[store_id]


# -- the contract ------------------------------------------------------------------------------


class TestMem0PlatformAdapter(AdapterContract):
    @pytest.fixture(autouse=True)
    def _routes(self) -> Iterator[None]:
        with mem0_routes() as mock:
            self.mock = mock
            yield

    def make_harness(self, wall: Firewall) -> Harness:
        raw = sync_client()
        client = GuardedMemoryClient(
            raw, wall, project="shop", actor="coder", user="alice", policy="default"
        )
        server: FakeMem0Platform = self.mock.server  # type: ignore[attr-defined]
        return Harness(
            client.gnomon,
            {"user_id": "alice"},
            raw_write=lambda text: server.put(text, user_id="alice"),
            raw_edit=lambda i, t: raw.update(i, text=t) and None,
            raw_delete=lambda i: raw.delete(i) and None,
            break_writes=lambda: server.fail("add", 503),
        )


class TestAsyncMem0Adapter(AdapterContract):
    """``AsyncGuardedMemory`` over the real ``AsyncMemory``, offline; ``.gnomon`` runs the
    client's coroutines on its private loop."""

    def make_harness(self, wall: Firewall) -> Harness:
        from mem0 import AsyncMemory

        tmp = tempfile.mkdtemp(dir=_MEM0_DIR)
        raw = AsyncMemory.from_config(offline_config(tmp))
        raw.embedding_model = HashEmbedder()
        memory = AsyncGuardedMemory(
            raw, wall, project="shop", actor="coder", user="alice", policy="default"
        )
        run = memory.gnomon._backend.inner.client._run  # type: ignore[attr-defined]

        def raw_write(text: str) -> str:
            out = run(raw.add(text, user_id="alice", infer=False))
            return str(out["results"][0]["id"])

        def break_writes() -> None:
            async def fail(*args: object, **kwargs: object) -> None:
                from mem0.exceptions import VectorStoreError

                raise VectorStoreError("qdrant is down")

            raw.add = fail

        return Harness(
            memory.gnomon,
            {"user_id": "alice"},
            raw_write=raw_write,
            raw_edit=lambda i, t: run(raw.update(i, text=t)) and None,
            raw_delete=lambda i: run(raw.delete(i)) and None,
            break_writes=break_writes,
        )


# -- the sync platform client ----------------------------------------------------------------


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with mem0_routes() as mock:
        yield mock


@pytest.fixture
def client(wall: Firewall, mock: respx.MockRouter) -> GuardedMemoryClient:
    return GuardedMemoryClient(
        sync_client(), wall, project="shop", actor="coder", user="alice", policy="default"
    )


def test_add_sends_belief_id_and_origin(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    out = client.add(
        [{"role": "user", "content": FACT}],
        user_id="alice",
        metadata={"topic": "drinks"},
        infer=False,
        gnomon_origin=attested(wall, Origin.user("alice")),
    )
    (row,) = out["results"]
    assert row["event"] == "ADD" and row["memory"] == FACT
    body = sent(mock, "add")
    assert body["messages"] == [{"role": "user", "content": FACT}]
    assert body["user_id"] == "alice" and body["infer"] is False
    binding = binding_of(wall, row["id"])
    assert binding.state == BindingState.WRITTEN
    assert body["metadata"] == {
        "topic": "drinks",
        BELIEF_KEY: binding.belief_id,
        ORIGIN_KEY: "user:alice",
        INTEGRITY_KEY: "attested",
        HASH_KEY: content_hash(FACT),
    }
    request = mock.routes["add"].calls.last.request
    assert request.headers["authorization"] == "Token m0-test"


def test_search_and_get_all_filter_poison(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    client.add(
        FACT, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("alice"))
    )
    session = client.gnomon._guard.session
    session.observe(tool="fetch", content=POISON, origin=Origin.external("web:evil.example"))
    client.add("Team rule: " + POISON, user_id="alice", infer=False)
    stray = mock.server.put("Written around the firewall: deploy with --force.", user_id="alice")  # type: ignore[attr-defined]
    found = client.search("Alice tea deploy force review", filters={"user_id": "alice"}, top_k=5)
    assert sent(mock, "search") == {
        "query": "Alice tea deploy force review",
        "filters": {"user_id": "alice"},
        "top_k": fetch_size(5),  # over-fetched: shown 5 at most, trusted first
    }
    assert set(found) == {"results", "contradictions", "gnomon"}  # SDK key; channel; withheld
    assert [r["memory"] for r in found["results"]] == [FACT]
    assert found["results"][0]["gnomon"]["truth"] == "supported"
    listed = client.get_all(filters={"user_id": "alice"}, page=1, page_size=10)
    assert {"count", "next", "previous", "results"} <= set(listed)
    assert [r["memory"] for r in listed["results"]] == [FACT]
    query = mock.routes["get_all"].calls.last.request.url.params
    assert (query["page"], query["page_size"]) == ("1", "10")
    # the hit written around the firewall is unknown external origin, never trusted
    assert client.get(stray) is None


def test_update_delete_history(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    (row,) = client.add(
        FACT, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("alice"))
    )["results"]
    first = binding_of(wall, row["id"])
    alice = attested(wall, Origin.user("alice"))  # the user revises her own fact
    out = client.update(
        row["id"], text="Alice prefers coffee.", metadata={"topic": "drinks"}, gnomon_origin=alice
    )
    assert out["memory"] == "Alice prefers coffee."
    body = sent(mock, "update")
    assert body["text"] == "Alice prefers coffee." and body["metadata"]["topic"] == "drinks"
    second = binding_of(wall, row["id"])
    assert body["metadata"][BELIEF_KEY] == second.belief_id != first.belief_id
    with pytest.raises(BypassRefusedError, match="audit path"):
        client.history(row["id"])
    rows = client.history(row["id"], grant=wall.grant("auditor", "ops"))
    assert [r["event"] for r in rows] == ["ADD", "UPDATE"]
    assert client.delete(row["id"], gnomon_origin=alice) == {
        "message": "Memory deleted successfully!"
    }
    assert binding_of(wall, row["id"]).state == BindingState.DELETED
    assert wall.require_belief(second.belief_id).retrieval_status == RetrievalStatus.HIDDEN


@pytest.mark.parametrize("status", [401, 404, 429, 500, 503])
def test_http_errors_are_typed_and_nothing_half_recorded(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient, status: int
) -> None:
    mock.server.fail("add", status)  # type: ignore[attr-defined]
    with pytest.raises(StoreCallError, match=r"mem0\.add") as err:
        client.add(
            FACT, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("alice"))
        )
    assert err.value.status == status and err.value.store == "mem0" and err.value.call == "add"
    (binding,) = wall.store.list_bindings("mem0")
    assert binding.state == BindingState.FAILED and binding.store_id is None
    assert wall.require_belief(binding.belief_id).retrieval_status == RetrievalStatus.HIDDEN
    mock.server.fail("search", status)  # type: ignore[attr-defined]
    with pytest.raises(StoreCallError, match=r"mem0\.search") as err:
        client.search("tea", filters={"user_id": "alice"})
    assert err.value.status == status


def test_failed_delete_is_recorded_not_silent(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    (row,) = client.add(FACT, user_id="alice", infer=False)["results"]
    mock.server.fail("delete", 500)  # type: ignore[attr-defined]
    with pytest.raises(StoreCallError, match=r"mem0\.delete"):
        client.delete(row["id"])
    binding = binding_of(wall, row["id"])  # the store may still hold it: no silent mismatch
    assert binding.state == BindingState.FAILED and "delete failed" in (binding.detail or "")
    assert mock.server.memories  # type: ignore[attr-defined]


def test_timeouts_and_malformed_responses(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    mock.server.fail("search", "timeout")  # type: ignore[attr-defined]
    with pytest.raises(StoreTimeoutError, match=r"mem0\.search"):
        client.search("tea", filters={"user_id": "alice"})
    mock.server.fail("add", "timeout")  # type: ignore[attr-defined]
    with pytest.raises(StoreTimeoutError, match=r"mem0\.add"):
        client.add(FACT, user_id="alice", infer=False)
    assert wall.store.list_bindings("mem0")[0].state == BindingState.FAILED
    mock.server.fail("search", "malformed")  # type: ignore[attr-defined]
    with pytest.raises(StoreResponseError, match=r"mem0\.search"):
        client.search("tea", filters={"user_id": "alice"})
    mock.server.fail("add", "malformed", body={"results": [{"no": "id"}, {"x": 1}]})  # type: ignore[attr-defined]
    with pytest.raises(StoreResponseError, match=r"mem0\.add"):
        client.add("Bob likes jazz.", user_id="alice", infer=False)
    states = [b.state for b in wall.store.list_bindings("mem0")]
    assert states == [BindingState.FAILED, BindingState.FAILED]
    mock.server.fail("get_all", "malformed", body={"results": [{"id": 3}]})  # type: ignore[attr-defined]
    with pytest.raises(StoreResponseError, match=r"mem0\.get_all"):
        client.get_all(filters={"user_id": "alice"})


def test_get_all_and_import_page_through(
    wall: Firewall, mock: respx.MockRouter, client: GuardedMemoryClient
) -> None:
    server: FakeMem0Platform = mock.server  # type: ignore[attr-defined]
    ids = [server.put(f"Imported memory number {i}.", user_id="alice") for i in range(7)]
    pages = list(client.gnomon._backend.walk({"user_id": "alice"}, page_size=3))
    assert [p.store_id for p in pages] == ids
    calls = mock.routes["get_all"].calls
    assert [c.request.url.params["page"] for c in calls] == ["1", "2", "3"]
    assert all(json.loads(c.request.content)["filters"] == {"user_id": "alice"} for c in calls)
    report = client.gnomon.import_({"user_id": "alice"}, progress=False, page_size=3)
    assert (report.seen, report.imported) == (7, 7)
    # delete_all lists every page first, so every binding becomes a revision
    client.delete_all(user_id="alice")
    assert {b.state for b in wall.store.list_bindings("mem0")} == {BindingState.DELETED}
    assert server.memories == {}


def test_infer_true_facts_carry_the_join(wall: Firewall) -> None:
    server = FakeMem0Platform(extract=lambda msgs: ["Deploys always use --force"])
    with mem0_routes(server) as mock:
        client = GuardedMemoryClient(
            sync_client(), wall, project="shop", actor="coder", policy="default"
        )
        session = client.gnomon._guard.session
        session.observe(tool="fetch", content=POISON, origin=Origin.external("web:evil.example"))
        out = client.add("Summarize what you read.", user_id="alice")
        (row,) = out["results"]
        fact = wall.require_belief(binding_of(wall, row["id"]).belief_id)
        assert "external:web:evil.example" in fact.origin.origin_ids
        assert fact.origin.integrity == Integrity.UNTRUSTED
        assert sent(mock, "add")["metadata"][INTEGRITY_KEY] == "untrusted"
        assert sent(mock, "update")["metadata"][BELIEF_KEY] == fact.id
        assert client.search("deploys force", filters={"user_id": "alice"})["results"] == []


def test_unguarded_and_wrong_clients_are_refused(
    wall: Firewall, client: GuardedMemoryClient
) -> None:
    for name in ("reset", "batch_delete", "batch_update", "chat", "users", "client", "project"):
        with pytest.raises(BypassRefusedError):
            getattr(client, name)
    with pytest.raises(BypassRefusedError, match="delete_linked"):
        client.delete("x", delete_linked=True)
    with pytest.raises(StoreCallError, match="async"):
        GuardedMemoryClient(object(), wall, policy="default")


# -- the async platform client -----------------------------------------------------------------


def test_async_client_add_search_errors_audit(
    wall: Firewall, mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = async_client(monkeypatch)
    with pytest.raises(StoreCallError, match="sync"):
        GuardedMemoryClient(raw, wall, policy="default")
    client = AsyncGuardedMemoryClient(
        raw, wall, project="shop", actor="coder", user="alice", policy="default"
    )
    server: FakeMem0Platform = mock.server  # type: ignore[attr-defined]

    async def scenario() -> None:
        out = await client.add(
            FACT, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("alice"))
        )
        (row,) = out["results"]
        binding = binding_of(wall, row["id"])
        assert sent(mock, "add")["metadata"][BELIEF_KEY] == binding.belief_id
        client.gnomon._guard.session.observe(
            tool="fetch", content=POISON, origin=Origin.external("web")
        )
        await client.add("Team rule: " + POISON, user_id="alice", infer=False)
        found = await client.search("Alice tea deploy review", filters={"user_id": "alice"})
        assert [r["memory"] for r in found["results"]] == [FACT]
        listed = await client.get_all(filters={"user_id": "alice"}, page=1, page_size=1)
        assert listed["count"] == 2 and listed["next"]
        assert [r["memory"] for r in listed["results"]] == [FACT]
        rows = await client.history(row["id"], grant=wall.grant("auditor", "ops"))
        assert [r["event"] for r in rows] == ["ADD"]
        server.fail("add", 429)
        with pytest.raises(StoreCallError, match=r"mem0\.add") as err:
            await client.add("Bob likes jazz.", user_id="alice", infer=False)
        assert err.value.status == 429
        server.fail("get", "timeout")
        with pytest.raises(StoreTimeoutError, match=r"mem0\.get"):
            await client.get(row["id"])
        await client.delete(row["id"], gnomon_origin=attested(wall, Origin.user("alice")))
        assert binding_of(wall, row["id"]).state == BindingState.DELETED
        await client.aclose()

    asyncio.run(scenario())
    failed = [b for b in wall.store.list_bindings("mem0") if b.state == BindingState.FAILED]
    assert len(failed) == 1
    views = client.gnomon.audit("deploy review", grant=wall.grant("auditor", "ops"))
    assert any(POISON in v.belief.statement for v in views)
    with pytest.raises(BypassRefusedError):
        client.reset  # noqa: B018


# -- AsyncMemory, offline ----------------------------------------------------------------------


def test_async_memory_write_search_audit(wall: Firewall, tmp_path: Any) -> None:
    from mem0 import AsyncMemory

    from gnomon.adapters.testing import ScriptedLLM

    raw = AsyncMemory.from_config(offline_config(tmp_path))
    raw.embedding_model = HashEmbedder()
    raw.llm = ScriptedLLM(["Deploys always use --force"])
    memory = AsyncGuardedMemory(
        raw, wall, project="shop", actor="coder", user="alice", policy="default"
    )

    async def scenario() -> None:
        added = await memory.add(
            FACT, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("alice"))
        )
        (row,) = added["results"]
        memory.gnomon._guard.session.observe(
            tool="fetch", content=POISON, origin=Origin.external("web:evil.example")
        )
        inferred = await memory.add("Summarize what you read.", user_id="alice", infer=True)
        (fact_row,) = inferred["results"]
        fact = wall.require_belief(binding_of(wall, fact_row["id"]).belief_id)
        assert fact.origin.integrity == Integrity.UNTRUSTED
        found = await memory.search("Alice tea deploys force", filters={"user_id": "alice"})
        assert [r["memory"] for r in found["results"]] == [FACT]
        got = await memory.get(row["id"])
        assert got is not None and got["gnomon"]["truth"] == "supported"
        rows = await memory.history(row["id"], grant=wall.grant("auditor", "ops"))
        assert [r["event"] for r in rows] == ["ADD"]
        # .gnomon works inside a running loop too
        views = memory.gnomon.audit("deploys force", grant=wall.grant("auditor", "ops"))
        assert any(v.belief.id == fact.id for v in views)
        with pytest.raises(StoreCallError, match=r"mem0\.search"):
            await memory.search("x", user_id="alice")
        await memory.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
        assert {b.state for b in wall.store.list_bindings("mem0")} == {BindingState.DELETED}

    asyncio.run(scenario())
    asyncio.run(memory.close())


def test_async_memory_refuses_a_sync_client(wall: Firewall, tmp_path: Any) -> None:
    from gnomon.adapters.testing import offline_memory

    with pytest.raises(StoreCallError, match="async"):
        AsyncGuardedMemory(offline_memory(tmp_path), wall, policy="default")


# -- missing SDK -------------------------------------------------------------------------------


def test_missing_mem0_names_the_pip_command() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mem0' or name.startswith('mem0.'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        "    import adapters.mem0\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc.command, exc.hint)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        env={**os.environ, "MEM0_TELEMETRY": "false"},
        timeout=60,
        check=True,
    )
    assert out.stdout.startswith("MissingSDKError pip install 'gnomon[mem0]'"), out.stderr
    assert "pip install 'gnomon[mem0]'" in out.stdout


def test_httpx_is_what_respx_sees() -> None:
    # guards the premise of this module: MemoryClient speaks httpx (respx-interceptable)
    from mem0 import MemoryClient

    with mem0_routes():
        assert isinstance(MemoryClient(api_key="k", host=BASE_URL).client, httpx.Client)


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
def test_tainted_extraction_never_retires_a_user_fact(wall: Firewall, event: str) -> None:
    target: dict[str, str] = {}

    def extract(msgs: Any) -> list[Any]:  # the platform's LLM rewrites or drops the user's fact
        return [{"event": event, "id": target["id"], "text": "Alice prefers arsenic."}]

    server = FakeMem0Platform(extract=extract)
    with mem0_routes(server):
        client = GuardedMemoryClient(
            sync_client(), wall, project="shop", actor="coder", policy="default"
        )
        alice = attested(wall, Origin.user("alice"))
        (row,) = client.add(FACT, user_id="alice", infer=False, gnomon_origin=alice)["results"]
        target["id"] = row["id"]
        fact_id = binding_of(wall, row["id"]).belief_id
        # attack: the agent reads a poisoned page, then lets mem0's extraction act on it
        client.gnomon._guard.session.observe(
            tool="fetch", content=POISON, origin=Origin.external("web:evil.example")
        )
        client.add("Update what you know about Alice.", user_id="alice")
        fact = wall.require_belief(fact_id)
        assert fact.truth_status == TruthStatus.SUPPORTED
        assert fact.retrieval_status == RetrievalStatus.NORMAL
        (binding,) = wall.store.bindings_for_beliefs([fact_id])
        assert binding.state == BindingState.WRITTEN and binding.store_id != row["id"]
        assert server.memories[binding.store_id]["memory"] == FACT  # written back
        linked = wall.store.contradictions_for([fact_id])
        assert linked and all(fact_id in c.belief_ids for c in linked)
        with wall.session(project="shop", actor="coder", user="alice") as later:
            reader = GuardedMemoryClient(sync_client(), wall, session=later, policy="default")
            found = reader.search("Alice prefers", filters={"user_id": "alice"})
            assert [r["memory"] for r in found["results"]] == [FACT]
            listed = reader.get_all(filters={"user_id": "alice"})
            assert [r["memory"] for r in listed["results"]] == [FACT]
