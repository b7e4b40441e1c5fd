"""Signed checkpoints and ``verify_log``: one test per kind of tamper, and forged checkpoints.

Tampering is done on the ``(seq, body, prev_hash, hash)`` rows a store hands the verifier, which
is exactly what an attacker with write access to the store controls.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gnomon.firewall.log.checkpoints import (
    CHECKPOINT_KIND,
    Checkpoint,
    CheckpointSigner,
    verify_log,
    write_checkpoint,
)
from gnomon.firewall.log.events import GENESIS_HASH, EventDraft, chain_hash, seal
from gnomon.firewall.model.errors import CheckpointError, InputError, LogIntegrityError
from gnomon.firewall.store.memory import MemoryStore
from tests.factories import T0, at, make_draft

Row = tuple[int, bytes, str, str]


def events(store: MemoryStore, count: int, start: int = 0) -> None:
    store.commit(
        [
            make_draft(kind="test.note", at=at(seconds=start + i), data={"i": start + i})
            for i in range(count)
        ]
    )


@pytest.fixture
def signer() -> CheckpointSigner:
    return CheckpointSigner.generate()


@pytest.fixture
def store(signer: CheckpointSigner) -> MemoryStore:
    """20 events, a checkpoint at 10 (event 11) and at 21 (event 22), then 3 more events."""
    s = MemoryStore()
    events(s, 10)
    write_checkpoint(s, signer, now=T0)
    events(s, 10, start=10)
    write_checkpoint(s, signer, now=T0)
    events(s, 3, start=20)
    return s


def rows(store: MemoryStore) -> list[Row]:
    return list(store.chain_rows())


def rechain(items: list[Row]) -> list[Row]:
    """What an attacker without the key does after an edit: renumber and recompute every hash."""
    out: list[Row] = []
    prev = GENESIS_HASH
    for i, (_, body, _, _) in enumerate(items, start=1):
        body = body.replace(b'"seq":' + str(_seq_of(body)).encode(), b'"seq":' + str(i).encode())
        digest = chain_hash(i, prev, body)
        out.append((i, body, prev, digest))
        prev = digest
    return out


def _seq_of(body: bytes) -> int:
    import orjson

    return int(orjson.loads(body)["seq"])


def test_intact_log_verifies_with_and_without_keys(
    store: MemoryStore, signer: CheckpointSigner
) -> None:
    plain = verify_log(rows(store))
    assert plain.ok and plain.events == 25 and plain.checkpoints == 2
    assert not plain.signatures_checked
    signed = verify_log(rows(store), keys=[signer.public_key])
    assert signed.ok and signed.signatures_checked and signed.signed_through == 21


def test_edited_byte(store: MemoryStore) -> None:
    items = rows(store)
    seq, body, prev, digest = items[6]
    items[6] = (seq, body.replace(b'"i":6', b'"i":7'), prev, digest)
    report = verify_log(items)
    assert (report.ok, report.first_bad_seq) == (False, 7)
    assert "hash does not match" in (report.problem or "")


def test_deleted_event(store: MemoryStore) -> None:
    items = rows(store)
    del items[4]
    report = verify_log(items)
    assert (report.ok, report.first_bad_seq) == (False, 5)
    assert "missing or reordered" in (report.problem or "")


def test_reordered_events(store: MemoryStore) -> None:
    items = rows(store)
    items[3], items[4] = items[4], items[3]
    report = verify_log(items)
    assert (report.ok, report.first_bad_seq) == (False, 4)


def test_reordered_events_renumbered(store: MemoryStore) -> None:
    """Swapping two events and giving them each other's seq still breaks the chain."""
    items = rows(store)
    a, b = items[3], items[4]
    items[3] = (4, b[1], a[2], b[3])
    items[4] = (5, a[1], b[2], a[3])
    report = verify_log(items)
    assert (report.ok, report.first_bad_seq) == (False, 4)


