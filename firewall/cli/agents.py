"""``gnomon setup AGENT`` (route a coding agent through Gnomon) and ``gnomon doctor`` (what is
wrong with an installation, each finding with its fix)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gnomon.firewall.cli.common import (
    EXIT_ERROR,
    console,
    echo_json,
    json_option,
    resolve_trusted_keys,
    resolve_url,
    say,
    trusted_keys_option,
    url_option,
    write_file,
)
from gnomon.firewall.host import agent_setup, doctor
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.store.paths import FILE_MODE, private_dir


@click.command("setup", context_settings={"ignore_unknown_options": True})
@click.argument("agent", type=click.Choice(agent_setup.AGENTS))
@click.option(
    "--proxy-config",
    type=click.Path(dir_okay=False),
    default=None,
    help="The MCP proxy's YAML config: the agent's tools go through `gnomon mcp proxy` with it. "
    "Without it only the memory server is written (and `gnomon doctor` says so).",
)
@click.option("--project", required=True, help="The project the memory server serves.")
@click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default=None,
    help="Which of the agent's config files (default: project for Claude Code and Cursor, "
    "user for Codex).",
)
@click.option(
    "--dir",
    "project_dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The project folder (for --scope project).",
)
@url_option
@json_option
@click.argument("upstream", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def setup_command(
    ctx: click.Context,
    agent: agent_setup.Agent,
    proxy_config: str | None,
    project: str,
    scope: agent_setup.Scope | None,
    project_dir: str,
    url: str | None,
    as_json: bool,
    upstream: tuple[str, ...],
) -> None:
    """Write AGENT's MCP configuration (claude-code, codex or cursor) so that its tools go
    through `gnomon mcp proxy` and its memory through `gnomon mcp serve`; the MCP server to
    guard follows `--` (or is listed in the proxy config's servers:). The user's other servers
    are kept, the old file is backed up (FILE.gnomon-backup), and running it again changes
    nothing."""
    from gnomon.firewall.host.mcp_config import load_proxy_config

    chosen = scope or agent_setup.DEFAULT_SCOPE[agent]
    proxy = Path(proxy_config) if proxy_config else None
    if proxy is not None:
        load_proxy_config(proxy)  # a config the proxy would refuse is refused here, now
    path = agent_setup.config_path(agent, chosen, Path(project_dir).absolute())
    plan = agent_setup.plan_setup(
        agent,
        path,
        project=project,
        store_url=resolve_url(ctx, url, must_exist=False),
        proxy_config=proxy,
        upstream=list(upstream),
    )
    backup = None
    if plan.changed:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot create {path.parent}: {exc.strerror or exc}",
                hint="check the folder's permissions, or choose another --scope / --dir",
            ) from None
        if plan.old_text is not None:
            backup = path.with_name(path.name + ".gnomon-backup")
            write_file(backup, plan.old_text)
        write_file(path, plan.new_text)
    _record(agent, path)
    data = {
        "agent": agent,
        "path": str(path),
        "changed": plan.changed,
        "backup": str(backup) if backup else None,
        "servers": sorted(plan.servers),
        "other_servers": plan.others,
        "disable_builtins": list(agent_setup.BUILTINS[agent]),
    }
    if as_json:
        echo_json(data)
        return
    state = "wrote" if plan.changed else "unchanged:"
    say(f"ok: {state} {path} ({', '.join(sorted(plan.servers))})")
    if backup:
        say(f"backup: {backup}")
    if proxy is None:
        say("note: no --proxy-config, so the agent's tools do not go through the proxy yet")
    if plan.others:
        say(f"note: other MCP servers there run directly: {', '.join(plan.others)}")
    say("For the proxy to see every call, disable the agent's built-in tools:")
    for line in agent_setup.BUILTINS[agent]:
        say(f"  - {line}")
    say("then: `gnomon doctor` checks the result")


def _record(agent: agent_setup.Agent, path: Path) -> None:
    """Remember the file for ``gnomon doctor`` (once per file)."""
    entries = [
        {"agent": a, "path": str(p)} for a, p in doctor.recorded_setups() if p != path.absolute()
    ]
    entries.append({"agent": agent, "path": str(path.absolute())})
    record = doctor.setup_record()
    try:
        private_dir(record.parent)
    except OSError as exc:
        raise InputError(
            f"cannot create the data directory {record.parent}: {exc.strerror or exc}",
            hint="set $GNOMON_HOME to a folder you can write to",
        ) from None
    write_file(record, json.dumps(entries, indent=2) + "\n")
    record.chmod(FILE_MODE)


@click.command("doctor")
@url_option
@trusted_keys_option
@json_option
@click.pass_context
def doctor_command(
    ctx: click.Context, url: str | None, trusted_keys: str | None, as_json: bool
) -> None:
    """Check this installation: the store and keys out of the agent's reach (not in a git
    working tree, owner-only), the pinned operator keys and the sealing key present, and every
    agent config `gnomon setup` wrote still routing through the proxy. Exit 1 on a problem."""
    found = doctor.diagnose(
        resolve_url(ctx, url, must_exist=False),
        trusted_keys=resolve_trusted_keys(ctx, trusted_keys),
    )
    if as_json:
        echo_json(found.to_json())
    else:
        out = console()
        for name, value in found.checked.items():
            out.print(f"{name}: {value}", markup=False, highlight=False, soft_wrap=True)
        for finding in found.findings:
            label = "PROBLEM" if finding.severity == "problem" else "warning"
            out.print(f"{label} [{finding.check}] {finding.problem}", markup=False, soft_wrap=True)
            out.print(f"  fix: {finding.fix}", markup=False, highlight=False, soft_wrap=True)
        problems = sum(f.severity == "problem" for f in found.findings)
        warnings = len(found.findings) - problems
        say(
            "ok: healthy" + (f" ({warnings} warnings)" if warnings else "")
            if found.healthy
            else f"unhealthy: {problems} problems, {warnings} warnings"
        )
    if not found.healthy:
        ctx.exit(EXIT_ERROR)


__all__ = ["doctor_command", "setup_command"]
