"""The command line for a newcomer (issue 12, item 7): ``init``, ``sessions list``, ``--json`` on
every command, one meaning per exit status, no half-done checkpoint, and no traceback.

The ``--json`` tests walk the click tree, so a command added later (the action kernel's, say) is
checked without editing this file: it must take ``--json`` and print JSON on stdout whether it
succeeds or refuses. The no-traceback tests run the installed ``gnomon`` script as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.host.demo import run_demo
from gnomon.firewall.store.paths import demo_file, keys_dir
from tests.test_cli import _gnomon


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS", "GNOMON_STORE_CLIENT", "MEM0_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def leaves(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaves(command, (*prefix, name))
        else:
            yield (*prefix, name)


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def stdout_json(text: str) -> Any:
    """One JSON document, or (the exports' data streams) JSON lines."""
    try:
        return json.loads(text)
    except ValueError:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        assert lines, "no JSON on stdout"
        return lines


LEAVES = sorted(leaves())


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_command_takes_json(path: tuple[str, ...]) -> None:
    options = {o for p in command_at(path).params for o in getattr(p, "opts", ())}
    assert "--json" in options, f"`gnomon {' '.join(path)}` has no --json"


def _filler(param: click.Parameter, tmp: Path) -> list[str]:
    """A value for a required parameter that parses but names nothing real."""
    kind = param.type
    if isinstance(kind, click.Choice):
        value = str(kind.choices[0])
    elif isinstance(kind, click.IntRange):
        value = str(kind.min if kind.min is not None else 1)
    elif isinstance(kind, click.Path):
        value = str(tmp / "no-such-file")
    else:
        value = "bel_nothing"
    if isinstance(param, click.Argument):
        return [value] * (param.nargs if param.nargs > 0 else 1)
    return [param.opts[0], value]


#: Commands that need no store and name nothing, so they succeed here (their JSON is checked
#: by test_commands_succeed_in_json, probes run's by tests/test_cli.py, setup's and doctor's by
#: tests/test_agent_setup.py and tests/test_doctor.py: doctor reports a missing store as a
#: finding in its own JSON).
NEED_NOTHING = {
    ("demo",),
    ("doctor",),
    ("init",),
    ("keys", "generate"),
    ("policy", "schema"),
    ("probes", "run"),
    ("setup",),
}


@pytest.mark.parametrize("path", [p for p in LEAVES if p not in NEED_NOTHING], ids=" ".join)
def test_every_command_refuses_in_json_on_a_missing_store(
    path: tuple[str, ...], tmp_path: Path
) -> None:
    """Every command, its required parameters filled with values that name nothing, against a
    store that does not exist: a GnomonError, exit 1, and that error as JSON on stdout."""
    command = command_at(path)
    args = [a for p in command.params if p.required for a in _filler(p, tmp_path)]
    url = f"sqlite:///{tmp_path / 'absent' / 'none.db'}"
    result = CliRunner().invoke(cli, ["--url", url, *path, *args, "--json"])
    assert result.exit_code == 1, (result.output, result.exception)
    data = json.loads(result.stdout)
    assert set(data) == {"error", "exit_code"} and data["exit_code"] == 1
    assert data["error"]["message"] and data["error"]["type"].endswith("Error")
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{folder / 'demo.db'}"
    result = run_demo(url)
    # the data directory that holds the store's sealing key: commands that write (recall logs
    # its recall) must run where the host's key is
    return {"url": url, "demo": result, "folder": folder, "home": os.environ["GNOMON_HOME"]}


def _recipes(s: dict[str, Any], tmp: Path) -> dict[tuple[str, ...], list[str]]:
    demo, url = s["demo"], s["url"]
    key = str(keys_dir() / "operator.key")
    return {
        ("init",): ["--url", f"sqlite:///{tmp / 'new.db'}"],
        ("demo",): [],
        ("sessions", "list"): ["--url", url],
        ("beliefs", "list"): ["--url", url],
        ("beliefs", "show"): [demo.user_fact_id, "--url", url],
        ("beliefs", "history"): [demo.user_fact_id, "--url", url],
        ("beliefs", "export"): ["--url", url],
        ("beliefs", "verify"): ["--url", url],
        ("why",): [demo.user_fact_id, "--url", url],
        ("replay",): [demo.sessions["recall"], "--policy", "reference", "--url", url],
        ("report",): [demo.sessions["reader"], "--url", url],
        ("recall",): ["deploy", "--project", "shop", "--url", url],
        ("quarantine",): [demo.copy_ids[0], "--reason", "planted", "--url", url],
        ("policy", "check"): [str(Path(__file__).parent.parent / "policies" / "default.yaml")],
        ("policy", "schema"): [],
        ("log", "verify"): ["--url", url],
        ("log", "export"): ["--url", url],
        ("log", "checkpoint"): ["--key", key, "--url", url],
        ("rebuild",): ["--url", url],
        ("keys", "generate"): ["--dir", str(tmp / "more"), "--name", "second"],
        ("keys", "grant"): ["--key", key, "--project", "shop", "--store", "mem0", "--out", "g"],
        ("export", "mem0"): ["--url", url, "--out", str(tmp / "m.jsonl")],
        ("export", "letta"): ["--url", url, "--out", str(tmp / "l.jsonl")],
        ("export", "zep"): ["--url", url],  # stdout: the JSON-lines stream, summary on stderr
    }


def test_commands_succeed_in_json(
    store: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real store, real arguments: exit 0 and JSON on stdout. Commands with a store server or
    a grant in their way (import, sync, promote, clear, supersede, db upgrade, probes run) have
    their own JSON tests beside their other tests."""
    monkeypatch.setenv("GNOMON_HOME", store["home"])  # the host that holds the store's key
    assert run("keys", "generate").exit_code == 0
    recipes = _recipes(store, tmp_path)
    assert set(recipes) <= set(LEAVES)
    for path, args in recipes.items():
        result = CliRunner().invoke(cli, [*path, *args, "--json"])
        assert result.exit_code == 0, (path, result.output)
        if path == ("export", "zep"):
            assert result.stdout == "" and json.loads(result.stderr)["exported"] == 0
        else:
            assert stdout_json(result.stdout), path


# -- init and sessions -----------------------------------------------------------------------


def test_init_creates_the_default_store_the_other_commands_open(
    tmp_path: Path, gnomon_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run("init", "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    db = gnomon_home / "gnomon.db"  # the user's data directory, not the working tree
    assert data["created"] is True and data["url"] == f"sqlite:///{db}"
    assert db.stat().st_mode & 0o777 == 0o600 and not (tmp_path / ".gnomon").exists()
    assert gnomon_home.stat().st_mode & 0o777 == 0o700
    again = json.loads(run("init", "--json").output)
    assert again["created"] is False and again["events"] == 0
    assert "already exists" in run("init").output
    assert run("sessions", "list").exit_code == 0  # the default store opens
    monkeypatch.setenv("GNOMON_URL", f"sqlite:///{tmp_path / 'env' / 'g.db'}")
    assert run("init").exit_code == 0 and (tmp_path / "env" / "g.db").exists()
    assert run("--url", "memory://", "init").exit_code == 1


def test_sessions_list_shows_every_demo_session(store: dict[str, Any]) -> None:
    demo = store["demo"]
    data = json.loads(run("sessions", "list", "--url", store["url"], "--json").output)
    listed = {s["id"]: s for s in data["sessions"]}
    assert set(demo.sessions.values()) <= set(listed)
    reader = listed[demo.sessions["reader"]]
    assert (reader["project"], reader["actor"], reader["user"]) == ("shop", "coder-agent", "alice")
    assert reader["ended_at"] is not None and reader["events"] > 20
    with firewall.open(store["url"]) as wall:
        assert reader["events"] == len(wall.store.session_events(reader["id"]))
    table = run("sessions", "list", "--url", store["url"])
    assert demo.sessions["reader"] in table.output and "coder-agent" in table.output
    assert json.loads(
        run("sessions", "list", "--url", store["url"], "--project", "nope", "--json").output
    ) == {"sessions": []}


def test_the_demo_prints_its_sessions_and_a_report_command_that_works(tmp_path: Path) -> None:
    shown = run("demo")
    assert shown.exit_code == 0, shown.output
    data = json.loads(run("demo", "--json").output)  # the store is recreated: new ids
    again = run("demo")
    command = next(
        line.strip()
        for line in again.output.splitlines()
        if line.strip().startswith("gnomon report")
    )
    assert f"--url sqlite:///{demo_file()}" in command
    assert set(data["sessions"]) == {"reader", "recall", "sentinel"}
    args = command.split()[1:]
    report = run(*args)
    assert report.exit_code == 0, report.output
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    for line in again.output.splitlines():  # every hint it prints runs
        if line.strip().startswith("gnomon ") and "recall" not in line:
            assert run(*line.split()[1:]).exit_code == 0, line


# -- exit codes ------------------------------------------------------------------------------


def test_why_of_an_unknown_id_exits_1(store: dict[str, Any]) -> None:
    unknown = run("why", "bel_0000nothere", "--url", store["url"])
    assert unknown.exit_code == 1 and "unknown belief id 'bel_0000nothere'" in unknown.stderr
    nothing = run("why", "zzz no such words", "--url", store["url"], "--json")
    assert nothing.exit_code == 1
    assert "nothing found" in json.loads(nothing.stdout)["error"]["message"]
    assert run("why", store["demo"].user_fact_id, "--url", store["url"]).exit_code == 0


def test_a_checkpoint_that_cannot_be_written_is_not_appended(
    store: dict[str, Any], tmp_path: Path
) -> None:
    assert run("keys", "generate").exit_code == 0
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with firewall.open(store["url"]) as wall:
        head = wall.store.head()
    failed = run(
        "log", "checkpoint", "--key", str(keys_dir() / "operator.key"), "--url", store["url"],
        "--out", str(blocker / "cp.json"),
    )  # fmt: skip
    assert failed.exit_code == 1 and "cannot write" in failed.stderr
    with firewall.open(store["url"]) as wall:
        assert wall.store.head() == head, "the failed checkpoint was appended to the log"
    assert list(tmp_path.glob("**/.cp.json.*")) == []


# -- the installed script: no tracebacks -----------------------------------------------------


def script(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GNOMON_", "MEM0_"))}
    env["GNOMON_HOME"] = str(cwd / "home")  # a user's data directory, never the real one
    env["OPENAI_API_KEY"] = ""  # a provider without credentials must fail, not phone home
    return subprocess.run(
        [str(_gnomon()), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
    )


def refused(done: subprocess.CompletedProcess[str], *fragments: str, code: int = 1) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def need_mem0() -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("mem0", reason="pip install 'gnomon[mem0]'")


def test_script_malformed_mem0_yaml(tmp_path: Path) -> None:
    need_mem0()
    (tmp_path / "bad.yaml").write_text("vector_store: [unclosed\n")
    done = script(
        tmp_path, "import", "mem0", "--project", "p", "--user-id", "u", "--mem0-config", "bad.yaml"
    )
    refused(done, "bad.yaml: not valid YAML")


def test_script_bad_mem0_provider(tmp_path: Path) -> None:
    need_mem0()
    (tmp_path / "p.yaml").write_text("vector_store:\n  provider: nosuchdb\n")
    done = script(
        tmp_path, "import", "mem0", "--project", "p", "--user-id", "u", "--mem0-config", "p.yaml",
        "--json",
    )  # fmt: skip
    refused(done, "Unsupported vector store provider: nosuchdb")
    assert json.loads(done.stdout)["error"]["type"] == "AdapterError"  # mem0's print went aside


def test_script_unreachable_mem0_platform_host(tmp_path: Path) -> None:
    need_mem0()
    done = script(
        tmp_path, "import", "mem0", "--project", "p", "--user-id", "u", "--mem0-api-key", "k",
        "--mem0-host", "http://127.0.0.1:9",
    )  # fmt: skip
    refused(done, "could not reach http://127.0.0.1:9")


def test_script_unwritable_outputs(tmp_path: Path) -> None:
    assert script(tmp_path, "demo").returncode == 0
    (tmp_path / "a-file").write_text("not a folder")
    url = f"sqlite:///{tmp_path / 'home' / 'demo' / 'demo.db'}"
    refused(
        script(tmp_path, "export", "mem0", "--url", url, "--out", "a-file/x.jsonl"),
        "cannot write a-file/x.jsonl",
    )
    refused(
        script(tmp_path, "beliefs", "export", "--url", url, "--out", "a-file/x.json"),
        "cannot write a-file/x.json",
    )
    refused(script(tmp_path, "keys", "generate", "--dir", "a-file/k"), "cannot write a key pair")
    refused(script(tmp_path, "why", "bel_0000nothere", "--url", url), "unknown belief id")
    assert script(tmp_path, "beliefs", "list", "--truth", "nope").returncode == 2
