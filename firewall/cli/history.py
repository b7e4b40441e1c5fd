"""Commands over the record: ``why``, ``replay``, ``report`` and the belief-history subcommands
of ``beliefs`` (``history``, ``supersede``, ``export``, ``verify``).

Each parses its arguments, calls one library function (:mod:`firewall.audit.why`,
:mod:`firewall.audit.replay`, :mod:`firewall.audit.report`) and renders. Dates on the command line
are ISO
8601 (``2025-04-01`` or ``2025-04-01T12:00:00+02:00``); a date or time without an offset is UTC.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

import click

from gnomon import firewall
from gnomon.firewall.audit.credentials import masked, masked_tree
from gnomon.firewall.audit.replay import ReplayResult, replay, replay_json
from gnomon.firewall.audit.report import build_report, render_html, render_markdown, report_json
from gnomon.firewall.audit.why import (
    BeliefWhy,
    WhyResult,
    belief_brief,
    check_sources,
    history_of,
    version_json,
    why,
    why_json,
)
from gnomon.firewall.cli.common import (
    ceiling_option,
    echo,
    echo_json,
    resolve_url,
    store_options,
    write_file,
)
from gnomon.firewall.cli.memory import (
    UserGrant,
    _report,
    beliefs,
    user_grant_command,
)
from gnomon.firewall.gate.gate import ADOPTION_RULES
from gnomon.firewall.model.chain import Belief, Revision
from gnomon.firewall.model.errors import InputError, UnknownIdError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.ids import id_prefix
from gnomon.firewall.model.render import terminal_text
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.base import Store

PAGE = 1000


def parse_moment(value: str | None, option: str) -> datetime | None:
    """An ISO 8601 date or time; without an offset it is UTC."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise InputError(
            f"{option} {value!r} is not an ISO 8601 date or time",
            hint="write e.g. 2025-04-01 or 2025-04-01T12:00:00+00:00",
        ) from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _all_beliefs(store: Store) -> Iterator[Belief]:
    offset = 0
    while True:
        page = store.find_beliefs(BeliefFilter(limit=PAGE, offset=offset))
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


# -- why ---------------------------------------------------------------------------------------


@click.command("why")
@click.argument("query")
@click.option("--at", "at_", default=None, metavar="DATE", help="What was believed at DATE.")
@click.option("--since", default=None, metavar="DATE", help="Versions held from DATE on.")
@click.option("--until", default=None, metavar="DATE", help="Versions held up to DATE.")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@store_options
def why_command(
    ctx: click.Context,
    query: str,
    at_: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    url: str | None,
    as_json: bool,
) -> None:
    """Why is QUERY believed? Resolves a belief id, then subject[/predicate], then topic (a
    subject namespace: `payments` covers `payments.api`, `payments/db`), then full text; shows
    history, supersession, contradictions and each source re-hashed now. Exits 1 when nothing
    is found (an unknown id included)."""
    if query.startswith(("act_", "req_")):
        _why_action(ctx, query, url, as_json)
        return
    at = parse_moment(at_, "--at")
    if at is not None and (since or until):
        raise InputError(
            "--at cannot be combined with --since/--until", hint="use one or the other"
        )
    with firewall.open(resolve_url(ctx, url)) as wall:
        result = why(
            wall.store,
            query,
            at=at,
            since=parse_moment(since, "--since"),
            until=parse_moment(until, "--until"),
            limit=limit,
        )
    if not result.entries:
        raise _nothing_found(result)
    if as_json:
        echo_json(masked_tree(why_json(result)))
        return
    _render_why(result)


def _why_action(ctx: click.Context, ident: str, url: str | None, as_json: bool) -> None:
    """An action or request id: the beliefs and labels behind it (firewall.kernel.explain)."""
    from gnomon.firewall.kernel.explain import explain_action, render_action

    with firewall.open(resolve_url(ctx, url)) as wall:
        doc = explain_action(wall.store, ident)
    if doc is None:
        raise InputError(f"no action or request {ident!r} in this store")
    if as_json:
        echo_json(masked_tree(doc))
        return
    for line in render_action(doc):
        _say(line)


def _say(line: str) -> None:
    """One line of ``gnomon why`` (and ``beliefs history``): the one place its text meets the
    credential rule (:func:`firewall.audit.credentials.masked`): a key in a statement, an
    origin id, a tool name, an argument or a reason is masked where it stands."""
    echo(masked(line))


