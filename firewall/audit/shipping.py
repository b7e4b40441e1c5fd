"""Session shipping: an NDJSON export that redacts above a sensitivity ceiling and still verifies.

An export leaves the host: to a SIEM, an incident tracker, another team. Text labelled above the
ceiling the operator names must not leave with it, yet whoever receives the file must still be
able to check it is the log, whole and in order. Hash version 2 (:mod:`firewall.log.events`) makes
this possible: an event's link covers a digest of its body, so a shipped event above the ceiling
carries the digest in place of the body (:class:`~firewall.log.events.RedactedBody`) and the chain,
and every checkpoint in it, verifies as before (``gnomon log verify --file``). Changing a kept
body, a digest, a hash, or dropping or reordering an event breaks it.

Redaction is per event, and an event is redacted for one of three reasons (counted by reason
in :class:`Shipment`):

* ``label``: a record it carries (an observation, claim or belief snapshot, an import batch's
  rows included) is labelled above the ceiling;
* ``credential``: a string in it that is not structural, in a labelled record or not, holds a
  credential (:func:`~firewall.audit.credentials.credential_kinds`), whatever its label says;
* ``log_above_ceiling``: the export holds a record above the ceiling anywhere, and this event
  carries free text (:func:`~firewall.audit.free_text.scan_payload`, by default-deny): text
  without a label (a recall's query, an action's arguments, a decision's summary, a reason, an
  origin id), or the text of a labelled record the agent wrote (its origin includes the
  ``agent`` class: a note it remembered, a call it reported). A hostile agent can put what it
  read into any of these, in any session (and label its note ``public`` in a session that read
  nothing), so they take the sensitivity of the whole log.

So the export takes two passes over the store's rows (:func:`ship` takes a function that
yields them, ``store.chain_rows``): the first finds the events whose records are above the
ceiling (it keeps only their sequence numbers), the second writes, up to the same head. A log
with nothing above the ceiling ships with only credentials redacted. Whoever holds the full log
can show a redacted event's body matches its digest. An event written under hash version 1
cannot be redacted this way, and shipping one that must be redacted is refused
(:class:`~firewall.model.errors.RedactionError`) rather than leaked or broken.

What this does not withhold: text copied into a record of another origin (a user's, a tool's,
an import's) labelled at or below the ceiling (the label is the promise; a credential is still
found). Nor what structural fields (which ids an event names, how many there are) could encode.
An agent's own writes make no such promise: within a session their label is at least the
highest sensitivity the session has read (:attr:`Session.sensitivity
<firewall.host.session.Session.sensitivity>`), but text carried from one session into another by
the agent's own memory is beyond that floor, so shipping judges them as free text. What it
costs: in a log holding any record above the ceiling, almost every event an agent's session
writes carries some free text (a tool name, a query, its notes) and is withheld, so such a
shipment says what happened (kinds, ids, states, times, sessions opening and closing; the text
of users', tools' and imports' records at or below the ceiling), not what the agent asked or
wrote.

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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall.audit.credentials import credential_kinds_memo
from gnomon.firewall.audit.free_text import scan_payload
from gnomon.firewall.log.checkpoints import Checkpoint, LogVerifyReport, verify_log
from gnomon.firewall.log.events import (
    Body,
    RedactedBody,
    body_digest,
    chain_hash,
    digest_link,
    erased_marker,
    records_from_payload,
)
from gnomon.firewall.log.ndjson import export_to_file, header_line, parse, read_file, write_export
from gnomon.firewall.log.seal import Auditor, SealReport
from gnomon.firewall.model.errors import InputError, LogFormatError, RedactionError
from gnomon.firewall.model.states import Sensitivity

#: ``(seq, body, prev_hash, hash)``, or with the event's seal after them (kept lines carry it).
Row = tuple[int, bytes, str, str] | tuple[int, bytes, str, str, bytes | None]
#: Where a shipment reads the log from, once per pass: e.g. ``store.sealed_rows``.
Rows = Callable[[], Iterable[Row]]

#: Why an event was redacted (:attr:`Shipment.reasons`).
LABEL = "label"
CREDENTIAL = "credential"
LOG_ABOVE_CEILING = "log_above_ceiling"


def above(level: Sensitivity, ceiling: Sensitivity) -> bool:
    """Is ``level`` above ``ceiling`` (so redacted when shipped)?"""
    return level.rank > ceiling.rank


def event_sensitivity(body: bytes) -> Sensitivity:
    """The highest sensitivity among the records an event body carries (public if none).

    Records are read through :func:`~firewall.log.events.records_from_payload`, the path the
    rebuild uses, so every form a body may take (an import batch's template and rows included)
    is judged by the records it stands for, not by where a label happens to sit in the JSON.
    """
    return payload_sensitivity(_payload(orjson.loads(body)))


def _payload(doc: Any) -> dict[str, Any]:
    payload = doc.get("payload") if isinstance(doc, dict) else None
    return payload if isinstance(payload, dict) else {}


def payload_sensitivity(payload: dict[str, Any]) -> Sensitivity:
    """:func:`event_sensitivity` of a parsed payload."""
    if not payload:
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
    """What one shipped export held: events written, which were redacted, and why (counts by
    reason: :data:`LABEL`, :data:`CREDENTIAL`, :data:`LOG_ABOVE_CEILING`)."""

    ceiling: Sensitivity
    events: int = 0
    redacted_seqs: list[int] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    #: Does the log hold any record above the ceiling (so its free text is redacted too)?
    above_ceiling: bool = False

    @property
    def redacted(self) -> int:
        return len(self.redacted_seqs)

    def to_json(self) -> dict[str, object]:
        return {
            "events": self.events,
            "redacted": self.redacted,
            "reasons": dict(sorted(self.reasons.items())),
            "sensitivity_ceiling": self.ceiling.value,
        }


def _survey(rows: Iterable[Row], ceiling: Sensitivity) -> tuple[dict[int, Sensitivity], int]:
    """Pass one: the events whose records are above ``ceiling`` (seq to level), and the last
    seq, so pass two stops at the same head even if the log grows meanwhile."""
    above_seqs: dict[int, Sensitivity] = {}
    last = 0
    for seq, body, *_ in rows:
        last = seq
        level = event_sensitivity(body)
        if above(level, ceiling):
            above_seqs[seq] = level
    return above_seqs, last


def _why(body: bytes, level: Sensitivity | None, tainted: bool) -> str | None:
    """Why this event must be redacted, or None to keep it."""
    if level is not None:
        return LABEL
    scan = scan_payload(_payload(orjson.loads(body)))
    if any(credential_kinds_memo(text) for text in scan.texts):
        return CREDENTIAL
    if tainted and scan.free:
        return LOG_ABOVE_CEILING
    return None


_NOTES = {
    CREDENTIAL: "a credential in its text",
    LOG_ABOVE_CEILING: (
        "unlabelled or agent-written text in a log holding records above the {ceiling} ceiling"
    ),
}


def redact_rows(
    rows: Rows, shipment: Shipment
) -> Iterator[tuple[int, Body, str, str] | tuple[int, Body, str, str, bytes | None]]:
    """The log from ``rows()`` with every event that must not leave replaced by its digest
    (two passes over ``rows()``; see the module docstring for the rule)."""
    if not callable(rows):
        raise InputError(
            f"shipping reads the log twice, so it needs a function that yields the rows, "
            f"not a {type(rows).__name__}",
            hint="pass store.chain_rows (not store.chain_rows())",
        )
    ceiling = shipment.ceiling
    above_seqs, last = _survey(rows(), ceiling)
    shipment.above_ceiling = bool(above_seqs)
    for row in rows():
        seq, body, prev_hash, digest = row[:4]
        if seq > last:
            break
        shipment.events += 1
        marker = erased_marker(body)
        if marker is not None and digest_link(seq, prev_hash, marker["body_digest"]) == digest:
            # an erased event ships as the digest the chain keeps: its erased body is vouched
            # for by an erasure event the shipment may redact, so it never ships at all
            shipment.redacted_seqs.append(seq)
            note = f"erased on {marker.get('on')} by {marker.get('grant')}"
            yield seq, RedactedBody(marker["body_digest"], note), prev_hash, digest
            continue
        level = above_seqs.get(seq)
        why = _why(body, level, shipment.above_ceiling)
        if why is None:
            yield row  # whole, its seal included
            continue
        if level is not None:
            note = f"{level.value} records above the {ceiling.value} ceiling"
        else:
            note = _NOTES[why].format(ceiling=ceiling.value)
        if chain_hash(seq, prev_hash, body) != digest:
            raise RedactionError(
                seq,
                f"must be redacted ({note}) but was written under hash version 1, whose link "
                "needs the whole body: it cannot be redacted and still verify (ship with a "
                "higher ceiling, or keep this log in-house)",
            )
        shipment.redacted_seqs.append(seq)
        shipment.reasons[why] += 1
        yield seq, RedactedBody(body_digest(body), note), prev_hash, digest


def _header(ceiling: Sensitivity) -> bytes:
    return header_line(sensitivity_ceiling=ceiling.value)


def ship(rows: Rows, out: IO[bytes], ceiling: Sensitivity) -> Shipment:
    """Write a shipped export of the log ``rows()`` yields to a binary stream."""
    shipment = Shipment(ceiling)
    write_export(redact_rows(rows, shipment), out, _header(ceiling))
    return shipment


def ship_to_file(rows: Rows, path: str | os.PathLike[str], ceiling: Sensitivity) -> Shipment:
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


def file_seal_report(path: str | os.PathLike[str], auditor: Auditor) -> SealReport:
    """The seals an export's lines carry (``gnomon log export`` of a sealed store writes each
    event's), checked by ``auditor`` from its ``k_0``: every event must carry a valid epoch tag
    or be chained to a later one of its epoch (:meth:`~firewall.log.seal.Auditor.walk`; the
    chain itself is checked by :func:`verify_file`). A line with no seal (a redacted event of a
    shipped export, an export of an unsealed store) is reported unsealed."""
    parsed = parse(read_file(path), str(path))
    return auditor.walk((line.seq, line.hash, line.seal) for line in parsed.lines)


__all__ = [
    "CREDENTIAL",
    "LABEL",
    "LOG_ABOVE_CEILING",
    "Rows",
    "Shipment",
    "above",
    "event_sensitivity",
    "file_seal_report",
    "payload_sensitivity",
    "redact_rows",
    "ship",
    "ship_to_file",
    "verify_file",
]
