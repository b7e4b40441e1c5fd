"""Erasure: remove a memory's text from the store and the log, and keep the chain verifiable.

**Why digest-only redaction.** An event's chain hash covers a digest of its body, not the body
(:mod:`firewall.log.events`), and its seal covers the chain hash. So a body can be replaced by an
*erased body* (the same event with the text replaced by ``[erased on DATE by GRANT]`` and a
marker keeping the digest of the body it replaced) while every link and every seal still
verifies. The alternative, crypto-shredding (each subject's text encrypted under its own key,
the key destroyed), needs a key per subject decided at write time, a key store that is itself
erasable, and leaves ciphertext that must never be re-keyed; it also makes every read decrypt.
Digest-only redaction needs none of that, erases text written before the feature existed, and
leaves nothing to brute-force but a digest over a whole event body (ids, timestamps, random
ids: not a short secret). Wrapped stores erase through their own delete.

**Who vouches for an erased body.** Anyone who can write the store file can write a marker. So
an erasure commits an ``erasure`` event that lists, for every body it rewrote, the digest kept
and the digest of the erased body; the marker names that event, which is chained and sealed
like any other. Readers (:meth:`firewall.store.base.Store._verified`) and chain walks
(:class:`firewall.log.events.ErasureLedger`) accept an erased body only when it is listed.

**What is erased.** The beliefs a target selects (one belief, an origin such as ``user:alice``,
a subject, a project), every version of them, their claims and the observations they were read
from; then every other string in the log that quotes one of those texts (a privileged read's
query, a revision's reason, a decision's summary). Beliefs *derived* from the erased origin
(their label joins it with other origins: agent notes, extracted facts) are erased too with
``derived="erase"``, or listed for the operator with ``derived="list"``. The projections
(documents, history, the full-text index) are rebuilt from the erased log in the same
transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import orjson

from gnomon.firewall.log.events import (
    ERASED,
    ERASURE_KIND,
    IMPORTS,
    Event,
    EventDraft,
    body_digest,
    erased_marker,
)
from gnomon.firewall.model.errors import InputError, StoreError
from gnomon.firewall.store.base import Store

#: Record fields that hold text, or a digest of the text alone (a short text's SHA-256 can be
#: guessed), replaced whole in a record the erasure selects.
TEXT_FIELDS = frozenset(
    {"statement", "blocks", "block_hashes", "args", "summary", "note", "detail", "content_hash"}
)
#: The fields naming the record a row belongs to: an evidence item's claim, a binding's belief.
_OWNER_FIELDS = ("id", "claim_id", "belief_id")
#: Texts shorter than this are erased only from the records selected, never swept from other
#: strings (a short word would otherwise be erased everywhere it occurs).
MIN_QUOTE = 8
_ATTEMPTS = 5
#: The kind of an agent's request to erase a belief (:meth:`firewall.Session.request_forget`):
#: held for an operator, never executed on the agent's word.
ERASURE_REQUESTED = "erasure.requested"


class TargetKind(StrEnum):
    BELIEF = "belief"
    ORIGIN = "origin"
    SUBJECT = "subject"
    PROJECT = "project"


class DerivedMode(StrEnum):
    """What happens to beliefs whose label joins the erased origin with others."""

    ERASE = "erase"
    LIST = "list"


@dataclass(frozen=True, slots=True)
class ErasureTarget:
    """What to erase: ``kind`` and its value (a belief id, ``user:alice``, a subject, a
    project)."""

    kind: TargetKind
    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value.strip():
            raise InputError(
                f"an erasure target {self.kind.value!r} needs a non-empty value",
                hint="e.g. gnomon forget --origin user:alice",
            )

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "value": self.value}


@dataclass(frozen=True, slots=True)
class ErasedEvent:
    """One event whose body was rewritten: the digest the chain keeps, and the erased body's."""

    seq: int
    hash: str
    body_digest: str
    erased_digest: str

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "hash": self.hash,
            "body_digest": self.body_digest,
            "erased_digest": self.erased_digest,
        }


@dataclass(frozen=True, slots=True)
class ErasureResult:
    """What an erasure did: the erasure event, the beliefs erased, the derived ones listed and
    not erased, and every rewritten event."""

    event: Event
    target: ErasureTarget
    grant_id: str
    on: str
    beliefs: tuple[str, ...]
    listed: tuple[str, ...]
    events: tuple[ErasedEvent, ...]
    #: How many distinct texts were swept from the log.
    texts: int = 0


def marker_text(on: str, grant_id: str) -> str:
    """What readers see where text was: ``[erased on 2026-11-28 by grt_…]``."""
    return f"[erased on {on} by {grant_id}]"


