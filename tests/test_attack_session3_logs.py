"""Attacks on today's operator-facing outputs (the ``gnomon`` logger, OTel): the agent names the
tool it asks for, so a tool name is agent text and must reach neither a log line nor a span
unless it is one the host knows."""

from __future__ import annotations

import logging

import pytest

from gnomon import firewall
from gnomon.probes._kernel import host

SECRET = "sk-live-51HwombatSECRETkey"


def _text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{r.getMessage()} {getattr(r, 'gnomon', '')}" for r in caplog.records if r.name == "gnomon"
    )


def test_attack_an_unknown_tool_name_never_reaches_the_gnomon_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The agent asks for a 'tool' whose name is a credential (or forges a log line with a
    newline); the kernel refuses it, and the operator's log line about that ruling must name
    neither."""
    wall = firewall.open("memory://")
    forged = f"{SECRET}\nrefused Session.remember(): InputError"
    with (
        host(wall) as h,
        wall.session(project="p", actor="a") as s,
        caplog.at_level(logging.INFO, logger="gnomon"),
    ):
        result = h.kernel.handle(s).request(forged, {})
    assert result.status != "allowed"
    records = [r for r in caplog.records if r.name == "gnomon"]
    assert records, "control: the ruling is logged"
    assert SECRET not in _text(caplog)
    assert all("\n" not in r.getMessage() for r in records)
