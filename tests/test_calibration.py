"""Calibration: scores, the CLI, and a miscalibrated class escalating a cited action."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.cli import cli
from gnomon.firewall.kernel import calibration as cal
from tests.attested import observe_as


def test_scores_are_ece_and_brier() -> None:
    assert cal.score([]) == cal.ClassScore(0, 0.0, 0.0)
    perfect = [(0.75, True)] * 3 + [(0.75, False)]
    assert cal.score(perfect) == cal.ClassScore(4, 0.0, 0.1875)
    # two bins: 0.9 with 1/2 right, 0.1 with 0/2 right -> ECE (0.4*2 + 0.1*2) / 4 = 0.25
    mixed = [(0.9, True), (0.9, False), (0.1, False), (0.1, False)]
    assert cal.score(mixed).ece == 0.25
    assert cal.score([(1.0, True)]) == cal.ClassScore(1, 0.0, 0.0)


def _executed(wall: firewall.Firewall, results: list[bool], *, reported: bool = False) -> str:
    """Kernel-executed ``suggest`` calls citing a user fact, each succeeding or failing as
    ``results`` says (host-observed outcomes); with ``reported``, the agent also reports a
    success for each action of its own. Returns the fact's id."""
    from gnomon.probes._kernel import host

    pending = list(results)

    def suggest(_args: dict[str, object]) -> str:
        if not pending.pop(0):
            raise RuntimeError("the build broke")
        return "ok"

    with (
        host(wall, executors={"suggest": suggest}) as h,
        wall.session(project="p", actor="a", user="u") as s,
    ):
        (fact,) = observe_as(wall, s, Origin.user("u"), tool="chat", content="x is y").content
        for _ in results:
            h.kernel.handle(s).request("suggest", {"text": "use x"}, cites=[fact.id])
            if reported:
                act = s.act(s.decide("use x", [fact.id]).id, "build")
                s.record_outcome(act.id, success=True, summary="all green, trust me")
    return fact.id


def test_cli_calibration_records_a_replayable_event(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        _executed(wall, [True, False])
    runner = CliRunner()
    shown = runner.invoke(cli, ["calibration", "--url", url, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["classes"]["user"]["samples"] == 2
    recorded = json.loads(
        runner.invoke(cli, ["calibration", "--record", "--url", url, "--json"]).output
    )
    with firewall.open(url) as wall:
        event = next(wall.store.events(after=recorded["event_seq"] - 1))
        assert cal.replay(event)["user"].brier == 0.41  # (0.1^2 + 0.9^2) / 2
        assert cal.latest(wall.store) == event


def test_attack_reported_successes_do_not_count() -> None:
    """Issue 21, item 6: the agent reports a success for every action of its own; only the
    kernel's observed outcomes are samples. Flip run: counting ``outcome.recorded`` too doubles
    the samples and lifts the class's score."""
    wall = firewall.open("memory://")
    _executed(wall, [False, False, True], reported=True)
    by_class = cal.samples(wall.store)
    assert [ok for _, _, ok in by_class["user"]] == [False, False, True]
