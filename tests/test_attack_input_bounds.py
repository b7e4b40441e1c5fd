"""Attack: oversized and control-laden strings at every agent-facing entry.

The hostile calls: a 4 MiB tool name or id full of terminal escapes, a 4 MiB query, a huge
statement or summary, each at one public entry (``Session.*``, ``Firewall.session``,
``handle.request``, the mem0 drop-in, the MCP memory server's tools). The promise, per entry:
a typed :class:`GnomonError` naming the field (and, for a length, the limit), a message of
bounded size (a refused value is never echoed whole into a log line or a terminal), and nothing
written to the store (the store does not grow by the value). One checker serves them:
:func:`firewall.model.content.checked_text` (with :func:`checked_name` / :func:`checked_tool`
for names, the content blocks' byte bound for statements), and :class:`GnomonError` caps
every message.

Flips: with ``checked_text`` letting everything through, a 4 MiB query is logged with its
recall (the store grows by megabytes); with the message cap and :func:`shown_value` removed, a
refused name comes back as an 8 MiB message.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.host.mcp_memory import MemoryServer
from gnomon.firewall.host.session import Session
from gnomon.firewall.model import content as content_module
from gnomon.firewall.model import errors as errors_module
from gnomon.firewall.model.errors import GnomonError
from gnomon.probes._kernel import host

HUGE = "x\x1b[2J\x00" * (1024 * 1024)  # 4 MiB with escapes and NULs
SHORT_CONTROL = "read\x1b]0;pwned\x07file"
MESSAGE_BOUND = 2500


@pytest.fixture
def wall() -> Iterator[Firewall]:
    with firewall.open("memory://") as w:
        yield w


def _ids(s: Session) -> dict[str, str]:
    seen = s.observe(tool="read_file", content="the deploy notes")
    decision = s.decide("go", [seen.content[0].id], policy="reference")
    action = s.act(decision.id, "deploy")
    return {"belief": seen.content[0].id, "decision": decision.id, "action": action.id}


def _mem0(wall: Firewall) -> Any:
    if os.environ.get("CI") != "true":
        pytest.importorskip("mem0")
    from gnomon.adapters.mem0 import GuardedMemory
    from gnomon.adapters.testing import offline_memory

    raw = offline_memory(tempfile.mkdtemp(dir=os.environ["MEM0_DIR"]))
    return GuardedMemory(raw, wall, project="shop", actor="coder", user="alice")


def _request(wall: Firewall, s: Session, tool: str, args: dict[str, Any]) -> None:
    with host(wall) as h:
        h.kernel.handle(s).request(tool, args)


def _mcp(wall: Firewall, s: Session, name: str, args: dict[str, Any]) -> None:
    text, is_error = MemoryServer(wall, s, "reference").call(name, args)
    if is_error:
        raise GnomonError(text)


#: (entry, field, call(wall, session, ids, value)); the value is HUGE or SHORT_CONTROL
ENTRIES: dict[str, tuple[str, Callable[[Firewall, Session, dict[str, str], str], Any]]] = {
    "Firewall.session project": (
        "project",
        lambda w, s, i, v: w.session(project=v, actor="coder").__enter__(),
    ),
    "Session.observe tool": ("tool", lambda w, s, i, v: s.observe(tool=v, content="hi")),
    "Session.observe content": (
        "content block",
        lambda w, s, i, v: s.observe(tool="t", content=v * 2),
    ),
    "Session.remember": ("content block", lambda w, s, i, v: s.remember(v * 2)),
    "Session.recall query": ("query", lambda w, s, i, v: s.recall(v)),
    "Session.decide summary": ("content block", lambda w, s, i, v: s.decide(v * 2, [i["belief"]])),
    "Session.decide depends_on": ("belief id", lambda w, s, i, v: s.decide("go", [v])),
    "Session.act name": ("action name", lambda w, s, i, v: s.act(i["decision"], v)),
    "Session.act args": ("args", lambda w, s, i, v: s.act(i["decision"], "deploy", {"a": v * 4})),
    "Session.record_outcome summary": (
        "summary",
        lambda w, s, i, v: s.record_outcome(i["action"], success=True, summary=v),
    ),
    "handle.request tool": ("tool", lambda w, s, i, v: _request(w, s, v, {})),
    "handle.request args": (
        "args",
        lambda w, s, i, v: _request(w, s, "read_file", {"path": v * 4}),
    ),
    "mem0 search query": (
        "query",
        lambda w, s, i, v: _mem0(w).search(v, filters={"user_id": "alice"}),
    ),
    "mem0 add": (
        "content block",
        lambda w, s, i, v: _mem0(w).add(v * 2, user_id="alice", infer=False),
    ),
    "mcp recall query": ("query", lambda w, s, i, v: _mcp(w, s, "recall", {"query": v})),
    "mcp why belief_id": ("belief_id", lambda w, s, i, v: _mcp(w, s, "why", {"belief_id": v})),
    "mcp remember": ("statement", lambda w, s, i, v: _mcp(w, s, "remember", {"statement": v * 2})),
    "mcp unknown tool": ("no tool", lambda w, s, i, v: _mcp(w, s, v, {})),
}


def _attack(wall: Firewall, entry: str, value: str) -> GnomonError:
    field, call = ENTRIES[entry]
    with wall.session(project="shop", actor="coder") as s:
        ids = _ids(s)
        (before, _) = wall.store.head()
        with pytest.raises(GnomonError) as refused:
            call(wall, s, ids, value)
        # the entry's own setup (a kernel loading its policy, a drop-in starting its session)
        # may write; the refused value never is
        written = [e for e in wall.store.events(after=before)]
        assert sum(len(e.body) for e in written) < 64 * 1024, f"{entry}: the value was written"
        assert not [e.kind for e in written if e.kind.startswith(("recall", "belief", "obs"))]
    message = str(refused.value)
    assert field in message, message[:300]
    assert len(message) < MESSAGE_BOUND, f"{entry}: a {len(message)}-character message"
    return refused.value


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_attack_a_huge_string_is_refused_at_every_entry(wall: Firewall, entry: str) -> None:
    _attack(wall, entry, HUGE)


NAMES = [
    "Firewall.session project",
    "Session.observe tool",
    "Session.recall query",
    "Session.act name",
    "handle.request tool",
    "mem0 search query",
    "mcp recall query",
    "mcp why belief_id",
]


@pytest.mark.parametrize("entry", NAMES)
def test_attack_control_characters_in_a_short_name_or_query(wall: Firewall, entry: str) -> None:
    error = _attack(wall, entry, SHORT_CONTROL)
    assert "\x1b" not in error.message  # the message shows it escaped, never raw


def test_flip_without_the_bound_a_huge_query_is_logged(
    wall: Firewall, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gnomon.firewall.host import session as session_module

    monkeypatch.setattr(session_module, "checked_text", lambda field, value, **_: value)
    with wall.session(project="shop", actor="coder") as s:
        s.recall("deploy " * 700_000)  # 4.9 MB of printable text
    (recall,) = [e for e in wall.store.events() if e.kind == "recall.performed"]
    assert len(recall.body) > 4_000_000


def test_flip_without_the_cut_a_refused_name_is_echoed_whole(
    wall: Firewall, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(content_module, "shown_value", repr)
    monkeypatch.setattr(errors_module.GnomonError, "MAX_MESSAGE", 10**9)
    with pytest.raises(GnomonError) as refused:
        wall.session(project=HUGE, actor="coder").__enter__()
    assert len(str(refused.value)) > 4_000_000
