"""Attack: a move batch under a *granted* authority (``user``, ``probe``).

A batch carries no grant (its revisions all have ``grant_id`` null), and the gate lets ``user``
authority make moves that raise trust (clear a quarantine, un-hide, un-contradict, refresh an
expired belief) only on a grant. A batch naming ``user`` authority must therefore be refused
by every store and every reader, like a promotion."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.import_check import check_transitions
from gnomon.firewall.audit.rebuild import replay
from gnomon.firewall.model.errors import GateError, GnomonError, LogIntegrityError, StoreError
from gnomon.firewall.model.states import Authority, Axis, RetrievalStatus, SecurityStatus
from gnomon.firewall.store.memory import MemoryStore
from gnomon.probes.runner import ProbeClock
from tests.test_move_batch import _chained_with, _forged, _Log, _pages

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
        yield f"{base}{sep}tenant=moves4_{secrets.token_hex(6)}"


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
        check_transitions(MemoryStore(), log)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        MemoryStore().append_sealed(log)
    with pytest.raises((LogIntegrityError, GateError, StoreError)):
        replay(_Log(log))
