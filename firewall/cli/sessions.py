"""``gnomon sessions list``: the sessions a store holds, the ids ``gnomon report`` and
``gnomon replay`` take."""

from __future__ import annotations

import click
from rich.table import Table

from gnomon import firewall
from gnomon.firewall.audit.session_list import list_sessions
from gnomon.firewall.cli.common import console, echo_json, json_option, resolve_url, url_option
from gnomon.firewall.cli.render import section


@click.group()
def sessions() -> None:
    """The sessions a store holds (ids for `gnomon report` and `gnomon replay`)."""


@sessions.command("list")
@click.option("--project", default=None, help="Only sessions of this project.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@url_option
@json_option
@click.pass_context
def sessions_list(
    ctx: click.Context, project: str | None, limit: int, url: str | None, as_json: bool
) -> None:
    """List sessions, newest first: id, project, actor, user, started, ended, events."""
    chosen = resolve_url(ctx, url)
    with firewall.open(chosen) as wall:
        found = list_sessions(wall.store, project=project, limit=limit)
    if as_json:
        echo_json({"sessions": [s.to_json() for s in found]})
        return
    table = Table()
    table.add_column("id", no_wrap=True)
    for column in ("project", "actor", "user", "started", "ended"):
        table.add_column(column, overflow="fold")
    table.add_column("events", justify="right")
    for s in found:
        row = s.to_json()
        table.add_row(
            row["id"],
            row["project"],
            row["actor"],
            row["user"] or "-",
            s.info.started_at.isoformat(timespec="seconds"),
            s.info.ended_at.isoformat(timespec="seconds") if s.info.ended_at else "(open)",
            str(row["events"]),
        )
    out = console()
    section(out, f"sessions ({len(found)})", table, len(found))
    if found:
        out.print(
            f"next: gnomon report {found[0].info.id} --html --out report.html --url {chosen}",
            markup=False,
            soft_wrap=True,
        )


__all__ = ["sessions"]
