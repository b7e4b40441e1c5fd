"""The action kernel: the host-side object that arbitrates, holds, approves and executes.

The host builds one :class:`ActionKernel` over its :class:`~firewall.Firewall` with a *signed*
action policy, the pinned operator keys that signed it, the pinned approver keys, and the
executors of its tools. Agent-facing code gets only :meth:`ActionKernel.handle`: an
:class:`ActionHandle` that can propose an action and read its status, nothing else. It cannot
approve a hold, mint or submit an approval, load a policy or register a contract.

Flow of one request (every step an event carrying the session's context ids):

1. **propose**: arguments checked against the contract's input schema, cited beliefs re-read
   from the store, the ruling computed (:func:`firewall.kernel.decide.decide`), preconditions
   captured; ``action.proposed`` with the Decision and Action records;
2. **allow** runs at once; **deny** is final; **hold** opens an :class:`ApprovalRequest` with a
   deadline (``action.held``) and asks the in-process resolver, if any;
3. an approval (in-process :meth:`submit`, or ``gnomon approve`` through the store, picked up by
   :meth:`process_submitted`) is verified against the request and the log; a bad one is an
   ``approval.forgery`` and never executes;
4. **execute** is two-phase: the store's atomic claim (:meth:`Store.claim_execution`) lets one
   process through, every precondition is read again, then the executor runs and the outcome is
   recorded. The outcome never promotes a belief the action rested on.

Execution binds to what runs. Before an approved request is claimed, the approval stored in its
``approval.accepted`` event is verified again against the pinned approver keys, the inputs
digest is recomputed from the exact arguments the executor will get, the contract digest from
the registry's contract and the recorded preconditions, and the approval's own expiry is checked
against the clock (after a restart too). A mismatch is recorded (``approval.forgery`` and
``action.refused``) and raises :class:`ForgedApprovalError`; an expired approval is refused
(``action.refused``, :class:`ActionPendingError`). The executor is never called. An
``approval.accepted`` event that does not verify is not obeyed: the hold stays listed and the
event is recorded as a forgery. :meth:`ActionKernel.process_submitted` also resumes an approved
request no process claimed (its host died after the approval).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.kernel import ledger as L
from gnomon.firewall.kernel.actionpolicy import Outcome as Verdict
from gnomon.firewall.kernel.approvals import (
    Approval,
    ApprovalRequest,
    check_approval,
    check_expiry,
    contract_digest,
    inputs_digest,
    verify_approval,
)
from gnomon.firewall.kernel.contracts import ActionContract, ToolRegistry
from gnomon.firewall.kernel.decide import (
    Arbiter,
    Case,
    Ruling,
    arbitrate,
    decide,
    effective_level,
    rule_verdict,
)
from gnomon.firewall.kernel.preconditions import Snapshot, capture, revalidate
from gnomon.firewall.kernel.provenance import Input, Inputs, ShownArgument, trace
from gnomon.firewall.kernel.signing import SignedPolicy, reverify
from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.model.arguments import checked_call
from gnomon.firewall.model.chain import Action, Decision, Outcome
from gnomon.firewall.model.content import checked_args, checked_tool
from gnomon.firewall.model.errors import (
    ActionPendingError,
    ForgedApprovalError,
    InputError,
    UnknownIdError,
)
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.logbook import kernel_ruling
from gnomon.firewall.model.states import TruthStatus

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall
    from gnomon.firewall.host.session import Session

Executor = Callable[[dict[str, Any]], object]
#: Kernel events after the ruling that are refusals, logged by :func:`kernel_ruling`.
_LOGGED_LATER = frozenset({L.EXPIRED, L.REFUSED, L.FORGERY})
Resolver = Callable[[ApprovalRequest], "Approval | None"]
MAX_CITES = 100
#: The only statuses from which a request may execute: a pending hold never runs.
EXECUTABLE = frozenset({"allowed", "approved"})


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What the agent learns about its request; it can re-plan on ``status``.

    ``status``: ``executed``, ``held`` (waiting for a human), ``denied`` (by policy, a human or
    a timeout), ``refused`` (a precondition changed before execution), ``executing``/``approved``
    (another process has it). ``failure``: why the tool of an ``executed`` request failed (it
    raised, or reported failure), ``None`` when it succeeded or is not known here."""

    request_id: str
    action_id: str
    status: str
    reasons: tuple[str, ...]
    output: object = None
    failure: str | None = None


