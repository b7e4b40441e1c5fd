"""Shipping attacks through the agent's own labels: a session that read a secret cannot write it
back under a lower label.

A shipped export keeps every record labelled at or below its ceiling, so the label an agent's
note carries is the only thing between what the session read and the shipped file. The label a
note takes is therefore the join of what the agent asks for and everything the session has read
(tool results, recalled beliefs), the way its origin label already is: a hostile agent that read
the vault token cannot remember it as ``internal`` (the default) or ``public`` and ship it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.model.states import Sensitivity

SECRET = "the vault root token is s.QxZ81-do-not-ship"


def _shipped(url: str, tmp_path: Path) -> str:
    """The text of the store's export shipped at the ``internal`` ceiling."""
    out = tmp_path / "ship.ndjson"
    args = ["log", "export", "--url", url, "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--sensitivity-ceiling", "internal", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sensitivity_ceiling"] == "internal"
    return out.read_text()


@pytest.mark.parametrize("asked", [None, Sensitivity.PUBLIC], ids=["default", "public"])
def test_attack_a_note_quoting_a_secret_tool_result_does_not_ship(
    tmp_path: Path, asked: Sensitivity | None
) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.observe(tool="vault_read", content=SECRET, sensitivity=Sensitivity.SECRET)
        assert s.sensitivity == Sensitivity.SECRET
        extra = {} if asked is None else {"sensitivity": asked}
        note = s.remember(f"noted: {SECRET}", **extra)  # type: ignore[arg-type]
        assert note.sensitivity == Sensitivity.SECRET
        # the agent's own report of a call (no channel) is its write too
        echoed = s.observe(tool="echo", content=f"echo {SECRET}", sensitivity=Sensitivity.PUBLIC)
        assert echoed.observation.sensitivity == Sensitivity.SECRET
        assert {b.sensitivity for b in echoed.content} == {Sensitivity.SECRET}
    assert "s.QxZ81" not in _shipped(url, tmp_path)


def test_attack_a_note_quoting_a_secret_read_in_a_batch_does_not_ship(tmp_path: Path) -> None:
    """The secret is read through ``observe_many`` (one event for many calls): the session's
    floor rises with it exactly as with ``observe``."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        calls = [
            firewall.ToolCall(tool="ls", content="a b c", sensitivity=Sensitivity.PUBLIC),
            firewall.ToolCall(tool="vault_read", content=SECRET, sensitivity=Sensitivity.SECRET),
        ]
        s.observe_many(calls)
        assert s.sensitivity == Sensitivity.SECRET
        note = s.remember(f"noted: {SECRET}", sensitivity=Sensitivity.PUBLIC)
        assert note.sensitivity == Sensitivity.SECRET
    assert "s.QxZ81" not in _shipped(url, tmp_path)


def test_attack_a_note_quoting_a_recalled_secret_does_not_ship(tmp_path: Path) -> None:
    """The secret reaches the session through recall (a policy that admits it) this time."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        user = wall.channel(firewall.Origin.user("alice"), project="shop")
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.observe(tool="chat", content=SECRET, origin=user, sensitivity=Sensitivity.SECRET)
        policy = firewall.ContextPolicy.preset("default").model_copy(
            update={"name": "secret-ok", "sensitivity_ceiling": Sensitivity.SECRET}
        )
        with wall.session(project="shop", actor="coder", user="alice") as s:
            shown = s.recall("vault root token", policy)
            assert any(SECRET in b.statement for b in shown.accepted)
            s.remember(f"for later: {SECRET}", sensitivity=Sensitivity.PUBLIC)
    assert "s.QxZ81" not in _shipped(url, tmp_path)


def _kept(text: str) -> dict[int, dict[str, object]]:
    """The bodies a shipped file keeps in clear, by seq."""
    lines = [json.loads(x) for x in text.splitlines()[1:]]
    return {x["seq"]: json.loads(x["body"]) for x in lines if "body" in x}


def _redacted(text: str) -> dict[int, str]:
    """The redaction notes of a shipped file, by seq."""
    lines = [json.loads(x) for x in text.splitlines()[1:]]
    return {x["seq"]: x["redacted"] for x in lines if "body_digest" in x}


def test_a_session_that_read_nothing_above_the_ceiling_keeps_its_labels(tmp_path: Path) -> None:
    """Utility: the floor is what the session read, not a blanket raise. The note still does not
    ship in a log that holds a secret: the agent chose its text, so it is free text there."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)  # written, never read back
        with wall.session(project="shop", actor="coder") as s:
            s.observe(
                tool="read_file", content="deploys use ArgoCD", sensitivity=Sensitivity.PUBLIC
            )
            assert s.sensitivity == Sensitivity.PUBLIC
            note = s.remember("the on-call rota is in the wiki")
            assert note.sensitivity == Sensitivity.INTERNAL
            note_id = note.id
        [written] = [e.seq for e in wall.store.events() if note_id.encode() in e.body]
    text = _shipped(url, tmp_path)
    assert "on-call rota" not in text and "s.QxZ81" not in text
    assert "unlabelled or agent-written text" in _redacted(text)[written]
    kinds = [body["kind"] for body in _kept(text).values()]
    assert kinds == ["session.started", "session.ended"] * 2, "events without free text ship"


def test_a_log_with_nothing_above_the_ceiling_ships_agent_notes_whole(tmp_path: Path) -> None:
    """Utility: the agent's notes are withheld only because of what else the log holds. With
    nothing above the ceiling, every note of every session ships, byte for byte the plain
    export."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.observe(tool="read_file", content="deploys use ArgoCD")
            s.remember("deploys use ArgoCD, per the runbook")
        with wall.session(project="shop", actor="coder") as s:
            s.remember("from memory: deploys use ArgoCD", sensitivity=Sensitivity.PUBLIC)
    text = _shipped(url, tmp_path)
    assert _redacted(text) == {}
    plain = tmp_path / "plain.ndjson"
    CliRunner().invoke(cli, ["log", "export", "--url", url, "--out", str(plain)])
    assert text.splitlines()[1:] == plain.read_text().splitlines()[1:]
    assert "per the runbook" in text and "from memory: deploys use ArgoCD" in text


def test_attack_a_secret_carried_to_a_fresh_session_by_the_agents_memory_does_not_ship(
    tmp_path: Path,
) -> None:
    """The session floor cannot see across sessions: session B read nothing, so the agent's note
    is labelled what it asks for (public). Text the agent chose is free text, so in a log that
    holds a record above the ceiling its note is withheld whatever its label says."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.observe(tool="vault_read", content=SECRET, sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder") as s:
            assert s.sensitivity == Sensitivity.PUBLIC  # the floor has nothing to raise
            note = s.remember(f"from memory: {SECRET}", sensitivity=Sensitivity.PUBLIC)
            assert note.sensitivity == Sensitivity.PUBLIC  # so the label alone would ship it
            note_id = note.id
        [written] = [e for e in wall.store.events() if note_id.encode() in e.body]
    text = _shipped(url, tmp_path)
    assert "s.QxZ81" not in text
    assert "agent-written" in _redacted(text)[written.seq]


@pytest.mark.parametrize(
    "origin", [None, firewall.Origin.external("web:docs")], ids=["default", "asserted-external"]
)
def test_attack_a_secret_carried_to_a_fresh_session_as_a_reported_call_does_not_ship(
    tmp_path: Path, origin: firewall.Origin | None
) -> None:
    """As above, but the agent writes the secret as the content of a call it reports itself (no
    host channel), labelled public. The observation and its content beliefs are its words as
    much as a note: free text in a log that holds a secret, whatever origin it asserted."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.observe(tool="vault_read", content=SECRET, sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder") as s:
            extra = {} if origin is None else {"origin": origin}
            s.observe(
                tool="fetch",
                content=f"from memory: {SECRET}",
                sensitivity=Sensitivity.PUBLIC,
                **extra,  # type: ignore[arg-type]
            )
    assert "s.QxZ81" not in _shipped(url, tmp_path)
