"""The compact import batch: one chained event for many imported records (event schema 2).

An import adopts thousands of records with one context, one origin and one evidence class, so
the gate's decision and every shared field are the same for all of them (see
:class:`firewall.gate.adoption.Adopter`). Schema 1 wrote one event per record carrying three full
record snapshots; an import batch writes **one** event whose payload holds, under ``imports``:

* ``template``: the claim, evidence and belief documents of one record adopted through the gate
  (:func:`firewall.gate.adoption.adopt`), and the binding document when the import binds;
* ``at``: the time every record of the batch was adopted (``created_at``, ``updated_at``, and
  ``last_verified_at`` when the gate's adoption verifies);
* ``rows``: one compact entry per record, in :data:`ROW_FIELDS` order.

Nothing is restated: each record's documents are the template's with the entry's values in place
(:func:`expand`), exactly the documents a schema-1 event would have carried. Every reader that
rebuilds state from the log (:func:`firewall.log.events.records_from_payload`: replay, rebuild, log
import and its gate re-check) expands and validates them like any other record, so a forged
template (a ``supported`` belief, a changed origin) is refused by the same checks.

>>> from datetime import UTC, datetime
>>> from gnomon.firewall.gate.adoption import Adopter, Context
>>> from gnomon.firewall.model.origin import Origin
>>> from gnomon.firewall.model.states import ClaimKind, EvidenceQuality, ExtractionMethod
>>> now = datetime(2025, 1, 1, tzinfo=UTC)
>>> adopter = Adopter(Context("p", "importer", None, None), kind=ClaimKind.CONTENT,
...     origin=Origin.imported("mem0"), quality=EvidenceQuality.EXTERNAL_DOCUMENT,
...     extraction=ExtractionMethod.IMPORT)
>>> batch = ImportBatch.start(adopter, store="mem0", now=now, bind=False)
>>> belief_id = batch.add("tea at noon", source="mem0:1", store_id="1")
>>> docs = expand(batch.payload())
>>> docs["beliefs"][0]["statement"], docs["beliefs"][0]["truth_status"]
('tea at noon', 'unverified')
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AwareDatetime, Field, TypeAdapter

from gnomon.firewall.gate.adoption import Adopter, NewBelief, _plain_aware
from gnomon.firewall.log.events import IMPORTS, MOVES, Records
from gnomon.firewall.model.chain import (
    Belief,
    BindingState,
    Claim,
    EvidenceItem,
    StoreBinding,
    content_hash,
)
from gnomon.firewall.model.clock import iso
from gnomon.firewall.model.ids import new_ids
from gnomon.firewall.model.states import Sensitivity

if TYPE_CHECKING:
    from gnomon.firewall.log.moves import BeliefMove

#: What each compact row holds, in order.
ROW_FIELDS = (
    "belief_id",
    "claim_id",
    "evidence_id",
    "statement",
    "source",
    "sensitivity",
    "observed_at",
    "store_id",
    "content_hash",
)


#: How many records' ids :meth:`ImportBatch.add` draws at once.
_ID_BLOCK = 256


class ImportBatch:
    """Records of one import batch, adopted from one validated template.

    Each row holds only what differs between records; :meth:`payload` is the compact form the
    event carries, :meth:`records` the typed records (built only for a store that wants them),
    and :attr:`rows` what a store's fast path derives its projection rows from.
    """

    def __init__(self, template: NewBelief, binding: StoreBinding | None, now: datetime) -> None:
        self.template = template
        self.binding = binding
        self.now = now
        self.now_text = _time_text(now)
        #: ``(belief_id, claim_id, evidence_id, statement, source, sensitivity, observed_at,
        #: store_id, content_hash)`` per record; ``observed_at`` None means ``now``.
        self.rows: list[
            tuple[str, str, str, str, str, Sensitivity, datetime | None, str | None, str | None]
        ] = []
        self._adopter: Adopter | None = None
        self._records: Records | None = None
        #: Ids drawn ahead, ``(belief, claim, evidence)`` per record (one urandom call per block).
        self._ids: list[tuple[str, str, str]] = []

    @classmethod
    def start(cls, adopter: Adopter, *, store: str, now: datetime, bind: bool) -> ImportBatch:
        """An empty batch adopted at ``now``; the template goes through the gate in full."""
        template = adopter.adopt("template", source=f"{store}:template", now=now)
        binding = None
        if bind:
            binding = StoreBinding(
                id=StoreBinding.key(store, template.belief.id),
                store=store,
                store_id="template",
                belief_id=template.belief.id,
                content_hash=content_hash("template"),
                state=BindingState.WRITTEN,
                detail="imported",
                updated_at=now,
            )
        batch = cls(template, binding, now)
        batch._adopter = adopter
        return batch

    def add(
        self,
        statement: str,
        *,
        source: str,
        sensitivity: Sensitivity = Sensitivity.INTERNAL,
        observed_at: datetime | None = None,
        store_id: str | None = None,
        digest: str | None = None,
    ) -> str:
        """Add one record (``statement`` already through
        :func:`firewall.model.content.statement_text`); returns its belief id.

        Values the template's models would not accept as they are go through the full
        :func:`firewall.gate.adoption.adopt` first, so they fail (or are normalized) exactly as
        there.
        """
        if (
            type(statement) is not str
            or not statement
            or type(source) is not str
            or type(sensitivity) is not Sensitivity
            or (observed_at is not None and not _plain_aware(observed_at))
        ):
            assert self._adopter is not None
            made = self._adopter.adopt(
                statement,
                source=source,
                now=self.now,
                sensitivity=sensitivity,
                observed_at=observed_at,
            )
            statement, sensitivity = made.belief.statement, made.belief.sensitivity
            observed_at = made.belief.observed_at
        if not self._ids:
            self._ids = list(
                zip(*(new_ids(p, _ID_BLOCK) for p in ("evi", "clm", "bel")), strict=True)
            )
        evidence_id, claim_id, belief_id = self._ids.pop()
        if self.binding is not None and digest is None:
            digest = content_hash(statement)
        self.rows.append(
            (
                belief_id,
                claim_id,
                evidence_id,
                statement,
                source,
                sensitivity,
                observed_at,
                store_id,
                digest,
            )
        )
        return belief_id

    def __len__(self) -> int:
        return len(self.rows)

    def payload(self) -> dict[str, Any]:
        """The compact form the event carries under :data:`IMPORTS`."""
        t = self.template
        now = self.now_text
        return {
            "at": now,
            "template": {
                "claim": t.claim.to_json_dict(),
                "evidence": t.evidence.to_json_dict(),
                "belief": t.belief.to_json_dict(),
                "binding": None if self.binding is None else self.binding.to_json_dict(),
            },
            "rows": [
                [
                    b,
                    c,
                    e,
                    text,
                    source,
                    sens.value,
                    None if observed is None else _time_text(observed),
                    sid,
                    digest,
                ]
                for b, c, e, text, source, sens, observed, sid, digest in self.rows
            ],
        }

    def records(self) -> Records:
        """The typed records (for stores without a fast path): copies of the template, built
        once (a batch is complete when its draft is committed)."""
        if self._records is None:
            self._records = self._build_records()
        return self._records

    def _build_records(self) -> Records:
        t = self.template
        now = self.now
        verified = None if t.belief.last_verified_at is None else now
        claims: list[Claim] = []
        evidence: list[EvidenceItem] = []
        beliefs: list[Belief] = []
        bindings: list[StoreBinding] = []
        for b, c, e, text, source, sens, observed, sid, digest in self.rows:
            seen = observed or now
            claims.append(
                t.claim.model_copy(
                    update={"id": c, "statement": text, "sensitivity": sens, "created_at": now}
                )
            )
            evidence.append(
                t.evidence.model_copy(
                    update={"id": e, "claim_id": c, "source": source, "observed_at": seen}
                )
            )
            beliefs.append(
                t.belief.model_copy(
                    update={
                        "id": b,
                        "claim_id": c,
                        "statement": text,
                        "sensitivity": sens,
                        "observed_at": seen,
                        "last_verified_at": verified,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            )
            if self.binding is not None:
                assert digest is not None
                bindings.append(
                    self.binding.model_copy(
                        update={
                            "id": StoreBinding.key(self.binding.store, b),
                            "store_id": sid,
                            "belief_id": b,
                            "content_hash": digest,
                            "updated_at": now,
                        }
                    )
                )
        return Records(
            claims=tuple(claims),
            evidence=tuple(evidence),
            beliefs=tuple(beliefs),
            bindings=tuple(bindings),
        )


#: The types of a compact row, as the records they become hold them (one validation call
#: checks every row of a batch: what differs between records; the template is validated whole).
_ROWS: TypeAdapter[
    list[tuple[str, str, str, str, str, Sensitivity, datetime | None, str | None, str | None]]
] = TypeAdapter(
    list[
        tuple[
            str,
            str,
            str,
            Annotated[str, Field(min_length=1)],
            str,
            Sensitivity,
            AwareDatetime | None,
            str | None,
            str | None,
        ]
    ]
)
_AT: TypeAdapter[datetime] = TypeAdapter(AwareDatetime)


def read_batch(imports: Mapping[str, Any]) -> ImportBatch:
    """The batch an import payload holds, validated without expanding it: the template's
    records are validated whole (as any record), each row's values by their types, at once.
    Its :meth:`ImportBatch.records` are then exactly what :func:`expand` and validating every
    document would give, at a fraction of the cost (rebuild, replay, log import).

    Raises ``ValueError``/``KeyError``/``TypeError`` (``ValidationError`` is a ``ValueError``)
    on a malformed batch, like :func:`expand`.
    """
    if not isinstance(imports, Mapping) or not isinstance(imports.get("template"), Mapping):
        raise ValueError("an import batch must be an object with a template object")
    template = imports["template"]
    binding_doc = template.get("binding")
    made = NewBelief(
        Claim.model_validate(template["claim"], strict=False),
        EvidenceItem.model_validate(template["evidence"], strict=False),
        Belief.model_validate(template["belief"], strict=False),
    )
    binding = (
        None if binding_doc is None else StoreBinding.model_validate(binding_doc, strict=False)
    )
    batch = ImportBatch(made, binding, _AT.validate_python(imports["at"], strict=False))
    if batch.now_text != imports["at"]:
        raise ValueError(f"an import batch's time is not in its canonical form: {imports['at']!r}")
    rows = imports["rows"]
    if not isinstance(rows, list):
        raise ValueError("an import batch's rows must be a list")
    batch.rows = _ROWS.validate_python(rows, strict=False)
    if binding is not None and any(row[8] is None for row in batch.rows):
        raise ValueError("a binding import batch names each record's content hash")
    return batch


def _time_text(moment: datetime) -> str:
    """A time as a record document writes it (what ``to_json_dict`` gives)."""
    from gnomon.firewall.model.chain import _json_datetime

    text = _json_datetime(moment)
    return text if isinstance(text, str) else iso(moment)


def _checked(imports: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The template documents of an import batch payload (claim, evidence, belief, binding or
    None), checked to be objects; raises ``ValueError`` on a malformed batch."""
    if not isinstance(imports, Mapping) or not isinstance(imports.get("template"), Mapping):
        raise ValueError("an import batch must be an object with a template object")
    template = imports["template"]
    claim_t, evidence_t, belief_t = template["claim"], template["evidence"], template["belief"]
    binding_t = template.get("binding")
    for doc in (claim_t, evidence_t, belief_t, binding_t or {}):
        if not isinstance(doc, Mapping):
            raise ValueError("an import batch template holds record objects")
    if not isinstance(imports["rows"], list):
        raise ValueError("an import batch's rows must be a list")
    return claim_t, evidence_t, belief_t, binding_t


