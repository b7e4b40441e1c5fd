"""Signed action policies: Ed25519 over canonical bytes, verified against pinned operator keys.

``gnomon policy sign FILE --key KEY`` writes ``FILE.sig``: the policy's name, its digest, the
signing key's id and the signature over :meth:`ActionPolicy.canonical_bytes` (domain tag
``gnomon.action-policy.v1``, then canonical JSON of the *validated* document, so what is signed
is what is enforced). :func:`load_action_policy` refuses, with
:class:`~firewall.model.errors.UnsignedPolicyError`, a policy with no signature file, one edited
after
signing, or one signed by a key nobody pinned, unless the host passes the explicit development
flag ``allow_unsigned=True`` (and the kernel then logs that it runs an unsigned policy).

The domain tag differs from the grant, checkpoint and approval tags: a signature made for one
purpose never verifies as another, even under the same key.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall.gate.grants import KeyHolder, KeyPurpose, key_id_of
from gnomon.firewall.kernel.actionpolicy import ActionPolicy, read_policy_file
from gnomon.firewall.model.errors import UnsignedPolicyError

SIGNATURE_SUFFIX = ".sig"


@dataclass(frozen=True, slots=True)
class SignedPolicy:
    """A loaded action policy and how it was vouched for (``key_id`` is ``None`` when the
    development flag let an unsigned policy through)."""

    policy: ActionPolicy
    digest: str
    key_id: str | None
    signature: str | None
    source: str

    @property
    def signed(self) -> bool:
        return self.key_id is not None


class PolicySigner(KeyHolder):
    """Holds the operator key that signs action policies (host or operator side only)."""

    purpose = KeyPurpose.POLICY

    def sign(self, policy: ActionPolicy) -> dict[str, str]:
        signature = self._key.sign(policy.canonical_bytes())
        return {
            "policy": policy.name,
            "digest": policy.digest,
            "key_id": self.key_id,
            "signature": base64.b64encode(signature).decode("ascii"),
        }

    def sign_file(self, path: str | os.PathLike[str]) -> Path:
        """Validate the policy at ``path`` and write its signature to ``path.sig``."""
        policy = ActionPolicy.from_bytes(read_policy_file(path), str(path))
        out = Path(f"{path}{SIGNATURE_SUFFIX}")
        out.write_bytes(orjson.dumps(self.sign(policy), option=orjson.OPT_SORT_KEYS) + b"\n")
        return out


def verify_policy(
    policy: ActionPolicy, doc: object, keys: Sequence[Ed25519PublicKey], source: str
) -> tuple[str, str]:
    """``(key_id, signature)`` if a pinned key signed exactly this policy; else refuse."""
    if not isinstance(doc, dict) or not all(
        isinstance(doc.get(k), str) for k in ("key_id", "signature")
    ):
        raise UnsignedPolicyError(
            f"{source}: the signature file is not a Gnomon policy signature",
            hint="sign the policy with `gnomon policy sign FILE --key KEY`",
        )
    pinned = {key_id_of(k): k for k in keys}
    key = pinned.get(doc["key_id"])
    if key is None:
        raise UnsignedPolicyError(
            f"{source}: signed by key {doc['key_id']}, which is not pinned",
            hint="pin the operator's policy key, or re-sign with a pinned key",
        )
    try:
        key.verify(base64.b64decode(doc["signature"], validate=True), policy.canonical_bytes())
    except (InvalidSignature, ValueError):
        raise UnsignedPolicyError(
            f"{source}: the signature does not verify: the policy was edited after signing, "
            "or the signature was forged",
            hint="review the change and re-sign with `gnomon policy sign FILE --key KEY`",
        ) from None
    return doc["key_id"], doc["signature"]


def load_action_policy(
    path: str | os.PathLike[str],
    *,
    keys: Sequence[Ed25519PublicKey] = (),
    allow_unsigned: bool = False,
) -> SignedPolicy:
    """Load and verify the action policy at ``path`` (signature in ``path.sig``)."""
    source = str(path)
    policy = ActionPolicy.from_bytes(read_policy_file(path), source)
    sig_path = Path(f"{source}{SIGNATURE_SUFFIX}")
    try:
        doc: object = orjson.loads(sig_path.read_bytes())
    except FileNotFoundError:
        doc = None
    except (OSError, orjson.JSONDecodeError):
        doc = {}
    if doc is None or not keys:
        if allow_unsigned:
            return SignedPolicy(policy, policy.digest, None, None, source)
        why = "has no signature file" if doc is None else "cannot be checked: no key is pinned"
        raise UnsignedPolicyError(
            f"{source} {why}; an unsigned action policy refuses to load",
            hint="sign it with `gnomon policy sign FILE --key KEY` and pin the public key "
            "(allow_unsigned=True is for development only, and is logged)",
        )
    try:
        key_id, signature = verify_policy(policy, doc, keys, source)
    except UnsignedPolicyError:
        if allow_unsigned:
            return SignedPolicy(policy, policy.digest, None, None, source)
        raise
    return SignedPolicy(policy, policy.digest, key_id, signature, source)


def reverify(
    loaded: object, keys: Sequence[Ed25519PublicKey], *, allow_unsigned: bool
) -> SignedPolicy:
    """Check a :class:`SignedPolicy` handed to the kernel: its digest is recomputed and its
    signature verified again, so an object built or edited in-process cannot pass as signed."""
    if type(loaded) is not SignedPolicy or type(loaded.policy) is not ActionPolicy:
        raise UnsignedPolicyError(
            "the kernel takes a SignedPolicy from load_action_policy()",
            hint="load the policy with firewall.kernel.load_action_policy(path, keys=[...])",
        )
    policy = ActionPolicy.model_validate(loaded.policy.plain())
    if loaded.key_id is None or loaded.signature is None:
        if not allow_unsigned:
            raise UnsignedPolicyError(
                f"{loaded.source} is unsigned and the kernel was not opened with "
                "allow_unsigned=True",
                hint="sign it with `gnomon policy sign FILE --key KEY`",
            )
        lowered = policy.lowered_unknown_tools()
        if lowered:
            raise UnsignedPolicyError(
                f"{loaded.source} is unsigned and lowers tools the ladder does not know below "
                f"L3 ({', '.join(lowered)}): only a signed policy may",
                hint="sign it with `gnomon policy sign FILE --key KEY`, or drop those levels",
            )
        return SignedPolicy(policy, policy.digest, None, None, loaded.source)
    doc = {"key_id": loaded.key_id, "signature": loaded.signature}
    key_id, signature = verify_policy(policy, doc, keys, loaded.source)
    return SignedPolicy(policy, policy.digest, key_id, signature, loaded.source)


__all__ = [
    "SIGNATURE_SUFFIX",
    "PolicySigner",
    "SignedPolicy",
    "load_action_policy",
    "reverify",
    "verify_policy",
]
