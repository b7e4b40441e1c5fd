"""The action policy: a YAML document of ordered first-match rules giving allow, hold or deny.

Kept apart from :class:`~firewall.gate.policy.ContextPolicy` (which decides what reaches the model):
an :class:`ActionPolicy` decides what an agent may *do*. It is parsed as strictly as a
ContextPolicy (safe loader, duplicate keys, aliases and oversized documents refused, every
problem named by line), and a JSON Schema for editors is published as
``policies/action-policy.schema.json``.

Rules a policy must obey, checked when it is loaded (fail closed):

* ``auto_approve_ceiling`` is at most ``L3``: nothing above L3 is ever allowed without a human;
* ``untrusted_citations`` and ``tainted_inputs`` are ``hold`` or ``deny``, never ``allow``;
* ``tainted_from`` is at most ``L3`` (the data-flow rule can only be made stricter).

``provenance`` chooses the data-flow rule: ``per_value`` (the default) holds an L3 call only
when a value of its arguments was supplied by untrusted text alone
(:mod:`firewall.kernel.provenance`); ``session`` is the strict option, holding every L3 call of a
session that read anything untrusted. ``egress`` allowlists the destinations (URL hosts, e-mail
domains, payees, channels) an L1-L3 call may reach without a human: ``allow`` lists them (a
domain covers its subdomains) and ``user_named: true`` adds every destination the user named in
the session. Egress never lowers L4.

Whatever the rules say, the kernel then applies the ladder (see :mod:`firewall.kernel.decide`):
L4 is always held, L5 always denied, unmatched always denied.

>>> policy = ActionPolicy.preset("default")
>>> policy.auto_approve_ceiling.name, policy.rules[0].name
('L3', 'reads-and-suggestions')
"""

from __future__ import annotations

import hashlib
import os
from enum import StrEnum
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictStr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from gnomon.firewall.gate.policy import MAX_POLICY_BYTES, _decode, _load_yaml, _where
from gnomon.firewall.kernel.contracts import BlastRadius, Level
from gnomon.firewall.model.durations import Duration
from gnomon.firewall.model.errors import PolicyError

SCHEMA_ID = "urn:gnomon:action-policy:v1"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Domain tag of an action policy's digest (and of the bytes its signature covers).
ACTION_POLICY_DOMAIN = b"gnomon.action-policy.v1\x00"
PRESET_FOLDER = "actions"


class Outcome(StrEnum):
    """The three-valued verdict, ordered by strictness: allow < hold < deny."""

    ALLOW = "allow"
    HOLD = "hold"
    DENY = "deny"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def at_least(self, other: Outcome) -> Outcome:
        """The stricter of the two: rules and gates can only ever tighten a verdict."""
        return self if self.rank >= other.rank else other


_RANK = {Outcome.ALLOW: 0, Outcome.HOLD: 1, Outcome.DENY: 2}

