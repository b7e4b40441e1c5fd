"""The trust report printed: Markdown, one self-contained HTML page, and JSON.

All three print the same :class:`~firewall.audit.report.TrustReport`, so they cannot say different
things; rendering decides nothing and redacts nothing (:mod:`firewall.audit.report` already did).
The verdict comes first in every format: the headline, then the answers, then the warnings.

The HTML page has its CSS inline and loads nothing. States are coloured by what they mean for
trust (:data:`STATE_TONES`: good, watch, bad, gone), in the columns that hold states; ids, times
and hashes are set in a monospace face and never wrapped, so the text columns get the width.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gnomon.firewall.audit.report import Table, TrustReport

#: What each state means for an auditor: ``good`` (trusted, clean, in use), ``watch`` (held,
#: restricted, unconfirmed), ``bad`` (contradicted, quarantined, malicious), ``gone`` (retired).
STATE_TONES: dict[str, str] = {
    "supported": "good",
    "normal": "good",
    "clean": "good",
    "fresh": "good",
    "success": "good",
    "executed": "good",
    "allow": "good",
    "unverified": "watch",
    "held": "watch",
    "hold": "watch",
    "restricted": "watch",
    "privileged_only": "watch",
    "suspicious": "watch",
    "stale": "watch",
    "hidden": "watch",
    "contradicted": "bad",
    "quarantined": "bad",
    "malicious": "bad",
    "blocked": "bad",
    "expired": "bad",
    "failure": "bad",
    "denied": "bad",
    "deny": "bad",
    "refused": "bad",
    "superseded": "gone",
}
#: Columns whose cells are a single state.
STATE_COLUMNS = frozenset(
    {"truth", "retrieval", "security", "freshness", "outcome", "sensitivity", "verdict", "status"}
)
#: Columns of ids, times, hashes and other short tokens: monospace, never wrapped.
TOKEN_COLUMNS = frozenset(
    {
        "seq",
        "at",
        "block",
        "claim",
        "belief",
        "decision",
        "action",
        "evidence",
        "contradiction",
        "captured",
        "detected",
        "grant",
        "kind",
        "actor",
        "auditor",
        "policy",
        "tool",
    }
)
#: Columns of free text: given the room.
TEXT_COLUMNS = frozenset(
    {"text", "statement", "summary", "reason", "members", "query", "args", "move"}
)
_SENSITIVITY_TONES = {
    "public": "good",
    "internal": "good",
    "confidential": "watch",
    "secret": "bad",
}


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: TrustReport) -> str:
    v = report.verdict
    out = [f"# Trust report: session {report.session.id}", ""]
    out.append(f"**Verdict ({v.level.upper()}): {v.headline}**")
    out.append("")
    out.extend(f"- {a}" for a in v.answers)
    out.append("")
    for w in report.warnings:
        out.append(f"> **{w}**")
        out.append("")
    out.append("| | |")
    out.append("|---|---|")
    out.extend(f"| {k} | {_md_cell(val)} |" for k, val in report.facts.items())
    out.append("")
    for table in report.sections:
        out.append(f"## {table.title} ({len(table.rows)})")
        out.append("")
        if table.note:
            out.append(table.note)
            out.append("")
        if not table.rows:
            out.append("(none)")
            out.append("")
            continue
        out.append("| " + " | ".join(table.columns) + " |")
        out.append("|" + "---|" * len(table.columns))
        out.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows)
        out.append("")
    return "\n".join(out)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
 color:#1f2328;background:#fff}
main{max-width:1600px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 16px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.verdict{padding:16px 20px;border-radius:8px;color:#fff;margin-bottom:16px}
.verdict h2{border:0;margin:0 0 6px;font-size:19px;color:#fff}
.verdict ul{margin:0;padding-left:20px}
.green{background:#1a7f37}.blue{background:#0550ae}.amber{background:#9a6700}
.red{background:#cf222e}
.warning{border:2px solid #cf222e;background:#ffebe9;color:#82071e;padding:10px 14px;
 border-radius:6px;margin:8px 0;font-weight:600}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border:1px solid #d0d7de;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
tr:nth-child(even) td{background:#fbfcfd}
td.token{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:11.5px;
 white-space:nowrap}
td.text{min-width:15em;overflow-wrap:anywhere}
td.hash{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:11px;
 min-width:24ch;max-width:24ch;word-break:break-all;color:#57606a}
td.other{overflow-wrap:break-word}
td.origin{overflow-wrap:anywhere;min-width:9em}
.st{display:inline-block;padding:0 5px;border-radius:9px;font-weight:600;font-size:11.5px;
 white-space:nowrap}
td.states{min-width:13em}
td.states .st{margin:0 3px 3px 0}
.good{background:#dafbe1;color:#116329}.watch{background:#fff8c5;color:#7d4e00}
.bad{background:#ffebe9;color:#a40e26}.gone{background:#eaeef2;color:#57606a}
.facts td:first-child{font-weight:600;width:180px}
.note{color:#57606a;margin:4px 0 8px}
.none{color:#57606a;font-style:italic}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
"""


