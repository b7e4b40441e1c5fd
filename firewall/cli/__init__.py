"""The ``gnomon`` command line: each command parses, calls one library function, renders.

::

    gnomon init                         create the store (default: gnomon.db in the data dir)
    gnomon doctor                       what is wrong with this installation, with fixes
    gnomon setup claude-code|codex|cursor   route a coding agent's MCP tools through Gnomon
    gnomon demo                         the poisoned-repository scenario, end to end
    gnomon sessions list                the sessions a store holds, with their event counts
    gnomon beliefs list | show ID       what a store holds, on all four axes
    gnomon beliefs history | supersede | export | verify   belief history and quote anchors
    gnomon why QUERY [--at DATE]        what is (was) believed about QUERY, and on what grounds
    gnomon replay SESSION --policy X    what a session would have seen under another policy/gate
    gnomon report SESSION [--html]      the trust report of a session, with its verdict
    gnomon recall QUERY --project P     a policy-filtered recall, bucket by bucket
    gnomon promote | quarantine | clear privileged moves (signed grants)
    gnomon forget --origin user:alice   erase text for good, with a signed certificate
    gnomon policy check FILE | schema   ContextPolicy files
    gnomon policy sign | verify FILE    action policies, Ed25519-signed by an operator key
    gnomon holds | approve | deny       actions held for a human, resolved across processes
    gnomon origins flag ID --reason R   quarantine everything derived from a hostile origin
    gnomon sentinel run [--follow]      sentinels over the event stream (alerts are events)
    gnomon decay [--window P30D]        freshness decay (fresh -> stale -> expired) as events
    gnomon calibration [--record]       ECE and Brier per calibration class, from outcomes
    gnomon otel export [--out FILE]     the log as OpenTelemetry spans (gnomon[otel])
    gnomon review [--project P]         candidates for long-term memory, flagged beliefs
    gnomon log verify | checkpoint      the hash-chained event log and its signed checkpoints
    gnomon log export | import          the log as NDJSON, verified before anything is imported
    gnomon rebuild                      projections rebuilt from the log, compared with the live
    gnomon db upgrade                   create or migrate a PostgreSQL schema
    gnomon import | export | sync STORE mem0, Letta or Zep (sync exits 3 on drift)
    gnomon keys generate                operator keys, pinned
    gnomon probes run                   the executable threat model
    gnomon mcp proxy --config F -- CMD  an MCP server behind the action kernel (stdio, --http)
    gnomon mcp serve --project P        a firewalled memory as MCP tools (stdio)

Every :class:`~firewall.model.errors.GnomonError` is caught once, at the root group, and printed as
``error:`` / ``hint:`` lines on stderr with exit status 1 (and as JSON on stdout under
``--json``, which every command takes). Exit statuses: 0 ok, 1 error or failed check, 2 usage,
3 findings (``sync``); see :mod:`firewall.cli.common`.
"""

from __future__ import annotations

import click

from gnomon.firewall import __about__
from gnomon.firewall.cli.admin import demo, keys, log, policy, probes
from gnomon.firewall.cli.agents import doctor_command, setup_command
from gnomon.firewall.cli.calibration import calibration_command
from gnomon.firewall.cli.common import GnomonGroup, Settings
from gnomon.firewall.cli.db import db, init
from gnomon.firewall.cli.decay import decay_command
from gnomon.firewall.cli.forget import forget_command
from gnomon.firewall.cli.history import replay_command, report_command, why_command
from gnomon.firewall.cli.kernel import approve_command, deny_command, holds_command
from gnomon.firewall.cli.logcmd import otel_group, rebuild
from gnomon.firewall.cli.mcp import mcp_group
from gnomon.firewall.cli.memory import beliefs, clear, promote, quarantine, recall
from gnomon.firewall.cli.review import review_group
from gnomon.firewall.cli.sentinels import origins, sentinel
from gnomon.firewall.cli.sessions import sessions
from gnomon.firewall.cli.stores import export_group, import_group, sync_group


@click.group(cls=GnomonGroup)
@click.version_option(__about__.__version__, prog_name="gnomon")
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Store URL for every command (default: $GNOMON_URL, else gnomon.db in the user data "
    "directory).",
)
@click.option(
    "--trusted-keys",
    "trusted_keys",
    default=None,
    metavar="DIR",
    help="Directory of pinned *.pub operator keys (default: $GNOMON_TRUSTED_KEYS, "
    "else trusted_keys/ in the user data directory).",
)
@click.pass_context
def cli(ctx: click.Context, url: str | None, trusted_keys: str | None) -> None:
    """Gnomon: a memory firewall for AI agents."""
    ctx.obj = Settings(url=url, trusted_keys=trusted_keys)


for command in (
    init,
    doctor_command,
    setup_command,
    demo,
    sessions,
    beliefs,
    recall,
    promote,
    quarantine,
    clear,
    forget_command,
    policy,
    log,
    rebuild,
    why_command,
    replay_command,
    report_command,
    db,
    import_group,
    export_group,
    sync_group,
    keys,
    probes,
    holds_command,
    approve_command,
    deny_command,
    mcp_group,
    origins,
    sentinel,
    decay_command,
    calibration_command,
    otel_group,
    review_group,
):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point (``gnomon``)."""
    cli(prog_name="gnomon")


__all__ = ["cli", "main"]
