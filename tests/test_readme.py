"""The README is tested like code: its commands exist and its examples run.

Following sqlite-utils' ``tests/test_docs.py`` habit: every ``gnomon`` command the README mentions
must exist, every command that exists must be documented, the two quick-start commands open the
README, and CI runs exactly the README's test command.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pytest

from gnomon.firewall import ContextPolicy
from gnomon.firewall.cli import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")

SETUP = "python3 -m venv .venv && .venv/bin/pip install -e '.[dev,all]' && .venv/bin/gnomon demo"
TESTS = ".venv/bin/python -m pytest -q -n 2"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(lang: str | None = None) -> list[str]:
    return [body for kind, body in FENCE.findall(README) if lang is None or kind == lang]


def command_paths(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every command as a path of names: ('demo',), ('beliefs', 'list'), ...; a group that runs
    on its own (``invoke_without_command``, e.g. ``gnomon review``) is a command too."""
    paths: set[tuple[str, ...]] = set()
    for name, command in group.commands.items():
        path = (*prefix, name)
        if isinstance(command, click.Group):
            paths |= command_paths(command, path)
            if command.invoke_without_command:
                paths.add(path)
        else:
            paths.add(path)
    return paths


def mentioned() -> set[tuple[str, ...]]:
    """``gnomon word [word]`` occurrences in the README, resolved against the command tree."""
    groups = {name for name, c in cli.commands.items() if isinstance(c, click.Group)}
    found: set[tuple[str, ...]] = set()
    for first, second in re.findall(
        r"(?<!from )\bgnomon(?: --url \S+)? ([a-z][\w-]*)(?: ([a-z][\w-]*))?", README
    ):
        found.add((first, second) if first in groups and second else (first,))
    return found


def test_readme_opens_with_the_two_commands() -> None:
    first_section = README.split("\n## ", 2)
    top = "\n## ".join(first_section[:2])  # the opening paragraph and the quick start
    assert README.startswith("# Gnomon\n")
    assert blocks()[:2] == [SETUP + "\n", TESTS + "\n"]
    assert SETUP in top and TESTS in top


def test_ci_runs_exactly_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in script.splitlines()]
    assert TESTS in lines
    assert "set -euo pipefail" in lines
    assert "export CI=true" in lines
    assert lines[-1] == TESTS  # nothing after it can swallow pytest's exit status


def test_every_mentioned_command_exists() -> None:
    missing = mentioned() - command_paths()
    assert not missing, f"README mentions commands that do not exist: {sorted(missing)}"


def test_every_command_is_documented() -> None:
    undocumented = command_paths() - mentioned()
    assert not undocumented, f"commands missing from the README: {sorted(undocumented)}"


@pytest.mark.parametrize("path", sorted(command_paths()), ids=" ".join)
def test_every_documented_option_exists(path: tuple[str, ...]) -> None:
    """Options in the CLI reference row for a command are real options of that command."""
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    row = next(
        line for line in README.splitlines() if line.startswith(f"| `gnomon {' '.join(path)}")
    )
    usage = row.split("`")[1]
    declared = {opt for p in command.params for opt in getattr(p, "opts", [])}
    for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", usage):
        assert option in declared, f"`gnomon {' '.join(path)}` has no option {option}"


def test_policy_example_is_valid() -> None:
    (example,) = blocks("yaml")
    assert ContextPolicy.from_yaml_text(example, source="README.md").name == "team"


@pytest.mark.parametrize("number", range(len(blocks("python"))))
def test_python_examples_run(number: int) -> None:
    """Every python block of the README runs as written (the memory and Actions examples, and
    the store ones offline, on the fake servers and the offline mem0 they name)."""
    assert len(blocks("python")) >= 5
    example = blocks("python")[number]
    if os.environ.get("CI") != "true":  # an SDK the snippet names may be absent, never in CI
        for module in ("mem0", "letta_client", "zep_cloud"):
            if f"adapters.{module.split('_')[0]}" in example:
                pytest.importorskip(module)
    exec(compile(example, "README.md", "exec"), {})


def _promises() -> list[str]:
    section = README.split("\n## Security promises\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def test_every_security_promise_names_what_pins_it_and_that_exists() -> None:
    """Each promise line cites at least one probe or test, and every citation resolves: the file
    exists and, for ``file::name``, the test function is defined in it."""
    promises = _promises()
    assert len(promises) >= 15
    for line in promises:
        cited = re.findall(r"`((?:tests|probes)/[\w*]+\.py)(?:::(\w+))?`", line)
        assert cited, f"promise cites no probe or test: {line}"
        for path, name in cited:
            files = sorted(ROOT.glob(path))
            assert files, f"{path} does not exist (cited by: {line[:60]}...)"
            if name:
                assert any(f"def {name}(" in f.read_text(encoding="utf-8") for f in files), (
                    f"{path}::{name} is not defined"
                )
    threat = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert "## In scope" in threat and "## Out of scope" in threat
    assert "compromised host" in threat.lower() and "os-level isolation" in threat.lower()