def _tone(column: str, value: str) -> str | None:
    return (_SENSITIVITY_TONES if column == "sensitivity" else STATE_TONES).get(value)


def _cell(column: str, value: str) -> str:
    e = html.escape
    if column in STATE_COLUMNS and value:
        tone = _tone(column, value)
        shown = f'<span class="st {tone}">{e(value)}</span>' if tone else e(value)
        return f'<td class="token">{shown}</td>'
    if column == "hash" or value.startswith("sha256:"):
        return f'<td class="hash">{e(value)}</td>'
    if column in TOKEN_COLUMNS:
        return f'<td class="token">{e(value)}</td>'
    if column in TEXT_COLUMNS:
        return f'<td class="text">{e(value)}</td>'
    if column == "origin":
        return f'<td class="origin">{e(value)}</td>'
    return f'<td class="other">{e(value)}</td>'


#: The four axes: where a table has them all, the page shows them as one column of pills.
AXES = ("truth", "retrieval", "security", "freshness")


def _html_table(table: Table) -> list[str]:
    """One table; the four axis columns, when present, folded into one ``state`` column whose
    pills wrap (four columns of single words would take the width the statement needs)."""
    e = html.escape
    columns = list(table.columns)
    folded = [columns.index(a) for a in AXES] if set(AXES) <= set(columns) else []
    first = folded[0] if folded else -1
    header = [
        "state (truth · retrieval · security · freshness)" if i == first else c
        for i, c in enumerate(columns)
        if i == first or i not in folded
    ]
    parts = ['<div class="scroll"><table><thead><tr>']
    parts.extend(f"<th>{e(c)}</th>" for c in header)
    parts.append("</tr></thead><tbody>")
    for row in table.rows:
        cells = []
        for i, (column, value) in enumerate(zip(columns, row, strict=True)):
            if i == first:
                pills = "".join(
                    f'<span class="st {_tone(a, row[j]) or "gone"}" title="{a}">{e(row[j])}</span>'
                    for a, j in zip(AXES, folded, strict=True)
                )
                cells.append(f'<td class="states">{pills}</td>')
            elif i not in folded:
                cells.append(_cell(column, value))
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table></div>")
    return parts


def render_html(report: TrustReport) -> str:
    """The same content as :func:`render_markdown`, as one self-contained page."""
    e = html.escape
    v = report.verdict
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Trust report: session {e(report.session.id)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>Trust report: session <code>{e(report.session.id)}</code></h1>",
        f'<section class="verdict {e(v.level)}" id="verdict">',
        f"<h2>Verdict ({e(v.level.upper())}): {e(v.headline)}</h2><ul>",
        *(f"<li>{e(a)}</li>" for a in v.answers),
        "</ul></section>",
        *(f'<div class="warning">{e(w)}</div>' for w in report.warnings),
        '<table class="facts">',
        *(f"<tr><td>{e(k)}</td><td>{e(val)}</td></tr>" for k, val in report.facts.items()),
        "</table>",
    ]
    for table in report.sections:
        parts.append(f"<h2>{e(table.title)} ({len(table.rows)})</h2>")
        if table.note:
            parts.append(f'<p class="note">{e(table.note)}</p>')
        if not table.rows:
            parts.append('<p class="none">(none)</p>')
            continue
        parts.extend(_html_table(table))
    parts.append("</main></body></html>")
    return "\n".join(parts)


def report_json(report: TrustReport) -> dict[str, Any]:
    return {
        "session": report.session.id,
        "verdict": {
            "level": report.verdict.level,
            "headline": report.verdict.headline,
            "untrusted_became_trusted": report.verdict.untrusted_became_trusted,
            "decision_on_unverified": report.verdict.decision_on_unverified,
            "held": report.verdict.held,
            "quarantined": report.verdict.quarantined,
            "answers": list(report.verdict.answers),
        },
        "warnings": list(report.warnings),
        "facts": report.facts,
        "sections": {
            t.title: [dict(zip(t.columns, row, strict=True)) for row in t.rows]
            for t in report.sections
        },
    }


__all__ = ["STATE_TONES", "render_html", "render_markdown", "report_json"]
