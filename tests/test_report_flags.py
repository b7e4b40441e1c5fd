"""``gnomon report`` shows decision flags from every path, and redacts decision summaries above
its ceiling (issue 8, item 5). Written as the attacks: a poisoned contradiction that arrives
after the session ended must not vanish from that session's report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.report import (
    _decision_sensitivity,
    build_report,
    render_html,
    render_markdown,
)
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.states import Authority, Axis, Sensitivity, TruthStatus
from tests.attested import observe_as

SUBJECT = {"subject": "gecko-service", "predicate": "primary_region"}


@pytest.fixture
def wall() -> Iterator[firewall.Firewall]:
    with firewall.open("memory://") as opened:
        yield opened


def user_fact(wall: firewall.Firewall, s: Session, text: str, **kw: object) -> firewall.Belief:
    return observe_as(wall, s, Origin.user("alice"), tool="chat", content=text, **kw).content[0]


def decisions_row(report: object, decision_id: str) -> dict[str, str]:
    table = next(t for t in report.sections if t.title == "Decisions")  # type: ignore[attr-defined]
    (row,) = [r for r in table.rows if r[0] == decision_id]
    return dict(zip(table.columns, row, strict=True))


def test_a_poisoned_contradiction_in_a_later_session_still_shows_in_the_report(
    wall: firewall.Firewall,
) -> None:
    with wall.session(project="p", actor="coder", user="alice") as first:
        fact = user_fact(wall, first, "Gecko runs in eu-west-1.", **SUBJECT)
        decision = first.decide("deploy gecko to eu-west-1", [fact.id])
    clean = build_report(wall.store, first.id)
    assert clean.verdict.level == "green"
    # later, a compromised tool's output contradicts the fact the decision rested on
    with wall.session(project="p", actor="coder", user="alice") as later:
        observe_as(
            wall, later, Origin.tool("status_page"), tool="status_page",
            content="Gecko moved to us-east-1.", **SUBJECT,
        )  # fmt: skip
    assert wall.require_belief(fact.id).truth_status == TruthStatus.CONTRADICTED
    report = build_report(wall.store, first.id)
    flag = f"dependency {fact.id} contradicted"
    assert flag in decisions_row(report, decision.id)["flags"]
    assert any(decision.id in w and flag in w for w in report.warnings)
    assert report.verdict.level == "red"
    assert any("flagged after it was recorded" in a for a in report.verdict.answers)
    assert flag in render_markdown(report) and flag in render_html(report)


def test_sentinel_moves_during_the_session_flag_its_decisions(wall: firewall.Firewall) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        fact = user_fact(wall, s, "The deploy key lives in vault path k1.")
        other = user_fact(wall, s, "Deploys need two approvals.")
        on_fact = s.decide("fetch the deploy key", [fact.id])
        on_other = s.decide("ask for approvals", [other.id])
        # host sentinels act between the session's own events
        wall.quarantine(fact.id, reason="sentinel: tampered", authority=Authority.SENTINEL)
        wall.transition(
            other.id,
            [Move(Axis.TRUTH, TruthStatus.CONTRADICTED)],
            reason="sentinel: policy changed",
            authority=Authority.SENTINEL,
        )
        s.recall("deploy")
    report = build_report(wall.store, s.id)
    assert f"dependency {fact.id} quarantined" in decisions_row(report, on_fact.id)["flags"]
    assert f"dependency {other.id} contradicted" in decisions_row(report, on_other.id)["flags"]
    assert report.verdict.level == "red"


def test_mark_contradicted_after_the_session_shows_in_the_report(
    wall: firewall.Firewall,
) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        fact = user_fact(wall, s, "Gecko runs in eu-west-1.")
        correction = user_fact(wall, s, "Gecko runs in eu-central-1.")
        decision = s.decide("deploy gecko to eu-west-1", [fact.id])
    wall.mark_contradicted(
        fact.id,
        by=correction.id,
        reason="moved last week",
        grant=wall.grant("user", "alice", beliefs=[fact.id, correction.id]),
    )
    report = build_report(wall.store, s.id)
    assert f"dependency {fact.id} contradicted" in decisions_row(report, decision.id)["flags"]
    contradictions = next(t for t in report.sections if t.title == "Contradictions")
    assert any(fact.id in row[3] and correction.id in row[3] for row in contradictions.rows)


def test_decision_summaries_above_the_ceiling_are_redacted(wall: firewall.Firewall) -> None:
    with wall.session(project="p", actor="coder", user="alice") as s:
        key = user_fact(wall, s, "The signing key is k9-zebra.", sensitivity=Sensitivity.SECRET)
        decision = s.decide("sign the release with k9-zebra", [key.id])
        wall.quarantine(key.id, reason="sentinel: leaked", authority=Authority.SENTINEL)
    report = build_report(wall.store, s.id)
    markdown, page = render_markdown(report), render_html(report)
    assert "k9-zebra" not in markdown and "k9-zebra" not in page
    summary = decisions_row(report, decision.id)["summary"]
    assert summary.startswith("[redacted: secret] sha256:")
    assert any(decision.id in w for w in report.warnings)  # flagged, still redacted
    full = render_markdown(build_report(wall.store, s.id, ceiling=Sensitivity.SECRET))
    assert "sign the release with k9-zebra" in full


def test_a_decision_on_an_unknown_dependency_is_redacted_fail_closed(
    wall: firewall.Firewall,
) -> None:
    # the log may name a belief the projections no longer hold: its sensitivity is unknown
    with wall.session(project="p", actor="coder", user="alice") as s:
        fact = user_fact(wall, s, "Gecko runs in eu-west-1.")
        decision = s.decide("deploy gecko", [fact.id])
    report = build_report(wall.store, s.id)
    assert decisions_row(report, decision.id)["summary"] == "deploy gecko"
    stored = wall.store.get_decision(decision.id)
    assert stored is not None
    assert _decision_sensitivity(stored, {}) == Sensitivity.SECRET
