"""Recovery that never loses an approved action silently.

A host that dies mid-call leaves a claimed request with no outcome: ``gnomon holds`` lists it as
"outcome unknown" and an operator resolves it with a signed ``gnomon holds resolve``. A forged
resolution (no operator key) is not obeyed by the kernel. A malformed stored event makes
``holds`` and ``report`` name the event instead of raising. Real SQLite files, real keys, the
real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import KeyPurpose, write_keypair
from gnomon.firewall.kernel.approvals import ResolutionSigner
from gnomon.firewall.kernel.ledger import RESOLVED, read_ledger
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.model.origin import Origin
from gnomon.probes._kernel import Host, host

#: flows of "killed" hosts, never resumed nor closed
_KILLED: list[object] = []


def _gnomon(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _died_mid_call(h: Host, wall: firewall.Firewall) -> str:
    """An allowed write whose host is killed while the tool runs: claimed, never finished."""

    def killed(_args: dict[str, Any]) -> object:
        raise SystemExit("host killed mid-call")

    h.kernel._executors["write_file"] = killed
    with wall.session(project="p", actor="coder", user="bob") as s:
        flow = h.kernel._propose_flow(s, "write_file", {"path": "/tmp/x", "content": "y"}, [])
        step = next(flow)  # claimed and committed: the executor is about to run
        request_id = str(read_ledger(wall.store).unknown_outcomes()[0].request_id)
        with pytest.raises(SystemExit):
            step.executor(step.args)
        # the process is gone: nothing records the outcome (a flow closed in-process would
        # record it as aborted, so it is kept open, as a killed process leaves it)
        _KILLED.append(flow)
    return request_id


def test_a_request_whose_host_died_is_listed_and_resolved_by_a_signed_operator(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    key, _ = write_keypair(tmp_path, "operator", purpose=KeyPurpose.POLICY)
    wall = firewall.open(url)
    with host(wall) as h:
        request_id = _died_mid_call(h, wall)
    wall.close()
    listed = _gnomon("holds", "--url", url)
    assert "OUTCOME UNKNOWN" in listed.output and request_id in listed.output
    assert f"gnomon holds resolve {request_id}" in listed.output
    as_json = json.loads(_gnomon("holds", "--url", url, "--json").output)
    assert [(r["id"], r["status"]) for r in as_json] == [(request_id, "outcome_unknown")]
    done = _gnomon(
        "holds", "resolve", request_id, "--failed", "--key", str(key), "--operator", "ops",
        "--url", url,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "no action is held" in _gnomon("holds", "--url", url).output
    with firewall.open(url) as again:
        state = read_ledger(again.store).requests[request_id]
        assert state.status == "failed"
        (event,) = [e for e in again.store.events() if e.kind == RESOLVED]
        assert event.actor == "ops" and event.payload["resolution"]["outcome"] == "failed"
    # resolved once: a second resolution is refused with a typed error
    again_out = _gnomon(
        "holds", "resolve", request_id, "--ran", "--key", str(key), "--operator", "ops",
        "--url", url,
    )  # fmt: skip
    assert again_out.exit_code != 0 and "outcome" in again_out.output


def test_a_resolution_without_an_operator_key_is_not_obeyed_by_the_kernel(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    wall = firewall.open(url)
    with host(wall) as h:
        request_id = _died_mid_call(h, wall)
        state = read_ledger(wall.store).requests[request_id]
        # the agent signs a "ran" with a key of its own, hiding the unknown outcome
        forged = ResolutionSigner.generate().resolve(
            request_id, state.action_id, "ran", operator="ops", now=wall.clock()
        )
        wall.store.commit(
            [
                EventDraft(
                    kind=RESOLVED,
                    actor="ops",
                    at=wall.clock(),
                    session_id=state.session_id,
                    project=state.project,
                    user=state.user,
                    data={"request_id": request_id, "resolution": forged.to_json()},
                )
            ]
        )
        assert h.kernel.status(request_id).status == "executing"
        operator = ResolutionSigner(h.operator._key)
        genuine = operator.resolve(
            request_id, state.action_id, "failed", operator="ops", now=wall.clock()
        )
        wall.store.commit(
            [
                EventDraft(
                    kind=RESOLVED,
                    actor="ops",
                    at=wall.clock(),
                    session_id=state.session_id,
                    project=state.project,
                    user=state.user,
                    data={"request_id": request_id, "resolution": genuine.to_json()},
                )
            ]
        )
        assert h.kernel.status(request_id).status == "failed"
    wall.close()


def _break(url: str, kind: str, field: str) -> int:
    """Commit, through the host's own sealed path, a copy of the last ``kind`` event without
    ``field``: a malformed event the host itself wrote (an older version, a bug). An edit of the
    file instead is refused as tampering (tests/test_attack_sealed_log.py)."""
    with firewall.open(url) as wall:
        last = [e for e in wall.store.events() if e.kind == kind][-1]
        data = {k: v for k, v in last.payload.items() if k not in ("records", field)}
        draft = wall.draft(
            kind,
            actor=last.actor,
            now=wall.clock(),
            session_id=last.session_id,
            project=last.project,
            user=last.user,
            data=data,
        )
        (event,) = wall.commit(draft)
    return event.seq


@pytest.mark.parametrize(
    ("kind", "field"), [("action.proposed", "action_id"), ("action.held", "request")]
)
def test_a_malformed_stored_event_is_named_by_holds_and_report(
    tmp_path: Path, kind: str, field: str
) -> None:
    db = tmp_path / "g.db"
    url = f"sqlite:///{db}"
    wall = firewall.open(url)
    with host(wall) as h, wall.session(project="p", actor="coder") as s:
        s.observe(tool="read_file", content="push", origin=Origin.external("file:README"))
        h.kernel.handle(s).request("git_push", {"repo": str(h.repo), "remote": "o", "branch": "m"})
        session_id = s.id
    wall.close()
    seq = _break(url, kind, field)
    listed = _gnomon("holds", "--url", url)
    assert listed.exit_code == 0, listed.output
    assert f"event #{seq} ({kind})" in listed.output and field in listed.output
    report = _gnomon("report", session_id, "--url", url)
    assert report.exit_code == 0, report.output
    assert f"event #{seq} ({kind})" in report.output
