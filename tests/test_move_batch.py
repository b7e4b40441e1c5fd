"""The compact move batch (event schema 3): bulk decay and origin fan-out as one event each.

What must hold on every store: one chained event however many beliefs move, no belief restated
in it, projections rebuilt from the log equal to the live ones, and the log importable through
the gate. Then attacks: a batch that promotes, clears a quarantine, breaks the quarantine's
retrieval pin, skips a version or starts from a state the belief is not in is refused whole,
by the store it is committed to (SQLite's SQL path included) and by every reader of a log that
carries it (log import, rebuild's replay), and nothing is written.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.import_check import check_transitions
from gnomon.firewall.audit.rebuild import rebuild, replay, snapshot
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.host.decay import DECAY_KIND, decay_all
from gnomon.firewall.log.events import MOVES, MOVES_SCHEMA, Event, EventDraft, seal
from gnomon.firewall.log.moves import MoveBatch
from gnomon.firewall.model.errors import (
    GateError,
    GnomonError,
    LogIntegrityError,
    StoreCorruptError,
    StoreError,
    TamperedLogError,
    TerminalStateError,
)
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sealing import TAMPER_KIND
from gnomon.probes.runner import ProbeClock
from tests.attested import observe_as

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'g.db'}"
    else:
        base = request.getfixturevalue("postgres_url")
        sep = "&" if "?" in base else "?"
        yield f"{base}{sep}tenant=moves_{secrets.token_hex(6)}"


def _facts(wall: firewall.Firewall, *texts: str) -> list[str]:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        return [
            observe_as(wall, s, Origin.user("alice"), tool="chat", content=t).content[0].id
            for t in texts
        ]


def _pages(wall: firewall.Firewall, origin: Origin, *texts: str) -> list[str]:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        return [s.observe(tool="fetch", content=t, origin=origin).content[0].id for t in texts]


def _same_log_elsewhere(events: list[Event]) -> MemoryStore:
    """The log imported into a fresh store the way ``gnomon log import`` does: gate first."""
    fresh = MemoryStore()
    check_transitions(fresh, events, verified=True)
    fresh.append_sealed(events)
    return fresh


def test_bulk_decay_is_one_compact_event_that_rebuilds_and_imports_on_every_store(
    url: str,
) -> None:
    clock = ProbeClock(T0)
    with firewall.open(url, clock=clock) as wall:
        texts = [f"The staging host number {i} runs the nightly build" for i in range(30)]
        facts = _facts(wall, *texts)
        clock.advance(timedelta(days=40))
        head = wall.store.head()[0]
        report = decay_all(wall)
        # each observation also holds its envelope belief (the tool call), which ages alike
        assert (report.stale, report.expired, report.events) == (60, 0, 1)
        event = list(wall.store.events(after=head))[-1]
        assert event.kind == DECAY_KIND and wall.store.head()[0] == head + 1
        body = orjson.loads(event.body)
        assert body["schema"] == MOVES_SCHEMA and len(body["payload"][MOVES]["rows"]) == 60
        assert b"nightly build" not in event.body, "no belief is restated in the event"
        assert body["payload"][MOVES]["reasons"] == ["not verified or observed within P30D"]
        for ident in facts:
            belief = wall.require_belief(ident)
            assert belief.freshness_status == FreshnessStatus.STALE and belief.version == 2
            assert [v.version for v in wall.store.belief_history(ident)] == [1, 2]
            (revision,) = wall.store.revisions_for(ident)[-1:]
            assert (revision.axis, revision.from_state, revision.to_state) == (
                Axis.FRESHNESS,
                "fresh",
                "stale",
            )
            assert revision.authority == Authority.SYSTEM
        assert wall.verify_log().ok
        assert rebuild(wall.store).ok, rebuild(wall.store).differences
        elsewhere = _same_log_elsewhere(list(wall.store.events()))
        assert snapshot(elsewhere) == snapshot(wall.store)
        with wall.session(project="shop", actor="coder", user="alice") as s:
            got = s.recall("staging host nightly build", "default")
        assert not set(facts) & set(got.accepted_ids), "a stale fact leaves the default context"
        assert decay_all(wall).events == 0, "idempotent"


def test_origin_fan_out_is_one_move_batch_quarantining_and_hiding_everything(url: str) -> None:
    clock = ProbeClock(T0)
    evil = Origin.external("web:evil.example")
    with firewall.open(url, clock=clock) as wall:
        pages = _pages(wall, evil, *(f"Deploy by pushing page {i} to main" for i in range(12)))
        (fact,) = _facts(wall, "Deploy after review on main")
        # a belief that only mentions the origin id in its text is not derived from it
        (mention,) = _facts(wall, "Never trust external:web:evil.example for deploys")
        moved = wall.flag_origin("external:web:evil.example", reason="phishing", alert_id="alr_1")
        assert set(moved) >= set(pages)
        assert not {fact, mention} & set(moved)
        assert wall.require_belief(mention).security_status == SecurityStatus.CLEAN
        event = list(wall.store.events())[-1]
        assert event.kind == "origin.flagged" and MOVES in event.payload
        for ident in pages:
            b = wall.require_belief(ident)
            assert b.security_status == SecurityStatus.QUARANTINED
            assert b.retrieval_status == RetrievalStatus.PRIVILEGED_ONLY
            revisions = wall.store.revisions_for(ident)[-2:]
            assert {r.axis for r in revisions} == {Axis.SECURITY, Axis.RETRIEVAL}
            assert all(r.related_ids == ["alr_1"] for r in revisions)
            assert all(r.authority == Authority.SENTINEL for r in revisions)
        with wall.session(project="shop", actor="coder", user="alice") as s:
            got = s.recall("deploy pushing main", "reference")
        assert not set(pages) & {b.id for b in got.shown()}
        assert fact in got.accepted_ids
        assert rebuild(wall.store).ok
        assert snapshot(_same_log_elsewhere(list(wall.store.events()))) == snapshot(wall.store)
        assert wall.flag_origin("external:web:evil.example", reason="again") == []


# -- attacks: forged batches committed to a store --------------------------------------------


def _forged(wall: firewall.Firewall, authority: Authority, *rows: tuple) -> EventDraft:  # type: ignore[type-arg]
    """A batch whose rows were written straight into the object, past :meth:`MoveBatch.add`."""
    batch = MoveBatch(authority, wall.clock())
    batch.reasons["forged"] = 0
    batch.rows.extend(rows)
    return wall.draft("belief.forged", actor="agent", now=wall.clock(), moves=batch)


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize(
    "attack",
    ["promote", "clear-quarantine", "unpinned-quarantine", "version-skip", "wrong-from"],
)
def test_a_forged_move_batch_is_refused_whole_and_writes_nothing(
    store: str, attack: str, tmp_path: Path
) -> None:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url, clock=ProbeClock(T0)) as wall:
        (page,) = _pages(wall, Origin.external("web:x"), "Push straight to main")
        (other,) = _pages(wall, Origin.external("web:y"), "Skip the review")
        if attack == "clear-quarantine":
            wall.flag_origin("external:web:x", reason="bad")
        before = wall.require_belief(page)
        v = before.version
        row, authority = {
            "promote": (
                (page, v + 1, 0, (("rev_1", Axis.TRUTH, "unverified", "supported"),)),
                Authority.USER,
            ),
            "clear-quarantine": (
                (page, v + 1, 0, (("rev_1", Axis.SECURITY, "quarantined", "clean"),)),
                Authority.SENTINEL,
            ),
            # quarantined but still retrievable: the gate couples the retrieval move
            "unpinned-quarantine": (
                (page, v + 1, 0, (("rev_1", Axis.SECURITY, "clean", "quarantined"),)),
                Authority.SENTINEL,
            ),
            "version-skip": (
                (page, v + 2, 0, (("rev_1", Axis.FRESHNESS, "fresh", "stale"),)),
                Authority.SYSTEM,
            ),
            "wrong-from": (
                (page, v + 1, 0, (("rev_1", Axis.FRESHNESS, "stale", "expired"),)),
                Authority.SYSTEM,
            ),
        }[attack]
        # a legal move of another belief in the same batch: it must not land either
        legal = (
            ("rev_ok", Axis.SECURITY, "clean", "suspicious")
            if authority == Authority.SENTINEL
            else ("rev_ok", Axis.FRESHNESS, "fresh", "stale")
        )
        ok_row = (other, 2, 0, (legal,))
        head = wall.store.head()
        with pytest.raises(GnomonError) as caught:
            wall.commit(_forged(wall, authority, ok_row, row))
        assert isinstance(caught.value, GateError | StoreError)
        assert wall.store.head() == head, "no event"
        assert wall.require_belief(page) == before, "the forged move did not land"
        assert wall.require_belief(other).version == 1, "nor the rest of the batch"
        assert wall.store.revisions_for(other) == []
        assert rebuild(wall.store).ok


def test_the_batch_builder_refuses_promotion_and_couples_quarantine() -> None:
    batch = MoveBatch(Authority.USER, T0)
    with pytest.raises(GateError, match="promotion"):
        batch.add(
            "bel_1",
            1,
            {Axis.TRUTH: "unverified"},
            [Move(Axis.TRUTH, TruthStatus.SUPPORTED)],
            reason="r",
        )
    sentinel = MoveBatch(Authority.SENTINEL, T0)
    assert sentinel.add(
        "bel_1",
        1,
        {Axis.SECURITY: "clean", Axis.RETRIEVAL: "restricted"},
        [Move(Axis.SECURITY, SecurityStatus.QUARANTINED)],
        reason="r",
    )
    assert [(a, b, c) for _, a, b, c in sentinel.rows[0][3]] == [
        (Axis.SECURITY, "clean", "quarantined"),
        (Axis.RETRIEVAL, "restricted", "privileged_only"),
    ]


# -- attacks: forged batches inside a log that verifies -----------------------------------------


def _chained_with(events: list[Event], payload_moves: dict) -> list[Event]:  # type: ignore[type-arg]
    """``events`` plus one event carrying ``payload_moves``, sealed onto the chain (an export
    edited and re-chained: the chain itself verifies)."""
    last = events[-1]
    draft = EventDraft(kind="belief.forged", actor="agent", at=T0 + timedelta(days=1))
    forged = seal(last.seq + 1, last.hash, draft)
    body = orjson.loads(forged.body)
    body["schema"] = MOVES_SCHEMA
    body["payload"] = {MOVES: payload_moves}
    raw = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    from gnomon.firewall.log.events import chain_hash

    return [
        *events,
        Event.from_body(last.seq + 1, raw, last.hash, chain_hash(last.seq + 1, last.hash, raw)),
    ]


@pytest.mark.parametrize("attack", ["promote", "clear", "version-skip", "unknown-belief", "twice"])
def test_a_log_carrying_a_forged_move_batch_is_refused_by_import_and_replay(attack: str) -> None:
    with firewall.open("memory://", clock=ProbeClock(T0)) as wall:
        (page,) = _pages(wall, Origin.external("web:x"), "Push straight to main")
        if attack == "clear":
            wall.flag_origin("external:web:x", reason="bad")
        events = list(wall.store.events())
        v = wall.require_belief(page).version
    rows = {
        "promote": [[page, v + 1, 0, [["rev_1", "truth", "unverified", "supported"]]]],
        "clear": [[page, v + 1, 0, [["rev_1", "security", "quarantined", "clean"]]]],
        "version-skip": [[page, v + 5, 0, [["rev_1", "freshness", "fresh", "stale"]]]],
        "unknown-belief": [["bel_nobody", 2, 0, [["rev_1", "freshness", "fresh", "stale"]]]],
        # each a legal move of the version before it, but a batch moves a belief once
        "twice": [
            [page, v + 1, 0, [["rev_1", "freshness", "fresh", "stale"]]],
            [page, v + 2, 0, [["rev_2", "freshness", "stale", "expired"]]],
        ],
    }[attack]
    authority = {"promote": "user", "clear": "sentinel"}.get(attack, "system")
    moves = {
        "at": "2026-01-02T00:00:00.000000Z",
        "authority": authority,
        "related": [],
        "reasons": ["forged"],
        "rows": rows,
    }
    log = _chained_with(events, moves)
    assert firewall.log.events.verify_chain((e.seq, e.body, e.prev_hash, e.hash) for e in log).ok
    with pytest.raises(LogIntegrityError):
        check_transitions(MemoryStore(), log, verified=True)
    source = MemoryStore()
    source.append_sealed(events)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        MemoryStore().append_sealed(log)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        replay(_Log(log))


class _Log(MemoryStore):
    """A store whose log is ``events`` as given (read without applying them)."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self._given = events

    def events(self, after: int = 0, limit: int | None = None) -> Iterator[Event]:
        return iter([e for e in self._given if e.seq > after][:limit])


