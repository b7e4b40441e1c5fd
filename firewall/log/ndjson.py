"""NDJSON: the portable form of the event log (export, import, and the ``memory:///file`` log).

One event per line, keys sorted::

    {"format":"gnomon.events","schema":1,"version":1}                 optional header, first line
    {"body":"{\\"actor\\":…}","hash":"…","prev_hash":"…","seq":1}
    {"body":"…","hash":"…","more":true,"prev_hash":"…","seq":2}

``body`` is the event's canonical body *as a JSON string*: decoding the line and encoding the
string as UTF-8 gives back the exact bytes that were hashed, so a file verifies without trusting
any JSON library's re-encoding. A shipped export (``gnomon log export --sensitivity-ceiling``,
:mod:`firewall.audit.shipping`) replaces a body above the ceiling by its digest::

    {"body_digest":"…","hash":"…","prev_hash":"…","redacted":"why","seq":3}

which verifies (hash version 2 links cover the digest, :mod:`firewall.log.events`) but cannot be
imported or replayed. ``more: true`` appears only in a file log: the event belongs to a
commit that continues on the next line, which lets a reader recognise a commit torn by a crash
(see :class:`firewall.store.ndjson_file.FileLogStore`). Exports never write it. ``seal`` (hex)
is the host's seal of the event (:mod:`firewall.log.seal`), written by a file log and by an
export for its auditor; a line without one reads as an unsealed event.

Reading is strict and names the line: a line without its newline (a truncated file or a torn
write), invalid UTF-8, JSON that is not one of these objects, an unknown format version or event
schema version, a seq out of order, or a hash that does not match all raise
:class:`~firewall.model.errors.LogFormatError` (or
:class:`~firewall.model.errors.LogIntegrityError`), never
a traceback. :func:`read_events` reads and verifies a *whole* file before returning anything, so
an import that fails imports nothing.

>>> line = encode_line(1, "0" * 64, "ab" * 32, b'{"k":"\\xc3\\xa9"}')
>>> parse_line(line[:-1], 1, "x").body == b'{"k":"\\xc3\\xa9"}'
True
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from gnomon.firewall.log.events import (
    GENESIS_HASH,
    KNOWN_SCHEMAS,
    SCHEMA_VERSION,
    Body,
    ErasureLedger,
    Event,
    RedactedBody,
)
from gnomon.firewall.model.errors import InputError, LogFormatError

FORMAT = "gnomon.events"
FORMAT_VERSION = 1

#: A row to export: ``(seq, body, prev_hash, hash)``, or with the event's seal after them.
Row = tuple[int, Body, str, str] | tuple[int, Body, str, str, bytes | None]

_KEYS = frozenset({"seq", "prev_hash", "hash", "body"})
_REDACTED_KEYS = frozenset({"seq", "prev_hash", "hash", "body_digest", "redacted"})
_OPTIONAL = frozenset({"more", "seal"})
_HEX = frozenset("0123456789abcdef")


def header_line(**extra: str) -> bytes:
    """The header line; ``extra`` adds notes a reader shows (a shipped export's ceiling)."""
    doc = {**extra, "format": FORMAT, "version": FORMAT_VERSION, "schema": SCHEMA_VERSION}
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) + b"\n"


def encode_line(
    seq: int,
    prev_hash: str,
    digest: str,
    body: bytes,
    *,
    more: bool = False,
    seal: bytes | None = None,
) -> bytes:
    """One event line, newline included (``seal``: the host's seal, written as hex)."""
    doc: dict[str, Any] = {
        "seq": seq,
        "prev_hash": prev_hash,
        "hash": digest,
        "body": body.decode("utf-8"),
    }
    if more:
        doc["more"] = True
    if seal is not None:
        doc["seal"] = seal.hex()
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) + b"\n"


