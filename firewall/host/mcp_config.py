"""The MCP proxy's configuration: which store, which signed action policy, and the operator's
contract for each tool of the server behind the proxy.

The operator declares every tool's category and level; the server's own annotations
(``readOnlyHint`` and the like) are never read, so a server cannot lower a tool's level by
calling it read-only. A tool the config does not list follows ``unlisted``: ``deny`` (the
default: no contract, so the kernel denies it) or a level the operator names.

One proxy can front several servers (``servers``): the agent then has one session over all its
tools, so what it read through one server holds a consequential call to another (two proxies
would be two sessions, and the taint would not cross). A tool name two servers both offer is
refused at startup.

.. code-block:: yaml

    server: git                    # the server after `--`: results labelled "mcp:git/<tool>"
    servers:                       # more servers behind the same proxy (optional)
      push: {command: [python, push_server.py]}    # or {url: http://127.0.0.1:8000/mcp}
    store: postgresql://gnomon@db/gnomon   # optional: $GNOMON_URL, else the default store
    project: shop
    actor: coder
    user: alice
    policy: actions.yaml           # signed (actions.yaml.sig); paths relative to this file
    operator_keys: [operator.pub]
    approver_keys: [approver.pub]
    hold_timeout: 30               # seconds a held call waits for `gnomon approve`
    unlisted: deny                 # or L0..L5
    tools:
      git_status: {category: read, level: L0}
      push:
        category: push
        level: L4
        description: "Push the current branch"
        preconditions:             # read at hold time, signed with the approval, re-read
          - file: release.md       #   right before the call runs: a change refuses it
          - git: .                 # a repository: its HEAD, a ref's commit, a remote's URL
            head: true
            ref: refs/heads/main
            remote: origin
          - command: [git, describe, --tags]   # argv only: exit status + output digest
            cwd: .
            timeout: 5
    pins:                          # listing digests the operator accepted (after a change)
      git: "sha256:…"

A tool's ``preconditions`` pin the world the approver saw: each is read when the call is held,
is part of what the signed approval covers (the contract digest), and is read again right
before the proxied call runs; any difference (the file edited, the ref moved, the remote
re-pointed, the command's output or exit status changed, or anything now unreadable) refuses the
call, recorded as ``action.refused``, and the agent gets an error result. A command runs without
a shell, with stdin closed, only ``PATH``, ``HOME`` and ``LC_ALL=C`` in its environment, a
timeout (at most 60 s) and at most 1 MiB of output read (:mod:`firewall.kernel.preconditions`).

Each server's ``tools/list`` is recorded as external content, pinned at first listing, and a
later change is refused until the operator accepts it under ``pins:``; an operator-written
``description`` (and ``input_schema``) replaces the server's own
(:mod:`firewall.host.mcp_listing`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gnomon.firewall.kernel.contracts import (
    ActionContract,
    BlastRadius,
    Category,
    Level,
    Precondition,
    PreconditionKind,
    Reversibility,
    ToolRegistry,
)
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.registry import default_url

#: The category an unlisted tool gets at each level the operator may name for it.
_UNLISTED_CATEGORY = {
    Level.L0: Category.READ,
    Level.L1: Category.SUGGEST,
    Level.L2: Category.ARTIFACT,
    Level.L3: Category.LOCAL_WRITE,
    Level.L4: Category.NETWORK,
    Level.L5: Category.LOCAL_WRITE,
}


class AnyArgs(BaseModel):
    """Inputs of a proxied tool: the server validates its own schema; the kernel digests and
    records whatever the agent sent."""

    model_config = ConfigDict(extra="allow", frozen=True)


_GIT_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,199}$"


class PreconditionSpec(BaseModel):
    """One fact a proxied tool's call is pinned to: a file's digest (``file``), a repository's
    state (``git`` with ``head``, ``ref`` and/or ``remote``), or a host command's output
    (``command``, an argv list, with ``cwd`` and ``timeout``). Paths are relative to the
    config's folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str | None = Field(default=None, min_length=1, max_length=4096)
    git: str | None = Field(default=None, min_length=1, max_length=4096)
    head: bool = Field(default=False, description="pin the repository's HEAD commit")
    ref: str | None = Field(default=None, pattern=_GIT_NAME, description="pin this ref's commit")
    remote: str | None = Field(
        default=None, pattern=_GIT_NAME, description="pin this remote's resolved push URL"
    )
    command: list[Annotated[str, Field(min_length=1, max_length=4096)]] | None = Field(
        default=None, min_length=1, max_length=64, description="argv of a host command (no shell)"
    )
    cwd: str | None = Field(default=None, min_length=1, max_length=4096)
    timeout: float = Field(default=10.0, gt=0, le=60, description="seconds the command may run")

    @model_validator(mode="after")
    def _one_fact(self) -> PreconditionSpec:
        given = [k for k in ("file", "git", "command") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of file, git or command")
        if self.git is not None and not (self.head or self.ref or self.remote):
            raise ValueError("git pins head: true, a ref, a remote, or several of them")
        if self.git is None and (self.head or self.ref or self.remote):
            raise ValueError("head, ref and remote go with git")
        if self.command is None and self.cwd is not None:
            raise ValueError("cwd goes with command")
        return self

    def under(self, base: Path) -> PreconditionSpec:
        """This spec with its paths resolved against ``base`` (the config's folder)."""
        update: dict[str, str] = {}
        for key in ("file", "git"):
            value = getattr(self, key)
            if value is not None:
                update[key] = str(base / value)
        if self.command is not None:
            update["cwd"] = str(base / (self.cwd or "."))
        return self.model_copy(update=update)

    def preconditions(self) -> list[Precondition]:
        """The kernel's preconditions for this spec, each over a fixed target."""

        def fixed(kind: PreconditionKind, target: str | dict[str, Any]) -> Precondition:
            text = target if isinstance(target, str) else _json(target)
            return Precondition(kind=kind, target=text)

        if self.file is not None:
            return [fixed(PreconditionKind.FILE_UNCHANGED, self.file)]
        if self.command is not None:
            doc = {"argv": self.command, "cwd": self.cwd, "timeout": self.timeout}
            return [fixed(PreconditionKind.COMMAND_OUTPUT, doc)]
        assert self.git is not None
        out = []
        if self.head:
            out.append(fixed(PreconditionKind.GIT_HEAD_UNCHANGED, self.git))
        if self.ref is not None:
            out.append(fixed(PreconditionKind.GIT_REF, {"repo": self.git, "ref": self.ref}))
        if self.remote is not None:
            doc = {"repo": self.git, "remote": self.remote}
            out.append(fixed(PreconditionKind.GIT_REMOTE_URL, doc))
        return out


def _json(doc: dict[str, Any]) -> str:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode()


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: Category = Field(description="what the tool does; sets the lowest level allowed")
    level: Literal["L0", "L1", "L2", "L3", "L4", "L5"] = Field(
        description="the tool's rung on the trust ladder (at least its category's floor)"
    )
    blast_radius: BlastRadius = BlastRadius.PROJECT
    reversibility: Reversibility = Reversibility.REVERSIBLE
    #: How sensitive the tool's data is: its results are recorded at this level.
    data_sensitivity: Sensitivity = Sensitivity.INTERNAL
    #: The operator's description, served instead of the server's (its title and annotations
    #: dropped); with ``input_schema`` too, nothing the server wrote about the tool is served
    #: but its name (:mod:`firewall.host.mcp_listing`).
    description: str | None = Field(default=None, min_length=1, max_length=4096)
    input_schema: dict[str, Any] | None = None
    #: Facts the call is pinned to between its hold and its execution (see the module doc).
    preconditions: list[PreconditionSpec] = Field(default_factory=list, max_length=32)

    @model_validator(mode="after")
    def _schema_with_description(self) -> ToolSpec:
        if self.input_schema is not None and self.description is None:
            raise ValueError("input_schema is served only with the operator's description")
        if self.input_schema is not None and self.input_schema.get("type") != "object":
            raise ValueError('input_schema must be a JSON schema of type "object"')
        return self


class UpstreamSpec(BaseModel):
    """One more server behind the proxy: a command line (stdio) or a streamable HTTP URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = Field(default=None, min_length=1)
    url: str | None = Field(default=None, pattern=r"^https?://")

    @model_validator(mode="after")
    def _one_of(self) -> UpstreamSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a list) or url")
        return self


class ProxyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description='name of the server after `--`; its results are labelled "mcp:<server>/<tool>"',
    )
    servers: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")], UpstreamSpec] = Field(
        default_factory=dict,
        description="more servers behind the same proxy, in the same session, by name",
    )
    store: str = Field(
        default_factory=default_url,
        description="the Gnomon store URL (sqlite:///..., postgresql://...); default: the user's "
        "default store",
    )
    project: str = Field(description="the project the session records under")
    actor: str = Field(default="agent", description="the agent's name in the log")
    user: str | None = Field(default=None, description="the user the agent works for")
    policy: Path = Field(
        description="the signed action policy (its .sig beside it); relative to this file"
    )
    operator_keys: list[Path] = Field(
        min_length=1, description="pinned operator public keys that may sign the policy"
    )
    approver_keys: list[Path] = Field(
        default_factory=list, description="pinned approver public keys for `gnomon approve`"
    )
    hold_timeout: float = Field(
        default=30.0, ge=0, le=86400, description="seconds a held call waits for an approval"
    )
    poll_interval: float = Field(
        default=0.2, gt=0, le=60, description="seconds between checks for an approval"
    )
    unlisted: Literal["deny", "L0", "L1", "L2", "L3", "L4", "L5"] = Field(
        default="deny", description="what a tool the config does not list gets: denied, or a level"
    )
    tools: dict[str, ToolSpec] = Field(
        default_factory=dict, description="the operator's contract for each tool, by name"
    )
    pins: dict[str, Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]] = Field(
        default_factory=dict,
        description="listing digests the operator accepts, per server (a changed tools/list "
        "is refused until its new digest is written here)",
    )

    def contract_for(self, tool: str) -> ActionContract | None:
        """The operator's contract for ``tool``; ``None`` (denied) when unlisted under deny."""
        spec = self.tools.get(tool)
        if spec is None:
            if self.unlisted == "deny":
                return None
            level = Level.parse(self.unlisted)
            spec = ToolSpec(category=_UNLISTED_CATEGORY[level], level=self.unlisted)
        return ActionContract(
            tool=tool,
            category=spec.category,
            required_level=Level.parse(spec.level),
            blast_radius=spec.blast_radius,
            reversibility=spec.reversibility,
            data_sensitivity=spec.data_sensitivity,
            preconditions=tuple(p for pre in spec.preconditions for p in pre.preconditions()),
            inputs=AnyArgs,
        )

    def registry(self, tools: list[str]) -> ToolRegistry:
        """Contracts for the server's ``tools`` (a name no contract can hold: left out, denied)."""
        contracts = []
        for name in tools:
            try:
                contract = self.contract_for(name)
            except ValidationError:
                contract = None  # a name the kernel cannot hold a contract for: denied
            if contract is not None:
                contracts.append(contract)
        return ToolRegistry(contracts)


_REFERENCE = (
    "the fields and an example are in the MCP proxy page of the docs (docs/mcp.md), "
    "and in `python -m pydoc gnomon.firewall.host.mcp_config`"
)


def load_proxy_config(path: str | Path) -> ProxyConfig:
    """Parse ``path`` into a :class:`ProxyConfig` (relative paths resolved against its folder),
    or raise :class:`~firewall.model.errors.InputError` saying what is wrong."""
    where = Path(path)
    try:
        doc: Any = yaml.safe_load(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the proxy config {where}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{where} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{where} must be a YAML mapping", hint=f"{_REFERENCE}")
    try:
        config = ProxyConfig.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "config"
        raise InputError(
            f"{where}: {field}: {err['msg']}", hint=f"fix {field}; {_REFERENCE}"
        ) from None
    for name, spec in config.tools.items():
        if Level.parse(spec.level) < _floor(spec.category):
            raise InputError(
                f"{where}: tools.{name} declares {spec.level}, below the "
                f"{spec.category.value} floor",
                hint="a contract can raise a tool's level, never lower it",
            )
    base = where.parent
    tools = {
        name: spec.model_copy(update={"preconditions": [p.under(base) for p in spec.preconditions]})
        for name, spec in config.tools.items()
    }
    return config.model_copy(
        update={
            "tools": tools,
            "policy": base / config.policy,
            "operator_keys": [base / p for p in config.operator_keys],
            "approver_keys": [base / p for p in config.approver_keys],
        }
    )


def _floor(category: Category) -> Level:
    from gnomon.firewall.kernel.contracts import FLOORS

    return FLOORS[category]


__all__ = [
    "AnyArgs",
    "PreconditionSpec",
    "ProxyConfig",
    "ToolSpec",
    "UpstreamSpec",
    "load_proxy_config",
]
