"""Signed checkpoints: an Ed25519 signature over the chain head, so a rewritten log is caught.

The hash chain alone proves that a log is *internally consistent*. Anyone who can write the store
can also recompute every hash after an edit, so the chain cannot tell the original log from a
rewritten one. A checkpoint can: it is a signature, by a key the operator pins, over

    b"gnomon.checkpoint.v1\\x00" || canonical JSON {store, seq, head_hash, at, key_id}

A checkpoint lives in two places:

* **in the log**, as an event of kind ``log.checkpoint`` whose payload carries it (so checkpoints
  are chained like everything else, and travel with an NDJSON export). It covers the head
  *before* that event: ``seq < event seq``. Creating one is not atomic with the head it reads,
  so another writer's events may land in between; verification only needs ``seq`` to be earlier.
* **in a file** kept away from the store (``gnomon log checkpoint --out FILE``): the only thing
  that detects a *truncated tail* after the last in-log checkpoint, since a truncation leaves a
  perfectly valid, shorter chain.

:func:`verify_log` walks the chain once (SHA-256 links, as :func:`firewall.log.events.verify_chain`)
and checks every in-log checkpoint on the way: its hash must equal the chain's hash at its seq,
and, when public keys are pinned, its signature must verify against one of them. With pinned keys
at least one checkpoint must verify, or the log is refused: a log rewritten without the key has
either no checkpoint, a checkpoint that no longer matches, or one signed by a key nobody pinned.

The store identity inside a checkpoint (the URL without password; the tenant for PostgreSQL) is
signed but not compared at verification: an exported log imported elsewhere keeps its
checkpoints, and they stay valid because they are about the chain, not about where it is kept.

>>> from gnomon.firewall.store.memory import MemoryStore
>>> signer = CheckpointSigner.generate()
>>> store = MemoryStore()
>>> cp = write_checkpoint(store, signer)
>>> cp.seq, verify_log(store.chain_rows(), keys=[signer.public_key]).ok
(0, True)
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gnomon.firewall.gate.grants import KeyHolder, KeyPurpose, key_id_of
from gnomon.firewall.log.events import (
    GENESIS_HASH,
    Body,
    ErasureLedger,
    EventDraft,
    RedactedBody,
    VerifyReport,
)
from gnomon.firewall.model.clock import iso, utcnow
from gnomon.firewall.model.errors import CheckpointError, InputError, LogIntegrityError

if TYPE_CHECKING:
    from gnomon.firewall.store.base import Store

CHECKPOINT_DOMAIN = b"gnomon.checkpoint.v1\x00"
CHECKPOINT_KIND = "log.checkpoint"
#: How many recent hashes the verifier keeps to check a checkpoint against (older: ``lookup``).
WINDOW = 1 << 16

_HEX64 = r"^[0-9a-f]{64}$"
#: A checkpoint event's body has this exact key/value at its top level (sorted canonical JSON);
#: a cheap substring test on every body, a real parse only on the few that match.
_MARK = b'"kind":"' + CHECKPOINT_KIND.encode() + b'"'


class Checkpoint(BaseModel):
    """A signed statement: the chain of ``store`` had hash ``head_hash`` at ``seq``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    store: str
    seq: int = Field(ge=0)
    head_hash: str = Field(pattern=_HEX64)
    at: str
    key_id: str
    signature: str

    def signed_bytes(self) -> bytes:
        return checkpoint_bytes(self.store, self.seq, self.head_hash, self.at, self.key_id)

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str = "checkpoint") -> Checkpoint:
        try:
            return cls.model_validate(orjson.loads(data))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            raise CheckpointError(0, f"{source} is not a valid checkpoint: {_first(exc)}") from exc

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Checkpoint:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read checkpoint file {path}: {exc.strerror}") from exc
        return cls.from_json(data, source=str(path))

    def verify_signature(self, keys: Sequence[Ed25519PublicKey]) -> str | None:
        """``None`` if a pinned key signed it, else what is wrong."""
        pinned = {key_id_of(k): k for k in keys}
        key = pinned.get(self.key_id)
        if key is None:
            return f"signed by key {self.key_id}, which is not pinned"
        try:
            key.verify(base64.b64decode(self.signature, validate=True), self.signed_bytes())
        except (InvalidSignature, ValueError):
            return "its signature does not verify: it was forged or edited"
        return None


def checkpoint_bytes(store: str, seq: int, head_hash: str, at: str, key_id: str) -> bytes:
    doc = {"store": store, "seq": seq, "head_hash": head_hash, "at": at, "key_id": key_id}
    return CHECKPOINT_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


class CheckpointSigner(KeyHolder):
    """Holds the private key that signs checkpoints. Host-side only, like a grant signer."""

    purpose = KeyPurpose.CHECKPOINT

    def sign(
        self, store: str, seq: int, head_hash: str, *, now: datetime | None = None
    ) -> Checkpoint:
        at = iso(now or utcnow())
        payload = checkpoint_bytes(store, seq, head_hash, at, self.key_id)
        return Checkpoint(
            store=store,
            seq=seq,
            head_hash=head_hash,
            at=at,
            key_id=self.key_id,
            signature=base64.b64encode(self._key.sign(payload)).decode("ascii"),
        )


