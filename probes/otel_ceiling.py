"""Probe: OpenTelemetry export respects the sensitivity ceiling and gives deterministic ids.

**Scenario.** A session records an internal fact the user stated, a secret one and a note of
the agent's own, recalls, decides and acts.
The host exports the log twice with the SDK's in-memory exporter, ceiling ``internal``.

**Asserts.**
- No exported span (names, attributes, events) carries the secret text; the secret belief is
  still accounted for by its content hash.
- The user's internal fact's text is exported (the ceiling is not a blanket blackout); the
  agent's note is not (the agent chose its text: free text in a log holding a secret record).
- The session span is the parent of the recall, decision and action spans; the action's tool
  name (text the agent chose, no label) is withheld, since the log holds a secret record.
- Two exports of the same log give the same trace and span ids.

**Does not claim.** That a backend receiving the spans keeps them private, or that text outside
labelled beliefs (queries, summaries, arguments) is exported at all: those leave as hashes only,
and the rest of the unlabelled text (tool names, reasons) takes the log's sensitivity
(``tests/test_otel.py`` attacks it).
"""

from __future__ import annotations

from gnomon.firewall import Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.model.chain import content_hash
from gnomon.firewall.model.states import Sensitivity
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "otel_ceiling"
TITLE = "OpenTelemetry export keeps secret belief text out, hashes in, ids deterministic"

SECRET = "the signing passphrase is wombat-orchid-91"
KEPT = "the deploy window is Tuesday"
NOTE = "the deploy needs the signing step"


def check(url: str, c: Checks) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from gnomon.firewall.host.otel import export_events

    project = project_for(NAME)
    with open_firewall(url) as wall:
        head = wall.store.head()[0]  # a shared store: export this probe's events only
        user = wall.channel(Origin.user("alice"), project=project)
        with wall.session(project=project, actor="coder", user="alice") as s:
            said = s.observe(tool="chat", content=KEPT, origin=user)
            kept = said.content[0]
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)
            s.remember(NOTE, sensitivity=Sensitivity.PUBLIC)
            s.recall("deploy window signing passphrase", "default")
            decision = s.decide("schedule the deploy", depends_on=[kept.id])
            s.act(decision.id, "schedule", {"when": "Tuesday"})
        exports = []
        for _ in range(2):
            exporter = InMemorySpanExporter()
            export_events(wall.store.events(after=head), exporter, ceiling=Sensitivity.INTERNAL)
            exports.append(list(exporter.get_finished_spans()))
    spans = exports[0]
    dump = "\n".join(span.to_json() for span in spans)
    c.expect(SECRET not in dump, "no span carries the secret belief's text")
    c.expect(content_hash(SECRET) in dump, "the secret belief is exported as its content hash")
    c.expect(KEPT in dump, "the user's internal fact's text is exported")
    c.expect(
        NOTE not in dump and content_hash(NOTE) in dump,
        "the agent's note leaves as its content hash only",
    )
    roots = [sp for sp in spans if sp.parent is None and sp.name.startswith("invoke_agent")]
    c.expect(len(roots) == 1, "one session span", got=[sp.name for sp in roots])
    root = roots[0].context.span_id
    children = [sp for sp in spans if sp.parent is not None and sp.parent.span_id == root]
    kinds = {str((sp.attributes or {}).get("gnomon.event.kind")) for sp in children}
    wanted = {"recall.performed", "decision.recorded", "action.taken"}
    c.expect(wanted <= kinds, "the session span parents recall, decision and action spans")
    tool = next((sp for sp in children if sp.name.startswith("execute_tool ")), None)
    c.expect(
        tool is not None and "schedule" not in tool.name,
        "the tool name the agent chose is withheld: the log holds a secret record",
        got=None if tool is None else tool.name,
    )
    ids = [[(sp.name, sp.context.trace_id, sp.context.span_id) for sp in e] for e in exports]
    c.expect(ids[0] == ids[1], "two exports of the same log give the same ids")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
