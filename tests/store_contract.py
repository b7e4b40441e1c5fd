"""The one contract every store backend passes.

A backend's test module subclasses :class:`StoreContract` and implements :meth:`make_store`
(and :meth:`tamper_body`, the backend-specific way to corrupt one stored event)::

    class TestMemoryStore(StoreContract):
        def make_store(self, tmp_path: Path) -> Store:
            return MemoryStore()

:func:`reference_find` is the plain-Python meaning of a :class:`BeliefFilter`; the property test
checks every backend against it.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gnomon.firewall.log.events import GENESIS_HASH
from gnomon.firewall.model.chain import Belief, BindingState
from gnomon.firewall.model.errors import InputError, LogIntegrityError, StoreError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    FreshnessStatus,
    RetrievalStatus,
    Scope,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)
from gnomon.firewall.model.text import query_terms, tokens
from gnomon.firewall.store.base import Store
from tests.erasure_contract import ErasureContract
from tests.factories import (
    T0,
    at,
    belief_draft,
    make_action,
    make_belief,
    make_binding,
    make_claim,
    make_contradiction,
    make_decision,
    make_draft,
    make_evidence,
    make_observation,
    make_outcome,
    make_records,
    make_revision,
    make_session,
)
from tests.log_contract import LogContract

# -- the reference semantics of a BeliefFilter -------------------------------------------------


def reference_matches(belief: Belief, where: BeliefFilter) -> bool:
    """Does ``belief`` satisfy every condition of ``where``? (paging ignored)"""
    if where.text is not None:
        words = set(tokens(belief.statement))
        if not any(term in words for term in query_terms(where.text)):
            return False
    for wanted, actual in (
        (where.truth, belief.truth_status),
        (where.retrieval, belief.retrieval_status),
        (where.security, belief.security_status),
        (where.freshness, belief.freshness_status),
    ):
        if wanted is not None and actual not in wanted:
            return False
    if where.max_sensitivity is not None and belief.sensitivity.rank > where.max_sensitivity.rank:
        return False
    anchor = belief.last_verified_at or belief.observed_at
    if where.anchor_after is not None and anchor < where.anchor_after:
        return False
    if (
        where.not_expired_at is not None
        and belief.expires_at is not None
        and belief.expires_at <= where.not_expired_at
    ):
        return False
    if (
        where.project is not None
        and belief.project != where.project
        and belief.scope != Scope.GLOBAL
    ):
        return False
    if where.user is not None and belief.scope == Scope.USER and belief.user != where.user:
        return False
    if where.subject is not None and belief.subject != where.subject:
        return False
    if where.subject_prefix is not None and not (belief.subject or "").startswith(
        where.subject_prefix
    ):
        return False
    if where.predicate is not None and belief.predicate != where.predicate:
        return False
    if where.session_id is not None and belief.session_id != where.session_id:
        return False
    return belief.id not in where.exclude_ids


def reference_find(beliefs: list[Belief], where: BeliefFilter) -> list[Belief]:
    """Matching beliefs; without text, in the contract's order (observed_at desc, then id)."""
    found = [b for b in beliefs if reference_matches(b, where)]
    found.sort(key=lambda b: b.id)
    found.sort(key=lambda b: b.observed_at, reverse=True)
    if where.text is not None:
        return found  # relevance order is the backend's; callers compare sets
    return found[where.offset : where.offset + where.limit]


def ids(beliefs: list[Belief]) -> list[str]:
    return [b.id for b in beliefs]


# -- a fixed corpus for the per-field filter tests ---------------------------------------------

CORPUS: dict[str, dict[str, Any]] = {
    "plain": {},
    "supported": {
        "truth_status": TruthStatus.SUPPORTED,
        "retrieval_status": RetrievalStatus.NORMAL,
    },
    "contradicted": {"truth_status": TruthStatus.CONTRADICTED},
    "hidden": {"retrieval_status": RetrievalStatus.HIDDEN},
    "quarantined": {"security_status": SecurityStatus.QUARANTINED},
    "stale": {"freshness_status": FreshnessStatus.STALE},
    "secret": {"sensitivity": Sensitivity.SECRET},
    "public": {"sensitivity": Sensitivity.PUBLIC},
    "old": {"observed_at": at(days=-100)},
    "reverified": {"observed_at": at(days=-100), "last_verified_at": at(days=-1)},
    "expired": {"expires_at": at(days=-1)},
    "expiring": {"expires_at": at(days=10)},
    "other_project": {"project": "other"},
    "global": {"project": "other", "scope": Scope.GLOBAL},
    "alice_only": {"scope": Scope.USER, "user": "alice"},
    "bob_only": {"scope": Scope.USER, "user": "bob"},
    "subject": {"subject": "payments", "predicate": "provider"},
    "subject_other_pred": {"subject": "payments", "predicate": "owner"},
    "session": {"session_id": "ses_one"},
}

ALL = frozenset(CORPUS)
USER_SCOPED = {"alice_only", "bob_only"}

