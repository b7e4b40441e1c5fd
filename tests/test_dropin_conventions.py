"""The drop-in behaves like Python code a newcomer already knows, and says what it withheld.

* refused attributes are ``AttributeError``s (``hasattr``, ``getattr(x, n, d)``, ``copy``);
* ``MissingSDKError`` is an ``ImportError``; ``GuardedMemory.from_config`` exists; ``py.typed``;
* wrapper signatures are the SDK's (checked against ``inspect.signature`` of the installed SDK);
* async wrappers are async all the way (``close`` too) and run firewall steps off the loop;
* a read that withholds hits says so: counts and reasons beside the results, INFO lines on the
  ``gnomon`` logger, and one warning the first time a read is empty only because of the policy.

Skipped only when mem0 is not installed, and never under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters.errors import (
    BypassRefusedError,
    MissingSDKError,
    RefusedAttributeError,
)
from gnomon.adapters.mem0 import AsyncGuardedMemory, GuardedMemory
from gnomon.adapters.testing import HashEmbedder, offline_config, offline_memory
from gnomon.firewall.host.firewall import Firewall

_MEM0_DIR = os.environ["MEM0_DIR"]


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


def _guarded_objects(wall: Firewall) -> list[Any]:
    from letta_client import Letta
    from zep_cloud.client import Zep

    from gnomon.adapters.letta import GuardedLetta
    from gnomon.adapters.zep import GuardedZep

    memory = GuardedMemory(
        offline_memory(tempfile.mkdtemp(dir=_MEM0_DIR)), wall, project="shop", policy="default"
    )
    letta = GuardedLetta(
        Letta(base_url="http://letta.test", max_retries=0), wall, project="p", policy="default"
    )
    zep = GuardedZep(
        Zep(api_key="k", base_url="http://zep.test/api/v4"), wall, project="p", policy="default"
    )
    return [memory, letta, letta.agents, letta.blocks, zep, zep.thread, zep.graph]


def test_refused_attributes_behave_as_attribute_errors(wall: Firewall) -> None:
    """A bypass attempt by name is still refused (typed, named), and Python's own attribute
    protocols work on every guarded object."""
    for obj in _guarded_objects(wall):
        assert not hasattr(obj, "reset"), type(obj)
        assert getattr(obj, "reset", "absent") == "absent"
        with pytest.raises(RefusedAttributeError) as caught:
            obj.reset  # noqa: B018
        assert isinstance(caught.value, BypassRefusedError)
        assert isinstance(caught.value, AttributeError) and caught.value.name == "reset"
        assert "not a guarded method" in str(caught.value)
        twin = copy.copy(obj)
        assert type(twin) is type(obj) and not hasattr(twin, "reset")


def test_missing_sdk_error_is_an_import_error() -> None:
    error = MissingSDKError("letta", "letta", "letta-client")
    assert isinstance(error, ImportError) and error.name == "letta-client"
    with pytest.raises(ImportError, match=r"pip install 'gnomon\[letta\]'"):
        raise error


def test_from_config_builds_the_sdk_client_and_guards_it(wall: Firewall, tmp_path: Path) -> None:
    memory = GuardedMemory.from_config(
        offline_config(tmp_path), wall, project="shop", policy="default"
    )
    memory._client.embedding_model = HashEmbedder()
    added = memory.add("Deploys go through ArgoCD.", user_id="alice", infer=False)
    assert added["results"][0]["memory"] == "Deploys go through ArgoCD."
    assert isinstance(AsyncGuardedMemory.from_config(offline_config(tmp_path), wall, project="s"),
                      AsyncGuardedMemory)  # fmt: skip


def test_adapters_ship_py_typed() -> None:
    from gnomon import adapters

    assert (Path(adapters.__file__).parent / "py.typed").is_file()


_EXTRAS = {"gnomon_origin", "grant"}


def _assert_signature_covers(wrapper: Any, sdk: Any) -> None:
    """Every SDK parameter is on the wrapper with the same kind and default; the wrapper adds
    only the firewall's keyword-only extras, and says what it returns."""
    ours = inspect.signature(wrapper).parameters
    for name, param in inspect.signature(sdk).parameters.items():
        if name == "self":
            continue
        assert name in ours, f"{wrapper.__qualname__} lacks {name}"
        mine = ours[name]
        assert mine.kind == param.kind, (wrapper.__qualname__, name)
        if param.default is not inspect.Parameter.empty and name != "expiration_date":
            assert mine.default == param.default, (wrapper.__qualname__, name)
    added = set(ours) - set(inspect.signature(sdk).parameters) - {"self"}
    assert added <= _EXTRAS, (wrapper.__qualname__, added)
    for name in added:
        assert ours[name].kind == inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(wrapper).return_annotation is not inspect.Signature.empty


