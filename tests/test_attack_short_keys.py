"""Attack: a short or truncated issued key, below detect-secrets' own shapes and entropy limits.

detect-secrets matches issued keys at their full issued length (``AKIA`` + 16, ``ghp_`` + 36, …)
or above its entropy limits, so ``sk_live_123abc`` or ``ghp_abc123`` went through the scanner
unflagged: quoted to a model by the drop-in clients, printed in clear by the trust report. The
promise: a key with a well-known issuer prefix is a credential at any length past a short
minimum; the bare prefix named in prose is not.

Skipped only when mem0 is not installed, and never under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mem0", reason="mem0 is not installed (pip install 'gnomon[mem0]')")

from gnomon import firewall
from gnomon.adapters.mem0 import GuardedMemory
from gnomon.adapters.testing import offline_memory
from gnomon.firewall.audit import credentials
from gnomon.firewall.audit.report import build_report, render_html, render_markdown
from gnomon.firewall.host.firewall import Firewall

SHORT_KEYS = {
    "sk-live-123": "hyphenated API key",
    "sk_live_123abc": "Stripe Access Key",
    "rk_test_9f8e7d": "Stripe Access Key",
    "ghp_abc123": "GitHub Token",
    "github_pat_11ABCDEF": "GitHub Token",
    "xoxp-a1b2c3": "Slack Token",
    "AKIA12345678": "AWS Access Key",
    "glpat-abc123": "GitLab Token",
    "AIzaSyA1234567890": "Google API Key",
}

#: Benign text that names a prefix or looks like one: never a credential.
NEAR_MISSES = (
    "Tokens from GitHub start with the ghp_ prefix.",
    "AKIA is how AWS access key ids begin.",
    "Stripe keys look like sk_live_ followed by the key.",
    "Slack bot tokens start with xoxb- and a team id.",
    "the task_live_now flag and the desk-test-rig stay on",
    "ask-live-demo runs at noon; sk-live is a product name",
)


@pytest.fixture
def wall() -> Iterator[Firewall]:
    wall = firewall.open("memory://")
    yield wall
    wall.close()


@pytest.mark.parametrize("key", sorted(SHORT_KEYS))
def test_a_short_key_is_found_by_its_prefix(key: str) -> None:
    detectors = credentials._engine()[1]  # detect-secrets alone: the gap this closes
    assert not any(list(detect(f"use {key} now")) for _kind, detect in detectors)
    assert SHORT_KEYS[key] in credentials.credential_kinds(f"deploy with {key} tonight")


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_a_named_prefix_in_prose_is_not_a_credential(text: str) -> None:
    assert credentials.credential_kinds(text) == ()


def test_a_short_key_in_a_tool_memory_is_never_quoted(wall: Firewall) -> None:
    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    with wall.session(project="shop", actor="coder", user="alice") as session:
        memory = GuardedMemory(raw, wall, session=session)
        memory.add(
            [{"role": "tool", "name": "web", "content": f"Deploy with {k}."} for k in SHORT_KEYS]
            + [{"role": "tool", "name": "web", "content": "Ticket 9 is ready for review."}],
            user_id="alice",
            infer=False,
        )
        found = memory.get_all(filters={"user_id": "alice"})
    assert [r["gnomon"]["text"] for r in found["results"]] == ["Ticket 9 is ready for review."]
    dumped = json.dumps(found, ensure_ascii=False, default=str)
    assert not [k for k in SHORT_KEYS if k in dumped]


def test_the_report_redacts_a_short_key(wall: Firewall) -> None:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        for key in SHORT_KEYS:
            s.remember(f"note to self: deploy with {key}")
    report = build_report(wall.store, s.id)
    shown = render_markdown(report) + render_html(report)
    assert not [k for k in SHORT_KEYS if k in shown]
