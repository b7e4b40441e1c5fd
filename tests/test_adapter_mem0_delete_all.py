"""A guarded ``delete_all`` that cannot spill, on mem0's real offline ``Memory``.

Promises: an unscoped call, or one for another user than the session's, is refused before any
I/O; a scoped one reports exactly the ids it deleted; a store that reports success after a
partial delete (the fake lies: it deletes one memory and says all are gone) is detected and
raised as :class:`PartialDeleteError`, never reported deleted. FLIP: without the read-back
check, the lying store's partial delete is reported as complete.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters import mem0_guard
from gnomon.adapters.errors import BypassRefusedError, PartialDeleteError
from gnomon.adapters.mem0 import GuardedMemory
from gnomon.adapters.testing import offline_memory
from gnomon.firewall import Origin
from tests.attested import attested

ALICE = ["Alice drinks tea every morning", "Alice lives in Springfield", "Alice has two cats"]
BOB = "Bob drinks coffee at noon"


@pytest.fixture
def setup() -> Iterator[tuple[firewall.Firewall, Any, GuardedMemory]]:
    wall = firewall.open("memory://")
    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    memory = GuardedMemory(raw, wall, project="shop", actor="coder", user="alice")
    alice = attested(wall, Origin.user("alice"))
    for text in ALICE:
        memory.add(text, user_id="alice", infer=False, gnomon_origin=alice)
    raw.add(BOB, user_id="bob", infer=False)
    yield wall, raw, memory
    wall.close()


def _texts(raw: Any, user: str) -> list[str]:
    return [r["memory"] for r in raw.get_all(filters={"user_id": user}, top_k=100)["results"]]


def test_an_unscoped_or_foreign_delete_all_is_refused_before_any_io(setup: Any) -> None:
    _, raw, memory = setup
    with pytest.raises(BypassRefusedError, match="every user's memories"):
        memory.delete_all()
    with pytest.raises(BypassRefusedError, match="beyond this session's user"):
        memory.delete_all(user_id="bob")
    assert sorted(_texts(raw, "alice")) == sorted(ALICE) and _texts(raw, "bob") == [BOB]


def test_a_scoped_delete_all_reports_exactly_what_it_deleted(setup: Any) -> None:
    wall, raw, memory = setup
    before = {r["id"] for r in raw.get_all(filters={"user_id": "alice"}, top_k=100)["results"]}
    out = memory.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert set(out["gnomon"]["deleted"]) == before and "message" in out
    assert _texts(raw, "alice") == [] and _texts(raw, "bob") == [BOB]


def _lie(raw: Any) -> None:
    """The fake that lies: deletes one memory of the scope and reports all deleted."""

    def partial(**scope: Any) -> dict[str, str]:
        first = raw.get_all(filters=scope, top_k=100)["results"][0]
        raw.delete(first["id"])
        return {"message": "Memories deleted successfully!"}

    raw.delete_all = partial


def test_attack_a_store_that_lies_about_a_partial_delete_is_caught(setup: Any) -> None:
    wall, raw, memory = setup
    _lie(raw)
    with pytest.raises(PartialDeleteError) as caught:
        memory.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert len(caught.value.remaining) == 2 and len(_texts(raw, "alice")) == 2


def test_attack_flip_without_the_read_back_the_lie_is_reported_as_done(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall, raw, memory = setup
    _lie(raw)
    monkeypatch.setattr(
        mem0_guard._Guarded,
        "_deleted",
        lambda self, out, rows, left: {**out, "gnomon": {"deleted": ["all"]}},
    )
    out = memory.delete_all(user_id="alice", gnomon_origin=attested(wall, Origin.user("alice")))
    assert out["gnomon"]["deleted"] and len(_texts(raw, "alice")) == 2  # the lie stands
