"""Attacks on what an approved action runs: each test is the hostile sequence, then the promise.

The agent can write the store's file. It edits the stored proposal's arguments or preconditions
after the hold, appends an ``approval.accepted`` event of its own, or waits for an approval to
run out while the host is down. The kernel recomputes what it is about to run from the exact
arguments it passes to the executor and checks the approval stored in the log against its
pinned approver keys, so none of these runs anything, and each is recorded.

Keys are generated at test time; nothing secret is committed.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall.kernel import ApprovalSigner
from gnomon.firewall.kernel.ledger import ACCEPTED, post_approval, read_ledger
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.model.errors import (
    ActionPendingError,
    ForgedApprovalError,
    TamperedLogError,
)
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import Host, host
from gnomon.probes.runner import ProbeClock


def _edit(db: Path, kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    """What an agent with file access does: rewrite the payload of the last ``kind`` event."""
    with sqlite3.connect(db) as conn:
        seq, body = conn.execute(
            "SELECT seq, body FROM events WHERE json_extract(CAST(body AS TEXT), '$.kind') = ? "
            "ORDER BY seq DESC LIMIT 1",
            (kind,),
        ).fetchone()
        doc = orjson.loads(body)
        change(doc["payload"])
        conn.execute("UPDATE events SET body = ? WHERE seq = ?", (orjson.dumps(doc), seq))


def _forgeries(wall: firewall.Firewall) -> list[dict[str, Any]]:
    return [dict(e.payload) for e in wall.store.events() if e.kind == "approval.forgery"]


def _hold_push(h: Host, wall: firewall.Firewall, branch: str = "main") -> str:
    with wall.session(project="p", actor="coder", user="bob") as s:
        s.observe(tool="read_file", content="push it", origin=Origin.external("file:README"))
        push = {"repo": str(h.repo), "remote": "origin", "branch": branch}
        held = h.kernel.handle(s).request("git_push", push)
    assert held.status == "held"
    return held.request_id


def _commit(repo: Path, message: str) -> None:
    ident = ("-c", "user.email=t@t", "-c", "user.name=t")
    subprocess.run(
        ["git", "-C", str(repo), *ident, "commit", "-q", "--allow-empty", "-m", message],
        check=True,
        capture_output=True,
    )


def test_arguments_edited_in_the_stored_proposal_never_run(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    wall = firewall.open(f"sqlite:///{db}")
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        # the approver approves the push to main; the agent has rewritten it to push release
        _edit(db, "action.proposed", lambda p: p["args"].update(branch="release"))
        # the sealed log refuses the edited event first (TamperedLogError); with the seal's read
        # check removed, the inputs digest recomputed at execution refuses it (ForgedApprovalError)
        with pytest.raises((ForgedApprovalError, TamperedLogError)):
            h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert h.ran == []
        with pytest.raises((ActionPendingError, TamperedLogError)):  # and it never runs later
            h.kernel.execute(request_id)
        assert h.ran == []
    wall.close()


def test_arguments_edited_in_the_postgres_tables_never_run(postgres_url: str) -> None:
    """The same edit, on the PostgreSQL store's events table."""
    import psycopg

    wall = firewall.open(postgres_url)
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            # the fixture's schema is shared by the session's PostgreSQL tests: find this
            # request's proposal by its id
            # (by its bytes: another test's body in that schema need not cast to jsonb)
            row = conn.execute(
                "SELECT tenant, seq, body FROM events WHERE kind = 'action.proposed' AND "
                "position(%s::bytea in body) > 0",
                (f'"request_id":"{request_id}"'.encode(),),
            ).fetchone()
            assert row is not None
            doc = orjson.loads(bytes(row[2]))
            doc["payload"]["args"]["branch"] = "release"
            conn.execute(
                "UPDATE events SET body = %s WHERE tenant = %s AND seq = %s",
                (orjson.dumps(doc), row[0], row[1]),
            )
        with pytest.raises((ForgedApprovalError, TamperedLogError)):
            h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert h.ran == []
        with pytest.raises((ActionPendingError, TamperedLogError)):  # and it never runs later
            h.kernel.execute(request_id)
        assert h.ran == []
    wall.close()


def _seal_stolen(patch: pytest.MonkeyPatch) -> None:
    """The attacker holds the host's sealing key (or the seal checks are gone): every event
    it edits reads as the host's, and the head watermark accepts the re-chained head."""
    from gnomon.firewall.store.sealing import StoreSeal

    patch.setattr(StoreSeal, "problem", lambda self, event: None)
    patch.setattr(StoreSeal, "check_head", lambda self, seq, digest: None)


