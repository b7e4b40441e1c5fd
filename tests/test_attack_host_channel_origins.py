"""Host-channel origin ids are structure, agent-chosen origin ids are text, beside one secret.

Once the log holds one secret record, a shipped export (``log export --sensitivity-ceiling``)
and OTel treat every free text as being as sensitive as the log: a hostile agent can copy what
it read anywhere it writes, a file path it names as its source included. The origin ids of a
channel the host opened (``user:alice``) used to count as such text, so the opening of the
user's channel was withheld from a shipped export. The promise: an event's ``origin`` the host
gave through a channel (:func:`firewall.audit.free_text.host_named`: the event names the
channel) is structure, and so are the tool names of a batch of observations through channels;
an origin id the agent chose (a source it reported reading, without a channel) stays free text
and is withheld, in the shipped file and in OTel spans.

Flips: with ``host_named`` always false, the user's channel is withheld again (the export says
too little); with the agent's records taken for another origin's (``agent_written`` false) and
its tool name for the host's, the origin id the agent chose leaves (too much).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.audit import free_text
from gnomon.firewall.cli import cli
from gnomon.firewall.host import otel
from gnomon.firewall.host.tool_calls import ToolCall
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Sensitivity

SECRET = "wombat_orchid_91"
AGENT_SOURCE = f"file:/vault/{SECRET}"  # the secret, used by the agent as its source's name
STATEMENT = "We deploy on Fridays."
BATCHED = "Releases are tagged on Thursdays."


def _log(url: str) -> None:
    with firewall.open(url) as wall:
        chat = wall.channel(Origin.user("alice"))
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.remember(f"the passphrase is {SECRET}", sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.observe(tool="chat", content=STATEMENT, origin=chat)
            s.observe_many([ToolCall(tool="chat", content=BATCHED, origin=chat)])
            # reported by the agent, no channel: the source's name is the agent's text
            s.observe(tool="fetch", content="ok", origin=Origin.external(AGENT_SOURCE))


def _shipped(url: str, tmp_path: Path) -> list[dict[str, object]]:
    out = tmp_path / "ship.ndjson"
    args = ["log", "export", "--url", url, "--out", str(out), "--sensitivity-ceiling", "internal"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def _kept(lines: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    """The kept (not redacted) events of ``kind``."""
    bodies = [json.loads(line["body"]) for line in lines if isinstance(line.get("body"), str)]
    return [b for b in bodies if b.get("kind") == kind]


def _spans(url: str) -> str:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        otel.export_events(wall.store.events, exporter)
    return json.dumps([json.loads(s.to_json()) for s in exporter.get_finished_spans()])


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _log(url)
    return url


def test_the_host_channels_origin_ships_beside_one_secret(url: str, tmp_path: Path) -> None:
    lines = _shipped(url, tmp_path)
    (opened,) = _kept(lines, "channel.opened")
    assert "user:alice" in json.dumps(opened)
    text = json.dumps(lines)
    assert STATEMENT in text and BATCHED in text  # a batch through the channel ships too
    assert SECRET not in text  # the secret, and the agent's source name carrying it


def test_otel_keeps_the_channels_origin_and_withholds_the_agents(url: str) -> None:
    dump = _spans(url)
    assert "user:alice" in dump
    assert SECRET not in dump


def test_flip_without_host_names_the_channel_is_withheld(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(free_text, "host_named", lambda payload: False)
    lines = _shipped(url, tmp_path)
    assert _kept(lines, "channel.opened") == []
    assert BATCHED not in json.dumps(lines)


def test_flip_taking_the_agents_source_for_anothers_leaks_it(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the agent's report is withheld for its records' text (its source's name among it) and
    # for its tool name: take both for the host's, and the name of the source leaves
    monkeypatch.setattr(free_text, "agent_written", lambda record: False)
    monkeypatch.setattr(free_text, "host_named", lambda payload: True)
    assert SECRET in json.dumps(_shipped(url, tmp_path))
