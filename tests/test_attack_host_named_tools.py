"""Host-given names are structure, agent-chosen names are text, in a log holding one secret.

Once the log holds one secret record, shipping and OTel treat every free text as being as
sensitive as the log (a hostile agent can copy what it read anywhere it writes). A tool name
used to count as free text wherever it appeared, so the user's public statement, observed
through the host's channel as ``chat``, was withheld from a shipped export, and a registered
tool's span lost its name. The promise: a tool name the host registered
(:func:`firewall.audit.free_text.host_named`: the kernel found its contract in the host's
registry, or the observation came through a host channel) is structure; one the agent chose (an
unknown tool, a call reported without a channel) stays free text and is withheld.

Flip: with ``host_named`` always false, the user's statement is withheld again (the
export says too little); with it always true, the agent's tool name leaves (too much).
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
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Sensitivity
from gnomon.probes._kernel import host

STATEMENT = "We deploy on Fridays."
AGENT_TOOL = "wombat_orchid_91"  # the secret, used by the agent as a tool name


def _log(url: str) -> None:
    with firewall.open(url) as wall:
        chat = wall.channel(Origin.user("alice"))
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.remember(f"the passphrase is {AGENT_TOOL}", sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.observe(tool="chat", content=STATEMENT, origin=chat)
            s.observe(tool=AGENT_TOOL, content="ok")  # reported by the agent, no channel
            with host(wall) as h:
                handle = h.kernel.handle(s)
                assert handle.request("read_file", {"path": "README.md"}).status == "executed"
                assert handle.request(AGENT_TOOL, {}).status == "denied"


def _shipped(url: str, tmp_path: Path) -> str:
    out = tmp_path / "ship.ndjson"
    args = ["log", "export", "--url", url, "--out", str(out), "--sensitivity-ceiling", "internal"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    return out.read_text()


def _spans(url: str) -> list[dict[str, object]]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        otel.export_events(wall.store.events, exporter)
    return [json.loads(s.to_json()) for s in exporter.get_finished_spans()]


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _log(url)
    return url


def test_the_users_public_statement_ships_beside_one_secret(url: str, tmp_path: Path) -> None:
    text = _shipped(url, tmp_path)
    assert STATEMENT in text
    assert AGENT_TOOL not in text  # the secret, and the agent's tool name carrying it


def test_a_registered_tools_span_keeps_its_name_and_the_agents_does_not(url: str) -> None:
    names = [str(s["name"]) for s in _spans(url)]
    dump = json.dumps(_spans(url))
    assert "execute_tool read_file" in names
    assert AGENT_TOOL not in dump


def test_flip_without_host_names_the_statement_is_withheld(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(free_text, "host_named", lambda payload: False)
    monkeypatch.setattr(otel, "host_named", lambda payload: False)
    assert STATEMENT not in _shipped(url, tmp_path)
    assert "execute_tool read_file" not in [str(s["name"]) for s in _spans(url)]


def test_flip_treating_every_name_as_the_hosts_leaks_the_agents(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otel, "host_named", lambda payload: True)
    assert AGENT_TOOL in json.dumps(_spans(url))
