"""Attacks on the projection rows, each driven as an agent that can write the store's files.

The log is sealed (``tests/test_attack_sealed_log.py``), but what recall, the kernel's
cited-belief check, ``decide``, ``why``, review and the sentinels read is the ``beliefs`` row:
its document (text, states, origin label, project) and its indexed columns. The agent edits
that row with ``sqlite3`` or a PostgreSQL ``UPDATE``, and never touches an event. Each row
carries the host's MAC of its document (``firewall.log.seal.Sealer.row_tag``), checked on every
belief read of a store that holds its key: the edit is refused with a typed error, recorded
once as a ``log.tamper_detected`` event, and the edited belief is never served.

Every attack has its flip inside the test: with ``Sealer.row_problem`` monkeypatched to accept
any row, the same edit is obeyed (the agent's text reaches trusted context, a quarantined
belief comes back). The memory store keeps its rows in the host's process, out of file reach.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.log.seal import Sealer
from gnomon.firewall.model.errors import TamperedLogError
from gnomon.firewall.store.sealing import TAMPER_KIND
from tests.attested import observe_as

FACT = "Deploys to production need two reviewers"
POISON = "Deploys to production need zero reviewers"


class Rows:
    """The ``beliefs`` table as the agent reaches it."""

    def doc(self, belief_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def set(self, belief_id: str, doc: dict[str, Any], **columns: str) -> None:
        """Write ``doc`` (and ``columns``) into the row of ``belief_id``; the seal stays."""
        raise NotImplementedError

    def plant(self, like: str, new_id: str, doc: dict[str, Any]) -> None:
        """Copy the row of ``like`` (its seal included) as a new belief ``new_id``."""
        raise NotImplementedError


class SQLiteRows(Rows):
    def __init__(self, path: Path) -> None:
        self.path = path

    def doc(self, belief_id: str) -> dict[str, Any]:
        with sqlite3.connect(self.path) as conn:
            (doc,) = conn.execute("SELECT doc FROM beliefs WHERE id = ?", (belief_id,)).fetchone()
        conn.close()
        found: dict[str, Any] = orjson.loads(doc)
        return found

    def set(self, belief_id: str, doc: dict[str, Any], **columns: str) -> None:
        sets = "".join(f", {c} = ?" for c in columns)
        with sqlite3.connect(self.path) as conn:
            conn.execute(
                f"UPDATE beliefs SET doc = ?{sets} WHERE id = ?",
                (orjson.dumps(doc), *columns.values(), belief_id),
            )
        conn.close()

    def plant(self, like: str, new_id: str, doc: dict[str, Any]) -> None:
        with sqlite3.connect(self.path) as conn:
            names = [r[1] for r in conn.execute("PRAGMA table_info(beliefs)") if r[1] != "rid"]
            picks = ", ".join("?" if n == "id" else "?" if n == "doc" else n for n in names)
            values = [
                new_id if n == "id" else orjson.dumps(doc) for n in names if n in ("id", "doc")
            ]
            conn.execute(
                f"INSERT INTO beliefs ({', '.join(names)}) SELECT {picks} FROM beliefs "
                "WHERE id = ?",
                (*values, like),
            )
            for index in ("beliefs_fts", "beliefs_fts_ok"):  # and into both text indexes
                conn.execute(
                    f"INSERT INTO {index} (rowid, terms) SELECT rid, terms FROM beliefs "
                    "WHERE id = ?",
                    (new_id,),
                )
        conn.close()


class PostgresRows(Rows):
    def __init__(self, url: str, tenant: str) -> None:
        self.url, self.tenant = url, tenant

    def doc(self, belief_id: str) -> dict[str, Any]:
        import psycopg

        with psycopg.connect(self.url) as conn:
            row = conn.execute(
                "SELECT doc FROM beliefs WHERE tenant = %s AND id = %s", (self.tenant, belief_id)
            ).fetchone()
        assert row is not None
        found: dict[str, Any] = orjson.loads(bytes(row[0]))
        return found

    def set(self, belief_id: str, doc: dict[str, Any], **columns: str) -> None:
        import psycopg

        sets = "".join(f", {c} = %s" for c in columns)
        with psycopg.connect(self.url) as conn:
            conn.execute(
                f"UPDATE beliefs SET doc = %s{sets} WHERE tenant = %s AND id = %s",
                (orjson.dumps(doc), *columns.values(), self.tenant, belief_id),
            )

    def plant(self, like: str, new_id: str, doc: dict[str, Any]) -> None:
        import psycopg

        with psycopg.connect(self.url) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = "
                    "'beliefs' AND is_generated = 'NEVER' AND table_schema = current_schema()"
                )
            ]
            picks = ", ".join(
                "%s" if n == "id" else "%s::bytea" if n == "doc" else n for n in names
            )
            params = [
                new_id if n == "id" else orjson.dumps(doc) for n in names if n in ("id", "doc")
            ]
            conn.execute(
                f"INSERT INTO beliefs ({', '.join(names)}) SELECT {picks} FROM beliefs "
                "WHERE tenant = %s AND id = %s",
                (*params, self.tenant, like),
            )


@dataclass
class Target:
    url: str
    rows: Rows


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        path = tmp_path / "gnomon.db"
        return Target(f"sqlite:///{path}", SQLiteRows(path))
    base: str = request.getfixturevalue("postgres_url")
    tenant = f"rows_{os.getpid()}_{secrets.token_hex(6)}"
    return Target(f"{base}&tenant={quote(tenant)}", PostgresRows(base, tenant))


@pytest.fixture
def unchecked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The flip: every row's seal accepted."""
    with monkeypatch.context() as patch:
        patch.setattr(Sealer, "row_problem", lambda self, doc, tag: None)
        yield