def claim_doc(claim_t: Mapping[str, Any], at: str, row: list[Any]) -> dict[str, Any]:
    """The claim document of one compact row (``row`` in :data:`ROW_FIELDS` order)."""
    _b, c, _e, text, _source, sens, *_ = row
    return {**claim_t, "id": c, "statement": text, "sensitivity": sens, "created_at": at}


def evidence_doc(evidence_t: Mapping[str, Any], at: str, row: list[Any]) -> dict[str, Any]:
    """The evidence document of one compact row."""
    _b, c, e, _text, source, _sens, observed, *_ = row
    seen = at if observed is None else observed
    return {**evidence_t, "id": e, "claim_id": c, "source": source, "observed_at": seen}


def belief_doc(belief_t: Mapping[str, Any], at: str, row: list[Any]) -> dict[str, Any]:
    """The belief document of one compact row."""
    b, c, _e, text, _source, sens, observed, *_ = row
    return {
        **belief_t,
        "id": b,
        "claim_id": c,
        "statement": text,
        "sensitivity": sens,
        "observed_at": at if observed is None else observed,
        "last_verified_at": None if belief_t["last_verified_at"] is None else at,
        "created_at": at,
        "updated_at": at,
    }


def binding_doc(binding_t: Mapping[str, Any], at: str, row: list[Any]) -> dict[str, Any]:
    """The binding document of one compact row (a batch that binds)."""
    b, _c, _e, _text, _source, _sens, _observed, sid, digest = row
    return {
        **binding_t,
        "id": f"{binding_t['store']}:{b}",
        "store_id": sid,
        "belief_id": b,
        "content_hash": digest,
        "updated_at": at,
    }