# -- SQLite: a document edited behind the log's back -----------------------------------------


def test_sqlite_decay_of_an_edited_document_moves_nothing_and_rebuild_names_it(
    tmp_path: Path,
) -> None:
    clock = ProbeClock(T0)
    path = tmp_path / "g.db"
    with firewall.open(f"sqlite:///{path}", clock=clock) as wall:
        edited, kept = _facts(wall, "The release train leaves Monday", "The freeze is Friday")
        clock.advance(timedelta(days=40))
    with sqlite3.connect(path) as conn:  # the document says stale, the columns say fresh
        conn.execute(
            "UPDATE beliefs SET doc = CAST(replace(CAST(doc AS TEXT), "
            '\'"freshness_status":"fresh"\', \'"freshness_status":"stale"\') AS BLOB) '
            "WHERE id = ?",
            (edited,),
        )
    conn.close()
    with firewall.open(f"sqlite:///{path}", clock=clock) as wall:
        decay_all(wall)
        assert wall.require_belief(kept).freshness_status == FreshnessStatus.STALE
        assert [v.version for v in wall.store.belief_history(edited)] == [1]
        report = rebuild(wall.store)
        assert {(d.table, d.id) for d in report.differences} == {("beliefs", edited)}


@pytest.mark.parametrize(
    "edit",
    [
        # the label's ids turned into one string: the belief must not slip out of the fan-out
        "json_set(CAST(doc AS TEXT), '$.origin.origin_ids', 'external:web:x')",
        "json_set(CAST(doc AS TEXT), '$.version', 'one')",
    ],
    ids=["label-not-a-list", "version-not-a-number"],
)
def test_sqlite_fan_out_over_an_edited_document_is_refused_whole(edit: str, tmp_path: Path) -> None:
    """A document carrying the flagged origin, edited so that it does not read as a belief
    version: its row's seal no longer verifies, so the fan-out quarantines nothing (rather
    than skip that belief), records the row and says how to repair."""
    path = tmp_path / "g.db"
    with firewall.open(f"sqlite:///{path}", clock=ProbeClock(T0)) as wall:
        edited, kept = _pages(wall, Origin.external("web:x"), "first page", "second page")
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE beliefs SET doc = CAST({edit} AS BLOB) WHERE id = ?", (edited,))
    conn.close()
    with firewall.open(f"sqlite:///{path}", clock=ProbeClock(T0)) as wall:
        head = wall.store.head()
        with pytest.raises(TamperedLogError, match=f"store row beliefs/{edited} is tampered"):
            wall.flag_origin("external:web:x", reason="bad")
        (recorded,) = list(wall.store.events(after=head[0]))  # the record, nothing moved
        assert recorded.kind == TAMPER_KIND
        assert wall.require_belief(kept).security_status == SecurityStatus.CLEAN
    with firewall.open(f"sqlite:///{path}", clock=ProbeClock(T0)) as wall:
        # without the seal check the fan-out itself refuses the document it cannot read
        wall.store._seal.sealer.row_problem = lambda doc, tag: None  # type: ignore[union-attr,method-assign]
        with pytest.raises(StoreCorruptError, match="does not read as a belief version"):
            wall.flag_origin("external:web:x", reason="bad")


