"""``gnomon import | export | sync STORE`` driven through click against real clients: mem0's
``Memory`` offline (a config file on disk, the hash embedder), and the real Letta and Zep SDK
clients talking to the in-process fake servers through the ``GNOMON_STORE_CLIENT`` testing hook.

Each store's tests skip only when its SDK is absent, and never under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.cli.stores import CLIENT_HOOK, DRIFT_EXIT, STORES
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.states import SecurityStatus


def _need(module: str, extra: str) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip(module, reason=f"pip install 'gnomon[{extra}]'")


SERVERS: dict[str, Any] = {}


def client_for(store: str, options: dict[str, Any]) -> Any:
    """The testing hook: the real SDK client, on the fake server of the running test."""
    transport = httpx.MockTransport(SERVERS[store].handle)
    if store == "letta":
        from letta_client import Letta

        return Letta(
            base_url="http://letta.test",
            max_retries=0,
            http_client=httpx.Client(transport=transport),
        )
    from zep_cloud.client import Zep

    return Zep(
        api_key="k",
        base_url="http://zep.test/api/v4",
        max_retries=0,
        httpx_client=httpx.Client(transport=transport),
    )


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result


def run_json(*args: str, code: int = 0) -> Any:
    return json.loads(run(*args, "--json", code=code).stdout)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'gnomon.db'}"


def exported(url: str, store: str, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"{store}.jsonl"
    summary = run_json("export", store, "--url", url, "--out", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary == {"store": store, "exported": len(lines), "out": str(out)}
    return lines


def assert_drift_caught(url: str, store: str, edited: str) -> None:
    with firewall.open(url) as wall:
        binding = wall.store.bindings_by_store_id(store, [edited])[edited]
        assert binding.state == BindingState.DRIFTED
        belief = wall.store.get_beliefs([binding.belief_id])[binding.belief_id]
        assert belief.security_status == SecurityStatus.SUSPICIOUS


def test_every_store_has_the_three_commands() -> None:
    for group in ("import", "export", "sync"):
        assert set(cli.commands[group].commands) == set(STORES) == {"mem0", "letta", "zep"}


# -- mem0: the real Memory, offline, from a config file ---------------------------------------


def test_mem0_import_export_sync(tmp_path: Path, url: str) -> None:
    _need("mem0", "mem0")
    from mem0 import Memory

    from gnomon.adapters.testing import HashEmbedder, offline_config

    config = offline_config(tmp_path)
    config["vector_store"]["config"]["path"] = str(tmp_path / "qdrant")
    config_file = tmp_path / "mem0.json"
    config_file.write_text(json.dumps(config))

    def raw() -> Any:
        memory = Memory.from_config(config)
        memory.embedding_model = HashEmbedder()
        return memory

    def release(memory: Any) -> None:
        memory.vector_store.client.close()

    memory = raw()
    ids = [
        memory.add(text, user_id="alice", infer=False)["results"][0]["id"]
        for text in ("Deploys go through ArgoCD.", "Payments need two reviewers.")
    ]
    release(memory)

    opts = ("--mem0-config", str(config_file), "--mem0-embedder", "hash", "--user-id", "alice")
    common = ("--url", url, "--project", "shop", *opts)
    first = run_json("import", "mem0", *common)
    assert (first["seen"], first["imported"], first["skipped"]) == (2, 2, 0)
    again = run_json("import", "mem0", *common)
    assert (again["seen"], again["imported"], again["skipped"]) == (2, 0, 2)

    records = exported(url, "mem0", tmp_path)
    assert {r["store_id"] for r in records} == set(ids)
    assert {r["text"] for r in records} == {
        "Deploys go through ArgoCD.",
        "Payments need two reviewers.",
    }
    for record in records:
        assert record["binding"] == "written" and record["truth"] == "unverified"
        assert record["origin"] and record["sensitivity"] and record["security"]

    assert run_json("sync", "mem0", *common)["clean"] is True

    memory = raw()  # an edit around the firewall
    memory.update(ids[0], text="Deploys may skip review.")
    release(memory)
    text = run("sync", "mem0", *common, code=DRIFT_EXIT).stdout
    assert "0 unbound, 1 drifted, 0 deleted" in text and f"drifted: {ids[0]}" in text
    assert_drift_caught(url, "mem0", ids[0])
    # recorded once: a later sync finds nothing new, and the belief stays suspicious
    found = run_json("sync", "mem0", *common)
    assert found["clean"] is True and found["seen"] == 2
    assert_drift_caught(url, "mem0", ids[0])


def test_mem0_needs_a_scope_and_a_client(url: str) -> None:
    _need("mem0", "mem0")
    result = run("import", "mem0", "--url", url, "--project", "shop", code=1)
    assert "needs a scope" in result.stderr
    result = CliRunner(env={"MEM0_API_KEY": None}).invoke(
        cli, ["import", "mem0", "--url", url, "--project", "shop", "--user-id", "a"]
    )
    assert result.exit_code == 1 and "--mem0-config" in result.stderr


# -- Letta and Zep: the real SDK clients against the fake servers -------------------------------


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLIENT_HOOK, f"{__name__}:client_for")
    SERVERS.clear()


def test_letta_import_export_sync(tmp_path: Path, url: str, hook: None) -> None:
    _need("letta_client", "letta")
    from gnomon.adapters.fakes.letta import FakeLettaServer

    server = SERVERS["letta"] = FakeLettaServer()
    agent = server.add_agent(blocks={"human": "Name: Ada"})
    raw = client_for("letta", {})
    for text in ("Ada prefers tea.", "Ada deploys on Fridays."):
        raw.agents.passages.create(agent, text=text)

    common = ("--url", url, "--project", "shop", "--agent-id", agent)
    first = run_json("import", "letta", *common)
    assert (first["seen"], first["imported"]) == (2, 2)
    assert run_json("import", "letta", *common)["imported"] == 0
    assert "0 of 2 items (2 already imported)" in run("import", "letta", *common).stdout

    records = exported(url, "letta", tmp_path)
    assert sorted(r["text"] for r in records) == ["Ada deploys on Fridays.", "Ada prefers tea."]
    assert all(r["truth"] == "unverified" and r["origin"] for r in records)

    assert run_json("sync", "letta", *common)["clean"] is True
    passage = next(p for p in server.passages.values() if p["text"] == "Ada prefers tea.")
    passage["text"] = "Ada prefers to push straight to main."  # edited on the server
    found = run_json("sync", "letta", *common, code=DRIFT_EXIT)
    (edited,) = found["drifted"]
    assert passage["id"] in edited
    assert_drift_caught(url, "letta", edited)

    raw.agents.passages.create(agent, text="Written around the firewall.")
    assert len(run_json("sync", "letta", *common, code=DRIFT_EXIT)["unbound"]) == 1


def test_zep_import_export_sync(tmp_path: Path, url: str, hook: None) -> None:
    _need("zep_cloud", "zep")
    from gnomon.adapters.fakes.zep import FakeZepServer

    server = SERVERS["zep"] = FakeZepServer()
    raw = client_for("zep", {})
    graph = raw.user.create(user_id="ada").graph_uuid
    for text in ("Ada likes tea.", "Ada ships on Mondays."):
        raw.graph.episode.add(graph, data=text, type="text")

    common = ("--url", url, "--project", "shop", "--graph-uuid", graph)
    assert run_json("import", "zep", *common)["imported"] == 2
    assert run_json("import", "zep", *common)["imported"] == 0
    records = exported(url, "zep", tmp_path)
    assert sorted(r["text"] for r in records) == ["Ada likes tea.", "Ada ships on Mondays."]

    assert run_json("sync", "zep", *common)["clean"] is True
    episode = next(e for e in server.episodes.values() if e["content"] == "Ada likes tea.")
    episode["content"] = "Ada says to disable the review gate."
    found = run_json("sync", "zep", *common, code=DRIFT_EXIT)
    (edited,) = found["drifted"]
    assert episode["uuid"] in edited
    assert_drift_caught(url, "zep", edited)
    del server.episodes[episode["uuid"]]
    assert run_json("sync", "zep", *common, code=DRIFT_EXIT)["deleted"] == [edited]


def test_export_to_stdout_puts_the_summary_on_stderr(url: str) -> None:
    firewall.open(url).close()
    result = run("export", "zep", "--url", url)
    assert result.stdout == "" and "exported 0 beliefs" in result.stderr


@pytest.mark.parametrize(
    ("store", "sdk", "module", "args"),
    [
        ("letta", "letta_client", "gnomon.adapters.letta", ("--agent-id", "a")),
        ("zep", "zep_cloud", "gnomon.adapters.zep", ("--graph-uuid", "g")),
        ("mem0", "mem0", "gnomon.adapters.mem0_backend", ("--user-id", "a")),
    ],
)
def test_missing_sdk_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    store: str,
    sdk: str,
    module: str,
    args: tuple[str, ...],
) -> None:
    for name in [m for m in sys.modules if m.startswith(f"{sdk}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, sdk, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    result = run("import", store, "--url", url, "--project", "shop", *args, code=1)
    assert f"pip install 'gnomon[{store}]'" in result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
