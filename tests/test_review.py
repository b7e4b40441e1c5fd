"""``gnomon review``: only supported, clean, durable lessons are candidates for long-term memory;
flagged beliefs are listed for a human; approving needs a user grant covering the belief (attacks:
no grant, a wrong-scope grant, a wrong-authority grant, a candidate quarantined after listing)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import GrantSigner
from gnomon.firewall.host.config import pinned_keys
from gnomon.firewall.host.review import APPROVED_KIND, NotACandidateError, approve, harvest
from gnomon.firewall.model.errors import ForgedGrantError, GrantScopeError, MissingGrantError
from gnomon.firewall.model.states import Sensitivity

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
    key = tmp_path / ".gnomon" / "keys" / "operator.key"
    pinned = pinned_keys(tmp_path / ".gnomon" / "trusted_keys")
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