FILTER_CASES: dict[str, tuple[dict[str, Any], set[str]]] = {
    "truth": ({"truth": frozenset({TruthStatus.SUPPORTED})}, {"supported"}),
    "truth_two": (
        {"truth": frozenset({TruthStatus.SUPPORTED, TruthStatus.CONTRADICTED})},
        {"supported", "contradicted"},
    ),
    "retrieval": ({"retrieval": frozenset({RetrievalStatus.HIDDEN})}, {"hidden"}),
    "security": (
        {"security": frozenset({SecurityStatus.CLEAN})},
        set(ALL - {"quarantined"}),
    ),
    "freshness": ({"freshness": frozenset({FreshnessStatus.STALE})}, {"stale"}),
    "empty_set": ({"truth": frozenset()}, set()),
    "max_sensitivity": (
        {"max_sensitivity": Sensitivity.INTERNAL},
        set(ALL - {"secret"}),
    ),
    "max_sensitivity_public": ({"max_sensitivity": Sensitivity.PUBLIC}, {"public"}),
    "anchor_after": ({"anchor_after": at(days=-30)}, set(ALL - {"old"})),
    "anchor_exact": ({"anchor_after": at(days=-1)}, set(ALL - {"old"})),
    "not_expired_at": ({"not_expired_at": T0}, set(ALL - {"expired"})),
    "not_expired_later": ({"not_expired_at": at(days=10)}, set(ALL - {"expired", "expiring"})),
    "project": ({"project": "other"}, {"other_project", "global"}),
    "project_default": ({"project": "proj"}, set(ALL - {"other_project"})),
    "user": ({"user": "alice"}, set(ALL - {"bob_only"})),
    "subject": ({"subject": "payments"}, {"subject", "subject_other_pred"}),
    "subject_predicate": ({"subject": "payments", "predicate": "provider"}, {"subject"}),
    "predicate": ({"predicate": "owner"}, {"subject_other_pred"}),
    "session": ({"session_id": "ses_one"}, {"session"}),
    "combined": (
        {
            "security": frozenset({SecurityStatus.CLEAN}),
            "max_sensitivity": Sensitivity.CONFIDENTIAL,
            "anchor_after": at(days=-30),
            "not_expired_at": T0,
            "project": "other",
            "user": "alice",
        },
        {"other_project", "global"},
    ),
    "combined_user": (
        {"project": "proj", "user": "bob", "max_sensitivity": Sensitivity.INTERNAL},
        set(ALL - {"other_project", "alice_only", "secret"}),
    ),
}


