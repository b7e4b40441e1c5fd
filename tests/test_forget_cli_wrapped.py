"""``gnomon forget ... mem0``: the CLI erases the wrapped store's copies too, through the real
offline mem0 ``Memory`` (a config file on disk, the hash embedder), and reads each back.

Promise: after ``gnomon forget --origin user:alice --key K mem0 --mem0-config F --user-id alice``
mem0 returns none of her memories (Bob's stays), the certificate records what the store deleted
and what a read-back found, and it verifies against the pinned key. Attack: a store whose delete
answers success and deletes nothing is reported, the command exits 1, and its certificate never
verifies. FLIP: without the read-back the lying store is certified as erased while it still
serves Alice's text. Bad input: a store option that cannot connect erases nothing anywhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters import mem0_backend
from gnomon.adapters.mem0 import GuardedMemory
from gnomon.adapters.testing import HashEmbedder, offline_config
from gnomon.firewall import Origin
from gnomon.firewall.cli import cli
from gnomon.firewall.cli.stores import CLIENT_HOOK
from tests.attested import attested

ALICE = ["Alice drinks tea every morning", "Alice lives in Springfield"]
BOB = "Bob drinks coffee at noon"
#: The mem0 config of the running test, for the lying client hook.
CONFIG: dict[str, Any] = {}


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def raw_memory(config: dict[str, Any]) -> Any:
    from mem0 import Memory

    memory = Memory.from_config(config)
    memory.embedding_model = HashEmbedder()
    return memory


def release(memory: Any) -> None:
    memory.vector_store.client.close()


def lying_client(store: str, options: dict[str, Any]) -> Any:
    """The testing hook: a real Memory whose delete answers success and deletes nothing."""
    memory = raw_memory(CONFIG)
    memory.delete = lambda memory_id: {"message": "Memory deleted successfully!"}
    return memory


def texts(config: dict[str, Any]) -> list[str]:
    memory = raw_memory(config)
    try:
        rows = memory.get_all(filters={"user_id": "alice"}, top_k=100)["results"]
        return sorted(r["memory"] for r in rows)
    finally:
        release(memory)


@pytest.fixture
def setup(tmp_path: Path, gnomon_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS", CLIENT_HOOK):
        monkeypatch.delenv(name, raising=False)
    config = offline_config(tmp_path)
    config["vector_store"]["config"]["path"] = str(tmp_path / "qdrant")
    config_file = tmp_path / "mem0.json"
    config_file.write_text(json.dumps(config))
    CONFIG.clear()
    CONFIG.update(config)
    url = f"sqlite:///{tmp_path / 'gnomon.db'}"
    memory = raw_memory(config)
    with firewall.open(url) as wall:
        guarded = GuardedMemory(memory, wall, project="shop", actor="coder", user="alice")
        for text in ALICE:
            guarded.add(
                text,
                user_id="alice",
                infer=False,
                gnomon_origin=attested(wall, Origin.user("alice")),
            )
        guarded.add(
            BOB, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("bob"))
        )
        guarded.gnomon.close()
    release(memory)
    assert run("keys", "generate").exit_code == 0
    return {
        "url": url,
        "config": config,
        "key": str(gnomon_home / "keys" / "operator.key"),
        "mem0": (
            "mem0",
            "--mem0-config",
            str(config_file),
            "--mem0-embedder",
            "hash",
            "--user-id",
            "alice",
        ),
    }


def forget(setup: dict[str, Any], *store: str) -> Result:
    return run(
        "forget",
        "--origin",
        "user:alice",
        "--key",
        setup["key"],
        "--url",
        setup["url"],
        "--certificate",
        "cert.json",
        "--json",
        *store,
    )


def verify(setup: dict[str, Any]) -> Result:
    return run("log", "verify", "--url", setup["url"], "--certificate", "cert.json")


def stored(url: str) -> bytes:
    """Everything Gnomon's SQLite store holds on disk (the database, and its WAL if any)."""
    path = Path(url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def test_forget_erases_the_wrapped_mem0_store_and_certifies_it(setup: dict[str, Any]) -> None:
    assert len(texts(setup["config"])) == 3
    result = forget(setup, *setup["mem0"])
    assert result.exit_code == 0, result.output + result.stderr
    out = json.loads(result.stdout)
    (wrapped,) = out["wrapped"]
    assert wrapped["store"] == "mem0" and len(wrapped["deleted"]) == 2
    assert wrapped["remaining"] == []
    assert texts(setup["config"]) == [BOB]  # the real store no longer returns her text
    cert = json.loads(Path("cert.json").read_text())
    assert cert["wrapped"] == [wrapped]
    checked = verify(setup)
    assert checked.exit_code == 0, checked.output + checked.stderr
    assert b"Springfield" not in stored(setup["url"])


def test_a_store_that_lies_about_its_delete_is_reported_and_not_certified(
    setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLIENT_HOOK, f"{__name__}:lying_client")
    result = forget(setup, *setup["mem0"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.stderr
    assert "mem0 still returns 2 item(s)" in result.stderr
    assert "not certified" in result.stderr
    assert json.loads(result.stdout)["wrapped"][0]["deleted"] == []
    assert len(texts(setup["config"])) == 3  # the lie: nothing was deleted
    refused = verify(setup)
    assert refused.exit_code == 1 and "wrapped store(s) still returned" in refused.stderr


def test_flip_without_the_read_back_the_lying_store_is_certified(
    setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read-back is load-bearing: blind it and the lie is certified."""
    monkeypatch.setenv(CLIENT_HOOK, f"{__name__}:lying_client")
    monkeypatch.setattr(mem0_backend.Mem0Backend, "get", lambda self, store_id: None)
    result = forget(setup, *setup["mem0"])
    assert result.exit_code == 0
    assert verify(setup).exit_code == 0
    assert any(t.startswith("Alice") for t in texts(setup["config"]))  # still served


def test_a_store_option_that_cannot_connect_erases_nothing(setup: dict[str, Any]) -> None:
    result = forget(setup, "mem0", "--mem0-config", setup["mem0"][2], "--mem0-embedder", "hash")
    assert result.exit_code == 1 and "needs a scope" in result.stderr
    assert "Traceback" not in result.stderr
    assert not Path("cert.json").exists()
    assert b"Springfield" in stored(setup["url"])  # nothing was erased in Gnomon either
    assert len(texts(setup["config"])) == 3


def test_requests_take_no_store(setup: dict[str, Any]) -> None:
    result = run("forget", "--requests", "--url", setup["url"], *setup["mem0"])
    assert result.exit_code == 1 and "erases nothing" in result.stderr


# -- Letta and Zep: the real SDK clients against the fake servers (the import commands' hook) --


def _seed(url: str, store: str) -> tuple[Any, tuple[str, ...]]:
    """Alice's two memories and Bob's one, written through the guarded client of ``store``."""
    from tests.test_cli_stores import SERVERS, client_for

    server: Any
    if store == "letta":
        from gnomon.adapters.fakes.letta import FakeLettaServer
        from gnomon.adapters.letta import GuardedLetta as Guarded

        server = SERVERS["letta"] = FakeLettaServer()
        agent = server.add_agent(blocks={})
        scope, options = {"agent_id": agent}, ("letta", "--agent-id", agent)
    else:
        from gnomon.adapters.fakes.zep import FakeZepServer
        from gnomon.adapters.zep import GuardedZep as Guarded  # type: ignore[assignment]

        server = SERVERS["zep"] = FakeZepServer()
        graph = client_for("zep", {}).user.create(user_id="alice").graph_uuid
        scope, options = {"graph_uuid": graph}, ("zep", "--graph-uuid", graph)
    with firewall.open(url) as wall:
        guarded = Guarded(client_for(store, {}), wall, project="shop", actor="coder", user="alice")
        for text, who in ((ALICE[0], "alice"), (ALICE[1], "alice"), (BOB, "bob")):
            guarded.gnomon.write(text, scope=scope, origin=attested(wall, Origin.user(who)))
        guarded.gnomon.close()
    return server, options


@pytest.mark.parametrize(("store", "sdk"), [("letta", "letta_client"), ("zep", "zep_cloud")])
def test_forget_erases_the_wrapped_letta_and_zep_stores(
    setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch, store: str, sdk: str
) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip(sdk)
    monkeypatch.setenv(CLIENT_HOOK, "tests.test_cli_stores:client_for")
    url = f"sqlite:///{Path.cwd() / f'{store}.db'}"
    server, options = _seed(url, store)
    result = forget({**setup, "url": url}, *options)
    assert result.exit_code == 0, result.output + result.stderr
    (wrapped,) = json.loads(result.stdout)["wrapped"]
    assert wrapped["store"] == store and len(wrapped["deleted"]) == 2
    assert wrapped["remaining"] == []
    held = server.passages.values() if store == "letta" else server.episodes.values()
    assert sorted(r.get("text") or r.get("content") for r in held) == [BOB]
    assert verify({**setup, "url": url}).exit_code == 0
