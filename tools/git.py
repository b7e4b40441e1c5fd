"""Git tools over the repositories the host names: ``git_status`` (L0), ``git_commit`` (L3) and
``git_push`` (L4). ``git_commit`` and ``git_push`` keep the shipped contracts, so the kernel pins
what they will do (for a push: the commit the branch names, the remote's resolved URL, the
refspec and the force flag) and revalidates it at execution.

Invariants, checked by the executor on every call:

* ``repo`` must resolve to one of the host's repositories (its real path);
* a remote must be one the repository configures (``git remote``): a name git would read as a
  path or a URL (a planted bare repository next to the work tree) is refused, as is any name or
  branch that starts with ``-``; options never follow the ``--`` that ends them;
* a push sends exactly ``refs/heads/BRANCH:refs/heads/BRANCH``, forced only when the arguments
  say ``force`` (which the contract refuses unless it allows forcing);
* git runs with a scoped environment (no ``GIT_*`` variable of the host process), no hooks
  (``core.hooksPath=/dev/null``), no fsmonitor, no ``ext::`` transport, no terminal prompt,
  and a timeout.

>>> import subprocess, tempfile
>>> repo = tempfile.mkdtemp()
>>> _ = subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
>>> Git([repo]).status({"repo": repo}).branch
'main'
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from gnomon.firewall.kernel.contracts import BlastRadius, Category, Level
from gnomon.tools.base import Inputs, Tool, ToolOutput, ToolRefused, contract, shipped

#: options that keep a repository's own files from running code or reaching out
_HARDENED = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "protocol.ext.allow=never",
    "-c", "core.sshCommand=ssh",
)  # fmt: skip


class GitStatusInputs(Inputs):
    """``repo``: one of the host's repositories."""

    repo: str = Field(min_length=1, max_length=4096)


class GitStatusOutput(ToolOutput):
    """The current branch, HEAD, and ``git status --porcelain`` lines."""

    branch: str
    head: str
    changes: list[str]


class GitCommitOutput(ToolOutput):
    """The new commit."""

    commit: str


class GitPushOutput(ToolOutput):
    """What was pushed where."""

    remote: str
    refspec: str
    commit: str
    forced: bool


class Git:
    """Git tools over ``repos``; commits are authored as ``author`` (name, email)."""

    def __init__(
        self,
        repos: Iterable[str | os.PathLike[str]],
        *,
        author: tuple[str, str] = ("gnomon agent", "agent@gnomon.invalid"),
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.repos = {os.path.realpath(r) for r in repos}
        self.timeout = timeout
        name, email = author
        base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        self.env = {
            **base,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            **dict(env or {}),
        }

    def tools(self) -> list[Tool]:
        status = contract(
            "git_status", Category.READ, Level.L0, GitStatusInputs, GitStatusOutput,
            blast_radius=BlastRadius.SELF,
        )  # fmt: skip
        return [
            Tool(status, self.status),
            Tool(shipped("git_commit"), self.commit),
            Tool(shipped("git_push"), self.push),
        ]

    # -- the executors -------------------------------------------------------------------------

    def status(self, args: dict[str, Any]) -> GitStatusOutput:
        """Executor of ``git_status``."""
        repo = self._repo(args, "git_status")
        branch = self._git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        head = self._git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
        changes = self._git(repo, "status", "--porcelain=v1", "--untracked-files=all")
        return GitStatusOutput(
            branch=branch.strip(), head=head.strip(), changes=changes.splitlines()[:1000]
        )

    def commit(self, args: dict[str, Any]) -> GitCommitOutput:
        """Executor of ``git_commit``: stages every change in the work tree and commits it."""
        repo = self._repo(args, "git_commit")
        message = str(args.get("message", ""))
        if not message.strip():
            raise ToolRefused("git_commit refused: the message is empty")
        self._git(repo, "add", "--all", "--", ".")
        self._git(repo, "commit", "--quiet", "--no-verify", "--file=-", stdin=message)
        return GitCommitOutput(commit=self._git(repo, "rev-parse", "HEAD").strip())

    def push(self, args: dict[str, Any]) -> GitPushOutput:
        """Executor of ``git_push``."""
        repo = self._repo(args, "git_push")
        remote, branch = str(args.get("remote", "")), str(args.get("branch", ""))
        force = args.get("force", False) is True
        for what, value in (("remote", remote), ("branch", branch)):
            if not value or value.startswith("-"):
                raise ToolRefused(f"git_push refused: {what} {value!r} is not a name")
        remotes = self._git(repo, "remote").split()
        if remote not in remotes:
            raise ToolRefused(
                f"git_push refused: {remote!r} is not a remote of {repo}",
                hint=f"configured remotes: {', '.join(remotes) or 'none'}",
            )
        ref = f"refs/heads/{branch}"
        commit = self._git(repo, "rev-parse", "--verify", "--quiet", ref, check=False).strip()
        if not commit:
            raise ToolRefused(f"git_push refused: {repo} has no branch {branch!r}")
        refspec = f"{'+' if force else ''}{ref}:{ref}"
        self._git(repo, "push", "--porcelain", "--", remote, refspec)
        return GitPushOutput(remote=remote, refspec=refspec, commit=commit, forced=force)

    # -- helpers -------------------------------------------------------------------------------

    def _repo(self, args: Mapping[str, Any], tool: str) -> str:
        raw = args.get("repo")
        if not isinstance(raw, str) or "\x00" in raw:
            raise ToolRefused(f"{tool} refused: repo must be a path")
        real = os.path.realpath(raw)
        if real not in self.repos:
            raise ToolRefused(
                f"{tool} refused: {raw} is not one of the host's repositories",
                hint="the host names the repositories the git tools may touch",
            )
        return real

    def _git(self, repo: str, *argv: str, check: bool = True, stdin: str | None = None) -> str:
        try:
            done = subprocess.run(
                ["git", *_HARDENED, "-C", repo, *argv],
                input=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ToolRefused(f"git {argv[0]} timed out after {self.timeout} s") from None
        if check and done.returncode != 0:
            raise ToolRefused(f"git {argv[0]} failed: {done.stderr.strip()[:2000]}")
        return done.stdout


__all__ = ["Git", "GitCommitOutput", "GitPushOutput", "GitStatusInputs", "GitStatusOutput"]
