"""The trust report's action sections: actions, holds, approvals and forgeries of one session,
and how they move the verdict.

:func:`firewall.audit.report.build_report` calls :func:`action_sections` with the verdict it
computed;
this module adds its tables and returns the verdict made stricter where the kernel's log says so:
any approval forgery makes it red; an action executed on an approval, or a hold still waiting,
makes a green verdict amber (a human was needed). A stored kernel event the ledger cannot read
is named (seq, kind, what is wrong) in its own table and makes a green verdict amber.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gnomon.firewall.kernel.ledger import ACCEPTED, RequestState, read_ledger
from gnomon.firewall.store.base import Store

if TYPE_CHECKING:
    from gnomon.firewall.audit.report import Table, Verdict


def _level(state: RequestState) -> str:
    """The level the kernel ruled at; a tool with no contract has none (and was denied)."""
    level = state.proposal.get("level")
    return str(level) if level is not None else "none (no contract)"


def _reasons(state: RequestState) -> str:
    """Each reason once, in the order the kernel gave them."""
    return "; ".join(dict.fromkeys(state.reasons))[:300] or "-"


def outcomes(states: Iterable[RequestState]) -> dict[str, tuple[str, str]]:
    """Action id → (outcome, why) for the requests that did not run: denied, held, expired,
    refused. An executed action's outcome is its recorded Outcome."""
    return {
        s.action_id: (s.status, _reasons(s))
        for s in states
        if s.status not in ("executed", "executing") and "action_id" in s.proposal
    }


def _with_outcomes(table: Table, states: list[RequestState]) -> Table:
    """The audit's Actions table with an outcome (and its reasons) for every action that did
    not run, whose cells the log's Outcome records leave empty."""
    known = outcomes(states)
    column, summary = table.columns.index("outcome"), table.columns.index("summary")
    rows = []
    for row in table.rows:
        filled = list(row)
        if not filled[column] and row[0] in known:
            filled[column], filled[summary] = known[row[0]]
        rows.append(tuple(filled))
    return replace(table, rows=rows)


def action_sections(
    store: Store, session_id: str, verdict: Verdict, sections: Sequence[Table] = ()
) -> tuple[list[Table], Verdict]:
    """The action tables of ``session_id`` and the verdict made stricter; ``sections`` (the
    audit's) come back first, their Actions table given an outcome for each action that did
    not run."""
    from gnomon.firewall.audit.report import AMBER, GREEN, RED, Table

    ledger = read_ledger(store, events=store.session_events(session_id))
    states = [s for s in ledger.requests.values() if s.session_id == session_id]
    unreadable = Table("Unreadable kernel events", ("problem",), [(m,) for m in ledger.malformed])
    if not states:
        if not ledger.malformed:
            return list(sections), verdict
        level = AMBER if verdict.level == GREEN else verdict.level
        headline = (
            "Review: kernel events in this session could not be read"
            if level != verdict.level
            else verdict.headline
        )
        return [*sections, unreadable], replace(verdict, level=level, headline=headline)
    given = [_with_outcomes(t, states) if t.title == "Actions" else t for t in sections]
    actions = Table(
        "Action requests",
        ("request", "tool", "level", "verdict", "rule", "outcome", "reasons"),
        [
            (
                s.request_id,
                str(s.proposal.get("tool")),
                _level(s),
                str(s.proposal.get("outcome")),
                str(s.proposal.get("rule") or "-"),
                s.status,
                _reasons(s),
            )
            for s in states
        ],
        "What the kernel ruled (verdict, by which rule, at which level) and what came of it.",
    )
    holds = Table(
        "Holds",
        ("request", "tool", "deadline", "status"),
        [
            (s.request_id, s.request.tool, s.request.deadline.isoformat(), s.status)
            for s in states
            if s.request is not None
        ],
    )
    approvals = Table(
        "Approvals",
        ("request", "decision", "approver", "key"),
        [
            (
                s.request_id,
                str(e.payload.get("decision")),
                str(e.payload.get("approver")),
                str(e.payload.get("key_id")),
            )
            for s in states
            for e in s.events
            if e.kind == ACCEPTED
        ],
    )
    forged = [
        (s.request_id, str(f.get("kind")), str(f.get("detail"))[:200])
        for s in states
        for f in s.forgeries
    ]
    forgeries = Table("Approval forgeries", ("request", "kind", "detail"), forged)
    waiting = [s for s in states if s.status == "held"]
    approved = [s for s in states if any(e.kind == ACCEPTED for e in s.events)]
    answers = list(verdict.answers)
    answers.append(
        f"Were actions held for a human? {len(holds.rows)} held, {len(waiting)} still waiting, "
        f"{len(approvals.rows)} resolved by an approver."
    )
    answers.append(
        "Was any approval forged, replayed, expired or for other inputs? "
        + (f"Yes: {len(forged)}, none executed." if forged else "No.")
    )
    level, headline = verdict.level, verdict.headline
    if forged:
        level, headline = RED, "ATTENTION: forged or replayed approvals were presented"
    elif level == GREEN and (waiting or approved):
        level, headline = AMBER, "Review: actions needed (or still need) a human approval"
    elif level == GREEN and ledger.malformed:
        level, headline = AMBER, "Review: kernel events in this session could not be read"
    changed = replace(verdict, level=level, headline=headline, answers=tuple(answers))
    tables = [*given, actions, holds, approvals, forgeries]
    return [*tables, unreadable] if ledger.malformed else tables, changed


__all__ = ["action_sections", "outcomes"]
