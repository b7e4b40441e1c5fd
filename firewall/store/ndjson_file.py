"""``memory:///path/log.ndjson``: the in-process store, with an NDJSON file as its event log.

The projections live in memory exactly as in ``memory://`` (this class *is* a
:class:`~firewall.store.memory.MemoryStore`); the log lives in a file in the portable NDJSON format
(:mod:`firewall.log.ndjson`), so a store survives its process and ``gnomon log import`` reads the
file
as it is. URLs follow the SQLite convention: ``memory:///rel/log.ndjson`` is relative to the
working directory, ``memory:////abs/log.ndjson`` absolute.

**Opening** reads the whole file, verifies the chain and replays every event's records into the
projections through the same apply path a commit uses.

**Appending** (policy). A commit takes an exclusive ``flock`` on the file, first reads the lines
other processes appended since this process last looked (verifying and applying them), then seals
its drafts on the head it now knows, writes all of its lines with one ``write`` on an ``O_APPEND``
descriptor, ``fsync``\\s, and only then returns: an acknowledged commit is on disk. Several
processes appending to one file therefore keep one gap-free, valid chain. Every line of a commit
but the last carries ``"more": true``.

**Reads** (the log and the projections) show this process's view as of its last commit or
:meth:`FileLogStore.refresh`; :meth:`head`, :meth:`events` and :meth:`chain_rows` refresh first
(under a shared lock), so the log itself is always current.

**A torn tail** (policy). A crash mid-``write`` can leave a last line without its newline, or a
commit whose last line still says ``more``: the commit was never acknowledged. Under the
exclusive lock (at open, or before a commit) such a tail is cut off, the cut bytes are saved next
to the log as ``<log>.torn-<seq>-<time>``, a ``log.torn_tail_recovered`` event recording their
size, SHA-256 and where they were saved is appended to the chain, a warning is logged
(``gnomon.store``) and a :class:`TornTail` notice is added to :attr:`FileLogStore.notices`.
Nothing is dropped silently. Anything else wrong *inside* the file (a complete line that does not
parse or verify) is corruption: the store refuses to open with a typed error naming the line.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gnomon.firewall.log.events import Event, EventDraft
from gnomon.firewall.log.ndjson import encode_line, header_line, parse, verify_lines
from gnomon.firewall.model.clock import utcnow
from gnomon.firewall.model.errors import StoreError, TamperedLogError
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sealing import StoreSeal, file_identity

log = logging.getLogger("gnomon.store")

TORN_KIND = "log.torn_tail_recovered"


@dataclass(frozen=True, slots=True)
class TornTail:
    """A torn tail that was cut off the log: where, how much, and where the bytes were saved."""

    path: str
    offset: int
    length: int
    sha256: str
    saved_to: str
    recovered_seq: int  # the seq of the log.torn_tail_recovered event


class FileLogStore(MemoryStore):
    """A :class:`MemoryStore` whose event log is an NDJSON file shared by processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        url: str | None = None,
        seal_key: str | os.PathLike[str] | None = None,
    ) -> None:
        where = url or f"memory:///{path}"
        empty = not Path(path).exists() or Path(path).stat().st_size <= len(header_line())
        super().__init__(
            where, seal=StoreSeal.open(file_identity(path), where, empty=empty, key=seal_key)
        )
        self.path = Path(path)
        self.notices: list[TornTail] = []
        self._offset = 0  # bytes of the file already applied
        self._lines = 0  # lines of the file already applied (header included)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StoreError(
                f"cannot open the log file {self.path}: {exc.strerror or exc}",
                hint="check the path in the store URL and the directory permissions",
            ) from exc
        try:
            with self._lock, self._flock(fcntl.LOCK_EX):
                if os.fstat(self._fd).st_size == 0:
                    self._write(header_line())
                    _fsync_dir(self.path.parent)
                self._catch_up(recover=True)
        except BaseException:
            os.close(self._fd)
            self._closed = True
            raise

    # -- file plumbing ----------------------------------------------------------------------

    @contextmanager
    def _flock(self, mode: int) -> Iterator[None]:
        try:
            fcntl.flock(self._fd, mode)
        except OSError as exc:
            raise StoreError(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _write(self, data: bytes) -> None:
        """Append ``data`` and fsync; on failure cut the file back so no partial line stays."""
        start = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)
                os.fsync(self._fd)
            except OSError:
                pass  # the next open finds the torn tail and recovers it
            raise StoreError(
                f"cannot append to {self.path}: {exc.strerror or exc}; nothing was committed",
                hint="check free disk space and the file's permissions",
            ) from exc

    def _read_new(self) -> bytes:
        size = os.fstat(self._fd).st_size
        if size <= self._offset:
            return b""
        return os.pread(self._fd, size - self._offset, self._offset)

    def _catch_up(self, *, recover: bool) -> None:
        """Apply lines appended since we last looked; with ``recover`` (exclusive lock held),
        cut off a torn tail. Without it a torn tail is left for the next writer."""
        data = self._read_new()
        if not data:
            return
        source = str(self.path)
        parsed = parse(data, source, first_line=self._lines + 1, offset=self._offset)
        lines = parsed.lines
        cut = parsed.torn
        # a commit whose last written line still says "more" never finished
        keep = len(lines)
        while keep and lines[keep - 1].more:
            keep -= 1
        if keep < len(lines):
            cut = lines[keep].start
            lines = lines[:keep]
        seq, prev = self._head()
        verify_lines(lines, source, seq=seq, prev=prev)
        events = [line.event(source) for line in lines]
        for event in events:
            # another process (or an editor of the file) wrote it: the host's seal or nothing
            problem = self._seal.problem(event)
            if problem is not None:
                raise self._seal_refusal(event.seq, problem)
        if events:
            records, staged = self._check_sealed(events)
            self._apply(events, records, staged)
        end = parsed.end if cut is None else cut
        self._lines += (1 if parsed.header else 0) + len(lines)
        self._offset = end
        if cut is not None and recover and self._seal.sealed:
            self._recover(cut)

    def _seal_refusal(self, seq: int, problem: str) -> TamperedLogError:
        """A line of the file the host did not seal: recorded in the host-private tamper file
        (the log cannot take a record past a line it refuses to apply) and refused."""
        self._seal.record(seq, problem)
        return TamperedLogError(seq, f"{problem} (line of {self.path})")

    def _recover(self, cut: int) -> None:
        size = os.fstat(self._fd).st_size
        torn = os.pread(self._fd, size - cut, cut)
        digest = hashlib.sha256(torn).hexdigest()
        seq = self._head()[0]
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        saved = self.path.with_name(f"{self.path.name}.torn-{seq}-{stamp}")
        try:
            saved.write_bytes(torn)
            os.ftruncate(self._fd, cut)
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(
                f"{self.path} has a torn last write ({len(torn)} bytes at offset {cut}) that "
                f"could not be recovered: {exc.strerror or exc}",
                hint="check the directory's permissions; the file was not changed",
            ) from exc
        (event,) = self._append(
            [
                EventDraft(
                    kind=TORN_KIND,
                    actor="system",
                    at=utcnow(),
                    data={
                        "offset": cut,
                        "bytes": len(torn),
                        "sha256": digest,
                        "saved_to": saved.name,
                    },
                )
            ]
        )
        self._seal.advance([event])
        notice = TornTail(str(self.path), cut, len(torn), digest, str(saved), event.seq)
        self.notices.append(notice)
        log.warning(
            "%s: cut off a torn last write (%d bytes at offset %d, never acknowledged); "
            "saved to %s and recorded as event %d",
            self.path,
            len(torn),
            cut,
            saved,
            event.seq,
        )

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The exclusive file lock, and what other processes appended applied first: a
        commit seals on the true head, a claim sees every claim already on file."""
        with self._flock(fcntl.LOCK_EX):
            self._catch_up(recover=True)
            yield

    def _append(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Seal, write, fsync, apply. The caller holds both locks and has caught up."""
        sealed, records, staged = self._prepare(drafts)
        self._write_events(sealed)
        self._apply(sealed, records, staged)
        return sealed

    def _write_events(self, events: Sequence[Event]) -> None:
        """Append the events' lines through :meth:`_write` and advance the file position."""
        last = len(events) - 1
        data = b"".join(
            encode_line(e.seq, e.prev_hash, e.hash, e.body, more=i < last, seal=e.tag)
            for i, e in enumerate(events)
        )
        self._write(data)
        self._offset += len(data)
        self._lines += len(events)

    # -- the Store interface ----------------------------------------------------------------

    def append_sealed(self, events: Sequence[Event]) -> None:
        if not events:
            return
        self._seal.require("appending events")
        with self._lock:
            self._check_open()
            with self._writing():
                records, staged = self._check_sealed(events)
                resealed = self._seal.resealed(events)
                self._write_events(resealed)
                self._apply(resealed, records, staged)
        self._seal.advance(resealed)

    def refresh(self) -> None:
        """Apply what other processes appended since this process last looked."""
        with self._lock:
            self._check_open()
            with self._flock(fcntl.LOCK_SH):
                self._catch_up(recover=False)

    def head(self) -> tuple[int, str]:
        self._refresh_quietly()
        return super().head()

    def events(self, after: int = 0, limit: int | None = None) -> Iterator[Event]:
        self._refresh_quietly()
        return super().events(after, limit)

    def chain_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str]]:
        self._refresh_quietly()
        return super().chain_rows(after)

    def _refresh_quietly(self) -> None:
        with self._lock:
            if self._closed or os.fstat(self._fd).st_size == self._offset:
                return
            with self._flock(fcntl.LOCK_SH):
                self._catch_up(recover=False)

    def erase_bodies(
        self, rewrites: Mapping[int, bytes], draft: EventDraft, head: int
    ) -> list[Event] | None:
        # the log is an append-only file: rewriting a line in place is not supported, and the
        # in-memory erasure MemoryStore does would leave the text in the file
        raise StoreError(
            f"{self.url} cannot erase event bodies in place (an append-only NDJSON file)",
            hint="import the log into a sqlite:/// or postgresql:// store and forget there",
        )

    def rebuild_projections(self) -> int:
        with self._lock:
            self._check_open()
            with self._writing():
                return super().rebuild_projections()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["TORN_KIND", "FileLogStore", "TornTail"]
