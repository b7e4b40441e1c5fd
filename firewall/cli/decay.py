"""``gnomon decay``: bulk freshness decay (fresh → stale → expired), recorded as events."""

from __future__ import annotations

import click

from gnomon import firewall
from gnomon.firewall.cli.common import echo, echo_json, json_option, resolve_url, url_option
from gnomon.firewall.host.decay import decay_all


@click.command("decay")
@click.option(
    "--window",
    default=None,
    metavar="DURATION",
    help="Stale window, ISO 8601 (default: the default policy's max_age, P30D).",
)
@url_option
@json_option
@click.pass_context
def decay_command(ctx: click.Context, window: str | None, url: str | None, as_json: bool) -> None:
    """Move every due belief: expired once expires_at has passed, stale once not verified or
    observed within the window; one belief.decayed event per chunk."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        report = decay_all(wall, window=window)
    if as_json:
        echo_json({"stale": report.stale, "expired": report.expired, "events": report.events})
        return
    echo(f"{report.stale} stale, {report.expired} expired, in {report.events} event(s)")
