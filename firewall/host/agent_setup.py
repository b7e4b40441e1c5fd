"""MCP configurations for coding agents (Claude Code, Codex, Cursor) that route through Gnomon.

``gnomon setup AGENT`` merges two servers into the agent's own MCP configuration file: its tools
through ``gnomon mcp proxy`` (every call through the action kernel) and its memory through
``gnomon mcp serve`` (policy-filtered recall). This module computes the new file; the command
line writes it (atomically, after a backup) and records it for ``gnomon doctor``, which calls
:func:`inspect_config` to check that the file still routes through the proxy.

The formats, as each agent documents them:

* Claude Code: ``.mcp.json`` in the project (``--scope project``) or ``~/.claude.json`` (``user``),
  JSON ``{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}``;
* Codex: ``~/.codex/config.toml`` (``user``) or ``.codex/config.toml`` (``project``, trusted
  projects only), TOML tables ``[mcp_servers.NAME]`` with ``command``, ``args``, ``env``;
* Cursor: ``.cursor/mcp.json`` (``project``) or ``~/.cursor/mcp.json`` (``user``), JSON
  ``{"mcpServers": {NAME: {"command", "args", "env"}}}``.

The user's other servers and settings are kept as they are (TOML comments too); running setup
twice gives the same file.

>>> entry = server_entry("claude-code", ["mcp", "serve", "--project", "shop"], {})
>>> entry["type"], entry["args"][-4:]
('stdio', ['mcp', 'serve', '--project', 'shop'])
>>> routes_through_proxy(entry)
False
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.exceptions

from gnomon.firewall.model.errors import InputError

Agent = Literal["claude-code", "codex", "cursor"]
Scope = Literal["project", "user"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex", "cursor")
#: The names of the servers setup writes.
TOOLS_SERVER, MEMORY_SERVER = "gnomon-tools", "gnomon-memory"
#: The module that is the ``gnomon`` command (``python -m``): an absolute interpreter path works
#: whatever PATH the agent starts its servers with.
CLI_MODULE = "gnomon.firewall.cli"

#: The scope each agent's setup uses unless told otherwise (Codex reads a project's file only
#: once the project is trusted, so its user file is the one that always works).
DEFAULT_SCOPE: dict[Agent, Scope] = {"claude-code": "project", "codex": "user", "cursor": "project"}

#: What to switch off so that the proxy sees every call: built-in tools act without MCP.
BUILTINS: dict[Agent, tuple[str, ...]] = {
    "claude-code": (
        "deny the built-in tools that act without MCP in .claude/settings.json: "
        '"permissions": {"deny": ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", '
        '"WebFetch", "WebSearch"]}',
        "or start it with `claude --disallowedTools Bash Edit MultiEdit Write NotebookEdit "
        "WebFetch WebSearch`",
    ),
    "codex": (
        "turn off the built-in shell and patch tools in ~/.codex/config.toml: "
        "[features] shell_tool = false, and include_apply_patch_tool = false",
        'keep sandbox_mode = "read-only" so nothing else writes behind the proxy',
    ),
    "cursor": (
        "in Cursor Settings > Agents, turn off the terminal (run commands) and file-editing "
        "tools and auto-run, so the agent acts only through the gnomon-tools server",
    ),
}


def config_path(agent: Agent, scope: Scope, project_dir: Path, home: Path | None = None) -> Path:
    """The file ``agent`` reads its MCP servers from in ``scope``.

    >>> config_path("codex", "user", Path("/p"), Path("/h"))
    PosixPath('/h/.codex/config.toml')
    >>> config_path("cursor", "project", Path("/p"), Path("/h"))
    PosixPath('/p/.cursor/mcp.json')
    """
    home = home if home is not None else Path.home()
    base = project_dir if scope == "project" else home
    if agent == "claude-code":
        return project_dir / ".mcp.json" if scope == "project" else home / ".claude.json"
    if agent == "codex":
        return base / ".codex" / "config.toml"
    return base / ".cursor" / "mcp.json"


def gnomon_command() -> list[str]:
    """The command line that runs ``gnomon`` with this installation, from any directory."""
    return [sys.executable, "-m", CLI_MODULE]


def server_entry(agent: Agent, gnomon_args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One server in ``agent``'s format: ``gnomon`` (this installation) with ``gnomon_args``."""
    command, *prefix = gnomon_command()
    entry: dict[str, Any] = {"command": command, "args": [*prefix, *gnomon_args], "env": env}
    if agent == "claude-code":
        entry = {"type": "stdio", **entry}
    return entry


def routes_through_proxy(entry: Any) -> bool:
    """Whether a configured server runs ``gnomon mcp proxy``."""
    return _runs(entry, "proxy")


def _runs(entry: Any, subcommand: str) -> bool:
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    words = [command, *(str(a) for a in args)]
    for i, word in enumerate(words):
        if (Path(word).name == "gnomon" or word == CLI_MODULE) and words[i + 1 : i + 3] == [
            "mcp",
            subcommand,
        ]:
            return True
    return False


