"""Checkpoints at their boundaries: the tail a checkpoint covers, and what its signature covers.

The attacker can write the store (append, truncate, re-chain) but has no checkpoint key. Each
test pins both sides of one comparison in :func:`verify_log` (issue 28's survivors): the last
event covered by the last pinned checkpoint passes ``require_tail``, one event more fails it; a
checkpoint file at the log's last seq verifies, the same file against a log one event shorter
reports a truncation; every field a checkpoint names is covered by its signature, the store's
identity included. The FLIP of each refusal is its other side, in the same test.
"""

from __future__ import annotations

import pytest

from gnomon.firewall.log.checkpoints import (
    CHECKPOINT_DOMAIN,
    Checkpoint,
    CheckpointSigner,
    checkpoint_bytes,
    store_identity,
    verify_log,
    write_checkpoint,
)
from gnomon.firewall.model.errors import CheckpointError
from gnomon.firewall.store.memory import MemoryStore
from tests.factories import T0, at, make_draft

SIGNER = CheckpointSigner.generate()
KEYS = [SIGNER.public_key]


def _events(store: MemoryStore, count: int, start: int = 0) -> None:
    store.commit(
        [
            make_draft(kind="test.note", at=at(seconds=start + i), data={"i": start + i})
            for i in range(count)
        ]
    )


def _checkpointed(events: int) -> MemoryStore:
    """``events`` events, then a checkpoint event signing the head before it."""
    store = MemoryStore()
    _events(store, events)
    write_checkpoint(store, SIGNER, now=T0)
    return store


@pytest.mark.parametrize("events", [1, 5])
def test_one_event_after_the_last_checkpoint_fails_require_tail(events: int) -> None:
    store = _checkpointed(events)
    covered = verify_log(store.chain_rows(), keys=KEYS, require_tail=True)
    assert covered.ok and covered.uncovered == 0, covered.problem  # FLIP: the covered tail
    assert covered.signed_through == events
    _events(store, 1, start=events)  # appended by someone without the key
    report = verify_log(store.chain_rows(), keys=KEYS, require_tail=True)
    assert not report.ok and report.uncovered == 1
    assert report.first_bad_seq == events + 2
    with pytest.raises(CheckpointError, match="come after the last checkpoint"):
        report.raise_for_problem()
    assert verify_log(store.chain_rows(), keys=KEYS).ok  # only require_tail asks for the tail


def test_require_tail_needs_a_pinned_key_to_mean_anything() -> None:
    store = _checkpointed(3)
    _events(store, 2, start=3)
    assert verify_log(store.chain_rows(), require_tail=True).ok  # nothing pinned, nothing asked
    assert not verify_log(store.chain_rows(), keys=KEYS, require_tail=True).ok


def test_a_checkpoint_file_over_the_last_event_covers_the_tail() -> None:
    store = MemoryStore()
    _events(store, 4)
    seq, head = store.head()
    file_cp = SIGNER.sign(store.url, seq, head, now=T0)
    report = verify_log(store.chain_rows(), keys=KEYS, checkpoint=file_cp, require_tail=True)
    assert report.ok and report.signed_through == 4, report.problem
    _events(store, 1, start=4)
    report = verify_log(store.chain_rows(), keys=KEYS, checkpoint=file_cp, require_tail=True)
    assert not report.ok and report.uncovered == 1


def test_a_log_one_event_shorter_than_its_checkpoint_file_is_truncated() -> None:
    store = MemoryStore()
    _events(store, 6)
    seq, head = store.head()
    file_cp = SIGNER.sign(store.url, seq, head, now=T0)
    rows = list(store.chain_rows())
    assert verify_log(rows, keys=KEYS, checkpoint=file_cp).ok  # FLIP: the whole log
    report = verify_log(rows[:-1], keys=KEYS, checkpoint=file_cp)
    assert not report.ok and report.checkpoint_failure
    assert report.first_bad_seq == 6 and "truncated" in (report.problem or "")


