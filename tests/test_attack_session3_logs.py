"""Attacks on today's operator-facing outputs (the ``gnomon`` logger, OTel): the agent names the
tool it asks for, so a tool name is agent text and must reach neither a log line nor a span
unless it is one the host knows."""

from __future__ import annotations

import logging

import pytest

from gnomon import firewall
from gnomon.firewall.model.errors import InputError
from gnomon.probes._kernel import host

SECRET = "sk-live-51HwombatSECRETkey"


def _text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{r.getMessage()} {getattr(r, 'gnomon', '')}" for r in caplog.records if r.name == "gnomon"
    )


def test_attack_an_unknown_tool_name_never_reaches_the_gnomon_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The agent asks for a 'tool' whose name is a credential (or forges a log line with a
    newline); the kernel refuses it, and the operator's log line about that ruling must name
    neither."""
    wall = firewall.open("memory://")
    forged = f"{SECRET}\nrefused Session.remember(): InputError"
    # refused before anything is recorded: a name is no payload (issue 21)
    with (
        host(wall) as h,
        wall.session(project="p", actor="a") as s,
        caplog.at_level(logging.INFO, logger="gnomon"),
        pytest.raises(InputError, match="tool must be") as refused,
    ):
        h.kernel.handle(s).request(forged, {})
    assert SECRET not in str(refused.value)
    records = [r for r in caplog.records if r.name == "gnomon"]
    assert records, "control: the ruling is logged"
    assert SECRET not in _text(caplog)
    assert all("\n" not in r.getMessage() for r in records)


def _spans(url: str) -> str:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from gnomon.firewall.host.otel import export_events

    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events(), exporter)
    return "\n".join(s.to_json() for s in exporter.get_finished_spans())


def test_attack_an_agent_chosen_action_name_never_reaches_an_otel_span(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``Session.act`` and a kernel request take the tool name from the agent: a credential
    there must not leave in ``gen_ai.tool.name`` or a span name."""
    pytest.importorskip("opentelemetry.sdk")
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with host(wall) as h, wall.session(project="p", actor="a") as s:
            h.kernel.handle(s).request(SECRET, {})
        with wall.session(project="p", actor="a") as s:
            kept = s.remember("the standup is at ten")
            decision = s.decide("post the standup time", depends_on=[kept.id])
            s.act(decision.id, SECRET + "2", {"text": "hi"})
    dump = _spans(url)
    assert "execute_tool" in dump, "control: the actions are exported"
    assert SECRET not in dump


def test_attack_agent_text_in_other_fields_never_reaches_an_otel_span(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An observed tool name, a credential the agent labels public."""
    pytest.importorskip("opentelemetry.sdk")
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="p", actor="a") as s:
        s.observe(tool=SECRET + "3", content="deploys go through ArgoCD")
        s.remember(f"the deploy key is {SECRET}4", sensitivity=firewall.Sensitivity.PUBLIC)
    dump = _spans(url)
    assert "gnomon.belief" in dump
    assert SECRET not in dump
