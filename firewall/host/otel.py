"""OpenTelemetry export: sessions, recalls, decisions, actions, holds and alerts as spans.

Teams already run a tracing backend; this puts the firewall's log into it with
``opentelemetry-sdk`` (``pip install 'gnomon[otel]'``). The spans are built from the event log,
so exporting the same log twice gives the same spans, ids included:

* a **session** is one span (``invoke_agent {actor}``, GenAI conventions: ``gen_ai.operation.name``,
  ``gen_ai.agent.name``, ``gen_ai.conversation.id``), trace id and span id derived from the
  session id; what the session wrote (beliefs) are span events on it;
* a **recall** (``retrieval``), a **decision** and an **action** (``execute_tool {name}``,
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``) are child spans of their session; the action's
  span id is derived from the action id, so its **hold**, denial, approval and execution spans
  (later events, maybe in another process) are its children;
* a **sentinel alert** and an **origin flag** are spans too (in their session's trace, or a trace
  of their own).

Ids are SHA-256 of a domain tag and the session, action or event id (the event's chain hash), so
they are the same for the same log and different for different logs. Everything else is an
attribute under ``gnomon.*``.

**Redaction.** The text of a belief is exported only when its sensitivity is at or below the
ceiling (``internal`` by default); above it the span event carries the belief's content hash
(``gnomon.belief.content_hash``) and never the text (nor its origin ids). A belief whose origin
includes the ``agent`` class is text the agent chose (it may carry what it read in another
session into a note it labels public), so its text is judged as free text: at the higher of its
label and the log's level (below). Observation blocks,
action arguments, recall queries and decision summaries are exported as hashes only: they carry
no label of their own to decide by. The rest of the unlabelled text a span carries (an action's
tool name, a kernel's reasons, an alert's reason and origin id: a hostile agent can put what it
read into any of them) takes the sensitivity of the whole log, as in a shipped export
(:mod:`firewall.audit.shipping`): when the log holds any record above the ceiling, every
attribute that is not structural (:data:`STRUCTURAL`: ids, digests, states, host-given names;
an id-valued one only when it is an id, the policy only when it is a preset's name: a forged
recall result or a policy object the agent named can fill them) leaves as ``[redacted: LEVEL]``
and its hash. :func:`export_events` given a function that yields
the events reads them twice to know; given a one-pass iterable, or live (:class:`OtelSubscriber`),
it assumes the worst until told otherwise (``above_ceiling=False``) and, either way, switches on
at the first record above the ceiling it sees. Credentials are redacted wherever they are.
Beliefs an import batch created (no session) are span events of a ``gnomon.beliefs.imported``
span.

Two ways in: :func:`export_events` for a log read from a store (``gnomon otel export``), and
:class:`OtelSubscriber`, a :meth:`Firewall.subscribe <firewall.Firewall.subscribe>` subscriber
for live export (a session's span leaves when the session ends).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from gnomon.firewall.model.errors import InputError

try:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event as SpanEvent
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise InputError(
        f"OpenTelemetry export needs opentelemetry-sdk ({exc.name} is not installed)",
        hint="pip install 'gnomon[otel]'",
    ) from None

from gnomon.firewall import __about__
from gnomon.firewall.audit.free_text import host_named, structural
from gnomon.firewall.audit.report import Redactor
from gnomon.firewall.audit.shipping import payload_sensitivity
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.log.events import IMPORTS, Event
from gnomon.firewall.model.chain import Belief, content_hash
from gnomon.firewall.model.origin import OriginClass
from gnomon.firewall.model.states import Sensitivity

#: The default ceiling: belief text above it leaves as its hash only.
DEFAULT_CEILING = Sensitivity.INTERNAL
SCOPE = InstrumentationScope("gnomon", __about__.__version__)
RESOURCE = Resource({"service.name": "gnomon", "service.version": __about__.__version__})
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Kernel events about a request, exported as children of the action's span.
LIFECYCLE = frozenset(
    {
        "action.held",
        "action.denied",
        "action.expired",
        "action.executing",
        "action.executed",
        "action.refused",
        "approval.submitted",
        "approval.accepted",
        "approval.forgery",
    }
)
_FAILED = frozenset({"action.denied", "action.expired", "action.refused", "approval.forgery"})


def _derive(tag: str, key: str, size: int) -> int:
    digest = hashlib.sha256(b"gnomon.otel." + tag.encode() + b"\x00" + key.encode()).digest()
    return int.from_bytes(digest[:size], "big") or 1  # 0 is the invalid id


def trace_id(session_id: str) -> int:
    """The trace of a session: the same for the same session id."""
    return _derive("trace", session_id, 16)


def session_span_id(session_id: str) -> int:
    return _derive("session", session_id, 8)


def action_span_id(action_id: str) -> int:
    return _derive("action", action_id, 8)


def event_span_id(event: Event) -> int:
    return _derive("event", event.hash, 8)


def _ns(moment: str | datetime) -> int:
    when = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return ((when - _EPOCH) // _MICRO) * 1000


_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


#: Text the firewall made itself (an id, a hash, a state): nothing for the scanner to find.
_OWN = re.compile(r"[a-z]{2,5}_[0-9a-f]{28}|sha256:[0-9a-f]{64}|[0-9a-f]{64}|[a-z_.]{1,40}")

#: Attributes whose values the firewall or the host made (ids, digests, states, levels, names the
#: host gave): exported as they are even in a log above the ceiling. Any other string attribute
#: is free text (default-deny).
STRUCTURAL = frozenset(
    {
        "gen_ai.agent.name",
        "gen_ai.conversation.id",
        "gen_ai.data_source.id",
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gen_ai.tool.call.id",
        "gnomon.action.cites",
        "gnomon.action.inputs_digest",
        "gnomon.action.level",
        "gnomon.action.outcome",
        "gnomon.alert.act",
        "gnomon.alert.alert_id",
        "gnomon.alert.belief_ids",
        "gnomon.alert.sentinel",
        "gnomon.belief.content_hash",
        "gnomon.belief.id",
        "gnomon.belief.security",
        "gnomon.belief.sensitivity",
        "gnomon.belief.truth",
        "gnomon.decision.depends_on",
        "gnomon.decision.id",
        "gnomon.event.kind",
        "gnomon.import.store",
        "gnomon.policy",
        "gnomon.project",
        "gnomon.recall.accepted",
        "gnomon.recall.query_hash",
        "gnomon.recall.quoted",
        "gnomon.request.id",
        "gnomon.session.id",
    }
)
#: Attributes judged where the span is built (a tool's name: structure when the host
#: registered the tool, :func:`firewall.audit.free_text.host_named`, else free text).
JUDGED = frozenset({"gen_ai.tool.name"})
#: A belief's own text: exported under its label, at or below the ceiling.
LABELLED = frozenset({"gnomon.belief.statement", "gnomon.belief.origin"})
#: Structural attributes a caller can fill (a forged recall result's ids, the name of a policy
#: object the agent built): structural only when the value has the shape the field promises, an
#: id in the project's format or a preset policy's name; any other value is free text.
ID_VALUED = frozenset(
    {
        "gen_ai.conversation.id",
        "gen_ai.tool.call.id",
        "gnomon.action.cites",
        "gnomon.alert.alert_id",
        "gnomon.alert.belief_ids",
        "gnomon.belief.id",
        "gnomon.decision.depends_on",
        "gnomon.decision.id",
        "gnomon.recall.accepted",
        "gnomon.recall.quoted",
        "gnomon.request.id",
        "gnomon.session.id",
    }
)
_PRESETS = frozenset(ContextPolicy.presets())


@dataclass(slots=True)
class _Session:
    id: str
    start: int
    actor: str
    project: str | None
    model: str | None = None
    end: int | None = None
    events: list[SpanEvent] = field(default_factory=list)
    #: the first of its actions that was denied or failed: the session's span is an error
    failed: str | None = None


class SpanBuilder:
    """Turns events, in log order, into finished spans. Keeps what it needs across events:
    open sessions, the sensitivity of every belief seen (a belief never seen counts as above
    the ceiling), and which action each kernel request is about."""

    def __init__(
        self, ceiling: Sensitivity = DEFAULT_CEILING, *, above_ceiling: bool = True
    ) -> None:
        self.ceiling = ceiling
        self._redact = Redactor(ceiling)
        self._sessions: dict[str, _Session] = {}
        self._requests: dict[str, str] = {}
        #: The sensitivity unlabelled text takes: the log's, once it holds a record above the
        #: ceiling (``above_ceiling``: assume it does until a survey of the log says otherwise).
        self.free_text_level = Sensitivity.SECRET if above_ceiling else Sensitivity.PUBLIC

    def learn(self, event: Event) -> None:
        """Raise the level of unlabelled text to that of ``event``'s records, if higher."""
        level = payload_sensitivity(dict(event.payload))
        if level.rank > self.free_text_level.rank:
            self.free_text_level = level

    # -- attributes -----------------------------------------------------------------------------

    def belief_attributes(self, belief: Belief) -> dict[str, Any]:
        """A belief as span-event attributes: its text only at or below the ceiling."""
        out: dict[str, Any] = {
            "gnomon.belief.id": belief.id,
            "gnomon.belief.sensitivity": belief.sensitivity.value,
            "gnomon.belief.truth": belief.truth_status.value,
            "gnomon.belief.security": belief.security_status.value,
            "gnomon.belief.origin": sorted(belief.origin.origin_ids),
            "gnomon.belief.content_hash": content_hash(belief.statement),
        }
        # text the agent chose is free text: it takes at least the level of the log (the agent
        # may carry what it read in any session into a note it labels public)
        level = belief.sensitivity
        if OriginClass.AGENT in belief.origin.classes:
            level = max(level, self.free_text_level, key=lambda s: s.rank)
        # the redactor decides, by level (the ceiling) and by content (a credential): a statement
        # it would change leaves no stand-in, only the hash above and the flag
        if self._redact(belief.statement, level) == belief.statement:
            out["gnomon.belief.statement"] = belief.statement
            return self._scrubbed(out)
        out["gnomon.belief.redacted"] = True
        # the origin ids of a withheld belief are its text too (a file path can be a secret)
        return self._scrubbed(out, level=level)

    def _text(self, text: str, level: Sensitivity = Sensitivity.PUBLIC) -> str:
        """``text`` as a span may carry it, labelled ``level``: above the ceiling it leaves as
        ``[redacted: LEVEL]`` and its hash; agent text (a tool name it chose, an origin id, a
        statement it labelled public) holding a credential leaves the same way, whatever label it
        came with (:class:`~firewall.audit.report.Redactor`)."""
        if level.rank <= self.ceiling.rank and _OWN.fullmatch(text):
            return text
        return self._redact(text, level)

    def _free(self, text: str) -> str:
        """Unlabelled text: it takes the level of the log (:attr:`free_text_level`)."""
        return self._text(text, self.free_text_level)

    def _made(self, key: str, text: str) -> str:
        """A structural attribute's value: as it is when it has its field's shape, else free."""
        if key in ID_VALUED and not structural("id", text):
            return self._free(text)
        if key == "gnomon.policy" and text not in _PRESETS:
            return self._free(text)
        return self._text(text)

    def _scrubbed(
        self, attributes: Mapping[str, Any], *, level: Sensitivity | None = None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in attributes.items():
            text: Callable[[str], str]
            if key in JUDGED:
                text = str  # judged where it was set
            elif key in STRUCTURAL:
                text = partial(self._made, key)  # firewall- or host-made, if it has the shape
            elif key in LABELLED and level is None:
                text = self._text  # a belief's own text, judged by its label
            else:
                text = self._free if level is None else partial(self._text, level=level)
            if isinstance(value, str):
                value = text(value)
            elif isinstance(value, list | tuple):
                value = [text(v) if isinstance(v, str) else v for v in value]
            out[key] = value
        return out

    # -- spans ------------------------------------------------------------------------------------

    def _context(self, trace: int, span: int) -> SpanContext:
        return SpanContext(trace, span, is_remote=False, trace_flags=_SAMPLED)

    def _span(
        self,
        event: Event,
        name: str,
        attributes: Mapping[str, Any],
        *,
        span_id: int | None = None,
        parent_id: int | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        failed: str | None = None,
        events: Sequence[SpanEvent] = (),
    ) -> ReadableSpan:
        session = event.session_id
        state = self._sessions.get(session) if failed and session else None
        if state is not None and state.failed is None:
            state.failed = failed
        trace = trace_id(session) if session else _derive("trace", event.hash, 16)
        if parent_id is None and session:
            parent_id = session_span_id(session)
        at = _ns(event.at)
        attrs = {"gnomon.event.seq": event.seq, "gnomon.event.kind": event.kind, **attributes}
        if event.project:
            attrs.setdefault("gnomon.project", event.project)
        return ReadableSpan(
            name=name,
            context=self._context(trace, span_id or event_span_id(event)),
            parent=self._context(trace, parent_id) if parent_id else None,
            resource=RESOURCE,
            attributes=self._scrubbed(attrs),
            events=tuple(events),
            kind=kind,
            status=Status(StatusCode.ERROR, failed) if failed else Status(StatusCode.UNSET),
            start_time=at,
            end_time=at,
            instrumentation_scope=SCOPE,
        )

    def _session_span(self, state: _Session, end: int) -> ReadableSpan:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": state.actor,
            "gen_ai.conversation.id": state.id,
            "gnomon.session.id": state.id,
        }
        if state.project:
            attrs["gnomon.project"] = state.project
        if state.model:
            attrs["gen_ai.request.model"] = state.model
        trace = trace_id(state.id)
        return ReadableSpan(
            name=self._text(f"invoke_agent {state.actor}"),
            context=self._context(trace, session_span_id(state.id)),
            parent=None,
            resource=RESOURCE,
            attributes=self._scrubbed(attrs),
            events=tuple(state.events),
            kind=SpanKind.INTERNAL,
            # a denied or failed action marks the whole run, as agent tracers do
            status=Status(StatusCode.ERROR, state.failed)
            if state.failed
            else Status(StatusCode.UNSET),
            start_time=state.start,
            end_time=max(end, state.start),
            instrumentation_scope=SCOPE,
        )

    # -- feeding ----------------------------------------------------------------------------------

    def feed(self, event: Event) -> list[ReadableSpan]:
        """The spans ``event`` finishes (a session's span leaves with its ``session.ended``)."""
        payload = event.payload
        records = event.records() if "records" in payload or IMPORTS in payload else None
        if records is not None:
            self.learn(event)
        out: list[ReadableSpan] = []
        kind, data = event.kind, event.payload
        if kind == "session.started" and records is not None:
            for info in records.sessions:
                self._sessions[info.id] = _Session(
                    info.id, _ns(info.started_at), info.actor, info.project, info.model_id
                )
        state = self._sessions.get(event.session_id or "")
        if state is not None and records is not None:
            for belief in records.beliefs:
                state.events.append(
                    SpanEvent(
                        "gnomon.belief", self.belief_attributes(belief), timestamp=_ns(event.at)
                    )
                )
        if kind == "recall.performed":
            out.append(self._recall(event, data))
        elif kind == "decision.recorded" and records is not None:
            out.extend(self._decision(event, d.id, d.depends_on) for d in records.decisions)
        elif kind in ("action.proposed", "action.taken") and records is not None:
            out.extend(self._decision(event, d.id, d.depends_on) for d in records.decisions)
            out.extend(self._action(event, a.id, a.name, data) for a in records.actions)
        elif kind in LIFECYCLE or kind == "outcome.recorded":
            out.append(self._lifecycle(event, data, records))
        elif kind in ("sentinel.alert", "origin.flagged"):
            out.append(self._alert(event, data))
        elif IMPORTS in data and records is not None and state is None:
            out.append(self._imported(event, data, records.beliefs))
        if kind == "session.ended" and state is not None:
            out.append(self._session_span(self._sessions.pop(state.id), _ns(event.at)))
        return out

    def flush(self, at: datetime | None = None) -> list[ReadableSpan]:
        """Spans of sessions still open (ending now, or at ``at``)."""
        end = _ns(at or datetime.now(UTC))
        spans = [self._session_span(s, end) for s in self._sessions.values()]
        self._sessions.clear()
        return spans

    def _recall(self, event: Event, data: Mapping[str, Any]) -> ReadableSpan:
        rejected: Mapping[str, Sequence[str]] = data.get("rejected") or {}
        at = _ns(event.at)
        withheld = [
            SpanEvent(
                "gnomon.recall.withheld",
                {
                    "gnomon.belief.id": self._made("gnomon.belief.id", belief_id),
                    # reason codes (a fixed vocabulary), or a forged result's free text
                    "gnomon.reasons": [
                        r if structural("rejected", r) else self._free(r) for r in reasons
                    ],
                },
                timestamp=at,
            )
            for belief_id, reasons in sorted(rejected.items())
        ]
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "retrieval",
            "gnomon.recall.accepted": list(data.get("accepted") or []),
            "gnomon.recall.quoted": list(data.get("quoted") or []),
            "gnomon.recall.withheld": len(rejected),
            "gnomon.recall.contradictions": len(data.get("contradictions") or []),
        }
        if event.project:
            attrs["gen_ai.data_source.id"] = event.project
        if isinstance(data.get("query"), str):
            attrs["gnomon.recall.query_hash"] = content_hash(data["query"])
        policy = event.versions.get("policy")
        if isinstance(policy, str):
            attrs["gnomon.policy"] = policy
        return self._span(event, "retrieval gnomon", attrs, events=withheld)

    def _decision(self, event: Event, decision_id: str, depends_on: list[str]) -> ReadableSpan:
        attrs = {"gnomon.decision.id": decision_id, "gnomon.decision.depends_on": depends_on}
        return self._span(
            event, "gnomon.decision", attrs, span_id=_derive("decision", decision_id, 8)
        )

    def _action(
        self, event: Event, action_id: str, name: str, data: Mapping[str, Any]
    ) -> ReadableSpan:
        # a tool the host registered is named by the host: structure; any other is the agent's
        shown = self._text(name) if host_named(data) else self._free(name)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": shown,
            "gen_ai.tool.call.id": action_id,
        }
        for key in ("level", "outcome", "inputs_digest"):
            if isinstance(data.get(key), str):
                attrs[f"gnomon.action.{key}"] = data[key]
        if data.get("cites"):
            attrs["gnomon.action.cites"] = list(data["cites"])
        failed = "denied" if data.get("outcome") == "deny" else None
        return self._span(
            event,
            f"execute_tool {shown}",
            attrs,
            span_id=action_span_id(action_id),
            failed=failed,
        )

    def _lifecycle(self, event: Event, data: Mapping[str, Any], records: Any) -> ReadableSpan:
        found = data.get("request")
        request: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        request_id = data.get("request_id") or request.get("id")
        action_id = request.get("action_id") or (
            self._requests.get(request_id) if isinstance(request_id, str) else None
        )
        if records is not None and records.outcomes:
            action_id = records.outcomes[0].action_id
        if isinstance(request_id, str) and isinstance(action_id, str):
            self._requests[request_id] = action_id
        attrs: dict[str, Any] = {}
        if isinstance(request_id, str):
            attrs["gnomon.request.id"] = request_id
        if isinstance(action_id, str):
            attrs["gen_ai.tool.call.id"] = action_id
        reasons = request.get("reasons") or data.get("reasons")
        if isinstance(reasons, list):
            attrs["gnomon.reasons"] = [str(r) for r in reasons]
        if isinstance(data.get("success"), bool):
            attrs["gnomon.action.success"] = data["success"]
        return self._span(
            event,
            f"gnomon.{event.kind}",
            attrs,
            parent_id=action_span_id(action_id) if isinstance(action_id, str) else None,
            failed=(
                event.kind.split(".", 1)[1]
                if event.kind in _FAILED
                else "failed"
                if data.get("success") is False
                else None
            ),
        )

    def _imported(
        self, event: Event, data: Mapping[str, Any], beliefs: Sequence[Belief]
    ) -> ReadableSpan:
        """An import batch (no session): one span, each belief it created a span event."""
        at = _ns(event.at)
        attrs: dict[str, Any] = {"gnomon.import.count": len(beliefs)}
        if isinstance(data.get("store"), str):
            attrs["gnomon.import.store"] = data["store"]
        written = [
            SpanEvent("gnomon.belief", self.belief_attributes(b), timestamp=at) for b in beliefs
        ]
        return self._span(event, f"gnomon.{event.kind}", attrs, events=written)

    def _alert(self, event: Event, data: Mapping[str, Any]) -> ReadableSpan:
        attrs: dict[str, Any] = {}
        for key in ("alert_id", "sentinel", "reason", "origin_id", "act"):
            if isinstance(data.get(key), str):
                attrs[f"gnomon.alert.{key}"] = data[key]
        if data.get("belief_ids"):
            attrs["gnomon.alert.belief_ids"] = [str(b) for b in data["belief_ids"]]
        return self._span(event, f"gnomon.{event.kind}", attrs)


