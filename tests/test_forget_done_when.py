"""Issue 27's done-when, as a test: after forgetting ``user:alice`` no surface returns her text.

A real SQLite store behind mem0's real offline ``Memory``: alice's and bob's memories written
through the guarded client, a recall and a privileged read that quote her. Then the operator
forgets her origin in Gnomon's store and log and in the wrapped store. Checked: recall, the
audit path, the trust report, why, the NDJSON export, the OpenTelemetry export, the belief list,
the wrapped store and the store file itself hold none of her text; bob's memory is intact; the
chain and the seals verify; the signed certificate verifies against the pinned key.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
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
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import GrantSigner
from tests.attested import attested

ALICE = ["Alice drinks oolong tea every morning", "Alice lives on Juniper Lane in Springfield"]
BOB = "Bob drinks espresso at noon"
MARKS = ("oolong", "Juniper")


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return result.output


def test_after_forget_origin_alice_no_surface_returns_her_text(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    url = f"sqlite:///{path}"
    wall = firewall.open(url)
    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    memory = GuardedMemory(raw, wall, project="shop", actor="coder", user="alice")
    alice = attested(wall, Origin.user("alice"))
    for text in ALICE:
        memory.add(text, user_id="alice", infer=False, gnomon_origin=alice)
    memory.add(BOB, user_id="alice", infer=False, gnomon_origin=attested(wall, Origin.user("bob")))
    memory.search("what does Alice drink", filters={"user_id": "alice"}, top_k=5)
    auditor = wall.grant("auditor", "ops", project="shop")
    wall.audit(ALICE[0], grant=auditor)

    done = wall.forget(
        ErasureTarget(TargetKind.ORIGIN, "user:alice"),
        grant=wall.grant("eraser", "ops", project="shop"),
    )
    wrapped = erase_in_store(memory.gnomon, done.beliefs)
    signer = GrantSigner.generate()
    certificate = sign_certificate(
        certificate_fields(done, store=url, operator="ops", derived="list", wrapped=[wrapped]),
        signer,
    )
    verify_certificate(certificate, [signer.public_key], wall.store)

    surfaces: dict[str, str] = {}
    with wall.session(project="shop", actor="agent", user="alice") as s:
        surfaces["recall"] = s.recall("Alice tea Lane Springfield").render()
    surfaces["search"] = json.dumps(
        memory.search("Alice tea Lane", filters={"user_id": "alice"}, top_k=10)
    )
    surfaces["wrapped"] = json.dumps(raw.get_all(filters={"user_id": "alice"}, top_k=100))
    entries = wall.audit(None, grant=wall.grant("auditor", "ops", project="shop"))
    surfaces["audit"] = json.dumps([e.belief.statement for e in entries])
    sessions = {e.session_id for e in wall.store.events() if e.session_id}
    wall.close()
    for session in sessions:
        surfaces[f"report {session}"] = run("report", session, "--url", url, "--json")
    for belief_id in done.beliefs:
        surfaces[f"why {belief_id}"] = run("why", belief_id, "--url", url, "--json")
        assert "erased on" in surfaces[f"why {belief_id}"]
    surfaces["beliefs"] = run("beliefs", "list", "--url", url, "--json")
    surfaces["export"] = run("log", "export", "--url", url)
    surfaces["otel"] = run("otel", "export", "--url", url)
    surfaces["file"] = path.read_bytes().decode("utf-8", "replace")
    for name, text in surfaces.items():
        for mark in MARKS:
            at = text.find(mark)
            assert at < 0, (
                f"{mark!r} is still returned by {name}: {text[max(0, at - 300) : at + 100]}"
            )
    assert BOB in surfaces["wrapped"] and BOB in surfaces["beliefs"]
    assert "ok:" in run("log", "verify", "--url", url)
    assert wrapped.remaining == () and len(wrapped.deleted) == 2
