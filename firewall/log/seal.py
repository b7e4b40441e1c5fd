"""Sealing: host-held secret keys that authenticate every event the host commits.

The chain (:mod:`firewall.log.events`) is keyless: whoever can write the store's files can edit
an event and re-chain everything after it. A *seal* is what they cannot forge: a 64-byte value
stored beside each event, made of two MACs (:class:`Mac`, keyed BLAKE2b-256) over the event's
place in the chain::

    msg(n)      = u64be(n) || bytes(hash(n))          hash(n) covers the body's digest and prev
    host_tag    = MAC( k_host, b"gnomon.seal.host.v1\x00"  || msg(n) )     every event
    epoch_tag   = MAC( k_e,    b"gnomon.seal.epoch.v1\x00" || msg(n) )     e = epoch(n); on the
                  last event of each commit and of each epoch, else 32 zero bytes
    seal(n)     = epoch_tag || host_tag

``epoch(n) = (n - 1) // EPOCH_EVENTS``: derived from the seq, so concurrent writers of one store
agree on which key seals which event. The epoch key ratchets forward and never back::

    k_{e+1} = MAC( k_e, b"gnomon.seal.ratchet" )

and the key file keeps only the newest epoch key (the old one is overwritten by an atomic
replace), so a key stolen at epoch ``e`` cannot produce the epoch tag of any event of an earlier
epoch: the **auditor**, who holds ``k_0`` (exported once, at key creation, to a verification file
meant to leave the host), ratchets from ``k_0`` and checks that every event carries a valid epoch
tag or is chained to the next one of its own epoch (:meth:`Auditor.walk`). The **host** checks
the host tag, under a static key, in O(1) for any event however old (a hold from last month);
that check is not forward-secure: a thief of the key file can seal anything the host could. See
``docs/threat-model.md`` ("Sealed log").

>>> keys = SealKeys.ephemeral()
>>> sealer = Sealer(keys)
>>> tag = sealer.close(1, "ab" * 32, sealer.tag(1, "ab" * 32))  # a one-event commit
>>> len(tag), sealer.check(1, "ab" * 32, tag)
(64, None)
>>> sealer.check(2, "ab" * 32, tag)
'its seal does not verify under the host key (forged, edited, renumbered or re-chained)'
>>> Auditor(keys.k0).check(1, "ab" * 32, tag) is None
True
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from gnomon.firewall.log.events import GENESIS_HASH, ErasureLedger, VerifyReport, link_state
from gnomon.firewall.model.errors import KeyFileError, TamperedLogError

#: Events per epoch of the ratcheting key.
EPOCH_EVENTS = 1024
#: Bytes of one seal: the epoch tag then the host tag.
SEAL_BYTES = 64
EPOCH_DOMAIN = b"gnomon.seal.epoch.v1\x00"
HOST_DOMAIN = b"gnomon.seal.host.v1\x00"
RATCHET = b"gnomon.seal.ratchet"
HEAD_DOMAIN = b"gnomon.seal.head.v1\x00"
ROW_DOMAIN = b"gnomon.seal.row.v1\x00"
#: The ``format`` of a key file and of an auditor's verification file.
KEY_FORMAT = "gnomon.seal-key"
VERIFY_FORMAT = "gnomon.seal-verify"

#: The epoch part of a seal inside a commit, covered by a later epoch tag of its epoch.
NO_EPOCH_TAG = bytes(32)

_FORGED = "its seal does not verify under the host key (forged, edited, renumbered or re-chained)"
_BAD_AUDIT = "its seal does not verify under the auditor's key (forged or resealed)"
_PENDING = "pending"
_UNCOVERED = "no valid epoch tag of its epoch covers it (forged, resealed or cut off)"
_UNSEALED = "it carries no seal (written without the host's key, or before sealing existed)"


class Mac:
    """A keyed BLAKE2b-256 MAC under one key (RFC 7693's keyed mode, a PRF), its keyed state
    computed once and copied per message.

    Not HMAC-SHA256: on OpenSSL 3, ``hmac.digest`` sets a MAC context up on every call and was
    measured at ~16x the time of one SHA-256 of the same bytes (HMAC from precomputed SHA-256
    states, three hash calls, at ~5x); keyed BLAKE2b is one call, about the cost of one SHA-256,
    and a seal is on every commit and every verified read (``docs/threat-model.md``).

    >>> len(Mac(b"k" * 32)(b"msg")), Mac(b"k" * 32)(b"msg") == Mac(b"k" * 32)(b"msg")
    (32, True)
    >>> Mac(b"k" * 32)(b"msg") == Mac(b"j" * 32)(b"msg")
    False
    """

    __slots__ = ("_state",)

    def __init__(self, key: bytes, domain: bytes = b"") -> None:
        # ``domain``, when given, is absorbed once: the MAC is then of ``domain || msg``
        self._state = hashlib.blake2b(domain, key=key, digest_size=32)

    def __call__(self, msg: bytes) -> bytes:
        state = self._state.copy()
        state.update(msg)
        return state.digest()


def epoch_of(seq: int) -> int:
    """The epoch whose key seals event ``seq`` (seq 1 is the first event).

    >>> epoch_of(1), epoch_of(EPOCH_EVENTS), epoch_of(EPOCH_EVENTS + 1)
    (0, 0, 1)
    """
    return (seq - 1) // EPOCH_EVENTS


def ratchet(key: bytes) -> bytes:
    """The next epoch's key (one-way: the previous key cannot be computed from it)."""
    return Mac(key)(RATCHET)


def _msg(seq: int, digest: str) -> bytes:
    return seq.to_bytes(8, "big") + bytes.fromhex(digest)


@dataclass(slots=True)
class SealKeys:
    """A store's secret sealing keys: the static host key and the current epoch key.

    ``path`` is the key file they live in (``None``: ephemeral, in this process only, as a
    ``memory://`` store's). ``k0`` is set only right after creation (it is what the auditor's
    verification file holds; it is never written to the key file)."""

    store_id: str
    host_key: bytes
    epoch: int
    epoch_key: bytes
    path: Path | None = None
    k0: bytes | None = None

    @classmethod
    def ephemeral(cls, store_id: str = "memory") -> SealKeys:
        """Fresh keys held only by this process."""
        k0 = secrets.token_bytes(32)
        return cls(store_id, secrets.token_bytes(32), 0, k0, None, k0)

    @classmethod
    def create(cls, path: Path, verify_path: Path, store_id: str) -> SealKeys:
        """Create the key file ``path`` (mode 0600; refused if it exists: another process may
        have just created it, and the caller then loads it) and write the auditor's
        verification file ``verify_path`` once, with ``k0``."""
        keys = cls.ephemeral(store_id)
        keys.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        assert keys.k0 is not None
        _write_new(path, keys._file_doc())  # the one creator wins here
        _replace(verify_path, _doc(VERIFY_FORMAT, store_id, k0=keys.k0.hex()), sync=True)
        return keys

    @classmethod
    def load(cls, path: Path) -> SealKeys:
        """The keys in the key file ``path`` (a :class:`KeyFileError` if unreadable)."""
        doc = _read_doc(path, KEY_FORMAT)
        try:
            return cls(
                str(doc["store"]),
                bytes.fromhex(str(doc["host_key"])),
                int(str(doc["epoch"])),
                bytes.fromhex(str(doc["epoch_key"])),
                path,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyFileError(
                f"sealing key file {path} is malformed ({exc!r})",
                hint="restore it from a backup; without it the store is read-only for authority",
            ) from exc

    def _file_doc(self) -> bytes:
        return _doc(
            KEY_FORMAT,
            self.store_id,
            host_key=self.host_key.hex(),
            epoch=self.epoch,
            epoch_key=self.epoch_key.hex(),
        )

    def advance_to(self, epoch: int) -> None:
        """Ratchet to ``epoch`` and erase the older key: in memory, and in the key file under
        its lock (another process may already have ratcheted further: the file never goes
        back)."""
        if epoch <= self.epoch:
            return
        key = self.epoch_key
        for _ in range(epoch - self.epoch):
            key = ratchet(key)
        self.epoch, self.epoch_key, self.k0 = epoch, key, None
        if self.path is None:
            return
        with _locked(self.path):
            on_file = SealKeys.load(self.path)
            if on_file.epoch >= epoch:
                return
            _replace(self.path, self._file_doc())


def _doc(fmt: str, store_id: str, **fields: object) -> bytes:
    return orjson.dumps(
        {"format": fmt, "version": 1, "store": store_id, **fields}, option=orjson.OPT_SORT_KEYS
    )


def _read_doc(path: Path, fmt: str) -> dict[str, object]:
    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise KeyFileError(
            f"cannot read sealing key file {path}: {exc.strerror or exc}",
            hint="check the path and its permissions (run `gnomon doctor`)",
        ) from exc
    except orjson.JSONDecodeError as exc:
        raise KeyFileError(f"sealing key file {path} is not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise KeyFileError(
            f"{path} is not a {fmt} file",
            hint="pass the store's sealing key file (or the auditor's verification file)",
        )
    return doc


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data``, mode 0600, whole or not at all (written aside, then
    hard-linked into place: a concurrent reader never sees a partial file);
    :class:`FileExistsError` if it exists."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    finally:
        os.unlink(tmp)


def _replace(path: Path, data: bytes, *, sync: bool = False) -> None:
    """Atomically replace ``path`` by ``data`` (mode 0600): the old bytes are not kept.

    A ratchet does not ``fsync`` (it is on the commit path, once an epoch): a crash before the
    page cache is written leaves the *previous* epoch key on disk, from which the next one is
    derived again, so no seal is lost; the old key then lingers until the next ratchet."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` (a multi-process ratchet or watermark update)."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Sealer:
    """Seals events with :class:`SealKeys` and checks the host tag of any event."""

    def __init__(self, keys: SealKeys) -> None:
        self.keys = keys
        self._host = Mac(keys.host_key, HOST_DOMAIN)
        self._head = Mac(keys.host_key, HEAD_DOMAIN)
        self._row = Mac(keys.host_key, ROW_DOMAIN)
        self._epoch = Mac(keys.epoch_key, EPOCH_DOMAIN)
        self._epoch_no = keys.epoch

    @property
    def store_id(self) -> str:
        return self.keys.store_id

    def tag(self, seq: int, digest: str, msg: bytes | None = None) -> bytes:
        """The seal of event ``seq`` whose chain hash is ``digest`` inside a commit: the host
        tag, and the epoch tag when ``seq`` is the last event of its epoch (else zeros: the
        commit's last event gets one, :meth:`close`). Ratchets the epoch key forward when
        ``seq`` opens a new epoch; a seq of an epoch already erased is refused
        (:class:`~firewall.model.errors.TamperedLogError`): the log behind it was cut back."""
        if msg is None:  # else the caller has it: u64be(seq) || the hash as bytes
            msg = seq.to_bytes(8, "big") + bytes.fromhex(digest)
        if (seq - 1) // EPOCH_EVENTS != self._epoch_no:
            self._ratchet_to(seq)
        if seq % EPOCH_EVENTS:
            return NO_EPOCH_TAG + self._host(msg)
        return self._epoch(msg) + self._host(msg)

    def close(self, seq: int, digest: str, tag: bytes) -> bytes:
        """``tag`` (of a commit's last event) with its epoch tag: the chain authenticates every
        earlier event of the commit, and the auditor checks each event against the next epoch
        tag of its own epoch (so the tag is also set at every epoch's last event)."""
        if (seq - 1) // EPOCH_EVENTS != self._epoch_no:
            self._ratchet_to(seq)
        return self._epoch(seq.to_bytes(8, "big") + bytes.fromhex(digest)) + tag[32:]

    def _ratchet_to(self, seq: int) -> None:
        keys = self.keys
        epoch = (seq - 1) // EPOCH_EVENTS
        if epoch < keys.epoch:
            raise TamperedLogError(
                seq,
                f"its epoch key ({epoch}) was erased when the sealing key ratcheted to "
                f"epoch {keys.epoch}: the log was cut back behind events the host sealed",
                hint="the store was truncated or replaced: run `gnomon log verify` and "
                "`gnomon doctor`; restore it from a backup",
            )
        keys.advance_to(epoch)
        self._epoch, self._epoch_no = Mac(keys.epoch_key, EPOCH_DOMAIN), keys.epoch

    def check(self, seq: int, digest: str, tag: bytes | None) -> str | None:
        """``None`` if ``tag`` is the host's seal of ``(seq, digest)``, else the problem."""
        if tag is None:
            return _UNSEALED
        if len(tag) != SEAL_BYTES or not hmac.compare_digest(
            tag[32:], self._host(_msg(seq, digest))
        ):
            return _FORGED
        return None

    def row_tag(self, doc: bytes) -> bytes:
        """The seal of a projection row whose stored document is ``doc`` (a belief's row:
        everything a read decides on is in its document, which the read parses)."""
        return self._row(doc)

    def row_problem(self, doc: bytes, tag: bytes | None) -> str | None:
        """``None`` if ``tag`` is the host's seal of the row document ``doc``, else the
        problem."""
        if tag is None:
            return "it carries no seal (written without the host's key)"
        if not hmac.compare_digest(tag, self._row(doc)):
            return "its seal does not verify under the host key (edited or forged)"
        return None

    def verify(self, rows: Iterable[tuple[int, bytes, str, str, bytes | None]]) -> VerifyReport:
        """The chain from genesis and every event's host seal, in one walk over ``(seq, body,
        prev_hash, hash, seal)`` rows: each hash is computed as bytes and reused as the next
        link's input and as its own seal's message (no hex round trip, one pass over the
        store). The report names the first bad seq, as :func:`~firewall.log.events.verify_chain`
        does, with the seal problems of :meth:`check`."""
        expected, prev, prev_raw, count = 1, GENESIS_HASH, bytes.fromhex(GENESIS_HASH), 0
        host = self._host._state.copy
        compare = hmac.compare_digest
        body_state, domain, sha256 = link_state()
        ledger = ErasureLedger()  # erased bodies verify through the digest their marker keeps
        awaiting = ledger.awaiting  # one dict for the walk: a plain event costs a falsy test

        def bad(seq: int, problem: str) -> VerifyReport:
            return VerifyReport(False, count, expected - 1, prev, seq, problem)

        for seq, body, prev_hash, digest, tag in rows:
            if type(body) is not bytes:
                return bad(
                    seq, f"event body is stored as {type(body).__name__}, not bytes (edited?)"
                )
            if seq != expected:
                return bad(
                    expected, f"expected seq {expected}, found {seq} (events missing or reordered)"
                )
            if prev_hash != prev:
                return bad(seq, "prev_hash does not match the previous event")
            place = seq.to_bytes(8, "big")
            inner = body_state()
            inner.update(body)
            raw = sha256(domain + place + prev_raw + inner.digest()).digest()
            if raw.hex() != digest:  # an older hash version, an erased body, or an edit
                if not ledger.holds(seq, prev, body, digest):
                    return bad(
                        ledger.bad_seq, ledger.problem or "hash does not match the event body"
                    )
                raw = bytes.fromhex(digest)
            elif awaiting and seq in awaiting and not ledger.holds(seq, prev, body, digest):
                return bad(ledger.bad_seq, ledger.problem or "hash does not match the event body")
            if tag is None:
                return bad(seq, _UNSEALED)
            mac = host()
            mac.update(place + raw)
            if len(tag) != SEAL_BYTES or not compare(tag[32:], mac.digest()):
                return bad(seq, _FORGED)
            prev, prev_raw = digest, raw
            expected += 1
            count += 1
        missing = ledger.unvouched()
        if missing is not None:
            return VerifyReport(False, count, expected - 1, prev, *missing)
        return VerifyReport(True, count, expected - 1, prev)

    def head_tag(self, seq: int, digest: str) -> bytes:
        """The tag of a head watermark ``(seq, digest)`` (:class:`Watermark`)."""
        return self._head(_msg(seq, digest))


class Auditor:
    """Checks epoch tags from ``k0`` (the verification file), walking epochs forward.

    Forward-secure: a key stolen at epoch ``e`` cannot forge the epoch tag of an event sealed
    before ``e``. Events may come in any order; keys are derived by ratcheting from ``k0``
    (cached per epoch)."""

    def __init__(self, k0: bytes) -> None:
        self._keys = [k0]
        self._macs: dict[int, Mac] = {}

    @classmethod
    def from_file(cls, path: Path) -> Auditor:
        doc = _read_doc(path, VERIFY_FORMAT)
        try:
            return cls(bytes.fromhex(str(doc["k0"])))
        except (KeyError, ValueError) as exc:
            raise KeyFileError(f"verification file {path} is malformed ({exc!r})") from exc

    def _key(self, epoch: int) -> bytes:
        keys = self._keys
        while len(keys) <= epoch:
            keys.append(ratchet(keys[-1]))
        return keys[epoch]

    def check(self, seq: int, digest: str, tag: bytes | None) -> str | None:
        """``None`` if ``tag`` carries an epoch tag that verifies from ``k0``; ``"pending"``
        if it carries none (a later epoch tag of its epoch must cover it, :meth:`walk`);
        else the problem."""
        if tag is None:
            return _UNSEALED
        if len(tag) != SEAL_BYTES:
            return _BAD_AUDIT
        if tag[:32] == NO_EPOCH_TAG:
            return _PENDING
        epoch = epoch_of(seq)
        mac = self._macs.get(epoch)
        if mac is None:
            mac = self._macs[epoch] = Mac(self._key(epoch), EPOCH_DOMAIN)
        if not hmac.compare_digest(tag[:32], mac(_msg(seq, digest))):
            return _BAD_AUDIT
        return None

    def walk(
        self, rows: Iterable[tuple[int, str, bytes | None]], *, limit: int = 100
    ) -> SealReport:
        """Check a whole log in order: every event must carry a valid epoch tag or be covered
        by the next one of its own epoch (the chain, verified separately, links them)."""
        bad: list[tuple[int, str]] = []
        count = bad_count = 0
        pending: list[int] = []
        pending_epoch = -1

        def fail(seq: int, problem: str) -> None:
            nonlocal bad_count
            bad_count += 1
            if len(bad) < limit:
                bad.append((seq, problem))

        for seq, digest, tag in rows:
            count += 1
            epoch = epoch_of(seq)
            if pending and epoch != pending_epoch:
                for waiting in pending:
                    fail(waiting, _UNCOVERED)
                pending = []
            problem = self.check(seq, digest, tag)
            if problem == _PENDING:
                pending.append(seq)
                pending_epoch = epoch
                continue
            if problem is not None:
                for waiting in pending:
                    fail(waiting, _UNCOVERED)
                fail(seq, problem)
            pending = []
        for waiting in pending:
            fail(waiting, _UNCOVERED)
        return SealReport(count, tuple(bad), bad_count)


@dataclass(frozen=True, slots=True)
class SealReport:
    """What :func:`check_seals` found: how many events were checked, how many were bad, and
    the first bad ones (``(seq, problem)``, up to the limit asked for)."""

    events: int
    bad: tuple[tuple[int, str], ...]
    bad_count: int = 0

    @property
    def ok(self) -> bool:
        return not self.bad


def check_seals(
    rows: Iterable[tuple[int, str, bytes | None]],
    checker: Sealer | Auditor,
    *,
    limit: int = 100,
) -> SealReport:
    """Check every ``(seq, hash, seal)`` row; the report names up to ``limit`` bad events."""
    if isinstance(checker, Auditor):
        return checker.walk(rows, limit=limit)
    bad: list[tuple[int, str]] = []
    count = bad_count = 0
    check = checker.check
    for seq, digest, tag in rows:
        count += 1
        problem = check(seq, digest, tag)
        if problem is not None:
            bad_count += 1
            if len(bad) < limit:
                bad.append((seq, problem))
    return SealReport(count, tuple(bad), bad_count)


class Watermark:
    """The sealed head: the highest ``(seq, hash)`` the host committed, in a host-private file.

    Tags do not show that events were *removed* from the tail; this does. Every commit advances
    it (one ``pread`` and one ``pwrite`` of 72 bytes under an ``flock``, after the store's
    transaction), and a store whose head is below it is refused. The record is
    ``u64be(seq) || hash || HMAC(host_key, HEAD_DOMAIN || seq || hash)``."""

    SIZE = 72

    def __init__(self, path: Path | None, sealer: Sealer) -> None:
        self.path = path
        self._sealer = sealer
        self._memory: tuple[int, str] = (0, "")
        self._fd: int | None = None
        if path is not None:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def read(self) -> tuple[int, str]:
        """``(seq, hash)`` of the sealed head; ``(0, "")`` before the first commit."""
        if self._fd is None:
            return self._memory
        raw = os.pread(self._fd, self.SIZE, 0)
        if not raw:
            return (0, "")
        return self._decode(raw)

    def _decode(self, raw: bytes) -> tuple[int, str]:
        seq = int.from_bytes(raw[:8], "big")
        digest = raw[8:40].hex()
        if len(raw) != self.SIZE or not hmac.compare_digest(
            raw[40:], self._sealer.head_tag(seq, digest)
        ):
            raise TamperedLogError(
                seq,
                f"the sealed head watermark {self.path} does not verify",
                hint="it was edited; run `gnomon doctor` and `gnomon log verify`",
            )
        return seq, digest

    def advance(self, seq: int, digest: str) -> None:
        """Record ``(seq, digest)`` as the sealed head unless a later one is recorded."""
        if self._fd is None:
            if seq > self._memory[0]:
                self._memory = (seq, digest)
            return
        fd = self._fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, self.SIZE, 0)
            if raw and int.from_bytes(raw[:8], "big") >= seq:
                return
            record = seq.to_bytes(8, "big") + bytes.fromhex(digest)
            os.pwrite(fd, record + self._sealer.head_tag(seq, digest), 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def problem(self, head_seq: int, head_hash: str) -> str | None:
        """Why a store whose head is ``(head_seq, head_hash)`` is not the one the host sealed
        (``None`` if it is at or past the watermark)."""
        seq, digest = self.read()
        if head_seq < seq:
            return (
                f"the log ends at seq {head_seq} but the host sealed events up to seq {seq}: "
                "events were removed from its tail"
            )
        if head_seq == seq and seq and head_hash != digest:
            return f"the last event (seq {seq}) is not the one the host sealed: it was replaced"
        return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = [
    "EPOCH_EVENTS",
    "KEY_FORMAT",
    "NO_EPOCH_TAG",
    "SEAL_BYTES",
    "VERIFY_FORMAT",
    "Auditor",
    "Mac",
    "SealKeys",
    "SealReport",
    "Sealer",
    "Watermark",
    "check_seals",
    "epoch_of",
    "ratchet",
]
