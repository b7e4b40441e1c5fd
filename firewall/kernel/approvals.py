"""Approvals: a human's Ed25519 signature over exactly one held action.

A hold opens an :class:`ApprovalRequest` with a deadline. A resolution is an :class:`Approval`
signed by a *pinned approver key* under its own domain tag (``gnomon.approval.v1``, apart from
grants, checkpoints and policies). The signature binds

    request id, action id, policy digest, inputs digest, decision, expiry, nonce, key id

where the inputs digest is SHA-256 over the canonical JSON of the tool and its validated
arguments (:func:`inputs_digest`). So an approval for ``git push origin release`` never runs
``git push origin main``, one made under another policy never runs under this one, and one
copied onto another request is refused.

:func:`check_approval` refuses with :class:`~firewall.model.errors.ForgedApprovalError` whose
``kind``
is one of ``forged`` (bad signature or object), ``wrong_key`` (no pinned key), ``expired``,
``wrong_request``, ``wrong_digest`` (inputs or policy) and, checked by the kernel against the
log, ``replayed`` (a nonce already used). None of them executes, and the kernel records each as
an ``approval.forgery`` event.

>>> from datetime import UTC, datetime, timedelta
>>> signer = ApprovalSigner.generate("alice")
>>> req = ApprovalRequest(id="req_1", action_id="act_1", session_id="ses_1", project="p",
...     tool="git_push", level="L4", inputs_digest="a" * 64, policy_digest="b" * 64,
...     reasons=("L4 is always held",), created_at=datetime(2026, 1, 1, tzinfo=UTC),
...     deadline=datetime(2026, 1, 1, 0, 15, tzinfo=UTC))
>>> ok = signer.approve(req, now=datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
>>> later = datetime(2026, 1, 1, 0, 2, tzinfo=UTC)
>>> check_approval(ok, req, [signer.public_key], now=later).decision
'approve'
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import AwareDatetime, BaseModel, ConfigDict, StrictStr, ValidationError

from gnomon.firewall.gate.grants import KeyPurpose, key_id_of, load_private_key, signed_document
from gnomon.firewall.kernel.provenance import ShownArgument
from gnomon.firewall.model.clock import iso, utcnow
from gnomon.firewall.model.errors import ForgedApprovalError

APPROVAL_DOMAIN = b"gnomon.approval.v1\x00"
INPUTS_DOMAIN = b"gnomon.action-inputs.v1\x00"
DEFAULT_APPROVAL_TTL = timedelta(minutes=10)


def inputs_digest(tool: str, args: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical action inputs (domain tag, then sorted-key JSON)."""
    doc = {"tool": tool, "args": dict(args)}
    return hashlib.sha256(
        INPUTS_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()


class ApprovalRequest(BaseModel):
    """What a hold asks a human: recorded in the log as the ``action.held`` event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: StrictStr
    action_id: StrictStr
    session_id: StrictStr
    project: StrictStr
    tool: StrictStr
    level: StrictStr
    inputs_digest: StrictStr
    policy_digest: StrictStr
    reasons: tuple[str, ...]
    created_at: AwareDatetime
    deadline: AwareDatetime
    #: the canonical arguments that will run, each with the provenance of its value (secrets
    #: redacted): what the approver reads; the signature binds the inputs digest of the same
    #: arguments
    arguments: tuple[ShownArgument, ...] = ()


class Approval(BaseModel):
    """A signed resolution of one request (``decision``: approve or deny)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    request_id: StrictStr
    action_id: StrictStr
    policy_digest: StrictStr
    inputs_digest: StrictStr
    decision: Literal["approve", "deny"]
    approver: StrictStr
    expires_at: AwareDatetime
    nonce: StrictStr
    key_id: StrictStr
    signature: StrictStr

    def signed_bytes(self) -> bytes:
        return approval_bytes(self)

    def to_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "expires_at": iso(self.expires_at)}

    @classmethod
    def from_json(cls, data: object) -> Approval:
        try:
            return cls.model_validate(data, strict=False)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ForgedApprovalError(
                "forged",
                f"not a valid approval: {'.'.join(map(str, err['loc']))}: {err['msg']}",
                hint="approvals come only from `gnomon approve` or ApprovalSigner",
            ) from None


