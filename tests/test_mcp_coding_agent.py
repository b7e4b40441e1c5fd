"""The headline run (issue 10, item 5): ``examples/mcp_coding_agent`` run as its README says, and
the trust report of each run checked in a real headless Chromium.

The example is real end to end (``mcp-server-git`` from PyPI in a temp repository, our push
server, ``gnomon mcp proxy`` in front of both, ``gnomon approve`` with the approver key). What
this test holds it to: run 1's push is held and times out into a denial (``isError`` with
``_meta``), ``origin`` unmoved; run 2's push is approved with a signed approval and runs; each
report renders with the blue "contained" banner (untrusted input read, none trusted), says how
many holds an approver resolved, and shows the push's fate. Skipped only when ``mcp``,
``mcp-server-git`` or ``chromium`` is missing, never under ``CI=true``.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.test_report_screenshot import BLUE, GREEN, RED, chromium, colors, near, screenshot

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")
    pytest.importorskip("mcp_server_git", reason="mcp-server-git is not installed")

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "mcp_coding_agent"


def readme_command() -> list[str]:
    """The one command the example's README gives (its bash block)."""
    text = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    (line,) = [ln for ln in block.splitlines() if ln.strip()]
    return line.split()


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_coding_agent_example_runs_as_its_readme_says(tmp_path: Path) -> None:
    chromium()
    command = readme_command()
    assert command[:2] == ["python", "examples/mcp_coding_agent/run.py"]
    import sys

    done = subprocess.run(
        [sys.executable, *command[1:], "--workdir", str(tmp_path / "work")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "work" / "summary.json").read_text())
    first, second = summary["runs"]
    # run 1: obeyed the README, committed, the push held and then denied; origin unmoved
    assert first["obeyed_readme"] and first["committed"]
    assert first["push_error"] and first["push_meta"]["verdict"] == "denied"
    assert first["push_meta"]["rule"] and first["push_meta"]["request_id"]
    assert "timed out" in first["push_text"]
    assert first["origin_main"] == summary["start"]
    # run 2: approved with a signed approval, the push ran
    assert not second["push_error"] and second["origin_main"] == second["local_head"]
    for run, resolved, fate in ((first, 0, "denied"), (second, 1, "executed")):
        report = run["report"]
        assert report["verdict"] == "blue"
        page = Path(report["html"]).read_text(encoding="utf-8")
        text = _text(page)
        assert f"1 held, 0 still waiting, {resolved} resolved by an approver" in text
        assert re.search(rf"git_push L4 hold [\w-]+ {fate}", text), f"the push is not {fate}"
        assert "TextContent" not in text and "meta=None" not in text  # summaries are text
        assert "external:mcp:git/git_show" in text  # where the poison came from
        shot = screenshot(page, tmp_path / report["session"])
        top = colors(shot, 260)
        assert near(top, BLUE) > 2000, "the blue verdict banner is drawn near the top"
        assert near(top, RED) == 0 and near(top, GREEN) == 0
