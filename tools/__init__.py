"""The governed tool kit: shell, git, filesystem, HTTP and SQL tools, each an executor with its
:class:`~firewall.kernel.ActionContract` and invariants the executor re-checks on every call.

Host side, one line each for the kernel and the guard::

    kit = Toolkit(Files(root), Shell(["ls", "pytest"], cwd=root), Git([root]),
                  Http(["https://api.example.com"]), Sql("sqlite:///shop.db"))
    kernel = ActionKernel(wall, policy, registry=kit.registry(), executors=kit.executors())
    tools = guard(wall, kernel, session, kit.names())

The kit sits beside the core (like :mod:`gnomon.adapters`): it uses the kernel's contracts and
never the other way round.
"""

from gnomon.tools.base import Tool, Toolkit, ToolOutput, ToolRefused
from gnomon.tools.files import Files
from gnomon.tools.git import Git
from gnomon.tools.http import Http
from gnomon.tools.shell import Shell
from gnomon.tools.sql import Sql

__all__ = ["Files", "Git", "Http", "Shell", "Sql", "Tool", "ToolOutput", "ToolRefused", "Toolkit"]
