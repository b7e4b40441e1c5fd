"""Canonical event bytes and the hash chain, independent of any store."""

from __future__ import annotations

from datetime import UTC, datetime

from gnomon.firewall.log.events import GENESIS_HASH, EventDraft, canonical_body, seal, verify_chain

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _chain(n: int) -> list[tuple[int, bytes, str, str]]:
    rows, prev = [], GENESIS_HASH
    for seq in range(1, n + 1):
        event = seal(seq, prev, EventDraft(kind="t", actor="a", at=AT, data={"i": seq, "é": "ü"}))
        rows.append((seq, event.body, event.prev_hash, event.hash))
        prev = event.hash
    return rows


def test_canonical_body_is_sorted_compact_utf8() -> None:
    body = canonical_body(1, EventDraft(kind="k", actor="a", at=AT, data={"b": 1, "a": "é"}))
    assert body.startswith(b'{"actor":"a","at":"2026-11-22T12:00:00.000000Z"')
    assert '"payload":{"a":"é","b":1}'.encode() in body
    assert b" " not in body


def test_verify_ok_and_each_kind_of_tamper() -> None:
    rows = _chain(5)
    assert verify_chain(rows).ok and verify_chain(rows).events == 5

    edited = list(rows)
    seq, body, prev, digest = edited[2]
    edited[2] = (seq, body.replace(b'"i":3', b'"i":4'), prev, digest)
    report = verify_chain(edited)
    assert (report.ok, report.first_bad_seq) == (False, 3)

    assert verify_chain(rows[:2] + rows[3:]).first_bad_seq == 3  # deleted
    swapped = [rows[0], rows[2], rows[1], *rows[3:]]
    assert verify_chain(swapped).first_bad_seq == 2  # reordered
    renumbered = [*rows[:1], (2, *rows[1][1:]), *rows[2:]]
    assert verify_chain(renumbered).ok  # same seq, no change
    relinked = [rows[0], (2, rows[2][1], rows[0][3], rows[2][3])]
    assert verify_chain(relinked).first_bad_seq == 2  # spliced body under another seq
