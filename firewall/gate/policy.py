"""ContextPolicy: what may reach the model, decided at retrieval, every time.

A policy is a small YAML document (presets live in the ``policies`` package; a JSON Schema for
editors is published as ``policies/context-policy.schema.json``). It names, for each status axis
of a belief, the states it *admits* as trusted context, a sensitivity ceiling, a freshness rule
and whether expiry is enforced. Everything else a recall sees is *rejected*, and every rejection
carries its reasons (:class:`Reason`), one per failing check, in a fixed order.

>>> from datetime import UTC, datetime
>>> policy = ContextPolicy.preset("default")
>>> [state.value for state in policy.truth], str(policy.freshness.max_age)
(['supported'], 'P30D')
>>> where = policy.accept_filter(now=datetime(2026, 3, 31, tzinfo=UTC), limit=5)
>>> where.anchor_after.isoformat()
'2026-03-01T00:00:00+00:00'

Rules a policy must obey, checked when it is loaded (fail closed, and say why):

* an empty list on an axis is legal and admits **nothing** on that axis;
* only a ``privileged`` policy (the audit path, which the firewall serves only to an actor with an
  auditor grant) may admit ``hidden``, ``privileged_only`` or ``blocked`` retrieval states or
  ``quarantined`` or ``malicious`` security states, and a privileged policy must admit every
  state on every axis, with a ``secret`` ceiling, no age limit and expiry not enforced;
* when quoting is enabled, the quote lists must be disjoint from the trusted lists on at least
  one axis, so that "quotable" is "in the quote lists" and compiles to one store filter.

Evaluation (:meth:`ContextPolicy.rejection_reasons`, :meth:`~ContextPolicy.admits`,
:meth:`~ContextPolicy.quotable`) is a pure function of ``(belief, now)``, and the compiled
:class:`~firewall.model.filters.BeliefFilter` selects exactly the same beliefs, so a store can push
the policy into an indexed query.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from gnomon.firewall.model.chain import Belief, aware
from gnomon.firewall.model.durations import Duration
from gnomon.firewall.model.errors import PolicyError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    ClaimKind,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)

SCHEMA_ID = "urn:gnomon:context-policy:v1"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
DIGEST_DOMAIN = b"gnomon.policy.v1\x00"
PRESET_PACKAGE = "gnomon.policies"
MAX_POLICY_BYTES = 256 * 1024

# States only the privileged (audit) path may show: the firewall hides them from every ordinary
# recall, and a non-privileged policy that names them is refused rather than silently obeyed.
PRIVILEGED_RETRIEVAL: frozenset[RetrievalStatus] = frozenset(
    {RetrievalStatus.HIDDEN, RetrievalStatus.PRIVILEGED_ONLY, RetrievalStatus.BLOCKED}
)
PRIVILEGED_SECURITY: frozenset[SecurityStatus] = frozenset(
    {SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS}
)

E = TypeVar("E", bound=StrEnum)


# -- reasons ---------------------------------------------------------------------------------


class ReasonCode(StrEnum):
    """Why a belief was not admitted; one code per check, reported in this order."""

    TRUTH = "truth"
    RETRIEVAL = "retrieval"
    SECURITY = "security"
    SENSITIVITY = "sensitivity"
    FRESHNESS = "freshness"
    EXPIRY = "expiry"


class Reason(BaseModel):
    """One failed check: a machine-readable code and a sentence a person can act on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: ReasonCode
    detail: str

    def __str__(self) -> str:
        return f"{self.code.value}: {self.detail}"


# -- field types -----------------------------------------------------------------------------


def _state_list(value: Any) -> Any:
    """Refuse a bare string and repeated entries before pydantic turns the list into a set."""
    if isinstance(value, str):
        raise PydanticCustomError(
            "state_list",
            "expected a list such as [{value}], got the single string {value_repr}",
            # the message is rendered as UTF-8: a lone surrogate is shown escaped, not raised
            {
                "value": value.encode("utf-8", "backslashreplace").decode(),
                "value_repr": repr(value),
            },
        )
    if isinstance(value, list | tuple):
        seen: set[str] = set()
        for item in value:
            if isinstance(item, str):
                if item in seen:
                    raise PydanticCustomError(
                        "duplicate_state", "{item} is listed more than once", {"item": repr(item)}
                    )
                seen.add(item)
    return value


def _in_declared_order(states: frozenset[StrEnum]) -> list[str]:
    """The states' values in the order their enum declares them (the schema's order)."""
    for state in states:  # the states of a set are all of one enum
        return [member.value for member in type(state) if member in states]
    return []


#: A set of states on one axis: a list in a policy document (never a bare string, no entry
#: twice), written back in the enum's declared order.
StateSet = Annotated[
    frozenset[E],
    BeforeValidator(_state_list),
    PlainSerializer(_in_declared_order, return_type=list[str]),
]
TruthSet = StateSet[TruthStatus]
RetrievalSet = StateSet[RetrievalStatus]
SecuritySet = StateSet[SecurityStatus]
FreshnessSet = StateSet[FreshnessStatus]
PolicyName = Annotated[
    StrictStr,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$",
        description="Short identifier: lower-case letters, digits, '-', '_', '.'",
    ),
]