def test_mem0_wrapper_signatures_are_the_installed_sdks() -> None:
    from mem0 import AsyncMemory, Memory

    methods = ("add", "search", "get", "get_all", "update", "delete", "delete_all", "history")
    for wrapper, sdk in ((GuardedMemory, Memory), (AsyncGuardedMemory, AsyncMemory)):
        for name in methods:
            _assert_signature_covers(getattr(wrapper, name), getattr(sdk, name))
            assert inspect.iscoroutinefunction(getattr(wrapper, name)) == (
                wrapper is AsyncGuardedMemory
            )


def test_async_memory_is_async_all_the_way_and_off_the_loop(wall: Firewall) -> None:
    """``close`` is a coroutine, and no firewall store write happens on the event loop's thread
    (a slow or locked store would otherwise stall every coroutine of the host)."""
    from mem0 import AsyncMemory

    assert inspect.iscoroutinefunction(AsyncGuardedMemory.close)
    raw = AsyncMemory.from_config(offline_config(tempfile.mkdtemp(dir=_MEM0_DIR)))
    raw.embedding_model = HashEmbedder()
    memory = AsyncGuardedMemory(raw, wall, project="shop")
    threads: list[str] = []
    commit = wall.commit

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return commit(*args, **kwargs)

    wall.commit = recording  # type: ignore[method-assign]

    async def scenario() -> str:
        loop_thread = threading.current_thread().name
        await memory.add("Deploys go through ArgoCD.", user_id="alice", infer=False)
        await memory.search("deploys", filters={"user_id": "alice"})
        await memory.close()
        return loop_thread

    loop_thread = asyncio.run(scenario())
    assert threads and loop_thread not in threads


def test_a_read_says_what_it_withheld(wall: Firewall, caplog: pytest.LogCaptureFixture) -> None:
    """Memories written before Gnomon (around it) are withheld by the default policy: the read
    says how many and why, without their text, and warns once with the command to run."""
    raw = offline_memory(tempfile.mkdtemp(dir=_MEM0_DIR))
    secret_text = "Payments need two reviewers."
    raw.add(secret_text, user_id="alice", infer=False)
    raw.add("Deploys go through ArgoCD.", user_id="alice", infer=False)
    memory = GuardedMemory(raw, wall, project="shop", policy="default")
    with caplog.at_level(logging.INFO, logger="gnomon"):
        found = memory.search("payments deploys", filters={"user_id": "alice"})
        again = memory.get_all(filters={"user_id": "alice"})
    assert found["results"] == [] and again["results"] == []
    assert found["gnomon"]["returned"] == 0 and found["gnomon"]["withheld"] == 2
    assert found["gnomon"]["reasons"]["truth"] == 2 and found["gnomon"]["policy"] == "default"
    assert secret_text not in repr(found["gnomon"])
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "gnomon"]
    assert len(warnings) == 1  # once per client, not once per read
    assert "gnomon recall" in warnings[0].getMessage()
    assert "--adopt-as user" in warnings[0].getMessage()
    infos = [r for r in caplog.records if r.levelno == logging.INFO and r.name == "gnomon"]
    assert any("mem0.search: 0 returned" in r.getMessage() for r in infos)
    assert all(secret_text not in r.getMessage() for r in caplog.records if r.name == "gnomon")


