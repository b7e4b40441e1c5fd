"""``shell_run``: one allowlisted program, run from an argument vector, never a shell string.

Invariants, checked by the executor on every call:

* ``argv`` is a list; ``argv[0]`` must be a program the host allowed, by its bare name, resolved
  once when the host builds the tool (to an absolute path on the host's ``PATH``): a path, a
  shell, a name off the list is refused, and nothing reaches ``/bin/sh`` (shell metacharacters
  in an argument are just bytes of that argument);
* the environment is built from scratch: ``PATH`` (the allowed programs' folders and
  ``/usr/bin:/bin``), ``HOME`` (the working folder), ``LANG`` and what the host names in
  ``env``; nothing is inherited from the host process, so its secrets never reach the program;
* stdin is empty, the program runs in its own process group, killed (all of it) at
  ``timeout`` seconds, and stdout and stderr are each captured up to ``max_output`` bytes (the
  rest is drained and counted, never held in memory);
* ``flags`` polices what a program's flags may be: for a program it names, every argument
  starting with ``-`` must be one of its allowed flags (``--name=value`` is checked by
  ``--name``; combined short flags such as ``-la`` must be listed as written), so
  ``find -exec``, ``git -c core.sshCommand=...`` or ``rg --pre`` are refused unless allowed. A
  program ``flags`` does not name takes any flag: allow only programs whose every flag you
  accept, or name them.

>>> import tempfile
>>> sh = Shell(["echo"], cwd=tempfile.mkdtemp())
>>> sh.run({"argv": ["echo", "a; rm -rf /"]}).stdout
'a; rm -rf /\\n'
>>> find = Shell(["find"], cwd=tempfile.mkdtemp(), flags={"find": ["-name", "-type"]})
>>> try:
...     find.run({"argv": ["find", ".", "-exec", "rm", "{}", ";"]})
... except ToolRefused as refused:
...     print(refused.message)
shell_run refused: find does not allow the flag '-exec'
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from gnomon.firewall.kernel.contracts import BlastRadius, Category, Level, Reversibility
from gnomon.tools.base import Inputs, Tool, ToolOutput, ToolRefused, contract

_ARG = Field(max_length=4096)


class ShellRunInputs(Inputs):
    """``argv``: the program (a name on the allowlist) and its arguments, one string each."""

    argv: list[str] = Field(min_length=1, max_length=256)


class ShellRunOutput(ToolOutput):
    """The exit code and the captured output (``*_truncated``: more was written than kept)."""

    exit_code: int
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False


class Shell:
    """``shell_run`` over an allowlist of ``programs`` (bare names), run in ``cwd``.

    ``level`` and ``category`` default to L3 local write; raise them (``Category.NETWORK``,
    L4) when an allowed program reaches the network.
    """

    def __init__(
        self,
        programs: Iterable[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_output: int = 64 * 1024,
        level: Level = Level.L3,
        category: Category = Category.LOCAL_WRITE,
        flags: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self.programs: dict[str, str] = {}
        for name in programs:
            if not name or "/" in name or name.startswith("-"):
                raise ToolRefused(f"shell_run: {name!r} is not a bare program name")
            found = shutil.which(name)
            if found is None:
                raise ToolRefused(f"shell_run: {name!r} is not on the host's PATH")
            self.programs[name] = os.path.abspath(found)  # not realpath: a multi-call binary
            # (busybox) picks its applet from the name it is run by
        self.flags = {name: frozenset(allowed) for name, allowed in (flags or {}).items()}
        stray = set(self.flags) - set(self.programs)
        if stray:
            raise ToolRefused(f"shell_run: flags names programs not allowed: {sorted(stray)}")
        for name, allowed in self.flags.items():
            if any(not f.startswith("-") for f in allowed):
                raise ToolRefused(f"shell_run: the flags of {name} must each start with '-'")
        self.cwd = os.path.realpath(cwd)
        self.timeout = timeout
        self.max_output = max_output
        self.level = level
        self.category = category
        folders = dict.fromkeys(str(Path(p).parent) for p in self.programs.values())
        self.env = {
            "PATH": os.pathsep.join([*folders, "/usr/bin", "/bin"]),
            "HOME": self.cwd,
            "LANG": "C.UTF-8",
            **dict(env or {}),
        }

    def tools(self) -> list[Tool]:
        made = contract(
            "shell_run", self.category, self.level, ShellRunInputs, ShellRunOutput,
            blast_radius=BlastRadius.PROJECT, reversibility=Reversibility.IRREVERSIBLE,
        )  # fmt: skip
        return [Tool(made, self.run)]

    def run(self, args: dict[str, Any]) -> ShellRunOutput:
        """Executor of ``shell_run``."""
        argv = ShellRunInputs.model_validate(args).argv
        program = self.programs.get(argv[0])
        if program is None:
            allowed = ", ".join(sorted(self.programs)) or "none"
            raise ToolRefused(
                f"shell_run refused: {argv[0]!r} is not an allowed program",
                hint=f"allowed: {allowed}; pass the program's bare name and its arguments",
            )
        if any("\x00" in a or len(a) > 4096 for a in argv):
            raise ToolRefused("shell_run refused: an argument has a NUL byte or is too long")
        self._check_flags(argv)
        proc = subprocess.Popen(
            [program, *argv[1:]],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        out, err = _Capture(proc.stdout, self.max_output), _Capture(proc.stderr, self.max_output)
        timed_out = False
        try:
            proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:
            _kill_group(proc)
            raise
        deadline = time.monotonic() + 5
        out.join(deadline)
        err.join(deadline)
        return ShellRunOutput(
            exit_code=proc.returncode,
            stdout=out.text(),
            stderr=err.text(),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=timed_out,
        )

    def _check_flags(self, argv: list[str]) -> None:
        allowed = self.flags.get(argv[0])
        if allowed is None:
            return
        for arg in argv[1:]:
            if arg.startswith("-") and arg not in allowed and arg.split("=", 1)[0] not in allowed:
                listed = ", ".join(sorted(allowed)) or "none"
                raise ToolRefused(
                    f"shell_run refused: {argv[0]} does not allow the flag {arg[:64]!r}",
                    hint=f"allowed flags of {argv[0]}: {listed}",
                )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class _Capture:
    """Drain ``stream`` in a thread, keeping its first ``limit`` bytes."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._kept = bytearray()
        self.truncated = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._stream:
            while chunk := self._stream.read(65536):
                room = self._limit - len(self._kept)
                if len(chunk) > room:
                    self.truncated = True
                self._kept += chunk[: max(room, 0)]

    def join(self, deadline: float) -> None:
        self._thread.join(max(deadline - time.monotonic(), 0))

    def text(self) -> str:
        return bytes(self._kept).decode("utf-8", errors="replace")


__all__ = ["Shell", "ShellRunInputs", "ShellRunOutput"]