# -- the model -------------------------------------------------------------------------------


class _PolicyModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FreshnessRule(_PolicyModel):
    """Which freshness states are admitted, and how old a belief may be."""

    max_age: Duration | None = Field(
        default=None,
        description="Oldest admitted age, as an ISO 8601 duration; the age is measured from "
        "last_verified_at, or observed_at if never verified. Omit for no age limit.",
    )
    allow: FreshnessSet = Field(description="freshness_status values admitted; [] admits none")


class QuoteRule(_PolicyModel):
    """Beliefs admitted only as labelled quoted data, never as trusted facts."""

    enabled: StrictBool = False
    truth: TruthSet = frozenset({TruthStatus.UNVERIFIED})
    retrieval: RetrievalSet = frozenset({RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL})
    security: SecuritySet = frozenset({SecurityStatus.CLEAN})
    max_items: Annotated[StrictInt, Field(ge=1, le=1000)] = 5


class ExtractedRule(_PolicyModel):
    """Facts a memory store's extractor rewrote from user-attested input only, admitted into
    trusted context (marked ``extracted``) although their truth is ``unverified``.

    A belief qualifies only when its kind is ``extracted`` (the host's extraction path
    decides it, from the labels of everything the extractor could read) and its origin has a
    user lineage (:attr:`Origin.user_lineage`: a user, and no external or imported text). Its
    truth stays ``unverified``: parallax holds, a model's rewrite is not proof; this rule only
    makes the line visible and lets the policy decide it. Off unless a policy enables it.
    """

    enabled: StrictBool = False
    retrieval: RetrievalSet = frozenset({RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL})
    security: SecuritySet = frozenset({SecurityStatus.CLEAN})


class DecisionRule(_PolicyModel):
    """What a decision recorded under this policy must satisfy."""

    require_citations: StrictBool = True
    allow_unverified_dependencies: StrictBool = False


