"""The proxy config's ``preconditions`` (issue 24, item 1): what each spec pins, bad specs as
typed errors naming the field, and the host command's limits (argv only, a timeout, bounded
output, a scoped environment)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from gnomon.firewall.host.mcp_config import load_proxy_config
from gnomon.firewall.kernel.contracts import PreconditionKind
from gnomon.firewall.kernel.preconditions import COMMAND_OUTPUT_CAP, command_output
from gnomon.firewall.model.errors import InputError

HEAD = "server: s\nproject: p\npolicy: a.yaml\noperator_keys: [o.pub]\ntools:\n  push:\n"


def _config(tmp_path: Path, pins: str) -> Path:
    path = tmp_path / "proxy.yaml"
    path.write_text(HEAD + "    category: push\n    level: L4\n    preconditions:\n" + pins)
    return path


def test_each_spec_becomes_preconditions_over_fixed_targets_under_the_configs_folder(
    tmp_path: Path,
) -> None:
    pins = (
        "      - file: notes.md\n"
        "      - {git: repo, head: true, ref: refs/heads/main, remote: origin}\n"
        "      - {command: [git, describe], timeout: 5}\n"
    )
    contract = load_proxy_config(_config(tmp_path, pins)).contract_for("push")
    assert contract is not None
    got = [(p.kind, p.target) for p in contract.preconditions]
    assert got[0] == (PreconditionKind.FILE_UNCHANGED, str(tmp_path / "notes.md"))
    assert got[1] == (PreconditionKind.GIT_HEAD_UNCHANGED, str(tmp_path / "repo"))
    assert [k for k, _ in got[2:]] == [
        PreconditionKind.GIT_REF,
        PreconditionKind.GIT_REMOTE_URL,
        PreconditionKind.COMMAND_OUTPUT,
    ]
    command = orjson.loads(str(got[4][1]))
    assert command == {"argv": ["git", "describe"], "cwd": str(tmp_path), "timeout": 5.0}


@pytest.mark.parametrize(
    ("pins", "words"),
    [
        ("      - {file: a, git: b, head: true}\n", "exactly one of file, git or command"),
        ("      - {git: repo}\n", "git pins head"),
        ("      - {file: a, ref: main}\n", "go with git"),
        ("      - {command: []}\n", "command"),
        ("      - {command: [ls], timeout: 600}\n", "timeout"),
        ("      - {git: repo, ref: --upload-pack=evil}\n", "ref"),
        ("      - {shell: 'rm -rf /'}\n", "shell"),
    ],
)
def test_a_bad_spec_is_a_typed_error_naming_the_field(
    tmp_path: Path, pins: str, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_proxy_config(_config(tmp_path, pins))
    assert "tools.push.preconditions" in str(caught.value) and words in str(caught.value)


def _run(argv: list[str], timeout: float = 10) -> str:
    return command_output(orjson.dumps({"argv": argv, "cwd": None, "timeout": timeout}).decode())


def test_the_command_is_pinned_by_exit_status_and_output_digest() -> None:
    first, again = (
        _run([sys.executable, "-c", "print('a')"]),
        _run([sys.executable, "-c", "print('a')"]),
    )
    assert first == again and orjson.loads(first)["exit"] == 0
    assert _run([sys.executable, "-c", "print('b')"]) != first
    assert orjson.loads(_run([sys.executable, "-c", "raise SystemExit(3)"]))["exit"] == 3


def test_the_commands_limits_make_it_unreadable_never_a_hang() -> None:
    flood = f"import sys; sys.stdout.write('x' * {COMMAND_OUTPUT_CAP + 10})"
    assert _run([sys.executable, "-c", flood]).startswith("unreadable: the command wrote over")
    slow = _run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert slow.startswith("unreadable: the command ran past")
    assert _run(["/nonexistent/program"]).startswith("unreadable: the command cannot start")
    # argv only: a shell string is one program name, never run by a shell
    assert _run(["echo hi; touch /tmp/pwned"]).startswith("unreadable")


def test_the_command_sees_a_scoped_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GNOMON_TEST_SECRET", "s3cret")
    probe = "import os, sys; sys.stdout.write(os.environ.get('GNOMON_TEST_SECRET', 'none'))"
    scoped = _run([sys.executable, "-c", probe])
    monkeypatch.delenv("GNOMON_TEST_SECRET")
    assert scoped == _run([sys.executable, "-c", probe])  # the secret never reached it
