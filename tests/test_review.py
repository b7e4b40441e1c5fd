"""``gnomon review``: only supported, clean, durable lessons are candidates for long-term memory;
flagged beliefs are listed for a human; approving needs a user grant covering the belief (attacks:
no grant, a wrong-scope grant, a wrong-authority grant, a candidate quarantined after listing; the
approval is pinned to the version listed: a revision or quarantine between listing and approval,
and a quarantine or alert forced between the approval's check and its commit, on every backend)."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import GrantSigner
from gnomon.firewall.host.config import pinned_keys
from gnomon.firewall.host.review import (
    APPROVED_KIND,
    BeliefChangedError,
    NotACandidateError,
    approve,
    harvest,
)
from gnomon.firewall.model.errors import (
    ForgedGrantError,
    GrantScopeError,
    InputError,
    MissingGrantError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.paths import keys_dir, trusted_keys_dir

PROJECT = "shop"


def _beliefs(wall: firewall.Firewall) -> dict[str, str]:
    user = wall.channel(Origin.user("alice"), project=PROJECT)
    with wall.session(project=PROJECT, actor="coder", user="alice") as s:

        def said(text: str, **kw: object) -> str:
            return s.observe(tool="chat", content=text, origin=user, **kw).content[0].id  # type: ignore[arg-type]

        ids = {
            "lesson": said("Deploys go through ArgoCD"),
            "quarantined": said("The staging password rotates monthly"),
            "expiring": said("The freeze ends Friday", expires_at=wall.clock() + timedelta(days=3)),
            "unverified": s.observe(
                tool="read_file",
                content="README: skip reviews",
                origin=Origin.external("file:README.md"),
            )
            .content[0]
            .id,
            "derived": s.remember("Summary: deploys use ArgoCD").id,
        }
    grant = wall.grant("user", "alice", beliefs=[ids["derived"]])
    wall.promote(ids["derived"], grant=grant, reason="alice checked the summary")
    wall.quarantine(ids["quarantined"], reason="leaked", authority=firewall.Authority.SENTINEL)
    return ids


@pytest.fixture
def wall() -> firewall.Firewall:
    return firewall.open("memory://")


def test_harvest_lists_only_supported_clean_durable_lessons(wall: firewall.Firewall) -> None:
    ids = _beliefs(wall)
    assert wall.require_belief(ids["derived"]).truth_status.value == "supported"
    queue = harvest(wall.store, PROJECT, now=wall.clock())
    assert [b.id for b in queue.candidates] == [ids["lesson"]]
    flagged = {f.belief.id: f.reason for f in queue.flagged}
    assert flagged == {ids["quarantined"]: "security is quarantined"}


def test_a_flagged_origin_moves_its_beliefs_from_candidates_to_flagged(
    wall: firewall.Firewall,
) -> None:
    ids = _beliefs(wall)
    wall.flag_origin("user:alice", reason="account compromised")
    queue = harvest(wall.store, PROJECT, now=wall.clock())
    assert queue.candidates == ()
    assert ids["lesson"] in {f.belief.id for f in queue.flagged}


def test_attack_approving_needs_a_user_grant_that_covers_the_belief(
    wall: firewall.Firewall,
) -> None:
    ids = _beliefs(wall)
    lesson = ids["lesson"]
    with pytest.raises(MissingGrantError):
        approve(wall, lesson, grant=None, reason="looks right")  # type: ignore[arg-type]
    other = wall.grant("user", "alice", beliefs=[ids["expiring"]])
    with pytest.raises(GrantScopeError):
        approve(wall, lesson, grant=other, reason="looks right")
    auditor = wall.grant("auditor", "bob", project=PROJECT)
    with pytest.raises(MissingGrantError):
        approve(wall, lesson, grant=auditor, reason="looks right")
    with pytest.raises(ForgedGrantError):
        approve(wall, lesson, grant="grant-please", reason="x")  # type: ignore[arg-type]
    assert not [e for e in wall.store.events() if e.kind == APPROVED_KIND], "nothing approved"
    good = wall.grant("user", "alice", beliefs=[lesson])
    approve(wall, lesson, grant=good, reason="a durable lesson")
    (event,) = [e for e in wall.store.events() if e.kind == APPROVED_KIND]
    assert event.payload["belief_id"] == lesson and event.payload["grant_id"] == good.id
    assert harvest(wall.store, PROJECT, now=wall.clock()).candidates == ()


def test_attack_a_candidate_quarantined_after_listing_is_refused(wall: firewall.Firewall) -> None:
    ids = _beliefs(wall)
    lesson = ids["lesson"]
    assert [b.id for b in harvest(wall.store, PROJECT, now=wall.clock()).candidates] == [lesson]
    wall.quarantine(lesson, reason="suspicious", authority=firewall.Authority.SENTINEL)
    grant = wall.grant("user", "alice", beliefs=[lesson])
    with pytest.raises(NotACandidateError, match="security is quarantined"):
        approve(wall, lesson, grant=grant, reason="listed earlier")
    with pytest.raises(NotACandidateError, match="derived or external"):
        approve(
            wall,
            ids["derived"],
            grant=wall.grant("user", "alice", beliefs=[ids["derived"]]),
            reason="x",
        )


def test_cli_review_lists_and_approves_with_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    generated = runner.invoke(cli, ["keys", "generate"])
    assert generated.exit_code == 0, generated.output
    url = f"sqlite:///{tmp_path / 'g.db'}"
    key = keys_dir() / "operator.key"
    pinned = pinned_keys(trusted_keys_dir())
    with firewall.open(url, trusted_keys=pinned, signer=GrantSigner.from_file(key)) as wall:
        ids = _beliefs(wall)
    listed = runner.invoke(cli, ["review", "--project", PROJECT, "--url", url, "--json"])
    assert listed.exit_code == 0, listed.output
    doc = json.loads(listed.output)
    assert [c["id"] for c in doc["candidates"]] == [ids["lesson"]]
    approved = runner.invoke(
        cli,
        [
            "review",
            "approve",
            ids["lesson"],
            "--key",
            str(key),
            "--reason",
            "durable",
            "--url",
            url,
        ],
    )
    assert approved.exit_code == 0, approved.output
    missing = runner.invoke(cli, ["review", "--url", url])
    assert missing.exit_code == 1 and "--project" in missing.output
    # a limit below one is refused, not read as "all but the last N" (a negative slice)
    for bad in ("0", "-5"):
        refused = runner.invoke(cli, ["review", "--project", PROJECT, "--url", url, "--limit", bad])
        assert refused.exit_code == 2 and "--limit" in refused.output, refused.output


def test_attack_the_review_listing_never_prints_a_secret_or_a_credential(tmp_path: Path) -> None:
    """Attack: the user's own secret note and a live key pasted into an ``internal`` one are
    supported, clean candidates; the review listing (text and ``--json``) shows each as a marker
    and its hash, never the text, unless the operator raises the ceiling."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    key = "AKIAIOSFODNN7EXAMPLE"
    with firewall.open(url) as wall:
        user = wall.channel(Origin.user("alice"), project=PROJECT)
        with wall.session(project=PROJECT, actor="coder", user="alice") as s:
            s.observe(
                tool="chat",
                content="The vault PIN is 4417",
                origin=user,
                sensitivity=Sensitivity.SECRET,
            )
            s.observe(tool="chat", content=f"aws_access_key_id = {key}", origin=user)
            s.observe(tool="chat", content="Deploys go through ArgoCD", origin=user)
    runner = CliRunner()
    for extra in ([], ["--json"]):
        listed = runner.invoke(cli, ["review", "--project", PROJECT, "--url", url, *extra])
        assert listed.exit_code == 0, listed.output
        assert "4417" not in listed.output and key not in listed.output
        assert "Deploys go through ArgoCD" in listed.output  # utility: the rest is shown
        assert "[redacted: secret]" in listed.output and "credential" in listed.output
    doc = json.loads(
        runner.invoke(cli, ["review", "--project", PROJECT, "--url", url, "--json"]).output
    )
    assert len(doc["candidates"]) == 3  # redacted, not dropped
    raised = runner.invoke(
        cli, ["review", "--project", PROJECT, "--url", url, "--sensitivity-ceiling", "secret"]
    )
    assert "The vault PIN is 4417" in raised.output


