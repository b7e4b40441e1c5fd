"""Claims after a replay: an executed action and a spent grant stay claimed in a fresh store.

The at-most-once claims (:meth:`Store.claim_execution`: an action's execution, a single-use
grant's spend) are a lock table beside the log. A store rebuilt from the log elsewhere (the
scratch replay of ``gnomon rebuild``, ``gnomon log import`` into a new store) must hold the same
claims, or the lock it offers there is empty. The attacker replays the log of an executed L4
push into a fresh store, then re-presents the approval, asks the kernel to execute again and
races a second claim of the same execution and of the spent grant: nothing runs twice, no
claim is granted twice, and ``gnomon rebuild`` compares the claims like any derived row.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.audit.rebuild import rebuild
from gnomon.firewall.gate.grants import GrantSigner
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.kernel import ActionKernel, load_action_policy
from gnomon.firewall.model.errors import ActionPendingError, ForgedApprovalError
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.store.base import Store, grant_claim
from gnomon.probes._kernel import Host, host
from gnomon.probes.runner import ProbeClock
from tests.factories import make_draft


def _urls(tmp_path: Path, postgres: Callable[[], str]) -> dict[str, Callable[[str], str]]:
    return {
        "memory": lambda _name: "memory://",
        "ndjson": lambda name: f"memory:///{tmp_path / name}.ndjson",
        "sqlite": lambda name: f"sqlite:///{tmp_path / name}.db",
        "postgres": lambda _name: postgres(),
    }


@pytest.fixture(params=["memory", "ndjson", "sqlite", "postgres"])
def url_for(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """A URL maker per backend; PostgreSQL stores are tenants of the test schema."""
    tenants: list[str] = []

    def postgres() -> str:
        base: str = request.getfixturevalue("postgres_url")
        tenants.append(f"claims_{secrets.token_hex(6)}")
        sep = "&" if "?" in base else "?"
        return f"{base}{sep}tenant={tenants[-1]}"

    yield _urls(tmp_path, postgres)[request.param]


def _second_kernel(wall: Firewall, h: Host, ran: list[str]) -> ActionKernel:
    """A host restarted over ``wall`` with the same pinned keys and policy."""

    def push(_args: dict[str, Any]) -> object:
        ran.append("git_push")
        return "pushed again"

    return ActionKernel(
        wall,
        load_action_policy(h.folder / "actions.yaml", keys=[h.operator.public_key]),
        operator_keys=[h.operator.public_key],
        approver_keys=[h.approver.public_key],
        executors={"git_push": push},
    )


@contextmanager
def _executed_push(url: str) -> Iterator[tuple[Firewall, Host, Any, str, str]]:
    """A held L4 push approved and executed, a grant spent: (wall, host, approval, request id,
    grant id)."""
    clock = ProbeClock()
    wall = firewall.open(url, clock=clock, signer=GrantSigner.generate())
    try:
        with host(wall) as h, wall.session(project="p", actor="a", user="bob") as s:
            page = s.observe(
                tool="fetch", content="ship it", origin=Origin.external("web:1"), subject="x"
            ).content[0]
            grant = wall.grant("user", "bob", beliefs=[page.id])
            wall.promote(page.id, grant=grant, reason="bob checked")
            held = h.kernel.handle(s).request(
                "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
            )
            request = next(r for r in h.kernel.holds() if r.id == held.request_id)
            approval = h.approver.approve(request, now=clock())
            h.kernel.submit(approval)
            assert [t for t, _ in h.ran] == ["git_push"]
            yield wall, h, approval, held.request_id, grant.id
    finally:
        wall.close()


def _replayed(source: Store, url: str) -> Firewall:
    fresh = firewall.open(url)
    fresh.store.append_sealed(list(source.events()))  # what `gnomon log import` appends
    return fresh


def test_a_replayed_log_keeps_its_claims(url_for: Callable[[str], str]) -> None:
    with (
        _executed_push(url_for("live")) as (wall, h, approval, request_id, grant_id),
        _replayed(wall.store, url_for("fresh")) as fresh,
    ):
        ran: list[str] = []
        kernel = _second_kernel(fresh, h, ran)
        with pytest.raises(ForgedApprovalError):
            kernel.submit(approval)  # the approval re-presented
        with pytest.raises(ActionPendingError, match="is executed"):
            kernel.execute(request_id)  # the ledger, folded from the log, says it ran
        # the lock table itself: neither claim can be taken a second time
        for claim in (request_id, grant_claim(grant_id)):
            assert fresh.store.claim_execution(claim, [make_draft(kind="test.x")]) is None
        assert ran == []


def test_rebuild_compares_the_claims(tmp_path: Path) -> None:
    """A claim planted beside the log (no event names it) is a difference ``gnomon rebuild``
    reports; a claim deleted behind the log's back is a missing one."""
    import sqlite3

    with _executed_push(f"sqlite:///{tmp_path / 'live.db'}") as (wall, _h, _a, request_id, _g):
        assert rebuild(wall.store).ok
        path = tmp_path / "live.db"
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO execution_claims (request_id, seq) VALUES ('req_x', 1)")
            conn.execute("DELETE FROM execution_claims WHERE request_id = ?", (request_id,))
        conn.close()
        report = rebuild(wall.store)
        found = {(d.table, d.id, d.kind) for d in report.differences}
        assert ("execution_claims", "req_x", "extra") in found, report.differences
        assert ("execution_claims", request_id, "missing") in found, report.differences


def test_an_execution_event_without_a_request_id_derives_no_claim() -> None:
    """A keyed log's ``action.executing`` event with no (or a non-string) request id claims
    nothing on replay: before, it derived the claim ``"None"`` (or the id's text form)."""
    from gnomon.firewall.store.base import EXECUTION_CLAIM_KIND, claim_of
    from gnomon.firewall.store.memory import MemoryStore

    store = MemoryStore()
    for data in ({}, {"request_id": None}, {"request_id": 7}, {"request_id": ""}):
        (event,) = store.commit([make_draft(kind=EXECUTION_CLAIM_KIND, data=data)])
        assert claim_of(event) is None, data
    (event,) = store.commit([make_draft(kind=EXECUTION_CLAIM_KIND, data={"request_id": "req_x"})])
    assert claim_of(event) == "req_x"
