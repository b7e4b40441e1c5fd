"""Grants: authority that agent-facing paths cannot mint.

``user``, ``probe`` and ``auditor`` authority exist only as :class:`Grant` objects signed with
Ed25519. A :class:`GrantVerifier` checks them against *pinned* public keys. When the host pins no
keys, the firewall makes an ephemeral key pair for its own process, so a grant is still a
signature that only the host-side :class:`~firewall.Firewall` object can produce; an agent that
builds a ``Grant`` by hand, or edits one, is refused with :class:`ForgedGrantError`.

>>> signer = GrantSigner.generate()
>>> verifier = GrantVerifier.pinning(signer.public_key)
>>> grant = signer.issue(GrantAuthority.USER, subject="alice")
>>> verifier.verify(grant, {GrantAuthority.USER}).subject
'alice'
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from pydantic import AwareDatetime, BaseModel, ConfigDict

from firewall.clock import iso, utcnow
from firewall.errors import (
    ExpiredGrantError,
    ForgedGrantError,
    KeyFileError,
    MissingGrantError,
)
from firewall.ids import new_id

GRANT_DOMAIN = b"gnomon.grant.v1\x00"
DEFAULT_TTL = timedelta(minutes=15)


class GrantAuthority(StrEnum):
    USER = "user"
    PROBE = "probe"
    AUDITOR = "auditor"


class Grant(BaseModel):
    """A signed statement: ``subject`` may act with ``authority`` until ``expires_at``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    authority: GrantAuthority
    subject: str
    issued_at: AwareDatetime
    expires_at: AwareDatetime
    key_id: str
    signature: str

    def signed_bytes(self) -> bytes:
        return signed_bytes(
            self.id, self.authority, self.subject, self.issued_at, self.expires_at, self.key_id
        )


def signed_bytes(
    grant_id: str,
    authority: GrantAuthority,
    subject: str,
    issued_at: datetime,
    expires_at: datetime,
    key_id: str,
) -> bytes:
    doc = {
        "id": grant_id,
        "authority": authority.value,
        "subject": subject,
        "issued_at": iso(issued_at),
        "expires_at": iso(expires_at),
        "key_id": key_id,
    }
    return GRANT_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def key_id_of(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class GrantSigner:
    """Holds a private key and issues grants. Host-side only: never hand it to an agent."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.public_key = private_key.public_key()
        self.key_id = key_id_of(self.public_key)

    @classmethod
    def generate(cls) -> GrantSigner:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> GrantSigner:
        return cls(load_private_key(path))

    def issue(
        self,
        authority: GrantAuthority | str,
        subject: str,
        *,
        ttl: timedelta = DEFAULT_TTL,
        now: datetime | None = None,
    ) -> Grant:
        authority = GrantAuthority(authority)
        issued = now or utcnow()
        expires = issued + ttl
        grant_id = new_id("grt")
        payload = signed_bytes(grant_id, authority, subject, issued, expires, self.key_id)
        signature = base64.b64encode(self._key.sign(payload)).decode("ascii")
        return Grant(
            id=grant_id,
            authority=authority,
            subject=subject,
            issued_at=issued,
            expires_at=expires,
            key_id=self.key_id,
            signature=signature,
        )


class GrantVerifier:
    """Verifies grants against pinned public keys. Fails closed on anything unexpected."""

    def __init__(self, pinned: Mapping[str, Ed25519PublicKey]) -> None:
        self._pinned = dict(pinned)

    @classmethod
    def pinning(cls, *keys: Ed25519PublicKey) -> GrantVerifier:
        return cls({key_id_of(k): k for k in keys})

    @property
    def key_ids(self) -> frozenset[str]:
        return frozenset(self._pinned)

    def verify(
        self,
        grant: Grant | None,
        required: Iterable[GrantAuthority],
        *,
        now: datetime | None = None,
        operation: str = "this operation",
    ) -> Grant:
        needed = frozenset(required)
        names = " or ".join(sorted(a.value for a in needed))
        if grant is None:
            raise MissingGrantError(
                f"{operation} needs a {names} grant and none was given",
                hint="issue one host-side with Firewall.grant(...) or `gnomon ... --key`",
            )
        if not isinstance(grant, Grant):
            raise ForgedGrantError(
                f"{operation}: expected a signed Grant, got {type(grant).__name__}",
                hint="grants come only from Firewall.grant or GrantSigner.issue",
            )
        if grant.authority not in needed:
            raise MissingGrantError(
                f"{operation} needs a {names} grant; grant {grant.id} carries "
                f"{grant.authority.value!r}",
                hint=f"issue a grant with authority {names}",
            )
        key = self._pinned.get(grant.key_id)
        if key is None:
            raise ForgedGrantError(
                f"grant {grant.id} is signed by key {grant.key_id}, which is not pinned",
                hint="pin the operator's public key (gnomon keys generate writes one)",
            )
        try:
            signature = base64.b64decode(grant.signature, validate=True)
            key.verify(signature, grant.signed_bytes())
        except (InvalidSignature, ValueError) as exc:
            raise ForgedGrantError(
                f"grant {grant.id} has a signature that does not verify: it was forged or edited",
                hint="issue a fresh grant; never edit a grant's fields",
            ) from exc
        moment = now or utcnow()
        if not grant.issued_at <= moment < grant.expires_at:
            raise ExpiredGrantError(
                f"grant {grant.id} is valid from {iso(grant.issued_at)} to "
                f"{iso(grant.expires_at)}; it is now {iso(moment)}",
                hint="issue a fresh grant",
            )
        return grant


# -- key files ----------------------------------------------------------------------------------


def write_keypair(directory: str | os.PathLike[str], name: str = "operator") -> tuple[Path, Path]:
    """Write ``<name>.key`` (PKCS#8 PEM, mode 0600) and ``<name>.pub`` (SPKI PEM)."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    private_path, public_path = folder / f"{name}.key", folder / f"{name}.pub"
    for path in (private_path, public_path):
        if path.exists():
            raise KeyFileError(
                f"{path} already exists", hint="choose another --name or remove the old key"
            )
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private_path, public_path


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from exc


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(_read(path), password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(
            f"{path} is not an unencrypted PEM private key",
            hint="generate one with `gnomon keys generate`",
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(_read(path))
    except (ValueError, TypeError) as exc:
        raise KeyFileError(
            f"{path} is not a PEM public key", hint="use the .pub file from `gnomon keys generate`"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 public key")
    return key


__all__ = [
    "DEFAULT_TTL",
    "Grant",
    "GrantAuthority",
    "GrantSigner",
    "GrantVerifier",
    "key_id_of",
    "load_private_key",
    "load_public_key",
    "write_keypair",
]
