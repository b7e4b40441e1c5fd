"""The kernel's state, rebuilt from the log: every request, its hold, approvals and execution.

Nothing about an action lives only in a process's memory. Each step is an event (kinds below),
and :func:`read_ledger` folds them back into :class:`RequestState` records, so a host that
restarts (or another process, such as ``gnomon holds``) sees the same holds, and a nonce that
was used once is known to be used by every later reader. :func:`read_request` folds only one
request's events (:meth:`~firewall.store.base.Store.request_events`, an indexed read): what the
kernel does on every proposal, status read and approval, so their cost does not grow with the
log. An approval's signature binds its request id, so the nonces that request used are the ones
a replay of it could repeat.

Event kinds: ``action.proposed`` (the proposal, its ruling and preconditions, with the Decision
and Action records), ``action.held`` (the :class:`ApprovalRequest`), ``action.denied``,
``action.expired`` (a hold past its deadline: a denial), ``approval.submitted`` (an approval
written by another process, e.g. ``gnomon approve``), ``approval.accepted``,
``approval.forgery``, ``action.executing`` (the exactly-once claim), ``action.executed`` (with
the Outcome record), ``action.refused`` (a precondition changed), ``action.resolved`` (an
operator's signed word on a request whose outcome is unknown: it ran, or it failed),
``action_policy.loaded``.

An ``approval.accepted`` event is obeyed only if the approval it stores is a resolution of this
request's hold: with the approver keys (what the kernel passes), its signature is verified too.
One that is not (appended by hand, with no approval or a forged one) changes nothing: the hold
stays listed, and the kernel records the event as a forgery (:attr:`RequestState.unverified`).
A stored event the fold cannot read (a field missing or malformed) is skipped and named in
:attr:`Ledger.malformed` (seq, kind, what is wrong), never a ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from gnomon.firewall.kernel.approvals import (
    Approval,
    ApprovalRequest,
    Resolution,
    verify_approval,
    verify_resolution,
)
from gnomon.firewall.log.events import Event, EventDraft
from gnomon.firewall.model.errors import ActionPendingError, ForgedApprovalError, UnknownIdError
from gnomon.firewall.store.base import EXECUTION_CLAIM_KIND, Store

PROPOSED = "action.proposed"
HELD = "action.held"
DENIED = "action.denied"
EXPIRED = "action.expired"
SUBMITTED = "approval.submitted"
ACCEPTED = "approval.accepted"
FORGERY = "approval.forgery"
EXECUTING = EXECUTION_CLAIM_KIND
EXECUTED = "action.executed"
REFUSED = "action.refused"
RESOLVED = "action.resolved"
POLICY_LOADED = "action_policy.loaded"

KINDS = frozenset(
    {
        PROPOSED,
        HELD,
        DENIED,
        EXPIRED,
        SUBMITTED,
        ACCEPTED,
        FORGERY,
        EXECUTING,
        EXECUTED,
        REFUSED,
        RESOLVED,
    }
)

#: Status a request ends in after each kind of event.
_STATUS = {
    HELD: "held",
    DENIED: "denied",
    EXPIRED: "denied",
    ACCEPTED: "approved",
    EXECUTING: "executing",
    EXECUTED: "executed",
    REFUSED: "refused",
}


@dataclass
class RequestState:
    request_id: str
    proposal: dict[str, Any]
    session_id: str | None
    project: str | None
    user: str | None
    status: str = "proposed"
    request: ApprovalRequest | None = None
    reasons: list[str] = field(default_factory=list)
    nonces: set[str] = field(default_factory=set)
    pending: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    forgeries: list[dict[str, Any]] = field(default_factory=list)
    #: seqs of ``approval.submitted`` events some process already handled
    handled: set[int] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    #: the approval of the ``approval.accepted`` event that approved the request
    approval: Approval | None = None
    #: ``approval.accepted`` events not obeyed: ``(seq, why)``
    unverified: list[tuple[int, str]] = field(default_factory=list)
    #: seqs of unverified ``approval.accepted`` events already recorded as forgeries
    reported: set[int] = field(default_factory=set)

    @property
    def outcome_unknown(self) -> bool:
        """Claimed for execution, never finished: the host may have died mid-call."""
        return self.status == "executing"

    @property
    def action_id(self) -> str:
        return str(self.proposal["action_id"])


@dataclass
class Ledger:
    requests: dict[str, RequestState] = field(default_factory=dict)
    by_action: dict[str, str] = field(default_factory=dict)
    nonces: set[str] = field(default_factory=set)
    policy_loads: list[Event] = field(default_factory=list)
    #: stored events the fold could not read: "event #seq (kind): what is wrong"
    malformed: list[str] = field(default_factory=list)

    def holds(self) -> list[RequestState]:
        return [r for r in self.requests.values() if r.status == "held"]

    def unknown_outcomes(self) -> list[RequestState]:
        """Requests claimed for execution and never finished (see ``gnomon holds resolve``)."""
        return [r for r in self.requests.values() if r.outcome_unknown]

    def approved_unclaimed(self) -> list[RequestState]:
        """Requests approved and not claimed yet (a host resumes them; listed until then, so
        an approval never makes a request vanish from ``gnomon holds`` before it runs)."""
        return [r for r in self.requests.values() if r.status == "approved"]

    def find(self, ident: str) -> RequestState | None:
        return self.requests.get(self.by_action.get(ident, ident))


def read_ledger(
    store: Store,
    *,
    events: Iterable[Event] | None = None,
    approvers: Sequence[Ed25519PublicKey] | None = None,
    operators: Sequence[Ed25519PublicKey] | None = None,
) -> Ledger:
    """Fold the log's kernel events into a :class:`Ledger` (one pass). With ``approvers``, an
    ``approval.accepted`` event is obeyed only if its approval verifies against them; with
    ``operators``, an ``action.resolved`` event only if an operator key signed it."""
    ledger = Ledger()
    for event in store.events() if events is None else events:
        if event.kind == POLICY_LOADED:
            ledger.policy_loads.append(event)
        if event.kind not in KINDS:
            continue
        try:
            _fold(ledger, event, approvers, operators)
        except (KeyError, TypeError, ValueError, ValidationError, AttributeError) as exc:
            ledger.malformed.append(f"event #{event.seq} ({event.kind}): {_what(exc)}")
    return ledger


def _what(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"field {exc.args[0]!r} is missing"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "value"
        return f"{where}: {err['msg']}"
    return f"{type(exc).__name__}: {exc}"[:200]


def _fold(
    ledger: Ledger,
    event: Event,
    approvers: Sequence[Ed25519PublicKey] | None,
    operators: Sequence[Ed25519PublicKey] | None,
) -> None:
    data = dict(event.payload)
    ident = data.get("request_id")
    if not isinstance(ident, str) or not ident:
        raise KeyError("request_id")
    if event.kind == PROPOSED:
        action_id = data["action_id"]
        if not isinstance(action_id, str) or not isinstance(data["tool"], str):
            raise ValueError("action_id and tool must be strings")
        if not isinstance(data["args"], dict):
            raise ValueError("args must be a mapping")
        ledger.requests[ident] = RequestState(
            ident,
            data,
            event.session_id,
            event.project,
            event.user,
            status="allowed" if data.get("outcome") == "allow" else "proposed",
        )
        ledger.by_action[action_id] = ident
    state = ledger.requests.get(ident)
    if state is None:
        return
    if event.kind == HELD:
        state.request = ApprovalRequest.model_validate(data["request"])
    state.events.append(event)
    if event.kind == SUBMITTED:
        state.pending.append((event.seq, dict(data.get("approval") or {})))
    if event.kind == FORGERY and isinstance(data.get("accepted_seq"), int):
        state.reported.add(data["accepted_seq"])
    if event.kind in (ACCEPTED, FORGERY):
        done = data.get("submitted_seq")
        if isinstance(done, int):
            state.handled.add(done)
        state.pending = [(s, a) for s, a in state.pending if s != done]
    if event.kind == ACCEPTED:
        try:
            approval = accepted_approval(state, data, approvers)
        except ForgedApprovalError as exc:
            state.unverified.append((event.seq, exc.message))
            return
        state.nonces.add(approval.nonce)
        ledger.nonces.add(approval.nonce)
        if approval.decision == "deny":
            state.status = "denied"
            state.reasons.append(f"denied by {approval.approver}")
            return
        state.approval = approval
    if event.kind == FORGERY:
        state.forgeries.append(data)
        return
    if event.kind == RESOLVED:
        if state.status != "executing":
            return
        try:
            resolution = verify_resolution(
                data.get("resolution"), state.request_id, state.action_id, operators
            )
        except ForgedApprovalError as exc:
            raise ValueError(exc.message) from None
        state.status = "executed" if resolution.outcome == "ran" else "failed"
        state.reasons.append(f"outcome {resolution.outcome}, resolved by {resolution.operator}")
        return
    if event.kind in _STATUS:
        state.status = _STATUS[event.kind]
    for reason in data.get("reasons") or data.get("problems") or ():
        state.reasons.append(str(reason))


def accepted_approval(
    state: RequestState, data: dict[str, Any], approvers: Sequence[Ed25519PublicKey] | None
) -> Approval:
    """The approval an ``approval.accepted`` event of ``state`` stores, if it resolves the
    request's hold (its signature verified against ``approvers`` when given), else
    :class:`ForgedApprovalError`."""
    if state.request is None or state.status != "held":
        raise ForgedApprovalError(
            "wrong_request", f"approval.accepted for {state.request_id}, which is not held"
        )
    doc = data.get("approval")
    if not isinstance(doc, dict):
        raise ForgedApprovalError(
            "forged", f"approval.accepted for {state.request_id} carries no signed approval"
        )
    approval = Approval.from_json(doc)
    if approvers is not None:
        authorised = state.request.approvers
        return verify_approval(approval, state.request, approvers, authorised=authorised)
    request = state.request
    if (approval.request_id, approval.action_id, approval.inputs_digest) != (
        request.id,
        request.action_id,
        request.inputs_digest,
    ) or (approval.policy_digest, approval.contract_digest) != (
        request.policy_digest,
        request.contract_digest,
    ):
        raise ForgedApprovalError(
            "wrong_request", f"approval.accepted for {state.request_id} is another request's"
        )
    return approval


def read_request(
    store: Store,
    request_id: str,
    *,
    approvers: Sequence[Ed25519PublicKey] | None = None,
    operators: Sequence[Ed25519PublicKey] | None = None,
) -> RequestState | None:
    """The state of one request, folded from its own events (an indexed read)."""
    events = store.request_events(request_id)
    found = read_ledger(store, events=events, approvers=approvers, operators=operators)
    return found.requests.get(request_id)


def post_resolution(store: Store, resolution: Resolution) -> Event:
    """Write an operator's ``resolution`` of a request whose outcome is unknown to the log
    (``gnomon holds resolve``); refused unless the request is claimed and unfinished."""
    state = read_request(store, resolution.request_id)
    if state is None or state.action_id != resolution.action_id:
        raise UnknownIdError("request", resolution.request_id)
    if not state.outcome_unknown:
        raise ActionPendingError(
            f"request {resolution.request_id} is {state.status}: only a request whose outcome "
            "is unknown (claimed, never finished) is resolved by hand",
            hint="`gnomon holds` lists them under 'outcome unknown'",
        )
    draft = EventDraft(
        kind=RESOLVED,
        actor=resolution.operator,
        at=resolution.at,
        session_id=state.session_id,
        project=state.project,
        user=state.user,
        data={
            "request_id": resolution.request_id,
            "outcome": resolution.outcome,
            "resolution": resolution.to_json(),
        },
    )
    return store.commit([draft])[0]


def post_approval(store: Store, approval: Approval, *, now: datetime) -> Event:
    """Write ``approval`` to the log as ``approval.submitted`` (the out-of-process channel:
    ``gnomon approve``). Nothing is trusted here: the host's kernel verifies it when it picks
    it up (:meth:`ActionKernel.process_submitted`), and records a bad one as a forgery."""
    return post_submitted(store, approval.request_id, approval.to_json(), now=now)


def post_submitted(store: Store, request_id: str, doc: dict[str, Any], *, now: datetime) -> Event:
    """Write a submitted approval document as it came (the HTTP channel's: it may be malformed
    or forged) to the log as ``approval.submitted``, for the kernel to verify exactly as it
    verifies ``gnomon approve``'s; an unknown ``request_id`` raises and writes nothing."""
    state = read_request(store, request_id)
    if state is None:
        raise UnknownIdError("request", request_id)
    approver = doc.get("approver")
    draft = EventDraft(
        kind=SUBMITTED,
        actor=approver if isinstance(approver, str) and approver else "unknown",
        at=now,
        session_id=state.session_id,
        project=state.project,
        user=state.user,
        data={"request_id": request_id, "approval": doc},
    )
    return store.commit([draft])[0]


__all__ = [
    "ACCEPTED",
    "DENIED",
    "EXECUTED",
    "EXECUTING",
    "EXPIRED",
    "FORGERY",
    "HELD",
    "KINDS",
    "POLICY_LOADED",
    "PROPOSED",
    "REFUSED",
    "RESOLVED",
    "SUBMITTED",
    "Ledger",
    "RequestState",
    "accepted_approval",
    "post_approval",
    "post_resolution",
    "post_submitted",
    "read_ledger",
    "read_request",
]
