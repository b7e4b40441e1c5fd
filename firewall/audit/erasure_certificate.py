"""Signed erasure certificates: what was erased, where, by which grant, when, and the digests
that prove the chain still verifies.

``gnomon forget`` writes one; ``gnomon log verify --certificate FILE`` checks it against the
pinned operator keys and against the store:

* the signature (Ed25519, domain ``gnomon.erasure-certificate.v1``, canonical JSON of every
  field but the signature) is by a pinned key: an edited or forged certificate is refused;
* the erasure event it names is in the log at that seq with that hash, is an ``erasure`` of
  that grant, and lists exactly the events the certificate lists;
* each listed event is still in the chain with the hash the certificate recorded (the chain
  covers the digest the certificate keeps), and its stored body is the erased body whose digest
  the certificate records, or one a later erasure rewrote again;
* the whole chain and every seal verify (:meth:`firewall.store.base.Store.verify`).

>>> from gnomon.firewall.gate.grants import GrantSigner
>>> signer = GrantSigner.generate()
>>> doc = sign_certificate(dict(EXAMPLE), signer)
>>> check_signature(doc, [signer.public_key]).grant_id
'grt_1'
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, ValidationError

from gnomon.firewall.audit.erasure import ErasureResult
from gnomon.firewall.gate.grants import KeyHolder, key_id_of
from gnomon.firewall.log.events import ERASURE_KIND, Event, body_digest, erased_marker
from gnomon.firewall.model.clock import iso, utcnow
from gnomon.firewall.model.errors import CertificateError
from gnomon.firewall.store.base import Store

FORMAT = "gnomon.erasure-certificate.v1"
CERTIFICATE_DOMAIN = b"gnomon.erasure-certificate.v1\x00"


class CertifiedEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    seq: int
    hash: str
    body_digest: str
    erased_digest: str


class WrappedErasure(BaseModel):
    """What a wrapped memory store (mem0, Letta, Zep) was asked to delete, and what a read
    afterwards still found (``remaining`` must be empty for the certificate to say erased)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    store: str
    deleted: tuple[str, ...]
    remaining: tuple[str, ...]


