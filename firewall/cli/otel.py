"""``gnomon otel export``: the event log as OpenTelemetry spans, one JSON object per line.

No collector is needed: spans are written with the SDK's console exporter to a file or stdout
(one span per line, the SDK's own JSON form). A team with a collector uses
:class:`firewall.host.otel.OtelSubscriber` or :func:`firewall.host.otel.export_events` with its own
exporter. Needs ``pip install 'gnomon[otel]'``.
"""

from __future__ import annotations

import sys

import click

from gnomon.firewall.cli.common import (
    ceiling_option,
    echo,
    echo_json,
    json_option,
    path_option,
    resolve_url,
    staged_file,
    url_option,
)
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.registry import open_store


@click.group("otel")
def otel_group() -> None:
    """OpenTelemetry export of sessions, recalls, decisions, actions, holds and alerts."""


@otel_group.command("export")
@url_option
@path_option(
    "--out",
    default=None,
    help="Write the spans to FILE (one JSON object per line) instead of standard output.",
)
@ceiling_option("Belief text above LEVEL is exported as its content hash only.")
@json_option
@click.pass_context
def otel_export(
    ctx: click.Context, url: str | None, out: str | None, ceiling: str, as_json: bool
) -> None:
    """Export the whole log as spans (ids derived from the log: the same log gives the same
    ids). With --out and --json, the summary is a JSON object on stdout."""
    from gnomon.firewall.host.otel import JsonLinesExporter, export_events

    level = Sensitivity(ceiling)
    with open_store(resolve_url(ctx, url)) as store:
        if out is None:
            stdout = JsonLinesExporter(sys.stdout.buffer.write)
            count = export_events(store.events, stdout, ceiling=level)
            sys.stdout.buffer.flush()
            return
        with staged_file(out) as staged:
            count = export_events(store.events, JsonLinesExporter(staged.write), ceiling=level)
    if as_json:
        echo_json({"spans": count, "out": out, "sensitivity_ceiling": level.value})
    else:
        echo(f"exported {count} spans to {out} (belief text above {level.value} as hashes)")


__all__ = ["otel_group"]
