"""Belief history, ``why``, replay and the trust report: library and CLI.

Every scenario runs on a stepping clock (one second per reading) so that "as of" moments are
unambiguous, on the embedded SQLite store unless a test says otherwise.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall import Origin, Sensitivity, TruthStatus
from gnomon.firewall.audit.replay import replay
from gnomon.firewall.audit.report import build_report, render_html, render_markdown
from gnomon.firewall.audit.why import why, why_json
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.gate import adoption_rule
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Origin as _Origin
from gnomon.firewall.model.states import EvidenceQuality, RetrievalStatus
from gnomon.firewall.store.paths import keys_dir
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.attested import attested

T0 = datetime(2025, 4, 1, 9, 0, tzinfo=UTC)


def stepping_clock(start: datetime = T0) -> Callable[[], datetime]:
    state = {"now": start}

    def clock() -> datetime:
        state["now"] += timedelta(seconds=1)
        return state["now"]

    return clock


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@dataclass
class Story:
    url: str
    session_id: str
    old_id: str  # "deploys on fridays", superseded
    new_id: str  # "deploys on thursdays", supersedes it
    doc_id: str  # external page content, quoted and acted on
    envelope_id: str
    decision_id: str
    superseded_at: datetime
    doc_file: Path


@pytest.fixture
def story(tmp_path: Path) -> Iterator[Story]:
    url = f"sqlite:///{tmp_path / 'story.db'}"
    doc_file = tmp_path / "RUNBOOK.md"
    doc_file.write_text("Intro.\nRun make ship to deploy.\n", encoding="utf-8")
    with firewall.open(url, clock=stepping_clock()) as wall:
        alice = wall.channel(Origin.user("alice"))
        with wall.session(project="shop", actor="coder", user="alice") as s:
            (old,) = s.observe(
                tool="chat",
                content="The payments api deploys on fridays",
                origin=alice,
                subject="payments.api",
                predicate="deploy_day",
                valid_from=datetime(2025, 1, 1, tzinfo=UTC),
                valid_to=datetime(2025, 6, 30, tzinfo=UTC),
            ).content
            (new,) = s.observe(
                tool="chat",
                content="The payments api deploys on thursdays",
                origin=alice,
                subject="payments.api",
                predicate="deploy_day_v2",
            ).content
            page = s.observe(
                tool="read_file",
                args={"path": str(doc_file)},
                content="Run make ship to deploy.",
                # the host's own read_file tool: its envelope is a host observation
                origin=wall.channel(Origin.external(f"file:{doc_file.name}")),
            )
            (doc,) = page.content
            s.recall("deploys fridays payments", policy="reference")
            s.recall("make ship deploy", policy="reference")
            decision = s.decide("ship with make ship", [doc.id], policy="reference")
            s.act(decision.id, "shell", {"cmd": "make ship"})
        moved, _ = wall.supersede(
            old.id,
            new.id,
            reason="the team moved releases",
            grant=wall.grant("user", "alice", beliefs=[old.id, new.id]),
        )
        superseded_at = moved.updated_at
        yield Story(
            url,
            s.id,
            old.id,
            new.id,
            doc.id,
            page.envelope.id,
            decision.id,
            superseded_at,
            doc_file,
        )


# -- why ---------------------------------------------------------------------------------------


def test_why_resolves_id_subject_topic_then_text(story: Story) -> None:
    with firewall.open(story.url) as wall:
        by_id = why(wall.store, story.old_id)
        assert by_id.resolved_by == "id" and by_id.entries[0].belief.id == story.old_id
        by_subject = why(wall.store, "payments.api")
        assert by_subject.resolved_by == "subject"
        assert {e.belief.id for e in by_subject.entries} == {story.old_id, story.new_id}
        pair = why(wall.store, "payments.api/deploy_day")
        assert [e.belief.id for e in pair.entries] == [story.old_id]
        topic = why(wall.store, "payments")
        assert topic.resolved_by == "topic"
        assert {e.belief.id for e in topic.entries} == {story.old_id, story.new_id}
        text = why(wall.store, "make ship")
        assert text.resolved_by == "text" and story.doc_id in {e.belief.id for e in text.entries}
        assert why(wall.store, "zzz nothing").resolved_by is None


def test_why_shows_history_supersession_and_both_times(story: Story) -> None:
    with firewall.open(story.url) as wall:
        (entry,) = why(wall.store, story.old_id).entries
    assert entry.belief.truth_status == TruthStatus.SUPERSEDED
    assert [v.belief.version for v in entry.history] == [1, 2]
    assert entry.history[0].recorded_until == entry.history[1].recorded_from
    (rev,) = entry.history[1].revisions
    assert (rev.axis, rev.from_state, rev.to_state) == ("truth", "supported", "superseded")
    assert rev.grant_id is not None and rev.reason == "the team moved releases"
    (link,) = entry.supersession
    assert (link.old_id, link.new_id, link.reason) == (
        story.old_id,
        story.new_id,
        "the team moved releases",
    )
    # the source's validity and the system's belief time are separate
    assert entry.belief.valid_from == datetime(2025, 1, 1, tzinfo=UTC)
    assert entry.belief.valid_to == datetime(2025, 6, 30, tzinfo=UTC)
    assert entry.belief.updated_at == story.superseded_at
    assert entry.verified_against_source is True
    data = why_json(why(firewall.open(story.url).store, story.old_id))
    assert data["beliefs"][0]["belief"]["valid_to"].startswith("2025-06-30")
    assert data["beliefs"][0]["supersession"][0]["reason"] == "the team moved releases"


def test_supersession_chain_runs_both_ways_from_the_middle(tmp_path: Path) -> None:
    days = ("Mondays", "Tuesdays", "Thursdays", "Fridays")
    with firewall.open(f"sqlite:///{tmp_path / 'chain.db'}", clock=stepping_clock()) as wall:
        alice = wall.channel(Origin.user("alice"))
        with wall.session(project="shop", actor="coder", user="alice") as s:
            beliefs = [
                s.observe(tool="chat", content=f"Deploy on {day}", origin=alice).content[0]
                for day in days
            ]
        for old, new in itertools.pairwise(beliefs):
            grant = wall.grant("user", "alice", beliefs=[old.id, new.id])
            wall.supersede(old.id, new.id, reason=f"{old.id} to {new.id}", grant=grant)
        links = [(b.id, c.id, f"{b.id} to {c.id}") for b, c in itertools.pairwise(beliefs)]
        for middle in beliefs[1:3]:  # one step back and two forward, then two back and one
            (entry,) = why(wall.store, middle.id).entries
            assert [(x.old_id, x.new_id, x.reason) for x in entry.supersession] == links


def test_why_at_returns_what_was_believed_then(story: Story) -> None:
    before = story.superseded_at - timedelta(microseconds=1)
    with firewall.open(story.url) as wall:
        (then,) = why(wall.store, story.old_id, at=before).entries
        assert then.belief.truth_status == TruthStatus.SUPPORTED
        assert then.current is not None
        assert then.current.truth_status == TruthStatus.SUPERSEDED
        subject_then = why(wall.store, "payments.api/deploy_day", at=before)
        assert [e.belief.truth_status for e in subject_then.entries] == [TruthStatus.SUPPORTED]
        assert why(wall.store, story.old_id, at=T0 - timedelta(days=1)).entries == ()
        window = why(wall.store, story.old_id, since=before, until=story.superseded_at)
        assert len(window.entries[0].history) == 2


def test_drift_in_the_stored_block_and_in_the_file(story: Story, tmp_path: Path) -> None:
    with firewall.open(story.url) as wall:
        (entry,) = why(wall.store, story.doc_id).entries
    assert entry.verified_against_source is True
    content = next(s for s in entry.sources if s.block_index == 0)
    assert content.path_verified is True and content.recorded_hash == content.current_hash

    story.doc_file.write_text("Run make deploy-safe instead.\n", encoding="utf-8")
    with firewall.open(story.url) as wall:
        (entry,) = why(wall.store, story.doc_id).entries
    assert entry.verified_against_source is False
    assert "no longer contains the quote" in entry.sources[0].detail
    result = run("beliefs", "verify", "--url", story.url)
    assert result.exit_code == 1 and "DRIFT" in result.output

    story.doc_file.write_text("Run make ship to deploy.\n", encoding="utf-8")
    assert run("beliefs", "verify", "--url", story.url).exit_code == 0
    # now someone edits the stored observation behind Gnomon's back
    conn = sqlite3.connect(tmp_path / "story.db")
    (obs_id, doc) = conn.execute(
        "SELECT id, doc FROM observations WHERE CAST(doc AS TEXT) LIKE '%make ship%'"
    ).fetchone()
    edited = json.loads(doc)
    edited["blocks"] = ["Run make ship --force to deploy."]
    conn.execute(
        "UPDATE observations SET doc = ? WHERE id = ?", (json.dumps(edited).encode(), obs_id)
    )
    conn.commit()
    conn.close()
    result = run("beliefs", "verify", "--url", story.url, "--json")
    assert result.exit_code == 1
    drift = json.loads(result.output)["drift"]
    assert any("stored block changed" in d["detail"] for d in drift)


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_why_history_export(story: Story, tmp_path: Path) -> None:
    result = run("why", "payments.api/deploy_day", "--url", story.url)
    assert result.exit_code == 0, result.output
    assert "the team moved releases" in result.output
    assert "source says valid: 2025-01-01" in result.output
    at = (story.superseded_at - timedelta(microseconds=1)).isoformat()
    data = json.loads(run("why", story.old_id, "--at", at, "--json", "--url", story.url).output)
    assert data["beliefs"][0]["belief"]["truth"] == "supported"
    assert run("why", "x", "--at", "yesterday", "--url", story.url).exit_code == 1

    hist = run("beliefs", "history", story.old_id, "--url", story.url, "--json")
    assert [v["version"] for v in json.loads(hist.output)["versions"]] == [1, 2]
    history_text = run("beliefs", "history", story.old_id, "--url", story.url).output
    assert "superseded" in history_text
    # the revision, rendered alike (one indent level deeper under `why`'s history)
    revision = re.compile(r"truth: supported -> superseded \(user, grant grt_\w+\): the team moved")
    assert re.search(r"^    " + revision.pattern, history_text, re.MULTILINE)
    assert re.search(r"^      " + revision.pattern, result.output, re.MULTILINE)

    exported = run("beliefs", "export", "--format", "csv", "--url", story.url)
    rows = list(csv.DictReader(io.StringIO(exported.output)))
    assert {r["id"] for r in rows} >= {story.old_id, story.new_id, story.doc_id}
    assert next(r for r in rows if r["id"] == story.old_id)["valid_from"].startswith("2025-01-01")
    out = tmp_path / "beliefs.json"
    assert run("beliefs", "export", "--out", str(out), "--url", story.url).exit_code == 0
    assert story.new_id in {b["id"] for b in json.loads(out.read_text())}


def test_cli_supersede_needs_a_pinned_key(story: Story, tmp_path: Path) -> None:
    assert run("keys", "generate").exit_code == 0
    key = str(keys_dir() / "operator.key")
    result = run(
        "beliefs", "supersede", story.doc_id, story.new_id, "--reason", "r", "--key", key,
        "--url", story.url,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{story.new_id} supersedes {story.doc_id}" in result.output
    with firewall.open(story.url) as wall:
        assert wall.require_belief(story.doc_id).truth_status == TruthStatus.SUPERSEDED


# -- replay ------------------------------------------------------------------------------------


def test_replay_under_the_same_policy_changes_nothing_it_accepted(story: Story) -> None:
    with firewall.open(story.url) as wall:
        result = replay(wall.store, story.session_id, "reference")
    for r in result.recalls:
        assert r.accepted == r.actually_accepted and r.quoted == r.actually_quoted
    assert result.recorded_policies == ("reference",)
    assert result.recorded_gate_versions == ("1",)


def test_replay_under_a_stricter_policy_flags_the_decision(story: Story) -> None:
    with firewall.open(story.url) as wall:
        result = replay(wall.store, story.session_id, "default")
    ship = next(r for r in result.recalls if r.query == "make ship deploy")
    assert ship.actually_quoted == (story.doc_id,) and ship.quoted == ()
    (risk,) = result.decisions
    assert (risk.decision_id, risk.belief_id) == (story.decision_id, story.doc_id)
    assert any(reason.startswith("truth") for reason in risk.reasons)
    out = run("replay", story.session_id, "--policy", "default", "--url", story.url)
    assert out.exit_code == 0, out.output
    assert f"! {story.decision_id}" in out.output


def test_replay_sees_the_belief_as_it_was_not_as_it_is(story: Story) -> None:
    # The old belief was accepted at the first recall and superseded later: replay under the
    # same trusted sets must still accept it, because as of that recall it was supported.
    with firewall.open(story.url) as wall:
        result = replay(wall.store, story.session_id, "planner")
        first = result.recalls[0]
        assert story.old_id in first.actually_accepted
        assert story.old_id in first.accepted
        assert wall.require_belief(story.old_id).truth_status == TruthStatus.SUPERSEDED


def test_replay_with_a_stricter_gate_version(story: Story) -> None:
    with firewall.open(story.url) as wall:
        result = replay(wall.store, story.session_id, "reference", gate_version="1-strict")
    # tool envelopes start unverified under 1-strict; user statements stay supported
    assert result.readopted.get(story.envelope_id) == ("supported", "unverified")
    assert story.old_id not in result.readopted
    data = json.loads(
        run(
            "replay", story.session_id, "--policy", "reference", "--gate-version", "1-strict",
            "--json", "--url", story.url,
        ).output
    )  # fmt: skip
    assert data["gate_version"] == "1-strict"
    assert run("replay", "ses_nope", "--policy", "default", "--url", story.url).exit_code == 1


def test_adoption_rules_by_version() -> None:
    tool = _Origin.tool("git")
    assert adoption_rule("1")(tool, EvidenceQuality.TOOL_RESULT).truth == TruthStatus.SUPPORTED
    strict = adoption_rule("1-strict")(tool, EvidenceQuality.TOOL_RESULT)
    assert (strict.truth, strict.retrieval) == (TruthStatus.UNVERIFIED, RetrievalStatus.RESTRICTED)
    user = adoption_rule("1-strict")(_Origin.user("a"), EvidenceQuality.HUMAN_ASSERTION)
    assert user.truth == TruthStatus.SUPPORTED
    with pytest.raises(firewall.GnomonError, match="unknown gate version"):
        adoption_rule("9")


# -- report ------------------------------------------------------------------------------------


def test_report_verdict_warning_and_sections(story: Story) -> None:
    with firewall.open(story.url) as wall:
        report = build_report(wall.store, story.session_id)
    assert report.verdict.level == "red" and report.verdict.decision_on_unverified
    assert not report.verdict.untrusted_became_trusted
    (warning,) = report.warnings
    assert warning.startswith(f"WARNING: decision {story.decision_id}")
    assert f"unverified belief {story.doc_id} (origin untrusted: external:file:" in warning
    titles = [t.title for t in report.sections]
    for title in (
        "Timeline", "Observations", "Claims", "Evidence", "Beliefs", "Decisions", "Actions",
        "Transitions", "Contradictions", "Privileged reads",
    ):  # fmt: skip
        assert title in titles
    markdown, page = render_markdown(report), render_html(report)
    for text in (warning, "superseded", "the team moved releases"):
        assert text in markdown
        assert text.replace("'", "&#x27;") in page or text in page
    assert "<link" not in page and "<script" not in page and "http" not in page.split("<main>")[0]


def test_report_redacts_above_the_ceiling_and_keeps_hashes(tmp_path: Path) -> None:
    wall = firewall.open("memory://", clock=stepping_clock())
    with wall.session(project="p", actor="a") as s:
        secret = s.observe(
            tool="vault",
            content="the signing key is k9-zebra",
            origin=attested(wall, Origin.user("ops")),
            sensitivity=Sensitivity.SECRET,
        )
    report = build_report(wall.store, s.id)
    markdown = render_markdown(report)
    assert "k9-zebra" not in markdown and "k9-zebra" not in render_html(report)
    assert "[redacted: secret]" in markdown
    assert secret.observation.block_hashes[0] in markdown
    assert report.verdict.level == "green"
    full = render_markdown(build_report(wall.store, s.id, ceiling=Sensitivity.SECRET))
    assert "k9-zebra" in full


def test_report_shows_a_granted_promotion_of_untrusted_input() -> None:
    wall = firewall.open("memory://", clock=stepping_clock())
    with wall.session(project="p", actor="a") as s:
        (page,) = s.observe(
            tool="fetch", content="Port 8443", origin=Origin.external("web")
        ).content
        wall.promote(
            page.id, grant=wall.grant("user", "alice", beliefs=[page.id]), reason="checked by hand"
        )
        s.recall("port 8443")
    report = build_report(wall.store, s.id)
    assert report.verdict.level == "amber" and report.verdict.untrusted_became_trusted
    assert "checked by hand" in report.verdict.answers[0]
    transitions = next(t for t in report.sections if t.title == "Transitions")
    assert any("user" in row[4] for row in transitions.rows)


def test_cli_report(story: Story, tmp_path: Path) -> None:
    md = run("report", story.session_id, "--url", story.url)
    assert md.exit_code == 0 and "## Decisions (1)" in md.output
    out = tmp_path / "r.html"
    html = run("report", story.session_id, "--html", "--out", str(out), "--url", story.url)
    assert html.exit_code == 0, html.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert run("report", "ses_nope", "--url", story.url).exit_code == 1


# -- SQLite upgrade ----------------------------------------------------------------------------


def test_older_sqlite_file_gets_its_history_from_the_log(story: Story, tmp_path: Path) -> None:
    path = tmp_path / "story.db"
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE belief_versions")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        history = store.belief_history(story.old_id)
        assert [b.truth_status for b in history] == [TruthStatus.SUPPORTED, TruthStatus.SUPERSEDED]
        before = story.superseded_at - timedelta(microseconds=1)
        (then,) = store.find_beliefs_as_of(BeliefFilter(subject="payments.api"), before)[:1]
        assert then.truth_status == TruthStatus.SUPPORTED
        assert store.verify().ok


# -- the probes fail without their mechanism -----------------------------------------------------


def test_replay_probe_fails_if_replay_reads_current_state(monkeypatch: pytest.MonkeyPatch) -> None:
    from gnomon.firewall.store.memory import MemoryStore
    from gnomon.probes.runner import run_one

    assert run_one("replay_stricter_policy").passed
    monkeypatch.setattr(
        MemoryStore, "find_beliefs_as_of", lambda self, where, at: self.find_beliefs(where)
    )
    result = run_one("replay_stricter_policy")
    assert not result.passed and "despite today's quarantine" in result.detail


def test_time_travel_probe_fails_without_history(monkeypatch: pytest.MonkeyPatch) -> None:
    from gnomon.firewall.store.memory import MemoryStore
    from gnomon.probes.runner import run_one

    assert run_one("time_travel").passed
    monkeypatch.setattr(
        MemoryStore,
        "find_belief_versions",
        lambda self, where, at=None, since=None, until=None: self.find_beliefs(where),
    )
    result = run_one("time_travel")
    assert not result.passed and "as of day 5" in result.detail
