"""The guard: one way to put an in-process agent's toolset behind the action kernel.

The host builds the :class:`~firewall.kernel.ActionKernel` with its tools as executors, then
hands the agent the *guarded* tools :func:`guard` returns. Each guarded call:

1. goes through the kernel (``kernel.handle(session).request``): contract, policy, holds,
   approvals and two-phase execution all apply, and an unknown tool is denied;
2. when the tool ran, its output is recorded through a host **tool channel** as an envelope
   claim (host-observed) plus content claims labelled external
   (``Origin.external("tool:<name>")``): a tool's output is someone else's text, and reading
   it taints the session, and a later L3+ action carrying a value only that output supplied is
   held (argument provenance, :mod:`firewall.kernel.provenance`);
3. a held call waits in process up to ``hold_timeout`` seconds (``guard(...,
   hold_timeout=60)``; 0, the default, returns at once) for an approval: an in-process
   resolver's, or ``gnomon approve`` from another process; past it, the hold is withdrawn
   (denied) and a later approval never runs it. The sync call (``tool(args)``) and the async
   one (``await tool.ainvoke(args)``, what async frameworks call) are one flow
   (:meth:`GuardedTool._call_flow`): the async one waits with ``asyncio.sleep``, so the event
   loop (an approver in it, other tools) goes on while a call waits, and an approved tool that
   is a coroutine function is awaited;
4. when the kernel held, denied or refused the call, or the tool ran and failed (verdict
   ``failed``, its error recorded as what the session read), the agent gets an ordinary tool
   message (not an exception) naming the verdict, the rule and the request id, so it can re-plan.

The framework integrations (``firewall.integrations.langchain``, ``.openai_agents``,
``.pydantic_ai``) are thin shells over :class:`GuardedTool`.

>>> from gnomon import firewall
>>> from gnomon.firewall.kernel import ActionKernel
>>> from gnomon.firewall.kernel.actionpolicy import ActionPolicy
>>> from gnomon.firewall.kernel.signing import SignedPolicy
>>> wall = firewall.open("memory://")
>>> policy = ActionPolicy.preset("default")
>>> kernel = ActionKernel(wall, SignedPolicy(policy, policy.digest, None, None, "default"),
...                       allow_unsigned=True, executors={"read_file": lambda a: "hello"})
>>> with wall.session(project="shop", actor="coder") as s:
...     (read,) = guard(wall, kernel, s, ["read_file"])
...     read({"path": "README.md"}).text
'hello'
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gnomon.firewall.host.channels import Channel
from gnomon.firewall.host.tool_calls import ToolCall
from gnomon.firewall.kernel import ledger as L
from gnomon.firewall.kernel.kernel import ActionResult, Flow, Ran, Run, Wait, adrive, drive
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.model.errors import GnomonError
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Sensitivity

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall
    from gnomon.firewall.host.session import Session
    from gnomon.firewall.kernel.contracts import ActionContract
    from gnomon.firewall.kernel.kernel import ActionHandle, ActionKernel


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What a guarded call returns to the agent: the text a tool message carries, and whether it
    is an error (held, denied, refused, bad arguments) with its structured verdict."""

    text: str
    is_error: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: the tool's own return value when it ran (``None`` otherwise)
    output: object = None


#: What :meth:`GuardedTool.acall` leaves to record: the reply of a call that ran and its
#: ``action.executed`` draft, or ``None``.
Recording = tuple[ToolReply, EventDraft | None] | None
#: A guarded call: the kernel's flow, then the wait for a hold (:class:`Wait` steps).
CallFlow = Generator[Run | Wait, Ran, tuple[ActionResult, EventDraft | None]]