def _edited_push_approved(h: Host, wall: firewall.Firewall, db: Path) -> str:
    """A push to main held, the agent's edit of its stored arguments to push ``release``, then
    the approver's signature of the push to main: returns the digest the approval signed."""
    request_id = _hold_push(h, wall)
    request = next(r for r in h.kernel.holds() if r.id == request_id)
    _edit(db, "action.proposed", lambda p: p["args"].update(branch="release"))
    h.kernel.submit(h.approver.approve(request, now=wall.clock()))
    return request.inputs_digest


def test_edited_arguments_are_stopped_by_the_digest_recompute_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the seal passing (a thief of the key), what still stops the edited arguments is
    the inputs digest the kernel recomputes, at execution, from the arguments it would run."""
    db = tmp_path / "g.db"
    wall = firewall.open(f"sqlite:///{db}")
    with monkeypatch.context() as patch, host(wall) as h:
        _seal_stolen(patch)
        with pytest.raises(ForgedApprovalError, match="not the ones the approval signed"):
            _edited_push_approved(h, wall, db)
        assert h.ran == []
        assert [f["kind"] for f in _forgeries(wall)] == ["wrong_digest"]
    wall.close()


def test_edited_arguments_run_without_the_digest_recompute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flip: the recompute made to see the signed digest, the edited push runs."""
    from gnomon.firewall.kernel import kernel as kernel_module

    db = tmp_path / "g.db"
    wall = firewall.open(f"sqlite:///{db}")
    with monkeypatch.context() as patch, host(wall) as h:
        _seal_stolen(patch)
        request_id = _hold_push(h, wall)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        patch.setattr(kernel_module, "inputs_digest", lambda tool, args: request.inputs_digest)
        _edit(db, "action.proposed", lambda p: p["args"].update(branch="release"))
        h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert [args["branch"] for _, args in h.ran] == ["release"]
    wall.close()


def test_preconditions_edited_out_of_the_proposal_refuse_the_approval(tmp_path: Path) -> None:
    """The agent deletes the recorded HEAD from the proposal, then moves HEAD: the approval
    signed the precondition set, so the edited set does not match it."""
    db = tmp_path / "g.db"
    wall = firewall.open(f"sqlite:///{db}")
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        _edit(
            db,
            "action.proposed",
            lambda p: p.update(
                preconditions=[x for x in p["preconditions"] if x["kind"].startswith("polic")]
            ),
        )
        _commit(h.repo, "not what was reviewed")
        with pytest.raises((ForgedApprovalError, TamperedLogError)):
            h.kernel.submit(h.approver.approve(request, now=wall.clock()))
        assert h.ran == []
    wall.close()


def _accepted(wall: firewall.Firewall, request_id: str, approval: dict[str, Any] | None) -> int:
    """Append an ``approval.accepted`` event the way an agent with the library would."""
    state = read_ledger(wall.store).requests[request_id]
    data: dict[str, Any] = {"request_id": request_id, "decision": "approve", "nonce": "n1"}
    if approval is not None:
        data["approval"] = approval
    draft = EventDraft(
        kind=ACCEPTED,
        actor="alice",
        at=wall.clock(),
        session_id=state.session_id,
        project=state.project,
        user=state.user,
        data=data,
    )
    return wall.store.commit([draft])[0].seq


@pytest.mark.parametrize("forged", ["no approval", "unpinned key", "another request's"])
def test_an_appended_approval_accepted_is_not_obeyed(tmp_path: Path, forged: str) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    wall = firewall.open(url)
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        other_id = _hold_push(h, wall, branch="release")
        holds = {r.id: r for r in h.kernel.holds()}
        doc = {
            "no approval": None,
            "unpinned key": ApprovalSigner.generate("alice")
            .approve(holds[request_id], now=wall.clock())
            .to_json(),
            "another request's": h.approver.approve(holds[other_id], now=wall.clock()).to_json(),
        }[forged]
        # a second process of the agent: the library, the store URL, no approver key
        with firewall.open(url) as agent:
            seq = _accepted(agent, request_id, doc)
        with pytest.raises(ActionPendingError):
            h.kernel.execute(request_id)
        assert request_id in [r.id for r in h.kernel.holds()], "the hold is not hidden"
        assert [f["accepted_seq"] for f in _forgeries(wall) if "accepted_seq" in f] == [seq]
        assert h.ran == []
        # the genuine approval, written by `gnomon approve`, is still processed, once
        post_approval(
            wall.store, h.approver.approve(holds[request_id], now=wall.clock()), now=wall.clock()
        )
        h.kernel.process_submitted()
        h.kernel.process_submitted()
        assert [a["branch"] for t, a in h.ran] == ["main"]
        assert len([f for f in _forgeries(wall) if "accepted_seq" in f]) == 1
    wall.close()