def is_erased_text(text: str) -> bool:
    """Is ``text`` an erasure marker (what :func:`marker_text` writes)?"""
    return text.startswith("[erased on ") and text.endswith("]")


@dataclass
class _Selection:
    beliefs: dict[str, _Row] = field(default_factory=dict)
    derived: dict[str, _Row] = field(default_factory=dict)
    every: list[_Row] = field(default_factory=list)


def _selects(target: ErasureTarget, belief: _Row, project: str | None) -> tuple[bool, bool]:
    """``(erased, derived)`` for the latest version of ``belief``."""
    if project is not None and belief.project != project:
        return False, False
    kind, value = target.kind, target.value
    if kind is TargetKind.BELIEF:
        return belief.id == value, False
    if kind is TargetKind.SUBJECT:
        return belief.subject == value, False
    if kind is TargetKind.PROJECT:
        return belief.project == value, False
    ids = belief.origin_ids
    if value not in ids:
        return False, False
    return (True, False) if ids == frozenset({value}) else (False, True)


@dataclass(frozen=True, slots=True)
class _Row:
    """What the selection needs of one record, read from the event's JSON as it is (a full
    validation of every record of the log would cost more than the erasure itself)."""

    id: str
    statement: str = ""
    claim_id: str = ""
    project: str | None = None
    subject: str | None = None
    origin_ids: frozenset[str] = frozenset()
    observation_ids: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()


def _row(doc: Mapping[str, Any]) -> _Row:
    origin = doc.get("origin")
    ids = origin.get("origin_ids", ()) if isinstance(origin, dict) else ()
    return _Row(
        id=str(doc.get("id", "")),
        statement=str(doc.get("statement", "")),
        claim_id=str(doc.get("claim_id", "")),
        project=doc.get("project"),
        subject=doc.get("subject"),
        origin_ids=frozenset(str(i) for i in ids),
        observation_ids=tuple(doc.get("observation_ids", ())),
        blocks=tuple(b for b in doc.get("blocks", ()) if isinstance(b, str)),
    )


def _record_docs(event: Event) -> Mapping[str, Any]:
    """The record documents ``event`` writes, by type (an import batch expanded)."""
    payload = event.payload
    if IMPORTS in payload:
        typed = event.records()
        return {
            name: [item.to_json_dict() for item in getattr(typed, name)]
            for name in ("beliefs", "claims", "observations")
        }
    docs = payload.get("records")
    return docs if isinstance(docs, dict) else {}


def _select(
    events: list[Event], target: ErasureTarget, project: str | None
) -> tuple[_Selection, dict[str, _Row], dict[str, _Row]]:
    """The beliefs ``target`` selects (latest versions, from the log), and every claim and
    observation by id."""
    latest: dict[str, _Row] = {}
    claims: dict[str, _Row] = {}
    observations: dict[str, _Row] = {}
    for event in events:
        docs = _record_docs(event)
        if not docs:
            continue
        for name, table in (
            ("beliefs", latest),
            ("claims", claims),
            ("observations", observations),
        ):
            for doc in docs.get(name, ()):
                if isinstance(doc, dict):
                    row = _row(doc)
                    table[row.id] = row
    chosen = _Selection(every=list(latest.values()))
    for belief in latest.values():
        erased, derived = _selects(target, belief, project)
        if erased:
            chosen.beliefs[belief.id] = belief
        elif derived:
            chosen.derived[belief.id] = belief
    return chosen, claims, observations


_WORD_START = re.compile(r"\b\w")


