"""OTel attacks through fields the exporter trusted as structural: in a log holding a secret, a
hostile agent names a ContextPolicy after what it read (a policy name is the agent's choice when
it passes its own policy object) or hands ``Session._log_screened`` (the adapters' host-side
logger) a result whose withheld "belief id" is that text. Neither may leave in clear: a policy
name the host did not register, and a withheld id that is not an id, are unlabelled text and
take the level of the log."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gnomon import firewall
from gnomon.firewall.gate.policy import Reason, ReasonCode
from gnomon.firewall.gate.recall import RecallResult, RejectedItem
from gnomon.firewall.host.otel import export_events
from gnomon.firewall.model.states import Sensitivity

KEY = "wombat_orchid_91"  # read in a secret record; fits a policy name's pattern


def _exported(url: str) -> str:
    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events, exporter)
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())
    return "\n".join(s.to_json() for s in spans)


def _secret_log(url: str) -> None:
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.remember(f"the passphrase is {KEY}", sensitivity=Sensitivity.SECRET)


def test_attack_a_policy_named_after_a_secret_does_not_leave(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _secret_log(url)
    named = firewall.ContextPolicy.preset("default").model_copy(update={"name": KEY})
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.recall("anything", named)
        s.recall("standup", "default")
    dump = _exported(url)
    assert KEY not in dump
    assert '"gnomon.policy": "default"' in dump, "a preset's name is the host's: it stays"


def test_attack_a_forged_withheld_id_does_not_leave(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _secret_log(url)
    policy = firewall.ContextPolicy.preset("default")
    forged = RecallResult(
        query="q",
        policy=policy.name,
        policy_digest=policy.digest,
        rejected=(
            RejectedItem(
                belief_id=KEY,
                reasons=(Reason(code=ReasonCode.TRUTH, detail="x"),),
                origin=firewall.Origin.agent("coder"),
            ),
        ),
    )
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s._log_screened(forged, policy, k=1, now=wall.clock(), source="mem0")
    assert KEY not in _exported(url)


def test_attack_a_read_reported_without_a_channel_is_the_agents_text(tmp_path: Path) -> None:
    """Issue 21, item 3: the agent read the secret in one session and, in the next, reports a
    "read" of it without a channel, labelled ``public``. That record is the agent's text (its
    label carries the ``agent`` class), so the exporter treats it as free text at the log's
    sensitivity and the secret does not leave. Flip run: labelling such a read
    ``external`` alone (as before) lets the key out in the observation's span."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _secret_log(url)
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        read = s.observe(tool="read_file", content=f"notes: {KEY}", sensitivity=Sensitivity.PUBLIC)
    assert KEY not in _exported(url)
    assert "agent:coder" in read.content[0].origin.origin_ids


def test_a_denied_action_marks_the_sessions_root_span_as_an_error(tmp_path: Path) -> None:
    """Issue 21, item 6: an agent whose action the kernel denied must not look like a clean
    run in a trace viewer: the session's root span is ERROR (the control: a session whose
    action ran stays UNSET). Flip run: the root span built with UNSET always fails this."""
    import json

    from gnomon.probes._kernel import host

    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, host(wall) as h:
        with wall.session(project="shop", actor="rogue") as bad:
            assert h.kernel.handle(bad).request("rm_rf", {}).status == "denied"
        with wall.session(project="shop", actor="tidy") as good:
            assert h.kernel.handle(good).request("suggest", {"text": "hi"}).status == "executed"
    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events, exporter)
    roots = {
        json.loads(s.to_json())["attributes"]["gen_ai.agent.name"]: s.status.status_code.name
        for s in exporter.get_finished_spans()
        if s.parent is None and "gen_ai.agent.name" in (s.attributes or {})
    }
    assert roots == {"rogue": "ERROR", "tidy": "UNSET"}