def encode_redacted_line(seq: int, prev_hash: str, digest: str, body: RedactedBody) -> bytes:
    """One redacted event line: the body's digest in place of the body."""
    doc = {
        "seq": seq,
        "prev_hash": prev_hash,
        "hash": digest,
        "body_digest": body.digest,
        "redacted": body.reason,
    }
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) + b"\n"


@dataclass(frozen=True, slots=True)
class LogLine:
    """One parsed event line: the raw material of verification, plus its place in the file."""

    line: int
    seq: int
    prev_hash: str
    hash: str
    #: The body's bytes, or only its digest on a redacted line of a shipped export.
    body: Body
    more: bool = False
    #: Byte offset of the line's first byte in its file.
    start: int = 0
    #: The host's seal of the event, if the line carries one.
    seal: bytes | None = None

    def row(self) -> tuple[int, Body, str, str]:
        return self.seq, self.body, self.prev_hash, self.hash

    def event(self, source: str) -> Event:
        """The sealed event; checks the body is a known schema version. A redacted line has no
        event to give: a shipped export verifies, but cannot be imported or replayed."""
        if isinstance(self.body, RedactedBody):
            raise LogFormatError(
                source,
                self.line,
                "the event is redacted (a shipped export keeps only its body's digest): it "
                "verifies with `gnomon log verify --file` but cannot be imported or replayed",
                seq=self.seq,
            )
        try:
            doc = orjson.loads(self.body)
        except orjson.JSONDecodeError as exc:
            raise LogFormatError(
                source, self.line, f"the event body is not JSON ({exc})", seq=self.seq
            ) from exc
        if not isinstance(doc, dict):
            raise LogFormatError(source, self.line, "the event body is not an object", seq=self.seq)
        schema = doc.get("schema")
        if schema not in KNOWN_SCHEMAS:
            raise LogFormatError(
                source,
                self.line,
                f"unknown event schema version {schema!r} (this gnomon reads "
                f"{', '.join(str(v) for v in sorted(KNOWN_SCHEMAS))}); upgrade gnomon",
                seq=self.seq,
            )
        if doc.get("seq") != self.seq:
            raise LogFormatError(
                source,
                self.line,
                f"the body says seq {doc.get('seq')!r}, the line says {self.seq}",
                seq=self.seq,
            )
        try:
            return Event.from_doc(self.seq, doc, self.body, self.prev_hash, self.hash, self.seal)
        except KeyError as exc:
            raise LogFormatError(
                source, self.line, f"the event body has no {exc.args[0]!r}", seq=self.seq
            ) from exc