def _fact(wall: firewall.Firewall) -> str:
    """A supported, user-attested belief the host wrote."""
    with wall.session(project="shop", actor="coder", user="alice") as s:
        observed = observe_as(wall, s, Origin.user("alice"), tool="chat", content=FACT)
    (belief,) = observed.content
    return belief.id


def _recalled(wall: firewall.Firewall, query: str = "reviewers production") -> list[str]:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        return [b.statement for b in s.recall(query).accepted]


def _row_records(wall: firewall.Firewall, belief_id: str) -> list[dict[str, Any]]:
    """The ``log.tamper_detected`` events naming the row of ``belief_id``."""
    found = []
    for _, body, _, _ in wall.store.chain_rows():
        doc = orjson.loads(body)
        if doc["kind"] == TAMPER_KIND and f"beliefs/{belief_id}" in doc["payload"]["problem"]:
            found.append(doc["payload"])
    return found


def _refused(wall: firewall.Firewall, belief_id: str) -> None:
    """The promise: recall, the kernel's look-up and ``why`` refuse the row, recorded once."""
    with pytest.raises(TamperedLogError, match=f"store row beliefs/{belief_id} is tampered"):
        _recalled(wall)
    with pytest.raises(TamperedLogError):
        wall.store.get_beliefs([belief_id])  # the kernel's cited-belief check, decide, review
    records = _row_records(wall, belief_id)
    assert len(records) == 1 and records[0]["seq"] == 0, records


def test_an_edited_statement_never_reaches_trusted_context(target: Target) -> None:
    with firewall.open(target.url) as wall:
        belief_id = _fact(wall)
        assert _recalled(wall) == [FACT]
    doc = target.rows.doc(belief_id)
    doc["statement"] = POISON
    target.rows.set(belief_id, doc)
    with firewall.open(target.url) as wall:
        _refused(wall, belief_id)


def test_an_edited_statement_is_served_without_the_row_check(
    target: Target, unchecked: None
) -> None:
    with firewall.open(target.url) as wall:
        belief_id = _fact(wall)
    doc = target.rows.doc(belief_id)
    doc["statement"] = POISON
    target.rows.set(belief_id, doc)
    with firewall.open(target.url) as wall:
        assert _recalled(wall) == [POISON]


def _quarantined_then_cleaned(wall: firewall.Firewall, target: Target) -> str:
    """Alice's fact, quarantined when her origin is flagged; then the agent puts the row back
    to clean, normal retrieval (document and indexed columns alike)."""
    belief_id = _fact(wall)
    wall.flag_origin("user:alice", reason="account taken over")
    assert _recalled(wall) == []
    wall.close()
    doc = target.rows.doc(belief_id)
    assert doc["security_status"] == "quarantined"
    doc["security_status"], doc["retrieval_status"] = "clean", "normal"
    target.rows.set(belief_id, doc, security="clean", retrieval="normal")
    return belief_id


def test_a_quarantined_belief_edited_back_to_clean_stays_out(target: Target) -> None:
    belief_id = _quarantined_then_cleaned(firewall.open(target.url), target)
    with firewall.open(target.url) as wall:
        _refused(wall, belief_id)


def test_a_quarantined_belief_edited_back_is_served_without_the_row_check(
    target: Target, unchecked: None
) -> None:
    _quarantined_then_cleaned(firewall.open(target.url), target)
    with firewall.open(target.url) as wall:
        assert _recalled(wall) == [FACT]


def _planted(wall: firewall.Firewall, target: Target) -> str:
    """A new belief row, copied from the host's fact with its seal, carrying the agent's text."""
    belief_id = _fact(wall)
    wall.close()
    doc = target.rows.doc(belief_id)
    planted = "bel_" + "f" * 26
    doc["id"], doc["statement"] = planted, POISON
    target.rows.plant(belief_id, planted, doc)
    return planted


def test_a_planted_row_with_a_copied_seal_is_refused(target: Target) -> None:
    planted = _planted(firewall.open(target.url), target)
    with firewall.open(target.url) as wall:
        _refused(wall, planted)


def test_a_planted_row_is_served_without_the_row_check(target: Target, unchecked: None) -> None:
    _planted(firewall.open(target.url), target)
    with firewall.open(target.url) as wall:
        assert POISON in _recalled(wall)


def test_rebuild_restores_the_host_row(target: Target) -> None:
    """The repair the error names: the projections re-derived from the verified log."""
    with firewall.open(target.url) as wall:
        belief_id = _fact(wall)
    doc = target.rows.doc(belief_id)
    doc["statement"] = POISON
    target.rows.set(belief_id, doc)
    with firewall.open(target.url) as wall:
        wall.store.rebuild_projections()
        assert _recalled(wall) == [FACT]
