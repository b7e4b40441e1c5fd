"""The single-use grant race: one promoting grant, many concurrent users, one promotion.

A grant that promotes or clears is spent by its first use. The attacker holds one grant that
covers two beliefs and presents it twice *at the same time*: from threads of one process, from
two firewalls (two connections) on one PostgreSQL database, and from two processes on one SQLite
file. Spending is one atomic claim (``grant:<id>``, :meth:`Store.claim_execution`), so for every
grant exactly one of the uses lands and every other one raises :class:`SpentGrantError` having
written nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.gate.grants import Grant, GrantSigner, load_public_key, write_keypair
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.host.store_adoption import adopt_store
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.errors import SpentGrantError
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Authority

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 12  # grants raced per test: one lucky interleaving on main is enough to fail


def _note(wall: Firewall, text: str) -> Belief:
    """An unverified page read from the web: what an agent would love to see promoted."""
    with wall.session(project="shop", actor="coder") as s:
        return s.observe(
            tool="fetch", content=text, origin=Origin.external("web:x"), subject="ops.x"
        ).content[0]


def _pairs(wall: Firewall, rounds: int) -> list[tuple[Grant, Belief, Belief]]:
    out = []
    for i in range(rounds):
        a, b = _note(wall, f"Rotate token {i} monthly"), _note(wall, f"Push {i} to main")
        out.append((wall.grant("user", "alice", beliefs=[a.id, b.id]), a, b))
    return out


def _race(*users: Callable[[], None]) -> list[BaseException | None]:
    """Run every user at once (a barrier releases them together); what each raised."""
    barrier = threading.Barrier(len(users))
    results: list[BaseException | None] = [None] * len(users)

    def run(i: int) -> None:
        barrier.wait()
        try:
            users[i]()
        except BaseException as exc:  # collected and asserted below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(users))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


def _promoted(wall: Firewall, *beliefs: Belief) -> int:
    return sum(wall.require_belief(b.id).truth_status == "supported" for b in beliefs)


def _assert_one_landed(
    wall: Firewall, pairs: list[tuple[Grant, Belief, Belief]], outcomes: list[list[object]]
) -> None:
    for (grant, a, b), raised in zip(pairs, outcomes, strict=True):
        assert _promoted(wall, a, b) == 1, f"grant {grant.id} promoted {_promoted(wall, a, b)}"
        assert {r.belief_id for r in wall.store.revisions_by_grant(grant.id)} in ({a.id}, {b.id})
        assert sum(r is None for r in raised) == 1, raised
        assert all(r is None or isinstance(r, SpentGrantError) for r in raised), raised


@contextmanager
def _two_walls(url: str, tmp_path: Path) -> Iterator[tuple[Firewall, Firewall]]:
    key, pub = write_keypair(tmp_path / "keys", "operator")
    opened = {"trusted_keys": [load_public_key(pub)], "signer": GrantSigner.from_file(key)}
    with (
        firewall.open(url, **opened) as one,  # type: ignore[arg-type]
        firewall.open(url, **opened) as two,  # type: ignore[arg-type]
    ):
        yield one, two


def _race_pairs(
    one: Firewall, two: Firewall, pairs: list[tuple[Grant, Belief, Belief]], use: str
) -> list[list[object]]:
    """For each grant, ``one`` and ``two`` call ``use`` (promote, clear) at once, each on one of
    the two beliefs it covers; what each call raised, per grant."""
    outcomes: list[list[object]] = []
    first: Callable[..., object] = getattr(one, use)
    second: Callable[..., object] = getattr(two, use)
    for grant, a, b in pairs:
        outcomes.append(
            list(
                _race(
                    lambda a=a, g=grant: first(a.id, grant=g, reason="mine"),  # type: ignore[misc]
                    lambda b=b, g=grant: second(b.id, grant=g, reason="mine too"),  # type: ignore[misc]
                )
            )
        )
    return outcomes


@pytest.mark.parametrize("scheme", ["memory", "sqlite", "ndjson"])
def test_threads_racing_one_grant_promote_once(scheme: str, tmp_path: Path) -> None:
    url = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'race.db'}",
        "ndjson": f"memory:///{tmp_path / 'race.ndjson'}",
    }[scheme]
    with firewall.open(url) as wall:
        pairs = _pairs(wall, ROUNDS)
        _assert_one_landed(wall, pairs, _race_pairs(wall, wall, pairs, "promote"))


def test_two_connections_racing_one_grant_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    with _two_walls(postgres_url, tmp_path) as (one, two):
        pairs = _pairs(one, ROUNDS)
        _assert_one_landed(one, pairs, _race_pairs(one, two, pairs, "promote"))


def test_a_clearing_grant_raced_from_two_ndjson_stores_clears_once(tmp_path: Path) -> None:
    """Two processes' views of one NDJSON log (two stores on one file) clear on one grant."""
    with _two_walls(f"memory:///{tmp_path / 'race.ndjson'}", tmp_path) as (one, two):
        pairs = _pairs(one, ROUNDS)
        for _, a, b in pairs:
            for belief in (a, b):
                one.quarantine(belief.id, reason="sentinel", authority=Authority.SENTINEL)
        two.store.refresh()  # type: ignore[attr-defined]
        outcomes = _race_pairs(one, two, pairs, "clear")
        one.store.refresh()  # type: ignore[attr-defined]
        for (grant, a, b), raised in zip(pairs, outcomes, strict=True):
            cleared = [one.require_belief(x.id).security_status == "clean" for x in (a, b)]
            assert sum(cleared) == 1, (grant.id, cleared, raised)


