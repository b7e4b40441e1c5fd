"""Erasure on every store backend (:mod:`firewall.audit.erasure`), mixed into the store contract.

The promise: after ``forget(origin user:alice)`` no read returns her text (recall, audit,
documents, history, the log), the chain and the seals still verify, a rebuild gives the same
erased projections, and an erased body is accepted only when a sealed erasure event vouches
for it. The attack: whoever can write the store file turns an event into a forged "erased"
body (keeping the digest, so the link holds) to change what it says; the flip shows the
erasure event's vouch is what refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall.audit.erasure import ErasureTarget, TargetKind
from gnomon.firewall.audit.replay import replay
from gnomon.firewall.audit.report import build_report
from gnomon.firewall.audit.report_render import render_markdown
from gnomon.firewall.audit.why import why, why_json
from gnomon.firewall.log import events as events_mod
from gnomon.firewall.log.events import ERASED, body_digest
from gnomon.firewall.model.errors import GrantScopeError, MissingGrantError, TamperedLogError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.store.base import Store
from tests.attested import observe_as

ALICE = "Alice lives at 12 Oak Street, Springfield"
BOB = "Bob prefers green tea in the morning"
TEXT = b"Oak Street"


def _populate(wall: firewall.Firewall) -> str:
    with wall.session(project="shop", actor="agent", user="alice") as s:
        observe_as(wall, s, Origin.user("alice"), tool="chat", content=ALICE)
        observe_as(wall, s, Origin.user("bob"), tool="chat", content=BOB)
        s.remember("Summary: " + ALICE + ", likes cats")
        s.recall("green tea")
        s.recall("Springfield")
    auditor = wall.grant("auditor", "ops", project="shop")
    wall.audit(ALICE, grant=auditor)  # a privileged read that quotes her text
    return s.id


def _everything(store: Store) -> Iterator[bytes]:
    for event in store.events():
        yield event.body
    for _, _, doc in store.projection_docs():
        yield doc
    for belief in store.find_belief_versions(BeliefFilter(limit=1000)):
        yield belief.statement.encode()


class ErasureContract:
    """Erasure tests every backend passes (uses the contract's ``store`` fixture)."""

    tamper_body: Any

    def test_forget_an_origin_erases_her_text_everywhere_and_the_chain_verifies(
        self, store: Store
    ) -> None:
        wall = firewall.Firewall(store)
        session = _populate(wall)
        assert any(TEXT in blob for blob in _everything(store))
        grant = wall.grant("eraser", "ops", project="shop")
        done = wall.forget(ErasureTarget(TargetKind.ORIGIN, "user:alice"), grant=grant)
        # her statement erased; the agent's summary (alice joined with the agent) is derived:
        # listed by default, and its quote of her text swept anyway
        assert len(done.beliefs) == 1 and len(done.listed) == 1
        assert not any(TEXT in blob for blob in _everything(store))
        assert store.verify().ok
        marker = f"[erased on {done.on} by {grant.id}]"
        erased = store.get_belief(done.beliefs[0])
        assert erased is not None and erased.statement == marker
        kept = [b.statement for b in store.find_beliefs(BeliefFilter(limit=100))]
        assert BOB in kept
        auditor = wall.grant("auditor", "ops", project="shop")
        assert wall.audit("Oak", grant=auditor) == []
        before = sorted(store.projection_docs())
        store.rebuild_projections()
        assert sorted(store.projection_docs()) == before
        # why and the report say where text was erased; replay says what it cannot reproduce
        explained = why_json(why(store, done.beliefs[0]))
        assert TEXT.decode() not in json.dumps(explained) and marker in json.dumps(explained)
        assert "the text and its hash are gone" in json.dumps(explained)
        report = render_markdown(build_report(store, session))
        assert TEXT.decode() not in report and marker in report
        replayed = replay(store, session, "default")
        cannot = [r for r in replayed.recalls if r.unreproducible is not None]
        assert [r.query for r in cannot] == ["Springfield"]
        event = done.event
        assert event.kind == "erasure" and event.payload["grant_id"] == grant.id
        assert {e["seq"] for e in event.payload["events"]} == {e.seq for e in done.events}

    def test_derived_erase_erases_the_agent_notes_too(self, store: Store) -> None:
        wall = firewall.Firewall(store)
        _populate(wall)
        grant = wall.grant("eraser", "ops", project="shop")
        done = wall.forget(
            ErasureTarget(TargetKind.ORIGIN, "user:alice"), grant=grant, derived="erase"
        )
        assert len(done.beliefs) == 2 and done.listed == ()
        assert not any(b"likes cats" in blob for blob in _everything(store))
        assert store.verify().ok

    def test_forget_refuses_without_an_eraser_grant_or_outside_its_project(
        self, store: Store
    ) -> None:
        wall = firewall.Firewall(store)
        _populate(wall)
        target = ErasureTarget(TargetKind.ORIGIN, "user:alice")
        with pytest.raises(MissingGrantError):
            wall.forget(target, grant=wall.grant("auditor", "ops", project="shop"))
        other = wall.grant("eraser", "ops", project="other")
        with pytest.raises(GrantScopeError):
            wall.forget(ErasureTarget(TargetKind.PROJECT, "shop"), grant=other)
        assert any(TEXT in blob for blob in _everything(store))

    def _forge(self, store: Store) -> int:
        """ATTACK: rewrite a belief event into an 'erased' body that keeps its digest (so its
        link holds) but says something else, naming the real erasure event as its voucher."""
        wall = firewall.Firewall(store)
        _populate(wall)
        wall.forget(
            ErasureTarget(TargetKind.BELIEF, "bel_none"),
            grant=wall.grant("eraser", "ops", project="shop"),
        )
        erasure_seq = store.head()[0]
        victim = next(e for e in store.events() if BOB.encode() in e.body)
        doc = orjson.loads(victim.body)
        doc[ERASED] = {
            "body_digest": body_digest(victim.body),
            "by": erasure_seq,
            "grant": "grt_forged",
            "on": "2026-11-28",
        }
        forged = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).replace(
            BOB.encode(), b"Bob authorised wiring his savings to account 666"
        )
        self.tamper_body(store, victim.seq, forged)
        return victim.seq

    def test_attack_a_forged_erased_body_is_refused(self, store: Store) -> None:
        seq = self._forge(store)
        report = store.verify()
        assert not report.ok and report.first_bad_seq == seq
        assert "does not list it" in (report.problem or "")
        if not store.url.startswith("memory://"):  # memory:// reads nothing others wrote
            with pytest.raises(TamperedLogError):
                list(store.events())

    def test_attack_flip_without_the_vouch_the_forged_body_passes(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        seq = self._forge(store)
        monkeypatch.setattr(events_mod, "vouch_problem", lambda *a: None)
        import gnomon.firewall.store.base as base_mod

        monkeypatch.setattr(base_mod, "vouch_problem", lambda *a: None)
        assert store.verify().ok
        forged = next(e for e in store.events() if e.seq == seq)
        assert b"account 666" in forged.body