class _Quotes:
    """Finds the erased texts inside other strings: an index on each text's first
    :data:`MIN_QUOTE` characters, looked up at each word start of a string (each character
    when some text does not start a word), so a sweep costs one lookup per word, not per text.
    """

    def __init__(self, texts: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.by_prefix: dict[str, list[str]] = {}
        for text in set(texts):
            if not text or is_erased_text(text):
                continue
            if len(text) >= MIN_QUOTE:
                self.exact.add(text)
                self.by_prefix.setdefault(text[:MIN_QUOTE], []).append(text)
        for group in self.by_prefix.values():
            group.sort(key=len, reverse=True)  # the longest quote wins where they overlap
        # a text with a space can only be inside a string with one: ids, digests, timestamps
        # and kinds are skipped without a scan unless some text has no space
        self.spaced = all(" " in text for text in self.exact)
        # a text that starts a word is found by looking at word starts only
        self.worded = all(_WORD_START.match(text) for text in self.exact)

    def __len__(self) -> int:
        return len(self.exact)

    def replace(self, value: str, marker: str) -> str:
        if value in self.exact:
            return marker
        if len(value) < MIN_QUOTE or not self.by_prefix or (self.spaced and " " not in value):
            return value
        prefixes = self.by_prefix
        starts: Iterable[int] = (
            [m.start() for m in _WORD_START.finditer(value)]
            if self.worded
            else range(len(value) - MIN_QUOTE + 1)
        )
        out: list[str] = []
        start = 0
        for i in starts:
            if i < start:
                continue  # inside a quote already replaced
            group = prefixes.get(value[i : i + MIN_QUOTE])
            if group is None:
                continue
            for text in group:
                if value.startswith(text, i):
                    out.append(value[start:i])
                    out.append(marker)
                    start = i + len(text)
                    break
        if not out:
            return value
        out.append(value[start:])
        return "".join(out)


def _blank(value: Any, marker: str) -> Any:
    """A selected record's text field with every string replaced by the marker."""
    if isinstance(value, str):
        return marker
    if isinstance(value, list):
        return [_blank(v, marker) for v in value]
    if isinstance(value, dict):
        return {k: _blank(v, marker) for k, v in value.items()}
    return value


def _sweep(value: dict[str, Any] | list[Any], quotes: _Quotes, marker: str) -> bool:
    """Replace every quote of an erased text inside ``value``, in place; True if any was."""
    changed = False
    keys: Iterable[Any] = value.keys() if isinstance(value, dict) else range(len(value))
    for key in keys:
        item = value[key]
        if isinstance(item, str):
            new = quotes.replace(item, marker)
            if new is not item:
                value[key] = new
                changed = True
        elif isinstance(item, dict | list) and _sweep(item, quotes, marker):
            changed = True
    return changed


def _scrub_records(payload: dict[str, Any], ids: set[str], marker: str) -> bool:
    """Blank the text fields of the records ``ids`` names, in place; True if any was."""
    records = payload.get("records")
    if not isinstance(records, dict) or not ids:
        return False
    changed = False
    for items in records.values():
        if not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, dict) and any(item.get(f) in ids for f in _OWNER_FIELDS):
                for name in TEXT_FIELDS & item.keys():
                    blanked = _blank(item[name], marker)
                    if blanked != item[name]:
                        item[name] = blanked
                        changed = True
    return changed


def _erase_block_hashes(payload: Any) -> None:
    """An observation block swept to a marker loses its recorded hash too (a short text's
    SHA-256 can be guessed); the observation's other blocks keep theirs."""
    records = payload.get("records") if isinstance(payload, dict) else None
    observations = records.get("observations") if isinstance(records, dict) else None
    for item in observations if isinstance(observations, list) else ():
        blocks, hashes = item.get("blocks"), item.get("block_hashes")
        if isinstance(blocks, list) and isinstance(hashes, list):
            for i, block in enumerate(blocks[: len(hashes)]):
                if isinstance(block, str) and is_erased_text(block):
                    hashes[i] = block


def _erased_body(event: Event, by: int, grant_id: str, on: str, new_doc: dict[str, Any]) -> bytes:
    kept = erased_marker(event.body)
    digest = kept["body_digest"] if kept is not None else body_digest(event.body)
    new_doc[ERASED] = {"body_digest": digest, "by": by, "grant": grant_id, "on": on}
    return orjson.dumps(new_doc, option=orjson.OPT_SORT_KEYS)


def plan_rewrites(
    events: list[Event],
    *,
    ids: set[str],
    quotes: _Quotes,
    by: int,
    grant_id: str,
    on: str,
) -> dict[int, tuple[bytes, ErasedEvent]]:
    """Every event of ``events`` whose body changes: its erased body and its entry."""
    marker = marker_text(on, grant_id)
    out: dict[int, tuple[bytes, ErasedEvent]] = {}
    for event in events:
        doc = orjson.loads(event.body)
        doc.pop(ERASED, None)
        payload = doc.get("payload")
        scrubbed = isinstance(payload, dict) and _scrub_records(payload, ids, marker)
        if not (_sweep(doc, quotes, marker) or scrubbed):
            continue
        _erase_block_hashes(payload)
        body = _erased_body(event, by, grant_id, on, doc)
        kept = erased_marker(body)
        assert kept is not None
        out[event.seq] = (
            body,
            ErasedEvent(event.seq, event.hash, kept["body_digest"], body_digest(body)),
        )
    return out