def _is_hash(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def parse_line(raw: bytes, line: int, source: str, start: int = 0) -> LogLine:
    """One line (without its newline) → :class:`LogLine`, or a :class:`LogFormatError`."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise LogFormatError(
                source, line, f"not valid UTF-8 (byte {bad.start} of the line)"
            ) from exc
        raise LogFormatError(source, line, f"not a JSON document ({exc})") from exc
    seq = doc.get("seq") if isinstance(doc, dict) else None
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise LogFormatError(source, line, "not an event line (no positive integer 'seq')")
    assert isinstance(doc, dict)
    keys = set(doc)
    if keys == _REDACTED_KEYS:
        return _redacted_line(doc, line, source, start)
    if not keys >= _KEYS or keys - _KEYS - _OPTIONAL:
        missing, extra = sorted(_KEYS - keys), sorted(keys - _KEYS - _OPTIONAL)
        raise LogFormatError(
            source, line, f"event line keys are wrong (missing {missing}, unknown {extra})", seq=seq
        )
    if not _is_hash(doc["prev_hash"]) or not _is_hash(doc["hash"]):
        raise LogFormatError(source, line, "hashes must be 64 lowercase hex digits", seq=seq)
    text, more = doc["body"], doc.get("more", False)
    if not isinstance(text, str) or not isinstance(more, bool):
        raise LogFormatError(source, line, "'body' must be a string, 'more' a boolean", seq=seq)
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LogFormatError(source, line, "the body holds an unpaired surrogate", seq=seq) from exc
    seal = doc.get("seal")
    if seal is not None:
        if not isinstance(seal, str) or len(seal) != 128 or not set(seal) <= _HEX:
            raise LogFormatError(source, line, "'seal' must be 128 lowercase hex digits", seq=seq)
        seal = bytes.fromhex(seal)
    return LogLine(line, seq, doc["prev_hash"], doc["hash"], body, more, start, seal)


def _redacted_line(doc: dict[str, Any], line: int, source: str, start: int) -> LogLine:
    seq = doc["seq"]
    if not all(_is_hash(doc[k]) for k in ("prev_hash", "hash", "body_digest")):
        raise LogFormatError(source, line, "hashes must be 64 lowercase hex digits", seq=seq)
    if not isinstance(doc["redacted"], str):
        raise LogFormatError(source, line, "'redacted' must be a string", seq=seq)
    body = RedactedBody(doc["body_digest"], doc["redacted"])
    return LogLine(line, seq, doc["prev_hash"], doc["hash"], body, False, start)


def check_header(raw: bytes, source: str) -> bool:
    """True if ``raw`` (the first line) is a header this version reads; False if it is an
    event line; :class:`LogFormatError` if it is a header of another format or version."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False  # parse_line names the problem
    if not isinstance(doc, dict) or "format" not in doc:
        return False
    if doc.get("format") != FORMAT:
        raise LogFormatError(source, 1, f"not a Gnomon event log (format {doc.get('format')!r})")
    if doc.get("version") != FORMAT_VERSION:
        raise LogFormatError(
            source,
            1,
            f"unknown log format version {doc.get('version')!r} (this gnomon reads "
            f"{FORMAT_VERSION}); upgrade gnomon",
        )
    return True


@dataclass(frozen=True, slots=True)
class Parsed:
    """A file split into event lines. ``torn`` is the byte offset of an incomplete last line
    (no newline), ``None`` if the file ends cleanly; ``end`` is where the complete lines end."""

    lines: list[LogLine]
    header: bool
    torn: int | None
    end: int


def parse(data: bytes, source: str, *, first_line: int = 1, offset: int = 0) -> Parsed:
    """Split ``data`` (the file from byte ``offset``, which starts line ``first_line``)."""
    header = False
    lines: list[LogLine] = []
    pos = 0
    number = first_line
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return Parsed(lines, header, offset + pos, offset + pos)
        raw = data[pos:nl]
        if number == 1 and check_header(raw, source):
            header = True
        elif raw.strip():
            lines.append(parse_line(raw, number, source, offset + pos))
        else:
            raise LogFormatError(source, number, "empty line")
        pos = nl + 1
        number += 1
    return Parsed(lines, header, None, offset + pos)


def verify_lines(
    lines: Iterable[LogLine], source: str, *, seq: int = 0, prev: str = GENESIS_HASH
) -> tuple[int, str]:
    """Check the lines continue the chain at ``(seq, prev)``; return the new head."""
    ledger = ErasureLedger()
    link_holds = ledger.holds
    for item in lines:
        if item.seq != seq + 1:
            raise LogFormatError(
                source,
                item.line,
                f"expected seq {seq + 1}, found {item.seq} (events missing, duplicated or "
                "reordered)",
                seq=item.seq,
            )
        if item.prev_hash != prev:
            raise LogFormatError(
                source, item.line, "prev_hash does not match the previous event", seq=item.seq
            )
        if not link_holds(item.seq, prev, item.body, item.hash):
            problem = ledger.problem or "hash does not match the event body (edited?)"
            raise LogFormatError(source, item.line, problem, seq=item.seq)
        seq, prev = item.seq, item.hash
    missing = ledger.unvouched()
    if missing is not None:
        raise LogFormatError(source, 0, missing[1], seq=missing[0])
    return seq, prev


def read_file(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_events(
    data: bytes, source: str, *, head: tuple[int, str] = (0, GENESIS_HASH)
) -> list[Event]:
    """Parse and verify a whole NDJSON export against a target whose chain head is ``head``.

    Events the target already holds (seq ≤ head) must be exactly the target's: the file's event
    at the head's seq must carry the head's hash (the chain then vouches for every earlier one);
    they are skipped. The rest must continue the chain. Nothing is returned unless every line
    is valid.
    """
    parsed = parse(data, source)
    if parsed.torn is not None:
        line = 1 + data.count(b"\n", 0, parsed.torn)
        raise LogFormatError(
            source,
            line,
            "the last line is incomplete (no newline at the end): the file is truncated",
        )
    lines = parsed.lines
    if not lines:
        return []
    first = lines[0]
    start = (first.seq - 1, first.prev_hash)
    if first.seq == 1 and first.prev_hash != GENESIS_HASH:
        raise LogFormatError(source, first.line, "seq 1 does not start from genesis", seq=1)
    verify_lines(lines, source, seq=start[0], prev=start[1])
    head_seq, head_hash = head
    if first.seq > head_seq + 1:
        raise LogFormatError(
            source,
            first.line,
            f"the file starts at seq {first.seq} but the target log ends at seq {head_seq}: "
            "events would be missing",
            seq=first.seq,
        )
    if lines[-1].seq < head_seq:
        raise LogFormatError(
            source,
            lines[-1].line,
            f"the file ends at seq {lines[-1].seq}, before the target log's head {head_seq}: "
            "it cannot be checked against the target and holds nothing new",
            seq=lines[-1].seq,
        )
    if head_seq:
        matching = next((x for x in lines if x.seq == head_seq), None)
        at_head = matching.hash if matching is not None else start[1]
        if at_head != head_hash:
            bad = matching or first
            raise LogFormatError(
                source,
                bad.line,
                f"the file does not continue the target log: at seq {head_seq} the target has "
                f"hash {head_hash[:16]}…, the file {at_head[:16]}…",
                seq=head_seq,
            )
    return [x.event(source) for x in lines if x.seq > head_seq]


def export_lines(rows: Iterable[Row], header: bytes | None = None) -> Iterator[bytes]:
    """The header, then one line per ``(seq, body, prev_hash, hash)`` row, or ``(seq, body,
    prev_hash, hash, seal)`` row whose seal the line carries (a
    :class:`~firewall.log.events.RedactedBody` becomes a redacted line, which carries none)."""
    yield header_line() if header is None else header
    for row in rows:
        seq, body, prev_hash, digest = row[:4]
        if isinstance(body, RedactedBody):
            yield encode_redacted_line(seq, prev_hash, digest, body)
        else:
            seal = row[4] if len(row) > 4 else None
            yield encode_line(seq, prev_hash, digest, body, seal=seal)


def write_export(rows: Iterable[Row], out: IO[bytes], header: bytes | None = None) -> int:
    """Write an export to a binary stream; returns how many events were written."""
    count = -1
    buffer: list[bytes] = []
    for count, line in enumerate(export_lines(rows, header)):  # noqa: B007
        buffer.append(line)
        if len(buffer) >= 4096:
            out.write(b"".join(buffer))
            buffer.clear()
    out.write(b"".join(buffer))
    return count


def export_to_file(
    rows: Iterable[Row],
    path: str | os.PathLike[str],
    header: bytes | None = None,
) -> int:
    """Write an export atomically: a temporary file in the same directory, fsynced, renamed."""
    target = Path(path)
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            count = write_export(rows, out, header)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "KNOWN_SCHEMAS",
    "LogLine",
    "Parsed",
    "check_header",
    "encode_line",
    "encode_redacted_line",
    "export_lines",
    "export_to_file",
    "header_line",
    "parse",
    "parse_line",
    "read_events",
    "read_file",
    "verify_lines",
    "write_export",
]