def test_spliced_segment(store: MemoryStore) -> None:
    other = MemoryStore()
    events(other, 25, start=100)
    items = rows(store)
    items[8:12] = rows(other)[8:12]  # the same seqs from another, valid log
    report = verify_log(items)
    assert (report.ok, report.first_bad_seq) == (False, 9)
    assert "prev_hash" in (report.problem or "")


def test_truncated_tail_against_a_checkpoint_file(
    store: MemoryStore, signer: CheckpointSigner
) -> None:
    head_seq, head_hash = store.head()
    file_checkpoint = signer.sign(store.url, head_seq, head_hash, now=T0)
    assert verify_log(rows(store), keys=[signer.public_key], checkpoint=file_checkpoint).ok
    truncated = rows(store)[:23]  # the tail after the last in-log checkpoint is gone
    assert verify_log(truncated).ok  # a shorter chain is still a valid chain...
    report = verify_log(truncated, keys=[signer.public_key], checkpoint=file_checkpoint)
    assert (report.ok, report.first_bad_seq) == (False, 24)  # ...but not against the file
    assert "truncated" in (report.problem or "")


def test_checkpoint_file_that_does_not_match(store: MemoryStore, signer: CheckpointSigner) -> None:
    wrong = signer.sign(store.url, 15, "ab" * 32, now=T0)
    report = verify_log(rows(store), keys=[signer.public_key], checkpoint=wrong)
    assert not report.ok and report.checkpoint_failure
    assert "rewritten" in (report.problem or "")


def test_whole_log_rewritten_without_the_key(store: MemoryStore, signer: CheckpointSigner) -> None:
    original = rows(store)
    edited = [(s, b.replace(b'"i":3', b'"i":33'), p, h) for s, b, p, h in original]
    keys = [signer.public_key]

    # 1. keep the old checkpoints: they no longer match the recomputed chain
    kept = rechain(edited)
    assert verify_log(kept).ok is False  # even without the key the chain disagrees with them
    report = verify_log(kept, keys=keys)
    assert not report.ok and report.first_bad_seq == 1 and report.checkpoint_failure
    assert "rewritten" in (report.problem or "")

    # 2. drop every checkpoint: a valid chain, but nothing signed by the pinned key
    dropped = rechain([r for r in edited if CHECKPOINT_KIND.encode() not in r[1]])
    assert verify_log(dropped).ok
    report = verify_log(dropped, keys=keys)
    assert not report.ok and "no checkpoint signed by a pinned key" in (report.problem or "")
    with pytest.raises(CheckpointError):
        report.raise_for_problem()

    # 3. re-sign with the attacker's own key: refused, that key is not pinned
    forged = MemoryStore()
    events(forged, 10)
    write_checkpoint(forged, CheckpointSigner.generate())
    report = verify_log(rows(forged), keys=keys)
    assert (report.ok, report.first_bad_seq) == (False, 11)
    assert "not pinned" in (report.problem or "")


def test_edited_checkpoint_does_not_verify(signer: CheckpointSigner) -> None:
    store = MemoryStore()
    events(store, 5)
    checkpoint = signer.sign(store.url, 5, store.head()[1], now=T0)
    moved = checkpoint.model_copy(update={"seq": 4, "head_hash": rows(store)[3][3]})
    assert moved.verify_signature([signer.public_key]) is not None
    report = verify_log(rows(store), keys=[signer.public_key], checkpoint=moved)
    assert not report.ok and "forged or edited" in (report.problem or "")
    relabelled = CheckpointSigner.generate().sign(store.url, 5, store.head()[1], now=T0)
    relabelled = relabelled.model_copy(update={"key_id": signer.key_id})
    report = verify_log(rows(store), keys=[signer.public_key], checkpoint=relabelled)
    assert not report.ok and "forged or edited" in (report.problem or "")


