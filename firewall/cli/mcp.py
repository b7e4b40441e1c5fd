"""``gnomon mcp proxy`` (an MCP server behind the action kernel) and ``gnomon mcp serve`` (a
firewalled memory as MCP tools); ``pip install 'gnomon[mcp]'``."""

from __future__ import annotations

import sys

import click

from gnomon.firewall.cli.common import json_option
from gnomon.firewall.host.mcp_refusal import refuse_requests
from gnomon.firewall.model.errors import GnomonError, InputError


@click.group("mcp")
def mcp_group() -> None:
    """Put an MCP server behind Gnomon."""


@mcp_group.command("proxy", context_settings={"ignore_unknown_options": True})
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The proxy's YAML config (store, signed action policy, a contract per tool).",
)
@click.option(
    "--http",
    "listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--approvals",
    "approvals",
    default=None,
    metavar="[HOST:]PORT",
    help="Serve the HTTP approval channel (GET /holds/ID, POST /approvals) at HOST:PORT "
    "(a port alone: loopback), for `gnomon approve --http`.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=False)
@json_option
def proxy_command(
    config_path: str,
    listen: str | None,
    approvals: str | None,
    command: tuple[str, ...],
    as_json: bool,
) -> None:
    """Serve the MCP server started by COMMAND (after --) over stdio (or streamable HTTP with
    --http), every call through the kernel: gnomon mcp proxy --config proxy.yaml --
    mcp-server-git -r REPO. More servers behind the same proxy (one session over all their
    tools) go in the config's servers:. ``--json`` only changes how a startup error is printed
    (stdout is the MCP wire once serving over stdio)."""
    try:
        _proxy(config_path, listen, approvals, command)
    except GnomonError as exc:
        # over stdio the user reads the MCP client, not our stderr: answer its initialize with
        # the problem and its fix (then the CLI prints it on stderr as well)
        if listen is None and not sys.stdin.isatty():
            refuse_requests(exc.message, exc.hint, sys.stdin.buffer, sys.stdout.buffer)
        raise


def _proxy(
    config_path: str, listen: str | None, approvals: str | None, command: tuple[str, ...]
) -> None:
    try:
        import anyio

        from gnomon.firewall.host.mcp_proxy import parse_listen, run_proxy
    except ImportError as exc:
        raise InputError(
            f"the MCP proxy needs the mcp package ({exc.name} is not installed)",
            hint="pip install 'gnomon[mcp]'",
        ) from None
    from gnomon.firewall.host.mcp_config import load_proxy_config

    http = parse_listen(listen) if listen is not None else None
    channel = None
    if approvals is not None:  # a port alone: loopback
        where = f"127.0.0.1:{approvals}" if approvals.isdigit() else approvals
        channel = parse_listen(where, "--approvals")
    config = load_proxy_config(config_path)
    anyio.run(lambda: run_proxy(config, list(command), http=http, approvals=channel))


__all__ = ["mcp_group"]


@mcp_group.command("serve")
@click.option("--url", default=None, metavar="URL", help="Store URL (default: as every command).")
@click.option("--project", required=True, help="The project whose memory is served.")
@click.option("--actor", default="agent", show_default=True, help="The agent's name.")
@click.option("--user", default=None, help="The user the agent works for.")
@click.option("--policy", default="default", show_default=True, help="Recall context policy.")
@json_option
@click.pass_context
def serve_command(
    ctx: click.Context,
    url: str | None,
    project: str,
    actor: str,
    user: str | None,
    policy: str,
    as_json: bool,
) -> None:
    """Serve policy-filtered recall, why and agent-labelled remember as MCP tools (stdio)."""
    try:
        import anyio

        from gnomon.firewall.host.mcp_memory import serve_memory
    except ImportError as exc:
        raise InputError(
            f"the MCP memory server needs the mcp package ({exc.name} is not installed)",
            hint="pip install 'gnomon[mcp]'",
        ) from None
    from gnomon.firewall.cli.common import resolve_url

    target = resolve_url(ctx, url)
    anyio.run(lambda: serve_memory(target, project=project, actor=actor, user=user, policy=policy))
