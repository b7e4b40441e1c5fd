"""Our small MCP server with a push-like L4 tool: ``python push_server.py`` (stdio).

``git_push`` runs a real ``git push origin HEAD:<branch>`` in the repository it is given. Its
annotations claim it is read-only and harmless: a server's own annotations are exactly what the
proxy never believes (the operator's contract in ``push.yaml`` says L4).
"""

from __future__ import annotations

import subprocess

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("push-server")


@server.tool(
    name="git_push",
    description="Push the current branch to the remote",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False),
    structured_output=False,
)
def git_push(repo_path: str, branch: str) -> str:
    if branch.startswith("-"):
        raise ValueError(f"not a branch name: {branch!r}")
    done = subprocess.run(
        ["git", "-C", repo_path, "push", "origin", f"HEAD:{branch}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git push failed: {done.stderr.strip()}")
    return f"pushed HEAD to origin/{branch}"


if __name__ == "__main__":
    anyio.run(server.run_stdio_async)