def store_identity(store: Store) -> str:
    """What a checkpoint names as its store: the URL without password, the tenant for PG."""
    database = getattr(store, "database", None)
    tenant = getattr(store, "tenant", None)
    if isinstance(database, str) and isinstance(tenant, str):
        return f"postgresql://{database}?tenant={tenant}"
    return store.url


def write_checkpoint(
    store: Store, signer: CheckpointSigner, *, now: datetime | None = None, actor: str = "system"
) -> Checkpoint:
    """Sign the current head and append it to the log as a ``log.checkpoint`` event."""
    moment = now or utcnow()
    seq, head_hash = store.head()
    checkpoint = signer.sign(store_identity(store), seq, head_hash, now=moment)
    store.commit(
        [
            EventDraft(
                kind=CHECKPOINT_KIND,
                actor=actor,
                at=moment,
                data={"checkpoint": checkpoint.model_dump()},
            )
        ]
    )
    return checkpoint


# -- verification -------------------------------------------------------------------------------


class UncoveredTailError(CheckpointError):
    """Pinned keys were given but the log's last events come after the last signed checkpoint."""

    def __init__(self, seq: int, problem: str, uncovered: int) -> None:
        super().__init__(seq, problem)
        self.hint = (
            "sign a checkpoint over the whole log (`gnomon log checkpoint --key KEY` on the "
            "source store), export again, and retry"
        )
        self.uncovered = uncovered


