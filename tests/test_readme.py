"""The README and the docs site are tested like code: their commands exist and their examples run.

Following sqlite-utils' ``tests/test_docs.py`` habit: every ``gnomon`` command the README or a docs
page mentions must exist, every command that exists must be in the command line page
(``docs/cli.md``) with options that exist, the two quick-start commands open the README, every
python block of the README and of every docs page runs as written, and CI runs exactly the
README's test command after the linters and the strict docs build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pytest
import yaml

from gnomon.firewall import ContextPolicy
from gnomon.firewall.cli import cli
from gnomon.firewall.host.mcp_config import ProxyConfig

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {
    str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))
}
CLI_PAGE = PAGES["docs/cli.md"]

SETUP = "python3 -m venv .venv && .venv/bin/pip install -e '.[dev,all]' && .venv/bin/gnomon demo"
TESTS = ".venv/bin/python -m pytest -q -n 2"
#: What .ci/run checks before the tests, each a line of its own.
CHECKS = [
    ".venv/bin/ruff check .",
    ".venv/bin/ruff format --check .",
    ".venv/bin/mypy",
]

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)

#: An import a snippet needs, by a name it contains: absent on a developer machine without the
#: extra (the snippet is skipped there), never under CI=true.
NEEDS = {
    "adapters.mem0": "mem0",
    "letta_client": "letta_client",
    "zep_cloud": "zep_cloud",
    "from mcp": "mcp",
    "langchain_tools": "langchain_core",
}


def blocks(text: str, lang: str | None = None) -> list[str]:
    return [body for kind, body in FENCE.findall(text) if lang is None or kind == lang]


def snippets() -> list[tuple[str, int]]:
    """(page, number) of every python block, README first."""
    return [(page, n) for page, text in PAGES.items() for n in range(len(blocks(text, "python")))]


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


def mentioned(text: str) -> set[tuple[str, ...]]:
    """``gnomon word [word]`` occurrences in ``text``, resolved against the command tree."""
    groups = {name for name, c in cli.commands.items() if isinstance(c, click.Group)}
    found: set[tuple[str, ...]] = set()
    for first, second in re.findall(
        r"(?<!from )\bgnomon(?: --url \S+)? ([a-z][\w-]*)(?:\s+([a-z][\w-]*))?", text
    ):
        found.add((first, second) if first in groups and second else (first,))
    return found


def test_readme_opens_with_the_two_commands() -> None:
    first_section = README.split("\n## ", 2)
    top = "\n## ".join(first_section[:2])  # the opening paragraph and the quick start
    assert README.startswith("# Gnomon\n")
    assert blocks(README)[:2] == [SETUP + "\n", TESTS + "\n"]
    assert SETUP in top and TESTS in top
    assert blocks(PAGES["docs/index.md"])[:2] == blocks(README)[:2]  # the site's home page too


def test_the_readme_stays_short() -> None:
    assert len(README.encode("utf-8")) <= 10_500, "move detail into a docs/ page and link it"


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file that exists (and, with an anchor, a
    heading of that page)."""
    for target in re.findall(r"\]\(([^)#:]+)(?:#([\w-]+))?\)", README):
        path, anchor = target
        assert (ROOT / path).is_file(), f"README links to {path}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{path} has no heading #{anchor}"


def test_ci_runs_the_checks_then_exactly_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in script.splitlines()]
    assert TESTS in lines
    assert "set -euo pipefail" in lines
    assert "export CI=true" in lines
    assert lines[-1] == TESTS  # nothing after it can swallow pytest's exit status
    for check in CHECKS:
        assert check in lines, f".ci/run does not run {check}"
    (docs_build,) = [line for line in lines if "mkdocs build" in line]
    assert "--strict" in docs_build.split()
    assert "pip install" in script.split(CHECKS[0])[0]  # the checks run in the fresh venv


def test_every_docs_page_is_in_the_nav() -> None:
    """A page under docs/ that the nav does not list is unreachable on the site."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert not pages - nav, f"pages missing from mkdocs.yml's nav: {sorted(pages - nav)}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_mentioned_command_exists(page: str) -> None:
    missing = mentioned(PAGES[page]) - command_paths()
    assert not missing, f"{page} mentions commands that do not exist: {sorted(missing)}"


def test_every_command_is_on_the_command_line_page() -> None:
    undocumented = command_paths() - mentioned(CLI_PAGE)
    assert not undocumented, f"commands missing from docs/cli.md: {sorted(undocumented)}"


@pytest.mark.parametrize("path", sorted(command_paths()), ids=" ".join)
def test_every_documented_option_exists(path: tuple[str, ...]) -> None:
    """Options in the command line page's row for a command are real options of that command."""
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    row = next(
        line for line in CLI_PAGE.splitlines() if line.startswith(f"| `gnomon {' '.join(path)}")
    )
    usage = row.split("`")[1]
    declared = {opt for p in command.params for opt in getattr(p, "opts", [])}
    for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", usage):
        assert option in declared, f"`gnomon {' '.join(path)}` has no option {option}"


def test_policy_example_is_valid() -> None:
    (example,) = blocks(PAGES["docs/concepts.md"], "yaml")
    assert ContextPolicy.from_yaml_text(example, source="docs/concepts.md").name == "team"


def test_proxy_config_example_is_valid() -> None:
    (example,) = blocks(PAGES["docs/mcp.md"], "yaml")
    config = ProxyConfig.model_validate(yaml.safe_load(example))
    assert config.contract_for("push") is not None and config.contract_for("rm") is None


@pytest.mark.parametrize(("page", "number"), snippets(), ids=lambda v: str(v))
def test_python_examples_run(page: str, number: int) -> None:
    """Every python block of the README and the docs runs as written (the stores ones offline,
    on the fake servers and the offline mem0 they name). A block that is not meant to run is
    fenced as ``py``."""
    assert len(snippets()) >= 15
    example = blocks(PAGES[page], "python")[number]
    if os.environ.get("CI") != "true":  # an SDK the snippet names may be absent, never in CI
        for marker, module in NEEDS.items():
            if marker in example:
                pytest.importorskip(module)
    exec(compile(example, page, "exec"), {})


def _promises() -> list[str]:
    section = PAGES["docs/security.md"].split("\n", 1)[1]
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
    threat = (DOCS / "threat-model.md").read_text(encoding="utf-8")
    assert "## In scope" in threat and "## Out of scope" in threat
    assert "compromised host" in threat.lower() and "os-level isolation" in threat.lower()