def _nothing_found(result: WhyResult) -> InputError:
    """``why`` of an unknown id, or of a query nothing answers (then, or in the window)."""
    when = _when(result)
    if not when and id_prefix(result.query) == "bel":
        return UnknownIdError("belief", result.query)
    return InputError(
        f"nothing found for {result.query!r}{when}",
        hint="try a belief id, a subject (`payments.api`), a topic (`payments`) or other words; "
        "`gnomon beliefs list` shows what the store holds",
    )


def _when(result: WhyResult) -> str:
    if result.at:
        return f" as of {result.at.isoformat()}"
    if result.since or result.until:
        return f" held between {_t(result.since)} and {_t(result.until)}"
    return ""


def _t(moment: datetime | None) -> str:
    return "-" if moment is None else moment.isoformat()


def _revision_line(r: Revision) -> str:
    """``axis: from -> to (authority, grant id): reason``, one revision of a belief."""
    grant = f", grant {r.grant_id}" if r.grant_id else ""
    axis = r.axis.value if r.axis else "-"
    return f"{axis}: {r.from_state} -> {r.to_state} ({r.authority.value}{grant}): {r.reason}"


def _render_why(result: WhyResult) -> None:
    _say(
        f"{len(result.entries)} belief(s) for {result.query!r} (by {result.resolved_by})"
        f"{_when(result)}"
    )
    for entry in result.entries:
        _render_entry(entry)


def _render_entry(entry: BeliefWhy) -> None:
    b = entry.belief
    _say("")
    _say(f"{b.id} v{b.version}: {b.statement}")
    _say(
        f"  truth={b.truth_status.value} retrieval={b.retrieval_status.value} "
        f"security={b.security_status.value} freshness={b.freshness_status.value} "
        f"sensitivity={b.sensitivity.value}"
    )
    _say(f"  origin: {b.origin.describe()}  authority: {b.authority.value}")
    if b.subject or b.predicate:
        _say(f"  about: {b.subject or '-'} / {b.predicate or '-'}")
    _say(f"  source says valid: {_t(b.valid_from)} .. {_t(b.valid_to)}")
    _say(f"  system held this version from: {_t(b.updated_at)}")
    current = entry.current
    if current is not None and current.version != b.version:
        _say(
            f"  now (v{current.version}): truth={current.truth_status.value} "
            f"retrieval={current.retrieval_status.value} security={current.security_status.value}"
        )
    verified = entry.verified_against_source
    _say(
        "  verified_against_source: "
        + {True: "yes", False: "NO (drift)", None: "n/a (no quote anchor)"}[verified]
    )
    _say("  history:")
    for v in entry.history:
        _say(
            f"    v{v.belief.version} held {_t(v.recorded_from)} .. {_t(v.recorded_until)}"
            f" [{', '.join(v.changed) or 'no change'}]"
        )
        for r in v.revisions:
            _say(f"      {_revision_line(r)}")
    if entry.supersession:
        _say("  supersession:")
        for link in entry.supersession:
            _say(f"    {link.old_id} -> {link.new_id}: {link.reason or '(no reason recorded)'}")
    if entry.contradictions:
        _say("  contradicted by:")
        for c in entry.contradictions:
            for other in c.others:
                _say(
                    f"    {other.id} [{other.truth_status.value}] {other.statement} "
                    f"({c.contradiction.reason})"
                )
    _say("  sources:")
    for s in entry.sources:
        mark = {True: "ok", False: "DRIFT", None: "-"}[s.verified_against_source]
        _say(f"    [{mark}] {s.source} ({s.relation}, {s.quality}): {s.detail}")
        if s.recorded_hash:
            _say(f"      recorded {s.recorded_hash}")
            _say(f"      now      {s.current_hash}")


# -- beliefs history / supersede / export / verify ---------------------------------------------


