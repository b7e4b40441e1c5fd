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
the Outcome record), ``action.refused`` (a precondition changed), ``action_policy.loaded``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gnomon.firewall.kernel.approvals import Approval, ApprovalRequest
from gnomon.firewall.log.events import Event, EventDraft
from gnomon.firewall.model.errors import UnknownIdError
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
POLICY_LOADED = "action_policy.loaded"

KINDS = frozenset(
    {PROPOSED, HELD, DENIED, EXPIRED, SUBMITTED, ACCEPTED, FORGERY, EXECUTING, EXECUTED, REFUSED}
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

    @property
    def action_id(self) -> str:
        return str(self.proposal["action_id"])


@dataclass
class Ledger:
    requests: dict[str, RequestState] = field(default_factory=dict)
    by_action: dict[str, str] = field(default_factory=dict)
    nonces: set[str] = field(default_factory=set)
    policy_loads: list[Event] = field(default_factory=list)

    def holds(self) -> list[RequestState]:
        return [r for r in self.requests.values() if r.status == "held"]

    def find(self, ident: str) -> RequestState | None:
        return self.requests.get(self.by_action.get(ident, ident))


def read_ledger(store: Store, *, events: Iterable[Event] | None = None) -> Ledger:
    """Fold the log's kernel events into a :class:`Ledger` (one pass)."""
    ledger = Ledger()
    for event in store.events() if events is None else events:
        if event.kind == POLICY_LOADED:
            ledger.policy_loads.append(event)
        if event.kind not in KINDS:
            continue
        data = dict(event.payload)
        ident = str(data.get("request_id", ""))
        if event.kind == PROPOSED:
            state = RequestState(
                ident,
                data,
                event.session_id,
                event.project,
                event.user,
                status="allowed" if data.get("outcome") == "allow" else "proposed",
            )
            ledger.requests[ident] = state
            ledger.by_action[str(data["action_id"])] = ident
        state_or_none = ledger.requests.get(ident)
        if state_or_none is None:
            continue
        state = state_or_none
        state.events.append(event)
        if event.kind == HELD:
            state.request = ApprovalRequest.model_validate(data["request"])
        if event.kind == SUBMITTED:
            state.pending.append((event.seq, dict(data.get("approval") or {})))
        if event.kind in (ACCEPTED, FORGERY):
            done = data.get("submitted_seq")
            if isinstance(done, int):
                state.handled.add(done)
            state.pending = [(s, a) for s, a in state.pending if s != done]
        if event.kind == ACCEPTED:
            nonce = str(data.get("nonce"))
            state.nonces.add(nonce)
            ledger.nonces.add(nonce)
            if data.get("decision") == "deny":
                state.status = "denied"
                state.reasons.append(f"denied by {data.get('approver')}")
                continue
        if event.kind == FORGERY:
            state.forgeries.append(data)
            continue
        if event.kind in _STATUS:
            state.status = _STATUS[event.kind]
        for reason in data.get("reasons") or data.get("problems") or ():
            state.reasons.append(str(reason))
    return ledger


def read_request(store: Store, request_id: str) -> RequestState | None:
    """The state of one request, folded from its own events (an indexed read)."""
    return read_ledger(store, events=store.request_events(request_id)).requests.get(request_id)


def post_approval(store: Store, approval: Approval, *, now: datetime) -> Event:
    """Write ``approval`` to the log as ``approval.submitted`` (the out-of-process channel:
    ``gnomon approve``). Nothing is trusted here: the host's kernel verifies it when it picks
    it up (:meth:`ActionKernel.process_submitted`), and records a bad one as a forgery."""
    state = read_request(store, approval.request_id)
    if state is None:
        raise UnknownIdError("request", approval.request_id)
    draft = EventDraft(
        kind=SUBMITTED,
        actor=approval.approver,
        at=now,
        session_id=state.session_id,
        project=state.project,
        user=state.user,
        data={"request_id": approval.request_id, "approval": approval.to_json()},
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
    "SUBMITTED",
    "Ledger",
    "RequestState",
    "post_approval",
    "read_ledger",
    "read_request",
]
