"""Attack: a key planted where no label looks, then read back through every surface.

A hostile page (or the agent) plants an issued key in fields that are structure rather than
text: an origin id (a URL carrying its token), an observation's tool name, a kernel tool name,
an argument value and a refusal's reason. The promise: one credential rule,
:func:`firewall.audit.credentials.masked` (detect-secrets plus Gnomon's patterns), applied once
per surface, keeps the key out of ``gnomon why`` (a belief and a request, text and JSON),
``gnomon holds`` (text and JSON), the trust report (Markdown, HTML, JSON), OTel spans and
a shipped export, while the structure around it (ids, the rest of the origin) stays readable.

Flip: with ``masked`` the identity, the key is printed by ``gnomon why``, ``gnomon holds`` and
the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.audit import credentials
from gnomon.firewall.cli import cli
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import host

KEY = "sk-live-4f9a1c0ffee77"
TOOL_KEY = "ghp_A1b2C3d4E5f6G7h8"  # a tool name's pattern admits it
PAGE = Origin.external(f"web:https://docs.example/?token={KEY}")


def _planted(url: str) -> dict[str, str]:
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        seen = s.observe(tool=TOOL_KEY, content="Deploys go through ArgoCD.", origin=PAGE)
        with host(wall) as h:
            handle = h.kernel.handle(s)
            denied = handle.request(TOOL_KEY, {})  # an unknown tool: denied, recorded
            held = handle.request("write_file", {"path": "notes.txt", "content": f"key {KEY}"})
        return {
            "belief": seen.content[0].id,
            "session": s.id,
            "denied": denied.request_id,
            "held": held.request_id,
        }


def _cli(*args: str) -> str:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code in (0, 1), done.output
    return done.output


def _surfaces(url: str, ids: dict[str, str], tmp_path: Path) -> dict[str, str]:
    out = {
        "why belief": _cli("why", ids["belief"], "--url", url),
        "why belief json": _cli("why", ids["belief"], "--url", url, "--json"),
        "why denied request": _cli("why", ids["denied"], "--url", url),
        "why held request json": _cli("why", ids["held"], "--url", url, "--json"),
        "holds": _cli("holds", "--url", url),
        "holds json": _cli("holds", "--url", url, "--json"),
    }
    for fmt, flag in (("markdown", ()), ("html", ("--html",)), ("json", ("--json",))):
        out[f"report {fmt}"] = _cli("report", ids["session"], "--url", url, *flag)
    return out


@pytest.fixture
def planted(tmp_path: Path) -> tuple[str, dict[str, str]]:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    return url, _planted(url)


def test_attack_a_planted_key_is_masked_on_every_surface(
    planted: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, ids = planted
    for surface, text in _surfaces(url, ids, tmp_path).items():
        assert KEY not in text and TOOL_KEY not in text, surface
    why = _cli("why", ids["belief"], "--url", url)
    assert ids["belief"] in why and "docs.example" in why  # the structure stays readable


def test_attack_the_key_does_not_leave_in_otel_or_a_shipped_export(
    planted: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from gnomon.firewall.host.otel import export_events

    url, _ids = planted
    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events, exporter)
    spans = "\n".join(s.to_json() for s in exporter.get_finished_spans())
    assert KEY not in spans and TOOL_KEY not in spans
    shipped = tmp_path / "ship.ndjson"
    _cli("log", "export", "--url", url, "--out", str(shipped), "--sensitivity-ceiling", "internal")
    text = shipped.read_text()
    assert KEY not in text and TOOL_KEY not in text


def test_flip_without_the_rule_the_key_is_printed(
    planted: tuple[str, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gnomon.firewall.audit import report
    from gnomon.firewall.cli import history, kernel

    for module in (credentials, report, history, kernel):
        monkeypatch.setattr(module, "masked", lambda text: text)
        if hasattr(module, "masked_tree"):
            monkeypatch.setattr(module, "masked_tree", lambda value: value)
    url, ids = planted
    leaked = {
        s for s, text in _surfaces(url, ids, tmp_path).items() if KEY in text or TOOL_KEY in text
    }
    assert {
        "why belief",
        "why belief json",
        "why denied request",
        "report markdown",
        "report html",
    } <= leaked, leaked


def test_json_surfaces_still_parse(planted: tuple[str, dict[str, str]]) -> None:
    url, ids = planted
    doc = json.loads(_cli("why", ids["belief"], "--url", url, "--json"))
    assert doc
