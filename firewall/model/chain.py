"""The eight types of the epistemic chain, as strict, frozen pydantic models.

Observation → Claim → EvidenceSet → Belief → Decision → Action → Outcome → Revision.

They are first-class types rather than fields on a generic event: each has its own table, its own
invariants and its own place in an audit. All are frozen; a state change produces a new version
through the gate (``firewall.gate.gate``), never an in-place edit. Claims and beliefs keep the text
they are about, because auditors read it.
"""

from __future__ import annotations

import hashlib
import types
import typing
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import Enum, StrEnum
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from gnomon.firewall.model.origin import Integrity, Origin
from gnomon.firewall.model.states import (
    EVIDENCE_STRENGTH,
    READING_CLASS,
    Authority,
    Axis,
    ClaimKind,
    EvidenceQuality,
    EvidenceRelation,
    ExtractionMethod,
    FreshnessStatus,
    ObservationTrust,
    RetrievalStatus,
    Scope,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)

Text = Annotated[str, Field(min_length=1)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]


class ChainModel(BaseModel):
    """Base for chain records: strict on input, frozen, unknown fields refused."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    def to_json_dict(self) -> dict[str, Any]:
        """The record's JSON form, exactly ``self.model_dump(mode="json")``.

        Serializing records is on every write path (each event body carries the full records,
        each projection row their JSON), and pydantic's generic serializer, with the Python-level
        field serializers of :class:`~firewall.model.origin.Origin`, dominated ingest. Each class
        gets
        a dumper generated once from its field annotations (see :func:`_dumper`); a class with
        an annotation the generator does not know keeps using pydantic. ``tests/test_json_plan.py``
        checks that the two agree.
        """
        dump = _DUMPERS.get(type(self))
        if dump is None:
            dump = _DUMPERS.setdefault(type(self), _dumper(type(self)))
        return dump(self)


class SessionInfo(ChainModel):
    id: str
    project: str
    actor: str
    user: str | None = None
    started_at: AwareDatetime
    ended_at: AwareDatetime | None = None
    model_id: str | None = None
    prompt_id: str | None = None
    tool_version: str | None = None


class Observation(ChainModel):
    """The raw output of one tool call, with the origin of its content."""

    id: str
    session_id: str | None
    project: str
    actor: str
    user: str | None = None
    tool: Text
    invocation_id: str
    args: dict[str, Any] = Field(default_factory=dict)
    captured_at: AwareDatetime
    trust: ObservationTrust = ObservationTrust.RAW
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    origin: Origin
    blocks: list[str]
    block_hashes: list[str]
    tool_version: str | None = None


class Claim(ChainModel):
    """A proposition extracted from observations (or written by the agent or the user)."""

    id: str
    kind: ClaimKind
    statement: Text
    subject: str | None = None
    predicate: str | None = None
    observation_ids: list[str] = Field(default_factory=list)
    extraction: ExtractionMethod
    scope: Scope = Scope.PROJECT
    project: str
    user: str | None = None
    session_id: str | None = None
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    origin: Origin
    created_at: AwareDatetime
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class EvidenceItem(ChainModel):
    """One piece of evidence relative to one claim. No scalar score decides promotion."""

    id: str
    claim_id: str
    source: str
    relation: EvidenceRelation
    quality: EvidenceQuality
    independence_group: str
    origin: Origin
    observed_at: AwareDatetime
    freshness: FreshnessStatus = FreshnessStatus.FRESH
    action_id: str | None = None
    note: str | None = None

    @property
    def reading_class(self) -> bool:
        return self.quality in READING_CLASS


class EvidenceSet(ChainModel):
    claim_id: str
    items: list[EvidenceItem] = Field(default_factory=list)

    def strongest(self) -> EvidenceQuality | None:
        supporting = [i.quality for i in self.items if i.relation == EvidenceRelation.SUPPORTS]
        if not supporting:
            return None
        return max(supporting, key=lambda q: EVIDENCE_STRENGTH[q])

    def independent_corroboration(self, claim_origin: Origin) -> int:
        """Count independence groups that may corroborate a claim with ``claim_origin``.

        An item counts only if it supports the claim, is strictly stronger than reading, comes
        from an origin that shares no id with the claim's own origins, and is itself untainted
        (a trusted tool echoing the claim's text carries the text's label and does not count).
        Several items in one independence group count once: Sybil copies are one witness.
        """
        groups = {
            item.independence_group
            for item in self.items
            if item.relation == EvidenceRelation.SUPPORTS
            and item.quality not in READING_CLASS
            and item.quality != EvidenceQuality.SYNTHETIC_PROBE
            and item.origin.integrity >= Integrity.OBSERVED
            and not item.origin.shares_origin_with(claim_origin)
            and item.action_id is None
        }
        return len(groups)


class Belief(ChainModel):
    """A claim the system may let the agent act on, with four independent status axes."""

    id: str
    claim_id: str
    kind: ClaimKind
    statement: Text
    subject: str | None = None
    predicate: str | None = None
    confidence: Confidence = 0.5
    scope: Scope = Scope.PROJECT
    project: str
    user: str | None = None
    session_id: str | None = None
    authority: Authority
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    origin: Origin
    truth_status: TruthStatus = TruthStatus.UNVERIFIED
    retrieval_status: RetrievalStatus = RetrievalStatus.RESTRICTED
    security_status: SecurityStatus = SecurityStatus.CLEAN
    freshness_status: FreshnessStatus = FreshnessStatus.FRESH
    observed_at: AwareDatetime
    last_verified_at: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    contradicts: list[str] = Field(default_factory=list)
    created_at: AwareDatetime
    updated_at: AwareDatetime
    version: int = 1

    def status(self, axis: Axis) -> str:
        return str(getattr(self, f"{axis.value}_status"))


class Decision(ChainModel):
    """A choice the agent made, citing the beliefs it rests on."""

    id: str
    session_id: str
    summary: Text
    depends_on: list[str]
    dependency_truth: dict[str, TruthStatus] = Field(default_factory=dict)
    policy_id: str | None = None
    created_at: AwareDatetime
    flags: list[str] = Field(default_factory=list)


class Action(ChainModel):
    id: str
    decision_id: str
    session_id: str
    name: Text
    args: dict[str, Any] = Field(default_factory=dict)
    created_at: AwareDatetime


class Outcome(ChainModel):
    id: str
    action_id: str
    session_id: str
    success: bool
    summary: str = ""
    created_at: AwareDatetime


class Revision(ChainModel):
    """One accepted change to a belief: which axis moved, from what, to what, on whose authority."""

    id: str
    belief_id: str
    axis: Axis | None = None
    from_state: str | None = None
    to_state: str | None = None
    authority: Authority
    reason: str
    grant_id: str | None = None
    related_ids: list[str] = Field(default_factory=list)
    created_at: AwareDatetime


class Contradiction(ChainModel):
    """A set of beliefs that cannot all be true: same subject and predicate, or linked."""

    id: str
    belief_ids: list[str]
    subject: str | None = None
    predicate: str | None = None
    reason: str
    detected_at: AwareDatetime


class BindingState(StrEnum):
    """Where a belief written through to an external memory store stands with that store."""

    PENDING = "pending"  # recorded by the firewall, the store write not yet confirmed
    WRITTEN = "written"  # the store acknowledged the write and gave it ``store_id``
    FAILED = "failed"  # the store write failed after the firewall recorded the observation
    DELETED = "deleted"  # deleted through the firewall, or found missing from the store
    DRIFTED = "drifted"  # the store's text no longer hashes to ``content_hash``


class StoreBinding(ChainModel):
    """The link between a belief and the item an external memory store holds for it.

    One binding per ``(store, belief_id)``; its ``id`` is ``f"{store}:{belief_id}"``. A new
    version replaces the old one (the event log keeps every version). ``content_hash`` is
    ``"sha256:<hex>"`` of the text as it was written, so an edit made around the firewall is
    visible as a hash mismatch (``drifted``).
    """

    id: str
    store: Text
    store_id: str | None = None
    belief_id: Text
    content_hash: str
    state: BindingState
    detail: str | None = None
    updated_at: AwareDatetime

    @staticmethod
    def key(store: str, belief_id: str) -> str:
        """The binding id of ``belief_id`` in ``store``.

        >>> StoreBinding.key("mem0", "bel_1")
        'mem0:bel_1'
        """
        return f"{store}:{belief_id}"


def content_hash(text: str) -> str:
    """``"sha256:<hex>"`` of ``text`` as UTF-8: what a :class:`StoreBinding` records.

    >>> content_hash("tea")[:19]
    'sha256:a9f74d1ec36e'
    """
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_ZERO = timedelta(0)
_DUMPERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
_last_moment: tuple[datetime | None, Any] = (None, None)


def _json_datetime(moment: datetime) -> Any:
    # pydantic writes UTC as "Z" and other offsets in its own form: take the fast path only for
    # UTC, where the two agree with isoformat(), and ask pydantic for anything else. A record
    # usually repeats one moment (created, updated, observed): remember the last one.
    global _last_moment
    last = _last_moment
    if last[0] is moment:
        return last[1]
    if moment.utcoffset() == _ZERO:
        text = moment.isoformat()
        if text.endswith("+00:00"):
            text = text[:-6] + "Z"
            _last_moment = (moment, text)
            return text
    return to_jsonable_python(moment)


def _json_str_list(items: list[Any]) -> list[Any]:
    return [v if type(v) is str else to_jsonable_python(v) for v in items]


def _json_enum_dict(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k if type(k) is str else str.__str__(k): v.value for k, v in mapping.items()}


def _field_code(annotation: Any, ref: str) -> str | None:
    """A Python expression turning ``ref`` (a non-None field value) into its JSON form."""
    origin = typing.get_origin(annotation)
    if annotation in (str, bool, int):
        return ref
    if annotation is float:
        return f"float({ref})"
    if annotation is datetime or annotation is AwareDatetime:
        return f"_json_datetime({ref})"
    if annotation is Origin:
        return f"{ref}.json_dict()"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return f"{ref}._value_"
    if origin is list and typing.get_args(annotation) == (str,):
        return f"_json_str_list({ref})"
    if origin is dict:
        key, value = typing.get_args(annotation)
        if key is str and value is Any:
            return f"to_jsonable_python({ref})"
        if key is str and isinstance(value, type) and issubclass(value, Enum):
            return f"_json_enum_dict({ref})"
    return None


def _dumper(cls: type[ChainModel]) -> Callable[[Any], dict[str, Any]]:
    """Generate ``dump(record) -> dict`` for ``cls``: one dict display, no per-field calls
    beyond the conversions a field needs. Falls back to pydantic for unknown annotations."""
    lines = ["def dump(record):", "    v = record.__dict__"]
    items = []
    for index, (name, info) in enumerate(cls.model_fields.items()):
        annotation = info.annotation
        optional = False
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return _pydantic_dump
            annotation, optional = args[0], True
        if info.alias is not None or info.exclude or not name.isidentifier():
            return _pydantic_dump
        local = f"f{index}"
        code = _field_code(annotation, local)
        if code is None:
            return _pydantic_dump
        if code == local:
            items.append(f"{name!r}: v[{name!r}]")
            continue
        lines.append(f"    {local} = v[{name!r}]")
        if optional:
            code = f"None if {local} is None else {code}"
        items.append(f"{name!r}: {code}")
    lines.append("    return {" + ", ".join(items) + "}")
    namespace: dict[str, Any] = {
        "_json_datetime": _json_datetime,
        "_json_str_list": _json_str_list,
        "_json_enum_dict": _json_enum_dict,
        "to_jsonable_python": to_jsonable_python,
    }
    exec("\n".join(lines), namespace)  # code built from field names the class declares
    dump: Callable[[Any], dict[str, Any]] = namespace["dump"]
    return dump


def _pydantic_dump(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = record.model_dump(mode="json")
    return out


def aware(moment: datetime) -> datetime:
    """Guard used where a datetime arrives from a caller outside pydantic."""
    if moment.tzinfo is None:
        from gnomon.firewall.model.errors import InputError

        raise InputError(
            f"timestamp {moment.isoformat()} has no timezone",
            hint="pass timezone-aware datetimes, e.g. datetime.now(UTC)",
        )
    return moment


__all__ = [
    "Action",
    "Belief",
    "BindingState",
    "ChainModel",
    "Claim",
    "Contradiction",
    "Decision",
    "EvidenceItem",
    "EvidenceSet",
    "Observation",
    "Outcome",
    "Revision",
    "SessionInfo",
    "StoreBinding",
    "aware",
    "content_hash",
]