class ToolFailed(Exception):
    """Raised by a tool (or a driver's ``run``) that ran and reported failure in what it
    returned (an MCP ``isError`` result): the outcome is a failure, and ``output`` is still
    what the agent gets."""

    def __init__(self, why: str, output: object) -> None:
        super().__init__(why)
        self.output = output


@dataclass(frozen=True, slots=True)
class Run:
    """One step of an execution flow: the driver runs ``executor(args)`` (an async driver may run
    ``tool`` its own way, and awaits an awaitable) and sends back ``(output, error)``."""

    tool: str
    executor: Executor
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Wait:
    """One step of a flow that waits (a host polling for an approval): the driver sleeps
    ``seconds`` (an async driver without blocking its event loop) and sends back ``(None,
    None)``."""

    seconds: float


#: What a driver sends back into a flow: the tool's output and the exception it raised.
Ran = tuple[object, Exception | None]
T = TypeVar("T")
#: A request's flow: it yields :class:`Run` once when the action runs, and returns the result
#: with the ``action.executed`` draft still to commit (``None`` when nothing ran). One flow,
#: driven synchronously (:func:`drive`) or asynchronously (:func:`adrive`).
Flow = Generator[Run, Ran, tuple[ActionResult, EventDraft | None]]


def drive(flow: Generator[Run | Wait, Ran, T]) -> T:
    """Run ``flow`` in this thread, calling the executor directly (and sleeping its waits)."""
    try:
        step = next(flow)
        while True:
            ran: Ran = (None, None)
            if isinstance(step, Wait):
                try:
                    time.sleep(step.seconds)
                except BaseException as exc:  # interrupted while waiting: the flow hears of it
                    _failed(flow, exc)
            else:
                try:
                    ran = (step.executor(step.args), None)
                except BaseException as exc:
                    ran = _failed(flow, exc)
            step = flow.send(ran)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def adrive(
    flow: Generator[Run | Wait, Ran, T],
    run: Callable[[Run], Awaitable[object]] | None = None,
) -> T:
    """Run ``flow`` in the event loop: the tool through ``run`` when given (the upstream call
    of an MCP proxy), else its executor, awaited when it returns an awaitable; a wait is an
    ``asyncio.sleep``, so the loop goes on (an approver in the same loop can answer). No worker
    thread between the kernel and the tool."""
    import asyncio

    try:
        step = next(flow)
        while True:
            ran: Ran = (None, None)
            if isinstance(step, Wait):
                try:
                    await asyncio.sleep(step.seconds)
                except BaseException as exc:  # cancelled while waiting: the flow hears of it
                    _failed(flow, exc)
            else:
                try:
                    output = step.executor(step.args) if run is None else run(step)
                    if inspect.isawaitable(output):
                        output = await output
                    ran = (output, None)
                except BaseException as exc:
                    ran = _failed(flow, exc)
            step = flow.send(ran)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _failed(flow: Generator[Any, Ran, Any], exc: BaseException) -> tuple[object, Exception]:
    """What a driver sends ``flow`` when the tool raised ``exc``: the tool's own failure (an
    :class:`Exception`) is an outcome, not our crash. An interruption (a cancellation, a
    ``KeyboardInterrupt``) is thrown into the flow, which records the call as aborted, and
    propagates."""
    if isinstance(exc, Exception):
        return None, exc
    flow.throw(exc)
    raise exc