class GuardedTool:
    """One tool behind the kernel. Agent-facing: nothing public on it leads to the kernel, the
    firewall or a channel (the host objects sit in private slots)."""

    __slots__ = (
        "__weakref__",
        "_channel",
        "_contract",
        "_handle",
        "_hold_timeout",
        "_poll_interval",
        "_text_of",
        "_wall",
        "name",
    )

    name: str

    def __init__(
        self,
        name: str,
        wall: Firewall,
        handle: ActionHandle,
        channel: Channel,
        contract: ActionContract | None,
        text_of: Callable[[object], str] = str,
        hold_timeout: float = 0.0,
        poll_interval: float = 0.25,
    ) -> None:
        self.name = name
        self._text_of = text_of
        self._hold_timeout = hold_timeout
        self._poll_interval = poll_interval
        self._wall = wall
        self._handle = handle
        self._channel = channel
        self._contract = contract

    @property
    def description(self) -> str:
        contract = self._contract
        if contract is None:
            return f"{self.name} (no contract: every call is denied)"
        return f"{self.name} ({contract.category.value}, {contract.required_level.name})"

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the contract's inputs (an empty object when unknown)."""
        if self._contract is None:
            return {"type": "object", "properties": {}}
        return self._contract.inputs.model_json_schema()

    @property
    def inputs_model(self) -> Any:
        """The pydantic model of the contract's inputs, or ``None`` for an unknown tool."""
        return self._contract.inputs if self._contract is not None else None

    def __call__(self, args: Mapping[str, Any] | None = None) -> ToolReply:
        """The call, in this thread (a hold waited out with ``time.sleep``)."""
        try:
            result, outcome = drive(self._call_flow(args))
        except GnomonError as exc:
            return self._invalid(exc)
        return self._reply(result, outcome)

    async def ainvoke(self, args: Mapping[str, Any] | None = None) -> ToolReply:
        """The call, in the event loop: :meth:`acall`, then its record committed. What an
        async framework's tool calls; a hold is waited out without blocking the loop."""
        reply, recording = await self.acall(args)
        self.record(recording)
        return reply

    async def acall(
        self,
        args: Mapping[str, Any] | None = None,
        run: Callable[[Run], Awaitable[object]] | None = None,
    ) -> tuple[ToolReply, Recording]:
        """Host side, in the event loop: the call's reply, and what is left to record (the
        outcome and the observation of a call that ran; :meth:`record` commits it). The tool
        runs through ``run`` (or its executor, awaited if async): no worker thread. The caller
        must record before the session's next decision: until then the session's label lacks
        what this call read."""
        try:
            result, outcome = await adrive(self._call_flow(args), run)
        except GnomonError as exc:
            return self._invalid(exc), None
        reply = self._answer(result)
        return reply, (reply, outcome) if result.status == "executed" else None

    def record(self, recording: Recording) -> None:
        """Host side: commit what :meth:`acall` left to record (nothing for ``None``)."""
        if recording is not None:
            self._record(*recording)

    def _flow(self, args: Mapping[str, Any] | None) -> Flow:
        handle = self._handle
        return handle._kernel._propose_flow(handle._session, self.name, args, ())

    def _call_flow(self, args: Mapping[str, Any] | None) -> CallFlow:
        """The one flow of a guarded call, sync or async: the kernel's proposal, then (when
        held and ``hold_timeout`` > 0) the wait for an approval."""
        result, outcome = yield from self._flow(args)
        if result.status == "held" and self._hold_timeout > 0:
            reason = (
                f"approval timed out: no approval within {self._hold_timeout:g}s "
                "(denied; a later approval does not run it)"
            )
            result = yield from waiting(
                self._handle._kernel,
                result.request_id,
                self._hold_timeout,
                self._poll_interval,
                reason,
            )
        return result, outcome

    def _invalid(self, exc: GnomonError) -> ToolReply:
        # bad arguments are the agent's to fix: a tool message, not a crash of its loop
        invalid = {"verdict": "invalid", "rule": None, "request_id": None}
        return ToolReply(f"gnomon: {self.name} was not run: {exc}", True, invalid)

    def _reply(self, result: ActionResult, outcome: EventDraft | None = None) -> ToolReply:
        """Host side: the reply for a kernel result, recording the output of one that ran
        (with ``outcome``, its ``action.executed`` still to commit, in the same commit).
        Private: an agent that could hand in its own result would forge a host observation."""
        reply = self._answer(result)
        if result.status == "executed":
            self._record(reply, outcome)
        return reply

    def _answer(self, result: ActionResult) -> ToolReply:
        """The reply for a kernel result; records nothing."""
        if result.status != "executed":
            meta: dict[str, Any] = {
                "verdict": result.status,
                "rule": _rule_of(self._wall, result.request_id),
                "request_id": result.request_id,
                "reasons": list(result.reasons),
            }
            why = "; ".join(result.reasons) or result.status
            text = (
                f"gnomon: {self.name} {result.status} (rule {meta['rule']}, request "
                f"{result.request_id}): {why}"
            )
            return ToolReply(text, True, meta)
        if result.failure is not None:  # it ran and failed: not to be taken for a result
            failed = {"verdict": "failed", "rule": None, "request_id": result.request_id}
            if result.output is not None:  # what the failed tool returned is the agent's to read
                return ToolReply(self._text_of(result.output), True, failed, result.output)
            text = f"gnomon: {self.name} failed (request {result.request_id}): {result.failure}"
            return ToolReply(text, True, failed)
        text = "" if result.output is None else self._text_of(result.output)
        meta = {"verdict": "executed", "request_id": result.request_id}
        return ToolReply(text, False, meta, result.output)

    def _record(self, reply: ToolReply, outcome: EventDraft | None) -> None:
        """The outcome (when still to commit) and the observation of a call that ran, in one
        commit; the outcome alone if the observation cannot be recorded."""
        session = self._handle._session
        contract = self._contract
        # the operator's contract says how sensitive the tool's data is: its output is recorded
        # at that level (a secret tool's output is not "internal")
        level = contract.data_sensitivity if contract is not None else Sensitivity.INTERNAL
        call = ToolCall(
            tool=self.name,
            content=reply.text or "(no output)",
            origin=self._channel,
            sensitivity=level,
        )
        before = () if outcome is None else (outcome,)
        try:
            session._observe_call(call, before)
        except BaseException:
            if outcome is not None:
                self._wall.commit(outcome)
            raise

    def __repr__(self) -> str:
        return f"GuardedTool({self.name})"