class StoreContract(LogContract, ErasureContract, ABC):
    """Every test a store backend must pass. Subclasses provide :meth:`make_store`."""

    @abstractmethod
    def make_store(self, tmp_path: Path) -> Store:
        """A new, empty store (``tmp_path`` is a fresh directory for file-based backends)."""

    @abstractmethod
    def tamper_body(self, store: Store, seq: int, body: bytes) -> None:
        """Overwrite the stored body of event ``seq`` behind the store's back."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = self.make_store(tmp_path)
        try:
            yield store
        finally:
            store.close()

    @pytest.fixture
    def corpus(self, store: Store) -> dict[str, Belief]:
        beliefs = {
            name: make_belief(
                **{"id": f"bel_{i:03d}_{name}", "observed_at": at(minutes=-i), **fields}
            )
            for i, (name, fields) in enumerate(CORPUS.items())
        }
        store.commit([belief_draft(*beliefs.values())])
        return beliefs

    # -- the log ----------------------------------------------------------------------------

    def test_empty_store(self, store: Store) -> None:
        assert store.head() == (0, GENESIS_HASH)
        assert list(store.events()) == []
        report = store.verify()
        assert report.ok and report.events == 0 and report.head_seq == 0

    def test_commit_assigns_gap_free_seq(self, store: Store) -> None:
        first = store.commit([make_draft(), make_draft(), make_draft()])
        second = store.commit([make_draft(), make_draft()])
        assert store.commit([]) == []
        assert [e.seq for e in first + second] == [1, 2, 3, 4, 5]
        assert store.head() == (5, second[-1].hash)
        assert [e.seq for e in store.events()] == [1, 2, 3, 4, 5]
        assert [e.seq for e in store.events(after=2, limit=2)] == [3, 4]
        assert [e.seq for e in store.events(after=5)] == []
        assert first[1].prev_hash == first[0].hash

    def test_events_read_across_pages(self, store: Store) -> None:
        # More than two of the SQL backends' 1000-event pages, with a partial last one.
        store.commit([make_draft() for _ in range(2345)])
        assert [e.seq for e in store.events(after=10, limit=2100)] == list(range(11, 2111))
        assert [row[0] for row in store.chain_rows(after=1500)] == list(range(1501, 2346))
        assert [e.seq for e in store.events(after=999)][-1] == 2345

    def test_events_round_trip(self, store: Store) -> None:
        belief = make_belief()
        claim = make_claim(id=belief.claim_id)
        draft = make_draft(
            make_records(claims=[claim], beliefs=[belief]),
            kind="belief.created",
            actor="coder",
            session_id="ses_x",
            user="alice",
            versions={"gnomon": "0.1.0"},
            data={"note": "héllo", "n": 3},
        )
        (sealed,) = store.commit([draft])
        (loaded,) = list(store.events())
        assert loaded == sealed
        assert loaded.kind == "belief.created"
        assert loaded.actor == "coder"
        assert loaded.session_id == "ses_x"
        assert loaded.user == "alice"
        assert loaded.project == "proj"
        assert loaded.versions == {"gnomon": "0.1.0"}
        assert loaded.payload["note"] == "héllo"
        assert loaded.records() == draft.records
        assert [row[0] for row in store.chain_rows()] == [1]

    def test_verify_ok_and_detects_tampered_body(self, store: Store) -> None:
        store.commit([make_draft(data={"i": i}) for i in range(4)])
        report = store.verify()
        assert report.ok and report.events == 4 and report.head_seq == 4
        original = next(e for e in store.events() if e.seq == 2).body
        self.tamper_body(store, 2, original.replace(b'"i":1', b'"i":7'))
        report = store.verify()
        assert not report.ok
        assert report.first_bad_seq == 2
        with pytest.raises(LogIntegrityError) as err:
            report.raise_for_problem()
        assert err.value.seq == 2

    def test_a_commit_pinned_to_a_head_lands_only_on_that_head(self, store: Store) -> None:
        # Eight threads read the same head and race to commit on it: exactly one lands; the
        # others get None and write nothing (what a review approval relies on).
        store.commit([make_draft()])
        head = store.head()[0]
        won: list[int] = []
        barrier = threading.Barrier(8)

        def worker() -> None:
            barrier.wait()
            events = store.commit_if_head([make_draft(kind="review.approved")], head)
            if events is not None:
                won.extend(e.seq for e in events)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert won == [head + 1]
        assert [e.kind for e in store.events(after=head)] == ["review.approved"]
        assert store.commit_if_head([make_draft()], head) is None, "a stale head never lands"
        assert store.head()[0] == head + 1 and store.verify().ok
        landed = store.commit_if_head([make_draft(), make_draft()], head + 1)
        assert landed is not None and [e.seq for e in landed] == [head + 2, head + 3]

    def test_concurrent_threads_keep_one_chain(self, store: Store) -> None:
        def worker() -> None:
            for _ in range(25):
                store.commit([make_draft(), make_draft()])

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [e.seq for e in store.events()] == list(range(1, 201))
        assert store.verify().ok

    def test_an_execution_is_claimed_once_across_racing_threads(self, store: Store) -> None:
        # Eight threads race to claim one request: exactly one gets its event committed.
        won: list[int] = []
        barrier = threading.Barrier(8)

        def worker() -> None:
            barrier.wait()
            events = store.claim_execution(
                "req_race", [make_draft(kind="action.executing", data={"request_id": "req_race"})]
            )
            if events is not None:
                won.append(events[-1].seq)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1
        assert [e.kind for e in store.events()] == ["action.executing"]
        again = make_draft(kind="action.executing", data={"request_id": "req_race"})
        assert store.claim_execution("req_race", [again]) is None
        other = make_draft(kind="action.executing", data={"request_id": "req_other"})
        assert store.claim_execution("req_other", [other]) is not None
        assert store.verify().ok

    def test_a_claim_commits_several_drafts_in_one_transaction(self, store: Store) -> None:
        # The kernel folds an allowed action's proposal into its execution claim: both events
        # are written with the claim, or (a lost race, a failing draft) neither is.
        def drafts(request_id: str, *extra: Any) -> list[Any]:
            data = {"request_id": request_id}
            return [
                make_draft(kind="action.proposed", data=data),
                *extra,
                make_draft(kind="action.executing", data=data),
            ]

        events = store.claim_execution("req_two", drafts("req_two"))
        assert events is not None
        assert [(e.seq, e.kind) for e in events] == [
            (1, "action.proposed"),
            (2, "action.executing"),
        ]
        assert store.claim_execution("req_two", drafts("req_two")) is None
        assert store.head()[0] == 2
        # a draft that cannot be stored rolls the whole claim back: the request stays claimable
        bad = make_draft(data={"unserializable": object()})
        with pytest.raises(StoreError):
            store.claim_execution("req_bad", drafts("req_bad", bad))
        assert store.head()[0] == 2
        again = store.claim_execution("req_bad", drafts("req_bad"))
        assert again is not None and [e.seq for e in again] == [3, 4]
        with pytest.raises(InputError):
            store.claim_execution("req_none", [])
        assert store.claim_execution("req_none", drafts("req_none")) is not None
        assert store.verify().ok

    # -- projections ------------------------------------------------------------------------

    def test_every_record_type_round_trips(self, store: Store) -> None:
        session = make_session(user="alice", model_id="m1")
        observation = make_observation(session_id=session.id)
        claim = make_claim(observation_ids=[observation.id], session_id=session.id)
        evidence = [make_evidence(claim_id=claim.id), make_evidence(claim_id=claim.id)]
        belief = make_belief(claim_id=claim.id, expires_at=at(days=3), contradicts=["bel_x"])
        decision = make_decision(
            session_id=session.id,
            depends_on=[belief.id],
            dependency_truth={belief.id: TruthStatus.SUPPORTED},
        )
        action = make_action(decision_id=decision.id, session_id=session.id)
        outcome = make_outcome(action_id=action.id, session_id=session.id)
        revision = make_revision(belief_id=belief.id)
        contradiction = make_contradiction(belief_ids=[belief.id, "bel_other"])
        store.commit(
            [
                make_draft(make_records(sessions=[session], observations=[observation])),
                make_draft(make_records(claims=[claim], evidence=evidence, beliefs=[belief])),
                make_draft(
                    make_records(
                        decisions=[decision],
                        actions=[action],
                        outcomes=[outcome],
                        revisions=[revision],
                        contradictions=[contradiction],
                    )
                ),
            ]
        )
        assert store.get_session(session.id) == session
        assert store.get_observation(observation.id) == observation
        assert store.get_claim(claim.id) == claim
        found = store.get_evidence(claim.id)
        assert found.claim_id == claim.id and found.items == evidence
        assert store.get_belief(belief.id) == belief
        assert store.get_decision(decision.id) == decision
        assert store.get_action(action.id) == action
        assert store.decisions_depending_on(belief.id) == [decision]
        assert store.revisions_for(belief.id) == [revision]
        assert store.contradictions_for([belief.id]) == [contradiction]
        # misses are None / empty, never errors
        assert store.get_session("ses_missing") is None
        assert store.get_observation("obs_missing") is None
        assert store.get_claim("clm_missing") is None
        assert store.get_evidence("clm_missing").items == []
        assert store.get_belief("bel_missing") is None
        assert store.get_decision("dec_missing") is None
        assert store.get_action("act_missing") is None
        assert store.decisions_depending_on("bel_missing") == []
        assert store.revisions_for("bel_missing") == []
        assert store.contradictions_for([]) == []

    def test_get_beliefs_returns_only_existing(self, store: Store) -> None:
        beliefs = [make_belief() for _ in range(3)]
        store.commit([belief_draft(*beliefs)])
        wanted = [beliefs[2].id, "bel_missing", beliefs[0].id]
        got = store.get_beliefs(wanted)
        assert got == {beliefs[2].id: beliefs[2], beliefs[0].id: beliefs[0]}
        assert store.get_beliefs([]) == {}

    def test_beliefs_with_origin_finds_every_derived_current_version(self, store: Store) -> None:
        from gnomon.firewall.model.origin import Origin

        hostile = Origin.external('file:"odd\\name".md')
        (hostile_id,) = hostile.origin_ids
        derived = Origin.join(hostile, Origin.agent("coder"))
        tainted = [make_belief(origin=hostile) for _ in range(3)] + [make_belief(origin=derived)]
        # an id that merely contains the hostile id as a substring is not derived from it
        near = make_belief(origin=Origin.external('file:"odd\\name".md.bak'))
        store.commit([belief_draft(*tainted, near, make_belief())])
        moved = tainted[0].model_copy(update={"statement": "edited", "version": 2})
        store.commit([belief_draft(moved)])
        got = store.beliefs_with_origin(hostile_id)
        assert [b.id for b in got] == sorted(b.id for b in tainted)
        assert next(b for b in got if b.id == moved.id) == moved
        assert store.beliefs_with_origin("external:file:nothing") == []

    def test_decay_candidates_pages_what_is_due(self, store: Store) -> None:
        now = at(days=40)
        old = make_belief(observed_at=T0)
        verified = make_belief(observed_at=T0, last_verified_at=at(days=35))
        expiring = make_belief(observed_at=at(days=39), expires_at=at(days=39, hours=12))
        gone = make_belief(expires_at=at(days=1), freshness_status=FreshnessStatus.EXPIRED)
        stale = make_belief(observed_at=T0, freshness_status=FreshnessStatus.STALE)
        store.commit([belief_draft(old, verified, expiring, gone, stale)])
        cutoff = at(days=10)
        due = sorted([old.id, expiring.id])
        assert [b.id for b in store.decay_candidates(stale_before=cutoff, now=now)] == due
        first = store.decay_candidates(stale_before=cutoff, now=now, limit=1)
        rest = store.decay_candidates(stale_before=cutoff, now=now, after=first[0].id)
        assert [b.id for b in first + rest] == due

    def test_belief_upsert_replaces_old_version(self, store: Store) -> None:
        v1 = make_belief(statement="deploys use jenkins")
        store.commit([belief_draft(v1)])
        v2 = v1.model_copy(
            update={
                "statement": "deploys use argo",
                "truth_status": TruthStatus.SUPPORTED,
                "version": 2,
                "updated_at": at(hours=1),
            }
        )
        store.commit([belief_draft(v2)])
        assert store.get_belief(v1.id) == v2
        everything = BeliefFilter(limit=100)
        assert store.count_beliefs(everything) == 1
        assert ids(store.find_beliefs(BeliefFilter(text="argo"))) == [v1.id]
        assert store.find_beliefs(BeliefFilter(text="jenkins")) == []
        assert store.find_beliefs(BeliefFilter(truth=frozenset({TruthStatus.UNVERIFIED}))) == []

    def test_same_record_twice_in_one_commit_keeps_last(self, store: Store) -> None:
        v1 = make_belief(statement="alpha")
        v2 = v1.model_copy(update={"statement": "beta", "version": 2})
        decision = make_decision(depends_on=["bel_a"])
        decision2 = decision.model_copy(update={"depends_on": ["bel_b"]})
        store.commit(
            [
                belief_draft(v1),
                make_draft(make_records(decisions=[decision])),
                belief_draft(v2),
                make_draft(make_records(decisions=[decision2])),
            ]
        )
        assert store.get_belief(v1.id) == v2
        assert store.find_beliefs(BeliefFilter(text="alpha")) == []
        assert store.decisions_depending_on("bel_a") == []
        assert store.decisions_depending_on("bel_b") == [decision2]

    def test_evidence_is_grouped_by_claim_in_write_order(self, store: Store) -> None:
        first = [make_evidence(claim_id="clm_1", source=f"s{i}") for i in range(3)]
        other = make_evidence(claim_id="clm_2")
        store.commit([make_draft(make_records(evidence=[first[0], other, first[1]]))])
        store.commit([make_draft(make_records(evidence=[first[2]]))])
        assert store.get_evidence("clm_1").items == first
        assert store.get_evidence("clm_2").items == [other]

    def test_decisions_depending_on(self, store: Store) -> None:
        d1 = make_decision(depends_on=["bel_a", "bel_b"], created_at=at(minutes=2))
        d2 = make_decision(depends_on=["bel_a"], created_at=at(minutes=1))
        d3 = make_decision(depends_on=["bel_c"])
        store.commit([make_draft(make_records(decisions=[d1, d2, d3]))])
        assert store.decisions_depending_on("bel_a") == [d2, d1]
        assert store.decisions_depending_on("bel_b") == [d1]
        # a new version of d1 that no longer cites bel_b drops out of its index
        d1b = d1.model_copy(update={"depends_on": ["bel_a"]})
        store.commit([make_draft(make_records(decisions=[d1b]))])
        assert store.decisions_depending_on("bel_b") == []
        assert store.decisions_depending_on("bel_a") == [d2, d1b]

    def test_revisions_oldest_first(self, store: Store) -> None:
        late = make_revision(belief_id="bel_a", created_at=at(hours=2))
        early = make_revision(belief_id="bel_a", created_at=at(hours=1))
        same_a = make_revision(belief_id="bel_a", created_at=at(hours=3), reason="first")
        same_b = make_revision(belief_id="bel_a", created_at=at(hours=3), reason="second")
        other = make_revision(belief_id="bel_b")
        store.commit([make_draft(make_records(revisions=[late, early, other]))])
        store.commit(
            [
                make_draft(make_records(revisions=[same_a])),
                make_draft(make_records(revisions=[same_b])),
            ]
        )
        assert store.revisions_for("bel_a") == [early, late, same_a, same_b]
        assert store.revisions_for("bel_b") == [other]

    def test_revisions_by_grant(self, store: Store) -> None:
        """How a single-use grant is known to be spent: by the store, after a rebuild too."""
        late = make_revision(belief_id="bel_a", grant_id="grt_1", created_at=at(hours=2))
        early = make_revision(belief_id="bel_b", grant_id="grt_1", created_at=at(hours=1))
        other = make_revision(belief_id="bel_a", grant_id="grt_2")
        none = make_revision(belief_id="bel_c")
        store.commit([make_draft(make_records(revisions=[late, other, none]))])
        store.commit([make_draft(make_records(revisions=[early]))])
        assert store.revisions_by_grant("grt_1") == [early, late]
        assert store.revisions_by_grant("grt_2") == [other]
        assert store.revisions_by_grant("grt_unused") == []
        store.rebuild_projections()
        assert store.revisions_by_grant("grt_1") == [early, late]

    def test_contradictions_for(self, store: Store) -> None:
        c1 = make_contradiction(belief_ids=["bel_a", "bel_b"], detected_at=at(minutes=1))
        c2 = make_contradiction(belief_ids=["bel_b", "bel_c"], detected_at=at(minutes=2))
        c3 = make_contradiction(belief_ids=["bel_d", "bel_e"])
        store.commit([make_draft(make_records(contradictions=[c1, c2, c3]))])
        assert store.contradictions_for(["bel_a"]) == [c1]
        assert store.contradictions_for(["bel_b"]) == [c1, c2]
        assert store.contradictions_for(["bel_a", "bel_c", "bel_b"]) == [c1, c2]
        assert store.contradictions_for(["bel_z"]) == []

    # -- find_beliefs -----------------------------------------------------------------------

    @pytest.mark.parametrize("case", sorted(FILTER_CASES))
    def test_filter_field(self, store: Store, corpus: dict[str, Belief], case: str) -> None:
        conditions, expected = FILTER_CASES[case]
        where = BeliefFilter(limit=100, **conditions)
        found = store.find_beliefs(where)
        assert {n for n, b in corpus.items() if b in found} == expected
        assert found == reference_find(list(corpus.values()), where)
        assert store.count_beliefs(where) == len(expected)

    def test_no_filter_orders_by_observed_at_then_id(self, store: Store) -> None:
        a = make_belief(id="bel_a", observed_at=at(days=-1))
        b = make_belief(id="bel_b", observed_at=T0)
        c = make_belief(id="bel_c", observed_at=T0)
        store.commit([belief_draft(a, c, b)])
        assert ids(store.find_beliefs(BeliefFilter())) == ["bel_b", "bel_c", "bel_a"]

    def test_moving_observed_at_keeps_one_entry(self, store: Store) -> None:
        belief = make_belief(id="bel_moving", observed_at=at(days=-1))
        other = make_belief(id="bel_other", observed_at=at(hours=-12))
        store.commit([belief_draft(belief, other)])
        for days in (1, -1, 1):
            moved = belief.model_copy(update={"observed_at": at(days=days)})
            store.commit([belief_draft(moved)])
            expected = ["bel_moving", "bel_other"] if days > 0 else ["bel_other", "bel_moving"]
            assert ids(store.find_beliefs(BeliefFilter())) == expected
        assert store.count_beliefs(BeliefFilter()) == 2

    def test_exclude_ids_limit_offset(self, store: Store, corpus: dict[str, Belief]) -> None:
        everything = store.find_beliefs(BeliefFilter(limit=100))
        assert len(everything) == len(corpus)
        assert store.find_beliefs(BeliefFilter(limit=3)) == everything[:3]
        assert store.find_beliefs(BeliefFilter(limit=4, offset=5)) == everything[5:9]
        assert store.find_beliefs(BeliefFilter(limit=0)) == []
        assert store.find_beliefs(BeliefFilter(offset=100)) == []
        skip = frozenset({everything[0].id, everything[3].id})
        rest = store.find_beliefs(BeliefFilter(limit=100, exclude_ids=skip))
        assert rest == [b for b in everything if b.id not in skip]
        assert store.count_beliefs(BeliefFilter(limit=1, offset=3, exclude_ids=skip)) == len(rest)

    def test_text_matches_any_term(self, store: Store) -> None:
        pay = make_belief(statement="Payments are processed by Stripe")
        deploy = make_belief(statement="Deploys go through ArgoCD")
        other = make_belief(statement="The office closes at six")
        store.commit([belief_draft(pay, deploy, other)])
        found = store.find_beliefs(BeliefFilter(text="stripe argocd"))
        assert {b.id for b in found} == {pay.id, deploy.id}
        assert store.count_beliefs(BeliefFilter(text="stripe argocd")) == 2
        assert store.find_beliefs(BeliefFilter(text="kubernetes")) == []
        assert store.find_beliefs(BeliefFilter(text="!!! ???")) == []

    def test_text_is_case_and_diacritic_insensitive(self, store: Store) -> None:
        cafe = make_belief(statement="The CAFÉ on Élysée street takes cards")
        store.commit([belief_draft(cafe)])
        for query in ("cafe", "Café", "ELYSEE", "élysée cards"):
            assert ids(store.find_beliefs(BeliefFilter(text=query))) == [cafe.id], query

    def test_text_ranks_dense_short_matches_first(self, store: Store) -> None:
        dense = make_belief(id="bel_z_dense", statement="stripe stripe stripe billing")
        sparse = make_belief(
            id="bel_a_sparse",
            statement="our infrastructure runs many services in several regions and one of "
            "those services talks to stripe for billing reconciliation every night",
        )
        fillers = [make_belief(statement=f"unrelated note number {i}") for i in range(6)]
        store.commit([belief_draft(sparse, dense, *fillers)])
        assert ids(store.find_beliefs(BeliefFilter(text="stripe"))) == [dense.id, sparse.id]
        # a rare term outweighs a common one
        rare = store.find_beliefs(BeliefFilter(text="reconciliation note"))
        assert rare[0].id == sparse.id

    def test_text_ignores_stop_word_noise(self, store: Store) -> None:
        noise = make_belief(statement="it is what it is and that is how it was")
        fact = make_belief(statement="the deploy key rotates monthly")
        store.commit([belief_draft(noise, fact)])
        found = store.find_beliefs(BeliefFilter(text="how is the deploy key rotated?"))
        assert ids(found) == [fact.id]

    def test_text_with_filters(self, store: Store, corpus: dict[str, Belief]) -> None:
        where = BeliefFilter(
            text="stripe",
            limit=100,
            security=frozenset({SecurityStatus.CLEAN}),
            retrieval=frozenset({RetrievalStatus.NORMAL, RetrievalStatus.RESTRICTED}),
            max_sensitivity=Sensitivity.INTERNAL,
            project="other",
        )
        found = store.find_beliefs(where)
        assert {b.id for b in found} == {b.id for b in reference_find(list(corpus.values()), where)}
        assert {n for n, b in corpus.items() if b in found} == {"other_project", "global"}
        assert store.count_beliefs(where) == 2
        # identical statements tie on relevance and fall back to id order
        tied = store.find_beliefs(BeliefFilter(text="stripe", limit=100))
        assert ids(tied) == sorted(ids(tied))

    # -- store bindings ---------------------------------------------------------------------

    def test_bindings_round_trip(self, store: Store) -> None:
        mem0 = make_binding(store="mem0", store_id="m-1", belief_id="bel_a")
        letta = make_binding(store="letta", store_id="p-1", belief_id="bel_a")
        pending = make_binding(
            store="mem0", store_id=None, belief_id="bel_b", state=BindingState.PENDING
        )
        store.commit([make_draft(make_records(bindings=[mem0, letta, pending]))])
        assert store.bindings_by_store_id("mem0", ["m-1", "missing"]) == {"m-1": mem0}
        assert store.bindings_by_store_id("letta", ["m-1"]) == {}
        assert store.bindings_by_store_id("mem0", []) == {}
        assert store.bindings_for_beliefs(["bel_a", "bel_b", "bel_x"]) == [letta, mem0, pending]
        assert store.bindings_for_beliefs([]) == []
        assert store.list_bindings("mem0") == [mem0, pending]
        assert store.list_bindings("zep") == []
        # the event log carries the bindings too: projections can be rebuilt from it
        (event,) = store.events()
        assert event.records().bindings == (mem0, letta, pending)

    def test_binding_upsert_replaces(self, store: Store) -> None:
        pending = make_binding(
            store="mem0", store_id=None, belief_id="bel_a", state=BindingState.PENDING
        )
        store.commit([make_draft(make_records(bindings=[pending]))])
        written = pending.model_copy(update={"store_id": "m-1", "state": BindingState.WRITTEN})
        store.commit([make_draft(make_records(bindings=[written]))])
        assert store.list_bindings("mem0") == [written]
        assert store.bindings_by_store_id("mem0", ["m-1"]) == {"m-1": written}
        # the store gives the item a new id (a re-write): the old id no longer resolves
        moved = written.model_copy(update={"store_id": "m-2", "detail": "rewritten"})
        drifted = moved.model_copy(update={"state": BindingState.DRIFTED})
        store.commit([make_draft(make_records(bindings=[moved, drifted]))])  # last one wins
        assert store.bindings_by_store_id("mem0", ["m-1", "m-2"]) == {"m-2": drifted}
        assert store.bindings_for_beliefs(["bel_a"]) == [drifted]

    def test_list_bindings_pages_by_belief_id(self, store: Store) -> None:
        made = [
            make_binding(store="mem0", belief_id=f"bel_{i:03d}", store_id=f"m-{i}")
            for i in (5, 1, 4, 2, 3, 0)
        ]
        other = make_binding(store="zep", belief_id="bel_002")
        store.commit([make_draft(make_records(bindings=made[:3]))])
        store.commit([make_draft(make_records(bindings=[*made[3:], other]))])
        expected = sorted(made, key=lambda b: b.belief_id)
        pages: list[list[Any]] = []
        after: str | None = None
        while True:
            page = store.list_bindings("mem0", after=after, limit=4)
            if not page:
                break
            pages.append(page)
            after = page[-1].belief_id
        assert [len(p) for p in pages] == [4, 2]
        assert [b for p in pages for b in p] == expected
        assert store.list_bindings("mem0", after="bel_003", limit=100) == expected[4:]
        assert store.list_bindings("mem0", limit=0) == []

    def test_failing_commit_writes_no_binding(self, store: Store) -> None:
        binding = make_binding(store="mem0", store_id="m-1")
        good = make_draft(make_records(bindings=[binding]))
        bad = make_draft(data={"unserializable": object()})
        with pytest.raises(StoreError):
            store.commit([good, bad])
        assert store.list_bindings("mem0") == []
        assert store.bindings_by_store_id("mem0", ["m-1"]) == {}

    # -- atomicity --------------------------------------------------------------------------

    def test_failing_commit_writes_nothing(self, store: Store) -> None:
        store.commit([make_draft()])
        head = store.head()
        belief = make_belief()
        good = make_draft(make_records(beliefs=[belief], claims=[make_claim()]))
        bad = make_draft(data={"unserializable": object()})
        with pytest.raises(StoreError):
            store.commit([good, bad])
        assert store.head() == head
        assert [e.seq for e in store.events()] == [1]
        assert store.get_belief(belief.id) is None
        assert store.count_beliefs(BeliefFilter()) == 0
        assert store.find_beliefs(BeliefFilter(text="stripe")) == []
        # and the store keeps working
        store.commit([good])
        assert store.head()[0] == 2 and store.verify().ok

    # -- belief history ---------------------------------------------------------------------

    def _three_versions(self, store: Store) -> tuple[Belief, Belief, Belief]:
        """One belief written at T0, promoted at T0+1d, superseded at T0+2d (three commits)."""
        v1 = make_belief(subject="deploy", predicate="day", statement="we deploy on fridays")
        v2 = v1.model_copy(
            update={
                "truth_status": TruthStatus.SUPPORTED,
                "retrieval_status": RetrievalStatus.NORMAL,
                "updated_at": at(days=1),
                "version": 2,
            }
        )
        v3 = v2.model_copy(
            update={
                "truth_status": TruthStatus.SUPERSEDED,
                "superseded_by": "bel_next",
                "updated_at": at(days=2),
                "version": 3,
            }
        )
        for version in (v1, v2, v3):
            store.commit([belief_draft(version)])
        return v1, v2, v3

    def test_history_keeps_every_version_oldest_first(self, store: Store) -> None:
        v1, v2, v3 = self._three_versions(store)
        assert store.belief_history(v1.id) == [v1, v2, v3]
        assert store.get_belief(v1.id) == v3
        assert store.belief_history("bel_unknown") == []

    def test_history_one_version_per_event(self, store: Store) -> None:
        v1 = make_belief()
        v2 = v1.model_copy(update={"version": 2, "updated_at": at(hours=1)})
        v3 = v1.model_copy(update={"version": 3, "updated_at": at(hours=2)})
        # two events in one commit: both versions are history; within one event, the last wins
        store.commit([belief_draft(v1), belief_draft(v2, v3)])
        assert store.belief_history(v1.id) == [v1, v3]
        assert store.find_beliefs_as_of(BeliefFilter(), at(minutes=30)) == [v1]
        assert store.find_beliefs_as_of(BeliefFilter(), at(hours=3)) == [v3]

    def test_as_of_returns_the_version_held_then(self, store: Store) -> None:
        v1, v2, v3 = self._three_versions(store)
        assert store.find_beliefs_as_of(BeliefFilter(), at(days=-1)) == []
        assert store.find_beliefs_as_of(BeliefFilter(), T0) == [v1]
        assert store.find_beliefs_as_of(BeliefFilter(), at(hours=12)) == [v1]
        assert store.find_beliefs_as_of(BeliefFilter(), at(days=1)) == [v2]
        assert store.find_beliefs_as_of(BeliefFilter(), at(days=30)) == [v3]

    def test_as_of_by_subject_text_and_prefix(self, store: Store) -> None:
        v1, v2, v3 = self._three_versions(store)
        other = make_belief(subject="billing", statement="invoices go out monthly")
        store.commit([belief_draft(other)])
        moment = at(hours=36)
        for where in (
            BeliefFilter(subject="deploy", predicate="day"),
            BeliefFilter(subject_prefix="dep"),
            BeliefFilter(text="fridays"),
            BeliefFilter(text="deploy fridays", project=v1.project),
        ):
            assert store.find_beliefs_as_of(where, moment) == [v2], where
        assert store.find_beliefs(BeliefFilter(subject_prefix="dep")) == [v3]
        assert store.find_beliefs(BeliefFilter(subject_prefix="bil")) == [other]
        assert store.find_beliefs(BeliefFilter(subject_prefix="x")) == []

    def test_as_of_applies_the_filter_to_the_past_version(self, store: Store) -> None:
        _, v2, _ = self._three_versions(store)
        supported = BeliefFilter(truth=frozenset({TruthStatus.SUPPORTED}))
        assert store.find_beliefs_as_of(supported, at(hours=12)) == []
        assert store.find_beliefs_as_of(supported, at(hours=36)) == [v2]
        assert store.find_beliefs_as_of(supported, at(days=3)) == []
        assert store.find_beliefs(supported) == []

    def test_versions_in_a_window(self, store: Store) -> None:
        v1, v2, v3 = self._three_versions(store)
        window = store.find_belief_versions(BeliefFilter(), since=at(hours=12), until=at(days=1))
        assert window == [v2, v1]  # newest version first
        assert store.find_belief_versions(BeliefFilter(), since=at(days=5)) == [v3]
        assert store.find_belief_versions(BeliefFilter(), until=at(hours=1)) == [v1]
        assert store.find_belief_versions(BeliefFilter()) == [v3, v2, v1]
        assert store.find_belief_versions(BeliefFilter(limit=1, offset=1)) == [v2]

    def test_session_events(self, store: Store) -> None:
        store.commit([make_draft(session_id="ses_a"), make_draft(), make_draft(session_id="ses_a")])
        assert [e.seq for e in store.session_events("ses_a")] == [1, 3]
        assert store.session_events("ses_b") == []

    def test_request_events(self, store: Store) -> None:
        """One request's kernel events, by an index; a decoy ``request_id`` nested in the
        arguments, a non-kernel kind naming the request and a NUL escape change nothing."""
        proposed = {"request_id": "req_1", "args": {"request_id": "req_2", "x": "a\x00b"}}
        store.commit(
            [
                make_draft(kind="action.proposed", data=proposed),
                make_draft(kind="action.held", data={"request_id": "req_2"}),
                make_draft(kind="test.event", data={"request_id": "req_1"}),
                make_draft(kind="action_policy.loaded", data={"request_id": "req_1"}),
                make_draft(kind="approval.submitted", data={"request_id": "req_1"}),
                make_draft(kind="action.forgery", data={"request_id": None}),
            ]
        )
        assert [e.seq for e in store.request_events("req_1")] == [1, 5]
        assert [e.kind for e in store.request_events("req_2")] == ["action.held"]
        assert store.request_events("req_1")[0].payload["args"]["x"] == "a\x00b"
        assert store.request_events("req_3") == []
        store.rebuild_projections()
        assert [e.seq for e in store.request_events("req_1")] == [1, 5]

    # -- the property ----------------------------------------------------------------------

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[
            # one test method, run by each backend subclass: that is the point of the contract
            HealthCheck.differing_executors,
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
        ],
    )
    @given(data=st.data())
    def test_find_beliefs_agrees_with_reference(self, tmp_path: Path, data: st.DataObject) -> None:
        beliefs = data.draw(st.lists(random_beliefs(), max_size=25), label="beliefs")
        unique = list({b.id: b for b in beliefs}.values())
        where = data.draw(random_filters(unique), label="where")
        directory = tmp_path / f"case-{next(_CASES)}"
        directory.mkdir()
        store = self.make_store(directory)
        try:
            if beliefs:
                store.commit([belief_draft(*beliefs)])
            expected = reference_find(unique, where)
            assert store.count_beliefs(where) == len(
                [b for b in unique if reference_matches(b, where)]
            )
            if where.text is None:
                assert ids(store.find_beliefs(where)) == ids(expected)
            else:
                everything = store.find_beliefs(
                    BeliefFilter(**{**_fields(where), "limit": 1000, "offset": 0})
                )
                assert set(ids(everything)) == set(ids(expected))
                page = everything[where.offset : where.offset + where.limit]
                assert ids(store.find_beliefs(where)) == ids(page)
        finally:
            store.close()


# -- strategies ---------------------------------------------------------------------------------

_CASES = iter(range(10**9))
WORDS = ["payment", "stripe", "deploy", "argo", "café", "cafe", "service", "the", "is", "key"]
_TIMES = st.integers(min_value=-5, max_value=5).map(lambda d: at(days=d))


def _fields(where: BeliefFilter) -> dict[str, Any]:
    return {name: getattr(where, name) for name in BeliefFilter.__dataclass_fields__}


@st.composite
def random_beliefs(draw: st.DrawFn) -> Belief:
    return make_belief(
        id=f"bel_{draw(st.integers(0, 40)):03d}",
        statement=" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))),
        truth_status=draw(st.sampled_from(TruthStatus)),
        retrieval_status=draw(st.sampled_from(RetrievalStatus)),
        security_status=draw(st.sampled_from(SecurityStatus)),
        freshness_status=draw(st.sampled_from(FreshnessStatus)),
        sensitivity=draw(st.sampled_from(Sensitivity)),
        observed_at=draw(_TIMES),
        last_verified_at=draw(st.none() | _TIMES),
        expires_at=draw(st.none() | _TIMES),
        project=draw(st.sampled_from(["p1", "p2"])),
        scope=draw(st.sampled_from(Scope)),
        user=draw(st.sampled_from([None, "alice", "bob"])),
        subject=draw(st.sampled_from([None, "svc", "db"])),
        predicate=draw(st.sampled_from([None, "uses", "owns"])),
        session_id=draw(st.sampled_from([None, "ses_1", "ses_2"])),
    )


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def random_filters(draw: st.DrawFn, beliefs: list[Belief]) -> BeliefFilter:
    known = [b.id for b in beliefs] or ["bel_none"]
    when: st.SearchStrategy[datetime] = _TIMES.map(lambda t: t + timedelta(0))
    return BeliefFilter(
        text=draw(_maybe(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))),
        truth=draw(_maybe(st.frozensets(st.sampled_from(TruthStatus)))),
        retrieval=draw(_maybe(st.frozensets(st.sampled_from(RetrievalStatus), min_size=1))),
        security=draw(_maybe(st.frozensets(st.sampled_from(SecurityStatus), min_size=1))),
        freshness=draw(_maybe(st.frozensets(st.sampled_from(FreshnessStatus), min_size=1))),
        max_sensitivity=draw(_maybe(st.sampled_from(Sensitivity))),
        anchor_after=draw(_maybe(when)),
        not_expired_at=draw(_maybe(when)),
        project=draw(_maybe(st.sampled_from(["p1", "p2", "p3"]))),
        user=draw(_maybe(st.sampled_from(["alice", "bob"]))),
        subject=draw(_maybe(st.sampled_from(["svc", "db"]))),
        predicate=draw(_maybe(st.sampled_from(["uses", "owns"]))),
        session_id=draw(_maybe(st.sampled_from(["ses_1", "ses_2"]))),
        exclude_ids=draw(st.frozensets(st.sampled_from(known), max_size=3)),
        limit=draw(st.integers(0, 12)),
        offset=draw(st.integers(0, 4)),
    )


__all__ = ["CORPUS", "FILTER_CASES", "StoreContract", "reference_find", "reference_matches"]