@beliefs.command("history")
@click.argument("belief_id")
@store_options
def beliefs_history(ctx: click.Context, belief_id: str, url: str | None, as_json: bool) -> None:
    """Every version of a belief, with the time the system held it and the revisions."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        wall.require_belief(belief_id)
        views = history_of(wall.store, belief_id)
    if as_json:
        echo_json(masked_tree({"belief": belief_id, "versions": [version_json(v) for v in views]}))
        return
    for v in views:
        b = v.belief
        _say(
            f"v{b.version} {_t(v.recorded_from)} .. {_t(v.recorded_until)} "
            f"truth={b.truth_status.value} retrieval={b.retrieval_status.value} "
            f"security={b.security_status.value} freshness={b.freshness_status.value} "
            f"[{', '.join(v.changed) or 'no change'}]"
        )
        for r in v.revisions:
            _say(f"    {_revision_line(r)}")


@beliefs.command("supersede")
@click.argument("old_id")
@click.argument("new_id")
@user_grant_command
def beliefs_supersede(g: UserGrant, old_id: str, new_id: str) -> None:
    """Replace OLD_ID by NEW_ID on a signed user grant; the old one stays, as superseded."""
    with g.open([old_id, new_id]) as (wall, grant):
        old, new = wall.supersede(old_id, new_id, reason=g.reason, grant=grant)
    _report(old, "superseded", f"user grant {grant.id}", as_json=g.as_json, grant_id=grant.id)
    if not g.as_json:
        echo(f"{new.id} supersedes {old.id}")


CSV_COLUMNS = (
    "id",
    "version",
    "statement",
    "subject",
    "predicate",
    "truth",
    "retrieval",
    "security",
    "freshness",
    "sensitivity",
    "authority",
    "integrity",
    "origin_ids",
    "observed_at",
    "last_verified_at",
    "expires_at",
    "valid_from",
    "valid_to",
    "recorded_at",
    "supersedes",
    "superseded_by",
)


@beliefs.command("export")
@click.option(
    "--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True
)
@click.option(
    "--out", default=None, type=click.Path(dir_okay=False), help="File (default: stdout)."
)
@store_options
def beliefs_export(
    ctx: click.Context, fmt: str, out: str | None, url: str | None, as_json: bool
) -> None:
    """Export every belief (current versions): JSON records or one CSV row each. With --out,
    the summary goes to stdout (JSON with --json); without, stdout is the export."""
    buffer = io.StringIO()
    count = 0
    with firewall.open(resolve_url(ctx, url)) as wall:
        if fmt == "json":
            import orjson

            items = [b.to_json_dict() for b in _all_beliefs(wall.store)]
            count = len(items)
            buffer.write(orjson.dumps(items, option=orjson.OPT_INDENT_2).decode())
            buffer.write("\n")
        else:
            writer = csv.writer(buffer, lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
            for b in _all_beliefs(wall.store):
                count += 1
                brief = belief_brief(b)
                writer.writerow(
                    [
                        b.id,
                        b.version,
                        b.statement,
                        b.subject or "",
                        b.predicate or "",
                        brief["truth"],
                        brief["retrieval"],
                        brief["security"],
                        brief["freshness"],
                        brief["sensitivity"],
                        brief["authority"],
                        b.origin.integrity.name.lower(),
                        " ".join(sorted(b.origin.origin_ids)),
                        brief["observed_at"] or "",
                        brief["last_verified_at"] or "",
                        brief["expires_at"] or "",
                        brief["valid_from"] or "",
                        brief["valid_to"] or "",
                        brief["recorded_at"] or "",
                        b.supersedes or "",
                        b.superseded_by or "",
                    ]
                )
    _write_out(buffer.getvalue(), out, {"exported": count, "format": fmt}, as_json=as_json)


def _write_out(text: str, out: str | None, summary: Mapping[str, object], *, as_json: bool) -> None:
    """Write to ``out`` as is (atomically) and print ``summary`` (as JSON with ``--json``), or
    write to stdout without terminal controls (stored text is caller text: a statement must not
    be able to drive the terminal that prints it)."""
    if out is None:
        sys.stdout.write(terminal_text(text, multiline=True))
        return
    write_file(out, text)
    if as_json:
        echo_json({**summary, "out": out})
    else:
        echo(f"wrote {out}", err=True)


@beliefs.command("verify")
@store_options
def beliefs_verify(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Re-check every quote anchor against its source as it is now; exit 1 on drift."""
    checked = drifted = 0
    problems: list[dict[str, object]] = []
    with firewall.open(resolve_url(ctx, url)) as wall:
        for b in _all_beliefs(wall.store):
            for s in check_sources(wall.store, b):
                if s.verified_against_source is None:
                    continue
                checked += 1
                if s.verified_against_source is False:
                    drifted += 1
                    problems.append({"belief": b.id, "source": s.source, "detail": s.detail})
    if as_json:
        echo_json({"checked": checked, "drifted": drifted, "drift": problems})
    else:
        for p in problems:
            echo(f"DRIFT {p['belief']} {p['source']}: {p['detail']}")
        echo(f"{checked} quote anchor(s) checked, {drifted} drifted")
    if drifted:
        ctx.exit(1)


