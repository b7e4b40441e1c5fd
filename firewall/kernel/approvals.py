"""Approvals: a human's Ed25519 signature over exactly one held action.

A hold opens an :class:`ApprovalRequest` with a deadline. A resolution is an :class:`Approval`
signed by a *pinned approver key* under its own domain tag (``gnomon.approval.v2``, apart from
grants, checkpoints and policies). The signature binds

    request id, action id, policy digest, inputs digest, contract digest, decision, expiry,
    nonce, key id

where the inputs digest is SHA-256 over the canonical JSON of the tool and its validated
arguments (:func:`inputs_digest`), and the contract digest covers the tool's contract as the
kernel applied it: its level, category, blast radius, reversibility and the preconditions
captured at the proposal (:func:`contract_digest`). So an approval for ``git push origin
release`` never runs ``git push origin main``, one made under another policy or another contract
never runs under this one, one whose recorded preconditions were edited is refused, and one
copied onto another request is refused. The kernel checks all of it again at execution, from
the approval stored in the log and the arguments it is about to pass to the executor.

Approvals of the first format (``gnomon.approval.v1``, no contract digest) are refused with a
clear error: their bytes do not say which preconditions were approved, so accepting them would
let an edited precondition set through. Sign again with this version.

:func:`check_approval` refuses with :class:`~firewall.model.errors.ForgedApprovalError` whose
``kind``
is one of ``forged`` (bad signature or object, or an approval of the older format),
``wrong_key`` (no pinned key), ``unauthorised`` (a pinned key the policy rule does not let
approve this hold), ``expired``, ``wrong_request``, ``wrong_digest`` (inputs, contract or
policy) and, checked by the kernel against the log, ``replayed`` (a nonce already used).
None of them executes, and the kernel records each as an ``approval.forgery`` event.

>>> from datetime import UTC, datetime, timedelta
>>> signer = ApprovalSigner.generate("alice")
>>> req = ApprovalRequest(id="req_1", action_id="act_1", session_id="ses_1", project="p",
...     tool="git_push", level="L4", inputs_digest="a" * 64, policy_digest="b" * 64,
...     contract_digest="c" * 64, reasons=("L4 is always held",),
...     created_at=datetime(2026, 1, 1, tzinfo=UTC),
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
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import AwareDatetime, BaseModel, ConfigDict, StrictStr, ValidationError

from gnomon.firewall.gate.grants import (
    KeyHolder,
    KeyPurpose,
    key_id_of,
    load_private_key,
    signed_document,
)
from gnomon.firewall.kernel.provenance import ShownArgument
from gnomon.firewall.model.clock import iso, utcnow
from gnomon.firewall.model.errors import ForgedApprovalError

APPROVAL_DOMAIN = b"gnomon.approval.v2\x00"
RESOLUTION_DOMAIN = b"gnomon.resolution.v1\x00"
INPUTS_DOMAIN = b"gnomon.action-inputs.v1\x00"
CONTRACT_DOMAIN = b"gnomon.action-contract.v1\x00"
DEFAULT_APPROVAL_TTL = timedelta(minutes=10)


def inputs_digest(tool: str, args: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical action inputs (domain tag, then sorted-key JSON)."""
    doc = {"tool": tool, "args": dict(args)}
    return hashlib.sha256(
        INPUTS_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()


def contract_digest(terms: Mapping[str, Any]) -> str:
    """SHA-256 of the contract terms an approval covers (domain tag, then sorted-key JSON):
    the tool, its level and category as the kernel applied them, and the preconditions
    captured at the proposal."""
    return hashlib.sha256(
        CONTRACT_DOMAIN + orjson.dumps(dict(terms), option=orjson.OPT_SORT_KEYS)
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
    #: the contract terms the approval covers (empty: held by a version before the binding)
    contract_digest: StrictStr = ""
    reasons: tuple[str, ...]
    created_at: AwareDatetime
    deadline: AwareDatetime
    #: the key ids the policy rule lets approve this hold (empty: any pinned approver key)
    approvers: tuple[str, ...] = ()
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
    contract_digest: StrictStr
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
        if isinstance(data, Mapping) and "signature" in data and "contract_digest" not in data:
            raise ForgedApprovalError(
                "forged",
                "approval of the older format (gnomon.approval.v1): it does not cover the "
                "action's contract and preconditions, so it is not accepted",
                hint="sign the approval again with this version's `gnomon approve`",
            )
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
            contract_digest=request.contract_digest,
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


class Resolution(BaseModel):
    """An operator's signed word on a request whose outcome is unknown (claimed, never
    finished: its host died mid-call): ``ran`` (it ran; confirmed by hand) or ``failed``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    request_id: StrictStr
    action_id: StrictStr
    outcome: Literal["ran", "failed"]
    operator: StrictStr
    at: AwareDatetime
    note: StrictStr = ""
    key_id: StrictStr
    signature: StrictStr

    def signed_bytes(self) -> bytes:
        return signed_document(RESOLUTION_DOMAIN, self, at=iso(self.at))

    def to_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "at": iso(self.at)}


class ResolutionSigner(KeyHolder):
    """An operator key (purpose ``policy``) that resolves requests of unknown outcome."""

    purpose = KeyPurpose.POLICY

    def resolve(
        self,
        request_id: str,
        action_id: str,
        outcome: Literal["ran", "failed"],
        *,
        operator: str,
        now: datetime,
        note: str = "",
    ) -> Resolution:
        unsigned = Resolution.model_construct(
            request_id=request_id,
            action_id=action_id,
            outcome=outcome,
            operator=operator,
            at=now,
            note=note,
            key_id=self.key_id,
            signature="",
        )
        signature = base64.b64encode(self._key.sign(unsigned.signed_bytes())).decode("ascii")
        return Resolution.model_validate({**unsigned.__dict__, "signature": signature})


def verify_resolution(
    doc: object, request_id: str, action_id: str, keys: Sequence[Ed25519PublicKey] | None
) -> Resolution:
    """The resolution ``doc`` if it is one of this request (signed by one of ``keys`` when
    given), else :class:`ForgedApprovalError`."""
    try:
        resolution = Resolution.model_validate(doc, strict=False)
    except ValidationError:
        raise ForgedApprovalError("forged", "not a valid resolution") from None
    if (resolution.request_id, resolution.action_id) != (request_id, action_id):
        raise ForgedApprovalError("wrong_request", f"the resolution is not of {request_id}")
    if keys is None:
        return resolution
    key = {key_id_of(k): k for k in keys}.get(resolution.key_id)
    try:
        if key is None:
            raise InvalidSignature
        key.verify(base64.b64decode(resolution.signature, validate=True), resolution.signed_bytes())
    except (InvalidSignature, ValueError):
        raise ForgedApprovalError(
            "forged", f"the resolution of {request_id} is not signed by a pinned operator key"
        ) from None
    return resolution


def check_approval(
    approval: object,
    request: ApprovalRequest,
    keys: Sequence[Ed25519PublicKey],
    *,
    now: datetime,
    authorised: Collection[str] = (),
) -> Approval:
    """The approval, re-validated, if it is a genuine resolution of ``request`` now
    (:func:`verify_approval`, then its expiry: at ``expires_at`` it is expired)."""
    checked = verify_approval(approval, request, keys, authorised=authorised)
    check_expiry(checked, now)
    return checked


def check_expiry(approval: Approval, now: datetime) -> None:
    """Refuse ``approval`` (kind ``expired``) from its ``expires_at`` on."""
    if now >= approval.expires_at:
        raise ForgedApprovalError(
            "expired", f"approval for {approval.request_id} expired at {iso(approval.expires_at)}"
        )


def verify_approval(
    approval: object,
    request: ApprovalRequest,
    keys: Sequence[Ed25519PublicKey],
    *,
    authorised: Collection[str] = (),
) -> Approval:
    """The approval, re-validated, if a pinned key (one of ``authorised`` when that is not
    empty) signed exactly this resolution of ``request``; its expiry is not checked here."""
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
    if authorised and checked.key_id not in authorised:
        raise ForgedApprovalError(
            "unauthorised",
            f"approval for {request.id} is signed by key {checked.key_id}, which the policy "
            "rule that held it does not let approve it",
            hint="ask an approver the rule names (its approvers: key ids or roles)",
        )
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
    if not request.contract_digest or checked.contract_digest != request.contract_digest:
        raise ForgedApprovalError(
            "wrong_digest",
            f"approval for {request.id} covers another contract or precondition set than the "
            "one held (or the hold predates the contract binding)",
            hint="propose the action again and approve the new request",
        )
    return checked


__all__ = [
    "APPROVAL_DOMAIN",
    "CONTRACT_DOMAIN",
    "DEFAULT_APPROVAL_TTL",
    "INPUTS_DOMAIN",
    "RESOLUTION_DOMAIN",
    "Approval",
    "ApprovalRequest",
    "ApprovalSigner",
    "Resolution",
    "ResolutionSigner",
    "approval_bytes",
    "check_approval",
    "check_expiry",
    "contract_digest",
    "inputs_digest",
    "verify_approval",
    "verify_resolution",
]