def test_edited_in_log_checkpoint_rechained(signer: CheckpointSigner) -> None:
    """An attacker edits the checkpoint event's claimed seq and rechains: the signature fails."""
    store = MemoryStore()
    events(store, 5)
    write_checkpoint(store, signer, now=T0)
    items = rows(store)
    seq, body, prev, digest = items[5]
    items[5] = (seq, body.replace(b'"seq":5,', b'"seq":4,', 1), prev, digest)
    report = verify_log(rechain(items), keys=[signer.public_key])
    assert not report.ok and report.first_bad_seq == 6


def test_checkpoint_event_that_claims_its_own_seq(signer: CheckpointSigner) -> None:
    store = MemoryStore()
    events(store, 2)
    ahead = signer.sign(store.url, 3, "00" * 32, now=T0)
    store.commit(
        [
            EventDraft(
                kind=CHECKPOINT_KIND, actor="x", at=T0, data={"checkpoint": ahead.model_dump()}
            )
        ]
    )
    report = verify_log(rows(store))
    assert (report.ok, report.first_bad_seq) == (False, 3)


def test_malformed_checkpoint_event() -> None:
    store = MemoryStore()
    store.commit(
        [EventDraft(kind=CHECKPOINT_KIND, actor="x", at=T0, data={"checkpoint": {"seq": "x"}})]
    )
    report = verify_log(rows(store))
    assert not report.ok and "without a valid checkpoint" in (report.problem or "")


def test_other_events_mentioning_the_kind_are_not_checkpoints() -> None:
    store = MemoryStore()
    store.commit([make_draft(data={"kind": CHECKPOINT_KIND, "note": '"kind":"log.checkpoint"'})])
    assert verify_log(rows(store)).ok


def test_old_checkpoints_use_the_lookup(
    monkeypatch: pytest.MonkeyPatch, signer: CheckpointSigner
) -> None:
    import gnomon.firewall.log.checkpoints as cps

    monkeypatch.setattr(cps, "WINDOW", 4)
    store = MemoryStore()
    events(store, 3)
    checkpoint = signer.sign(store.url, 2, rows(store)[1][3], now=T0)
    events(store, 6, start=3)
    store.commit(
        [
            EventDraft(
                kind=CHECKPOINT_KIND, actor="x", at=T0, data={"checkpoint": checkpoint.model_dump()}
            )
        ]
    )
    assert not verify_log(rows(store)).ok  # too far back without the store
    by_seq = {r[0]: r[3] for r in rows(store)}
    assert verify_log(rows(store), lookup=by_seq.get).ok


def test_checkpoint_file_round_trip(tmp_path: Path, signer: CheckpointSigner) -> None:
    checkpoint = signer.sign("sqlite:///x.db", 3, "ab" * 32, now=T0)
    path = tmp_path / "cp.json"
    path.write_bytes(checkpoint.to_json())
    assert Checkpoint.read(path) == checkpoint
    path.write_bytes(b"{not json")
    with pytest.raises(CheckpointError, match="not a valid checkpoint"):
        Checkpoint.read(path)
    with pytest.raises(InputError, match="cannot read"):
        Checkpoint.read(tmp_path / "missing.json")
    assert base64.b64decode(checkpoint.signature)


def test_sealed_checkpoint_event_is_a_checkpoint(signer: CheckpointSigner) -> None:
    checkpoint = signer.sign("memory://", 0, GENESIS_HASH, now=T0)
    event = seal(
        1,
        GENESIS_HASH,
        EventDraft(
            kind=CHECKPOINT_KIND, actor="x", at=T0, data={"checkpoint": checkpoint.model_dump()}
        ),
    )
    report = verify_log([(1, event.body, event.prev_hash, event.hash)], keys=[signer.public_key])
    assert report.ok and report.signed_through == 0


def test_raise_for_problem_types(store: MemoryStore) -> None:
    items = rows(store)
    del items[2]
    with pytest.raises(LogIntegrityError) as err:
        verify_log(items).raise_for_problem()
    assert not isinstance(err.value, CheckpointError) and err.value.seq == 3
