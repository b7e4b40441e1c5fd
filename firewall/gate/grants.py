"""Grants: authority that agent-facing paths cannot mint.

``user``, ``probe`` and ``auditor`` authority exist only as :class:`Grant` objects signed with
Ed25519. A :class:`GrantVerifier` checks them against *pinned* public keys. When the host pins no
keys, the firewall makes an ephemeral key pair for its own process, so a grant is still a
signature that only the host-side :class:`~firewall.Firewall` object can produce; an agent that
builds a ``Grant`` by hand, or edits one, is refused with :class:`ForgedGrantError`.

A grant states its **scope**, inside the signature: the authority, the project (tenant) it is good
for (``None``: every project, for auditors), the beliefs it covers (ids and/or a subject prefix)
and its expiry. :meth:`GrantVerifier.verify` checks the operation's project and belief against it
(:class:`GrantScopeError`). A ``user``/``probe`` grant that names no belief covers none.

Verification trusts nothing about the object it is handed: it must be exactly a :class:`Grant`
(a subclass could override ``signed_bytes`` or ``verify``), and its fields are re-validated
(strict, through canonical JSON, so odd field types or ``str`` subclasses fail typed) before the
signed bytes are rebuilt from them under :data:`GRANT_DOMAIN`. That tag differs from the
checkpoint tag, so a checkpoint signature never verifies as a grant, even with the same key.

>>> signer = GrantSigner.generate()
>>> verifier = GrantVerifier.pinning(signer.public_key)
>>> grant = signer.issue(GrantAuthority.USER, subject="alice", project="shop", beliefs=["bel_1"])
>>> verifier.verify(grant, {GrantAuthority.USER}, project="shop").subject
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
from typing import TYPE_CHECKING, Any, ClassVar, Self

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from gnomon.firewall.model.clock import iso, utcnow
from gnomon.firewall.model.errors import (
    ExpiredGrantError,
    ForgedGrantError,
    GrantScopeError,
    InputError,
    KeyFileError,
    MissingGrantError,
)
from gnomon.firewall.model.ids import new_id

if TYPE_CHECKING:
    from gnomon.firewall.model.chain import Belief

GRANT_DOMAIN = b"gnomon.grant.v3\x00"
DEFAULT_TTL = timedelta(minutes=15)


class GrantAuthority(StrEnum):
    USER = "user"
    PROBE = "probe"
    AUDITOR = "auditor"
    #: erases memories from the store and the log (``gnomon forget``): a whole project, or
    #: every project when none is given, like an auditor's
    ERASER = "eraser"


class Grant(BaseModel):
    """A signed statement: ``subject`` may act with ``authority`` on the scope it names
    (``project``; ``beliefs`` and/or ``subject_prefix``) until ``expires_at``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    authority: GrantAuthority
    subject: str
    #: The project (tenant) the grant is good for; ``None``: every project.
    project: str | None = None
    #: Belief ids the grant covers (sorted, unique).
    beliefs: tuple[str, ...] = ()
    #: Beliefs whose subject starts with this prefix are covered too.
    subject_prefix: str | None = None
    #: Beliefs imported from this memory store (origin exactly ``imported:<store>``) in the
    #: grant's project are covered too: one signed step adopts a store's existing memories.
    store: str | None = None
    issued_at: AwareDatetime
    expires_at: AwareDatetime
    key_id: str
    signature: str

    def signed_bytes(self) -> bytes:
        return signed_bytes(self)

    def covers(self, belief: Belief) -> bool:
        """Does the grant's belief scope (ids, subject prefix) name ``belief``?"""
        if belief.id in self.beliefs:
            return True
        if (
            self.store is not None
            and self.project is not None
            and belief.project == self.project
            and belief.origin.origin_ids == frozenset({f"imported:{self.store}"})
        ):
            return True
        prefix, subject = self.subject_prefix, belief.subject
        return prefix is not None and subject is not None and subject.startswith(prefix)