def test_a_checkpoint_of_the_empty_log_is_checked_too() -> None:
    store = MemoryStore()
    seq, head = store.head()
    assert seq == 0
    genesis = SIGNER.sign(store.url, 0, head, now=T0)
    _events(store, 2)
    assert verify_log(store.chain_rows(), keys=KEYS, checkpoint=genesis).ok
    forged = genesis.model_copy(update={"head_hash": "0" * 63 + "1"})
    report = verify_log(store.chain_rows(), keys=KEYS, checkpoint=forged)
    assert not report.ok and report.checkpoint_failure


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("store", "sqlite:///elsewhere.db"),
        ("seq", 7),
        ("head_hash", "f" * 64),
        ("at", "2030-01-01T00:00:00.000000Z"),
    ],
)
def test_the_signature_covers_every_field_the_store_identity_included(
    field: str, value: object
) -> None:
    cp = SIGNER.sign("sqlite:///shop.db", 6, "e" * 64, now=T0)
    assert cp.verify_signature(KEYS) is None  # FLIP: as signed
    edited = Checkpoint.model_validate({**cp.model_dump(), field: value})
    assert edited.verify_signature(KEYS) == "its signature does not verify: it was forged or edited"


def test_a_checkpoint_of_the_empty_log_does_not_cover_the_first_event() -> None:
    """Seq 0 is a real boundary: a checkpoint over the empty log vouches for no event, so the
    first event after it is an uncovered tail."""
    store = MemoryStore()
    _, head = store.head()
    genesis = SIGNER.sign(store.url, 0, head, now=T0)
    _events(store, 1)
    report = verify_log(store.chain_rows(), keys=KEYS, checkpoint=genesis, require_tail=True)
    assert not report.ok and report.uncovered == 1 and report.signed_through == 0
    assert verify_log(store.chain_rows(), keys=KEYS, checkpoint=genesis).ok  # FLIP


def test_the_signed_bytes_of_a_checkpoint_are_a_fixed_format() -> None:
    assert checkpoint_bytes("sqlite:///a.db", 3, "e" * 64, "2026-01-01T00:00:00.000000Z", "k1") == (
        CHECKPOINT_DOMAIN
        + b'{"at":"2026-01-01T00:00:00.000000Z","head_hash":"'
        + b"e" * 64
        + b'","key_id":"k1","seq":3,"store":"sqlite:///a.db"}'
    )


class _Tenanted:
    """What a PostgreSQL store shows of itself to a checkpoint (its URL names no tenant)."""

    url = "postgresql://db.example/shop"
    database = "shop"
    tenant = "acme"


def test_a_checkpoint_names_a_postgresql_tenant_not_only_its_database() -> None:
    assert store_identity(_Tenanted()) == "postgresql://shop?tenant=acme"  # type: ignore[arg-type]
    untenanted = _Tenanted()
    untenanted.tenant = None  # type: ignore[assignment]
    assert store_identity(untenanted) == "postgresql://db.example/shop"  # type: ignore[arg-type]
    assert store_identity(MemoryStore()) == MemoryStore().url


@pytest.mark.parametrize("tamper", ["truncate", "append", "forge"])
def test_a_failed_verification_reports_how_far_it_got(tamper: str) -> None:
    """What an operator reads after an attack: how many events verified, the last good seq and
    hash, how many checkpoints were seen and whether signatures were checked."""
    store = _checkpointed(4)  # events 1..4, the checkpoint event 5
    seq, head = store.head()
    file_cp = SIGNER.sign(store.url, seq, head, now=T0)
    rows = list(store.chain_rows())
    if tamper == "truncate":
        report = verify_log(rows[:-1], keys=KEYS, checkpoint=file_cp)
        expect = (4, 4, rows[3][3], 0)
    elif tamper == "append":
        _events(store, 1, start=4)
        report = verify_log(store.chain_rows(), keys=KEYS, require_tail=True)
        expect = (6, 6, list(store.chain_rows())[5][3], 1)
    else:
        report = verify_log(rows, keys=[CheckpointSigner.generate().public_key])
        expect = (4, 4, rows[3][3], 1)
    assert not report.ok and report.signatures_checked
    assert (report.events, report.head_seq, report.head_hash, report.checkpoints) == expect
    assert report.to_json()["events"] == expect[0] and "checkpoint_failure" not in report.to_json()