class ActionKernel:
    """Host-side. See the module docstring."""

    def __init__(
        self,
        wall: Firewall,
        policy: SignedPolicy,
        *,
        operator_keys: Iterable[Ed25519PublicKey] = (),
        approver_keys: Iterable[Ed25519PublicKey] = (),
        registry: ToolRegistry | None = None,
        executors: Mapping[str, Executor] | None = None,
        resolver: Resolver | None = None,
        allow_unsigned: bool = False,
        arbiters: Sequence[Arbiter] = (),
        summarize: Callable[[object], str] = str,
        host_values: Mapping[str, object] | None = None,
    ) -> None:
        self._wall = wall
        # how an executor's output reads in its outcome (the MCP proxy passes the text the agent
        # gets: the default str() of a protocol object is its repr)
        self._summarize = summarize
        # host-declared argument sources: values from the host's own configuration (the
        # user's account, the team's addresses) that supply arguments as trusted inputs
        self._host = Inputs()
        for name, value in (host_values or {}).items():
            self._host.add_value(value, Input("host", f"host:{name}", "host configuration"))
        # The arbitration hook: host-side arbiters (e.g. firewall.host.sentinels.SentinelArbiter)
        # run after the policy's ruling on every proposal and can only make it stricter.
        self._arbiters = tuple(arbiters)
        self._operators = list(operator_keys)
        self._policy = reverify(policy, self._operators, allow_unsigned=allow_unsigned)
        self._approvers = list(approver_keys)
        self._registry = registry or ToolRegistry.builtin()
        self._executors = dict(executors or {})
        self._resolver = resolver
        self._citation = ContextPolicy.preset(self._policy.policy.citation_policy)
        self._wall.commit(
            self._wall.draft(
                L.POLICY_LOADED,
                actor="host",
                now=self._wall.clock(),
                data={
                    "policy": self._policy.policy.name,
                    "digest": self._policy.digest,
                    "key_id": self._policy.key_id,
                    "unsigned": not self._policy.signed,
                    "source": self._policy.source,
                },
            )
        )

    @property
    def policy_digest(self) -> str:
        return self._policy.digest

    def handle(self, session: Session) -> ActionHandle:
        """The narrow, agent-facing handle for ``session``."""
        return ActionHandle(self, session)

    def _logged_tool(self, tool: object) -> str | None:
        """The tool name for the operator's log: only a name the registry knows. The agent
        names the tool it asks for, so an unknown name is agent text (a credential, a forged
        log line) and is never logged."""
        if isinstance(tool, str) and self._registry.lookup(tool) is not None:
            return tool
        return None

    # -- phase one: propose ---------------------------------------------------------------

    def _propose(
        self, session: Session, tool: str, args: Mapping[str, Any] | None, cites: Sequence[str]
    ) -> ActionResult:
        return self._settled(drive(self._propose_flow(session, tool, args, cites)))

    def _propose_flow(
        self, session: Session, tool: str, args: Mapping[str, Any] | None, cites: Sequence[str]
    ) -> Flow:
        """Propose ``tool(args)``; an allowed action is claimed in the same commit as its
        proposal and runs (the flow's one :class:`Run`)."""
        session._check_open()
        if not isinstance(tool, str):
            raise InputError(f"tool must be a tool name, got {type(tool).__name__}")
        try:
            checked_tool(tool)  # bounded, no control characters: a name is not a payload
        except InputError:
            raise InputError(  # without the name: it may be 4 MiB, or a secret
                f"tool must be a tool name of 1-64 letters, digits or _ . : / @ - "
                f"(got {len(tool)} characters)",
                hint="pass the tool's registered name, e.g. 'read_file'",
            ) from None
        if isinstance(cites, str) or not isinstance(cites, Sequence) or len(cites) > MAX_CITES:
            raise InputError("cites must be a list of belief ids", hint="cites=[belief ids]")
        if not all(isinstance(c, str) for c in cites):
            raise InputError("cites must be a list of belief ids", hint="cites=[belief ids]")
        raw = checked_args(args)
        contract = self._registry.lookup(tool)
        validated = contract.checked_inputs(raw) if contract is not None else raw
        now = self._wall.clock()
        # cited ids resolve within the session's project: another tenant's belief is
        # "unknown", exactly as a made-up id (in the ruling's reasons too)
        found = {
            i: b
            for i, b in self._wall.store.get_beliefs(list(cites)).items()
            if b.project == session.project
        }
        policy = self._policy.policy
        supplied = trace(validated, (session._inputs, self._host)) if contract else None
        ruling = decide(
            contract,
            tool,
            policy,
            label=session.label,
            cites=cites,
            found=found,
            citation_policy=self._citation,
            now=now,
            args=validated,
            supplied=supplied,
            named_by_user=session._inputs.named_by_user,
        )
        case = Case(tool, ruling.level, session.id, session.label, tuple(cites), found)
        ruling = arbitrate(ruling, case, self._arbiters)
        snapshots = (
            capture(contract, validated, cites, self._policy.digest) if contract is not None else []
        )
        request_id, digest = new_id("req"), inputs_digest(tool, validated)
        level_name = ruling.level.name if ruling.level is not None else None
        captured = [s.model_dump() for s in snapshots]
        terms = contract_digest(_terms(tool, contract, level_name, captured))
        decision = Decision(
            id=new_id("dec"),
            session_id=session.id,
            summary=f"request {tool} ({ruling.outcome.value})",
            depends_on=list(cites),
            dependency_truth={
                i: found[i].truth_status if i in found else TruthStatus.UNVERIFIED for i in cites
            },
            policy_id=self._citation.name,
            created_at=now,
            flags=[r for r in ruling.reasons if r.startswith("cited")],
        )
        action = Action(
            id=new_id("act"),
            decision_id=decision.id,
            session_id=session.id,
            name=tool,
            args=validated,
            created_at=now,
        )
        label = session.label
        proposed = self._draft(
            session.id,
            session.project,
            session.user,
            L.PROPOSED,
            {
                "request_id": request_id,
                "action_id": action.id,
                "tool": tool,
                # the host's registry has the tool: its name is the host's (structure in exports)
                "registered": contract is not None,
                "args": validated,
                "cites": list(cites),
                "label": label.json_dict() if label is not None else None,
                "level": level_name,
                "outcome": ruling.outcome.value,
                "rule": ruling.rule,
                "reasons": list(ruling.reasons),
                "inputs_digest": digest,
                "policy_digest": self._policy.digest,
                "contract_digest": terms,
                "preconditions": captured,
                "provenance": [a.shown().model_dump() for a in supplied or ()],
            },
            records=Records(decisions=(decision,), actions=(action,)),
            actor=session.actor,
            now=now,
        )
        if ruling.outcome == Verdict.ALLOW:
            # one commit: the proposal and its execution claim (durable before the tool runs)
            return (yield from self._execute_flow(request_id, proposed=proposed))
        self._wall.commit(proposed)
        kernel_ruling(
            ruling.outcome.value,
            tool=self._logged_tool(tool),
            level=ruling.level.name if ruling.level is not None else None,
            rule=ruling.rule,
            request_id=request_id,
            session_id=session.id,
        )
        if ruling.outcome == Verdict.DENY:
            self._record_in(session, request_id, L.DENIED, {"reasons": list(ruling.reasons)})
            return ActionResult(request_id, action.id, "denied", ruling.reasons), None
        shown = tuple(a.shown() for a in supplied or ())
        return (
            yield from self._hold_flow(
                request_id, action.id, session, tool, ruling, (digest, terms), now, shown
            )
        )

    def _hold_flow(
        self,
        request_id: str,
        action_id: str,
        session: Session,
        tool: str,
        ruling: Ruling,
        digests: tuple[str, str],
        now: datetime,
        shown: tuple[ShownArgument, ...] = (),
    ) -> Flow:
        """Record the hold and ask the in-process resolver; an approval it gives runs the
        action in this flow (the driver's executor, awaited by an async driver)."""
        deadline = self._policy.policy.approval_deadline.after(now)
        request = ApprovalRequest(
            id=request_id,
            action_id=action_id,
            session_id=session.id,
            project=session.project,
            tool=tool,
            level=ruling.level.name if ruling.level is not None else "?",
            inputs_digest=digests[0],
            policy_digest=self._policy.digest,
            contract_digest=digests[1],
            reasons=ruling.reasons,
            created_at=now,
            deadline=deadline,
            approvers=tuple(sorted(self._authorised(tool))),
            arguments=shown,
        )
        self._record_in(session, request_id, L.HELD, {"request": request.model_dump(mode="json")})
        if self._resolver is not None:
            answer = self._resolver(request)
            if answer is not None:
                return (yield from self._submit_flow(answer))
        return ActionResult(request_id, action_id, "held", ruling.reasons), None

    # -- approvals ------------------------------------------------------------------------

    def holds(self) -> list[ApprovalRequest]:
        """Pending holds, rebuilt from the log (overdue ones are expired first). An
        ``approval.accepted`` event that does not verify hides no hold: it is recorded as a
        forgery here."""
        ledger = self._expired_ledger()
        for state in ledger.requests.values():
            self._report_unverified(state)
        return [s.request for s in ledger.holds() if s.request]

    def expire(self) -> list[str]:
        """Turn every hold past its deadline into a denial (``action.expired``)."""
        return self._expire(self._ledger())

    def _expired_ledger(self) -> L.Ledger:
        """The ledger after :meth:`expire`: one scan of the log, a second only if a hold
        expired (its ``action.expired`` event changes the ledger)."""
        ledger = self._ledger()
        return self._ledger() if self._expire(ledger) else ledger

    def _ledger(self) -> L.Ledger:
        """Every request's state, approvals verified against the pinned approver keys."""
        return L.read_ledger(self._wall.store, approvers=self._approvers, operators=self._operators)

    def _report_unverified(self, state: L.RequestState) -> None:
        """Record each ``approval.accepted`` event of a pending hold that does not verify (it
        was not obeyed) as an ``approval.forgery``, once. A request that moved on (an accepted
        event of an older version, which stored no approval, on an executed request) is left
        alone: nothing was hidden."""
        if state.status != "held":
            return
        for seq, why in state.unverified:
            if seq not in state.reported:
                detail = f"approval.accepted #{seq}: {why}"
                self._forgery(state, "forged", detail, None, accepted_seq=seq)
                state.reported.add(seq)

    def _expire(self, ledger: L.Ledger) -> list[str]:
        return [s.request_id for s in ledger.holds() if self._expire_one(s)]

    def _expire_one(self, state: L.RequestState) -> bool:
        """Record ``action.expired`` for ``state`` if it is a hold past its deadline."""
        if state.status != "held" or state.request is None:
            return False
        if self._wall.clock() < state.request.deadline:
            return False
        reason = "approval timed out: no approval before the deadline (denied)"
        self._record_for(state.request_id, L.EXPIRED, {"reasons": [reason]}, state=state)
        return True

    def _authorised(self, tool: str) -> frozenset[str]:
        """The approver key ids the rule that holds ``tool`` names (empty: any pinned key),
        from this kernel's signed policy and registry, never from the log."""
        contract = self._registry.lookup(tool)
        if contract is None:
            return frozenset()
        policy = self._policy.policy
        rule = rule_verdict(policy, contract, effective_level(contract, policy)).rule
        return policy.approver_keys(rule)

    def _state(self, request_id: str) -> L.RequestState | None:
        """One request's state from its own events (an indexed read, not a scan of the log)."""
        return L.read_request(
            self._wall.store, request_id, approvers=self._approvers, operators=self._operators
        )

    def _current(self, request_id: str) -> L.RequestState | None:
        """:meth:`_state` after expiring the request if it is an overdue hold."""
        state = self._state(request_id)
        if state is not None and self._expire_one(state):
            state = self._state(request_id)
        return state

    def submit(self, approval: object, *, submitted_seq: int | None = None) -> ActionResult:
        """Resolve a hold with a signed approval (host side). A forged, replayed, expired,
        wrong-key or wrong-digest approval is recorded as ``approval.forgery`` and raises
        :class:`ForgedApprovalError`; an approval executes the action (two-phase)."""
        return self._settled(drive(self._submit_flow(approval, submitted_seq)))

    def _submit_flow(self, approval: object, submitted_seq: int | None = None) -> Flow:
        """:meth:`submit` as a flow (an approval's action is its :class:`Run`)."""
        request_id = _request_of(approval) or ""
        state = self._current(request_id) if request_id else None
        if state is not None and submitted_seq is not None and submitted_seq in state.handled:
            # another host process picked this submission up first: nothing to do here
            return ActionResult(request_id, state.action_id, state.status, ()), None
        if state is None or state.request is None:
            self._forgery(None, "wrong_request", f"no held request {request_id!r}", submitted_seq)
            raise ForgedApprovalError("wrong_request", f"no held request {request_id!r}")
        try:
            checked = check_approval(
                approval,
                state.request,
                self._approvers,
                now=self._wall.clock(),
                authorised=self._authorised(str(state.proposal["tool"])),
            )
            # the signature binds the request id: only this request's nonces can be replayed
            if checked.nonce in state.nonces:
                raise ForgedApprovalError(
                    "replayed", f"approval nonce for {request_id} was already used"
                )
        except ForgedApprovalError as exc:
            self._forgery(state, exc.kind, exc.message, submitted_seq)
            raise
        if state.status != "held":
            raise ActionPendingError(
                f"request {request_id} is {state.status}, not held",
                hint="a timed-out or resolved hold needs a new request",
            )
        self._record_for(
            request_id,
            L.ACCEPTED,
            {
                "decision": checked.decision,
                "approver": checked.approver,
                "key_id": checked.key_id,
                "nonce": checked.nonce,
                "submitted_seq": submitted_seq,
                "approval": checked.to_json(),
            },
            actor=checked.approver,
            state=state,
        )
        if checked.decision == "deny":
            denied = (f"denied by {checked.approver}",)
            return ActionResult(request_id, state.action_id, "denied", denied), None
        return (yield from self._execute_flow(request_id))

    def process_submitted(
        self, request_id: str | None = None
    ) -> list[ActionResult | ForgedApprovalError]:
        """Verify and act on approvals other processes wrote to the store (``gnomon approve``):
        every request's, or only ``request_id``'s (an indexed read, what a host waiting on one
        hold polls). It also resumes an approved request no process claimed (the host died
        between the approval and the claim): the approval is checked again, expiry included."""
        return drive(self.submitted_flow(request_id))

    def submitted_flow(
        self, request_id: str | None = None
    ) -> Generator[Run, Ran, list[ActionResult | ForgedApprovalError]]:
        """:meth:`process_submitted` as a flow: an action an approval lets run is a
        :class:`Run` step (an async driver awaits the tool), its outcome committed here."""
        out: list[ActionResult | ForgedApprovalError] = []
        if request_id is None:
            states = list(self._ledger().requests.values())
        else:
            one = self._state(request_id)
            states = [one] if one is not None else []
        for state in states:
            self._report_unverified(state)
            if state.status == "approved" and not state.pending:
                try:
                    out.append(self._settled((yield from self._execute_flow(state.request_id))))
                except ForgedApprovalError as exc:
                    out.append(exc)
                except ActionPendingError:
                    pass
                continue
            for seq, doc in state.pending:
                try:
                    approval = Approval.from_json(doc)
                except ForgedApprovalError as exc:
                    self._forgery(state, exc.kind, exc.message, seq)
                    out.append(exc)
                    continue
                try:
                    out.append(self._settled((yield from self._submit_flow(approval, seq))))
                except ForgedApprovalError as exc:
                    out.append(exc)
                except ActionPendingError:
                    continue
        return out

    def _forgery(
        self,
        state: L.RequestState | None,
        kind: str,
        detail: str,
        submitted_seq: int | None,
        **extra: object,
    ) -> None:
        data = {"kind": kind, "detail": detail, "submitted_seq": submitted_seq, **extra}
        if state is None:
            self._wall.commit(
                self._wall.draft(L.FORGERY, actor="host", now=self._wall.clock(), data=data)
            )
        else:
            self._record_for(state.request_id, L.FORGERY, data, state=state)

    # -- phase two: execute ---------------------------------------------------------------

    def execute(self, request_id: str) -> ActionResult:
        """Run an approved (or allowed) request; exactly once across processes."""
        return self._execute(request_id)

    def _execute(self, request_id: str) -> ActionResult:
        return self._settled(drive(self._execute_flow(request_id)))

    def _settled(self, done: tuple[ActionResult, EventDraft | None]) -> ActionResult:
        """The result of a flow driven here, its outcome committed."""
        result, outcome = done
        if outcome is not None:
            self._wall.commit(outcome)
        return result

    def _execute_flow(self, request_id: str, *, proposed: EventDraft | None = None) -> Flow:
        """Claim and run ``request_id``. With ``proposed`` (an allowed proposal not yet
        written), the proposal is committed in the claim's transaction."""
        known: L.RequestState | None = None
        if proposed is None:
            known = self._state(request_id)
            if known is None:
                raise UnknownIdError("request", request_id)
            if known.status not in EXECUTABLE:
                raise ActionPendingError(
                    f"request {request_id} is {known.status}: only an allowed or approved "
                    "action executes",
                    hint="a held action needs a signed approval from a pinned approver key",
                )
            self._bound(known)
            claims = [self._draft_for(known, L.EXECUTING, {"request_id": request_id})]
            action_id = known.action_id
        else:
            executing = self._draft(
                proposed.session_id,
                proposed.project,
                proposed.user,
                L.EXECUTING,
                {"request_id": request_id},
            )
            claims = [proposed, executing]
            action_id = str(proposed.data["action_id"])
        claimed = self._wall.claim_execution(request_id, claims)
        if claimed is None:
            reasons = ("another process executed it",)
            return ActionResult(request_id, action_id, "executing", reasons), None
        # an allowed proposal's state comes from the events just committed, not a store read
        state = (
            L.read_ledger(self._wall.store, events=claimed).requests[request_id]
            if known is None
            else known
        )
        now = self._wall.clock()
        problems = revalidate(
            [Snapshot.model_validate(s) for s in state.proposal.get("preconditions", [])],
            store=self._wall.store,
            citation_policy=self._citation,
            policy_digest=self._policy.digest,
            now=now,
        )
        tool = str(state.proposal["tool"])
        executor = self._executors.get(tool)
        if executor is None:
            problems.append(f"no executor is registered for {tool}")
        if problems:
            self._record_for(request_id, L.REFUSED, {"problems": problems}, state=state)
            return ActionResult(request_id, state.action_id, "refused", tuple(problems)), None
        assert executor is not None
        try:
            output, error = yield Run(tool, executor, dict(state.proposal["args"]))
        except BaseException as exc:
            # the driver gave up mid-call (cancelled, shut down, the flow dropped): the claimed
            # request gets its outcome, failed, before the interruption goes on
            aborted = f"aborted mid-call ({type(exc).__name__}): the tool's result is unknown"
            try:
                self._wall.commit(self._executed(state, None, aborted)[1])
            except Exception as failed:  # the interruption stays what the caller sees
                exc.add_note(f"recording the aborted outcome failed: {failed}")
            raise
        if error is not None:
            kept = error.output if isinstance(error, ToolFailed) else None
            return self._executed(state, kept, f"{type(error).__name__}: {error}"[:500])
        contract = self._registry.lookup(tool)
        problem = contract.output_problem(output) if contract is not None else None
        if problem is not None:  # outside its declared schema: a failure, the output withheld
            return self._executed(state, None, problem[:500])
        return self._executed(state, output, None)

    def _bound(self, state: L.RequestState) -> None:
        """Check, before the claim, that what will run is what was approved (see the module
        docstring); a mismatch is recorded and raises, an expired approval is refused."""
        tool, args = state.proposal["tool"], dict(state.proposal["args"])
        digest = inputs_digest(tool, args)
        if state.status == "allowed":
            if digest != state.proposal.get("inputs_digest"):
                self._unbound(state, "wrong_digest", "the stored arguments are not the proposed")
            return
        approval, request = state.approval, state.request
        if approval is None or request is None:
            self._unbound(state, "forged", "no verified approval is recorded for it")
            return
        try:
            authorised = self._authorised(tool)
            verify_approval(approval, request, self._approvers, authorised=authorised)
        except ForgedApprovalError as exc:
            self._unbound(state, exc.kind, exc.message)
        if digest != approval.inputs_digest:
            self._unbound(
                state, "wrong_digest", "the arguments to run are not the ones the approval signed"
            )
        terms = _terms(
            tool,
            self._registry.lookup(tool),
            state.proposal.get("level"),
            state.proposal.get("preconditions"),
        )
        if contract_digest(terms) != approval.contract_digest:
            self._unbound(
                state,
                "wrong_digest",
                "the contract or the recorded preconditions are not the ones the approval signed",
            )
        try:
            check_expiry(approval, self._wall.clock())
        except ForgedApprovalError as exc:
            self._record_for(state.request_id, L.REFUSED, {"problems": [exc.message]}, state=state)
            raise ActionPendingError(
                f"request {state.request_id} was not run: {exc.message}",
                hint="the approval ran out before the action ran; propose it again",
            ) from None

    def _unbound(self, state: L.RequestState, kind: str, detail: str) -> None:
        """Record that ``state``'s execution does not match its approval, and refuse it."""
        why = f"execution refused: {detail}"
        self._forgery(state, kind, why, None, at_execution=True)
        self._record_for(state.request_id, L.REFUSED, {"problems": [why]}, state=state)
        raise ForgedApprovalError(kind, f"request {state.request_id}: {why}")

    def _executed(
        self, state: L.RequestState, output: object, failure: str | None
    ) -> tuple[ActionResult, EventDraft]:
        """The result of a call that ran, and its ``action.executed`` draft (with the outcome):
        ``failure`` names why it failed (``None``: it succeeded); ``output`` is what it
        returned (kept for the agent even when it failed)."""
        request_id = state.request_id
        success = failure is None
        summary = self._summary(output) if failure is None else failure
        reasons = () if failure is None else (failure,)
        outcome = Outcome(
            id=new_id("out"),
            action_id=state.action_id,
            session_id=state.session_id or "",
            success=success,
            summary=summary,
            created_at=self._wall.clock(),
        )
        executed = self._draft_for(
            state,
            L.EXECUTED,
            {"request_id": request_id, "success": success, "reasons": list(reasons)},
            records=Records(outcomes=(outcome,)),
        )
        result = ActionResult(request_id, state.action_id, "executed", reasons, output, failure)
        return result, executed

    def _summary(self, output: object) -> str:
        """An outcome's summary: the output as text (``summarize``), at most 500 characters."""
        return ("" if output is None else self._summarize(output))[:500]

    def withdraw(self, request_id: str, reason: str) -> ActionResult:
        """Host side: a hold still pending becomes a denial now (``action.expired``), e.g. when
        the host's own wait for ``gnomon approve`` ran out. A later approval never runs it."""
        state = self._state(request_id)
        if state is None:
            raise UnknownIdError("request", request_id)
        if state.status == "held":
            self._record_for(request_id, L.EXPIRED, {"reasons": [reason]}, state=state)
        return self.status(request_id)

    # -- status ---------------------------------------------------------------------------

    def status(self, request_id: str, *, project: str | None = None) -> ActionResult:
        """A request's status; with ``project``, a request of another project is unknown."""
        state = self._current(request_id)
        if state is None or (project is not None and state.project != project):
            raise UnknownIdError("request", request_id)
        return ActionResult(request_id, state.action_id, state.status, tuple(state.reasons))

    # -- recording ------------------------------------------------------------------------

    def _draft(
        self,
        session_id: str | None,
        project: str | None,
        user: str | None,
        kind: str,
        data: Mapping[str, Any],
        *,
        records: Records | None = None,
        actor: str = "host",
        now: datetime | None = None,
    ) -> EventDraft:
        return self._wall.draft(
            kind,
            actor=actor,
            now=now or self._wall.clock(),
            session_id=session_id,
            project=project,
            user=user,
            data=data,
            records=records,
            versions={"action_policy_digest": self._policy.digest},
        )

    def _draft_for(
        self,
        state: L.RequestState,
        kind: str,
        data: Mapping[str, Any],
        *,
        records: Records | None = None,
    ) -> EventDraft:
        return self._draft(state.session_id, state.project, state.user, kind, data, records=records)

    def _record_in(
        self, session: Session, request_id: str, kind: str, data: Mapping[str, Any]
    ) -> None:
        """An event about ``request_id``, proposed in ``session`` (this process has it)."""
        draft = self._draft(
            session.id, session.project, session.user, kind, {"request_id": request_id, **data}
        )
        self._wall.commit(draft)

    def _record_for(
        self,
        request_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        records: Records | None = None,
        actor: str = "host",
        state: L.RequestState | None = None,
    ) -> None:
        """An event about ``request_id`` carrying its session's context ids (from ``state``
        when the caller has it, else from the request's events)."""
        if state is None:
            state = self._state(request_id)
        if state is None:
            raise UnknownIdError("request", request_id)
        if kind in _LOGGED_LATER:
            kernel_ruling(
                kind.split(".", 1)[1],
                tool=self._logged_tool(state.proposal.get("tool")),
                request_id=request_id,
                session_id=state.session_id,
            )
        self._wall.commit(
            self._draft(
                state.session_id,
                state.project,
                state.user,
                kind,
                {"request_id": request_id, **data},
                records=records,
                actor=actor,
            )
        )