def signed_document(domain: bytes, record: BaseModel, **as_json: object) -> bytes:
    """The bytes a signature over ``record`` covers: ``domain``, then canonical JSON of every
    field of its model but ``signature`` itself (``as_json`` gives the JSON form of the fields
    that are not JSON as they are). A field added to the model is signed too."""
    doc = {name: getattr(record, name) for name in type(record).model_fields}
    del doc["signature"]
    doc.update(as_json)
    return domain + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def signed_bytes(grant: Grant) -> bytes:
    """The bytes a grant's signature covers: the domain tag, then canonical JSON of its fields."""
    return signed_document(
        GRANT_DOMAIN,
        grant,
        authority=grant.authority.value,
        beliefs=list(grant.beliefs),
        issued_at=iso(grant.issued_at),
        expires_at=iso(grant.expires_at),
    )


def revalidated(grant: object) -> Grant:
    """``grant`` rebuilt from its re-validated fields, or :class:`ForgedGrantError`.

    Only an object of exactly type :class:`Grant` is accepted (a subclass could override
    ``signed_bytes``, ``covers`` or anything else). Its stored field values go through canonical
    JSON and strict validation, so an object made with ``model_construct`` or edited with
    ``object.__setattr__`` comes back with plain, validated values or is refused.
    """
    if type(grant) is not Grant:
        raise ForgedGrantError(
            f"expected a signed Grant, got {type(grant).__name__}",
            hint="grants come only from Firewall.grant or GrantSigner.issue",
        )
    fields = object.__getattribute__(grant, "__dict__")
    raw = {name: fields.get(name) for name in Grant.model_fields}
    try:
        for name, value in raw.items():
            _exact(name, value)
        return Grant.model_validate_json(orjson.dumps(raw))
    except (TypeError, orjson.JSONEncodeError, ValidationError) as exc:
        raise ForgedGrantError(
            f"grant {str(raw.get('id'))[:40]!r} has malformed fields: {_first(exc)}",
            hint="issue a fresh grant; never build or edit one by hand",
        ) from exc


#: The exact type each grant field holds when pydantic built it (``None`` where optional).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "authority": (GrantAuthority,),
    "project": (str, type(None)),
    "beliefs": (tuple,),
    "subject_prefix": (str, type(None)),
    "store": (str, type(None)),
    "issued_at": (datetime,),
    "expires_at": (datetime,),
}


def _exact(name: str, value: object) -> None:
    """Raise ``TypeError`` unless ``value`` has exactly the type a validated grant holds."""
    allowed = _FIELD_TYPES.get(name, (str,))
    if type(value) not in allowed:
        raise TypeError(f"{name}: holds a {type(value).__name__}")
    if type(value) is tuple and any(type(item) is not str for item in value):
        raise TypeError(f"{name}: holds something other than plain strings")


class KeyPurpose(StrEnum):
    """What a key pair is for. A key file may declare it on a header line before the PEM block,
    and a loader that expects another purpose refuses the file. A file without the header (the
    default of ``gnomon keys generate``, one operator key for both) loads for either: the
    signatures themselves never cross, because grants and checkpoints sign under different
    domain tags."""

    GRANT = "grant"
    CHECKPOINT = "checkpoint"
    #: signs action policies (``gnomon policy sign``)
    POLICY = "policy"
    #: signs approvals of held actions (``gnomon approve``)
    APPROVAL = "approval"


