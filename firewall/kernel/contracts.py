"""Action contracts and the tool registry: what each tool may do, and how high it sits on the
trust ladder.

The **trust ladder**: L0 observe, L1 suggest, L2 isolated artifact, L3 local reversible, L4
external or shared (push, deploy, network, credentials, spend, publish, sign), L5 prohibited.

A tool's *category* gives it its own minimum level, a floor no contract can go below: a contract
that declares ``git_push`` (category ``push``) at L2 is refused with
:class:`~firewall.model.errors.ContractError`, so a mistaken or hostile contract cannot lower a push
below L4. The floor follows the *tool*, not only the declared category: the shipped ladder
(:data:`LADDER`) names the category of every known tool, and a contract that declares a known
tool under a category with a lower floor (``git_push`` as ``read``) is refused when the registry
is built. A tool the ladder does not know starts at the policy's ``unknown_tool_floor``, unless
the operator signs a level for it into the policy (``tool_levels``; see
:mod:`firewall.kernel.decide`). A tool no contract names is unknown to the kernel, and denied
(fail closed).

>>> registry = ToolRegistry.builtin()
>>> registry.lookup("git_push").required_level.name
'L4'
>>> registry.lookup("rm_rf_slash") is None
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import IntEnum, StrEnum
from typing import Any

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from gnomon.firewall.model.errors import ContractError, InputError
from gnomon.firewall.model.states import Sensitivity


class Level(IntEnum):
    """The trust ladder."""

    L0 = 0  # observe
    L1 = 1  # suggest
    L2 = 2  # isolated artifact
    L3 = 3  # local, reversible
    L4 = 4  # external or shared: always held for a human
    L5 = 5  # prohibited: always denied

    @classmethod
    def parse(cls, value: object) -> Level:
        if isinstance(value, Level):
            return value
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        raise ValueError(f"{value!r} is not a level; use one of L0, L1, L2, L3, L4, L5")


class BlastRadius(StrEnum):
    SELF = "self"
    SESSION = "session"
    PROJECT = "project"
    EXTERNAL = "external"


class Reversibility(StrEnum):
    REVERSIBLE = "reversible"
    COMPENSABLE = "compensable"
    IRREVERSIBLE = "irreversible"


class Category(StrEnum):
    """What kind of thing a tool does; each has its own floor on the ladder."""

    READ = "read"
    FETCH = "fetch"  # a read-only network fetch: L1 to an allowlisted destination, else L4
    SUGGEST = "suggest"
    ARTIFACT = "artifact"
    LOCAL_WRITE = "local_write"
    NETWORK = "network"
    CREDENTIALS = "credentials"
    PUBLISH = "publish"
    DEPLOY = "deploy"
    PUSH = "push"
    SIGN = "sign"
    SPEND = "spend"


#: The floor of each category: the conservative defaults (network, credentials, publish, deploy,
#: push, sign and spend at L4).
FLOORS: Mapping[Category, Level] = {
    Category.READ: Level.L0,
    Category.FETCH: Level.L1,
    Category.SUGGEST: Level.L1,
    Category.ARTIFACT: Level.L2,
    Category.LOCAL_WRITE: Level.L3,
    Category.NETWORK: Level.L4,
    Category.CREDENTIALS: Level.L4,
    Category.PUBLISH: Level.L4,
    Category.DEPLOY: Level.L4,
    Category.PUSH: Level.L4,
    Category.SIGN: Level.L4,
    Category.SPEND: Level.L4,
}


#: The shipped ladder: the category of every known tool. A contract for one of these tools may
#: declare a stricter category or level, never a lower floor.
LADDER: Mapping[str, Category] = {
    "read_file": Category.READ,
    "git_status": Category.READ,
    "git_show": Category.READ,
    "git_diff": Category.READ,
    "git_log": Category.READ,
    "suggest": Category.SUGGEST,
    "git_add": Category.ARTIFACT,
    "git_commit": Category.ARTIFACT,
    "write_file": Category.LOCAL_WRITE,
    "drop_database": Category.LOCAL_WRITE,
    "git_push": Category.PUSH,
    "http_post": Category.NETWORK,
    "deploy": Category.DEPLOY,
    "read_secret": Category.CREDENTIALS,
    # the governed tool kit (gnomon.tools)
    "fs_read": Category.READ,
    "fs_list": Category.READ,
    "sql_query": Category.READ,
    "fs_write": Category.LOCAL_WRITE,
    "shell_run": Category.LOCAL_WRITE,
    "http_get": Category.NETWORK,
}


class PreconditionKind(StrEnum):
    """Facts recorded at proposal and revalidated at execution (see ``preconditions``)."""

    FILE_UNCHANGED = "file_unchanged"  # sha256 of the file named by an argument
    GIT_HEAD_UNCHANGED = "git_head_unchanged"  # HEAD of the repository named by an argument
    #: the push a ``git_push`` makes: the commit its branch names, the remote's resolved push
    #: URL, the refspec and the force flag (``arg`` names the repository argument)
    GIT_PUSH_TARGET = "git_push_target"
    #: where a write lands: the resolved real path, the parent directory's identity (st_dev,
    #: st_ino) and what the path itself is (absent, file, link): a link planted after the
    #: approval, or a swapped parent, is a change
    FILE_TARGET = "file_target"
    #: the commit a ref names (target: JSON ``{"repo", "ref"}``)
    GIT_REF = "git_ref"
    #: a remote's push URL as git resolves it (target: JSON ``{"repo", "remote"}``)
    GIT_REMOTE_URL = "git_remote_url"
    #: a host command's exit status and output digest (target: JSON ``{"argv", "cwd",
    #: "timeout"}``; argv only, no shell, a scoped environment, bounded output)
    COMMAND_OUTPUT = "command_output"


class Precondition(BaseModel):
    """A contract's precondition: ``kind`` over the path in argument ``arg`` (under ``root``
    when the argument is relative to a folder), or over a fixed ``target`` the operator wrote
    (a proxied tool's preconditions: :mod:`firewall.host.mcp_config`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: PreconditionKind
    arg: StrictStr = ""
    root: StrictStr | None = None
    target: StrictStr | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Precondition:
        if (self.target is None) == (not self.arg):
            raise ValueError("a precondition names an argument (arg) or a fixed target, not both")
        if self.target is not None and self.root is not None:
            raise ValueError("root applies to an argument, not to a fixed target")
        return self


class ActionContract(BaseModel):
    """What one tool is: its level, blast radius, reversibility, scope, data sensitivity,
    preconditions and typed inputs/outputs (pydantic models)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    tool: StrictStr = Field(pattern=r"^[a-z][a-z0-9_.-]{0,63}$")
    category: Category
    required_level: Level
    blast_radius: BlastRadius
    reversibility: Reversibility
    scope: StrictStr = "project"
    data_sensitivity: Sensitivity = Sensitivity.INTERNAL
    preconditions: tuple[Precondition, ...] = ()
    #: whether a ``force`` argument may be true (a forced push rewrites a remote's history)
    allows_force: bool = False
    inputs: type[BaseModel]
    outputs: type[BaseModel] | None = None
    #: the arguments naming where the call reaches (a URL, an e-mail address, a payee, a
    #: channel): checked against the policy's egress allowlist
    destinations: tuple[StrictStr, ...] = ()

    @field_validator("required_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> Level:
        return Level.parse(value)

    @property
    def floor(self) -> Level:
        """The higher of the declared category's floor and the ladder's for this tool."""
        known = LADDER.get(self.tool)
        own = FLOORS[self.category]
        return own if known is None else max(own, FLOORS[known])

    @property
    def known(self) -> bool:
        """Whether the shipped ladder names this tool's category."""
        return self.tool in LADDER

    def output_problem(self, output: object) -> str | None:
        """Why a tool's ``output`` does not match :attr:`outputs` (``None``: it does, or no
        output schema is declared)."""
        return _output_problem(self, output)

    def checked_inputs(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` validated (strictly) against the input schema, or :class:`InputError`.

        Strict as Python objects or as JSON: an enum field takes its member or its string
        value, and either way the validated (dumped) form is what runs and what an approval's
        inputs digest covers."""
        try:
            try:
                model = self.inputs.model_validate(dict(args), strict=True)
            except ValidationError:
                # strict as JSON: what a model's tool call carries (an enum's string value, a
                # date as ISO text) is accepted, nothing is coerced from another type
                model = self.inputs.model_validate_json(_json(args), strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "args"
            raise InputError(
                f"arguments for {self.tool} are invalid: {where}: {err['msg']}",
                hint=f"pass the fields of {self.inputs.__name__}",
            ) from None
        checked = model.model_dump(mode="json")
        if checked.get("force") is True and not self.allows_force:
            raise InputError(
                f"{self.tool} with force=true is refused: the contract does not allow forcing",
                hint="push without force, or have the operator register a contract with "
                "allows_force=True",
            )
        return checked


def _output_problem(contract: ActionContract, output: object) -> str | None:
    """Why ``output`` does not match ``contract``'s output schema (``None``: it does, or the
    contract declares none)."""
    schema = contract.outputs
    if schema is None or isinstance(output, schema):
        return None
    try:
        schema.model_validate(output)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "output"
        return f"{contract.tool} returned output outside its contract: {where}: {err['msg']}"
    return None


def _json(args: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(dict(args))
    except TypeError as exc:
        raise InputError(f"arguments are not plain JSON values: {exc}") from None


def _model(model_name: str, /, **fields: Any) -> type[BaseModel]:
    from pydantic import create_model

    config = ConfigDict(extra="forbid", frozen=True, strict=True)
    made: type[BaseModel] = create_model(model_name, __config__=config, **fields)
    return made


class ToolRegistry:
    """Contracts by tool name. Registering a contract below its tool's floor is refused."""

    def __init__(self, contracts: Iterable[ActionContract] = ()) -> None:
        self._contracts: dict[str, ActionContract] = {}
        for contract in contracts:
            self.register(contract)

    def register(self, contract: ActionContract) -> None:
        if type(contract) is not ActionContract:
            raise ContractError(f"expected an ActionContract, got {type(contract).__name__}")
        known = LADDER.get(contract.tool)
        if known is not None and FLOORS[contract.category] < FLOORS[known]:
            raise ContractError(
                f"contract for {contract.tool} declares category {contract.category.value} "
                f"(floor {FLOORS[contract.category].name}), but the ladder names "
                f"{contract.tool} {known.value} (floor {FLOORS[known].name})",
                hint="a contract can make a known tool stricter, never put it in a lower category",
            )
        if contract.required_level < contract.floor:
            raise ContractError(
                f"contract for {contract.tool} declares {contract.required_level.name}, below "
                f"the {contract.category.value} floor {contract.floor.name}",
                hint="a contract can raise a tool's level, never lower it",
            )
        if contract.category == Category.FETCH and not contract.destinations:
            raise ContractError(
                f"contract for {contract.tool} is a fetch but declares no destination argument",
                hint="name the argument holding the URL: destinations=('url',)",
            )
        unknown = set(contract.destinations) - set(contract.inputs.model_fields)
        if unknown:
            raise ContractError(
                f"contract for {contract.tool} names destination argument(s) "
                f"{', '.join(sorted(unknown))} its inputs do not have"
            )
        if contract.tool in self._contracts:
            raise ContractError(f"a contract for {contract.tool} is already registered")
        self._contracts[contract.tool] = contract

    def lookup(self, tool: str) -> ActionContract | None:
        return self._contracts.get(tool)

    def tools(self) -> list[str]:
        return sorted(self._contracts)

    @classmethod
    def builtin(cls, *extra: ActionContract) -> ToolRegistry:
        """The shipped contracts (each with its preconditions), extended by ``extra``: a host's
        own tools added to the built-in ones, not replacing them (a registry built from a list
        holds exactly that list). An extra contract for a shipped tool is refused."""
        return cls((*BUILTIN, *extra))


_PATH = (str, Field(min_length=1, max_length=4096))

#: The shipped contracts, a row each: tool, category, level, blast radius, reversibility, data
#: sensitivity, and the precondition revalidated at execution (``kind:argument``, or ``-``).
_SHIPPED = """
read_file     read        L0 self     reversible   internal -
suggest       suggest     L1 session  reversible   internal -
write_file    local_write L3 project  reversible   internal file_unchanged:path,file_target:path
git_commit    local_write L3 project  compensable  internal git_head_unchanged:repo
git_push      push        L4 external irreversible internal git_push_target:repo
http_post     network     L4 external irreversible public   -
deploy        deploy      L4 external compensable  internal -
read_secret   credentials L4 external irreversible secret   -
drop_database local_write L5 project  irreversible internal -
"""

#: The fields of each shipped tool's inputs; the model is named after the tool
#: (``git_push`` takes ``GitPushInputs``).
_SHIPPED_INPUTS: dict[str, dict[str, Any]] = {
    "read_file": {"path": _PATH},
    "suggest": {"text": (str, Field(max_length=65536))},
    "write_file": {"path": _PATH, "content": (str, Field(max_length=1 << 20))},
    "git_commit": {"repo": _PATH, "message": (str, Field(max_length=4096))},
    "git_push": {
        "repo": _PATH,
        "remote": (str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")),
        "branch": (str, Field(pattern=r"^[A-Za-z0-9_./-]{1,128}$")),
        "force": (bool, False),
    },
    "http_post": {"url": (str, Field(max_length=2048)), "body": (str, ...)},
    "deploy": {"service": (str, Field(max_length=128)), "ref": (str, ...)},
    "read_secret": {"name": (str, Field(max_length=256))},
    "drop_database": {"name": (str, Field(max_length=256))},
}


def _shipped(row: str) -> ActionContract:
    tool, category, level, blast_radius, reversibility, sensitivity, precondition = row.split()
    pairs = [p.partition(":") for p in precondition.split(",") if p != "-"]
    inputs = "".join(word.title() for word in tool.split("_")) + "Inputs"
    return ActionContract(
        tool=tool,
        category=Category(category),
        required_level=Level.parse(level),
        blast_radius=BlastRadius(blast_radius),
        reversibility=Reversibility(reversibility),
        data_sensitivity=Sensitivity(sensitivity),
        preconditions=tuple(Precondition(kind=PreconditionKind(k), arg=a) for k, _, a in pairs),
        inputs=_model(inputs, **_SHIPPED_INPUTS[tool]),
    )


BUILTIN: tuple[ActionContract, ...] = tuple(_shipped(row) for row in _SHIPPED.strip().splitlines())

__all__ = [
    "BUILTIN",
    "FLOORS",
    "LADDER",
    "ActionContract",
    "BlastRadius",
    "Category",
    "Level",
    "Precondition",
    "PreconditionKind",
    "Reversibility",
    "ToolRegistry",
]