class ActionHandle:
    """What agent-facing code holds: propose an action, read a request's status. Nothing on
    it leads to the kernel, the firewall, a key or an approval."""

    __slots__ = ("_kernel", "_session")

    def __init__(self, kernel: ActionKernel, session: Session) -> None:
        self._kernel = kernel
        self._session = session

    @checked_call
    def request(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        cites: Sequence[str] = (),
    ) -> ActionResult:
        """Propose ``tool(args)``, citing the beliefs it rests on. Returns a verdict the agent
        can re-plan on; raises only :class:`~firewall.model.errors.GnomonError` on bad input."""
        return self._kernel._propose(self._session, tool, args, cites)

    @checked_call
    def status(self, request_id: str) -> ActionResult:
        """The status of a request of this session's project (another tenant's is unknown)."""
        return self._kernel.status(request_id, project=self._session.project)


def _request_of(approval: object) -> str | None:
    if type(approval) is not Approval:
        return None
    value = object.__getattribute__(approval, "__dict__").get("request_id")
    return value if isinstance(value, str) else None


def _terms(
    tool: str, contract: ActionContract | None, level: object, preconditions: object
) -> dict[str, Any]:
    """The contract terms an approval signs (see :func:`contract_digest`)."""
    return {
        "tool": tool,
        "level": level,
        "category": contract.category.value if contract is not None else None,
        "blast_radius": contract.blast_radius.value if contract is not None else None,
        "reversibility": contract.reversibility.value if contract is not None else None,
        "preconditions": preconditions,
    }


__all__ = [
    "ActionHandle",
    "ActionKernel",
    "ActionResult",
    "Executor",
    "Flow",
    "Ran",
    "Resolver",
    "Run",
    "Wait",
    "adrive",
    "drive",
]