def key_id_of(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class KeyHolder:
    """Holds one Ed25519 private key, its public key and key id: the base of the host-side
    signers (grants, checkpoints, action policies). ``purpose`` is what a key file loaded by
    :meth:`from_file` must declare, if it declares anything (see :class:`KeyPurpose`)."""

    purpose: ClassVar[KeyPurpose]

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.public_key = private_key.public_key()
        self.key_id = key_id_of(self.public_key)

    @classmethod
    def generate(cls) -> Self:
        return cls(Ed25519PrivateKey.generate())

    def sign_bytes(self, message: bytes) -> bytes:
        """An Ed25519 signature over ``message`` (callers add their own domain tag first)."""
        return self._key.sign(message)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Self:
        return cls(load_private_key(path, purpose=cls.purpose))


class GrantSigner(KeyHolder):
    """Holds a private key and issues grants. Host-side only: never hand it to an agent."""

    purpose = KeyPurpose.GRANT

    def issue(
        self,
        authority: GrantAuthority | str,
        subject: str,
        *,
        project: str | None = None,
        beliefs: Iterable[str] = (),
        subject_prefix: str | None = None,
        store: str | None = None,
        ttl: timedelta = DEFAULT_TTL,
        now: datetime | None = None,
    ) -> Grant:
        """Sign a grant for ``subject`` over the scope given (see :class:`Grant`)."""
        try:
            authority = GrantAuthority(authority)
        except ValueError as exc:
            raise InputError(
                f"unknown grant authority {authority!r}",
                hint="use one of " + ", ".join(a.value for a in GrantAuthority),
            ) from exc
        if isinstance(beliefs, str):
            raise InputError("beliefs must be a list of belief ids, not one string")
        if subject_prefix == "":
            raise InputError(
                "subject_prefix must not be empty (it would cover every belief)",
                hint="name the beliefs, or a real subject prefix",
            )
        if store is not None and (not store.strip() or project is None):
            raise InputError(
                "a grant over a store's imported memories must name the store and its project",
                hint="pass store='mem0' with project='...'",
            )
        issued = now or utcnow()
        fields: dict[str, Any] = {
            "id": new_id("grt"),
            "authority": authority,
            "subject": subject,
            "project": project,
            "beliefs": tuple(sorted(set(beliefs))),
            "subject_prefix": subject_prefix,
            "store": store,
            "issued_at": issued,
            "expires_at": issued + ttl,
            "key_id": self.key_id,
        }
        try:
            unsigned = Grant.model_validate({**fields, "signature": ""})
        except ValidationError as exc:
            raise InputError(f"cannot issue this grant: {_first(exc)}") from exc
        signature = base64.b64encode(self._key.sign(signed_bytes(unsigned))).decode("ascii")
        return unsigned.model_copy(update={"signature": signature})


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
        project: str | None = None,
        belief: Belief | None = None,
    ) -> Grant:
        """The re-validated grant if it is signed by a pinned key, valid at ``now``, of one of
        the ``required`` authorities and scoped to ``project`` (``None``: the operation spans
        every project) and ``belief`` (when the operation moves one)."""
        needed = frozenset(required)
        names = " or ".join(sorted(a.value for a in needed))
        if grant is None:
            raise MissingGrantError(
                f"{operation} needs a {names} grant and none was given",
                hint="issue one host-side with Firewall.grant(...) or `gnomon ... --key`",
            )
        checked = revalidated(grant)
        if checked.authority not in needed:
            raise MissingGrantError(
                f"{operation} needs a {names} grant; grant {checked.id} carries "
                f"{checked.authority.value!r}",
                hint=f"issue a grant with authority {names}",
            )
        key = self._pinned.get(checked.key_id)
        if key is None:
            raise ForgedGrantError(
                f"grant {checked.id} is signed by key {checked.key_id}, which is not pinned",
                hint="pin the operator's public key (gnomon keys generate writes one)",
            )
        try:
            signature = base64.b64decode(checked.signature, validate=True)
            key.verify(signature, signed_bytes(checked))
        except (InvalidSignature, ValueError) as exc:
            raise ForgedGrantError(
                f"grant {checked.id} has a signature that does not verify: it was forged or edited",
                hint="issue a fresh grant; never edit a grant's fields",
            ) from exc
        moment = now or utcnow()
        if not checked.issued_at <= moment < checked.expires_at:
            raise ExpiredGrantError(
                f"grant {checked.id} is valid from {iso(checked.issued_at)} to "
                f"{iso(checked.expires_at)}; it is now {iso(moment)}",
                hint="issue a fresh grant",
            )
        check_scope(checked, operation, project=project, belief=belief)
        return checked