def _approved_then_host_died(h: Host, wall: firewall.Firewall, ttl: timedelta) -> str:
    """The host records the approval, then dies before it claims the request."""
    request_id = _hold_push(h, wall)
    request = next(r for r in h.kernel.holds() if r.id == request_id)

    def died(_request_id: str, **_: object) -> object:
        raise SystemExit("host killed between approval and claim")

    h.kernel._execute_flow = died  # type: ignore[method-assign,assignment]
    with pytest.raises(SystemExit):
        h.kernel.submit(h.approver.approve(request, now=wall.clock(), ttl=ttl))
    del h.kernel._execute_flow
    assert h.kernel.status(request_id).status == "approved"
    return request_id


@pytest.mark.parametrize(
    ("after", "runs"),
    [(timedelta(microseconds=-1), True), (timedelta(0), False), (timedelta(microseconds=1), False)],
)
def test_a_restarted_host_rechecks_the_approvals_expiry(
    tmp_path: Path, after: timedelta, runs: bool
) -> None:
    clock = ProbeClock()
    url = f"sqlite:///{tmp_path / 'g.db'}"
    ttl = timedelta(minutes=5)
    wall = firewall.open(url, clock=clock)
    with host(wall) as h:
        approved_at = clock()
        request_id = _approved_then_host_died(h, wall, ttl)
        wall.close()
        assert h.ran == []
        # the restart: a new Firewall and kernel over the same store, the same keys
        clock.now = approved_at + ttl + after
        with firewall.open(url, clock=clock) as again:
            h2 = Host(
                h.kernel.__class__(
                    again,
                    h.kernel._policy,
                    operator_keys=[h.operator.public_key],
                    approver_keys=[h.approver.public_key],
                    executors={"git_push": lambda a: h.ran.append(("git_push", a))},
                ),
                h.approver,
                h.operator,
                h.folder,
                h.repo,
                h.ran,
            )
            h2.kernel.process_submitted()
            status = h2.kernel.status(request_id)
            assert [t for t, _ in h.ran] == (["git_push"] if runs else [])
            assert status.status == ("executed" if runs else "refused")
            if not runs:
                assert any("expired" in r for r in status.reasons)
            h2.kernel.process_submitted()  # resumed once, never twice
            assert len(h.ran) == (1 if runs else 0)


def test_an_approval_of_the_older_format_is_refused_by_name(tmp_path: Path) -> None:
    wall = firewall.open("memory://")
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        request = next(r for r in h.kernel.holds() if r.id == request_id)
        old = h.approver.approve(request, now=wall.clock()).to_json()
        del old["contract_digest"]
        state = read_ledger(wall.store).requests[request_id]
        wall.store.commit(
            [
                EventDraft(
                    kind="approval.submitted",
                    actor="alice",
                    at=wall.clock(),
                    session_id=state.session_id,
                    project=state.project,
                    user=state.user,
                    data={"request_id": request_id, "approval": old},
                )
            ]
        )
        (outcome,) = h.kernel.process_submitted()
        assert isinstance(outcome, ForgedApprovalError)
        assert "older format" in outcome.message
        assert h.ran == []
        assert request_id in [r.id for r in h.kernel.holds()]


def test_gnomon_holds_never_loses_a_request_to_an_appended_approval(tmp_path: Path) -> None:
    """The agent appends a well-formed approval.accepted signed by its own key. `gnomon holds`
    without keys still lists the request (approved, not run yet); with the pinned approver
    key it lists it as held, the forged approval not obeyed."""
    from click.testing import CliRunner
    from cryptography.hazmat.primitives import serialization

    from gnomon.firewall.cli import cli

    url = f"sqlite:///{tmp_path / 'g.db'}"
    wall = firewall.open(url)
    with host(wall) as h:
        request_id = _hold_push(h, wall)
        (request,) = h.kernel.holds()
        pub = tmp_path / "approver.pub"
        pub.write_bytes(
            h.approver.public_key.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        mallory = ApprovalSigner.generate("alice")
        with firewall.open(url) as agent:
            _accepted(agent, request_id, mallory.approve(request, now=wall.clock()).to_json())
    wall.close()
    plain = CliRunner().invoke(cli, ["holds", "--url", url, "--json"], catch_exceptions=False)
    assert [(r["id"], r["status"]) for r in orjson.loads(plain.output)] == [
        (request_id, "approved_not_run")
    ]
    pinned = CliRunner().invoke(
        cli, ["holds", "--url", url, "--json", "--approver-pub", str(pub)], catch_exceptions=False
    )
    assert [(r["id"], r["status"]) for r in orjson.loads(pinned.output)] == [(request_id, "held")]
