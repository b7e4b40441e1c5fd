"""Erasure reaches the wrapped store: mem0's real offline ``Memory`` behind the firewall.

Promise: after ``forget(origin user:alice)`` and :func:`erase_in_store`, the wrapped store no
longer returns any of her memories (checked by reading each back), and the certificate that
lists the store's result verifies. Attack: a store whose delete reports success and deletes
nothing is detected, reported in ``remaining``, and its certificate never verifies. FLIP:
without the read-back, the lying store's items would be reported deleted.
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
from gnomon.adapters import erasure as wrapped_mod
from gnomon.adapters.erasure import erase_in_store
from gnomon.adapters.mem0 import GuardedMemory
from gnomon.adapters.testing import offline_memory
from gnomon.firewall import Origin
from gnomon.firewall.audit.erasure import ErasureTarget, TargetKind
from gnomon.firewall.audit.erasure_certificate import (
    certificate_fields,
    sign_certificate,
    verify_certificate,
)
from gnomon.firewall.gate.grants import GrantSigner
from gnomon.firewall.model.errors import CertificateError
from tests.attested import attested

ALICE = ["Alice drinks tea every morning", "Alice lives in Springfield"]
BOB = "Bob drinks coffee at noon"


@pytest.fixture
def setup() -> Iterator[tuple[firewall.Firewall, Any, GuardedMemory]]:
    wall = firewall.open("memory://")
    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    memory = GuardedMemory(raw, wall, project="shop", actor="coder", user="alice")
    alice = attested(wall, Origin.user("alice"))
    for text in ALICE:
        memory.add(text, user_id="alice", infer=False, gnomon_origin=alice)
    memory.add(BOB, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("bob")))
    yield wall, raw, memory
    wall.close()


def _texts(raw: Any) -> list[str]:
    return [r["memory"] for r in raw.get_all(filters={"user_id": "alice"}, top_k=100)["results"]]


def _forget(wall: firewall.Firewall, memory: GuardedMemory) -> tuple[Any, Any]:
    done = wall.forget(
        ErasureTarget(TargetKind.ORIGIN, "user:alice"),
        grant=wall.grant("eraser", "ops", project="shop"),
    )
    return done, erase_in_store(memory.gnomon, done.beliefs)


def _certificate(wall: firewall.Firewall, done: Any, wrapped: Any) -> tuple[bytes, GrantSigner]:
    signer = GrantSigner.generate()
    fields = certificate_fields(
        done, store="memory://", operator="ops", derived="list", wrapped=[wrapped]
    )
    return sign_certificate(fields, signer), signer


def test_forget_reaches_the_wrapped_store_and_checks_it(setup: Any) -> None:
    wall, raw, memory = setup
    done, wrapped = _forget(wall, memory)
    assert len(wrapped.deleted) == 2 and wrapped.remaining == ()
    assert _texts(raw) == [BOB]
    found = memory.search("Alice tea Springfield", filters={"user_id": "alice"}, top_k=10)
    assert all("Alice" not in r["memory"] for r in found["results"])
    data, signer = _certificate(wall, done, wrapped)
    assert verify_certificate(data, [signer.public_key], wall.store).wrapped[0].store == "mem0"


def _lie(raw: Any) -> None:
    raw.delete = lambda memory_id: {"message": "Memory deleted successfully!"}


def test_attack_a_store_that_reports_a_delete_it_did_not_do_is_caught(setup: Any) -> None:
    wall, raw, memory = setup
    _lie(raw)
    done, wrapped = _forget(wall, memory)
    assert len(wrapped.remaining) == 2 and wrapped.deleted == ()
    data, signer = _certificate(wall, done, wrapped)
    with pytest.raises(CertificateError, match="still returned erased items"):
        verify_certificate(data, [signer.public_key], wall.store)


def test_attack_flip_without_the_read_back_the_lie_is_certified(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall, raw, memory = setup
    _lie(raw)
    real = wrapped_mod.erase_in_store

    def trusting(adapter: Any, ids: Any) -> Any:
        adapter._backend.get = lambda store_id: None  # no read-back: believe the delete
        return real(adapter, ids)

    monkeypatch.setattr(wrapped_mod, "erase_in_store", trusting)
    done = wall.forget(
        ErasureTarget(TargetKind.ORIGIN, "user:alice"),
        grant=wall.grant("eraser", "ops", project="shop"),
    )
    wrapped = wrapped_mod.erase_in_store(memory.gnomon, done.beliefs)
    data, signer = _certificate(wall, done, wrapped)
    verify_certificate(data, [signer.public_key], wall.store)  # certified...
    assert len(_texts(raw)) == 3  # ...while the store still holds her memories
