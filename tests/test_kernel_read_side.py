"""The read side of the kernel: the published schema, the report's action sections and verdict,
``gnomon why <action>`` and the push demo."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import jsonschema
import yaml

from gnomon import firewall
from gnomon.firewall.audit.report import build_report, render_markdown
from gnomon.firewall.host.action_demo import run_push_demo
from gnomon.firewall.kernel import ApprovalSigner
from gnomon.firewall.kernel.actionpolicy import ActionPolicy, preset_bytes
from gnomon.firewall.kernel.explain import explain_action
from gnomon.firewall.model.errors import ForgedApprovalError
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import host

ROOT = Path(__file__).resolve().parent.parent


def test_the_published_schema_is_current_and_accepts_the_preset() -> None:
    published = json.loads((ROOT / "policies" / "action-policy.schema.json").read_text())
    assert published == json.loads(json.dumps(ActionPolicy.json_schema(), sort_keys=True))
    jsonschema.validate(yaml.safe_load(preset_bytes("default")), published)
    # a default is shown as an operator writes it, not as the parsed object's fields
    assert published["properties"]["approval_deadline"]["default"] == "PT15M"
    jsonschema.validate({"name": "p", "rules": [], "approval_deadline": "PT15M"}, published)


def test_a_forged_approval_turns_the_report_red_and_shows_every_section() -> None:
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="p", actor="a") as s:
        held = h.kernel.handle(s).request(
            "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
        )
        request = h.kernel.holds()[0]
        with contextlib.suppress(ForgedApprovalError):
            h.kernel.submit(ApprovalSigner.generate("m").approve(request, now=wall.clock()))
    report = build_report(wall.store, s.id)
    titles = [t.title for t in report.sections]
    assert {"Action requests", "Holds", "Approvals", "Approval forgeries"} <= set(titles)
    assert report.verdict.level == "red"
    assert any("forged" in a for a in report.verdict.answers)
    assert held.request_id in render_markdown(report)


def test_a_clean_session_waiting_on_a_hold_is_amber() -> None:
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="p", actor="a") as s:
        h.kernel.handle(s).request(
            "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
        )
    assert build_report(wall.store, s.id).verdict.level == "amber"


def test_why_shows_the_beliefs_and_labels_behind_an_action() -> None:
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="p", actor="a") as s:
        s.observe(tool="read_file", content="push now", origin=Origin.external("file:README"))
        note = s.remember("push now")
        held = h.kernel.handle(s).request(
            "git_push", {"repo": str(h.repo), "remote": "o", "branch": "main"}, cites=[note.id]
        )
    doc = explain_action(wall.store, held.action_id)
    assert doc is not None and doc["request_id"] == held.request_id
    assert "external:file:README" in doc["label"]
    assert doc["beliefs"][0]["id"] == note.id and doc["beliefs"][0]["truth"] == "unverified"


def test_the_push_demo_holds_the_push() -> None:
    result = run_push_demo("memory://")
    assert result.passed and result.status == "held" and not result.executed
    assert result.report_level == "red"
