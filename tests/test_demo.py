"""The demo scenario: a poisoned repository file never becomes trusted context.

These assertions are the demo's promise, stated once more independently of its own checks: if
the demo's verdict logic had a bug that always said PASS, these would still catch a regression.
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.host.demo import COPIES, DemoResult, run_demo
from gnomon.firewall.model.states import SecurityStatus, TruthStatus


@pytest.fixture(scope="module", params=["sqlite", "memory"])
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("demo") / "demo.db"
        return run_demo(f"sqlite:///{path}")
    return run_demo("memory://")


def test_every_check_passes(outcome: DemoResult) -> None:
    failed = [c for c in outcome.checks if not c.passed]
    assert not failed
    assert outcome.passed
    assert outcome.verdict.startswith("VERDICT: PASS")
    assert "0 poisoned memories in trusted context" in outcome.verdict
    assert f"{COPIES + 2} held as unverified" in outcome.verdict


def test_poison_is_the_file_the_summary_and_every_copy(outcome: DemoResult) -> None:
    assert len(outcome.copy_ids) == COPIES
    assert len(set(outcome.poison_ids)) == COPIES + 2


@pytest.mark.parametrize("policy", ["default", "planner"])
def test_poison_absent_from_trusted_policies(outcome: DemoResult, policy: str) -> None:
    view = outcome.recalls[policy]
    poison = set(outcome.poison_ids)
    assert poison.isdisjoint(view.accepted)
    assert poison.isdisjoint(view.quoted)
    assert "ADMIN_TOKEN" not in view.context
    assert "sk-live" not in view.context


def test_reference_shows_poison_only_as_quoted_data(outcome: DemoResult) -> None:
    view = outcome.recalls["reference"]
    poison = set(outcome.poison_ids)
    assert poison.isdisjoint(view.accepted)
    assert view.poison_quoted and set(view.poison_quoted) <= poison
    trusted, _, rest = view.context.partition("## Quoted data")
    assert "ADMIN_TOKEN" not in trusted
    assert "<quoted-data" in rest


def test_user_fact_accepted_under_default(outcome: DemoResult) -> None:
    assert outcome.recalls["default"].user_fact_accepted
    assert outcome.user_fact_id in outcome.recalls["default"].accepted


def test_audit_path_sees_all_poison(outcome: DemoResult) -> None:
    assert set(outcome.audit_poison) == set(outcome.poison_ids)


def test_sentinel_quarantine_removes_it_from_reference_but_not_audit(outcome: DemoResult) -> None:
    assert outcome.quarantined_id == outcome.poison_content_id
    # the poison holds a live key: the reference policy withholds it even before the
    # quarantine (one credential rule on every recall path, issue 21), and after it
    assert not outcome.quoted_before_quarantine
    assert not outcome.quoted_after_quarantine
    assert outcome.audit_shows_quarantined


def test_planted_copies_promote_nothing(outcome: DemoResult) -> None:
    assert set(outcome.poison_truth.values()) == {TruthStatus.UNVERIFIED.value}


def test_log_verifies_and_demo_is_fast(outcome: DemoResult) -> None:
    assert outcome.log_ok
    assert outcome.events > COPIES
    assert outcome.seconds < 10


def test_result_is_json_serializable(outcome: DemoResult) -> None:
    data = json.loads(json.dumps(outcome.to_json()))
    assert data["passed"] is True
    assert data["poison_in_trusted_context"] == 0
    assert "context" not in data["recalls"]["default"]


def test_store_state_after_demo(tmp_path: Path) -> None:
    """Reopen the demo's store: the quarantine and the labels persisted."""
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    result = run_demo(url)
    with firewall.open(url) as wall:
        poisoned = wall.require_belief(result.poison_content_id)
        summary = wall.require_belief(result.summary_id)
    assert poisoned.security_status == SecurityStatus.QUARANTINED
    assert "external:file:DEVELOPMENT.md" in summary.origin.origin_ids
    assert summary.origin.tainted


def test_narration_is_reported(tmp_path: Path) -> None:
    lines: list[str] = []
    run_demo("memory://", on_step=lines.append)
    assert any(line.startswith("Session A") for line in lines)
    assert any(line.startswith("Session B") for line in lines)


def test_module_examples_run() -> None:
    failures, tried = doctest.testmod(firewall.host.demo, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
