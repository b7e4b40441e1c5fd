"""``gnomon origins flag`` and ``gnomon sentinel run``: sentinels from the command line."""

from __future__ import annotations

import click

from gnomon import firewall
from gnomon.firewall.cli.common import echo, echo_json, json_option, resolve_url, url_option
from gnomon.firewall.host.sentinels import LISTING_LIMIT, Sentinel, alert_listing
from gnomon.firewall.model.render import terminal_text


@click.group("origins")
def origins() -> None:
    """Origins an operator or a sentinel flagged as hostile."""


@origins.command("flag")
@click.argument("origin_id")
@click.option("--reason", required=True, help="Why the origin is hostile (recorded).")
@url_option
@json_option
@click.pass_context
def flag_command(
    ctx: click.Context, origin_id: str, reason: str, url: str | None, as_json: bool
) -> None:
    """Flag ORIGIN_ID (e.g. external:file:README.md): every belief whose label includes it is
    quarantined, in one transaction, and later ones are quarantined by a running sentinel."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        ids = wall.flag_origin(origin_id, reason=reason)
    if as_json:
        echo_json({"origin_id": origin_id, "quarantined": ids})
        return
    echo(f"flagged {terminal_text(origin_id)}: {len(ids)} belief(s) quarantined")
    for ident in ids:
        echo(f"  {ident}")


@click.group("sentinel")
def sentinel() -> None:
    """Sentinels watching a store's event stream."""


@sentinel.command("run")
@click.option("--follow", is_flag=True, help="Keep tailing the store (default: one pass).")
@click.option("--interval", default=0.5, show_default=True, help="Seconds between polls.")
@click.option(
    "--limit",
    default=LISTING_LIMIT,
    show_default=True,
    type=click.IntRange(min=0),
    help="Alerts to list (quarantines first); every alert is recorded either way.",
)
@url_option
@json_option
@click.pass_context
def run_command(
    ctx: click.Context, follow: bool, interval: float, limit: int, url: str | None, as_json: bool
) -> None:
    """Run the sentinels over the store's events (from where the last run stopped, then new
    ones with --follow): alerts are recorded as events; flagged origins' beliefs are
    quarantined and injection-like text made suspicious. Beliefs already quarantined are
    skipped; each pass records how far it watched (a ``sentinel.cursor`` event)."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        watcher = Sentinel(wall)
        watcher.resume()
        seen = watcher.follow(once=not follow, interval=interval, durable=True)
    listed = alert_listing(watcher.alerts, limit)
    if as_json:
        echo_json(
            {
                "events": seen,
                "alerts": list(listed.shown),
                "total_alerts": listed.total,
                "truncated": listed.truncated,
            }
        )
        return
    echo(f"{seen} event(s) watched, {listed.total} alert(s)")
    for alert in listed.shown:
        echo(f"  {alert['alert_id']} {alert['sentinel']}: {terminal_text(alert['reason'])}")
    if listed.truncated:
        echo(
            f"  ... {listed.omitted} more not listed (more than {limit}: quarantines are listed "
            "first; raise --limit, or read the sentinel.alert events)"
        )
