"""``gnomon mcp proxy``: an MCP server behind the action kernel (``pip install 'gnomon[mcp]'``)."""

from __future__ import annotations

import click

from firewall.errors import InputError


@click.group("mcp")
def mcp_group() -> None:
    """Put an MCP server behind Gnomon."""


@mcp_group.command(
    "proxy", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The proxy's YAML config (store, signed action policy, a contract per tool).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def proxy_command(config_path: str, command: tuple[str, ...]) -> None:
    """Serve the MCP server started by COMMAND (after --) over stdio, every call through the
    kernel: gnomon mcp proxy --config proxy.yaml -- mcp-server-git -r REPO"""
    try:
        import anyio

        from firewall.mcp_proxy import run_proxy
    except ImportError as exc:
        raise InputError(
            f"the MCP proxy needs the mcp package ({exc.name} is not installed)",
            hint="pip install 'gnomon[mcp]'",
        ) from None
    from firewall.mcp_config import load_proxy_config

    config = load_proxy_config(config_path)
    anyio.run(run_proxy, config, list(command))


__all__ = ["mcp_group"]
