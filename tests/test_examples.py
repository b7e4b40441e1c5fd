"""Every runnable example runs in a real subprocess and keeps the poison out of trusted context."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    trusted = done.stdout.split("## Trusted facts", 1)[-1].split("##", 1)[0]
    assert "sk-live" not in trusted and "directly to main" not in trusted
    assert "chain ok=True" in done.stdout


def test_there_are_examples() -> None:
    assert EXAMPLES
