"""Filesystem tools confined to a root: ``fs_read`` (L0), ``fs_list`` (L0), ``fs_write`` (L3).

Invariants, checked by the executor on every call, whatever the kernel decided:

* a path is relative to the root; an absolute path, a ``..`` component, a NUL byte or a ``.git``
  component (hooks and config that git would run) is refused;
* the path is walked one component at a time from an open descriptor of the root with
  ``O_NOFOLLOW``: no symlink is followed, at any depth, so a link planted inside the root cannot
  lead out of it, and there is no window between a check and the open;
* what was opened is checked again: its real path is under the root's, it is a regular file (a
  FIFO or device is refused, never blocked on), and a file written has one link (a hard link to
  a file outside the root is refused);
* reads and writes are capped (``max_read``, ``max_write`` bytes);
* ``fs_write`` pins its file between the hold and the execution (``file_unchanged`` and
  ``file_target`` over ``path`` under the root): the file's content digest, its real path, its
  parent folder's identity and what the path is (absent, file, link). A file edited or replaced,
  a link planted or a parent folder swapped after the approval refuses the execution, recorded;
  after the kernel's re-check the executor's own walk (no link followed, one hard link) keeps
  the write inside the root.

>>> import tempfile
>>> files = Files(tempfile.mkdtemp())
>>> files.write({"path": "notes/a.txt", "content": "hi"}).bytes
2
>>> files.read({"path": "notes/a.txt"}).text
'hi'
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from gnomon.firewall.kernel.contracts import (
    BlastRadius,
    Category,
    Level,
    Precondition,
    PreconditionKind,
)
from gnomon.tools.base import Inputs, Tool, ToolOutput, ToolRefused, contract

_PATH = Field(min_length=1, max_length=4096)


class FsReadInputs(Inputs):
    """``path``: a file under the root, relative to it."""

    path: str = _PATH


class FsListInputs(Inputs):
    """``path``: a folder under the root, relative to it (``.``: the root)."""

    path: str = Field(default=".", min_length=1, max_length=4096)


class FsWriteInputs(Inputs):
    """``path``: a file under the root (folders on the way are created); ``content``: its text."""

    path: str = _PATH
    content: str


class FsReadOutput(ToolOutput):
    """The file's text (UTF-8, undecodable bytes replaced)."""

    path: str
    text: str


class FsListOutput(ToolOutput):
    """The folder's entries, sorted, folders ending in ``/``."""

    path: str
    entries: list[str]