def check_scope(
    grant: Grant, operation: str, *, project: str | None, belief: Belief | None
) -> None:
    """Raise :class:`GrantScopeError` unless ``grant`` covers ``project`` and ``belief``."""
    where = belief.project if belief is not None else project
    if grant.project is not None and where != grant.project:
        target = f"project {where!r}" if where is not None else "every project"
        raise GrantScopeError(
            f"{operation}: grant {grant.id} covers project {grant.project!r} only, not {target}",
            hint=f"issue a grant for that project, or scope the operation to {grant.project!r}",
        )
    if belief is not None and not grant.covers(belief):
        raise GrantScopeError(
            f"{operation}: grant {grant.id} does not cover belief {belief.id} "
            f"(it covers {_coverage(grant)})",
            hint=f"issue a grant naming it: Firewall.grant(..., beliefs=[{belief.id!r}])",
        )


def _coverage(grant: Grant) -> str:
    parts = []
    if grant.beliefs:
        parts.append(f"{len(grant.beliefs)} belief id(s)")
    if grant.subject_prefix is not None:
        parts.append(f"subjects starting {grant.subject_prefix!r}")
    if grant.store is not None:
        parts.append(f"memories imported from {grant.store!r}")
    return " and ".join(parts) or "no beliefs"


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "grant"
        return f"{where}: {err['msg']}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# -- key files ----------------------------------------------------------------------------------


_PURPOSE_HEADER = b"gnomon-key-purpose: "


def write_keypair(
    directory: str | os.PathLike[str],
    name: str = "operator",
    *,
    purpose: KeyPurpose | str | None = None,
) -> tuple[Path, Path]:
    """Write ``<name>.key`` (PKCS#8 PEM, mode 0600) and ``<name>.pub`` (SPKI PEM); with a
    ``purpose``, each declares it on its first line."""
    header = b""
    if purpose is not None:
        header = _PURPOSE_HEADER + KeyPurpose(purpose).value.encode() + b"\n"
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)  # owner-only when it creates it
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
        handle.write(header + pem)
    public_path.write_bytes(
        header
        + key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private_path, public_path


def _read(path: str | os.PathLike[str], purpose: KeyPurpose | None) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from exc
    declared = key_purpose(data)
    if purpose is not None and declared is not None and declared != purpose.value:
        raise KeyFileError(
            f"{path} is a {declared} key, not a {purpose.value} key: grant keys and checkpoint "
            "keys serve separate purposes",
            hint=f"use a key made with `gnomon keys generate` for {purpose.value}s",
        )
    return data


def key_purpose(data: bytes) -> str | None:
    """The purpose a key file declares on its first line, if any."""
    if not data.startswith(_PURPOSE_HEADER):
        return None
    line = data.split(b"\n", 1)[0][len(_PURPOSE_HEADER) :]
    return line.decode("ascii", "replace").strip()


def load_private_key(
    path: str | os.PathLike[str], *, purpose: KeyPurpose | None = None
) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(_read(path, purpose), password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(
            f"{path} is not an unencrypted PEM private key",
            hint="generate one with `gnomon keys generate`",
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key")
    return key


def load_public_key(
    path: str | os.PathLike[str], *, purpose: KeyPurpose | None = None
) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(_read(path, purpose))
    except (ValueError, TypeError) as exc:
        raise KeyFileError(
            f"{path} is not a PEM public key", hint="use the .pub file from `gnomon keys generate`"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 public key")
    return key


__all__ = [
    "DEFAULT_TTL",
    "GRANT_DOMAIN",
    "Grant",
    "GrantAuthority",
    "GrantSigner",
    "GrantVerifier",
    "KeyHolder",
    "KeyPurpose",
    "check_scope",
    "key_id_of",
    "key_purpose",
    "load_private_key",
    "load_public_key",
    "revalidated",
    "signed_bytes",
    "signed_document",
    "write_keypair",
]