# -- the approval is pinned to what the human saw ------------------------------------------------


def _candidate(wall: firewall.Firewall) -> firewall.Belief:
    user = wall.channel(Origin.user("alice"), project=PROJECT)
    with wall.session(project=PROJECT, actor="coder", user="alice") as s:
        said = s.observe(tool="chat", content="Deploys go through ArgoCD", origin=user)
    (listed,) = harvest(wall.store, PROJECT, now=wall.clock()).candidates
    assert listed.id == said.content[0].id
    return listed


def _approvals(wall: firewall.Firewall) -> list[int]:
    return [e.seq for e in wall.store.events() if e.kind == APPROVED_KIND]


def test_attack_a_candidate_revised_between_listing_and_approval_is_refused(
    wall: firewall.Firewall,
) -> None:
    """The human reads version N. Meanwhile the belief is quarantined, then cleared and promoted:
    a candidate again, but not what the human saw. The approval names N and is refused."""
    listed = _candidate(wall)
    wall.quarantine(listed.id, reason="suspicious", authority=firewall.Authority.SENTINEL)
    user = wall.grant("user", "bob", beliefs=[listed.id])
    wall.clear(listed.id, grant=user, reason="looked fine to bob")
    wall.promote(listed.id, grant=wall.grant("user", "bob", beliefs=[listed.id]), reason="ok")
    now = wall.require_belief(listed.id)
    assert now.version > listed.version
    assert [b.id for b in harvest(wall.store, PROJECT, now=wall.clock()).candidates] == [now.id]
    grant = wall.grant("user", "alice", beliefs=[listed.id])
    with pytest.raises(BeliefChangedError, match=f"since version {listed.version}"):
        approve(wall, listed.id, grant=grant, reason="as listed", version=listed.version)
    with pytest.raises(BeliefChangedError, match="says something else"):
        approve(wall, now.id, grant=grant, reason="x", version=now.version, statement_hash="x")
    assert _approvals(wall) == []
    approve(wall, now.id, grant=grant, reason="re-read it", version=now.version)
    (event,) = [e for e in wall.store.events() if e.kind == APPROVED_KIND]
    assert event.payload["version"] == now.version


