"""Attack on ``shell_run``'s allowlist through an allowed program's flags (issue 24, item 6).

``find`` is allowed to list files; its ``-exec`` flag runs any program with any arguments, past
the allowlist. With ``flags`` naming what ``find`` may take, ``-exec`` (and ``-delete``,
``-fprint``) is refused before anything runs. Flip: the same call without ``flags`` runs the
program ``-exec`` names (a real ``find``, a real file created).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gnomon.tools import Shell
from gnomon.tools.base import ToolRefused

pytestmark = pytest.mark.skipif(shutil.which("find") is None, reason="no find on this host")

ESCAPE = ["find", ".", "-maxdepth", "0", "-exec", "touch", "pwned", ";"]


@pytest.mark.parametrize(
    "argv",
    [ESCAPE, ["find", ".", "-delete"], ["find", ".", "-fprint=/tmp/x"], ["find", "-L", "."]],
)
def test_attack_a_flag_the_host_did_not_allow_is_refused(tmp_path: Path, argv: list[str]) -> None:
    sh = Shell(["find"], cwd=tmp_path, flags={"find": ["-maxdepth", "-name", "-type"]})
    with pytest.raises(ToolRefused, match="does not allow the flag"):
        sh.run({"argv": argv})
    assert not (tmp_path / "pwned").exists()


def test_allowed_flags_and_values_still_run(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    sh = Shell(["find"], cwd=tmp_path, flags={"find": ["-maxdepth", "-name", "-type"]})
    done = sh.run({"argv": ["find", ".", "-maxdepth", "1", "-type", "f", "-name", "*.txt"]})
    assert done.exit_code == 0 and "a.txt" in done.stdout


def test_a_flags_policy_must_name_allowed_programs_and_flags(tmp_path: Path) -> None:
    with pytest.raises(ToolRefused, match="not allowed"):
        Shell(["find"], cwd=tmp_path, flags={"rm": ["-r"]})
    with pytest.raises(ToolRefused, match="start with"):
        Shell(["find"], cwd=tmp_path, flags={"find": ["exec"]})


def test_flip_without_a_flags_policy_exec_runs_past_the_allowlist(tmp_path: Path) -> None:
    sh = Shell(["find"], cwd=tmp_path)
    done = sh.run({"argv": ESCAPE})
    assert done.exit_code == 0 and (tmp_path / "pwned").exists()  # touch ran, never allowed
