"""Turning library results into rich tables (for people) and plain dicts (for ``--json``).

Rendering never decides anything: what a recall shows is what the library returned. Rejected
items and uncertainties are printed without their text, as the library hands them over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.gate.recall import RecallResult
from gnomon.firewall.model.chain import Belief, Revision

AXES = ("truth_status", "retrieval_status", "security_status", "freshness_status")


def belief_json(belief: Belief, revisions: Sequence[Revision] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = belief.model_dump(mode="json")
    data["origin_label"] = belief.origin.describe()
    if revisions is not None:
        data["revisions"] = [r.model_dump(mode="json") for r in revisions]
    return data


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def section(out: Console, title: str, table: Table, rows: int) -> None:
    """A bold heading, then the table, or ``(none)`` when it is empty."""
    out.print(title, style="bold", markup=False)
    out.print(table if rows else "  (none)")


def beliefs_table(beliefs: Sequence[Belief], origins: Mapping[str, str] | None = None) -> Table:
    """One row per belief; ``origins`` (belief id → text) replaces the origin label where given
    (how an adopted belief became trusted, :func:`firewall.audit.report.trusted_how`)."""
    table = Table()
    table.add_column("id", no_wrap=True)
    table.add_column("truth")
    table.add_column("retrieval")
    table.add_column("security")
    table.add_column("origin", overflow="fold", max_width=30)
    table.add_column("statement", overflow="fold", ratio=1)
    for b in beliefs:
        table.add_row(
            b.id,
            b.truth_status.value,
            b.retrieval_status.value,
            b.security_status.value,
            (origins or {}).get(b.id, b.origin.describe()),
            _short(b.statement),
        )
    return table


def belief_detail(out: Console, belief: Belief, revisions: Sequence[Revision]) -> None:
    facts = Table(show_header=False, title=f"belief {belief.id}", title_justify="left")
    facts.add_column("field", style="bold", no_wrap=True)
    facts.add_column("value", overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("statement", belief.statement),
        ("kind", belief.kind.value),
        ("truth", belief.truth_status.value),
        ("retrieval", belief.retrieval_status.value),
        ("security", belief.security_status.value),
        ("freshness", belief.freshness_status.value),
        ("origin", belief.origin.describe()),
        ("origin classes", ", ".join(sorted(c.value for c in belief.origin.classes))),
        ("authority", belief.authority.value),
        ("sensitivity", belief.sensitivity.value),
        ("confidence", belief.confidence),
        ("scope", belief.scope.value),
        ("project", belief.project),
        ("user", belief.user),
        ("session", belief.session_id),
        ("subject / predicate", f"{belief.subject} / {belief.predicate}"),
        ("observed at", belief.observed_at.isoformat()),
        ("last verified at", belief.last_verified_at and belief.last_verified_at.isoformat()),
        ("expires at", belief.expires_at and belief.expires_at.isoformat()),
        ("superseded by", belief.superseded_by),
        ("version", belief.version),
    ]
    for name, value in rows:
        facts.add_row(name, "-" if value is None else str(value))
    out.print(facts)
    history = Table(title=f"revisions ({len(revisions)})", title_justify="left")
    for column in ("at", "axis", "from", "to", "authority", "grant", "reason"):
        history.add_column(column, overflow="fold")
    for r in revisions:
        history.add_row(
            r.created_at.isoformat(timespec="seconds"),
            r.axis.value if r.axis else "-",
            r.from_state or "-",
            r.to_state or "-",
            r.authority.value,
            r.grant_id or "-",
            r.reason,
        )
    out.print(history)


def recall_json(result: RecallResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "policy": result.policy,
        "policy_digest": result.policy_digest,
        "event_seq": result.event_seq,
        "accepted": [belief_json(b) for b in result.accepted],
        "quoted": [belief_json(q.belief) for q in result.quoted],
        "rejected": [
            {
                "belief_id": r.belief_id,
                "origin_label": r.origin.describe(),
                "reasons": [x.model_dump(mode="json") for x in r.reasons],
            }
            for r in result.rejected
        ],
        "contradictions": [
            {
                "id": v.contradiction.id,
                "reason": v.contradiction.reason,
                "visible": [belief_json(b) for b in v.visible],
                "withheld": list(v.withheld),
            }
            for v in result.contradictions
        ],
        "uncertainties": [
            {
                "belief_id": u.belief_id,
                "subject": u.subject,
                "origin_label": u.origin.describe(),
                "reasons": [x.model_dump(mode="json") for x in u.reasons],
            }
            for u in result.uncertainties
        ],
        "context": result.render(),
    }


def recall_tables(out: Console, result: RecallResult) -> None:
    out.print(
        f"recall {escape(repr(result.query))} under policy [bold]{escape(result.policy)}[/] "
        f"(digest {result.policy_digest[:16]}…, event seq {result.event_seq})",
        soft_wrap=True,
        markup=True,
    )
    section(
        out,
        f"accepted ({len(result.accepted)}): trusted context",
        beliefs_table(result.accepted),
        len(result.accepted),
    )
    quoted = Table()
    quoted.add_column("id", no_wrap=True)
    quoted.add_column("truth")
    quoted.add_column("origin", overflow="fold", max_width=30)
    quoted.add_column("statement", overflow="fold", ratio=1)
    for q in result.quoted:
        b = q.belief
        quoted.add_row(b.id, b.truth_status.value, b.origin.describe(), _short(b.statement))
    section(
        out,
        f"quoted ({len(result.quoted)}): untrusted data, never facts",
        quoted,
        len(result.quoted),
    )
    rejected = Table()
    rejected.add_column("id", no_wrap=True)
    rejected.add_column("origin", overflow="fold")
    rejected.add_column("reasons", overflow="fold")
    for r in result.rejected:
        rejected.add_row(r.belief_id, r.origin.describe(), (", ".join(dict.fromkeys(r.codes))))
    section(
        out, f"rejected ({len(result.rejected)}): text withheld", rejected, len(result.rejected)
    )
    if result.contradictions:
        table = Table()
        for column in ("id", "visible", "withheld", "reason"):
            table.add_column(column, overflow="fold")
        for v in result.contradictions:
            table.add_row(
                v.contradiction.id,
                "\n".join(f"{b.id}: {(_short(b.statement, 50))}" for b in v.visible),
                "\n".join(v.withheld) or "-",
                v.contradiction.reason,
            )
        section(out, f"contradictions ({len(result.contradictions)})", table, 1)
    out.print(f"uncertainties: {len(result.uncertainties)} (unconfirmed matches, text withheld)")


def policy_summary(out: Console, policy: ContextPolicy, source: str) -> None:
    table = Table(show_header=False, title=f"policy {policy.name} ({source})", title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")

    def states(values: frozenset[Any]) -> str:
        return ", ".join(sorted(str(v) for v in values)) or "(none: admits nothing)"

    max_age = policy.freshness.max_age
    table.add_row("description", policy.description or "-")
    table.add_row("truth", states(policy.truth))
    table.add_row("retrieval", states(policy.retrieval))
    table.add_row("security", states(policy.security))
    table.add_row(
        "freshness",
        f"{states(policy.freshness.allow)}; max age {max_age if max_age else 'unlimited'}",
    )
    table.add_row("sensitivity ceiling", policy.sensitivity_ceiling.value)
    table.add_row("enforce expiry", str(policy.enforce_expiry))
    quote = policy.quote
    table.add_row(
        "quoted data",
        f"up to {quote.max_items}: truth {states(quote.truth)}; retrieval "
        f"{states(quote.retrieval)}; security {states(quote.security)}"
        if quote.enabled
        else "disabled",
    )
    table.add_row("surface contradictions", str(policy.surface_contradictions))
    table.add_row("surface uncertainties", str(policy.surface_uncertainties))
    table.add_row("privileged (audit path)", str(policy.privileged))
    out.print(table)
    out.print(f"digest: {policy.digest}", soft_wrap=True)


__all__ = [
    "belief_detail",
    "belief_json",
    "beliefs_table",
    "policy_summary",
    "recall_json",
    "recall_tables",
    "section",
]