@dataclass(frozen=True, slots=True)
class LogVerifyReport(VerifyReport):
    """What :func:`verify_log` found: the chain's findings (:class:`VerifyReport`) and the
    checkpoints'."""

    #: The failure is about a checkpoint (signature, key, or disagreement with the chain).
    checkpoint_failure: bool = False
    checkpoints: int = 0
    #: Were checkpoint signatures checked against pinned keys?
    signatures_checked: bool = False
    #: The highest seq covered by a checkpoint that verified against a pinned key.
    signed_through: int | None = None
    #: With ``require_tail``: how many events no pinned checkpoint covers (the failure).
    uncovered: int = 0
    #: How many events verified from their body's digest alone (a shipped, redacted export).
    redacted: int = 0
    #: How many erased events verified through the digest they keep, each vouched for by the
    #: erasure event that rewrote it (:mod:`firewall.audit.erasure`).
    erased: int = 0

    def raise_for_problem(self) -> None:
        if self.ok:
            return
        assert self.first_bad_seq is not None and self.problem is not None
        if self.uncovered:
            raise UncoveredTailError(self.first_bad_seq, self.problem, self.uncovered)
        if self.checkpoint_failure:
            raise CheckpointError(self.first_bad_seq, self.problem)
        raise LogIntegrityError(self.first_bad_seq, self.problem)

    def to_json(self) -> dict[str, Any]:
        """Every finding by its field name (what kind of failure it was is in ``problem``)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "checkpoint_failure"
        }


def verify_log(
    rows: Iterable[tuple[int, Body, str, str]],
    *,
    keys: Sequence[Ed25519PublicKey] = (),
    checkpoint: Checkpoint | None = None,
    lookup: Callable[[int], str | None] | None = None,
    require_tail: bool = False,
) -> LogVerifyReport:
    """Verify ``(seq, body, prev_hash, hash)`` rows from genesis, and every checkpoint.

    ``keys``: pinned public keys; when given, every in-log checkpoint must be signed by one of
    them and at least one checkpoint (in the log or ``checkpoint``) must verify. ``checkpoint``:
    one read from a file; its seq must be within the log and its hash must match. ``lookup``
    returns the stored hash at a seq, for checkpoints further back than :data:`WINDOW` events.

    ``require_tail`` (with ``keys``): the log's last event must be covered by a pinned
    checkpoint, either signed over it or a checkpoint event signing the event just before it
    (a checkpoint cannot sign its own event). Events appended after the last signed
    checkpoint are indistinguishable from events an attacker appended and re-chained, so they
    fail the check: ``uncovered`` says how many.
    """
    pinned = list(keys)
    recent: list[str] = [GENESIS_HASH] * WINDOW
    mask = WINDOW - 1
    expected = 1
    prev = GENESIS_HASH
    count = checkpoints = 0
    signed_through: int | None = None
    covered_through = 0  # signed_through, or a pinned checkpoint event right after it
    last_matched = 0  # highest seq a checkpoint confirmed
    mark = _MARK
    redacted = 0
    ledger = ErasureLedger()
    link_holds = ledger.holds

    def report(bad: int, problem: str, *, cp: bool = False) -> LogVerifyReport:
        return LogVerifyReport(
            False,
            count,
            expected - 1,
            prev,
            bad,
            problem,
            cp,
            checkpoints,
            bool(pinned),
            signed_through,
        )

    def hash_at(seq: int) -> str | None:
        if seq == 0:
            return GENESIS_HASH
        if expected - seq <= WINDOW:
            return recent[seq & mask]
        return lookup(seq) if lookup is not None else None

    def check(cp: Checkpoint, where: str, at: int) -> tuple[int, str] | None:
        """``(first bad seq, problem)``: the checkpoint's own seq ``at`` if the checkpoint is
        forged, the first seq it no longer vouches for if the chain disagrees with it."""
        nonlocal signed_through, last_matched
        if pinned:
            wrong = cp.verify_signature(pinned)
            if wrong is not None:
                return at, f"{where} is {wrong}"
        actual = hash_at(cp.seq)
        if actual is None:
            return at, f"{where} covers seq {cp.seq}, too far back to check without the store"
        if actual != cp.head_hash:
            return last_matched + 1, (
                f"{where} signs hash {cp.head_hash[:16]}… at seq {cp.seq} but the chain has "
                f"{actual[:16]}… there: events {last_matched + 1}..{cp.seq} were rewritten"
            )
        last_matched = max(last_matched, cp.seq)
        if pinned:
            signed_through = max(signed_through or 0, cp.seq)
        return None

    for seq, body, prev_hash, digest in rows:
        if not isinstance(body, bytes | RedactedBody):
            problem = f"event body is stored as {type(body).__name__}, not bytes (edited?)"
            return report(seq, problem)
        if seq != expected:
            return report(
                expected, f"expected seq {expected}, found {seq} (events missing or reordered)"
            )
        if prev_hash != prev:
            return report(seq, "prev_hash does not match the previous event")
        if not link_holds(seq, prev, body, digest):
            return report(seq, ledger.problem or "hash does not match the event body")
        if isinstance(body, RedactedBody):
            redacted += 1
        elif mark in body:
            found = _checkpoint_in(body)
            if found is not None:
                checkpoints += 1
                if isinstance(found, str):
                    return report(seq, found, cp=True)
                if found.seq >= seq:
                    return report(
                        seq, f"checkpoint event covers seq {found.seq}, not before it", cp=True
                    )
                failed = check(found, f"the checkpoint in event {seq}", seq)
                if failed is not None:
                    return report(*failed, cp=True)
                if pinned and found.seq == seq - 1:
                    covered_through = seq
        recent[seq & mask] = digest
        prev = digest
        expected += 1
        count += 1
        if checkpoint is not None and checkpoint.seq == seq:
            failed = check(checkpoint, "the checkpoint file", seq)
            if failed is not None:
                return report(*failed, cp=True)
    missing = ledger.unvouched()
    if missing is not None:
        return report(*missing)
    if checkpoint is not None:
        if checkpoint.seq > count:
            return report(
                count + 1,
                f"the log was truncated: the checkpoint file covers seq {checkpoint.seq} "
                f"but the log ends at seq {count}",
                cp=True,
            )
        if checkpoint.seq == 0:
            failed = check(checkpoint, "the checkpoint file", 1)
            if failed is not None:
                return report(*failed, cp=True)
    if pinned and signed_through is None:
        return report(
            1,
            "no checkpoint signed by a pinned key: the log cannot be told apart from one "
            "rewritten without the key (write one with `gnomon log checkpoint --key KEY`)",
            cp=True,
        )
    covered_through = max(covered_through, signed_through or 0)
    if pinned and require_tail and covered_through < count:
        uncovered = count - covered_through
        return LogVerifyReport(
            False,
            count,
            expected - 1,
            prev,
            covered_through + 1,
            f"{uncovered} event(s) (seq {covered_through + 1}..{count}) come after the last "
            f"checkpoint signed by a pinned key (which covers seq {covered_through}): they "
            "cannot be told apart from events appended without the key",
            True,
            checkpoints,
            True,
            signed_through,
            uncovered,
        )
    return LogVerifyReport(
        True,
        count,
        expected - 1,
        prev,
        checkpoints=checkpoints,
        signatures_checked=bool(pinned),
        signed_through=signed_through,
        redacted=redacted,
        erased=ledger.erased,
    )


def _checkpoint_in(body: bytes) -> Checkpoint | str | None:
    """The checkpoint a ``log.checkpoint`` event carries, a problem text, or None if the body
    is some other event that merely contains the marker text."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None  # the chain hash already vouches for the bytes; not a checkpoint event
    if not isinstance(doc, dict) or doc.get("kind") != CHECKPOINT_KIND:
        return None
    payload = doc.get("payload")
    raw = payload.get("checkpoint") if isinstance(payload, dict) else None
    try:
        return Checkpoint.model_validate(raw)
    except ValidationError as exc:
        return f"a log.checkpoint event without a valid checkpoint: {_first(exc)}"


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "document"
        return f"{where}: {err['msg']}"
    return str(exc).splitlines()[0]


__all__ = [
    "CHECKPOINT_DOMAIN",
    "CHECKPOINT_KIND",
    "Checkpoint",
    "CheckpointSigner",
    "LogVerifyReport",
    "UncoveredTailError",
    "checkpoint_bytes",
    "store_identity",
    "verify_log",
    "write_checkpoint",
]