def test_letta_and_zep_reads_carry_the_report(wall: Firewall) -> None:
    from gnomon.adapters.letta import GuardedLetta
    from gnomon.adapters.zep import GuardedZep
    from tests.fakes_letta import letta_routes
    from tests.fakes_letta import sync_client as letta_client
    from tests.fakes_zep import sync_client as zep_client
    from tests.fakes_zep import zep_routes

    with letta_routes() as mock:
        agent = mock.server.add_agent(blocks={"human": "Name: Ada", "persona": "I help."})
        client = GuardedLetta(letta_client(), wall, project="shop", policy="default")
        page = client.agents.blocks.list(agent)
        assert list(page.items) == [] and page.gnomon["withheld"] == 2
    with zep_routes() as mock:
        raw = zep_client()
        user = raw.user.create(user_id="alice")
        raw.graph.episode.add(user.graph_uuid, data="Alice prefers tea.")
        zep = GuardedZep(zep_client(), wall, project="shop", policy="default")
        pager = zep.graph.episode.list(user.graph_uuid)
        assert list(pager.items) == [] and pager.gnomon["withheld"] == 1


def test_cli_import_turns_mem0_telemetry_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import mem0.memory.main as mem0_main

    from gnomon.firewall.cli.stores import mem0_telemetry_off

    monkeypatch.setenv("MEM0_TELEMETRY", "true")
    monkeypatch.setattr(mem0_main, "MEM0_TELEMETRY", True)
    mem0_telemetry_off()
    assert os.environ["MEM0_TELEMETRY"] == "false" and mem0_main.MEM0_TELEMETRY is False


def _guarded_methods(obj: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, wrapper method, SDK method) of every guarded method of a client, recursively."""
    from gnomon.adapters.core import Resource

    for name in sorted(n for n in dir(obj) if not n.startswith("_")):
        if name in ("close", "gnomon"):
            continue
        value = getattr(obj, name)
        if isinstance(value, Resource):
            yield from _guarded_methods(value, f"{path}{name}.")
        elif callable(value):
            sdk = type(obj)._SDK[type(obj)._ASYNC]
            yield f"{path}{name}", getattr(type(obj), name), getattr(sdk, name)


def _sdk_clients(wall: Firewall) -> list[Any]:
    from letta_client import AsyncLetta, Letta
    from zep_cloud.client import AsyncZep, Zep
    from zep_python.client import Zep as LegacyZep

    from gnomon.adapters.letta import GuardedAsyncLetta, GuardedLetta
    from gnomon.adapters.zep import GuardedAsyncZep, GuardedZep
    from gnomon.adapters.zep_legacy import GuardedLegacyZep

    zep = {"api_key": "k", "base_url": "http://zep.test/api/v4"}
    return [
        GuardedLetta(Letta(base_url="http://letta.test"), wall, project="p", policy="default"),
        GuardedAsyncLetta(
            AsyncLetta(base_url="http://letta.test"), wall, project="p", policy="default"
        ),
        GuardedZep(Zep(**zep), wall, project="p", policy="default"),
        GuardedAsyncZep(
            AsyncZep(**zep), wall, project="p", sync_client=Zep(**zep), policy="default"
        ),
        GuardedLegacyZep(
            LegacyZep(base_url="http://zep.test", api_key="k"), wall, project="p", policy="default"
        ),
    ]


def test_letta_and_zep_wrapper_signatures_are_the_installed_sdks(wall: Firewall) -> None:
    """Every guarded Letta and Zep method takes the installed SDK method's parameters (same
    kinds, same defaults), adds only ``gnomon_origin=``, says what it returns, and is a
    coroutine function exactly where the SDK's is."""
    checked = 0
    for client in _sdk_clients(wall):
        for path, wrapper, sdk in _guarded_methods(client):
            _assert_signature_covers(wrapper, sdk)
            assert "kw" not in inspect.signature(wrapper).parameters, path
            assert inspect.iscoroutinefunction(wrapper) == inspect.iscoroutinefunction(sdk), path
            checked += 1
        assert inspect.iscoroutinefunction(type(client).close) == type(client)._ASYNC
    assert checked >= 60


def test_wrong_arguments_fail_like_the_sdk_before_anything_is_recorded(wall: Firewall) -> None:
    letta = _sdk_clients(wall)[0]
    events = len(list(wall.store.events()))
    with pytest.raises(TypeError):
        letta.blocks.create(label="l", vaule="typo")
    assert len(list(wall.store.events())) == events
