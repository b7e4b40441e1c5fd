"""The ``gnomon`` logger: refusals, kernel holds and withheld reads at INFO, never their text.

The attacks: a refusal whose offending argument is a secret (the error's message quotes it, the
log must not), and a recall that withholds a secret belief (counted, never shown)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall import Authority
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.model.errors import InputError, TransitionRefused
from gnomon.firewall.model.states import Axis, SecurityStatus, Sensitivity
from gnomon.probes._kernel import host

SECRET = "sk-live-51HwombatSECRETkey"


def _gnomon(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gnomon" and r.levelno == logging.INFO]


def _text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{r.getMessage()} {getattr(r, 'gnomon', '')}" for r in caplog.records if r.name == "gnomon"
    )


@pytest.fixture
def wall() -> firewall.Firewall:
    return firewall.open("memory://")


def test_attack_a_refused_secret_argument_is_logged_without_it(
    wall: firewall.Firewall, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="gnomon"),
        wall.session(project="p", actor="a") as s,
        pytest.raises(InputError) as refusal,
    ):
        s.remember("the key is rotated", sensitivity=SECRET)  # type: ignore[arg-type]
    assert SECRET in str(refusal.value), "control: the error itself quotes the argument"
    records = _gnomon(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].getMessage() == "refused Session.remember(): InputError"
    assert records[0].gnomon["error"] == "InputError"  # type: ignore[attr-defined]
    assert SECRET not in _text(caplog)


def test_a_gate_refusal_names_the_move_once(
    wall: firewall.Firewall, caplog: pytest.LogCaptureFixture
) -> None:
    with wall.session(project="p", actor="a") as s:
        belief = s.remember(SECRET, sensitivity=Sensitivity.SECRET)
    wall.transition(
        belief.id,
        [Move(Axis.SECURITY, SecurityStatus.QUARANTINED)],
        reason="suspicious",
        authority=Authority.SENTINEL,
    )
    with caplog.at_level(logging.INFO, logger="gnomon"), pytest.raises(TransitionRefused):
        wall.transition(
            belief.id,
            [Move(Axis.SECURITY, SecurityStatus.CLEAN)],
            reason="sentinel tries to clear",
            authority=Authority.SENTINEL,
        )
    (record,) = _gnomon(caplog)
    message = record.getMessage()
    assert "TransitionRefused" in message and "security quarantined -> clean" in message
    assert belief.id in message and SECRET not in _text(caplog)


def test_attack_a_withheld_secret_is_counted_never_shown(
    wall: firewall.Firewall, caplog: pytest.LogCaptureFixture
) -> None:
    with wall.session(project="p", actor="a") as s:
        s.remember(f"the stripe key is {SECRET}", sensitivity=Sensitivity.SECRET)
        with caplog.at_level(logging.INFO, logger="gnomon"):
            result = s.recall("stripe key", "default")
    assert result.rejected, "control: the secret belief was withheld"
    (record,) = _gnomon(caplog)
    assert record.getMessage().startswith("recall: 0 returned (0 quoted), 1 withheld")
    assert record.gnomon["reasons"]["sensitivity"] == 1  # type: ignore[attr-defined]
    assert SECRET not in _text(caplog)


def test_a_kernel_hold_is_logged_without_its_arguments(
    wall: firewall.Firewall, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        host(wall) as h,
        wall.session(project="p", actor="a") as s,
        caplog.at_level(logging.INFO, logger="gnomon"),
    ):
        result = h.kernel.handle(s).request(
            "git_push", {"repo": str(h.repo), "remote": SECRET, "branch": "main"}
        )
    assert result.status == "held"
    messages = [r.getMessage() for r in _gnomon(caplog)]
    assert any(m.startswith("action git_push L4: hold (request req_") for m in messages), messages
    assert SECRET not in _text(caplog)


def test_attack_a_guarded_client_bypass_is_logged_without_its_text(
    wall: firewall.Firewall, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A write the guard refuses to pass through (a procedural memory, an LLM summary with no
    per-fact ids) is one INFO refusal naming the guarded call, never the text."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")
    from gnomon.adapters.errors import BypassRefusedError
    from gnomon.adapters.mem0 import GuardedMemory
    from gnomon.adapters.testing import offline_memory

    memory = GuardedMemory(offline_memory(str(tmp_path)), wall, project="shop")
    with caplog.at_level(logging.INFO, logger="gnomon"), pytest.raises(BypassRefusedError):
        memory.add(SECRET, user_id="alice", memory_type="procedural_memory")
    (record,) = [r for r in _gnomon(caplog) if r.gnomon["record"] == "refused"]  # type: ignore[attr-defined]
    assert record.getMessage() == "refused mem0.add(): BypassRefusedError"
    assert SECRET not in _text(caplog)
