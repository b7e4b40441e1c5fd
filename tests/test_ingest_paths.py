"""The ingest fast paths keep their guarantees.

* :class:`firewall.gate.adoption.Adopter` (used by ``Firewall.import_records``) produces exactly the
  records :func:`firewall.gate.adoption.adopt` would, apart from the fresh ids, and falls back to it
  (and to its errors) for anything it does not check itself.
* The SQLite store (schema 2) indexes new beliefs from its write path instead of a row trigger:
  the FTS5 index must stay exact when a belief is inserted and updated in one commit, and a
  version 1 file (which still has the trigger) must not be indexed twice.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gnomon import firewall
from gnomon.firewall.gate.adoption import Adopter, Context, adopt
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import ClaimKind, EvidenceQuality, ExtractionMethod, Sensitivity
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import belief_draft, make_belief

CTX = Context(project="p", actor="importer", user=None, session_id=None)
NOW = datetime(2025, 3, 1, 12, 0, 0, 500, tzinfo=UTC)
IDS = {"id", "claim_id"}


def _shared() -> dict[str, Any]:
    return {
        "kind": ClaimKind.CONTENT,
        "origin": Origin.imported("mem0"),
        "quality": EvidenceQuality.EXTERNAL_DOCUMENT,
        "extraction": ExtractionMethod.IMPORT,
    }


@pytest.mark.parametrize(
    ("sensitivity", "observed_at"),
    [
        (Sensitivity.INTERNAL, None),
        (Sensitivity.SECRET, NOW - timedelta(days=40)),
        (Sensitivity.PUBLIC, datetime(2024, 1, 1, tzinfo=UTC)),
    ],
)
def test_adopter_matches_adopt(sensitivity: Sensitivity, observed_at: datetime | None) -> None:
    adopter = Adopter(CTX, **_shared())
    adopter.adopt("first record", source="mem0:0", now=NOW - timedelta(seconds=1))
    fast = adopter.adopt(
        "deploys go through ArgoCD",
        source="mem0:7",
        now=NOW,
        sensitivity=sensitivity,
        observed_at=observed_at,
    )
    slow = adopt(
        CTX,
        statement="deploys go through ArgoCD",
        source="mem0:7",
        now=NOW,
        sensitivity=sensitivity,
        observed_at=observed_at,
        **_shared(),
    )
    for got, want in ((fast.claim, slow.claim), (fast.evidence, slow.evidence)):
        assert got.model_dump(exclude=IDS) == want.model_dump(exclude=IDS)
    assert fast.belief.model_dump(exclude=IDS) == slow.belief.model_dump(exclude=IDS)
    assert fast.evidence.claim_id == fast.claim.id == fast.belief.claim_id
    assert len({fast.claim.id, fast.evidence.id, fast.belief.id}) == 3
    # the copies are as valid as validated records
    for record in (fast.claim, fast.evidence, fast.belief):
        type(record).model_validate(record.model_dump(), strict=True)


@pytest.mark.parametrize(
    "bad",
    [
        {"now": datetime(2025, 1, 1)},  # naive
        {"observed_at": datetime(2025, 1, 1)},
        {"sensitivity": "internal"},  # strict models want the enum
    ],
)
def test_adopter_falls_back_to_adopt_for_unchecked_values(bad: dict[str, Any]) -> None:
    adopter = Adopter(CTX, **_shared())
    adopter.adopt("template", source="s", now=NOW)
    kwargs: dict[str, Any] = {"source": "s", "now": NOW, **bad}
    with pytest.raises(ValidationError):
        adopter.adopt("a statement", **kwargs)


def test_import_rejects_a_naive_created_at_after_good_records() -> None:
    wall = firewall.open("memory://")
    items = [
        ImportItem(text="fine", source_id="1"),
        ImportItem(text="bad time", source_id="2", created_at=datetime(2025, 1, 1)),
    ]
    with pytest.raises(InputError, match="timezone"):
        wall.import_records(items, store_name="mem0", project="p")


def _integrity(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO beliefs_fts (beliefs_fts) VALUES ('integrity-check')")
        (fts_rows,) = conn.execute("SELECT count(*) FROM beliefs_fts").fetchone()
        (rows,) = conn.execute("SELECT count(*) FROM beliefs").fetchone()
        assert fts_rows == rows
    finally:
        conn.close()


def _texts(store: SQLiteStore, text: str) -> list[str]:
    return [b.statement for b in store.find_beliefs(BeliefFilter(text=text, limit=50))]


def test_insert_and_update_in_one_commit_index_the_last_version(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    store = SQLiteStore(path)
    first = make_belief(statement="alpha version of the fact")
    second = first.model_copy(update={"statement": "omega version of the fact", "version": 2})
    other = make_belief(statement="alpha unrelated")
    store.commit([belief_draft(first), belief_draft(other), belief_draft(second)])
    assert _texts(store, "omega") == ["omega version of the fact"]
    assert _texts(store, "alpha") == ["alpha unrelated"]
    third = second.model_copy(update={"statement": "gamma version", "version": 3})
    store.commit([belief_draft(third)])
    assert _texts(store, "omega") == []
    assert _texts(store, "gamma") == ["gamma version"]
    store.close()
    _integrity(path)


def test_version_1_file_keeps_its_insert_trigger(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER beliefs_fts_insert AFTER INSERT ON beliefs BEGIN "
        "INSERT INTO beliefs_fts (rowid, terms) VALUES (new.rid, new.terms); END"
    )
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    store.commit([belief_draft(make_belief(statement="kept exactly once"))])
    assert _texts(store, "exactly") == ["kept exactly once"]
    store.close()
    _integrity(path)


def test_import_into_sqlite_keeps_the_index_exact(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    wall = firewall.open(f"sqlite:///{path}")
    items = [
        ImportItem(text=f"record number {i} about topic{i % 7}", source_id=str(i))
        for i in range(250)
    ]
    assert wall.import_records(items, store_name="mem0", project="p", batch_size=100) == 250
    assert wall.verify_log().ok
    hits = wall.store.find_beliefs(BeliefFilter(text="topic3", limit=100))
    assert len(hits) == len([i for i in range(250) if i % 7 == 3])
    wall.close()
    _integrity(path)