def approval_bytes(approval: Approval) -> bytes:
    return signed_document(APPROVAL_DOMAIN, approval, expires_at=iso(approval.expires_at))


class ApprovalSigner:
    """An approver's private key (a human's, held outside the agent's reach)."""

    def __init__(self, private_key: Ed25519PrivateKey, approver: str) -> None:
        self._key = private_key
        self.approver = approver
        self.public_key = private_key.public_key()
        self.key_id = key_id_of(self.public_key)

    @classmethod
    def generate(cls, approver: str) -> ApprovalSigner:
        return cls(Ed25519PrivateKey.generate(), approver)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], approver: str) -> ApprovalSigner:
        return cls(load_private_key(path, purpose=KeyPurpose.APPROVAL), approver)

    def resolve(
        self,
        request: ApprovalRequest,
        decision: Literal["approve", "deny"],
        *,
        ttl: timedelta = DEFAULT_APPROVAL_TTL,
        now: datetime | None = None,
    ) -> Approval:
        unsigned = Approval.model_construct(
            request_id=request.id,
            action_id=request.action_id,
            policy_digest=request.policy_digest,
            inputs_digest=request.inputs_digest,
            decision=decision,
            approver=self.approver,
            expires_at=(now or utcnow()) + ttl,
            nonce=secrets.token_hex(16),
            key_id=self.key_id,
            signature="",
        )
        signature = base64.b64encode(self._key.sign(approval_bytes(unsigned))).decode("ascii")
        return Approval.model_validate({**unsigned.__dict__, "signature": signature})

    def approve(self, request: ApprovalRequest, **kw: Any) -> Approval:
        return self.resolve(request, "approve", **kw)

    def deny(self, request: ApprovalRequest, **kw: Any) -> Approval:
        return self.resolve(request, "deny", **kw)


def check_approval(
    approval: object,
    request: ApprovalRequest,
    keys: Sequence[Ed25519PublicKey],
    *,
    now: datetime,
) -> Approval:
    """The approval, re-validated, if it is a genuine resolution of ``request`` now."""
    if type(approval) is not Approval:
        raise ForgedApprovalError(
            "forged", f"expected a signed Approval, got {type(approval).__name__}"
        )
    checked = Approval.from_json(dict(object.__getattribute__(approval, "__dict__")))
    pinned = {key_id_of(k): k for k in keys}
    key = pinned.get(checked.key_id)
    if key is None:
        raise ForgedApprovalError(
            "wrong_key",
            f"approval for {request.id} is signed by key {checked.key_id}, which is not a "
            "pinned approver key",
            hint="only pinned approver keys resolve holds",
        )
    try:
        key.verify(base64.b64decode(checked.signature, validate=True), checked.signed_bytes())
    except (InvalidSignature, ValueError):
        raise ForgedApprovalError(
            "forged", f"approval for {request.id} does not verify: forged or edited"
        ) from None
    if checked.request_id != request.id or checked.action_id != request.action_id:
        raise ForgedApprovalError(
            "wrong_request",
            f"approval is for request {checked.request_id} / action {checked.action_id}, not "
            f"{request.id} / {request.action_id}",
        )
    if checked.inputs_digest != request.inputs_digest:
        raise ForgedApprovalError(
            "wrong_digest",
            f"approval for {request.id} covers other action inputs than the ones held",
            hint="approve the request as it was held; changed inputs need a new request",
        )
    if checked.policy_digest != request.policy_digest:
        raise ForgedApprovalError(
            "wrong_digest", f"approval for {request.id} was made under another policy"
        )
    if now >= checked.expires_at:
        raise ForgedApprovalError(
            "expired", f"approval for {request.id} expired at {iso(checked.expires_at)}"
        )
    return checked


__all__ = [
    "APPROVAL_DOMAIN",
    "DEFAULT_APPROVAL_TTL",
    "INPUTS_DOMAIN",
    "Approval",
    "ApprovalRequest",
    "ApprovalSigner",
    "approval_bytes",
    "check_approval",
    "inputs_digest",
]