def erase(
    store: Store,
    target: ErasureTarget,
    *,
    grant_id: str,
    actor: str,
    now: datetime,
    derived: DerivedMode = DerivedMode.LIST,
    project: str | None = None,
    versions: Mapping[str, Any] | None = None,
) -> ErasureResult:
    """Erase what ``target`` selects (within ``project`` when given) from ``store``: its
    texts replaced in every event body, the projections rebuilt, one ``erasure`` event
    committed; retried when another writer moved the head meanwhile. The caller checked the
    operator's grant (:meth:`firewall.Firewall.forget`)."""
    on = now.date().isoformat()
    for _ in range(_ATTEMPTS):
        head = store.head()[0]
        events = list(store.events())
        chosen, claims, observations = _select(events, target, project)
        erased = dict(chosen.beliefs)
        listed: dict[str, _Row] = {}
        if derived is DerivedMode.ERASE:
            erased.update(chosen.derived)
        else:
            listed = chosen.derived
        ids, texts = _ids_and_texts(erased.values(), claims, observations, chosen.every)
        quotes = _Quotes(texts)
        rewrites = plan_rewrites(
            events, ids=ids, quotes=quotes, by=head + 1, grant_id=grant_id, on=on
        )
        entries = tuple(entry for _, entry in rewrites.values())
        draft = EventDraft(
            kind=ERASURE_KIND,
            actor=actor,
            at=now,
            project=project,
            versions=dict(versions or {}),
            data={
                "grant_id": grant_id,
                "target": target.as_json(),
                "on": on,
                "beliefs": sorted(erased),
                "derived": {"mode": derived.value, "listed": sorted(listed)},
                "events": [{k: v for k, v in e.as_json().items() if k != "hash"} for e in entries],
            },
        )
        committed = store.erase_bodies({s: b for s, (b, _) in rewrites.items()}, draft, head)
        if committed is not None:
            return ErasureResult(
                event=committed[0],
                target=target,
                grant_id=grant_id,
                on=on,
                beliefs=tuple(sorted(erased)),
                listed=tuple(sorted(listed)),
                events=entries,
                texts=len(quotes),
            )
    raise StoreError(
        f"{store.url}: the log kept moving while planning the erasure ({_ATTEMPTS} attempts)",
        hint="run gnomon forget again when the writers are quieter",
    )


def _ids_and_texts(
    beliefs: Iterable[_Row],
    claims: Mapping[str, _Row],
    observations: Mapping[str, _Row],
    all_beliefs: Iterable[_Row],
) -> tuple[set[str], list[str]]:
    """The record ids whose text fields are blanked, and the texts swept from every string.
    An observation is blanked whole (its blocks, its arguments) only when every belief read
    from it is erased: a tool result that also carried someone else's text keeps that text."""
    erased = list(beliefs)
    ids: set[str] = set()
    texts: list[str] = []
    for belief in erased:
        ids.add(belief.id)
        texts.append(belief.statement)
        claim = claims.get(belief.claim_id)
        if claim is not None:
            ids.add(claim.id)
            texts.append(claim.statement)
    readers: dict[str, set[str]] = {}
    for belief in all_beliefs:
        claim = claims.get(belief.claim_id)
        for observation_id in () if claim is None else claim.observation_ids:
            readers.setdefault(observation_id, set()).add(belief.id)
    erased_ids = {b.id for b in erased}
    for observation_id, read_by in readers.items():
        observation = observations.get(observation_id)
        if observation is not None and read_by <= erased_ids:
            ids.add(observation_id)
            texts.extend(observation.blocks)
    return ids, texts


@dataclass(frozen=True, slots=True)
class HeldRequest:
    """An agent's request to erase a belief, not acted on yet."""

    request_id: str
    belief_id: str
    reason: str
    actor: str
    session_id: str | None
    at: str


def held_requests(store: Store) -> list[HeldRequest]:
    """The erasure requests agents made whose belief no erasure has erased since."""
    held: dict[str, HeldRequest] = {}
    for event in store.events():
        data = event.payload
        if event.kind == ERASURE_REQUESTED:
            request_id, belief_id = data.get("request_id"), data.get("belief_id")
            if isinstance(request_id, str) and isinstance(belief_id, str):
                held[request_id] = HeldRequest(
                    request_id,
                    belief_id,
                    str(data.get("reason", "")),
                    event.actor,
                    event.session_id,
                    event.at,
                )
        elif event.kind == ERASURE_KIND:
            erased = set(data.get("beliefs", ()))
            held = {k: r for k, r in held.items() if r.belief_id not in erased}
    return list(held.values())


__all__ = [
    "ERASURE_REQUESTED",
    "MIN_QUOTE",
    "TEXT_FIELDS",
    "DerivedMode",
    "ErasedEvent",
    "ErasureResult",
    "ErasureTarget",
    "HeldRequest",
    "TargetKind",
    "erase",
    "held_requests",
    "is_erased_text",
    "marker_text",
    "plan_rewrites",
]