def test_racing_an_adoption_against_a_promotion_spends_the_grant_once(tmp_path: Path) -> None:
    from gnomon.firewall.host.firewall import ImportItem

    with firewall.open(f"sqlite:///{tmp_path / 'adopt.db'}") as wall:
        for i in range(ROUNDS):
            wall.import_records(
                [ImportItem(text=f"Deploys go through ArgoCD {i}.", source_id=f"m{i}")],
                store_name=f"mem{i}",
                project="shop",
                bind=True,
            )
        for i in range(ROUNDS):
            grant = wall.grant("user", "ops", project="shop", store=f"mem{i}")
            (bound,) = wall.store.list_bindings(f"mem{i}")
            raised = _race(
                lambda g=grant, i=i: adopt_store(wall, f"mem{i}", grant=g, reason="users' words"),  # type: ignore[misc]
                lambda g=grant, b=bound: wall.promote(b.belief_id, grant=g, reason="again"),  # type: ignore[misc]
            )
            # Exactly one use lands. The other caller is refused as spent, or, when the
            # adoption committed before the promotion read the belief, finds it supported
            # already: a no-op that records nothing and spends nothing.
            assert all(r is None or isinstance(r, SpentGrantError) for r in raised), raised
            events = [e for e in wall.store.events() if e.payload.get("grant_id") == grant.id]
            assert len(events) == 1, [e.kind for e in events]


_PROCESS = """
import sys, time
from pathlib import Path
from gnomon import firewall
from gnomon.firewall.gate.grants import Grant, load_public_key
from gnomon.firewall.model.errors import SpentGrantError
url, pub, jobs, go = sys.argv[1:5]
lines = Path(jobs).read_text().splitlines()
with firewall.open(url, trusted_keys=[load_public_key(pub)]) as w:
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    for line in lines:
        grant_json, belief_id = line.rsplit(" ", 1)
        grant = Grant.model_validate_json(grant_json, strict=False)
        try:
            w.promote(belief_id, grant=grant, reason="racing")
            print("landed", grant.id, flush=True)
        except SpentGrantError:
            print("spent", grant.id, flush=True)
"""


def test_two_processes_racing_one_grant_on_sqlite_promote_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    key, pub = write_keypair(tmp_path / "keys", "operator")
    opened = {"trusted_keys": [load_public_key(pub)], "signer": GrantSigner.from_file(key)}
    with firewall.open(url, **opened) as wall:  # type: ignore[arg-type]
        pairs = _pairs(wall, 40)
    for side in (1, 2):
        (tmp_path / f"jobs{side}").write_text(
            "".join(f"{g.model_dump_json()} {(a if side == 1 else b).id}\n" for g, a, b in pairs)
        )
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS, url, str(pub), str(tmp_path / f"jobs{s}"), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for s in (1, 2)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()  # type: ignore[union-attr]
    go.touch()
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    landed = [
        line.split()[1] for out, _ in outputs for line in out.splitlines() if "landed" in line
    ]
    assert sorted(landed) == sorted(g.id for g, _, _ in pairs)  # each grant exactly once
    with firewall.open(url, **opened) as wall:  # type: ignore[arg-type]
        for grant, a, b in pairs:
            assert _promoted(wall, a, b) == 1, grant.id


def test_attack_a_grant_spent_before_spends_were_claims_stays_spent(tmp_path: Path) -> None:
    """A store written before grant spends were claims: the promotion's event names the grant
    in its revisions but took no ``grant:<id>`` claim (the old host committed it directly). The
    store's claim table has no row for the grant, so only the revisions say it was used: a
    second promotion with it must still be refused, having written nothing."""
    with firewall.open(f"sqlite:///{tmp_path / 'g.db'}") as wall:
        ((grant, a, b),) = _pairs(wall, 1)
        spend = wall.spend
        wall.spend = lambda _grant_id, draft: wall.commit(draft)[0]  # type: ignore[method-assign]
        wall.promote(a.id, grant=grant, reason="checked")
        wall.spend = spend  # type: ignore[method-assign]
        head = wall.store.head()
        with pytest.raises(SpentGrantError):
            wall.promote(b.id, grant=grant, reason="checked again")
        assert wall.store.head() == head
        assert _promoted(wall, a, b) == 1
