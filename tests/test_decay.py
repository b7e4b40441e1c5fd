"""Freshness decay as attacks on time: an old fact must not keep reaching the model as fresh,
and a fact past its expiry must not either, whether or not anyone ran ``gnomon decay``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.host.decay import DECAY_KIND, decay_all, due
from gnomon.firewall.model.errors import GnomonError, TransitionRefused
from gnomon.firewall.model.states import Authority, Axis, FreshnessStatus
from gnomon.probes.runner import ProbeClock
from tests.attested import observe_as

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _facts(wall: firewall.Firewall, *texts: str, expires_at: datetime | None = None) -> list[str]:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        return [
            observe_as(wall, s, Origin.user("alice"), tool="chat", content=t, expires_at=expires_at)
            .content[0]
            .id
            for t in texts
        ]


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_bulk_decay_moves_old_and_expired_beliefs_and_they_leave_default_context(
    url: str, tmp_path: Path
) -> None:
    clock = ProbeClock(T0)
    target = f"sqlite:///{tmp_path / 'g.db'}" if url == "sqlite" else url
    with firewall.open(target, clock=clock) as wall:
        old = _facts(wall, "The deploy freeze starts on the first")
        expiring = _facts(wall, "The canary host is canary-7", expires_at=T0 + timedelta(days=2))
        clock.advance(timedelta(days=20))
        young = _facts(wall, "The deploy window is Tuesday")
        clock.advance(timedelta(days=15))  # old: 35 days, young: 15 days, expiring: past
        report = decay_all(wall, chunk=1)
        # each observation also holds an envelope belief (the tool call), which ages alike
        assert (report.stale, report.expired) == (3, 1)
        assert report.events == 4, "one event per chunk of one"
        states = {i: wall.require_belief(i).freshness_status for i in [*old, *expiring, *young]}
        assert states == {
            old[0]: FreshnessStatus.STALE,
            expiring[0]: FreshnessStatus.EXPIRED,
            young[0]: FreshnessStatus.FRESH,
        }
        assert decay_all(wall) == type(report)(0, 0, 0), "idempotent"
        with wall.session(project="shop", actor="coder", user="alice") as s:
            got = s.recall("deploy freeze canary window", "default")
        assert old[0] not in got.accepted_ids and expiring[0] not in got.accepted_ids
        assert young[0] in got.accepted_ids
        clock.advance(timedelta(days=40))
        assert decay_all(wall).stale == 2  # young goes stale; stale never expires by age alone


def test_lazy_decay_on_read_records_the_move_without_a_bulk_run() -> None:
    clock = ProbeClock(T0)
    with firewall.open("memory://", clock=clock) as wall:
        (old,) = _facts(wall, "The on-call phone is 555-0100")
        clock.advance(timedelta(days=31))
        head = wall.store.head()[0]
        with wall.session(project="shop", actor="coder", user="alice") as s:
            got = s.recall("on-call phone", "default")
        assert old not in got.accepted_ids
        kinds = [e.kind for e in wall.store.events(after=head)]
        assert DECAY_KIND in kinds
        assert wall.require_belief(old).freshness_status == FreshnessStatus.STALE


def test_decay_authority_cannot_refresh_or_be_used_to_unexpire() -> None:
    clock = ProbeClock(T0)
    with firewall.open("memory://", clock=clock) as wall:
        (old,) = _facts(wall, "The VPN gateway is vpn-2", expires_at=T0 + timedelta(days=1))
        clock.advance(timedelta(days=2))
        decay_all(wall)
        for who in (Authority.SYSTEM, Authority.SENTINEL, Authority.POLICY):
            with pytest.raises(TransitionRefused):
                wall.transition(
                    old,
                    [Move(Axis.FRESHNESS, FreshnessStatus.FRESH)],
                    reason="still good",
                    authority=who,
                )
        belief = wall.require_belief(old)
        assert due(belief, clock(), clock() - timedelta(days=30)) is None


def test_cli_decay_and_bad_window(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url, clock=lambda: T0) as wall:
        _facts(wall, "Staging is at staging-3")
    runner = CliRunner()
    ok = runner.invoke(cli, ["decay", "--url", url, "--window", "PT0.001S", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["stale"] >= 1
    bad = runner.invoke(cli, ["decay", "--url", url, "--window", "thirty days"])
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    with firewall.open(url) as wall, pytest.raises(GnomonError):
        decay_all(wall, window="P0D")
