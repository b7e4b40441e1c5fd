"""One credential rule on every path (issue 21, item 4).

The attack: a page the agent read holds a live key, labelled ``internal`` by its reader. The
mem0 drop-in already withholds it from a quoted search; the same memory must not come back in
full through the store's own recall either: ``recall(policy="reference").render()`` (quoted
data), ``gnomon recall --policy reference`` (the CLI, JSON and table), nor on an "Uncertain"
line of a ``default`` recall (a subject carrying the key), nor as a rejection's origin id.

Flip run by hand: ``Session.recall`` without ``withhold_credentials`` makes every test here fail.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.cli import cli

KEY = "ADMIN_TOKEN = 'sk-live-4f9a1c0ffee'"
CLEAN = "Deploy notes: we deploy on Fridays after the standup."


def _plant(wall: firewall.Firewall) -> None:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        s.observe(
            tool="web_fetch",
            content=[f"Deploy notes: {KEY}", CLEAN],
            origin=firewall.Origin.external("https://wiki.example/deploy"),
        )
        s.observe(
            tool="web_fetch",
            content="Deploy checklist: run the smoke tests",
            origin=firewall.Origin.external(f"https://wiki.example/deploy?{KEY}"),
            subject=f"deploy {KEY}",
        )


def test_attack_a_quoted_recall_does_not_quote_a_key() -> None:
    wall = firewall.open("memory://")
    _plant(wall)
    with wall.session(project="shop", actor="coder", user="alice") as s:
        quoted = s.recall("deploy notes", policy="reference")
        default = s.recall("deploy checklist smoke")
    assert "sk-live-4f9a1c0ffee" not in quoted.render()
    assert CLEAN in quoted.render()  # the clean page is still quoted
    assert any("credential" in r.detail for x in quoted.rejected for r in x.reasons)
    assert "sk-live-4f9a1c0ffee" not in default.render()
    for result in (quoted, default):
        for r in result.rejected:
            assert not any("sk-live" in o for o in r.origin.origin_ids)


def test_attack_gnomon_recall_does_not_print_a_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        _plant(wall)
    runner = CliRunner()
    for extra in ([], ["--json"]):
        for policy in ("reference", "default"):
            args = ["recall", "deploy", "--policy", policy, "--project", "shop"]
            args += ["--user", "alice", "--url", url, *extra]
            shown = runner.invoke(cli, args)
            assert shown.exit_code == 0, shown.output
            if policy == "reference" and extra:  # (a table may wrap the text at any width)
                assert "we deploy on Fridays" in shown.output  # the clean page is quoted
            assert "sk-live-4f9a1c0ffee" not in shown.output