def export_events(
    events: Iterable[Event] | Callable[[], Iterable[Event]],
    exporter: SpanExporter,
    *,
    ceiling: Sensitivity = DEFAULT_CEILING,
    batch: int = 512,
) -> int:
    """Export a log's events as spans; returns how many spans were exported. Sessions still
    open at the end of the log end at their last event.

    ``events`` a function (``store.events``): read twice, first to learn whether the log holds
    a record above the ceiling (then its unlabelled text is withheld); an iterable: read once,
    withholding unlabelled text throughout (what comes later is unknown)."""
    if callable(events):
        builder = SpanBuilder(ceiling, above_ceiling=False)
        for event in events():
            if "records" in event.payload or IMPORTS in event.payload:
                builder.learn(event)
        events = events()
    else:
        builder = SpanBuilder(ceiling)
    pending: list[ReadableSpan] = []
    count = 0
    last: datetime | None = None
    for event in events:
        last = datetime.fromisoformat(event.at)
        pending.extend(builder.feed(event))
        if len(pending) >= batch:
            exporter.export(pending)
            count += len(pending)
            pending = []
    pending.extend(builder.flush(last))
    if pending:
        exporter.export(pending)
        count += len(pending)
    return count


class JsonLinesExporter(SpanExporter):
    """A collector-free exporter: each span as one line of the SDK's JSON form, handed to
    ``write`` as UTF-8 bytes (a file, stdout's buffer)."""

    def __init__(self, write: Callable[[bytes], object]) -> None:
        self._write = write

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._write(b"".join((span.to_json(indent=None) + "\n").encode() for span in spans))
        return SpanExportResult.SUCCESS


class OtelSubscriber:
    """Live export: ``wall.subscribe(OtelSubscriber(exporter))``. Each commit's finished spans
    go to ``exporter`` after the commit is durable."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        ceiling: Sensitivity = DEFAULT_CEILING,
        above_ceiling: bool = True,
    ) -> None:
        """``above_ceiling``: may the log already hold records above the ceiling? (True unless
        the host knows better, e.g. a fresh store: then unlabelled text leaves in clear until
        the first such record is committed.)"""
        self.exporter = exporter
        self.builder = SpanBuilder(ceiling, above_ceiling=above_ceiling)

    def __call__(self, events: list[Event]) -> None:
        spans = [span for event in events for span in self.builder.feed(event)]
        if spans:
            self.exporter.export(spans)


__all__ = [
    "DEFAULT_CEILING",
    "ID_VALUED",
    "LABELLED",
    "LIFECYCLE",
    "STRUCTURAL",
    "JsonLinesExporter",
    "OtelSubscriber",
    "SpanBuilder",
    "action_span_id",
    "event_span_id",
    "export_events",
    "session_span_id",
    "trace_id",
]