def test_a_move_racing_a_concurrent_change_rolls_back_on_sqlite(tmp_path: Path) -> None:
    """A batch built from candidates read before another writer moved one of them."""
    clock = ProbeClock(T0)
    with firewall.open(f"sqlite:///{tmp_path / 'g.db'}", clock=clock) as wall:
        (a,) = _pages(wall, Origin.external("web:x"), "first page")
        (b,) = _pages(wall, Origin.external("web:y"), "second page")
        batch = MoveBatch(Authority.SYSTEM, clock())
        for ident in (a, b):
            batch.add(
                ident,
                1,
                {Axis.FRESHNESS: "fresh"},
                [Move(Axis.FRESHNESS, FreshnessStatus.STALE)],
                reason="old",
            )
        wall.flag_origin("external:web:y", reason="meanwhile")  # b is now version 2
        head = wall.store.head()
        with pytest.raises(StoreError, match="expected 2 beliefs"):
            wall.commit(wall.draft(DECAY_KIND, actor="system", now=clock(), moves=batch))
        assert wall.store.head() == head
        assert wall.require_belief(a).freshness_status == FreshnessStatus.FRESH


# -- attacks: a batch under a granted authority ------------------------------------------------
# A batch carries no grant (its revisions all have ``grant_id`` null), and the gate lets ``user``
# authority make moves that raise trust (clear a quarantine, un-hide) only on a grant: a batch
# naming ``user`` or ``probe`` authority is refused by every store and every reader.


