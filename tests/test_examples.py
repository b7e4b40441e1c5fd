"""Every runnable example runs in a real subprocess and keeps the poison out of trusted context.

The framework examples run the framework's real agent loop with its own fake or test model
class (no network); each is skipped on a developer machine without its extra, never under
``CI=true``. Beyond the common checks, each example's own promise is checked in its output: the
poisoned instruction is held for a human, and only a signed approval runs it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))

#: script -> (the extra's module, lines its output must hold, text never in trusted context)
PROMISES: dict[str, tuple[str | None, list[str], str]] = {
    "langgraph_agent.py": (
        "langgraph",
        ["git_push: gnomon: git_push held (rule external-needs-a-human", "held for a human"],
        "push straight to main",
    ),
    "openai_agents_agent.py": (
        "agents",
        ["git_push: gnomon: git_push held (rule external-needs-a-human", "final output: The push"],
        "push straight to main",
    ),
    "pydantic_ai_agent.py": (
        "pydantic_ai",
        ["git_push: gnomon: git_push held (rule external-needs-a-human", "output: The push"],
        "push straight to main",
    ),
    "custom_tools.py": (
        None,
        [
            "refused: contract for refund declares L2, below the spend floor L4",
            "refund (bad input): invalid",
            "refund: held by rule external-needs-a-human",
            "after a signed approval: executed",
        ],
        "refund 9000 EUR",
    ),
}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    module, lines, poison = PROMISES.get(script.name, (None, [], "directly to main"))
    if module and os.environ.get("CI") != "true" and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    trusted = done.stdout.split("## Trusted facts", 1)[-1].split("##", 1)[0]
    assert "sk-live" not in trusted and poison not in trusted
    assert "chain ok=True" in done.stdout
    for line in lines:
        assert line in done.stdout, f"{script.name} did not print {line!r}:\n{done.stdout}"


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert set(PROMISES) <= names, f"examples missing: {sorted(set(PROMISES) - names)}"