# -- replay ------------------------------------------------------------------------------------


@click.command("replay")
@click.argument("session_id")
@click.option(
    "--policy",
    required=True,
    help="A preset (default, planner, reference, assistant) or a path to a policy .yaml file.",
)
@click.option(
    "--gate-version",
    default=None,
    type=click.Choice(sorted(ADOPTION_RULES)),
    help="Re-adopt the session's unrevised beliefs under this gate version's rule.",
)
@store_options
def replay_command(
    ctx: click.Context,
    session_id: str,
    policy: str,
    gate_version: str | None,
    url: str | None,
    as_json: bool,
) -> None:
    """What would have changed had SESSION_ID run under another policy (or gate version)?"""
    with firewall.open(resolve_url(ctx, url)) as wall:
        result = replay(wall.store, session_id, policy, gate_version=gate_version)
    if as_json:
        echo_json(replay_json(result))
        return
    _render_replay(result)


def _render_replay(result: ReplayResult) -> None:
    echo(
        f"session {result.session_id} replayed under policy {result.policy} "
        f"(digest {result.policy_digest[:12]}), gate {result.gate_version}"
    )
    echo(
        f"recorded with policy {', '.join(result.recorded_policies) or '-'}, "
        f"gate {', '.join(result.recorded_gate_versions) or '-'}"
    )
    for ident, (before, after) in result.readopted.items():
        echo(f"re-adopted {ident}: {before} -> {after}")
    for r in result.recalls:
        status = "changed" if r.changed else "unchanged"
        if r.unreproducible is not None:
            status = f"cannot be reproduced: {r.unreproducible}"
        echo(f"recall #{r.seq} {r.query!r} ({r.recorded_policy or '?'}): {status}")
        for ident in r.gained:
            echo(f"  + gains {ident}")
        for ident in r.lost:
            echo(f"  - loses {ident}: {'; '.join(r.lost_reasons.get(ident, ()))}")
    if result.decisions:
        echo("decisions that would now rest on excluded beliefs:")
        for d in result.decisions:
            was = " (it was accepted by a recall)" if d.was_accepted else ""
            echo(f"  ! {d.decision_id} {d.summary!r} rests on {d.belief_id} [{d.truth}]{was}")
            for reason in d.reasons:
                echo(f"      {reason}")
    else:
        echo("no decision would rest on an excluded belief")


# -- report ------------------------------------------------------------------------------------


@click.command("report")
@click.argument("session_id")
@click.option("--html", "as_html", is_flag=True, help="A self-contained HTML page.")
@click.option(
    "--out", default=None, type=click.Path(dir_okay=False), help="File (default: stdout)."
)
@ceiling_option("Redact text above this level (hashes are kept).", dest="sensitivity_ceiling")
@store_options
def report_command(
    ctx: click.Context,
    session_id: str,
    as_html: bool,
    out: str | None,
    sensitivity_ceiling: str,
    url: str | None,
    as_json: bool,
) -> None:
    """The trust report of SESSION_ID (Markdown, or HTML with --html), with its verdict. With
    --json: the report as JSON on stdout, or with --out FILE a JSON summary (FILE gets the
    Markdown or HTML)."""
    if as_html and as_json and out is None:
        raise InputError(
            "--html and --json both want stdout", hint="add --out FILE for the HTML page"
        )
    with firewall.open(resolve_url(ctx, url)) as wall:
        report = build_report(
            wall.store, session_id, ceiling=Sensitivity(sensitivity_ceiling), now=wall.clock()
        )
    if as_json and out is None:
        echo_json(report_json(report))
        return
    text = render_html(report) if as_html else render_markdown(report)
    summary = {
        "session": session_id,
        "verdict": report.verdict.level,
        "format": "html" if as_html else "markdown",
    }
    _write_out(text if text.endswith("\n") else text + "\n", out, summary, as_json=as_json)


__all__ = ["parse_moment", "replay_command", "report_command", "why_command"]