def member_docs(imports: Mapping[str, Any], index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claim and evidence documents of row ``index`` of an import batch payload: what a
    store that keeps no claim or evidence row for batch members derives on read."""
    claim_t, evidence_t, _belief_t, _binding_t = _checked(imports)
    row = imports["rows"][index]
    at = imports["at"]
    return claim_doc(claim_t, at, row), evidence_doc(evidence_t, at, row)


def expand(imports: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The record documents of an import batch payload, as a schema-1 event would hold them:
    ``{"claims": [...], "evidence": [...], "beliefs": [...], "bindings": [...]}``.

    Raises ``KeyError``/``TypeError``/``ValueError`` on a malformed batch (callers turn that into
    a log integrity error); the documents are then validated as records by whoever reads them.
    """
    claim_t, evidence_t, belief_t, binding_t = _checked(imports)
    at = imports["at"]
    rows = imports["rows"]
    for row in rows:
        if len(row) != len(ROW_FIELDS):
            raise ValueError(f"an import batch row holds {len(ROW_FIELDS)} values")
    out = {
        "claims": [claim_doc(claim_t, at, row) for row in rows],
        "evidence": [evidence_doc(evidence_t, at, row) for row in rows],
        "beliefs": [belief_doc(belief_t, at, row) for row in rows],
    }
    if binding_t is not None and rows:
        out["bindings"] = [binding_doc(binding_t, at, row) for row in rows]
    return out


def record_docs(payload: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every record document an event payload holds: its ``records``, for an import batch the
    expanded rows, for a move batch the revisions it records (its belief versions are derived
    from the previous ones, :func:`firewall.log.moves.resolve_moves`)."""
    return docs_and_moves(payload)[0]


def docs_and_moves(
    payload: Mapping[str, Any],
) -> tuple[dict[str, list[dict[str, Any]]], list[BeliefMove] | None]:
    """:func:`record_docs` and the moves of the payload's move batch (None without one), the
    batch expanded once (:func:`firewall.log.moves.expand_moves`)."""
    imports = payload.get(IMPORTS)
    moves = payload.get(MOVES)
    records: dict[str, list[dict[str, Any]]] = payload.get("records") or {}
    parsed: list[BeliefMove] | None = None
    if moves is not None:
        from gnomon.firewall.log.moves import expand_moves

        parsed, derived = expand_moves(moves)
        records = {**records, "revisions": [*records.get("revisions", ()), *derived]}
    if imports is None:
        return records, parsed
    return {**records, **expand(imports)}, parsed


__all__ = [
    "IMPORTS",
    "ROW_FIELDS",
    "ImportBatch",
    "belief_doc",
    "binding_doc",
    "claim_doc",
    "docs_and_moves",
    "evidence_doc",
    "expand",
    "member_docs",
    "read_batch",
    "record_docs",
]
