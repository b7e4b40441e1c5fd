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

from dataclasses import replace
from typing import TYPE_CHECKING

from gnomon.firewall.kernel.ledger import ACCEPTED, read_ledger
from gnomon.firewall.store.base import Store

if TYPE_CHECKING:
    from gnomon.firewall.audit.report import Table, Verdict


def action_sections(store: Store, session_id: str, verdict: Verdict) -> tuple[list[Table], Verdict]:
    from gnomon.firewall.audit.report import AMBER, GREEN, RED, Table

    ledger = read_ledger(store, events=store.session_events(session_id))
    states = [s for s in ledger.requests.values() if s.session_id == session_id]
    unreadable = Table("Unreadable kernel events", ("problem",), [(m,) for m in ledger.malformed])
    if not states:
        if not ledger.malformed:
            return [], verdict
        level = AMBER if verdict.level == GREEN else verdict.level
        headline = (
            "Review: kernel events in this session could not be read"
            if level != verdict.level
            else verdict.headline
        )
        return [unreadable], replace(verdict, level=level, headline=headline)
    actions = Table(
        "Action requests",
        ("request", "tool", "level", "verdict", "status", "reasons"),
        [
            (
                s.request_id,
                str(s.proposal.get("tool")),
                str(s.proposal.get("level")),
                str(s.proposal.get("outcome")),
                s.status,
                "; ".join(s.reasons)[:300],
            )
            for s in states
        ],
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
    tables = [actions, holds, approvals, forgeries]
    return [*tables, unreadable] if ledger.malformed else tables, changed


__all__ = ["action_sections"]
