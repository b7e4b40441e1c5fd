"""OpenTelemetry export with the SDK's in-memory exporter: deterministic ids, the session span
parents its recall / decision / action spans, a hold is a child of its action, and (an attack)
a secret belief's text never leaves: only its content hash does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gnomon import firewall
from gnomon.firewall.cli import cli
from gnomon.firewall.host.otel import OtelSubscriber, export_events, session_span_id, trace_id
from gnomon.firewall.model.chain import content_hash
from gnomon.firewall.model.states import Sensitivity
from gnomon.probes._kernel import host

SECRET = "the prod database password is Tr0ub4dor-wombat"


def _exported(url: str, ceiling: Sensitivity = Sensitivity.INTERNAL) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events, exporter, ceiling=ceiling)
    return list(exporter.get_finished_spans())


def _everything(span: ReadableSpan) -> str:
    return span.to_json()


def _store(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        user = wall.channel(firewall.Origin.user("alice"), project="shop")
        with wall.session(project="shop", actor="coder", user="alice") as s:
            s.observe(tool="read_file", content="deploys go through ArgoCD")
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)
            kept = s.observe(tool="chat", content="the standup is at ten", origin=user)
            s.remember("the standup moved, per alice")
            s.recall("database password standup", "default")
            decision = s.decide("post the standup time", depends_on=[kept.content[0].id])
            s.act(decision.id, "post_message", {"text": SECRET})
            return url, s.id


def test_attack_a_secret_belief_leaves_as_its_hash_never_its_text(tmp_path: Path) -> None:
    url, _ = _store(tmp_path)
    spans = _exported(url)
    dump = "\n".join(_everything(s) for s in spans)
    assert SECRET not in dump and "Tr0ub4dor" not in dump
    assert content_hash(SECRET) in dump, "the secret belief is still accounted for, by hash"
    assert "the standup is at ten" in dump, "the user's text at or below the ceiling is exported"
    # the agent's note is free text in a log holding a secret: its hash only
    assert "the standup moved" not in dump
    assert content_hash("the standup moved, per alice") in dump
    # raising the ceiling is the operator's choice, and then the text may leave
    assert any(SECRET in _everything(s) for s in _exported(url, Sensitivity.SECRET))


def test_ids_are_deterministic_across_two_exports(tmp_path: Path) -> None:
    url, session = _store(tmp_path)
    first, second = _exported(url), _exported(url)
    ids = lambda spans: [  # noqa: E731
        (s.name, s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None)
        for s in spans
    ]
    assert ids(first) == ids(second)
    assert [s.to_json() for s in first] == [s.to_json() for s in second]
    assert {s.context.trace_id for s in first} == {trace_id(session)}


def test_the_session_span_parents_recall_decision_and_action_spans(tmp_path: Path) -> None:
    url, session = _store(tmp_path)
    spans = _exported(url)
    root = next(s for s in spans if s.name == "invoke_agent coder")
    assert root.parent is None and root.context.span_id == session_span_id(session)
    assert root.attributes is not None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.conversation.id"] == session
    children = {s.name: s for s in spans if s.parent is not None}
    # the log holds a secret record, so the tool name the agent chose is withheld (by hash)
    tool = next(s for s in spans if s.name.startswith("execute_tool "))
    children["execute_tool"] = tool
    for name in ("retrieval gnomon", "gnomon.decision", "execute_tool"):
        assert children[name].parent is not None
        assert children[name].parent.span_id == root.context.span_id, name
    assert tool.attributes is not None
    assert str(tool.attributes["gen_ai.tool.name"]).startswith("[redacted: secret] ")
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    recall = children["retrieval gnomon"]
    assert (
        recall.attributes is not None and recall.attributes["gen_ai.operation.name"] == "retrieval"
    )
    beliefs = [e for e in root.events if e.name == "gnomon.belief"]
    assert len(beliefs) >= 3


def test_a_hold_is_a_child_of_its_action_span_live_and_from_the_log(tmp_path: Path) -> None:
    live = InMemorySpanExporter()
    url = f"sqlite:///{tmp_path / 'k.db'}"
    with firewall.open(url) as wall, host(wall) as h:
        wall.subscribe(OtelSubscriber(live, above_ceiling=False))  # a fresh store
        with wall.session(project="shop", actor="coder") as s:
            result = h.kernel.handle(s).request(
                "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
            )
        assert result.status == "held"
    spans = list(live.get_finished_spans())
    action = next(s for s in spans if s.name == "execute_tool git_push")
    held = next(s for s in spans if s.name == "gnomon.action.held")
    assert held.parent is not None and held.parent.span_id == action.context.span_id
    assert action.attributes is not None and action.attributes["gnomon.action.level"] == "L4"
    assert any(s.name == "invoke_agent coder" for s in spans), "the session span left at its end"
    replayed = _exported(url)
    key = lambda s: (s.name, s.context.span_id)  # noqa: E731
    assert {key(s) for s in spans} <= {key(s) for s in replayed}, "live and log export agree"


def test_cli_writes_spans_as_json_lines(tmp_path: Path) -> None:
    url, _ = _store(tmp_path)
    out = tmp_path / "spans.jsonl"
    result = CliRunner().invoke(cli, ["otel", "export", "--url", url, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    lines = out.read_text().splitlines()
    assert summary["spans"] == len(lines) > 0
    assert all(json.loads(line)["context"]["trace_id"] for line in lines)
    assert SECRET not in out.read_text()


def test_cli_refuses_an_unknown_ceiling(tmp_path: Path) -> None:
    url, _ = _store(tmp_path)
    result = CliRunner().invoke(
        cli, ["otel", "export", "--url", url, "--sensitivity-ceiling", "top"]
    )
    assert result.exit_code == 2 and "top" in result.output


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_attack_a_public_belief_holding_a_key_leaves_flagged_redacted(tmp_path: Path) -> None:
    """The agent labels a pasted key ``public``: the credential scan, not the label, decides.
    Its span event carries no statement at all and says it was redacted (a collector that
    indexes ``gnomon.belief.statement`` sees nothing, not a ``[redacted: …]`` stand-in)."""
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        pasted = s.remember(f"the bot token is {key}", sensitivity=Sensitivity.PUBLIC)
        kept = s.remember("the standup is at ten", sensitivity=Sensitivity.PUBLIC)
    shown = {
        e.attributes["gnomon.belief.id"]: dict(e.attributes)
        for span in _exported(url)
        for e in span.events
        if e.attributes and "gnomon.belief.id" in e.attributes
    }
    assert shown[kept.id]["gnomon.belief.statement"] == "the standup is at ten", "control"
    assert "gnomon.belief.statement" not in shown[pasted.id]
    assert shown[pasted.id]["gnomon.belief.redacted"] is True
    assert shown[pasted.id]["gnomon.belief.content_hash"] == content_hash(f"the bot token is {key}")


# -- unlabelled text takes the sensitivity of the log ---------------------------------------------

KEY = "wombat_orchid_91"  # what the agent read in a secret record and copies elsewhere


def _smuggling_log(url: str) -> None:
    """The agent read a secret in one session; in ANOTHER it names an action after it, and a
    sentinel flags an origin named after it with a reason quoting it: none of these fields has
    a label. Its note in that session, though labelled, is text it chose: free text too."""
    from gnomon.firewall.host.sentinels.sentinel import Sentinel

    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.remember(f"the passphrase is {KEY}", sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder") as s:
            kept = s.remember("the standup is at ten")
            decision = s.decide("post the standup", depends_on=[kept.id])
            s.act(decision.id, KEY, {"text": "hi"})
        Sentinel(wall).flag_origin(f"external:{KEY}", reason=f"planted {KEY}")


def _dump(spans: list[ReadableSpan]) -> str:
    return "\n".join(_everything(s) for s in spans)


def test_attack_secret_text_in_unlabelled_span_attributes_is_withheld(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    _smuggling_log(url)
    spans = _exported(url)
    dump = _dump(spans)
    assert KEY not in dump, [s.name for s in spans if KEY in _everything(s)]
    assert "the standup is at ten" not in dump, "the agent's note is free text"
    assert content_hash("the standup is at ten") in dump, "still accounted for, by hash"
    flagged = next(s for s in spans if s.name == "gnomon.origin.flagged")
    assert flagged.attributes is not None
    assert str(flagged.attributes["gnomon.alert.reason"]).startswith("[redacted: secret] ")
    # one pass over an iterable, and live export, assume the worst: the same holds
    one_pass = InMemorySpanExporter()
    with firewall.open(url) as wall:
        export_events(wall.store.events(), one_pass)
    assert KEY not in _dump(list(one_pass.get_finished_spans()))


def test_attack_live_export_withholds_unlabelled_text_once_a_secret_is_committed(
    tmp_path: Path,
) -> None:
    """Live, on a store the host knows is fresh: text leaves in clear until the first record
    above the ceiling is committed, and is withheld from then on."""
    live = InMemorySpanExporter()
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        wall.subscribe(OtelSubscriber(live, above_ceiling=False))
        with wall.session(project="shop", actor="coder") as s:
            kept = s.remember("the standup is at ten")
            s.act(s.decide("warm up", depends_on=[kept.id]).id, "early_tool", {})
            s.remember(f"the passphrase is {KEY}", sensitivity=Sensitivity.SECRET)
            s.act(s.decide("post", depends_on=[kept.id]).id, KEY, {})
    dump = _dump(list(live.get_finished_spans()))
    assert KEY not in dump
    assert "execute_tool early_tool" in dump, "before the secret, nothing to withhold"


def test_a_log_with_nothing_above_the_ceiling_exports_its_text(tmp_path: Path) -> None:
    """Utility: with no record above the ceiling, tool names and reasons leave in clear."""
    from gnomon.firewall.host.sentinels.sentinel import Sentinel

    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            kept = s.remember("the standup is at ten")
            s.act(s.decide("post", depends_on=[kept.id]).id, "post_message", {})
            s.observe(tool="read_file", content="x", origin=firewall.Origin.external("file:W.md"))
        Sentinel(wall).flag_origin("external:file:W.md", reason="planted file")
    spans = _exported(url)
    assert any(s.name == "execute_tool post_message" for s in spans)
    flagged = next(s for s in spans if s.name == "gnomon.origin.flagged")
    assert flagged.attributes is not None
    assert flagged.attributes["gnomon.alert.reason"] == "planted file"
    assert flagged.attributes["gnomon.alert.origin_id"] == "external:file:W.md"


def test_beliefs_of_an_import_batch_are_exported_under_their_labels(tmp_path: Path) -> None:
    from gnomon.firewall import ImportItem

    url = f"sqlite:///{tmp_path / 'g.db'}"
    items = [
        ImportItem(text="imported public fact", source_id="m1", sensitivity=Sensitivity.PUBLIC),
        ImportItem(text=SECRET, source_id="m2", sensitivity=Sensitivity.SECRET),
    ]
    with firewall.open(url) as wall:
        assert wall.import_records(items, store_name="mem0", project="shop") == 2
    spans = _exported(url)
    batch = next(s for s in spans if s.name == "gnomon.beliefs.imported")
    shown = [dict(e.attributes or {}) for e in batch.events]
    assert len(shown) == 2
    assert {e.get("gnomon.belief.statement") for e in shown} == {"imported public fact", None}
    assert content_hash(SECRET) in _dump(spans) and SECRET not in _dump(spans)


def test_attack_a_secret_carried_to_a_fresh_session_by_the_agents_memory_is_withheld(
    tmp_path: Path,
) -> None:
    """Session B read nothing, so the agent's note quoting what it read in session A is labelled
    public; the agent chose its text, so it is judged as free text, at the log's level."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.observe(tool="vault_read", content=SECRET, sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder") as s:
            assert s.sensitivity == Sensitivity.PUBLIC
            note = s.remember(f"from memory: {SECRET}", sensitivity=Sensitivity.PUBLIC)
            assert note.sensitivity == Sensitivity.PUBLIC
    dump = _dump(_exported(url))
    assert "Tr0ub4dor" not in dump
    assert content_hash(f"from memory: {SECRET}") in dump
