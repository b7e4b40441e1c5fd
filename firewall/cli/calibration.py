"""``gnomon calibration``: ECE and Brier score per calibration class, from recorded outcomes."""

from __future__ import annotations

import click

from gnomon import firewall
from gnomon.firewall.cli.common import echo, echo_json, json_option, resolve_url, url_option
from gnomon.firewall.kernel import calibration as cal


@click.command("calibration")
@click.option("--record", is_flag=True, help="Append the scores (and samples) as an event.")
@url_option
@json_option
@click.pass_context
def calibration_command(ctx: click.Context, record: bool, url: str | None, as_json: bool) -> None:
    """Per calibration class (the cited beliefs' origin classes): how many outcomes, the ECE
    (ten bins) and the Brier score of their confidence. --record makes it a durable,
    replayable calibration.computed event, which CalibrationArbiter reads."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        if record:
            event, scores = cal.record(wall)
            seq: int | None = event.seq
        else:
            scores, seq = cal.scores(cal.samples(wall.store)), None
    if as_json:
        echo_json({"event_seq": seq, "classes": {k: v.json() for k, v in scores.items()}})
        return
    if not scores:
        echo("no outcome is linked to a cited belief yet")
    for name, s in scores.items():
        echo(f"{name}: {s.samples} outcome(s), ECE {s.ece:.3f}, Brier {s.brier:.3f}")
    if seq is not None:
        echo(f"recorded as event {seq}")
