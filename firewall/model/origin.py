"""Origin labels: where a memory came from, bound when it is written, never washed out.

An :class:`Origin` is a label with three parts: the origin *classes* it derives from, the concrete
origin *ids* (``external:file:DEVELOPMENT.md``, ``user:alice`` …) and an *integrity* level. Labels
form a lattice and propagate by **join**: anything derived from several inputs carries the lowest
integrity of its inputs and the union of their classes and ids. There is no operation that raises
a label's integrity; only the gate, acting on a verified grant or independent stronger evidence,
can change what a *belief* is trusted for, and even then its label keeps its history.

>>> from gnomon.firewall import Origin
>>> summary = Origin.join(Origin.agent("coder"), Origin.external("file:DEVELOPMENT.md"))
>>> summary.integrity.name
'UNTRUSTED'
>>> sorted(c.value for c in summary.classes)
['agent', 'external']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import IntEnum, StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from gnomon.firewall.model.errors import InvalidOriginError


class OriginClass(StrEnum):
    USER = "user"
    TOOL = "tool"
    EXTERNAL = "external"
    AGENT = "agent"
    PROBE = "probe"
    IMPORTED = "imported"


class Integrity(IntEnum):
    """How far a label may be trusted, lowest first. The join takes the minimum."""

    UNTRUSTED = 0  # external content, imported records: text someone else wrote
    DERIVED = 1  # the agent's own writing: model output
    OBSERVED = 2  # a tool envelope the host saw happen
    ATTESTED = 3  # the user (attributed by the host) or an operator's probe


CLASS_INTEGRITY: dict[OriginClass, Integrity] = {
    OriginClass.USER: Integrity.ATTESTED,
    OriginClass.PROBE: Integrity.ATTESTED,
    OriginClass.TOOL: Integrity.OBSERVED,
    OriginClass.AGENT: Integrity.DERIVED,
    OriginClass.EXTERNAL: Integrity.UNTRUSTED,
    OriginClass.IMPORTED: Integrity.UNTRUSTED,
}

_NAME = re.compile(r"^[^\x00-\x1f\x7f\ud800-\udfff]{1,512}$")  # no controls, no lone surrogates


def _checked_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidOriginError(
            f"{kind} origin name must be 1-512 printable characters, got {name!r}",
            hint=f"pass a short identifier such as Origin.{kind}('file:README.md')",
        )
    return name


class Origin(BaseModel):
    """An origin label. Build one with the constructors, combine them with :meth:`join`."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    classes: frozenset[OriginClass]
    origin_ids: frozenset[str]
    integrity: Integrity

    def __init__(self, **data: Any) -> None:
        # A hand-built label is input at an edge: refuse it with the typed error, not pydantic's.
        try:
            super().__init__(**data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "label"
            raise InvalidOriginError(
                f"invalid origin label ({where}): {first['msg']}",
                hint="build labels with Origin.external(...), Origin.agent(...) or Origin.join",
            ) from exc

    @field_validator("classes", mode="before")
    @classmethod
    def _parse_classes(cls, value: Any) -> Any:
        try:
            return frozenset(OriginClass(v) for v in value)
        except (TypeError, ValueError) as exc:
            known = ", ".join(c.value for c in OriginClass)
            raise ValueError(f"unknown origin class in {value!r}; known: {known}") from exc

    @field_validator("origin_ids", mode="before")
    @classmethod
    def _parse_ids(cls, value: Any) -> Any:
        if isinstance(value, list | tuple | set | frozenset):
            return frozenset(str(v) for v in value)
        return value

    @field_validator("integrity", mode="before")
    @classmethod
    def _parse_integrity(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return Integrity[value.upper()]
            except KeyError as exc:
                raise ValueError(f"unknown integrity {value!r}") from exc
        if isinstance(value, int) and not isinstance(value, Integrity):
            return Integrity(value)
        return value

    @model_validator(mode="after")
    def _never_above_its_classes(self) -> Origin:
        """A label is never more trusted than the least trusted class it names, and every id
        belongs to one of its classes: a hand-built label cannot raise trust by construction."""
        if not self.classes or not self.origin_ids:
            raise ValueError("an origin label names at least one class and one origin id")
        ceiling = min(CLASS_INTEGRITY[c] for c in self.classes)
        if self.integrity > ceiling:
            raise ValueError(
                f"integrity {self.integrity.name.lower()} is above what its classes allow "
                f"({ceiling.name.lower()})"
            )
        prefixes = {f"{c.value}:" for c in self.classes}
        stray = sorted(i for i in self.origin_ids if not any(i.startswith(p) for p in prefixes))
        if stray:
            raise ValueError(f"origin ids {stray} belong to no class of the label")
        return self

    @property
    def authority_bearing(self) -> bool:
        """True when the label carries more than the agent's own word (observed or attested):
        only the host may attest it, through a channel. A join that names a user or tool origin
        but is only derived or untrusted carries no authority and may be asserted by anyone."""
        return self.integrity > Integrity.DERIVED

    @field_serializer("classes")
    def _dump_classes(self, value: frozenset[OriginClass]) -> list[str]:
        return sorted(c.value for c in value)

    @field_serializer("origin_ids")
    def _dump_ids(self, value: frozenset[str]) -> list[str]:
        return sorted(value)

    @field_serializer("integrity")
    def _dump_integrity(self, value: Integrity) -> str:
        return value.name.lower()

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def _single(cls, klass: OriginClass, name: str) -> Origin:
        name = _checked_name(klass.value, name)
        return cls(
            classes=frozenset({klass}),
            origin_ids=frozenset({f"{klass.value}:{name}"}),
            integrity=CLASS_INTEGRITY[klass],
        )

    @classmethod
    def user(cls, user_id: str) -> Origin:
        """A statement the host attributes to a user (chat message, form input)."""
        return cls._single(OriginClass.USER, user_id)

    @classmethod
    def tool(cls, name: str) -> Origin:
        """Output a trusted tool produced itself (not text it merely carried)."""
        return cls._single(OriginClass.TOOL, name)

    @classmethod
    def external(cls, source: str) -> Origin:
        """Text someone else wrote: a file, a web page, an email, a README."""
        return cls._single(OriginClass.EXTERNAL, source)

    @classmethod
    def agent(cls, actor: str) -> Origin:
        """Text the agent (the model) wrote itself."""
        return cls._single(OriginClass.AGENT, actor)

    @classmethod
    def probe(cls, name: str) -> Origin:
        """A synthetic record planted by an operator's probe."""
        return cls._single(OriginClass.PROBE, name)

    @classmethod
    def imported(cls, store: str) -> Origin:
        """A record brought in from an existing memory store: whoever wrote it is unknown."""
        return cls._single(OriginClass.IMPORTED, store)

    # -- lattice ------------------------------------------------------------------------------

    @classmethod
    def join(cls, *labels: Origin) -> Origin:
        """The least upper bound of taint: lowest integrity, union of classes and ids."""
        if not labels:
            raise InvalidOriginError(
                "cannot join zero origin labels", hint="pass at least one Origin to join()"
            )
        for label in labels:
            if type(label) is not Origin:
                raise InvalidOriginError(
                    f"join() takes Origin labels, got {type(label).__name__}",
                    hint="build labels with Origin.user(...), Origin.external(...) and so on",
                )
        if len(labels) == 1:
            return labels[0]
        classes: set[OriginClass] = set()
        ids: set[str] = set()
        for label in labels:
            classes |= label.classes
            ids |= label.origin_ids
        return cls(
            classes=frozenset(classes),
            origin_ids=frozenset(ids),
            integrity=min(label.integrity for label in labels),
        )

    def json_dict(self) -> dict[str, Any]:
        """``self.model_dump(mode="json")``, with the sorting done once per label.

        Every record carries its origin, so its JSON form is on every write path; labels are
        frozen, and one label is typically shared by many records (an import reuses one). The
        cache is keyed by identity and keeps the label alive, so an id is never reused while
        cached; each call returns fresh containers, so callers may not corrupt the cache.
        """
        entry = _JSON_CACHE.get(id(self))
        if entry is None or entry[0] is not self:
            if len(_JSON_CACHE) >= _JSON_CACHE_SIZE:
                _JSON_CACHE.clear()
            entry = (
                self,
                sorted(c.value for c in self.classes),
                sorted(self.origin_ids),
                self.integrity.name.lower(),
            )
            _JSON_CACHE[id(self)] = entry
        return {"classes": list(entry[1]), "origin_ids": list(entry[2]), "integrity": entry[3]}

    def __or__(self, other: Origin) -> Origin:
        return Origin.join(self, other)

    def shares_origin_with(self, other: Origin) -> bool:
        return not self.origin_ids.isdisjoint(other.origin_ids)

    @property
    def tainted(self) -> bool:
        """True when any input is text someone else wrote (external or imported)."""
        return self.integrity == Integrity.UNTRUSTED

    @property
    def user_lineage(self) -> bool:
        """True when the label could only have come from what a user said: it names a user,
        and nothing but users, trusted tool envelopes and the agent (or a store's extractor)
        rewriting them; no external or imported text anywhere in it, so integrity is at least
        ``derived``. The lineage an extracted fact needs to enter trusted context.

        >>> (Origin.user("alice") | Origin.agent("coder")).user_lineage
        True
        >>> (Origin.user("alice") | Origin.external("web:x")).user_lineage
        False
        >>> Origin.agent("coder").user_lineage
        False
        """
        return (
            OriginClass.USER in self.classes
            and self.classes <= _USER_LINEAGE
            and self.integrity >= Integrity.DERIVED
        )

    def describe(self) -> str:
        ids = ", ".join(sorted(self.origin_ids))
        return f"{self.integrity.name.lower()} [{ids}]"


_USER_LINEAGE = frozenset({OriginClass.USER, OriginClass.TOOL, OriginClass.AGENT})
_JSON_CACHE_SIZE = 256
_JSON_CACHE: dict[int, tuple[Origin, list[str], list[str], str]] = {}


def join_all(labels: Iterable[Origin]) -> Origin | None:
    """Join any number of labels; ``None`` for an empty input (nothing was read)."""
    items = list(labels)
    return Origin.join(*items) if items else None


__all__ = ["CLASS_INTEGRITY", "Integrity", "Origin", "OriginClass", "join_all"]
