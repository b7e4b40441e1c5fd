"""Replay a session under another ContextPolicy or another gate version.

For each ``recall.performed`` event of the session, :func:`replay` re-runs the recall's query
under policy X against the beliefs **as they were at that event** (as-of queries on the belief
history, at the event's time, with the event's project and user), and compares the result with
what the event says was actually returned: which recalls gain or lose which beliefs. For each
``decision.recorded`` event it checks every dependency, as it was when the decision was made,
against policy X: a decision whose dependency X would exclude is flagged, with X's reasons.

**Another gate version** (``gate_version``): the gate's adoption rule is pluggable by version
(:data:`firewall.gate.gate.ADOPTION_RULES`). Replay recomputes the *initial* states of every belief
the recalls and decisions touch under that version's rule, from the belief's origin label and the
class of its adoption evidence. What this means, honestly:

* only beliefs still in their adopted version at the replayed moment (``version == 1``) are
  re-adopted; a belief that a grant, a corroboration or a contradiction had already revised keeps
  its recorded states, because those moves were decided on evidence replay does not re-judge;
* beliefs re-adopted ``unverified`` lose their ``last_verified_at``, so freshness falls back to
  ``observed_at`` exactly as it would have;
* the policy is then evaluated in Python on the re-adopted versions (the store's indexed filter
  cannot see states that were never stored), over the text matches the store returns as of that
  moment (at most :data:`CANDIDATES`).

Ranking caveat: a replayed recall keeps the first ``k`` by the store's order today (BM25 uses the
corpus statistics of now, not of then), so when more than ``k`` beliefs qualify, a belief at the
boundary can appear as gained or lost for ranking reasons alone; such losses are labelled
``outranked``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gnomon.firewall.audit.erasure import is_erased_text
from gnomon.firewall.gate.gate import GATE_VERSION, AdoptionRule, adoption_rule
from gnomon.firewall.gate.policy import ContextPolicy, resolve
from gnomon.firewall.log.batch import record_docs
from gnomon.firewall.log.events import Event
from gnomon.firewall.model.chain import Belief, Decision
from gnomon.firewall.model.errors import InputError, UnknownIdError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import EvidenceQuality, TruthStatus
from gnomon.firewall.store.base import Store

#: How many text matches a gate-version replay evaluates per recall.
CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class RecallReplay:
    seq: int
    at: datetime
    query: str
    k: int
    recorded_policy: str | None
    actually_accepted: tuple[str, ...]
    actually_quoted: tuple[str, ...]
    accepted: tuple[str, ...]
    quoted: tuple[str, ...]
    gained: tuple[str, ...]
    lost: tuple[str, ...]
    #: For each lost belief: why policy X (under the gate replayed) excludes it.
    lost_reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Why this recall cannot be reproduced (its query, or beliefs it returned, were erased:
    #: :mod:`firewall.audit.erasure`), or ``None``: its outcome does not depend on erased text.
    unreproducible: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.gained or self.lost)


@dataclass(frozen=True, slots=True)
class DecisionRisk:
    """A dependency of a decision that policy X would exclude, as it was when decided."""

    decision_id: str
    summary: str
    belief_id: str
    at: datetime
    truth: str
    reasons: tuple[str, ...]
    #: Was the dependency accepted by one of the session's recalls as they really ran?
    was_accepted: bool


@dataclass(frozen=True, slots=True)
class ReplayResult:
    session_id: str
    policy: str
    policy_digest: str
    gate_version: str
    recorded_policies: tuple[str, ...]
    recorded_gate_versions: tuple[str, ...]
    recalls: tuple[RecallReplay, ...]
    decisions: tuple[DecisionRisk, ...]
    #: belief id -> (recorded truth, truth under the replayed gate), for re-adopted beliefs
    readopted: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.recalls) or bool(self.decisions)


class _Gate:
    """Re-adoption of unrevised beliefs under another gate version (identity for the live one)."""

    def __init__(self, store: Store, version: str) -> None:
        self.store = store
        self.version = version
        self.rule: AdoptionRule | None = None if version == GATE_VERSION else adoption_rule(version)
        self.readopted: dict[str, tuple[str, str]] = {}

    def apply(self, belief: Belief) -> Belief:
        if self.rule is None or belief.version != 1:
            return belief
        items = self.store.get_evidence(belief.claim_id).items
        quality = items[0].quality if items else EvidenceQuality.EXTERNAL_DOCUMENT
        decided = self.rule(belief.origin, quality)
        if (decided.truth, decided.retrieval) == (belief.truth_status, belief.retrieval_status):
            return belief
        self.readopted[belief.id] = (belief.truth_status.value, decided.truth.value)
        return belief.model_copy(
            update={
                "truth_status": decided.truth,
                "retrieval_status": decided.retrieval,
                "authority": decided.authority,
                "last_verified_at": belief.last_verified_at
                if decided.truth == TruthStatus.SUPPORTED
                else None,
            }
        )


def version_at(store: Store, belief_id: str, at: datetime) -> Belief | None:
    """The version of ``belief_id`` the system held at ``at`` (None: not yet recorded)."""
    held = None
    for version in store.belief_history(belief_id):
        if version.updated_at <= at:
            held = version
        else:
            break
    return held


def _moment(event: Event) -> datetime:
    return datetime.fromisoformat(event.at)


def replay(
    store: Store,
    session_id: str,
    policy: ContextPolicy | str,
    *,
    gate_version: str | None = None,
) -> ReplayResult:
    """Replay every recall and decision of ``session_id`` under ``policy`` (and a gate version).

    >>> from gnomon import firewall
    >>> wall = firewall.open("memory://")
    >>> with wall.session(project="p", actor="a") as s:
    ...     doc = s.observe(tool="read", content="Deploy with make ship",
    ...                     origin=firewall.Origin.external("web:x")).content[0]
    ...     _ = s.recall("deploy ship", policy="reference")
    ...     _ = s.decide("ship it", [doc.id], policy="reference")
    >>> result = replay(wall.store, s.id, "default")
    >>> result.recalls[0].actually_quoted == (doc.id,), result.recalls[0].quoted
    (True, ())
    >>> [(d.belief_id == doc.id, d.truth) for d in result.decisions]
    [(True, 'unverified')]
    """
    chosen = resolve(policy)
    if chosen.privileged:
        raise InputError(
            f"policy {chosen.name!r} is privileged: it admits everything, so a replay under it "
            "shows nothing",
            hint="replay under an ordinary policy (default, planner, reference or a .yaml file)",
        )
    events = store.session_events(session_id)
    if not events:
        raise UnknownIdError("session", session_id)
    gate = _Gate(store, gate_version or GATE_VERSION)
    recorded_policies: dict[str, None] = {}
    recorded_gates: dict[str, None] = {}
    recalls: list[RecallReplay] = []
    accepted_ever: set[str] = set()
    decisions: dict[str, tuple[Decision, datetime]] = {}
    for event in events:
        gate_seen = event.versions.get("gate")
        if gate_seen is not None:
            recorded_gates[str(gate_seen)] = None
        if gate.rule is not None and record_docs(event.payload):
            for b in event.records().beliefs:
                gate.apply(b)  # every belief the session adopted, touched by a recall or not
        if event.kind == "recall.performed":
            name = event.versions.get("policy")
            if name is not None:
                recorded_policies[str(name)] = None
            done = _replay_recall(store, chosen, gate, event)
            accepted_ever.update(done.actually_accepted)
            recalls.append(done)
        elif event.kind == "decision.recorded":
            for d in event.records().decisions:
                decisions.setdefault(d.id, (d, _moment(event)))
    risks = [
        risk
        for decision, at in decisions.values()
        for risk in _decision_risks(store, chosen, gate, decision, at, accepted_ever)
    ]
    return ReplayResult(
        session_id=session_id,
        policy=chosen.name,
        policy_digest=chosen.digest,
        gate_version=gate.version,
        recorded_policies=tuple(recorded_policies),
        recorded_gate_versions=tuple(recorded_gates),
        recalls=tuple(recalls),
        decisions=tuple(risks),
        readopted=dict(gate.readopted),
    )


def _replay_recall(store: Store, policy: ContextPolicy, gate: _Gate, event: Event) -> RecallReplay:
    data = event.payload
    at = _moment(event)
    query = str(data.get("query", ""))
    k = int(data.get("k", 10))
    actually_accepted = tuple(data.get("accepted", ()))
    actually_quoted = tuple(data.get("quoted", ()))
    project, user = event.project, event.user
    if gate.rule is None:
        accepted = store.find_beliefs_as_of(
            policy.accept_filter(text=query, project=project, user=user, now=at, limit=k), at
        )
        quote_where = policy.quote_filter(
            text=query, project=project, user=user, now=at, limit=policy.quote.max_items
        )
        taken = {b.id for b in accepted}
        quoted = (
            [b for b in store.find_beliefs_as_of(quote_where, at) if b.id not in taken]
            if quote_where is not None
            else []
        )
    else:
        candidates = [
            gate.apply(b)
            for b in store.find_beliefs_as_of(
                BeliefFilter(text=query, project=project, user=user, limit=CANDIDATES), at
            )
        ]
        accepted = [b for b in candidates if policy.admits(b, at)][:k]
        quoted = [b for b in candidates if policy.quotable(b, at)][: policy.quote.max_items]
    accepted_ids = tuple(b.id for b in accepted)
    gained = tuple(i for i in accepted_ids if i not in actually_accepted)
    lost = tuple(i for i in actually_accepted if i not in accepted_ids)
    reasons: dict[str, tuple[str, ...]] = {}
    for ident in lost:
        held = version_at(store, ident, at)
        if held is None:
            reasons[ident] = ("not in the belief history at that moment",)
            continue
        why = policy.rejection_reasons(gate.apply(held), at)
        reasons[ident] = tuple(str(r) for r in why) or ("outranked (k limit)",)
    erased = _erased(store, (*actually_accepted, *actually_quoted))
    for ident in lost:
        if ident in erased:
            reasons[ident] = ("erased: its text is gone",)
    return RecallReplay(
        seq=event.seq,
        at=at,
        query=query,
        k=k,
        recorded_policy=event.versions.get("policy"),
        actually_accepted=actually_accepted,
        actually_quoted=actually_quoted,
        accepted=accepted_ids,
        quoted=tuple(b.id for b in quoted),
        gained=gained,
        lost=lost,
        lost_reasons=reasons,
        unreproducible=_unreproducible(query, erased),
    )


def _erased(store: Store, ids: Sequence[str]) -> list[str]:
    """The beliefs of ``ids`` whose text was erased."""
    held = store.get_beliefs(list(dict.fromkeys(ids)))
    return [i for i, b in held.items() if is_erased_text(b.statement)]


def _unreproducible(query: str, erased: Sequence[str]) -> str | None:
    if "[erased on " in query:
        return "its query was erased"
    if erased:
        return f"it returned {len(erased)} erased belief(s): {', '.join(erased)}"
    return None


def _decision_risks(
    store: Store,
    policy: ContextPolicy,
    gate: _Gate,
    decision: Decision,
    at: datetime,
    accepted_ever: set[str],
) -> list[DecisionRisk]:
    out = []
    for ident in decision.depends_on:
        held = version_at(store, ident, at)
        if held is None:
            continue
        held = gate.apply(held)
        why = policy.rejection_reasons(held, at)
        if why:
            out.append(
                DecisionRisk(
                    decision_id=decision.id,
                    summary=decision.summary,
                    belief_id=ident,
                    at=at,
                    truth=held.truth_status.value,
                    reasons=tuple(str(r) for r in why),
                    was_accepted=ident in accepted_ever,
                )
            )
    return out


def replay_json(result: ReplayResult) -> dict[str, Any]:
    return {
        "session": result.session_id,
        "policy": result.policy,
        "policy_digest": result.policy_digest,
        "gate_version": result.gate_version,
        "recorded_policies": list(result.recorded_policies),
        "recorded_gate_versions": list(result.recorded_gate_versions),
        "changed": result.changed,
        "recalls": [
            {
                "seq": r.seq,
                "at": r.at.isoformat(),
                "query": r.query,
                "k": r.k,
                "recorded_policy": r.recorded_policy,
                "actually_accepted": list(r.actually_accepted),
                "actually_quoted": list(r.actually_quoted),
                "accepted": list(r.accepted),
                "quoted": list(r.quoted),
                "gained": list(r.gained),
                "lost": list(r.lost),
                "lost_reasons": {k: list(v) for k, v in r.lost_reasons.items()},
                "unreproducible": r.unreproducible,
            }
            for r in result.recalls
        ],
        "decisions_at_risk": [
            {
                "decision": d.decision_id,
                "summary": d.summary,
                "belief": d.belief_id,
                "at": d.at.isoformat(),
                "truth": d.truth,
                "reasons": list(d.reasons),
                "was_accepted": d.was_accepted,
            }
            for d in result.decisions
        ],
        "readopted": {k: {"recorded": a, "replayed": b} for k, (a, b) in result.readopted.items()},
    }


__all__ = [
    "CANDIDATES",
    "DecisionRisk",
    "RecallReplay",
    "ReplayResult",
    "replay",
    "replay_json",
    "version_at",
]