class ContextPolicy(_PolicyModel):
    """A Gnomon ContextPolicy: which beliefs may reach the model as trusted context."""

    name: PolicyName
    description: StrictStr = ""
    truth: TruthSet = Field(description="truth_status values admitted; [] admits none")
    retrieval: RetrievalSet = Field(description="retrieval_status values admitted; [] admits none")
    security: SecuritySet = Field(description="security_status values admitted; [] admits none")
    freshness: FreshnessRule
    sensitivity_ceiling: Sensitivity = Field(
        description="Most sensitive level admitted (public < internal < confidential < secret)"
    )
    enforce_expiry: StrictBool = Field(description="Exclude beliefs whose expires_at <= now")
    quote: QuoteRule = QuoteRule()
    extracted: ExtractedRule = ExtractedRule()
    surface_contradictions: StrictBool = True
    surface_uncertainties: StrictBool = True
    decisions: DecisionRule = DecisionRule()
    privileged: StrictBool = Field(
        default=False,
        description="The audit path: admits everything and is served only with an auditor grant",
    )

    @model_validator(mode="after")
    def _check_rules(self) -> ContextPolicy:
        problems = _rule_violations(self)
        if problems:
            raise PydanticCustomError(
                "policy_rule", "{problems}", {"problems": "\n".join(problems)}
            )
        return self

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def preset(cls, name: str) -> ContextPolicy:
        """A preset shipped in the ``policies`` package (works from a wheel and a checkout)."""
        return _load_preset(name)

    @classmethod
    def presets(cls) -> list[str]:
        """Names of the shipped presets."""
        return available_presets()

    @classmethod
    def from_yaml(cls, path: str | Path) -> ContextPolicy:
        """Load a policy file; every failure is a :class:`PolicyError` naming the file."""
        if not isinstance(path, str | Path):
            raise PolicyError(
                f"a policy path must be a str or Path, got {_kind(path)}",
                hint="pass the path of a .yaml policy file",
            )
        location = Path(path)
        try:
            # Read one byte past the limit, never the whole file: a policy "file" may be
            # /dev/zero or a pipe that never ends.
            with location.open("rb") as handle:
                raw = handle.read(MAX_POLICY_BYTES + 1)
        except FileNotFoundError as exc:
            raise PolicyError(
                f"{location}: no such policy file",
                hint=f"check the path, or use a preset: {', '.join(available_presets())}",
            ) from exc
        except OSError as exc:
            raise PolicyError(
                f"{location}: cannot read policy file: {exc.strerror or exc}",
                hint="check the file's permissions",
            ) from exc
        except ValueError as exc:  # a NUL byte or a lone surrogate in the path
            raise PolicyError(
                f"{location!r}: not a usable file path: {exc}", hint="check the path"
            ) from exc
        return cls.from_yaml_text(_decode(raw, str(location)), source=str(location))

    @classmethod
    def from_yaml_text(cls, text: str, source: str = "<string>") -> ContextPolicy:
        """Parse policy YAML (safe loader only; duplicate keys refused)."""
        if not isinstance(text, str):
            raise PolicyError(
                f"{source}: policy text must be str, got {_kind(text)}",
                hint="decode bytes as UTF-8 first, or use ContextPolicy.from_yaml(path)",
            )
        if len(text.encode("utf-8", "surrogatepass")) > MAX_POLICY_BYTES:
            raise PolicyError(
                f"{source}: policy is larger than {MAX_POLICY_BYTES // 1024} KiB",
                hint="a ContextPolicy is a few dozen lines; check that this is the right file",
            )
        data, lines = _load_yaml(text, source)
        return cls._validated(data, source, lines)

    @classmethod
    def from_mapping(cls, data: Any, source: str = "<mapping>") -> ContextPolicy:
        """Validate already-parsed data (a dict), converting every failure to PolicyError."""
        return cls._validated(data, source, None)

    @classmethod
    def _validated(cls, data: Any, source: str, lines: _Lines | None) -> ContextPolicy:
        top = _where(source, lines, ())
        if data is None:
            raise PolicyError(
                f"{top}: policy is empty",
                hint="start from a preset, e.g. `policies/default.yaml`",
            )
        if not isinstance(data, Mapping):
            raise PolicyError(
                f"{top}: the top level must be a mapping of policy keys, got {_kind(data)}",
                hint="write `name: ...`, `truth: [...]` and so on at the top level",
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise _validation_error(exc, source, lines) from exc
        except (RecursionError, MemoryError) as exc:
            raise PolicyError(
                f"{top}: policy data is too large or too deeply nested to validate",
                hint="a ContextPolicy is a flat mapping a few levels deep",
            ) from exc

    def to_yaml(self) -> str:
        """The policy as YAML; ``from_yaml_text(p.to_yaml()) == p``."""
        dumped: str = yaml.dump(
            self.model_dump(mode="json", exclude_none=True),
            Dumper=_PolicyDumper,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
        return dumped

    def replace(self, **changes: Any) -> ContextPolicy:
        """A validated copy with top-level keys replaced (nested models may be given as dicts).

        Use this instead of ``model_copy(update=...)``, which skips validation.
        """
        data = self.model_dump(mode="json")
        for key, value in changes.items():
            data[key] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return ContextPolicy.from_mapping(data, source=f"policy {self.name!r} (replace)")

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of the policy document, for editors and CI."""
        schema = cls.model_json_schema()
        return {"$schema": SCHEMA_DIALECT, "$id": SCHEMA_ID, **schema}

    @property
    def digest(self) -> str:
        """SHA-256 hex over the domain-separated canonical JSON of the policy."""
        canonical = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(DIGEST_DOMAIN + canonical).hexdigest()

    # -- evaluation ------------------------------------------------------------------------

    def rejection_reasons(self, belief: Belief, now: datetime) -> list[Reason]:
        """Every reason this policy does not admit ``belief`` as trusted context at ``now``.

        Checks truth, retrieval, security, sensitivity, freshness and expiry, in that order, and
        reports each one that fails. An empty list means the belief is accepted.
        """
        now = aware(now)
        return self._rejections(belief, now, self.anchor_after(now))

    def rejections(self, beliefs: Iterable[Belief], now: datetime) -> list[list[Reason]]:
        """:meth:`rejection_reasons` of each belief, the age cutoff computed once for all."""
        now = aware(now)
        cutoff = self.anchor_after(now)
        return [self._rejections(b, now, cutoff) for b in beliefs]

    def _rejections(self, belief: Belief, now: datetime, cutoff: datetime | None) -> list[Reason]:
        return [
            *self._status_reasons(belief, self.truth, self.retrieval, self.security, "admits"),
            *self._common_reasons(belief, now, cutoff),
        ]

    def admits(self, belief: Belief, now: datetime) -> bool:
        return not self.rejection_reasons(belief, now)

    def quotable(self, belief: Belief, now: datetime) -> bool:
        """True if ``belief`` may be shown as labelled quoted data (and is not admitted)."""
        if not self.quote.enabled or self.admits(belief, now):
            return False
        q = self.quote
        in_quote_sets = not self._status_reasons(belief, q.truth, q.retrieval, q.security, "quotes")
        now = aware(now)
        return in_quote_sets and not self._common_reasons(belief, now, self.anchor_after(now))

    def admits_extracted(self, belief: Belief, now: datetime) -> bool:
        """True if ``belief`` is admitted as an *extracted* fact (:class:`ExtractedRule`) and
        not by the trusted lists themselves: kind ``extracted``, a user lineage, truth
        ``unverified``, in the rule's retrieval and security lists, and within the policy's
        sensitivity, freshness and expiry limits."""
        rule = self.extracted
        if not rule.enabled or belief.kind != ClaimKind.EXTRACTED or self.admits(belief, now):
            return False
        if not belief.origin.user_lineage:
            return False
        statuses = self._status_reasons(
            belief, frozenset({TruthStatus.UNVERIFIED}), rule.retrieval, rule.security, "extracted"
        )
        now = aware(now)
        return not statuses and not self._common_reasons(belief, now, self.anchor_after(now))

    def anchor_after(self, now: datetime) -> datetime | None:
        """The oldest admitted age anchor at ``now`` (``None``: no age limit).

        A ``max_age`` reaching before year 1 cannot exclude anything, so it is no limit.
        """
        if self.freshness.max_age is None:
            return None
        try:
            return self.freshness.max_age.before(aware(now))
        except OverflowError:
            return None

    def accept_filter(
        self,
        *,
        text: str | None = None,
        project: str | None = None,
        user: str | None = None,
        now: datetime,
        limit: int = 10,
    ) -> BeliefFilter:
        """The store filter selecting exactly the beliefs :meth:`admits` accepts.

        A list naming every state of an axis compiles to ``None`` (no condition), as does a
        ``secret`` ceiling: both are equivalent and let the store skip the condition.
        """
        return self._compile(
            self.truth, self.retrieval, self.security, text, project, user, now, limit
        )

    def quote_filter(
        self,
        *,
        text: str | None = None,
        project: str | None = None,
        user: str | None = None,
        now: datetime,
        limit: int = 10,
    ) -> BeliefFilter | None:
        """The store filter selecting exactly the :meth:`quotable` beliefs; None if disabled.

        ``limit`` is capped at ``quote.max_items``.
        """
        if not self.quote.enabled:
            return None
        q = self.quote
        return self._compile(
            q.truth, q.retrieval, q.security, text, project, user, now, min(limit, q.max_items)
        )

    # -- internals -------------------------------------------------------------------------

    def _compile(
        self,
        truth: frozenset[TruthStatus],
        retrieval: frozenset[RetrievalStatus],
        security: frozenset[SecurityStatus],
        text: str | None,
        project: str | None,
        user: str | None,
        now: datetime,
        limit: int,
    ) -> BeliefFilter:
        now = aware(now)
        ceiling = self.sensitivity_ceiling
        return BeliefFilter(
            text=text,
            truth=_condition(truth, TruthStatus),
            retrieval=_condition(retrieval, RetrievalStatus),
            security=_condition(security, SecurityStatus),
            freshness=_condition(self.freshness.allow, FreshnessStatus),
            max_sensitivity=None if ceiling == Sensitivity.SECRET else ceiling,
            anchor_after=self.anchor_after(now),
            not_expired_at=now if self.enforce_expiry else None,
            project=project,
            user=user,
            limit=limit,
        )

    def _status_reasons(
        self,
        belief: Belief,
        truth: frozenset[TruthStatus],
        retrieval: frozenset[RetrievalStatus],
        security: frozenset[SecurityStatus],
        verb: str,
    ) -> list[Reason]:
        reasons = []
        checks: tuple[tuple[ReasonCode, StrEnum, frozenset[Any], type[StrEnum]], ...] = (
            (ReasonCode.TRUTH, belief.truth_status, truth, TruthStatus),
            (ReasonCode.RETRIEVAL, belief.retrieval_status, retrieval, RetrievalStatus),
            (ReasonCode.SECURITY, belief.security_status, security, SecurityStatus),
        )
        for code, state, allowed, enum in checks:
            if state not in allowed:
                reasons.append(
                    Reason(
                        code=code,
                        detail=f"{code.value} is {state.value}; policy {self.name!r} "
                        f"{verb} {_listing(allowed, enum)}",
                    )
                )
        return reasons

    def _common_reasons(
        self, belief: Belief, now: datetime, cutoff: datetime | None
    ) -> list[Reason]:
        reasons = []
        ceiling = self.sensitivity_ceiling
        if belief.sensitivity.rank > ceiling.rank:
            reasons.append(
                Reason(
                    code=ReasonCode.SENSITIVITY,
                    detail=f"sensitivity is {belief.sensitivity.value}; policy {self.name!r} "
                    f"admits up to {ceiling.value}",
                )
            )
        stale: list[str] = []
        if belief.freshness_status not in self.freshness.allow:
            stale.append(
                f"freshness is {belief.freshness_status.value}; policy {self.name!r} admits "
                f"{_listing(self.freshness.allow, FreshnessStatus)}"
            )
        if cutoff is not None:
            field, anchor = (
                ("last_verified_at", belief.last_verified_at)
                if belief.last_verified_at is not None
                else ("observed_at", belief.observed_at)
            )
            if anchor < cutoff:
                stale.append(
                    f"{field} {anchor.isoformat()} is older than max_age "
                    f"{self.freshness.max_age} (cutoff {cutoff.isoformat()})"
                )
        if stale:
            reasons.append(Reason(code=ReasonCode.FRESHNESS, detail="; ".join(stale)))
        if self.enforce_expiry and belief.expires_at is not None and belief.expires_at <= now:
            reasons.append(
                Reason(
                    code=ReasonCode.EXPIRY,
                    detail=f"expired at {belief.expires_at.isoformat()}; policy {self.name!r} "
                    "enforces expiry",
                )
            )
        return reasons


def resolve(policy: ContextPolicy | str | Path) -> ContextPolicy:
    """A validated policy: an object re-validated (:func:`revalidate`); a ``.yaml``/``.yml`` path
    that exists; otherwise a preset name."""
    if isinstance(policy, ContextPolicy):
        return revalidate(policy)
    if isinstance(policy, Path):
        return ContextPolicy.from_yaml(policy)
    if not isinstance(policy, str):
        raise PolicyError(
            f"expected a ContextPolicy, a preset name or a .yaml path, got {_kind(policy)}",
            hint=f"presets: {', '.join(available_presets())}",
        )
    if policy.endswith((".yaml", ".yml")):
        if Path(policy).exists():
            return ContextPolicy.from_yaml(policy)
        raise PolicyError(
            f"{policy}: no such policy file",
            hint=f"check the path, or use a preset: {', '.join(available_presets())}",
        )
    return ContextPolicy.preset(policy)


def resolve_with_digest(policy: ContextPolicy | str | Path) -> tuple[ContextPolicy, str]:
    """:func:`resolve` and the resolved policy's :attr:`ContextPolicy.digest`, validated once:
    a preset name costs one check of the cached object, an object its re-validation (cached)."""
    if isinstance(policy, str) and not policy.endswith((".yaml", ".yml")):
        chosen, _, digest = _validated(_preset_bytes(policy))
        return chosen, digest
    return revalidate_with_digest(resolve(policy))


# -- re-validation ---------------------------------------------------------------------------

#: Validated policies by the canonical bytes of the fields they were built from, each with the
#: canonical bytes of its own fields when cached (to notice an ``object.__setattr__`` edit) and
#: its digest (computed once: a recall logs it, and it costs more than the recall's filters).
_VALIDATED: dict[bytes, tuple[ContextPolicy, bytes, str]] = {}
_VALIDATED_MAX = 256
_MAX_NESTING = 8


def revalidate(policy: object) -> ContextPolicy:
    """``policy`` rebuilt as a plain, validated :class:`ContextPolicy`, or :class:`PolicyError`.

    A caller may hand recall any object: a subclass overriding ``admits`` or ``accept_filter``,
    one made with ``model_construct`` (no validation: privileged states in an ordinary policy),
    or one edited with ``object.__setattr__``. None of that may change what is admitted, so the
    policy is rebuilt from its stored field values (read from the instance, nested rules too)
    through validation; the result is cached by those canonical bytes so a recall stays cheap.
    """
    return _validated(_canonical(policy, "policy"))[0]


def revalidate_with_digest(policy: object) -> tuple[ContextPolicy, str]:
    """:func:`revalidate`, and the rebuilt policy's :attr:`ContextPolicy.digest`, cached with it
    (the cache entry is only used after checking the cached object's fields are unedited)."""
    rebuilt, _, digest = _validated(_canonical(policy, "policy"))
    return rebuilt, digest


def _validated(key: bytes) -> tuple[ContextPolicy, bytes, str]:
    """The validated policy whose canonical field bytes are ``key`` (cached), with its own
    canonical bytes and digest."""
    hit = _VALIDATED.get(key)
    if hit is not None and _canonical(hit[0], "policy") == hit[1]:
        return hit
    try:
        data = orjson.loads(key)
    except orjson.JSONDecodeError as exc:  # pragma: no cover - _canonical writes JSON
        raise PolicyError(f"policy object cannot be read: {exc}") from exc
    name = data.get("name") if isinstance(data, dict) else None
    rebuilt = ContextPolicy.from_mapping(data, source=f"policy object {_short(name)}")
    if len(_VALIDATED) >= _VALIDATED_MAX:
        _VALIDATED.pop(next(iter(_VALIDATED)))
    entry = (rebuilt, _canonical(rebuilt, "policy"), rebuilt.digest)
    _VALIDATED[key] = entry
    return entry


def _canonical(value: object, where: str) -> bytes:
    return orjson.dumps(_plain(value, where, 0), option=orjson.OPT_SORT_KEYS)


def _plain(value: object, where: str, depth: int) -> Any:
    """``value`` as plain JSON data, reading models from their instance dict (never through
    attributes a subclass could override); anything a policy cannot hold is refused."""
    if depth > _MAX_NESTING:
        raise PolicyError(f"{where}: nested too deeply to be a policy")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if isinstance(value, StrEnum) and kind in _STATE_ENUMS:
        return str.__str__(value)
    if kind is Duration:
        return _duration_text(value, where)
    if kind in (frozenset, set):
        items = [_plain(v, where, depth + 1) for v in value]  # type: ignore[attr-defined]
        if all(type(item) is str for item in items):
            return sorted(items)  # the usual set of states: text sorts as itself
        return sorted(items, key=lambda item: orjson.dumps(item))
    if kind in (list, tuple):
        return [_plain(v, where, depth + 1) for v in value]  # type: ignore[attr-defined]
    if isinstance(value, BaseModel):
        value = object.__getattribute__(value, "__dict__")
        kind = type(value)
    if kind is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():  # type: ignore[attr-defined]
            if type(k) is not str:
                raise PolicyError(f"{where}: a policy key must be text, got {_kind(k)}")
            out[k] = _plain(v, f"{where}.{k}", depth + 1)
        return out
    raise PolicyError(
        f"{where}: a policy cannot hold {kind.__name__}",
        hint="build policies with ContextPolicy.from_yaml / preset / replace, never by hand",
    )


def _duration_text(value: object, where: str) -> str:
    try:
        text = str(value)
        _parsed_duration(text)
    except (PolicyError, ValueError, TypeError, AttributeError, ArithmeticError) as exc:
        raise PolicyError(f"{where}: not a valid duration") from exc
    return text


@functools.lru_cache(maxsize=256)
def _parsed_duration(text: str) -> Duration:
    """:meth:`Duration.parse`, cached by text (a pure function; only successes are cached)."""
    return Duration.parse(text)


_STATE_ENUMS: frozenset[type] = frozenset(
    {TruthStatus, RetrievalStatus, SecurityStatus, FreshnessStatus, Sensitivity}
)


# -- the hard floor --------------------------------------------------------------------------


def floor_reasons(belief: Belief) -> list[Reason]:
    """Why ``belief`` may never leave outside the audit path, whatever any policy says:
    privileged security states (quarantined, malicious) and retrieval states (hidden,
    privileged_only, blocked). Empty for everything else. Applied at read time by
    :func:`firewall.gate.retrieval.gather` and the adapters' read path, on top of the policy."""
    found: tuple[tuple[ReasonCode, StrEnum, frozenset[Any]], ...] = (
        (ReasonCode.RETRIEVAL, belief.retrieval_status, PRIVILEGED_RETRIEVAL),
        (ReasonCode.SECURITY, belief.security_status, PRIVILEGED_SECURITY),
    )
    return [
        Reason(
            code=code,
            detail=f"{code.value} is {state.value}: only the audit path (an auditor grant) "
            "shows it",
        )
        for code, state, privileged in found
        if state in privileged
    ]


# -- presets ---------------------------------------------------------------------------------

_PRESET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def available_presets() -> list[str]:
    """Names of the YAML presets shipped in the ``policies`` package."""
    try:
        root = resources.files(PRESET_PACKAGE)
        return sorted(
            entry.name.removesuffix(".yaml")
            for entry in root.iterdir()
            if entry.name.endswith(".yaml") and entry.is_file()
        )
    except (ModuleNotFoundError, OSError):
        return []


def _load_preset(name: str) -> ContextPolicy:
    # The cache keeps bytes, not the object: a caller that edits the object it was handed
    # (``object.__setattr__``) cannot change the preset for everyone else in the process.
    return _validated(_preset_bytes(name))[0]


@functools.lru_cache(maxsize=32)
def _preset_bytes(name: str) -> bytes:
    known = available_presets()
    if not isinstance(name, str) or not _PRESET_NAME.match(name) or name not in known:
        if not known:
            raise PolicyError(
                f"no policy presets found: the {PRESET_PACKAGE!r} package is missing or empty",
                hint="reinstall gnomon, or check that no other module named 'policies' shadows it",
            )
        raise PolicyError(
            f"unknown policy preset {name!r}; available presets: {', '.join(known)}",
            hint="or pass the path of a .yaml policy file",
        )
    source = f"{PRESET_PACKAGE}/{name}.yaml"
    entry = resources.files(PRESET_PACKAGE).joinpath(f"{name}.yaml")
    try:
        raw = entry.read_bytes()
    except OSError as exc:
        raise PolicyError(f"{source}: cannot read preset: {exc}") from exc
    policy = ContextPolicy.from_yaml_text(_decode(raw, source), source=source)
    if policy.name != name:
        raise PolicyError(f"{source}: preset file declares name {policy.name!r}, not {name!r}")
    return _canonical(policy, source)


# -- loading helpers -------------------------------------------------------------------------


MAX_YAML_DEPTH = 16
MAX_YAML_NODES = 10_000

# Where each key or list item of a parsed policy sits in its file: path -> 1-based line.
_Lines = dict[tuple[str | int, ...], int]


class _StrictSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` hardened for hostile policy files.

    * duplicate mapping keys are refused: PyYAML silently keeps the last of two equal keys, and
      in a security policy a second ``truth:`` further down must not quietly override the first;
    * anchors and aliases are refused (a policy never needs them, and aliases are how a
      few hundred bytes expand into gigabytes: the "billion laughs");
    * at most :data:`MAX_YAML_NODES` values, nested at most :data:`MAX_YAML_DEPTH` deep, checked
      while composing, before PyYAML's recursive composer can exhaust the stack;
    * the node being constructed is remembered, so that a constructor's own error (an integer
      too long to convert, a timestamp with day 31 in February) can name its line.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.nodes = 0
        self.current: yaml.Node | None = None

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases are not allowed in a policy", event.start_mark
            )
        self.nodes += 1
        if self.nodes > MAX_YAML_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"more than {MAX_YAML_NODES} values", event.start_mark
            )
        if self.depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
            )
        self.depth += 1
        try:
            node: yaml.Node | None = super().compose_node(parent, index)
            return node
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        self.current = node
        return super().construct_object(node, deep)


def _load_yaml(text: str, source: str) -> tuple[Any, _Lines]:
    """Parse policy YAML into plain data and the line of every key; any failure is a
    :class:`PolicyError` that names the line."""
    try:
        loader = _StrictSafeLoader(text)
    except yaml.YAMLError as exc:  # the reader refuses unprintable characters up front
        raise _yaml_error(exc, source, text) from exc
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: _Lines = {(): node.start_mark.line + 1}
        _collect_lines(node, (), lines)
        return loader.construct_document(node), lines
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source) from exc
    except (ValueError, TypeError, OverflowError) as exc:
        current = loader.current
        line = f" at line {current.start_mark.line + 1}" if current is not None else ""
        raise PolicyError(
            f"{source}: invalid value{line}: {_short(str(exc))}",
            hint="quote the value if it is meant as text, or fix it",
        ) from exc
    except (RecursionError, MemoryError) as exc:
        raise PolicyError(
            f"{source}: policy is too large or too deeply nested to load",
            hint="a ContextPolicy is a flat mapping a few levels deep",
        ) from exc
    finally:
        loader.dispose()


def _collect_lines(node: yaml.Node, path: tuple[str | int, ...], lines: _Lines) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                here = (*path, str(key.value))
                lines.setdefault(here, key.start_mark.line + 1)
                _collect_lines(value, here, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*path, index), item.start_mark.line + 1)
            _collect_lines(item, (*path, index), lines)


def _where(source: str, lines: _Lines | None, loc: tuple[str | int, ...]) -> str:
    """``source`` and, when the policy came from text, the line of the nearest known key."""
    if not lines:
        return source
    for end in range(len(loc), -1, -1):
        line = lines.get(loc[:end])
        if line is not None:
            return f"{source}: line {line}"
    return source


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        with contextlib.suppress(TypeError):
            seen[key] = key_node
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    return mapping


_StrictSafeLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


class _PolicyDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` writing state lists inline (``truth: [supported]``), as people do."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_PolicyDumper.add_representer(list, _represent_list)


def _decode(raw: bytes, source: str) -> str:
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(
            f"{source}: policy is larger than {MAX_POLICY_BYTES // 1024} KiB",
            hint="a ContextPolicy is a few dozen lines; check that this is the right file",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(
            f"{source}: not UTF-8 text (invalid byte at offset {exc.start})",
            hint="save the policy as UTF-8",
        ) from exc


def _yaml_error(exc: yaml.YAMLError, source: str, text: str | None = None) -> PolicyError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    if isinstance(exc, yaml.reader.ReaderError) and text is not None:
        line = text.count("\n", 0, exc.position) + 1
        where = f" at line {line}"
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        problem = f"unacceptable character {shown} (position {exc.position})"
    return PolicyError(
        f"{source}: invalid YAML{where}: {problem}",
        hint="fix the YAML syntax; a policy is a plain mapping of keys",
    )


# -- validation messages ---------------------------------------------------------------------

_SUB_MODELS: dict[str, type[BaseModel]] = {
    "": ContextPolicy,
    "freshness": FreshnessRule,
    "quote": QuoteRule,
    "extracted": ExtractedRule,
    "decisions": DecisionRule,
}
_STATE_KINDS: dict[str, tuple[str, type[StrEnum]]] = {
    "truth": ("truth status", TruthStatus),
    "retrieval": ("retrieval status", RetrievalStatus),
    "security": ("security status", SecurityStatus),
    "allow": ("freshness status", FreshnessStatus),
    "sensitivity_ceiling": ("sensitivity", Sensitivity),
}


def _validation_error(exc: ValidationError, source: str, lines: _Lines | None) -> PolicyError:
    problems = [
        f"{_where(source, lines, _loc_of(error, line))}: {line}"
        for error in exc.errors()
        for line in _describe(error).splitlines()
    ]
    return PolicyError(
        "\n".join(problems),
        hint="see policies/context-policy.schema.json, or start from `policies/default.yaml`",
    )


_RULE_KEY = re.compile(r"^([a-z_]+(?:\.[a-z_]+)*): ")


def _loc_of(error: ErrorDetails, line: str) -> tuple[str | int, ...]:
    """Where a problem is: pydantic's location, or for a whole-policy rule the key it names."""
    match = _RULE_KEY.match(line) if error["type"] == "policy_rule" else None
    return tuple(match.group(1).split(".")) if match else tuple(error["loc"])


def _describe(error: ErrorDetails) -> str:
    keys = [part for part in error["loc"] if isinstance(part, str)]
    path = ".".join(keys)
    kind = error["type"]
    value = error.get("input")
    if kind == "extra_forbidden":
        parent = ".".join(keys[:-1])
        key = error["loc"][-1]
        known = list(_SUB_MODELS.get(parent, ContextPolicy).model_fields)
        where = f"in {parent}" if parent else "at top level"
        guess = difflib.get_close_matches(str(key), known, n=1)
        suggestion = f" (did you mean {guess[0]!r}?)" if guess else ""
        return f"unknown key {key!r} {where}{suggestion}; known keys: {', '.join(known)}"
    if kind == "missing":
        parent = ".".join(keys[:-1])
        where = f"in {parent}" if parent else "at top level"
        return f"missing required key {keys[-1]!r} {where}"
    if kind == "enum" and keys and keys[-1] in _STATE_KINDS:
        noun, enum = _STATE_KINDS[keys[-1]]
        choices = ", ".join(member.value for member in enum)
        return f"{path}: {_short(value)} is not a {noun}; use one of {choices}"
    prefix = f"{path}: " if path else ""
    if kind in ("iso_duration", "policy_rule", "state_list", "duplicate_state"):
        return f"{prefix}{error['msg']}"
    if kind == "bool_type":
        return f"{prefix}expected true or false, got {_short(value)}"
    if kind in ("int_type", "int_parsing"):
        return f"{prefix}expected a whole number, got {_short(value)}"
    if kind == "string_type":
        return f"{prefix}expected text, got {_short(value)}"
    if kind in ("frozen_set_type", "set_type", "list_type"):
        return f"{prefix}expected a list of states, e.g. [supported], got {_short(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{prefix}expected a mapping of keys, got {_kind(value)}"
    if kind == "string_pattern_mismatch" and keys == ["name"]:
        return (
            f"name: {_short(value)} is not a valid policy name; use 1-64 lower-case letters, "
            "digits, '-', '_' or '.'"
        )
    return f"{prefix}{error['msg']} (got {_short(value)})"


def _rule_violations(policy: ContextPolicy) -> list[str]:
    problems: list[str] = []
    q = policy.quote
    if policy.privileged:
        narrowed = [
            axis
            for axis, states, enum in (
                ("truth", policy.truth, TruthStatus),
                ("retrieval", policy.retrieval, RetrievalStatus),
                ("security", policy.security, SecurityStatus),
                ("freshness.allow", policy.freshness.allow, FreshnessStatus),
            )
            if states != frozenset(enum)
        ]
        if narrowed:
            problems.append(
                f"a privileged policy admits every state; list them all on {', '.join(narrowed)}"
            )
        if policy.sensitivity_ceiling != Sensitivity.SECRET:
            problems.append("a privileged policy must have sensitivity_ceiling: secret")
        if policy.freshness.max_age is not None:
            problems.append("a privileged policy must not set freshness.max_age")
        if policy.enforce_expiry:
            problems.append("a privileged policy must set enforce_expiry: false")
        if q.enabled:
            problems.append("a privileged policy admits everything, so quote must be disabled")
        if policy.extracted.enabled:
            problems.append("a privileged policy admits everything, so extracted must be disabled")
        return problems
    for where, retrieval, security in (
        ("", policy.retrieval, policy.security),
        ("quote.", q.retrieval, q.security),
        ("extracted.", policy.extracted.retrieval, policy.extracted.security),
    ):
        for axis, forbidden in (
            ("retrieval", _listing(retrieval & PRIVILEGED_RETRIEVAL, RetrievalStatus, "")),
            ("security", _listing(security & PRIVILEGED_SECURITY, SecurityStatus, "")),
        ):
            if forbidden:
                problems.append(
                    f"{where}{axis}: {forbidden} can be admitted only by a privileged "
                    "policy (privileged: true, served only with an auditor grant)"
                )
    if q.enabled and not (
        q.truth.isdisjoint(policy.truth)
        or q.retrieval.isdisjoint(policy.retrieval)
        or q.security.isdisjoint(policy.security)
    ):
        problems.append(
            "quote: the quote lists overlap the trusted lists on every axis (truth, retrieval, "
            "security); make them disjoint on at least one axis so that nothing is both trusted "
            "and quoted, e.g. quote.truth: [unverified] with truth: [supported]"
        )
    return problems


def _condition(states: frozenset[E], enum: type[E]) -> frozenset[E] | None:
    return None if states == frozenset(enum) else states


def _listing(
    states: Iterable[StrEnum], enum: type[StrEnum], empty: str = "nothing (empty list)"
) -> str:
    if type(states) is frozenset and empty == "nothing (empty list)":
        return _frozen_listing(states, enum)  # every rejection reason names its policy's sets
    chosen = set(states)
    names = [member.value for member in enum if member in chosen]
    return ", ".join(names) if names else empty


@functools.lru_cache(maxsize=256)
def _frozen_listing(states: frozenset[StrEnum], enum: type[StrEnum]) -> str:
    """:func:`_listing` of a frozen set, cached (a pure function returning text)."""
    names = [member.value for member in enum if member in states]
    return ", ".join(names) if names else "nothing (empty list)"


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = [
    "PRIVILEGED_RETRIEVAL",
    "PRIVILEGED_SECURITY",
    "SCHEMA_ID",
    "ContextPolicy",
    "DecisionRule",
    "ExtractedRule",
    "FreshnessRule",
    "QuoteRule",
    "Reason",
    "ReasonCode",
    "available_presets",
    "floor_reasons",
    "resolve",
    "resolve_with_digest",
    "revalidate",
    "revalidate_with_digest",
]
