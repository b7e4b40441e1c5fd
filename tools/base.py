"""What every governed tool is: an executor, its :class:`~firewall.kernel.ActionContract`, and
the kit that registers a set of them with the kernel, the guard and the proxy in one line.

A :class:`Tool` pairs a contract (level, category, blast radius, reversibility, typed inputs and
outputs) with the function that runs it. The executor re-checks every invariant itself (the
root, the allowlist, the pinned hosts, read-only): the kernel decides *whether* a call runs, the
tool decides *what* it may touch, and an argument trying to escape is refused with
:class:`ToolRefused` (an :class:`~firewall.model.errors.ActionError`), recorded by the kernel as a
failed outcome and returned to the agent as an ordinary tool message.

>>> from gnomon.tools import Files, Toolkit
>>> import tempfile
>>> kit = Toolkit(Files(tempfile.mkdtemp()))
>>> kit.names()
['fs_list', 'fs_read', 'fs_write']
>>> kit.registry().lookup("fs_write").required_level.name
'L3'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from gnomon.firewall.kernel.contracts import (
    BUILTIN,
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Precondition,
    Reversibility,
    ToolRegistry,
)
from gnomon.firewall.model.errors import ActionError, ContractError
from gnomon.firewall.model.states import Sensitivity


class ToolRefused(ActionError):
    """A governed tool refused its arguments at execution: an escape (a path out of the root, a
    program off the allowlist, an unpinned host, a write through the query tool, a credential in
    an argument) or a limit."""


class ToolOutput(BaseModel):
    """A tool's typed result; its text (what the agent reads) is its JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __str__(self) -> str:
        return self.model_dump_json()


class Inputs(BaseModel):
    """A tool's typed arguments: strict, closed (an unknown field is refused), frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


@dataclass(frozen=True, slots=True)
class Tool:
    """One governed tool: its contract and its executor (``run(args) -> output``)."""

    contract: ActionContract
    run: Callable[[dict[str, Any]], object]

    @property
    def name(self) -> str:
        return self.contract.tool


class ToolGroup(Protocol):
    """Something that contributes tools to a :class:`Toolkit` (``Files``, ``Shell``, ...)."""

    def tools(self) -> list[Tool]: ...


def contract(
    tool: str,
    category: Category,
    level: Level,
    inputs: type[BaseModel],
    outputs: type[BaseModel],
    *,
    blast_radius: BlastRadius = BlastRadius.PROJECT,
    reversibility: Reversibility = Reversibility.REVERSIBLE,
    sensitivity: Sensitivity = Sensitivity.INTERNAL,
    preconditions: tuple[Precondition, ...] = (),
) -> ActionContract:
    """A kit tool's contract (``level`` may only raise the category's floor)."""
    made = ActionContract(
        tool=tool,
        category=category,
        required_level=level,
        blast_radius=blast_radius,
        reversibility=reversibility,
        data_sensitivity=sensitivity,
        preconditions=preconditions,
        inputs=inputs,
        outputs=outputs,
    )
    if made.required_level < made.floor:
        raise ContractError(
            f"{tool} at {made.required_level.name} is below the {category.value} floor "
            f"{made.floor.name}",
            hint="a kit tool's level can raise its category's floor, never lower it",
        )
    return made


def shipped(tool: str) -> ActionContract:
    """The shipped contract of ``tool`` (its preconditions included): kit tools that implement a
    shipped tool (``git_commit``, ``git_push``, ``http_post``) keep its contract."""
    found = next((c for c in BUILTIN if c.tool == tool), None)
    if found is None:  # pragma: no cover - the kit only names shipped tools that exist
        raise ContractError(f"no shipped contract for {tool}")
    return found


_SHIPPED = frozenset(c.tool for c in BUILTIN)


class Toolkit:
    """A set of governed tools, registered with the kernel, the guard and the proxy at once:

    ``ActionKernel(wall, policy, registry=kit.registry(), executors=kit.executors())``, then
    ``guard(wall, kernel, session, kit.names())``.
    """

    def __init__(self, *groups: ToolGroup | Tool) -> None:
        self._tools: dict[str, Tool] = {}
        for group in groups:
            for tool in [group] if isinstance(group, Tool) else group.tools():
                if tool.name in self._tools:
                    raise ContractError(f"two kit tools are named {tool.name}")
                self._tools[tool.name] = tool

    def names(self) -> list[str]:
        """The kit's tool names, sorted (what :func:`~firewall.host.guard.guard` takes)."""
        return sorted(self._tools)

    def contracts(self) -> list[ActionContract]:
        """The contracts the kit adds to the shipped ones (a kit tool implementing a shipped
        tool keeps the shipped contract): ``ToolRegistry([*BUILTIN, *kit.contracts()])``."""
        return [t.contract for n, t in sorted(self._tools.items()) if n not in _SHIPPED]

    def registry(self, extra: Iterable[ActionContract] = ()) -> ToolRegistry:
        """The shipped contracts, the kit's, and ``extra`` (the host's own tools)."""
        return ToolRegistry([*BUILTIN, *self.contracts(), *extra])

    def executors(self) -> dict[str, Callable[[dict[str, Any]], object]]:
        """Tool name to executor, for :class:`~firewall.kernel.ActionKernel`."""
        return {name: tool.run for name, tool in self._tools.items()}

    def proxy_tools(self) -> dict[str, dict[str, str]]:
        """The ``tools:`` section of a ``gnomon mcp proxy`` config fronting the kit served over
        MCP (:func:`gnomon.tools.mcp_server.serve_stdio`): each tool's category, level, blast
        radius and reversibility, as its contract says."""
        return {
            name: {
                "category": t.contract.category.value,
                "level": t.contract.required_level.name,
                "blast_radius": t.contract.blast_radius.value,
                "reversibility": t.contract.reversibility.value,
            }
            for name, t in sorted(self._tools.items())
        }

    def tool(self, name: str) -> Tool:
        """The kit tool named ``name`` (``KeyError`` when the kit has none)."""
        return self._tools[name]

    def __repr__(self) -> str:
        return f"Toolkit({', '.join(self.names())})"


def no_secret_in(args: Mapping[str, Any], secrets: Iterable[str], tool: str) -> None:
    """Refuse ``args`` when any string in them contains one of ``secrets`` (a credential the
    host holds must never travel as an argument: the agent only learns it by reading it, and
    passing it on is exfiltration)."""
    values = [v for v in _strings(args)]
    for secret in secrets:
        if secret and any(secret in v for v in values):
            raise ToolRefused(
                f"{tool} refused: an argument carries a credential the host holds",
                hint="credentials are injected by the host from its configuration; never pass "
                "one as an argument",
            )


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


__all__ = [
    "Inputs",
    "Tool",
    "ToolGroup",
    "ToolOutput",
    "ToolRefused",
    "Toolkit",
    "contract",
    "no_secret_in",
    "shipped",
]