class FsWriteOutput(ToolOutput):
    """What was written."""

    path: str
    bytes: int


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Files:
    """Filesystem tools confined to ``root``. ``writable=False`` leaves ``fs_write`` out."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_read: int = 1 << 20,
        max_write: int = 1 << 20,
        writable: bool = True,
    ) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise ToolRefused(f"the filesystem tools' root {root} is not a folder")
        self.root = real
        self.max_read = max_read
        self.max_write = max_write
        self.writable = writable

    def tools(self) -> list[Tool]:
        read = contract(
            "fs_read", Category.READ, Level.L0, FsReadInputs, FsReadOutput,
            blast_radius=BlastRadius.SELF,
        )  # fmt: skip
        listing = contract(
            "fs_list", Category.READ, Level.L0, FsListInputs, FsListOutput,
            blast_radius=BlastRadius.SELF,
        )  # fmt: skip
        out = [Tool(read, self.read), Tool(listing, self.listing)]
        if self.writable:
            root = str(self.root)
            pins = (
                Precondition(kind=PreconditionKind.FILE_UNCHANGED, arg="path", root=root),
                Precondition(kind=PreconditionKind.FILE_TARGET, arg="path", root=root),
            )
            write = contract(
                "fs_write", Category.LOCAL_WRITE, Level.L3, FsWriteInputs, FsWriteOutput,
                preconditions=pins,
            )  # fmt: skip
            out.append(Tool(write, self.write))
        return out

    # -- the executors -------------------------------------------------------------------------

    def read(self, args: dict[str, Any]) -> FsReadOutput:
        """Executor of ``fs_read``."""
        path = FsReadInputs.model_validate(args).path
        parts = self._parts(path, "fs_read")
        with self._parent(parts, "fs_read", create=False) as parent:
            fd = self._open(parts[-1], parent, os.O_RDONLY | os.O_NONBLOCK, path, "fs_read")
            try:
                info = self._regular(fd, path, "fs_read")
                if info.st_size > self.max_read:
                    raise ToolRefused(
                        f"fs_read refused: {path} is {info.st_size} bytes, over the "
                        f"{self.max_read}-byte cap"
                    )
                data = os.read(fd, self.max_read + 1)
            finally:
                os.close(fd)
        if len(data) > self.max_read:
            raise ToolRefused(f"fs_read refused: {path} is over the {self.max_read}-byte cap")
        return FsReadOutput(path=path, text=data.decode("utf-8", errors="replace"))

    def listing(self, args: dict[str, Any]) -> FsListOutput:
        """Executor of ``fs_list``."""
        path = FsListInputs.model_validate(args).path
        parts = [p for p in self._parts(path, "fs_list", allow_root=True) if p != "."]
        with self._parent([*parts, "."], "fs_list", create=False) as folder:
            entries = []
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.name == ".git":
                        continue
                    folder_mark = "/" if entry.is_dir(follow_symlinks=False) else ""
                    entries.append(entry.name + folder_mark)
        return FsListOutput(path=path, entries=sorted(entries)[:10_000])

    def write(self, args: dict[str, Any]) -> FsWriteOutput:
        """Executor of ``fs_write``."""
        checked = FsWriteInputs.model_validate(args)
        path, data = checked.path, checked.content.encode("utf-8")
        if len(data) > self.max_write:
            raise ToolRefused(
                f"fs_write refused: {len(data)} bytes is over the {self.max_write}-byte cap"
            )
        parts = self._parts(path, "fs_write")
        with self._parent(parts, "fs_write", create=True) as parent:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
            fd = self._open(parts[-1], parent, flags, path, "fs_write")
            try:
                info = self._regular(fd, path, "fs_write")
                if info.st_nlink != 1:
                    raise ToolRefused(
                        f"fs_write refused: {path} has {info.st_nlink} hard links (one may be "
                        "outside the root)"
                    )
                os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        return FsWriteOutput(path=path, bytes=len(data))

    # -- confinement ---------------------------------------------------------------------------

    def _parts(self, path: str, tool: str, *, allow_root: bool = False) -> list[str]:
        if "\x00" in path:
            raise ToolRefused(f"{tool} refused: the path has a NUL byte")
        if path.startswith(("/", "\\")) or os.path.isabs(path):
            raise ToolRefused(
                f"{tool} refused: {path!r} is absolute",
                hint=f"name a path relative to the root {self.root}",
            )
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolRefused(f"{tool} refused: {path!r} climbs out with '..'")
        if ".git" in parts:
            raise ToolRefused(f"{tool} refused: {path!r} is inside a .git folder")
        if not parts and not allow_root:
            raise ToolRefused(f"{tool} refused: {path!r} names the root, not a file")
        return parts or ["."]

    @contextmanager
    def _parent(self, parts: list[str], tool: str, *, create: bool) -> Iterator[int]:
        """An open descriptor of the folder holding ``parts[-1]``, reached without following a
        link (``create``: missing folders on the way are made)."""
        fd = os.open(self.root, _DIR)
        try:
            for name in parts[:-1]:
                try:
                    nxt = os.open(name, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        missing = "/".join(parts)
                        raise ToolRefused(f"{tool} refused: {missing} does not exist") from None
                    os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = os.open(name, _DIR, dir_fd=fd)
                except OSError as exc:
                    raise self._link_refusal(exc, name, tool) from None
                os.close(fd)
                fd = nxt
            if parts[-1] == ".":
                self._inside(fd, "/".join(parts), tool)
            yield fd
        finally:
            os.close(fd)

    def _open(self, name: str, parent: int, flags: int, path: str, tool: str) -> int:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
        except FileNotFoundError:
            raise ToolRefused(f"{tool} refused: {path} does not exist") from None
        except OSError as exc:
            raise self._link_refusal(exc, path, tool) from None
        try:
            self._inside(fd, path, tool)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _inside(self, fd: int, path: str, tool: str) -> None:
        proc = f"/proc/self/fd/{fd}"
        if os.path.exists(proc):
            real = Path(os.path.realpath(proc))
            if real != self.root and self.root not in real.parents:
                raise ToolRefused(f"{tool} refused: {path} resolves outside the root")

    @staticmethod
    def _regular(fd: int, path: str, tool: str) -> os.stat_result:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolRefused(f"{tool} refused: {path} is not a regular file")
        return info

    @staticmethod
    def _link_refusal(exc: OSError, path: str, tool: str) -> ToolRefused:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            return ToolRefused(
                f"{tool} refused: {path} is or passes through a symbolic link (or a non-folder)",
                hint="links are never followed: name the real path under the root",
            )
        return ToolRefused(f"{tool} refused: {path}: {exc.strerror}")


__all__ = [
    "Files",
    "FsListInputs",
    "FsListOutput",
    "FsReadInputs",
    "FsReadOutput",
    "FsWriteInputs",
    "FsWriteOutput",
]
