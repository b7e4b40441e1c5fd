"""Session shipping: an NDJSON export that redacts above a sensitivity ceiling and still verifies.

An export leaves the host: to a SIEM, an incident tracker, another team. Text labelled above the
ceiling the operator names must not leave with it, yet whoever receives the file must still be
able to check it is the log, whole and in order. Hash version 2 (:mod:`firewall.log.events`) makes
this possible: an event's link covers a digest of its body, so a shipped event above the ceiling
carries the digest in place of the body (:class:`~firewall.log.events.RedactedBody`) and the chain,
and every checkpoint in it, verifies as before (``gnomon log verify --file``). Changing a kept
body, a digest, a hash, or dropping or reordering an event breaks it.

Redaction is per event: an event is redacted when any record it carries (an observation, claim
or belief snapshot, an import batch's rows included) is labelled above the ceiling. Whoever holds
the full log can show a redacted event's body matches its digest. An event written under hash
version 1 cannot be redacted this way, and shipping one above the ceiling is refused
(:class:`~firewall.model.errors.RedactionError`) rather than leaked or broken.

What a shipped file does not prove: *who* redacted. Anyone on the way can replace a kept body by
its digest and the file still verifies (it loses information, it cannot gain any: a digest has no
body but its own). The ``redacted`` note on a line and the ceiling in the header are not covered
by the hash; the holder of the full log can show any redacted body.

>>> from gnomon.firewall.model.states import Sensitivity
>>> above(Sensitivity.SECRET, Sensitivity.INTERNAL), above(Sensitivity.PUBLIC, Sensitivity.INTERNAL)
(True, False)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall.log.checkpoints import Checkpoint, LogVerifyReport, verify_log
from gnomon.firewall.log.events import (
    Body,
    RedactedBody,
    body_digest,
    chain_hash,
    records_from_payload,
)
from gnomon.firewall.log.ndjson import export_to_file, header_line, parse, read_file, write_export
from gnomon.firewall.model.errors import LogFormatError, RedactionError
from gnomon.firewall.model.states import Sensitivity

Row = tuple[int, bytes, str, str]


def above(level: Sensitivity, ceiling: Sensitivity) -> bool:
    """Is ``level`` above ``ceiling`` (so redacted when shipped)?"""
    return level.rank > ceiling.rank


def event_sensitivity(body: bytes) -> Sensitivity:
    """The highest sensitivity among the records an event body carries (public if none).

    Records are read through :func:`~firewall.log.events.records_from_payload`, the path the
    rebuild uses, so every form a body may take (an import batch's template and rows included)
    is judged by the records it stands for, not by where a label happens to sit in the JSON.
    """
    doc = orjson.loads(body)
    payload = doc.get("payload") if isinstance(doc, dict) else None
    if not isinstance(payload, dict):
        return Sensitivity.PUBLIC
    records = records_from_payload(payload)
    levels = [
        *(r.sensitivity for r in records.observations),
        *(r.sensitivity for r in records.claims),
        *(r.sensitivity for r in records.beliefs),
    ]
    return max(levels, key=lambda level: level.rank, default=Sensitivity.PUBLIC)


@dataclass(slots=True)
class Shipment:
    """What one shipped export held: events written, how many were redacted, and their seqs."""

    ceiling: Sensitivity
    events: int = 0
    redacted_seqs: list[int] = field(default_factory=list)

    @property
    def redacted(self) -> int:
        return len(self.redacted_seqs)

    def to_json(self) -> dict[str, object]:
        return {
            "events": self.events,
            "redacted": self.redacted,
            "sensitivity_ceiling": self.ceiling.value,
        }


def redact_rows(rows: Iterable[Row], shipment: Shipment) -> Iterator[tuple[int, Body, str, str]]:
    """``rows`` with every body above ``shipment.ceiling`` replaced by its digest."""
    ceiling = shipment.ceiling
    for seq, body, prev_hash, digest in rows:
        shipment.events += 1
        level = event_sensitivity(body)
        if not above(level, ceiling):
            yield seq, body, prev_hash, digest
            continue
        if chain_hash(seq, prev_hash, body) != digest:
            raise RedactionError(
                seq,
                f"holds {level.value} records, above the {ceiling.value} ceiling, but was "
                "written under hash version 1, whose link needs the whole body: it cannot be "
                "redacted and still verify (ship with a ceiling of "
                f"{level.value}, or keep this log in-house)",
            )
        shipment.redacted_seqs.append(seq)
        note = f"{level.value} records above the {ceiling.value} ceiling"
        yield seq, RedactedBody(body_digest(body), note), prev_hash, digest


def _header(ceiling: Sensitivity) -> bytes:
    return header_line(sensitivity_ceiling=ceiling.value)


def ship(rows: Iterable[Row], out: IO[bytes], ceiling: Sensitivity) -> Shipment:
    """Write a shipped export of ``rows`` to a binary stream."""
    shipment = Shipment(ceiling)
    write_export(redact_rows(rows, shipment), out, _header(ceiling))
    return shipment


def ship_to_file(
    rows: Iterable[Row], path: str | os.PathLike[str], ceiling: Sensitivity
) -> Shipment:
    """Write a shipped export atomically (nothing is left behind when it is refused)."""
    shipment = Shipment(ceiling)
    export_to_file(redact_rows(rows, shipment), path, _header(ceiling))
    return shipment


def verify_file(
    path: str | os.PathLike[str],
    *,
    keys: Iterable[Ed25519PublicKey] = (),
    checkpoint: Checkpoint | None = None,
) -> LogVerifyReport:
    """Verify an NDJSON export, shipped (redacted) or whole, from genesis, with its checkpoints
    (:func:`~firewall.log.checkpoints.verify_log`); ``redacted`` in the report counts the events
    that verified from their digest alone. A malformed or truncated file is a typed error."""
    source = str(path)
    data = read_file(path)
    parsed = parse(data, source)
    if parsed.torn is not None:
        line = 1 + data.count(b"\n", 0, parsed.torn)
        raise LogFormatError(source, line, "the last line is incomplete: the file is truncated")
    pinned = list(keys)
    rows = (line.row() for line in parsed.lines)
    return verify_log(rows, keys=pinned, checkpoint=checkpoint, require_tail=bool(pinned))


__all__ = [
    "Shipment",
    "above",
    "event_sensitivity",
    "redact_rows",
    "ship",
    "ship_to_file",
    "verify_file",
]
