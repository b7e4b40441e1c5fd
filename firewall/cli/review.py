"""``gnomon review``: the harvest projection (candidates for long-term memory, flagged beliefs)
and ``gnomon review approve``, which needs a signed user grant."""

from __future__ import annotations

import click

from gnomon import firewall
from gnomon.firewall.audit.report import Redactor
from gnomon.firewall.cli.common import (
    ceiling_option,
    console,
    echo,
    echo_json,
    json_option,
    resolve_url,
    url_option,
)
from gnomon.firewall.cli.memory import UserGrant, user_grant_command
from gnomon.firewall.host.review import approve, harvest
from gnomon.firewall.model.chain import Belief, content_hash
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.render import terminal_text
from gnomon.firewall.model.states import Sensitivity


@click.group("review", invoke_without_command=True)
@click.option("--project", default=None, help="The project whose review queue is listed.")
@click.option(
    "--limit",
    type=click.IntRange(1, 10_000),
    default=200,
    show_default=True,
    help="At most this many per list.",
)
@ceiling_option(
    "Statements more sensitive than this, or holding a credential, show as a marker and a hash."
)
@url_option
@json_option
@click.pass_context
def review_group(
    ctx: click.Context,
    project: str | None,
    limit: int,
    ceiling: str,
    url: str | None,
    as_json: bool,
) -> None:
    """List supported, clean, durable lessons (candidates for long-term memory) and flagged
    beliefs for a human to check, each as ID@VERSION. `gnomon review approve ID@VERSION --key
    KEY` approves a candidate at the version listed."""
    if ctx.invoked_subcommand is not None:
        return
    if project is None:
        raise InputError("gnomon review lists one project", hint="pass --project NAME")
    with firewall.open(resolve_url(ctx, url)) as wall:
        queue = harvest(wall.store, project, now=wall.clock(), limit=limit)
    redact = Redactor(Sensitivity(ceiling))

    def shown(belief: Belief) -> str:
        return redact(belief.statement, belief.sensitivity)

    if as_json:
        echo_json(queue.to_json(shown))
        return
    out = console()
    out.print(f"candidates for long-term memory ({len(queue.candidates)}):", markup=False)
    for belief in queue.candidates:
        out.print(f"  {belief.id}@{belief.version}  {terminal_text(shown(belief))}", markup=False)
    out.print(f"flagged for a human to check ({len(queue.flagged)}):", markup=False)
    for item in queue.flagged:
        out.print(
            f"  {item.belief.id}@{item.belief.version}  [{terminal_text(item.reason)}]  "
            f"{terminal_text(shown(item.belief))}",
            markup=False,
        )
    if queue.truncated:
        out.print(
            f"(more than {limit} to list: only the first are shown; raise --limit)", markup=False
        )


@review_group.command("approve")
@click.argument("belief_id", metavar="BELIEF_ID[@VERSION]")
@click.option(
    "--version",
    "version",
    type=click.IntRange(1),
    default=None,
    help="The version you reviewed (as `gnomon review` lists it, ID@VERSION); refused if the "
    "belief changed since. Default: the version it has now, which the output names.",
)
@click.option(
    "--statement-hash",
    default=None,
    help="The statement hash you reviewed (`gnomon review --json`); refused if it differs.",
)
@user_grant_command
def review_approve(
    g: UserGrant, belief_id: str, version: int | None, statement_hash: str | None
) -> None:
    """Approve a candidate for long-term memory on a signed user grant (one event), pinned to
    the version reviewed."""
    belief_id, version = _pinned(belief_id, version)
    with g.open([belief_id]) as (wall, grant):
        belief = approve(
            wall,
            belief_id,
            grant=grant,
            reason=g.reason,
            version=version,
            statement_hash=statement_hash,
        )
    digest = content_hash(belief.statement)
    if g.as_json:
        echo_json(
            {
                "approved": belief.id,
                "version": belief.version,
                "statement_hash": digest,
                "grant_id": grant.id,
            }
        )
        return
    echo(
        f"approved {belief.id}@{belief.version} for long-term memory "
        f"(statement {digest}, user grant {grant.id})"
    )


def _pinned(belief_id: str, version: int | None) -> tuple[str, int | None]:
    """``ID@VERSION`` split, agreeing with ``--version`` when both are given."""
    ident, at, number = belief_id.partition("@")
    if not at:
        return belief_id, version
    if not number.isdigit() or int(number) < 1:
        raise click.BadParameter(
            f"{belief_id!r}: the part after @ must be a version number (ID@3)",
            param_hint="BELIEF_ID",
        )
    if version is not None and version != int(number):
        raise click.BadParameter(
            f"{belief_id!r} names version {number} but --version says {version}",
            param_hint="BELIEF_ID",
        )
    return ident, int(number)


__all__ = ["review_group"]
