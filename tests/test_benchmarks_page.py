"""``docs/benchmarks.md`` is exactly what ``bench/figures.py`` writes from ``bench/figures.json``,
and every row names a bench script that exists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_benchmarks_page_is_generated_from_the_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "figures.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_every_row_is_complete_and_names_a_bench_script() -> None:
    figures = json.loads((ROOT / "bench" / "figures.json").read_text(encoding="utf-8"))
    keys = {"area", "measurement", "result", "target", "met", "command", "conditions"}
    assert figures["rows"]
    for row in figures["rows"]:
        assert set(row) == keys, row
        script = row["command"].split()[0]
        assert (ROOT / script).is_file(), f"{script} does not exist"