LevelField = Annotated[
    Level,
    BeforeValidator(Level.parse),
    PlainSerializer(lambda level: level.name, return_type=str),
    WithJsonSchema({"type": "string", "enum": [level.name for level in Level]}),
]
ToolName = Annotated[StrictStr, Field(pattern=r"^(\*|[a-z][a-z0-9_.-]{0,63})$")]
KeyId = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{16}$")]
#: an approver key id (16 hex digits, as ``gnomon keys`` prints it) or ``role:NAME``
Approver = Annotated[StrictStr, Field(pattern=r"^([0-9a-f]{16}|role:[a-z0-9][a-z0-9_.-]{0,63})$")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rule(_Model):
    """One rule: it matches an action when every condition it states holds."""

    name: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    tools: tuple[ToolName, ...] = Field(
        default=("*",), description="tool names this rule matches; '*' matches any tool"
    )
    levels: tuple[LevelField, ...] | None = Field(
        default=None, description="levels this rule matches (omit: any level)"
    )
    blast_radius: tuple[BlastRadius, ...] | None = Field(
        default=None, description="blast radii this rule matches (omit: any)"
    )
    verdict: Outcome
    approvers: tuple[Approver, ...] | None = Field(
        default=None,
        description="who may approve what this rule holds: approver key ids, or role:NAME "
        "(a role of the policy's roles); omit: any pinned approver key",
    )

    def matches(self, tool: str, level: Level, radius: BlastRadius) -> bool:
        return (
            ("*" in self.tools or tool in self.tools)
            and (self.levels is None or level in self.levels)
            and (self.blast_radius is None or radius in self.blast_radius)
        )


class Egress(_Model):
    """Where an L1-L3 call may reach without a human (see the module docstring)."""

    allow: tuple[StrictStr, ...] = Field(
        default=(), description="destinations (hosts, domains, payees, channels) allowed"
    )
    user_named: bool = Field(
        default=False, description="also allow every destination the user named in the session"
    )


class ActionPolicy(_Model):
    """A Gnomon action policy: ordered first-match rules, under the ladder's hard limits."""

    name: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    description: StrictStr = ""
    auto_approve_ceiling: LevelField = Field(
        default=Level.L3, description="highest level a rule may allow without a human (<= L3)"
    )
    untrusted_citations: Outcome = Field(
        default=Outcome.HOLD,
        description="verdict (hold or deny) when a cited belief is not accepted by the "
        "citation policy",
    )
    citation_policy: StrictStr = Field(
        default="planner", description="ContextPolicy preset the cited beliefs must pass"
    )
    tainted_inputs: Outcome = Field(
        default=Outcome.HOLD,
        description="verdict (hold or deny) for an action at or above tainted_from whose "
        "session read untrusted content",
    )
    tainted_from: LevelField = Field(
        default=Level.L3, description="lowest level the data-flow rule applies to (<= L3)"
    )
    provenance: Literal["per_value", "session"] = Field(
        default="per_value",
        description="data-flow rule: per_value holds a call carrying a value only untrusted "
        "text supplied; session (strict) holds every call of a session that read untrusted text",
    )
    egress: Egress = Field(
        default_factory=Egress, description="destinations L1-L3 calls may reach without a human"
    )
    approval_deadline: Duration = Field(
        default=Duration.parse("PT15M"),
        description="how long a hold waits for a human",
        json_schema_extra={"default": "PT15M"},  # as written in YAML, not the parsed fields
    )
    unknown_tool_floor: LevelField = Field(
        default=Level.L3,
        description="lowest level of a tool the shipped ladder does not know (default L3: "
        "local-write or higher unless tool_levels names it); a lower floor is accepted only "
        "from a signed policy",
    )
    tool_levels: dict[ToolName, LevelField] = Field(
        default_factory=dict,
        description="levels the operator signs for tools the ladder does not know (below "
        "unknown_tool_floor; a signed policy only); a known tool keeps its ladder floor",
    )
    roles: dict[
        Annotated[StrictStr, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")], tuple[KeyId, ...]
    ] = Field(default_factory=dict, description="approver roles: a name and the key ids it holds")
    rules: tuple[Rule, ...] = Field(description="ordered; the first that matches decides")

    @model_validator(mode="after")
    def _ladder(self) -> ActionPolicy:
        problems = []
        if self.auto_approve_ceiling > Level.L3:
            problems.append("auto_approve_ceiling: at most L3 (L4 is always held for a human)")
        if self.tainted_from > Level.L3:
            problems.append("tainted_from: at most L3 (the data-flow rule can only be stricter)")
        for key in ("untrusted_citations", "tainted_inputs"):
            if getattr(self, key) == Outcome.ALLOW:
                problems.append(f"{key}: hold or deny, never allow")
        names = [rule.name for rule in self.rules]
        if len(set(names)) != len(names):
            problems.append("rules: every rule needs a distinct name")
        for rule in self.rules:
            for who in rule.approvers or ():
                if who.startswith("role:") and who[5:] not in self.roles:
                    problems.append(f"rules.{rule.name}.approvers: no role {who[5:]!r} in roles")
        if "*" in self.tool_levels:
            problems.append("tool_levels: name each tool; '*' is not a tool")
        if problems:
            raise PydanticCustomError("ladder", "{p}", {"p": "; ".join(problems)})
        return self

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_yaml_text(cls, text: str, source: str = "<string>") -> ActionPolicy:
        if not isinstance(text, str):
            raise PolicyError(f"{source}: action policy text must be str")
        if len(text.encode("utf-8", "surrogatepass")) > MAX_POLICY_BYTES:
            raise PolicyError(f"{source}: action policy is larger than the limit")
        data, lines = _load_yaml(text, source)
        if not isinstance(data, dict):
            raise PolicyError(
                f"{_where(source, lines, ())}: an action policy is a mapping of keys",
                hint="start from policies/actions/default.yaml",
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                loc = tuple(err["loc"])
                path = ".".join(str(p) for p in loc) or "policy"
                problems.append(f"{_where(source, lines, loc)}: {path}: {err['msg']}")
            raise PolicyError(
                "\n".join(problems),
                hint="see policies/action-policy.schema.json, or start from "
                "policies/actions/default.yaml",
            ) from None

    @classmethod
    def from_bytes(cls, raw: bytes, source: str) -> ActionPolicy:
        return cls.from_yaml_text(_decode(raw, source), source)

    @classmethod
    def preset(cls, name: str) -> ActionPolicy:
        return cls.from_bytes(preset_bytes(name), f"policies/{PRESET_FOLDER}/{name}.yaml")

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"$schema": SCHEMA_DIALECT, "$id": SCHEMA_ID, **cls.model_json_schema()}

    def lowered_unknown_tools(self) -> list[str]:
        """What this policy lowers below the L3 default for tools the ladder does not know
        (accepted only when the policy is signed)."""
        out = []
        if self.unknown_tool_floor < Level.L3:
            out.append(f"unknown_tool_floor: {self.unknown_tool_floor.name}")
        out.extend(
            f"tool_levels.{t}: {v.name}" for t, v in self.tool_levels.items() if v < Level.L3
        )
        return out

    @cached_property
    def rule_index(self) -> tuple[dict[str, tuple[Rule, ...]], tuple[Rule, ...]]:
        """For first-match without a scan of every rule: each tool a rule names -> the rules
        that can match it (naming it, or ``*``), in policy order; and the ``*`` rules alone,
        for any other tool. Built once per policy (the policy is frozen)."""
        anywhere = tuple(r for r in self.rules if "*" in r.tools)
        named = {t for r in self.rules for t in r.tools if t != "*"}
        by_tool = {t: tuple(r for r in self.rules if "*" in r.tools or t in r.tools) for t in named}
        return by_tool, anywhere

    def first_match(self, tool: str, level: Level, radius: BlastRadius) -> Rule | None:
        """The first rule, in policy order, that matches the action (``None``: no rule does).

        >>> p = ActionPolicy.from_yaml_text(
        ...     "{name: p, rules: [{name: a, tools: [x], verdict: deny}, {name: b, verdict: hold},"
        ...     " {name: c, tools: [y], verdict: allow}]}"
        ... )
        >>> [p.first_match(t, Level.L1, BlastRadius.SELF).name for t in ("x", "y", "z")]
        ['a', 'b', 'b']
        """
        by_tool, anywhere = self.rule_index
        for rule in by_tool.get(tool, anywhere):
            if rule.matches(tool, level, radius):
                return rule
        return None

    def approver_keys(self, rule: str | None) -> frozenset[str]:
        """The key ids that may approve what ``rule`` holds (empty: any pinned key)."""
        found = next((r for r in self.rules if r.name == rule), None)
        if found is None or found.approvers is None:
            return frozenset()
        keys: set[str] = set()
        for who in found.approvers:
            keys.update(self.roles.get(who[5:], ()) if who.startswith("role:") else (who,))
        return frozenset(keys) or frozenset({"(none)"})

    # -- identity --------------------------------------------------------------------------

    def plain(self) -> dict[str, Any]:
        """The policy as plain JSON data (what :meth:`canonical_bytes` encodes)."""
        doc = self.model_dump(mode="json")
        doc["approval_deadline"] = str(self.approval_deadline)
        return doc

    def canonical_bytes(self) -> bytes:
        """What the digest and a signature cover: domain tag, then canonical JSON."""
        doc = self.plain()
        return ACTION_POLICY_DOMAIN + orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.canonical_bytes()).hexdigest()


def preset_bytes(name: str) -> bytes:
    if not isinstance(name, str) or not name.replace("-", "").isalnum():
        raise PolicyError(f"unknown action policy preset {name!r}")
    entry = resources.files("gnomon.policies").joinpath(PRESET_FOLDER, f"{name}.yaml")
    try:
        return entry.read_bytes()
    except OSError as exc:
        raise PolicyError(
            f"unknown action policy preset {name!r}", hint="the shipped preset is 'default'"
        ) from exc


def read_policy_file(path: str | os.PathLike[str]) -> bytes:
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_POLICY_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise PolicyError(f"{path}: cannot read action policy: {exc}") from exc
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(f"{path}: action policy is larger than the limit")
    return raw


__all__ = [
    "ACTION_POLICY_DOMAIN",
    "SCHEMA_ID",
    "ActionPolicy",
    "Egress",
    "Outcome",
    "Rule",
    "preset_bytes",
    "read_policy_file",
]
