"""Approvals at their boundaries: an approval is good until one tick before ``expires_at``.

The attacker holds a genuine approval and presents it late: at the instant it expires, or one
tick after. Both sides are pinned (issue 28's "approval still valid AT its expires_at" survivor);
the FLIP of each refusal is the same approval one tick earlier, accepted. The other checks of
:func:`verify_approval` (each field of the resolution against the request) are pinned one field
at a time: a resolution matching the request in every field but one is refused.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnomon.firewall.gate.grants import KeyPurpose, write_keypair
from gnomon.firewall.kernel.approvals import (
    CONTRACT_DOMAIN,
    INPUTS_DOMAIN,
    Approval,
    ApprovalRequest,
    ApprovalSigner,
    ResolutionSigner,
    check_approval,
    check_expiry,
    contract_digest,
    inputs_digest,
    verify_resolution,
)
from gnomon.firewall.model.errors import ForgedApprovalError, KeyFileError

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TTL = timedelta(minutes=10)
SIGNER = ApprovalSigner.generate("alice")
KEYS = [SIGNER.public_key]


def _request(**changes: object) -> ApprovalRequest:
    fields: dict[str, object] = {
        "id": "req_1",
        "action_id": "act_1",
        "session_id": "ses_1",
        "project": "p",
        "tool": "git_push",
        "level": "L4",
        "inputs_digest": "a" * 64,
        "policy_digest": "b" * 64,
        "contract_digest": "c" * 64,
        "reasons": ("L4 is always held",),
        "created_at": T0,
        "deadline": T0 + timedelta(minutes=15),
    }
    return ApprovalRequest.model_validate({**fields, **changes})


REQUEST = _request()
APPROVAL = SIGNER.approve(REQUEST, now=T0, ttl=TTL)


@pytest.mark.parametrize(
    ("moment", "valid"),
    [
        (T0, True),
        (T0 + TTL - timedelta(microseconds=1), True),  # one tick before: still good
        (T0 + TTL, False),  # at expires_at: expired
        (T0 + TTL + timedelta(microseconds=1), False),
    ],
)
def test_an_approval_presented_at_its_expiry_is_refused(moment: datetime, valid: bool) -> None:
    if valid:
        assert check_approval(APPROVAL, REQUEST, KEYS, now=moment).decision == "approve"
        check_expiry(APPROVAL, moment)
    else:
        with pytest.raises(ForgedApprovalError, match="expired at") as err:
            check_approval(APPROVAL, REQUEST, KEYS, now=moment)
        assert err.value.kind == "expired"
        with pytest.raises(ForgedApprovalError, match="expired at"):
            check_expiry(APPROVAL, moment)


@given(offset=st.integers(min_value=-(10**9), max_value=10**9))
def test_approval_expiry_is_a_half_open_interval(offset: int) -> None:
    moment = APPROVAL.expires_at + timedelta(microseconds=offset)
    if offset < 0:
        check_expiry(APPROVAL, moment)
    else:
        with pytest.raises(ForgedApprovalError):
            check_expiry(APPROVAL, moment)


@pytest.mark.parametrize(
    ("field", "kind"),
    [
        ("id", "wrong_request"),
        ("action_id", "wrong_request"),
        ("inputs_digest", "wrong_digest"),
        ("policy_digest", "wrong_digest"),
        ("contract_digest", "wrong_digest"),
    ],
)
def test_an_approval_of_another_request_in_one_field_is_refused(field: str, kind: str) -> None:
    other = _request(**{field: "d" * 64})
    with pytest.raises(ForgedApprovalError) as err:
        check_approval(APPROVAL, other, KEYS, now=T0)
    assert err.value.kind == kind
    check_approval(APPROVAL, REQUEST, KEYS, now=T0)  # FLIP: the request it was made for


def test_a_hold_from_before_the_contract_binding_is_never_approved() -> None:
    legacy = _request(contract_digest="")
    approval = SIGNER.approve(legacy, now=T0)  # its contract digest is empty too: equal
    with pytest.raises(ForgedApprovalError) as err:
        check_approval(approval, legacy, KEYS, now=T0)
    assert err.value.kind == "wrong_digest"


def test_only_the_rules_approvers_resolve_its_hold() -> None:
    bob = ApprovalSigner.generate("bob")
    keys = [*KEYS, bob.public_key]
    approval = bob.approve(REQUEST, now=T0)
    with pytest.raises(ForgedApprovalError) as err:
        check_approval(approval, REQUEST, keys, now=T0, authorised={SIGNER.key_id})
    assert err.value.kind == "unauthorised"
    check_approval(approval, REQUEST, keys, now=T0, authorised={bob.key_id})  # FLIP
    check_approval(approval, REQUEST, keys, now=T0)  # no rule approvers: any pinned key


def test_the_digests_an_approval_binds_are_a_fixed_format() -> None:
    """``gnomon approve`` in one process signs the digests a hold recorded in another: the
    bytes behind them are pinned, and different terms never share a digest (a constant digest
    would let an approval of one contract cover any other)."""
    assert (
        inputs_digest("git_push", {"b": 1, "a": "x"})
        == hashlib.sha256(INPUTS_DOMAIN + b'{"args":{"a":"x","b":1},"tool":"git_push"}').hexdigest()
    )
    terms = {"tool": "git_push", "level": "L4", "preconditions": []}
    assert (
        contract_digest(terms)
        == hashlib.sha256(
            CONTRACT_DOMAIN + b'{"level":"L4","preconditions":[],"tool":"git_push"}'
        ).hexdigest()
    )
    assert contract_digest({**terms, "level": "L3"}) != contract_digest(terms)


@pytest.mark.parametrize("junk", ["!", " ", "*"])
def test_an_approval_signature_spelled_with_junk_is_forged(junk: str) -> None:
    spelled = APPROVAL.signature[:8] + junk + APPROVAL.signature[8:]
    edited = Approval.model_validate({**APPROVAL.model_dump(), "signature": spelled})
    with pytest.raises(ForgedApprovalError) as err:
        check_approval(edited, REQUEST, KEYS, now=T0)
    assert err.value.kind == "forged"


def test_a_denial_and_an_approval_carry_the_time_and_a_fresh_nonce_they_were_made_with() -> None:
    denial = SIGNER.deny(REQUEST, now=T0, ttl=TTL)
    assert denial.decision == "deny" and denial.expires_at == T0 + TTL
    fresh = SIGNER.approve(REQUEST, now=T0)  # made inside the test, where mutmut sees it
    assert len(fresh.nonce) == 32 and int(fresh.nonce, 16) >= 0  # 128 random bits
    assert fresh.nonce != APPROVAL.nonce


def test_an_approval_key_file_is_loaded_for_approvals_only(tmp_path: Path) -> None:
    grant_key, _ = write_keypair(tmp_path, "g", purpose=KeyPurpose.GRANT)
    with pytest.raises(KeyFileError, match="not a approval key"):
        ApprovalSigner.from_file(grant_key, "alice")
    own, _ = write_keypair(tmp_path, "a", purpose=KeyPurpose.APPROVAL)
    signer = ApprovalSigner.from_file(own, "alice")  # FLIP
    assert signer.approver == "alice" and signer.approve(REQUEST, now=T0).approver == "alice"


def test_a_malformed_approval_document_is_refused_typed() -> None:
    doc = {**APPROVAL.to_json(), "decision": "maybe"}
    with pytest.raises(ForgedApprovalError, match="not a valid approval: decision"):
        Approval.from_json(doc)
    assert Approval.from_json(orjson.loads(orjson.dumps(APPROVAL.to_json()))) == APPROVAL


def test_a_resolution_of_unknown_outcome_is_signed_over_its_note_and_time() -> None:
    """An operator's word that a claimed action ran or failed: its note and instant are signed
    (in a pinned time format), and a junk-spelled signature is not the same signature."""
    operator = ResolutionSigner.generate()
    plain = operator.resolve("req_1", "act_1", "failed", operator="op", now=T0)
    assert plain.note == ""
    said = operator.resolve("req_1", "act_1", "ran", operator="op", now=T0, note="checked by hand")
    assert said.note == "checked by hand"
    assert b'"at":"2026-01-01T00:00:00.000000Z"' in said.signed_bytes()
    keys = [operator.public_key]
    assert verify_resolution(said.to_json(), "req_1", "act_1", keys) == said  # FLIP
    for edit in ({"note": "never ran"}, {"outcome": "failed"}):
        with pytest.raises(ForgedApprovalError, match="not signed by a pinned operator key"):
            verify_resolution({**said.to_json(), **edit}, "req_1", "act_1", keys)
    spelled = said.signature[:8] + "!" + said.signature[8:]
    with pytest.raises(ForgedApprovalError, match="not signed by a pinned operator key"):
        verify_resolution({**said.to_json(), "signature": spelled}, "req_1", "act_1", keys)
