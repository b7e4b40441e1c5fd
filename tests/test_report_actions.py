"""The trust report an auditor reads: each action with its verdict, rule, reasons (once), level
and outcome; summaries as text; bookkeeping folded; how a trusted belief became trusted.

The sessions are real: the action kernel with the default signed policy (a read that runs, an
L4 push held, a tool with no contract denied), and an imported mem0 memory adopted by a grant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.audit.report import build_report, render_markdown, trusted_how
from gnomon.firewall.cli import cli
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.host.store_adoption import adopt_store
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.probes._kernel import host


class Result:
    """A protocol object whose default ``str`` is its repr, as an MCP ``CallToolResult`` is."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"meta=None content=[TextContent(text={self.text!r})]"


def _tables(report: Any) -> dict[str, Any]:
    return {t.title: t for t in report.sections}


def test_each_action_shows_verdict_rule_reasons_once_level_and_outcome() -> None:
    wall = firewall.open("memory://")
    with host(wall) as h, wall.session(project="p", actor="coder") as s:
        handle = h.kernel.handle(s)
        ran = handle.request("read_file", {"path": "README.md"})
        held = handle.request(
            "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
        )
        denied = handle.request("format_disk", {"device": "/dev/sda"})
    assert (ran.status, held.status, denied.status) == ("executed", "held", "denied")
    report = build_report(wall.store, s.id)
    tables = _tables(report)

    requests = tables["Action requests"]
    assert requests.columns == (
        "request", "tool", "level", "verdict", "rule", "outcome", "reasons",
    )  # fmt: skip
    by_request = {row[0]: dict(zip(requests.columns, row, strict=True)) for row in requests.rows}
    push, unknown = by_request[held.request_id], by_request[denied.request_id]
    assert (push["level"], push["verdict"], push["outcome"]) == ("L4", "hold", "held")
    assert push["rule"] not in ("", "-", "None")
    assert unknown["level"] == "none (no contract)" and unknown["outcome"] == "denied"
    for row in by_request.values():  # each reason once
        reasons = row["reasons"].split("; ")
        assert len(reasons) == len(set(reasons)), row["reasons"]

    actions = tables["Actions"]
    outcome = {row[2]: row[4] for row in actions.rows}
    assert outcome == {"read_file": "success", "git_push": "held", "format_disk": "denied"}
    why = {row[2]: row[5] for row in actions.rows}
    assert "no contract" in why["format_disk"]  # a denied action says why, in its row

    timeline = tables["Timeline"]
    kinds = [row[2] for row in timeline.rows]
    assert "action.executing" not in kinds  # bookkeeping is folded, and counted
    assert any(k.startswith("action.executing x") for k in kinds)
    summaries = " ".join(row[4] for row in timeline.rows)
    assert f"{denied.request_id} denied: " in summaries and "request_id" not in summaries
    assert "None" not in render_markdown(report).split("## Action requests")[1]


def test_an_executed_action_summary_is_text_never_a_repr() -> None:
    wall = firewall.open("memory://")
    executors = {"read_file": lambda args: Result("line one of README.md")}
    with host(wall, executors=executors) as h, wall.session(project="p", actor="coder") as s:
        h.kernel._summarize = lambda output: output.text if isinstance(output, Result) else ""
        h.kernel.handle(s).request("read_file", {"path": "README.md"})
    (row,) = _tables(build_report(wall.store, s.id))["Actions"].rows
    assert row[5] == "line one of README.md" and "TextContent" not in row[5]


def test_an_adopted_memory_says_it_was_adopted_by_a_grant(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        wall.import_records(
            [ImportItem(text="Deploys go through ArgoCD.", source_id="m1")],
            store_name="mem0",
            project="shop",
            bind=True,
        )
        (before,) = wall.store.find_beliefs(BeliefFilter(project="shop"))
        assert trusted_how(before, []) == "untrusted: imported:mem0"  # not trusted: its label
        grant = wall.grant("user", "ops", project="shop", store="mem0")
        assert adopt_store(wall, "mem0", grant=grant, reason="users' statements only").adopted
        (after,) = wall.store.find_beliefs(BeliefFilter(project="shop"))
        how = trusted_how(after, wall.store.revisions_for(after.id))
    assert after.truth_status.value == "supported"
    assert how == f"adopted by user grant {grant.id}; source untrusted: imported:mem0"
    listed = CliRunner().invoke(cli, ["beliefs", "list", "--url", url], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "adopted by user grant" in listed.output  # (the id itself folds in its cell)
    assert "untrusted [imported:mem0]" not in listed.output
