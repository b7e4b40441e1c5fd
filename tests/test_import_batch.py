"""The compact import batch (event schema 2, :mod:`firewall.log.batch`): one event per batch, and
the same guarantees as one event per record.

* every store derives exactly what a replay of the log derives (``rebuild`` compares every
  table; SQLite's fast path, which builds no typed record, is compared with its typed replay);
* a log whose batch template was edited to make imported text a trusted fact, and re-chained, is
  refused by ``gnomon log import``'s gate re-check, naming the seq and the rule;
* a malformed batch is a :class:`LogIntegrityError`, never a traceback or a partial import;
* an import writes few bytes per record.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.audit.import_check import IllegalTransitionError, check_transitions
from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.log.batch import IMPORTS
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.model.errors import LogIntegrityError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.memory import MemoryStore

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _items(n: int, prefix: str = "m") -> list[ImportItem]:
    return [
        ImportItem(
            text=f"imported memory {prefix} number {i} about deploys",
            source_id=f"{prefix}{i}",
            created_at=NOW - timedelta(days=i) if i % 3 else None,
            sensitivity=Sensitivity.PUBLIC if i % 2 else Sensitivity.INTERNAL,
        )
        for i in range(n)
    ]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'g.db'}"
    else:
        base = request.getfixturevalue("postgres_url")
        sep = "&" if "?" in base else "?"
        yield f"{base}{sep}tenant=batch-{request.node.name[-20:].strip('[]')}"


def test_a_batch_import_rebuilds_exactly_on_every_store(url: str) -> None:
    with firewall.open(url, clock=lambda: NOW) as wall:
        before = wall.store.head()[0]
        assert wall.import_records(_items(25), store_name="mem0", project="p", bind=True) == 25
        assert wall.import_records(_items(7, "n"), store_name="x", project="p", batch_size=3) == 7
        # importing twice imports once
        assert wall.import_records(_items(25), store_name="mem0", project="p", bind=True) == 0
        assert wall.store.head()[0] == before + 1 + 3  # one event per batch
        assert wall.verify_log().ok
        report = rebuild(wall.store)
        assert report.ok, report.differences
        assert report.tables["beliefs"] >= 32 and report.tables["bindings"] >= 25
        found = wall.store.find_beliefs(BeliefFilter(text="imported memory number", limit=100))
        assert {b.truth_status.value for b in found} == {"unverified"}
        assert {b.retrieval_status.value for b in found} == {"restricted"}
        if url.startswith("postgresql"):
            wall.store.discard()


def _batch_event_log() -> tuple[MemoryStore, dict[str, Any]]:
    source = MemoryStore()
    wall = firewall.Firewall(source, clock=lambda: NOW)
    wall.import_records(_items(4), store_name="mem0", project="p", bind=True)
    (event,) = list(source.events())
    return source, dict(event.payload)


def _forged_log(edit: Any) -> list[Any]:
    """A log holding one import batch whose payload ``edit`` changed, re-chained (committed
    straight into a store, as a tool that bypassed the gate would)."""
    _, payload = _batch_event_log()
    forged = copy.deepcopy(payload)
    edit(forged[IMPORTS])
    log = MemoryStore()
    log.commit([EventDraft(kind="beliefs.imported", actor="importer", at=NOW, data=forged)])
    assert log.verify().ok
    return list(log.events())


def test_a_batch_template_edited_to_a_trusted_fact_is_refused_on_import() -> None:
    def promote(batch: dict[str, Any]) -> None:
        batch["template"]["belief"]["truth_status"] = "supported"
        batch["template"]["belief"]["retrieval_status"] = "normal"

    events = _forged_log(promote)
    target = MemoryStore()
    with pytest.raises(IllegalTransitionError) as err:
        check_transitions(target, events, verified=True)
    assert err.value.seq == 1 and "unexplained-move" in str(err.value)
    assert target.head()[0] == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda b: b.update(rows=[["bel_x"]]),
        lambda b: b.update(template=[]),
        lambda b: b.update(rows="abc"),
        lambda b: b["template"].update(belief=5),
        lambda b: b.pop("at"),
    ],
    ids=["short-row", "template-list", "rows-text", "belief-number", "no-at"],
)
def test_a_malformed_batch_is_a_log_integrity_error(edit: Any) -> None:
    events = _forged_log(edit)
    with pytest.raises(LogIntegrityError):
        check_transitions(MemoryStore(), events, verified=True)
    target = MemoryStore()
    with pytest.raises(firewall.GnomonError):
        target.append_sealed(events)
    assert target.head()[0] == 0


def test_sqlite_import_writes_little_per_record(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    with firewall.open(f"sqlite:///{path}", clock=lambda: NOW) as wall:
        wall.import_records(_items(2000), store_name="mem0", project="p", bind=True)
        ((body_bytes,),) = wall.store._conn.execute(  # type: ignore[attr-defined]
            "SELECT sum(length(body)) FROM events"
        ).fetchall()
    # one event for 1,000 records: the body is the rows plus one template, not 3 snapshots each
    assert body_bytes / 2000 < 400


def test_store_contract_on_batch_records(tmp_path: Path) -> None:
    """What a batch wrote reads back as the records the typed path would have built."""
    source, payload = _batch_event_log()
    typed = {b.id: b for b in source.find_beliefs(BeliefFilter(limit=100))}
    target: Store = firewall.open(f"sqlite:///{tmp_path / 's.db'}", clock=lambda: NOW).store
    target.append_sealed(list(source.events()))
    assert target.get_beliefs(list(typed)) == typed
    for belief in typed.values():
        assert target.get_claim(belief.claim_id) == source.get_claim(belief.claim_id)
        assert target.get_evidence(belief.claim_id) == source.get_evidence(belief.claim_id)
    assert len(payload[IMPORTS]["rows"]) == 4
    target.close()


def test_only_a_batch_event_is_schema_2() -> None:
    source, _ = _batch_event_log()
    wall = firewall.Firewall(source, clock=lambda: NOW)
    with wall.session(project="p", actor="a") as s:
        s.remember("a note")
    bodies = [e.body for e in source.events()]
    assert b'"schema":2,' in bodies[0] and b'"kind":"beliefs.imported"' in bodies[0]
    assert all(b'"schema":1,' in body for body in bodies[1:])
