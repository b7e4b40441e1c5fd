"""Free text in an event body, found by default-deny: which strings someone could have chosen.

A hostile agent can put text it read (a secret) into any string the log records for it: a
recall's query, an action's arguments, a decision's summary, the reason of an alert that quotes
its belief, a file path that becomes an origin id. None of these carries a sensitivity label, so
a redactor that follows labels (:mod:`firewall.audit.shipping`, :mod:`firewall.host.otel`)
cannot know what they hold. This module tells them *whether* an event body holds such text.

Default-deny: :func:`scan_payload` walks the payload and counts every string as free text except
the structural ones, judged by the field that holds them (a shape alone is not enough: an
id-shaped recall query is still a query):

* ids in the project's format (:mod:`firewall.model.ids`) in id fields (``*_id``, ``*_ids``,
  ``depends_on``, ``cites``, ``accepted``, …, and the keys of the by-id maps);
* hex digests in digest fields, ISO timestamps in time fields;
* values of the fixed vocabularies (the state enums, authorities, origin classes and
  integrities, recall reason codes, action levels and outcomes) in the fields that hold them;
* names the host chose when it opened the session or store (``actor``, ``project``, ``user``,
  ``store``, …: they are also in every event's envelope, which is not the caller's to write);
* an event's ``tool`` and ``origin`` when the host named them (:func:`host_named`: a tool in
  the kernel's registry, an observation through a host channel, the opening of that channel,
  whose origin ids, ``user:alice``, the host gave); a tool name or an origin id the agent chose
  stays free. The calls of a batch of observations are judged each as an event.

Evidence for a labelled claim of the same event is the claim's own metadata (its source and
independence group name the claim's origins) and is skipped with it. Mapping keys are judged
too: a key outside the known field names is free text, and everything
under a caller's own data (``args``) is free text, keys included. Records that carry a
sensitivity label (observations, claims, beliefs, and the rows of an import batch) are skipped
when ``labelled_ok`` says their labels are at or below the ceiling: they carry their own text
legitimately, *unless the agent chose it*. A labelled record whose origin label includes the
``agent`` class (:func:`agent_written`: a note, a report of a call without a channel; or one
with no readable origin) is free text like any other: the label an agent's write takes is
floored by what its own session read, and nothing else, so an agent that read a secret in one
session can write it under a ``public`` label in the next. Records of every other origin (user,
tool, external, imported, probe) keep their labels' word. All their text is still handed to
the credential scan.

>>> scan = scan_payload({"query": "deploy window", "accepted": ["bel_" + "0" * 28]})
>>> scan.free, scan.texts
(True, ['deploy window'])
>>> scan_payload({"authority": "user", "belief_id": "bel_" + "0" * 28}).free
False
>>> scan_payload({"belief_id": "the payroll key is pk-1"}).free
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gnomon.firewall.gate.policy import ContextPolicy, ReasonCode
from gnomon.firewall.log.events import IMPORTS, MOVES, RECORD_TYPES
from gnomon.firewall.model import states
from gnomon.firewall.model.chain import BindingState
from gnomon.firewall.model.ids import PREFIXES
from gnomon.firewall.model.origin import Integrity, OriginClass

_ID = re.compile(rf"(?:{'|'.join(sorted(PREFIXES))})_[0-9a-f]{{28}}")
_HEX = re.compile(r"(?:sha256:)?[0-9a-f]{16,128}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})?")
_LEVEL = re.compile(r"L[0-5]")
_BASE64_SIGNATURE = re.compile(r"[A-Za-z0-9+/]{86}==")  # an Ed25519 signature

#: Fields whose string values are ids (besides ``id`` and ``*_id`` / ``*_ids``).
ID_FIELDS = frozenset(
    {
        "accepted",
        "cites",
        "contradictions",
        "depends_on",
        "derived_from",
        "new",
        "old",
        "quarantined",
        "quoted",
        "related",
        "related_ids",
        "returned",
        "shown",
        "superseded_by",
        "supersedes",
        "uncertainties",
    }
)
#: Maps keyed by ids (their keys are ids; their values are judged by the map's name).
BY_ID = frozenset({"rejected", "dependency_truth"})
#: Fields whose string values are hex digests (besides ``*_digest`` and ``*_hash``).
HEX_FIELDS = frozenset({"block_hashes", "digest", "expected", "found", "key_id", "nonce"})
#: Fields naming the context policy a recall or decision ran under: structural only when the
#: value is a preset's name (a caller's own policy object carries a name the caller chose).
POLICY_NAMED = frozenset({"policy", "policy_id"})
PRESETS = frozenset(ContextPolicy.presets())

#: Names the host gave when it opened a session or a store.
HOST_NAMED = frozenset(
    {
        "actor",
        "approver",
        "model_id",
        "project",
        "prompt_id",
        "sentinel",
        "store",
        "tool_version",
        "user",
        "via",
    }
)
_STATES = frozenset(s.value for enum in states.AXIS_ENUM.values() for s in enum)
#: Fields whose values come from a fixed vocabulary.
VOCABULARY: dict[str, frozenset[str]] = {
    "authority": frozenset(a.value for a in states.Authority),
    "axis": frozenset(a.value for a in states.Axis),
    "classes": frozenset(c.value for c in OriginClass),
    "decision": frozenset({"approve", "deny"}),
    "extraction": frozenset(m.value for m in states.ExtractionMethod),
    "freshness": frozenset(f.value for f in states.FreshnessStatus),
    "freshness_status": frozenset(f.value for f in states.FreshnessStatus),
    "from_state": _STATES,
    "integrity": frozenset(i.name.lower() for i in Integrity),
    "kind": frozenset(k.value for k in states.ClaimKind),
    "outcome": frozenset({"allow", "deny", "hold"}),
    "quality": frozenset(q.value for q in states.EvidenceQuality),
    "rejected": frozenset(r.value for r in ReasonCode),
    "relation": frozenset(r.value for r in states.EvidenceRelation),
    "retrieval_status": frozenset(r.value for r in states.RetrievalStatus),
    "scope": frozenset(s.value for s in states.Scope),
    "security_status": frozenset(s.value for s in states.SecurityStatus),
    "sensitivity": frozenset(s.value for s in states.Sensitivity),
    "state": frozenset(b.value for b in BindingState),
    "to_state": _STATES,
    "trust": frozenset(t.value for t in states.ObservationTrust),
    "truth_status": frozenset(t.value for t in states.TruthStatus),
    "dependency_truth": frozenset(t.value for t in states.TruthStatus),
}
#: Subtrees that are a caller's own data: every string under them, keys included, is free text.
CALLER_DATA = frozenset({"args", "arguments", "inputs", "metadata"})
#: Labelled records: skipped (their text is their own) when their labels are at or below the
#: ceiling and the agent did not write them. ``imports`` is an import batch, whose rows are
#: labelled beliefs (of the ``imported`` origin).
LABELLED = frozenset({"observations", "claims", "beliefs"})


def _time_field(key: str) -> bool:
    return key in ("at", "deadline") or key.endswith("_at")


def _id_field(key: str) -> bool:
    return key == "id" or key.endswith(("_id", "_ids")) or key in ID_FIELDS


def _hex_field(key: str) -> bool:
    return key in HEX_FIELDS or key.endswith(("_digest", "_hash"))


def structural(key: str, value: str) -> bool:
    """Is ``value``, held in field ``key``, structural (not text anyone chose)?

    >>> structural("created_at", "2026-01-02T03:04:05.000001Z"), structural("query", "2026-01-02")
    (True, False)
    """
    if key in HOST_NAMED:
        return True
    if key in POLICY_NAMED:  # a caller may pass its own ContextPolicy, named as it likes
        return value in PRESETS
    if key == "signature":
        return _BASE64_SIGNATURE.fullmatch(value) is not None
    if _hex_field(key):
        return _HEX.fullmatch(value) is not None
    if _id_field(key):
        return _ID.fullmatch(value) is not None
    if _time_field(key):
        return _TIME.fullmatch(value) is not None
    if key == "level":
        return _LEVEL.fullmatch(value) is not None
    vocabulary = VOCABULARY.get(key)
    return vocabulary is not None and value in vocabulary


_KNOWN_KEYS = (
    ID_FIELDS
    | BY_ID
    | HEX_FIELDS
    | HOST_NAMED
    | POLICY_NAMED
    | frozenset(VOCABULARY)
    | LABELLED
    | frozenset({IMPORTS, MOVES, "records", "reason", "reasons", "summary", "statement"})
)


def _known_key(key: str) -> bool:
    # a field name of the project's own form; an unknown one is free text (it may be the caller's)
    return (
        key in _KNOWN_KEYS
        or key in _FIELD_NAMES
        or _id_field(key)
        or _hex_field(key)
        or _time_field(key)
    )


def _field_names() -> frozenset[str]:
    names: set[str] = set(name for name, _ in RECORD_TYPES)
    for _, model in RECORD_TYPES:
        names.update(model.model_fields)
    # payload fields the host writes (firewall.host, firewall.kernel): names, never values
    names.update(
        {
            "adopted",
            "alert_id",
            "approval",
            "bins",
            "calls",
            "classes",
            "origin_ids",
            "channel_id",
            "checkpoint",
            "count",
            "detail",
            "expired",
            "flags",
            "grant_id",
            "label",
            "level",
            "origin",
            "origin_id",
            "preconditions",
            "problems",
            "query",
            "request",
            "rows",
            "rule",
            "samples",
            "scores",
            "seq",
            "signature",
            "skipped",
            "source",
            "stale",
            "success",
            "target",
            "template",
            "text",
            "tool",
            "unsigned",
            "value",
            "window",
        }
    )
    return frozenset(names)


_FIELD_NAMES = _field_names()


@dataclass(slots=True)
class TextScan:
    """What :func:`scan_payload` found: whether unlabelled free text is there (``free``), and
    every non-structural string (free or in labelled records) for the credential scan."""

    free: bool = False
    texts: list[str] = field(default_factory=list)

    def _free(self, text: str) -> None:
        self.free = True
        self.texts.append(text)


def host_named(payload: Mapping[str, Any]) -> bool:
    """Are the ``tool`` and ``origin`` of this event names the host gave (structure, not free
    text)? Yes when the host-written event says so: ``registered`` (the kernel found the tool's
    contract in the host's registry) or a ``channel_id`` (a channel the host opened, named by
    host code, with the origin the host gave it: its opening, an observation through it). A
    tool name or an origin the agent chose (an unknown tool, a call reported without a
    channel, a file path it named as its source) is not.

    >>> host_named({"tool": "read_file", "registered": True})
    True
    >>> host_named({"tool": "sk-live-stolen", "registered": False})
    False
    """
    return payload.get("registered") is True or isinstance(payload.get("channel_id"), str)


#: The fields of an event that :func:`host_named` makes structure.
HOST_GIVEN = frozenset({"tool", "origin"})


def scan_payload(payload: Mapping[str, Any], *, labelled_ok: bool = True) -> TextScan:
    """Walk ``payload`` (an event body's ``payload``) by default-deny.

    ``labelled_ok``: the labelled records in it are at or below the ceiling, so the text of
    those the agent did not write is theirs (collected for the credential scan, not counted as
    free); an agent-written record's text, and any record's text when false, counts as free.
    """
    scan = TextScan()
    for key, value in payload.items():
        if key == "records" and isinstance(value, Mapping):
            claims = _claim_ids(value) if labelled_ok else frozenset()
            for name, items in value.items():
                if name in LABELLED and labelled_ok:
                    _labelled(name, items, scan)
                elif name == "evidence" and isinstance(items, list):
                    for item in items:
                        # evidence for a labelled claim of this event: the claim's own metadata
                        if isinstance(item, Mapping) and item.get("claim_id") in claims:
                            _collect(name, item, scan)
                        else:
                            _walk(name, item, scan)
                else:
                    _walk(name, items, scan)
        elif key == IMPORTS and labelled_ok and isinstance(value, Mapping):
            _imports(value, scan)
        elif key == MOVES and isinstance(value, Mapping):
            _moves(value, scan)
        elif key in HOST_GIVEN and host_named(payload):
            _collect(key, value, scan)  # the host's name or label: the credential scan only
        elif key == "calls" and isinstance(value, list):
            for call in value:  # a batch of observations: each call judged as an event
                if not isinstance(call, Mapping):
                    _walk(key, call, scan)
                    continue
                one = scan_payload(call, labelled_ok=labelled_ok)
                scan.free = scan.free or one.free
                scan.texts.extend(one.texts)
        else:
            _walk(key, value, scan)
    return scan


def agent_written(record: Any) -> bool:
    """Did the agent choose this record's text? True when its origin label includes the
    ``agent`` class, and when it has no readable origin label (default-deny).

    >>> agent_written({"origin": {"classes": ["agent", "tool"]}})
    True
    >>> agent_written({"origin": {"classes": ["user"]}}), agent_written({"statement": "x"})
    (False, True)
    """
    origin = record.get("origin") if isinstance(record, Mapping) else None
    classes = origin.get("classes") if isinstance(origin, Mapping) else None
    if not isinstance(classes, list) or not classes:
        return True
    return OriginClass.AGENT.value in classes


def _labelled(key: str, items: Any, scan: TextScan) -> None:
    """Labelled records at or below the ceiling: a record whose text the agent chose is free
    text (walked); any other record's text is its own (collected for the credential scan)."""
    for item in items if isinstance(items, list) else [items]:
        if agent_written(item):
            _walk(key, item, scan)
        else:
            _collect(key, item, scan)


def _claim_ids(records: Mapping[str, Any]) -> frozenset[str]:
    """The labelled claims of an event whose text is their own (not the agent's)."""
    claims = records.get("claims")
    if not isinstance(claims, list):
        return frozenset()
    return frozenset(
        c["id"]
        for c in claims
        if isinstance(c, Mapping) and isinstance(c.get("id"), str) and not agent_written(c)
    )


def _collect(key: str, value: Any, scan: TextScan) -> None:
    """Strings of a labelled record, for the credential scan only (structural ones skipped)."""
    if isinstance(value, str):
        if not structural(key, value):
            scan.texts.append(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and not _known_key(k):
                scan.texts.append(k)
            _collect(k, v, scan)
    elif isinstance(value, list):
        for v in value:
            _collect(key, v, scan)


#: Where an import batch row (:mod:`firewall.log.batch`) keeps text: the statement, its source,
#: the id the memory store gave it. The rest of a row is ids, a label, a time and a digest.
_IMPORT_TEXT = (3, 4, 7)


def _imports(value: Mapping[str, Any], scan: TextScan) -> None:
    """An import batch whose rows are labelled at or below the ceiling: their text, for the
    credential scan; anything unexpected in the batch is collected whole."""
    for key, item in value.items():
        if key != "rows" or not isinstance(item, list):
            _collect(key, item, scan)
            continue
        for row in item:
            if not isinstance(row, list) or len(row) != 9:
                _collect(key, row, scan)
                continue
            scan.texts.extend(row[i] for i in _IMPORT_TEXT if isinstance(row[i], str))


def _caller(value: Any, scan: TextScan) -> None:
    if isinstance(value, str):
        scan._free(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _caller(k, scan)
            _caller(v, scan)
    elif isinstance(value, list):
        for v in value:
            _caller(v, scan)


def _walk(key: str, value: Any, scan: TextScan) -> None:
    if key in CALLER_DATA:
        _caller(value, scan)
    elif isinstance(value, str):
        if not structural(key, value):
            scan._free(value)
    elif isinstance(value, Mapping):
        by_id = key in BY_ID
        for k, v in value.items():
            if not isinstance(k, str):
                continue
            if by_id:
                if _ID.fullmatch(k) is None:
                    scan._free(k)
                _walk(key, v, scan)
            else:
                if not _known_key(k):
                    scan._free(k)
                _walk(k, v, scan)
    elif isinstance(value, list):
        for v in value:
            _walk(key, v, scan)


def _moves(value: Mapping[str, Any], scan: TextScan) -> None:
    """A move batch (:mod:`firewall.log.moves`): rows of ``[belief, version, n, [[revision,
    axis, before, after], …]]``; its reasons and anything unexpected are free text."""
    for key, item in value.items():
        if key != "rows" or not isinstance(item, list):
            _walk(key, item, scan)
            continue
        for row in item:
            if not (
                isinstance(row, list)
                and len(row) == 4
                and all(isinstance(n, int) for n in row[1:3])
                and isinstance(row[3], list)
            ):
                _caller(row, scan)
                continue
            _walk("belief_id", row[0], scan)
            for change in row[3]:
                if not (isinstance(change, list) and len(change) == 4):
                    _caller(change, scan)
                    continue
                _walk("revision_id", change[0], scan)
                _walk("axis", change[1], scan)
                _walk("from_state", change[2], scan)
                _walk("to_state", change[3], scan)


__all__ = [
    "BY_ID",
    "CALLER_DATA",
    "HEX_FIELDS",
    "HOST_GIVEN",
    "HOST_NAMED",
    "ID_FIELDS",
    "LABELLED",
    "VOCABULARY",
    "TextScan",
    "agent_written",
    "host_named",
    "scan_payload",
    "structural",
]