class ErasureCertificate(BaseModel):
    """The signed statement :func:`sign_certificate` makes (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    format: Literal["gnomon.erasure-certificate.v1"]
    store: str
    grant_id: str
    operator: str
    target: dict[str, str]
    derived: str
    erased_on: str
    issued_at: str
    beliefs: tuple[str, ...]
    listed: tuple[str, ...]
    erasure_seq: int
    erasure_hash: str
    events: tuple[CertifiedEvent, ...]
    wrapped: tuple[WrappedErasure, ...] = ()
    key_id: str
    signature: str

    def signed_bytes(self) -> bytes:
        doc = self.model_dump(mode="json")
        del doc["signature"]
        return CERTIFICATE_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


#: A certificate's fields before signing (the doctest's example).
EXAMPLE: Mapping[str, Any] = {
    "format": FORMAT,
    "store": "memory://",
    "grant_id": "grt_1",
    "operator": "ops",
    "target": {"kind": "origin", "value": "user:alice"},
    "derived": "list",
    "erased_on": "2026-11-28",
    "issued_at": "2026-11-28T00:00:00.000000Z",
    "beliefs": [],
    "listed": [],
    "erasure_seq": 1,
    "erasure_hash": "0" * 64,
    "events": [],
}


def certificate_fields(
    result: ErasureResult,
    *,
    store: str,
    operator: str,
    derived: str,
    wrapped: Sequence[WrappedErasure] = (),
) -> dict[str, Any]:
    """The fields of the certificate of ``result`` (unsigned)."""
    return {
        "format": FORMAT,
        "store": store,
        "grant_id": result.grant_id,
        "operator": operator,
        "target": result.target.as_json(),
        "derived": derived,
        "erased_on": result.on,
        "issued_at": iso(utcnow()),
        "beliefs": list(result.beliefs),
        "listed": list(result.listed),
        "erasure_seq": result.event.seq,
        "erasure_hash": result.event.hash,
        "events": [e.as_json() for e in result.events],
        "wrapped": [w.model_dump(mode="json") for w in wrapped],
    }


def sign_certificate(fields: dict[str, Any], signer: KeyHolder) -> bytes:
    """The certificate of ``fields`` signed by ``signer``, as the JSON bytes to write."""
    unsigned = _parse({**fields, "key_id": signer.key_id, "signature": ""})
    signature = base64.b64encode(signer.sign_bytes(unsigned.signed_bytes())).decode("ascii")
    signed = unsigned.model_copy(update={"signature": signature})
    return orjson.dumps(signed.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"


def _parse(doc: object) -> ErasureCertificate:
    try:
        if isinstance(doc, bytes | str):
            return ErasureCertificate.model_validate_json(doc, strict=False)
        return ErasureCertificate.model_validate(doc, strict=False)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "certificate"
        raise CertificateError(0, f"not an erasure certificate ({where}: {err['msg']})") from exc


def check_signature(data: bytes, keys: Iterable[Ed25519PublicKey]) -> ErasureCertificate:
    """The certificate in ``data`` if a pinned key signed exactly it, else
    :class:`CertificateError`."""
    cert = _parse(data)
    pinned = {key_id_of(k): k for k in keys}
    if not pinned:
        raise CertificateError(
            cert.erasure_seq, "no operator key is pinned to check the certificate's signature"
        )
    key = pinned.get(cert.key_id)
    if key is None:
        raise CertificateError(
            cert.erasure_seq, f"it is signed by key {cert.key_id}, which is not pinned"
        )
    if not _signature_holds(key, cert):
        raise CertificateError(
            cert.erasure_seq, "its signature does not verify: it was forged or edited"
        )
    return cert


def _signature_holds(key: Ed25519PublicKey, cert: ErasureCertificate) -> bool:
    try:
        key.verify(base64.b64decode(cert.signature, validate=True), cert.signed_bytes())
    except (InvalidSignature, ValueError):
        return False
    return True


def check_against(cert: ErasureCertificate, store: Store) -> None:
    """Raise :class:`CertificateError` unless the log says what ``cert`` says (see the module
    docstring). The chain and seals are verified first."""
    report = store.verify()
    if not report.ok:
        raise CertificateError(
            report.first_bad_seq or 0, f"the log does not verify: {report.problem}"
        )
    wanted = {e.seq: e for e in cert.events}
    found: dict[int, Event] = {}
    for event in store.events(after=min([cert.erasure_seq, *wanted]) - 1):
        if event.seq > cert.erasure_seq:
            break
        if event.seq in wanted or event.seq == cert.erasure_seq:
            found[event.seq] = event
    erasure = found.get(cert.erasure_seq)
    if erasure is None or erasure.hash != cert.erasure_hash or erasure.kind != ERASURE_KIND:
        raise CertificateError(
            cert.erasure_seq, "the log holds no such erasure event at that seq with that hash"
        )
    payload = erasure.payload
    derived = payload.get("derived")
    said = (
        payload.get("grant_id"),
        payload.get("target"),
        payload.get("on"),
        payload.get("beliefs"),
        derived.get("listed") if isinstance(derived, dict) else None,
    )
    if said != (
        cert.grant_id,
        cert.target,
        cert.erased_on,
        list(cert.beliefs),
        list(cert.listed),
    ):
        raise CertificateError(
            cert.erasure_seq,
            "the erasure event names another grant, target, date or set of beliefs",
        )
    listed = {
        (item.get("seq"), item.get("body_digest"), item.get("erased_digest"))
        for item in erasure.payload.get("events", [])
        if isinstance(item, dict)
    }
    if listed != {(e.seq, e.body_digest, e.erased_digest) for e in cert.events}:
        raise CertificateError(
            cert.erasure_seq, "the erasure event lists other events than the certificate"
        )
    for seq, entry in wanted.items():
        rewritten = found.get(seq)
        if rewritten is None or rewritten.hash != entry.hash:
            raise CertificateError(seq, "the event is not in the chain with the recorded hash")
        marker = erased_marker(rewritten.body)
        if marker is None or marker["body_digest"] != entry.body_digest:
            raise CertificateError(seq, "the event's body is not erased (its text is back)")
        current = body_digest(rewritten.body)
        if marker["by"] == cert.erasure_seq and current != entry.erased_digest:
            raise CertificateError(seq, "the erased body is not the one certified")
        if marker["by"] < cert.erasure_seq:
            raise CertificateError(seq, "the event's body is an older one than certified")
    undone = [w.store for w in cert.wrapped if w.remaining]
    if undone:
        raise CertificateError(
            cert.erasure_seq, f"wrapped store(s) still returned erased items: {', '.join(undone)}"
        )


def verify_certificate(
    data: bytes, keys: Iterable[Ed25519PublicKey], store: Store
) -> ErasureCertificate:
    """:func:`check_signature`, then :func:`check_against` ``store``."""
    cert = check_signature(data, keys)
    check_against(cert, store)
    return cert


__all__ = [
    "CERTIFICATE_DOMAIN",
    "EXAMPLE",
    "FORMAT",
    "CertifiedEvent",
    "ErasureCertificate",
    "WrappedErasure",
    "certificate_fields",
    "check_against",
    "check_signature",
    "sign_certificate",
    "verify_certificate",
]
