"""Attacks on the policy loader: hostile YAML gets a PolicyError that names its line.

A policy file may come from anywhere (a pull request, a config volume, ``--policy FILE``). Each
test hands the loader a hostile document and checks that the answer is a :class:`PolicyError`
naming the line, never a hang, a ``RecursionError``, a ``MemoryError`` or a raw parser error.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon.firewall.cli import cli
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.model.errors import PolicyError

DEFAULT = (Path(__file__).resolve().parent.parent / "policies" / "default.yaml").read_text()
LINE = re.compile(r"line \d+")


def refused(text: str) -> str:
    started = time.monotonic()
    with pytest.raises(PolicyError) as caught:
        ContextPolicy.from_yaml_text(text, source="evil.yaml")
    # a guard against hangs (alias bombs, quadratic scans), not a speed target: generous enough
    # that a loaded CI machine never trips it, far below what an unbounded expansion takes
    assert time.monotonic() - started < 20, "the loader must refuse without hanging"
    message = str(caught.value)
    assert message.startswith("evil.yaml: ") and LINE.search(message), message
    return message


def test_an_alias_cannot_smuggle_a_value() -> None:
    text = DEFAULT.replace("truth: [supported]", "truth: &t [supported]").replace(
        "truth: [unverified]", "truth: *t"
    )
    assert "aliases are not allowed" in refused(text)


def test_billion_laughs_is_refused_before_it_expands() -> None:
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        laughs.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    assert "aliases are not allowed" in refused("\n".join(laughs) + "\n")


@pytest.mark.parametrize(
    "text",
    [
        "name: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "name: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n",
        "".join(" " * i + "a:\n" for i in range(600)),
    ],
    ids=["flow-lists", "flow-maps", "block-maps"],
)
def test_deep_nesting_is_refused_without_recursion_error(text: str) -> None:
    assert "nested deeper than" in refused(text)


def test_too_many_values_are_refused() -> None:
    assert "more than 10000 values" in refused("truth: [" + "a," * 20_000 + "]\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nquote:\n  max_items: " + "9" * 5000 + "\n", "line 3"),  # int() digit limit
        ("name: x\ndescription: 2026-02-30\n", "line 2"),  # a timestamp that is no date
        ("name: x\n\ndescription: caf\ud800\n", "line 3"),  # a lone surrogate
    ],
)
def test_constructor_errors_are_policy_errors_with_a_line(text: str, expected: str) -> None:
    assert expected in refused(text)


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("privileged: false", "privileged: false\nextra: 1", 36),
        ("truth: [supported]", "truth: [supprted]", 16),
        ("  max_age: P30D", "  max_age: P30X", 20),
        ("enforce_expiry: true", "enforce_expiry: maybe", 23),
        ("retrieval: [normal]", "retrieval: [normal, blocked]", 17),
        ("  max_items: 5", "  max_items: 0", 29),
        ("privileged: false", "privileged: false\ntruth: [unverified]", 36),
        ("security: [clean]\nfreshness", "security: [clean\nfreshness", 19),
    ],
)
def test_every_policy_error_names_its_line(old: str, new: str, line: int) -> None:
    assert old in DEFAULT
    message = refused(DEFAULT.replace(old, new, 1))
    assert f"line {line}" in message, message


def test_policy_check_refuses_a_hostile_file(tmp_path: Path) -> None:
    evil = tmp_path / "evil.yaml"
    evil.write_text("name: " + "[" * 50_000 + "]" * 50_000 + "\n", "utf-8")
    result = CliRunner().invoke(cli, ["policy", "check", str(evil)])
    assert result.exit_code == 1
    assert "nested deeper than" in result.stderr and "Traceback" not in result.output
