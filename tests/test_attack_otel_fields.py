"""OTel attacks through fields the exporter trusted as structural: in a log holding a secret, a
hostile agent names a ContextPolicy after what it read (a policy name is the agent's choice when
it passes its own policy object) or hands ``Session.log_recall`` a result whose withheld "belief
id" is that text. Neither may leave in clear: a policy name the host did not register, and a
withheld id that is not an id, are unlabelled text and take the level of the log."""

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
        s.log_recall(forged, policy, k=1, now=wall.clock(), source="mem0")
    assert KEY not in _exported(url)