@dataclass
class SetupPlan:
    """The new text of an agent's config file and what changed in it."""

    agent: Agent
    path: Path
    old_text: str | None
    new_text: str
    servers: dict[str, dict[str, Any]]
    others: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether writing it would change the file."""
        return self.old_text != self.new_text


def plan_setup(
    agent: Agent,
    path: Path,
    *,
    project: str,
    store_url: str,
    proxy_config: Path | None,
    upstream: list[str],
) -> SetupPlan:
    """Merge the Gnomon servers into the config file at ``path`` (read, never written here)."""
    env = {"GNOMON_HOME": os.environ["GNOMON_HOME"]} if os.environ.get("GNOMON_HOME") else {}
    servers = {
        MEMORY_SERVER: server_entry(
            agent, ["mcp", "serve", "--project", project, "--url", store_url], env
        )
    }
    if proxy_config is not None:
        args = ["mcp", "proxy", "--config", str(proxy_config.absolute())]
        if upstream:
            args += ["--", *upstream]
        servers[TOOLS_SERVER] = server_entry(agent, args, env)
    old_text = _read(path)
    if agent == "codex":
        new_text, others = _merge_toml(path, old_text, servers)
    else:
        new_text, others = _merge_json(path, old_text, servers)
    return SetupPlan(agent, path, old_text, new_text, servers, others)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(
            f"cannot read {path}: {exc.strerror or exc}", hint="check the file's permissions"
        ) from None


def _merge_json(
    path: Path, old_text: str | None, servers: dict[str, dict[str, Any]]
) -> tuple[str, list[str]]:
    doc = _json_doc(path, old_text)
    table = doc.setdefault("mcpServers", {})
    if not isinstance(table, dict):
        raise InputError(
            f"{path}: mcpServers is not a JSON object",
            hint="fix or move the file, then run gnomon setup again",
        )
    others = sorted(set(table) - {TOOLS_SERVER, MEMORY_SERVER})
    table.update(servers)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n", others


def _json_doc(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})",
            hint="fix the file (your agent cannot read it either), then run gnomon setup again",
        ) from None
    if not isinstance(doc, dict):
        raise InputError(f"{path} must hold a JSON object", hint="fix or move the file")
    return doc


def _merge_toml(
    path: Path, old_text: str | None, servers: dict[str, dict[str, Any]]
) -> tuple[str, list[str]]:
    doc = _toml_doc(path, old_text)
    table = doc.get("mcp_servers")
    if table is None:
        table = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = table
    if not isinstance(table, dict):
        raise InputError(f"{path}: mcp_servers is not a table", hint="fix or move the file")
    others = sorted(set(table) - {TOOLS_SERVER, MEMORY_SERVER})
    for name, entry in servers.items():
        item = tomlkit.table()
        item["command"] = entry["command"]
        item["args"] = entry["args"]
        item["env"] = tomlkit.inline_table()
        item["env"].update(entry["env"])
        table[name] = item
    return tomlkit.dumps(doc), others


def _toml_doc(path: Path, text: str | None) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except tomlkit.exceptions.ParseError as exc:
        raise InputError(
            f"{path} is not valid TOML ({exc})",
            hint="fix the file (your agent cannot read it either), then run gnomon setup again",
        ) from None


def load_servers(agent: Agent, path: Path) -> dict[str, Any]:
    """The MCP servers ``agent``'s config file at ``path`` declares (a typed error if it cannot
    be read)."""
    text = _read(path)
    if text is None:
        raise InputError(f"{path} is missing", hint=f"run `gnomon setup {agent}` again")
    if agent == "codex":
        found: Any = _toml_doc(path, text).unwrap().get("mcp_servers", {})
    else:
        found = _json_doc(path, text).get("mcpServers", {})
    if not isinstance(found, dict):
        raise InputError(f"{path}: its MCP server list is not a mapping", hint="fix the file")
    return found


@dataclass
class ConfigFinding:
    """One thing wrong with an agent's config file, and its fix."""

    problem: str
    fix: str
    severity: Literal["problem", "warning"] = "problem"


def inspect_config(agent: Agent, path: Path) -> list[ConfigFinding]:
    """What keeps the agent config at ``path`` (written by setup) from routing through Gnomon."""
    try:
        servers = load_servers(agent, path)
    except InputError as exc:
        return [ConfigFinding(f"{agent}: {exc.message}", exc.hint or "fix the file")]
    again = f"run `gnomon setup {agent} --proxy-config PROXY.yaml` again"
    findings = []
    if not routes_through_proxy(servers.get(TOOLS_SERVER)):
        findings.append(
            ConfigFinding(
                f"{agent}: {path} has no {TOOLS_SERVER} server running `gnomon mcp proxy`, "
                "so the agent's tool calls do not go through the action kernel",
                again,
            )
        )
    if not _runs(servers.get(MEMORY_SERVER), "serve"):
        findings.append(
            ConfigFinding(
                f"{agent}: {path} has no {MEMORY_SERVER} server running `gnomon mcp serve`",
                again,
            )
        )
    for name in sorted(set(servers) - {TOOLS_SERVER, MEMORY_SERVER}):
        if not routes_through_proxy(servers[name]):
            findings.append(
                ConfigFinding(
                    f"{agent}: MCP server {name!r} in {path} runs directly, not through "
                    "`gnomon mcp proxy`: its calls bypass the action kernel",
                    f"move it behind the proxy (list it under servers: in the proxy config) "
                    f"and remove it from {path}",
                    severity="warning",
                )
            )
    return findings


__all__ = [
    "AGENTS",
    "BUILTINS",
    "CLI_MODULE",
    "DEFAULT_SCOPE",
    "MEMORY_SERVER",
    "TOOLS_SERVER",
    "Agent",
    "ConfigFinding",
    "Scope",
    "SetupPlan",
    "config_path",
    "gnomon_command",
    "inspect_config",
    "load_servers",
    "plan_setup",
    "routes_through_proxy",
    "server_entry",
]
