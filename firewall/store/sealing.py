"""Which sealing key a store uses, and what a store does with it (:mod:`firewall.log.seal`).

Keys live in the user's data directory (:func:`firewall.store.paths.data_dir`), one set per
store identity (the resolved file path of an SQLite or NDJSON store, the database and tenant of
a PostgreSQL one)::

    <data_dir>/seal/<id>.key      the host's secret keys (mode 0600): static host key, epoch key
    <data_dir>/seal/<id>.verify   the auditor's k0, written once at creation: copy it off the
                                  host (``gnomon log verify --seal-key``), then delete it here
    <data_dir>/seal/<id>.head     the sealed head watermark (truncation of the tail)
    <data_dir>/seal/<id>.tamper   every tamper problem the host found, once each (NDJSON)

An explicit key file (``seal_key=`` of a store, ``firewall.open(url, seal_key=...)``) keeps the
other files beside it. A store that is *empty* when it is opened and has no key gets a new one
(the process creating a store is its host); ``memory://`` gets an ephemeral in-process key. A
store that holds events and whose key cannot be found is opened **read-only for authority**:
reads work (unverified), every write raises :class:`UnsealedStoreError` before anything is
written.

>>> seal = StoreSeal.ephemeral()
>>> seal.sealed
True
>>> StoreSeal.unsealed(None, "memory://").require("committing")
Traceback (most recent call last):
...
gnomon.firewall.model.errors.UnsealedStoreError: memory:// was opened without its sealing key...
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from gnomon.firewall.log.events import Event, EventDraft, link_holds
from gnomon.firewall.log.seal import Sealer, SealKeys, Watermark
from gnomon.firewall.model.clock import utcnow
from gnomon.firewall.model.errors import KeyFileError, TamperedLogError, UnsealedStoreError
from gnomon.firewall.store.paths import data_dir

#: The kind of the event that records a tamper problem the host found.
TAMPER_KIND = "log.tamper_detected"


def store_key_path(identity: str) -> Path:
    """The default key file of the store whose identity is ``identity``."""
    digest = hashlib.sha256(b"gnomon.store-identity\x00" + identity.encode()).hexdigest()[:32]
    return data_dir() / "seal" / f"{digest}.key"


def file_identity(path: str | os.PathLike[str]) -> str:
    """The identity of a file-backed store: its resolved absolute path."""
    return "file:" + str(Path(path).resolve())


def forget_keys(identity: str) -> None:
    """Remove the sealing key and its companions of the store ``identity`` (its file was
    deleted on purpose, e.g. the demo resetting its own store): a new store at that place is a
    new store, not a truncated one. Never for a store whose log is kept."""
    key = store_key_path(identity)
    for suffix in (".key", ".verify", ".head", ".tamper"):
        path = key.with_suffix(suffix)
        for candidate in (path, path.with_name(path.name + ".lock")):
            candidate.unlink(missing_ok=True)


class StoreSeal:
    """A store's sealer (``None``: read-only for authority), its watermark, its tamper record."""

    def __init__(
        self,
        sealer: Sealer | None,
        key_path: Path | None,
        where: str,
        watermark: Watermark | None,
        identity: str = "",
    ) -> None:
        self.identity = identity
        self.sealer = sealer
        self.key_path = key_path
        self.where = where
        self.watermark = watermark
        self._reported: set[tuple[int, str]] | None = None

    @property
    def sealed(self) -> bool:
        """Whether this store holds its key (may commit)."""
        return self.sealer is not None

    @classmethod
    def ephemeral(cls, where: str = "memory://") -> StoreSeal:
        """A fresh in-process key (``memory://``): nothing reaches the disk."""
        sealer = Sealer(SealKeys.ephemeral())
        return cls(sealer, None, where, Watermark(None, sealer))

    @classmethod
    def unsealed(cls, key_path: Path | None, where: str) -> StoreSeal:
        """No key: read-only for authority."""
        return cls(None, key_path, where, None)

    @classmethod
    def open(
        cls, identity: str, where: str, *, empty: bool, key: str | os.PathLike[str] | None = None
    ) -> StoreSeal:
        """The seal of the store ``identity``: its key file (``key``, else the default path)
        loaded, or created when the store is ``empty`` and has none; else read-only."""
        path = Path(key) if key is not None else store_key_path(identity)
        if not path.exists():
            if not empty:
                unsealed = cls.unsealed(path, where)
                unsealed.identity = identity
                return unsealed
            try:
                keys = SealKeys.create(path, path.with_suffix(".verify"), identity)
            except FileExistsError:  # another process created it first
                keys = SealKeys.load(path)
            except OSError as exc:
                raise KeyFileError(
                    f"cannot create the sealing key {path} for {where}: {exc.strerror or exc}",
                    hint="check that the data directory ($GNOMON_HOME) is writable",
                ) from exc
        else:
            keys = SealKeys.load(path)
        sealer = Sealer(keys)
        return cls(sealer, path, where, Watermark(path.with_suffix(".head"), sealer), identity)

    # -- writing ----------------------------------------------------------------------------

    def require(self, doing: str) -> Sealer:
        """The sealer, or :class:`UnsealedStoreError` (nothing is written without it)."""
        if self.sealer is None:
            raise UnsealedStoreError(
                f"{self.where} was opened without its sealing key, so it is read-only for "
                f"authority: {doing} is refused",
                hint=f"open it in the host process that holds its key ({self.key_path}), or "
                "pass seal_key=; `gnomon doctor` checks an installation",
            )
        return self.sealer

    def check_head(self, seq: int, digest: str) -> None:
        """Inside a write transaction: refuse to extend a head below the sealed watermark."""
        if self.watermark is not None:
            problem = self.watermark.problem(seq, digest)
            if problem is not None:
                # the log cannot take a record (it may not be extended): the file keeps it
                self.record(seq, problem)
                raise TamperedLogError(seq, problem)

    def advance(self, events: Sequence[Event]) -> None:
        """After a write committed: move the watermark to its last event."""
        if events and self.watermark is not None:
            last = events[-1]
            self.watermark.advance(last.seq, last.hash)

    def closed(self, events: list[Event]) -> list[Event]:
        """A commit's freshly sealed ``events`` with the epoch tag on the last one
        (:meth:`Sealer.close`); ``events`` is changed in place and returned."""
        sealer = self.sealer
        if events and sealer is not None:
            last = events[-1]
            if last.tag is not None:
                events[-1] = replace(last, tag=sealer.close(last.seq, last.hash, last.tag))
        return events

    def resealed(self, events: Sequence[Event]) -> list[Event]:
        """``events`` (sealed elsewhere: an import, a replay) with this host's seals, computed
        after the caller checked that they continue its head."""
        sealer = self.require("appending events")
        return self.closed([replace(e, tag=sealer.tag(e.seq, e.hash)) for e in events])

    # -- reading ----------------------------------------------------------------------------

    def problem(self, event: Event) -> str | None:
        """What is wrong with ``event`` (its link and its host seal), or ``None``. A store
        without its key cannot tell, and says nothing (its reads are unverified)."""
        if self.sealer is None:
            return None
        if not link_holds(event.seq, event.prev_hash, event.body, event.hash):
            return "its hash does not match its body (edited)"
        return self.sealer.check(event.seq, event.hash, event.tag)

    def checked(self, events: Iterable[Event]) -> Iterator[Event]:
        """``events`` as they are read, each verified; a bad one raises
        :class:`TamperedLogError` (after :meth:`report`) and nothing after it is yielded."""
        if self.sealer is None:
            yield from events
            return
        for event in events:
            problem = self.problem(event)
            if problem is not None:
                raise self.tampered(event.seq, problem)
            yield event

    # -- recording --------------------------------------------------------------------------

    def _tamper_path(self) -> Path | None:
        return None if self.key_path is None else self.key_path.with_suffix(".tamper")

    def _known(self) -> set[tuple[int, str]]:
        if self._reported is None:
            self._reported = set()
            path = self._tamper_path()
            if path is not None and path.exists():
                for line in path.read_bytes().splitlines():
                    doc = orjson.loads(line)
                    self._reported.add((int(doc["seq"]), str(doc["problem"])))
        return self._reported

    def tampered(self, seq: int, problem: str) -> TamperedLogError:
        """The error for a tamper problem, recorded first (:meth:`record`)."""
        self.record(seq, problem)
        return TamperedLogError(seq, problem)

    def record(self, seq: int, problem: str) -> bool:
        """Note ``(seq, problem)`` once: in the host-private tamper file, and hand it to
        :attr:`on_tamper` (the store commits a :data:`TAMPER_KIND` event). False if it was
        already recorded."""
        known = self._known()
        if (seq, problem) in known:
            return False
        known.add((seq, problem))
        path = self._tamper_path()
        if path is not None:
            line = orjson.dumps({"seq": seq, "problem": problem, "at": utcnow().isoformat()})
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line + b"\n")
            finally:
                os.close(fd)
        return True


def tamper_draft(seq: int, problem: str) -> EventDraft:
    """The ``log.tamper_detected`` event the host commits for a problem it found."""
    return EventDraft(
        kind=TAMPER_KIND, actor="system", at=utcnow(), data={"seq": seq, "problem": problem}
    )


__all__ = [
    "TAMPER_KIND",
    "StoreSeal",
    "file_identity",
    "forget_keys",
    "store_key_path",
    "tamper_draft",
]
