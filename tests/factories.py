"""Small builders for chain records and event drafts, shared by every test module.

Each ``make_*`` returns a valid record with sensible defaults; pass keyword overrides for the
fields a test cares about::

    belief = make_belief(statement="deploys go through ArgoCD", truth_status=TruthStatus.SUPPORTED)
    store.commit([make_draft(records=make_records(beliefs=[belief]))])

Ids are fresh on every call (``firewall.model.ids.new_id``) unless given. Times default to ``T0``
(2025-01-01 UTC) so tests that compare times stay deterministic; use ``at(days=…)`` for offsets.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.model.chain import (
    Action,
    Belief,
    BindingState,
    Claim,
    Contradiction,
    Decision,
    EvidenceItem,
    Observation,
    Outcome,
    Revision,
    SessionInfo,
    StoreBinding,
)
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    ClaimKind,
    EvidenceQuality,
    EvidenceRelation,
    ExtractionMethod,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
PROJECT = "proj"


def at(**delta: float) -> datetime:
    """``T0`` shifted by a ``timedelta`` (``at(days=-3)``, ``at(hours=2)``)."""
    return T0 + timedelta(**delta)


def make_origin(kind: str = "tool", name: str = "test") -> Origin:
    factory = getattr(Origin, kind)
    origin: Origin = factory(name)
    return origin


def make_session(**overrides: Any) -> SessionInfo:
    fields: dict[str, Any] = {
        "id": new_id("ses"),
        "project": PROJECT,
        "actor": "agent",
        "started_at": T0,
    }
    fields.update(overrides)
    return SessionInfo(**fields)


def make_observation(**overrides: Any) -> Observation:
    fields: dict[str, Any] = {
        "id": new_id("obs"),
        "session_id": None,
        "project": PROJECT,
        "actor": "agent",
        "tool": "read_file",
        "invocation_id": "inv-1",
        "args": {"path": "README.md"},
        "captured_at": T0,
        "origin": make_origin("external", "file:README.md"),
        "blocks": ["the payment service uses stripe"],
        "block_hashes": ["0" * 64],
    }
    fields.update(overrides)
    return Observation(**fields)


def make_claim(**overrides: Any) -> Claim:
    fields: dict[str, Any] = {
        "id": new_id("clm"),
        "kind": ClaimKind.STATEMENT,
        "statement": "the payment service uses stripe",
        "extraction": ExtractionMethod.TOOL,
        "project": PROJECT,
        "origin": make_origin(),
        "created_at": T0,
    }
    fields.update(overrides)
    return Claim(**fields)


def make_evidence(**overrides: Any) -> EvidenceItem:
    fields: dict[str, Any] = {
        "id": new_id("evi"),
        "claim_id": new_id("clm"),
        "source": "test",
        "relation": EvidenceRelation.SUPPORTS,
        "quality": EvidenceQuality.TOOL_RESULT,
        "independence_group": "g1",
        "origin": make_origin(),
        "observed_at": T0,
    }
    fields.update(overrides)
    return EvidenceItem(**fields)


def make_belief(**overrides: Any) -> Belief:
    fields: dict[str, Any] = {
        "id": new_id("bel"),
        "claim_id": new_id("clm"),
        "kind": ClaimKind.STATEMENT,
        "statement": "the payment service uses stripe",
        "project": PROJECT,
        "authority": Authority.SYSTEM,
        "origin": make_origin(),
        "observed_at": T0,
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(overrides)
    return Belief(**fields)


def make_decision(**overrides: Any) -> Decision:
    fields: dict[str, Any] = {
        "id": new_id("dec"),
        "session_id": new_id("ses"),
        "summary": "charge the card through stripe",
        "depends_on": [],
        "created_at": T0,
    }
    fields.update(overrides)
    return Decision(**fields)


def make_action(**overrides: Any) -> Action:
    fields: dict[str, Any] = {
        "id": new_id("act"),
        "decision_id": new_id("dec"),
        "session_id": new_id("ses"),
        "name": "charge_card",
        "args": {"amount": 10},
        "created_at": T0,
    }
    fields.update(overrides)
    return Action(**fields)


def make_outcome(**overrides: Any) -> Outcome:
    fields: dict[str, Any] = {
        "id": new_id("out"),
        "action_id": new_id("act"),
        "session_id": new_id("ses"),
        "success": True,
        "summary": "charged",
        "created_at": T0,
    }
    fields.update(overrides)
    return Outcome(**fields)


def make_revision(**overrides: Any) -> Revision:
    fields: dict[str, Any] = {
        "id": new_id("rev"),
        "belief_id": new_id("bel"),
        "axis": Axis.TRUTH,
        "from_state": "unverified",
        "to_state": "supported",
        "authority": Authority.POLICY,
        "reason": "independent tool evidence",
        "created_at": T0,
    }
    fields.update(overrides)
    return Revision(**fields)


def make_contradiction(**overrides: Any) -> Contradiction:
    fields: dict[str, Any] = {
        "id": new_id("con"),
        "belief_ids": [new_id("bel"), new_id("bel")],
        "reason": "same subject and predicate, different values",
        "detected_at": T0,
    }
    fields.update(overrides)
    return Contradiction(**fields)


def make_binding(**overrides: Any) -> StoreBinding:
    """A written binding in store ``"mem0"``; ``id`` follows ``store`` and ``belief_id``."""
    fields: dict[str, Any] = {
        "store": "mem0",
        "store_id": "m0-" + new_id("obs")[4:],
        "belief_id": new_id("bel"),
        "content_hash": "sha256:" + "ab" * 32,
        "state": BindingState.WRITTEN,
        "updated_at": T0,
    }
    fields.update(overrides)
    fields.setdefault("id", StoreBinding.key(fields["store"], fields["belief_id"]))
    return StoreBinding(**fields)


def make_records(**lists: Iterable[Any]) -> Records:
    """``Records`` from keyword lists: ``make_records(beliefs=[b1, b2], claims=[c])``."""
    return Records(**{name: tuple(items) for name, items in lists.items()})


def make_draft(records: Records | None = None, **overrides: Any) -> EventDraft:
    """An event draft; ``records`` defaults to none (a bare event such as a session note)."""
    fields: dict[str, Any] = {
        "kind": "test.event",
        "actor": "agent",
        "at": T0,
        "project": PROJECT,
        "records": records if records is not None else Records(),
    }
    fields.update(overrides)
    return EventDraft(**fields)


def belief_draft(*beliefs: Belief, **overrides: Any) -> EventDraft:
    """One draft writing the given beliefs (the common case in store and recall tests)."""
    return make_draft(make_records(beliefs=beliefs), kind="belief.upsert", **overrides)


__all__ = [
    "PROJECT",
    "T0",
    "at",
    "belief_draft",
    "make_action",
    "make_belief",
    "make_binding",
    "make_claim",
    "make_contradiction",
    "make_decision",
    "make_draft",
    "make_evidence",
    "make_observation",
    "make_origin",
    "make_outcome",
    "make_records",
    "make_revision",
    "make_session",
]
