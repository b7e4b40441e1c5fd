"""Single use (issue 28): a grant that promotes is spent by its first use, as the store says.

The attacker holds a user grant that covers two external beliefs and promotes both with it, in
one process or after a restart. Two mechanisms hold: the store's pre-check (the revisions already
made on the grant, :meth:`Store.revisions_by_grant`) and the atomic ``grant:<id>`` claim. The
pre-check alone holds a grant spent before spends were claims (an older log, modelled here by a
first use committed without a claim). Its FLIP: the pre-check blinded, the second use promotes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.gate.grants import GrantSigner, load_public_key, write_keypair
from gnomon.firewall.model.errors import SpentGrantError
from gnomon.firewall.model.states import TruthStatus


def _two_external(wall: firewall.Firewall) -> tuple[str, str]:
    ids = []
    with wall.session(project="single", actor="coder", user="alice") as s:
        for n, text in enumerate(("The deploy key may be shared", "Skip review on Fridays")):
            b = s.observe(
                tool="read_file",
                args={"path": f"n{n}.md"},
                content=text,
                origin=Origin.external(f"file:n{n}.md"),
            ).content[0]
            assert isinstance(b, firewall.Belief)
            ids.append(b.id)
    return ids[0], ids[1]


def test_a_promoting_grant_is_spent_by_its_first_use_across_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    key, pub = write_keypair(tmp_path / "keys", "operator")
    keys = {"trusted_keys": [load_public_key(pub)], "signer": GrantSigner.from_file(key)}
    with firewall.open(url, **keys) as wall:  # type: ignore[arg-type]
        first, second = _two_external(wall)
        grant = wall.grant("user", "alice", beliefs=[first, second])
        assert wall.promote(first, grant=grant, reason="checked").truth_status == "supported"
        with pytest.raises(SpentGrantError, match="already used"):
            wall.promote(second, grant=grant, reason="reuse")
    with firewall.open(url, **keys) as reopened:  # type: ignore[arg-type]
        with pytest.raises(SpentGrantError, match="already used"):
            reopened.promote(second, grant=grant, reason="reuse after a restart")
        assert reopened.store.get_beliefs([second])[second].truth_status == TruthStatus.UNVERIFIED


def _spent_without_a_claim(
    monkeypatch: pytest.MonkeyPatch, wall: firewall.Firewall
) -> tuple[str, firewall.Grant]:
    """The first use committed as an older log did: a plain commit, no ``grant:<id>`` claim."""
    first, second = _two_external(wall)
    grant = wall.grant("user", "alice", beliefs=[first, second])
    with monkeypatch.context() as old:
        old.setattr(wall, "spend", lambda _gid, draft: wall.commit(draft)[0])
        wall.promote(first, grant=grant, reason="checked")
    return second, grant


def test_a_grant_spent_in_an_older_log_stays_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = firewall.open("memory://")
    second, grant = _spent_without_a_claim(monkeypatch, wall)
    with pytest.raises(SpentGrantError, match=r"already used \(on belief"):
        wall.promote(second, grant=grant, reason="reuse")
    assert wall.store.get_beliefs([second])[second].truth_status == TruthStatus.UNVERIFIED


def test_flip_without_the_store_pre_check_the_second_use_promotes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall = firewall.open("memory://")
    second, grant = _spent_without_a_claim(monkeypatch, wall)
    monkeypatch.setattr(wall.store, "revisions_by_grant", lambda _grant_id: [])
    promoted = wall.promote(second, grant=grant, reason="reuse")
    assert promoted.truth_status == TruthStatus.SUPPORTED  # the attack succeeds
