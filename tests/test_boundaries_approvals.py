"""Approvals at their boundaries: an approval is good until one tick before ``expires_at``.

The attacker holds a genuine approval and presents it late: at the instant it expires, or one
tick after. Both sides are pinned (issue 28's "approval still valid AT its expires_at" survivor);
the FLIP of each refusal is the same approval one tick earlier, accepted. The other checks of
:func:`verify_approval` (each field of the resolution against the request) are pinned one field
at a time: a resolution matching the request in every field but one is refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnomon.firewall.kernel.approvals import (
    ApprovalRequest,
    ApprovalSigner,
    check_approval,
    check_expiry,
)
from gnomon.firewall.model.errors import ForgedApprovalError

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