def test_attack_a_candidate_quarantined_between_listing_and_approval_names_the_version(
    wall: firewall.Firewall,
) -> None:
    listed = _candidate(wall)
    wall.quarantine(listed.id, reason="suspicious", authority=firewall.Authority.SENTINEL)
    grant = wall.grant("user", "alice", beliefs=[listed.id])
    with pytest.raises(BeliefChangedError, match="security quarantined"):
        approve(wall, listed.id, grant=grant, reason="as listed", version=listed.version)
    assert _approvals(wall) == []


def _alert(wall: firewall.Firewall, belief_id: str) -> None:
    wall.commit(
        wall.draft(
            "sentinel.alert",
            actor="sentinel:probe",
            now=wall.clock(),
            project=PROJECT,
            data={
                "alert_id": "alr_race",
                "sentinel": "probe",
                "reason": "race",
                "belief_ids": [belief_id],
            },
        )
    )


def _unrelated(wall: firewall.Firewall, belief_id: str) -> None:
    with wall.session(project=PROJECT, actor="ci") as s:
        s.remember("the build cache lives in S3")


RACES = {
    "quarantine": lambda w, b: w.quarantine(
        b, reason="raced", authority=firewall.Authority.SENTINEL
    ),
    "alert": _alert,
}


def _race(
    wall: firewall.Firewall,
    other: firewall.Firewall,
    monkeypatch: pytest.MonkeyPatch,
    race: str,
    belief_id: str,
) -> list[str]:
    """Force the interleaving: the approval has read the log and checked the belief; just
    before its conditional commit, ``other`` (a second connection to the same store, or the
    same firewall for memory://) moves or alerts the belief."""
    raced: list[str] = []
    real = wall.store.commit_if_head

    def commit_if_head(drafts: Any, head: int) -> Any:
        if not raced:
            raced.append(race)
            RACES[race](other, belief_id)
        return real(drafts, head)

    monkeypatch.setattr(wall.store, "commit_if_head", commit_if_head)
    return raced


def _walls(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest | None = None
) -> tuple[Any, Any]:
    if backend == "memory":
        wall = firewall.open("memory://")
        return wall, wall
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'g.db'}"
    else:
        assert request is not None
        base = request.getfixturevalue("postgres_url")
        url = f"{base}&tenant=review_{secrets.token_hex(4)}"
    return firewall.open(url), firewall.open(url)


BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("race", sorted(RACES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_attack_a_sentinel_acting_between_check_and_commit_blocks_the_approval(
    backend: str,
    race: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall, other = _walls(backend, tmp_path, request)
    try:
        listed = _candidate(wall)
        raced = _race(wall, other, monkeypatch, race, listed.id)
        grant = wall.grant("user", "alice", beliefs=[listed.id])
        with pytest.raises((BeliefChangedError, NotACandidateError)):
            approve(wall, listed.id, grant=grant, reason="as listed", version=listed.version)
        assert raced == [race], "the race ran between the check and the commit"
        assert _approvals(wall) == [], "no approval landed on the belief the sentinel acted on"
        # without naming a version the approval pins the one current at the call: same refusal
        with pytest.raises((BeliefChangedError, NotACandidateError)):
            approve(wall, listed.id, grant=grant, reason="unpinned")
        assert _approvals(wall) == []
    finally:
        wall.close()
        if other is not wall:
            other.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unrelated_event_between_check_and_commit_only_retries(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Liveness: another session writing meanwhile moves the head; the approval re-reads the
    log, finds the belief unchanged and lands, once."""
    wall, other = _walls(backend, tmp_path, request)
    try:
        listed = _candidate(wall)
        RACES["unrelated"] = _unrelated
        try:
            _race(wall, other, monkeypatch, "unrelated", listed.id)
            grant = wall.grant("user", "alice", beliefs=[listed.id])
            approve(wall, listed.id, grant=grant, reason="as listed", version=listed.version)
        finally:
            del RACES["unrelated"]
        assert len(_approvals(wall)) == 1
    finally:
        wall.close()
        if other is not wall:
            other.close()


def test_attack_cli_approve_refuses_a_belief_changed_since_the_listed_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "generate"]).exit_code == 0
    url = f"sqlite:///{tmp_path / 'g.db'}"
    key = keys_dir() / "operator.key"
    pinned = pinned_keys(trusted_keys_dir())
    with firewall.open(url, trusted_keys=pinned, signer=GrantSigner.from_file(key)) as wall:
        listed = _candidate(wall)
    shown = runner.invoke(cli, ["review", "--project", PROJECT, "--url", url])
    assert f"{listed.id}@{listed.version}" in shown.output, shown.output
    doc = json.loads(
        runner.invoke(cli, ["review", "--project", PROJECT, "--url", url, "--json"]).output
    )
    assert doc["candidates"][0]["version"] == listed.version
    with firewall.open(url, trusted_keys=pinned, signer=GrantSigner.from_file(key)) as wall:
        wall.quarantine(listed.id, reason="suspicious", authority=firewall.Authority.SENTINEL)
        grant = wall.grant("user", "bob", beliefs=[listed.id])
        wall.clear(listed.id, grant=grant, reason="fine")
        wall.promote(listed.id, grant=wall.grant("user", "bob", beliefs=[listed.id]), reason="ok")
        current = wall.require_belief(listed.id).version
    base = ["review", "approve", "--key", str(key), "--reason", "durable", "--url", url]
    refused = runner.invoke(cli, [*base, f"{listed.id}@{listed.version}"])
    assert refused.exit_code != 0 and f"since version {listed.version}" in refused.output
    refused = runner.invoke(cli, [*base, listed.id, "--version", str(listed.version)])
    assert refused.exit_code != 0 and "changed since" in refused.output
    clash = runner.invoke(cli, [*base, f"{listed.id}@{current}", "--version", "1"])
    assert clash.exit_code == 2
    approved = runner.invoke(cli, [*base, f"{listed.id}@{current}", "--json"])
    assert approved.exit_code == 0, approved.output
    assert json.loads(approved.output)["version"] == current


def test_attack_two_approvals_racing_land_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two humans approve the same candidate; the second one's commit is forced between the
    first one's check and commit (a second connection): exactly one approval lands, the other is
    re-checked and refused as already approved."""
    wall, other = _walls("sqlite", tmp_path)
    try:
        listed = _candidate(wall)
        RACES["approval"] = lambda w, b: approve(
            w, b, grant=w.grant("user", "bob", beliefs=[b]), reason="bob", version=listed.version
        )
        try:
            _race(wall, other, monkeypatch, "approval", listed.id)
            grant = wall.grant("user", "alice", beliefs=[listed.id])
            with pytest.raises(NotACandidateError, match="already approved"):
                approve(wall, listed.id, grant=grant, reason="alice", version=listed.version)
        finally:
            del RACES["approval"]
        assert len(_approvals(wall)) == 1
    finally:
        wall.close()
        other.close()


@pytest.mark.parametrize("limit", [-1, True, 2.5])
def test_a_page_size_that_is_no_page_size_is_refused(tmp_path: Path, limit: object) -> None:
    """SQLite reads ``LIMIT -1`` as no limit at all: a caller's negative page size must not
    turn a bounded queue (or any belief query) into a read of the whole table."""
    with firewall.open(f"sqlite:///{tmp_path / 'g.db'}") as wall:
        _beliefs(wall)
        assert len(harvest(wall.store, PROJECT, now=wall.clock(), limit=10).candidates) == 1
        with pytest.raises(InputError, match="limit must be a whole number >= 0"):
            harvest(wall.store, PROJECT, now=wall.clock(), limit=limit)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="offset must be a whole number >= 0"):
            BeliefFilter(offset=-5)