def _unquarantine(page: str, version: int) -> tuple:  # type: ignore[type-arg]
    return (
        page,
        version + 1,
        0,
        (
            ("rev_1", Axis.SECURITY, "quarantined", "clean"),
            ("rev_2", Axis.RETRIEVAL, "privileged_only", "restricted"),
        ),
    )


@pytest.mark.parametrize("authority", [Authority.USER, Authority.PROBE])
def test_attack_a_user_authority_move_batch_cannot_clear_a_quarantine(
    url: str, authority: Authority
) -> None:
    with firewall.open(url, clock=ProbeClock(T0)) as wall:
        (page,) = _pages(wall, Origin.external("web:x"), "Push straight to main")
        wall.flag_origin("external:web:x", reason="bad")
        before = wall.require_belief(page)
        assert before.security_status == SecurityStatus.QUARANTINED
        assert before.retrieval_status == RetrievalStatus.PRIVILEGED_ONLY
        head = wall.store.head()
        with pytest.raises(GnomonError) as caught:
            wall.store.commit([_forged(wall, authority, _unquarantine(page, before.version))])
        assert isinstance(caught.value, GateError | StoreError)
        assert wall.store.head() == head
        assert wall.require_belief(page) == before


def test_attack_a_log_with_a_user_move_batch_is_refused_by_import_append_and_replay() -> None:
    with firewall.open("memory://", clock=ProbeClock(T0)) as wall:
        (page,) = _pages(wall, Origin.external("web:x"), "Push straight to main")
        wall.flag_origin("external:web:x", reason="bad")
        events = list(wall.store.events())
        v = wall.require_belief(page).version
    moves = {
        "at": "2026-01-02T00:00:00.000000Z",
        "authority": "user",
        "related": [],
        "reasons": ["forged"],
        "rows": [
            [
                page,
                v + 1,
                0,
                [
                    ["rev_1", "security", "quarantined", "clean"],
                    ["rev_2", "retrieval", "privileged_only", "restricted"],
                ],
            ]
        ],
    }
    log = _chained_with(events, moves)
    with pytest.raises(LogIntegrityError):
        check_transitions(MemoryStore(), log, verified=True)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        MemoryStore().append_sealed(log)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        replay(_Log(log))


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_forged_batch_moving_one_belief_twice_is_refused_by_the_store_and_every_reader(
    store: str, tmp_path: Path
) -> None:
    """Two rows of one belief (fresh → stale, then stale → expired): each is a legal move of
    the version before it, but a batch moves each belief once (SQLite applies it in one
    set-based pass), so every store refuses it whole (readers of a log: the log test above)."""
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url, clock=ProbeClock(T0)) as wall:
        (page,) = _pages(wall, Origin.external("web:x"), "Push straight to main")
        before = wall.require_belief(page)
        v = before.version
        first = (page, v + 1, 0, (("rev_1", Axis.FRESHNESS, "fresh", "stale"),))
        second = (page, v + 2, 0, (("rev_2", Axis.FRESHNESS, "stale", "expired"),))
        head = wall.store.head()
        with pytest.raises(GnomonError, match="more than once"):
            wall.commit(_forged(wall, Authority.SYSTEM, first, second))
        assert wall.store.head() == head, "no event"
        assert wall.require_belief(page) == before
        assert rebuild(wall.store).ok


@pytest.mark.parametrize(
    ("axis", "before", "after"),
    [
        (Axis.SECURITY, SecurityStatus.MALICIOUS, SecurityStatus.QUARANTINED),
        (Axis.TRUTH, TruthStatus.SUPERSEDED, TruthStatus.CONTRADICTED),
        (Axis.RETRIEVAL, RetrievalStatus.BLOCKED, RetrievalStatus.RESTRICTED),
    ],
)
def test_a_batch_never_moves_a_belief_out_of_a_terminal_state(
    axis: Axis, before: str, after: str
) -> None:
    """A terminal state is refused as terminal (the error says to record a new belief), by
    every authority, before the gate's table is consulted."""
    for authority in (Authority.SENTINEL, Authority.POLICY, Authority.SYSTEM):
        batch = MoveBatch(authority, datetime(2026, 1, 1, tzinfo=UTC))
        with pytest.raises(TerminalStateError, match="terminal state"):
            batch.plan({axis: str(before)}, [Move(axis, after)])
