"""The part of the store contract about sealed events: ``append_sealed``, ``rebuild_projections``
and ``projection_docs``. Mixed into :class:`tests.store_contract.StoreContract`, so every backend
runs it."""

from __future__ import annotations

import dataclasses

import pytest

from gnomon.firewall.audit.rebuild import rebuild, snapshot
from gnomon.firewall.log.events import Event
from gnomon.firewall.model.errors import LogIntegrityError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import TruthStatus
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore
from tests.factories import (
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


def populated_source() -> MemoryStore:
    """A memory store holding every record type, several versions of one belief included."""
    source = MemoryStore()
    session = make_session(user="alice")
    observation = make_observation(session_id=session.id)
    claim = make_claim(observation_ids=[observation.id], session_id=session.id)
    belief = make_belief(claim_id=claim.id, statement="Deploys go through ArgoCD")
    decision = make_decision(
        session_id=session.id,
        depends_on=[belief.id],
        dependency_truth={belief.id: TruthStatus.UNVERIFIED},
    )
    action = make_action(decision_id=decision.id, session_id=session.id)
    source.commit(
        [
            make_draft(make_records(sessions=[session], observations=[observation])),
            make_draft(
                make_records(
                    claims=[claim], evidence=[make_evidence(claim_id=claim.id)], beliefs=[belief]
                )
            ),
        ]
    )
    source.commit(
        [
            make_draft(
                make_records(
                    decisions=[decision],
                    actions=[action],
                    outcomes=[make_outcome(action_id=action.id, session_id=session.id)],
                    revisions=[make_revision(belief_id=belief.id)],
                    contradictions=[make_contradiction(belief_ids=[belief.id, "bel_other"])],
                    bindings=[make_binding(belief_id=belief.id)],
                )
            ),
            belief_draft(
                belief.model_copy(
                    update={
                        "truth_status": TruthStatus.SUPPORTED,
                        "version": 2,
                        "updated_at": at(hours=1),
                    }
                )
            ),
            make_draft(kind="test.note"),
        ]
    )
    return source


class LogContract:
    def test_append_sealed_copies_a_log_and_its_projections(self, store: Store) -> None:
        source = populated_source()
        events = list(source.events())
        store.append_sealed(events[:2])
        store.append_sealed(events[2:])
        assert store.head() == source.head()
        assert [e.body for e in store.events()] == [e.body for e in events]
        assert store.verify().ok
        assert snapshot(store) == snapshot(source)
        assert store.find_beliefs(BeliefFilter(text="argocd"))[0].truth_status == "supported"
        store.commit([make_draft()])  # and the chain goes on from the imported head
        assert store.verify().ok and store.head()[0] == len(events) + 1

    @pytest.mark.parametrize("problem", ["gap", "prev_hash", "hash", "duplicate"])
    def test_append_sealed_refuses_a_broken_chain_and_writes_nothing(
        self, store: Store, problem: str
    ) -> None:
        store.commit([make_draft(data={"this store": True})])
        before = store.head()
        source = MemoryStore()
        source.commit([make_draft(), belief_draft(make_belief()), make_draft()])
        events = list(source.events())
        bad: list[Event]
        if problem == "gap":
            bad = events[2:]
        elif problem == "prev_hash":
            bad = events[1:]  # seq 2 follows *source*'s seq 1, not the store's
        elif problem == "hash":
            own = store.head()
            bad = [dataclasses.replace(events[1], prev_hash=own[1])]
        else:
            bad = list(store.events())
        with pytest.raises(LogIntegrityError) as err:
            store.append_sealed(bad)
        assert err.value.seq >= 1
        assert store.head() == before
        assert store.count_beliefs(BeliefFilter()) == 0
        assert store.verify().ok

    def test_append_sealed_of_nothing(self, store: Store) -> None:
        store.append_sealed([])
        assert store.head()[0] == 0

    def test_rebuild_projections_reproduces_the_state(self, store: Store) -> None:
        store.append_sealed(list(populated_source().events()))
        before = snapshot(store)
        assert store.rebuild_projections() == store.head()[0]
        assert snapshot(store) == before
        assert store.find_beliefs(BeliefFilter(text="argocd"))  # indexes rebuilt too
        report = rebuild(store)
        assert report.ok and report.difference_count == 0
        assert report.tables["beliefs"] == 1 and report.tables["bindings"] == 1