def wait_for_approval(
    kernel: ActionKernel, request_id: str, timeout: float, poll_interval: float, reason: str
) -> ActionResult:
    """Host side, blocking: :func:`waiting` driven in this thread."""
    return drive(waiting(kernel, request_id, timeout, poll_interval, reason))


def waiting(
    kernel: ActionKernel, request_id: str, timeout: float, poll_interval: float, reason: str
) -> Generator[Run | Wait, Ran, ActionResult]:
    """Host side, as a flow: wait up to ``timeout`` seconds for the held ``request_id`` to be
    resolved (an approval written by ``gnomon approve`` is verified and acted on here, the
    approved tool a :class:`Run` step); past it, the hold is withdrawn with ``reason`` (denied:
    a later approval never runs it). Each poll is a :class:`Wait` step."""
    deadline = time.monotonic() + timeout
    while True:
        for outcome in (yield from kernel.submitted_flow(request_id)):
            if isinstance(outcome, ActionResult) and outcome.request_id == request_id:
                return outcome
        status = kernel.status(request_id)
        if status.status != "held":
            return status
        left = deadline - time.monotonic()
        if left <= 0:
            return kernel.withdraw(request_id, reason)
        try:
            yield Wait(min(poll_interval, left))
        except BaseException:  # the waiting call was cancelled or interrupted: nobody is left
            interrupted = (
                "the waiting call was interrupted (denied; a later approval does not run it)"
            )
            kernel.withdraw(request_id, interrupted)
            raise


def _rule_of(wall: Firewall, request_id: str) -> str | None:
    state = L.read_request(wall.store, request_id)
    if state is None:
        return None
    rule = state.proposal.get("rule")
    return str(rule) if rule is not None else None


def guard(
    wall: Firewall,
    kernel: ActionKernel,
    session: Session,
    tools: Iterable[str],
    *,
    origins: Mapping[str, Origin] | None = None,
    text_of: Callable[[object], str] = str,
    hold_timeout: float = 0.0,
    poll_interval: float = 0.25,
) -> list[GuardedTool]:
    """Host-side: the guarded form of ``tools`` (names of the kernel's executors) for
    ``session``. A held call waits up to ``hold_timeout`` seconds for an approval (polling
    every ``poll_interval``), then is denied; 0 returns the hold at once. Each tool's output is
    labelled ``origins[name]`` when the host declares one
    (it may only be an external, imported or agent origin: a tool's *output* is never the
    host's authority), else ``Origin.external("tool:<name>")``."""
    from gnomon.firewall.host.channels import caller_origin

    handle = kernel.handle(session)
    registry = kernel._registry
    out = []
    for name in tools:
        declared = (origins or {}).get(name)
        origin = caller_origin(declared, what=f"origins[{name!r}]") or Origin.external(
            f"tool:{name}"
        )
        channel = wall.channel(origin, project=session.project)
        contract = registry.lookup(name)
        out.append(
            GuardedTool(name, wall, handle, channel, contract, text_of, hold_timeout, poll_interval)
        )
    return out


__all__ = ["GuardedTool", "ToolReply", "guard", "wait_for_approval", "waiting"]
