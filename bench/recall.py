"""Recall benchmark: k=10 under the default ContextPolicy against the same text query without it.

The database (``--beliefs`` beliefs, SQLite) is built once and cached under ``bench/.cache/``:
beliefs are committed directly to the store, 100 per event, with a realistic mix:

* ~10% supported / normal / clean facts a user stated (what the default policy accepts);
* the rest unverified / restricted external content, of which ~3% quarantined (hidden);
* sensitivity public 25%, internal 60%, confidential 10%, secret 5%;
* observed up to 90 days before the reference time (the default policy's P30D keeps ~1/3),
  5% with an expiry already passed;
* statements of 6-18 words drawn from a 4,000-word vocabulary with Zipf(1.1) frequencies,
  queries of 2-4 words leaning on the rarer words (see ``_common.Corpus``).

Each repetition runs ``--queries`` queries and times, per query and in alternating order:

* **policy**: ``store.find_beliefs(policy.accept_filter(text=q, project, user, now, limit=k))``;
* **raw**: ``store.find_beliefs(BeliefFilter(text=q, project=project, limit=k))``, the same text
  query through the same store without the policy's conditions;
* and separately **session**: ``Session.recall(q)`` end to end (the accept query, the rejected
  and contradiction queries, building the result, and committing its ``recall.performed`` event).

    .venv/bin/python bench/recall.py --beliefs 100000 --repeat 5 --queries 1000

``--row-check`` prices the belief rows' seal check instead: ``Session.recall`` with the check on
and off (the MAC skipped), alternating per query, as a same-run ratio.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _build
import _common as common

from gnomon import firewall
from gnomon.firewall.gate.adoption import Adopter, Context
from gnomon.firewall.gate.policy import resolve
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import (
    ClaimKind,
    EvidenceQuality,
    ExtractionMethod,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)

NOW = datetime(2025, 6, 1, tzinfo=UTC)
PROJECT = "bench"
USER = "alice"
PER_EVENT = 100
PER_COMMIT = 10
SENSITIVITY = (
    [Sensitivity.PUBLIC] * 25
    + [Sensitivity.INTERNAL] * 60
    + [Sensitivity.CONFIDENTIAL] * 10
    + [Sensitivity.SECRET] * 5
)


def templates() -> tuple[Belief, Belief]:
    """A validated supported user fact and a validated unverified external belief."""
    ctx = Context(project=PROJECT, actor="agent", user=USER, session_id=None)
    user = Adopter(
        ctx,
        kind=ClaimKind.STATEMENT,
        origin=Origin.user(USER),  # a template built below the session API
        quality=EvidenceQuality.HUMAN_ASSERTION,
        extraction=ExtractionMethod.HUMAN,
    ).adopt("template", source="chat", now=NOW)
    external = Adopter(
        ctx,
        kind=ClaimKind.CONTENT,
        origin=Origin.external("web:bench"),
        quality=EvidenceQuality.EXTERNAL_DOCUMENT,
        extraction=ExtractionMethod.TOOL,
    ).adopt("template", source="web", now=NOW)
    assert user.belief.truth_status == TruthStatus.SUPPORTED
    assert external.belief.truth_status == TruthStatus.UNVERIFIED
    return user.belief, external.belief


def make_beliefs(count: int, texts: list[str], rng: random.Random) -> list[Belief]:
    fact, external = templates()
    out = []
    for text in texts[:count]:
        observed = NOW - timedelta(seconds=rng.uniform(0, 90 * 86400))
        roll = rng.random()
        update = {
            "id": new_id("bel"),
            "claim_id": new_id("clm"),
            "statement": text,
            "sensitivity": rng.choice(SENSITIVITY),
            "observed_at": observed,
            "created_at": observed,
            "updated_at": observed,
        }
        if roll < 0.10:
            update["last_verified_at"] = observed
            template = fact
        else:
            template = external
            if roll > 0.97:
                update["security_status"] = SecurityStatus.QUARANTINED
                update["retrieval_status"] = RetrievalStatus.PRIVILEGED_ONLY
        if rng.random() < 0.05:
            update["expires_at"] = NOW - timedelta(days=rng.uniform(0, 10))
        out.append(template.model_copy(update=update))
    return out


def build(path: Path, count: int) -> None:
    print(f"building {count:,} beliefs into {path} ...", flush=True)
    start = time.perf_counter()
    texts = common.Corpus.build().sentences(count, seed=23)
    rng = random.Random(5)
    tmp, store = _build.building_store(path)
    chunk = PER_EVENT * PER_COMMIT * 10
    for offset in range(0, count, chunk):
        beliefs = make_beliefs(min(chunk, count - offset), texts[offset:], rng)
        _build.commit_beliefs(
            store, beliefs, at=NOW, project=PROJECT, per_event=PER_EVENT, per_commit=PER_COMMIT
        )
        done = offset + len(beliefs)
        if done % 100_000 == 0 or done == count:
            print(f"  {done:,} ({time.perf_counter() - start:.0f} s)", flush=True)
    store._conn.execute("PRAGMA optimize")  # planner statistics, as a long-lived store has
    store._conn.execute("ANALYZE")
    store.close()
    _build.move_into_place(tmp, path)
    print(f"built in {time.perf_counter() - start:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=5)
    parser.add_argument("--beliefs", type=int, default=100_000, help="beliefs in the database")
    parser.add_argument("--queries", type=int, default=1000, help="queries per repetition")
    parser.add_argument("--k", type=int, default=10, help="results per recall")
    parser.add_argument("--no-session", action="store_true", help="skip Session.recall")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached database")
    parser.add_argument(
        "--row-check",
        action="store_true",
        help="instead: Session.recall with the belief rows' seal check on and off, interleaved",
    )
    args = parser.parse_args(argv)

    print(common.machine())
    common.CACHE_DIR.mkdir(exist_ok=True)
    path = common.CACHE_DIR / f"recall-{args.beliefs}.db"
    if args.rebuild or not path.exists():
        build(path, args.beliefs)
    wall = firewall.open(f"sqlite:///{path}", clock=lambda: NOW, cache_mb=256)
    store = wall.store
    policy = resolve("default")
    corpus = common.Corpus.build()
    qrng = random.Random(99)
    queries = [corpus.query(qrng) for _ in range(args.queries)]
    k = args.k

    def with_policy(q: str) -> list[Belief]:
        where = policy.accept_filter(text=q, project=PROJECT, user=USER, now=NOW, limit=k)
        return store.find_beliefs(where)

    def without_policy(q: str) -> list[Belief]:
        return store.find_beliefs(BeliefFilter(text=q, project=PROJECT, limit=k))

    for q in queries[:200]:  # warm the page cache
        with_policy(q)
        without_policy(q)
    accepted = sum(len(with_policy(q)) for q in queries[:200]) / 200
    matched = sum(len(without_policy(q)) for q in queries[:200]) / 200
    total = store.count_beliefs(BeliefFilter())
    print(
        f"beliefs={total:,} queries/rep={len(queries)} k={k} "
        f"mean results: policy {accepted:.1f}, raw {matched:.1f}"
    )

    if args.row_check:
        return row_check(wall, queries, args.repeat, k)

    clock = time.perf_counter
    reps: dict[str, list[list[float]]] = {"policy": [], "raw": [], "session": []}
    with wall.session(project=PROJECT, actor="bench", user=USER) as session:
        for rep in range(args.repeat):
            pol: list[float] = []
            raw: list[float] = []
            for i, q in enumerate(queries):
                order = (
                    (with_policy, without_policy) if i % 2 == 0 else (without_policy, with_policy)
                )
                for fn in order:
                    start = clock()
                    fn(q)
                    (pol if fn is with_policy else raw).append((clock() - start) * 1000.0)
            reps["policy"].append(pol)
            reps["raw"].append(raw)
            line = (
                f"rep {rep + 1}: policy p50 {common.percentile(pol, 50):.3f} ms "
                f"p95 {common.percentile(pol, 95):.3f}  raw p50 {common.percentile(raw, 50):.3f} "
                f"ms p95 {common.percentile(raw, 95):.3f}  "
                f"ratio(p50) {common.percentile(pol, 50) / common.percentile(raw, 50):.2f}x"
            )
            if not args.no_session:
                ses = common.time_calls_each(lambda q: session.recall(q, k=k), queries)
                reps["session"].append(ses)
                line += (
                    f"  session p50 {common.percentile(ses, 50):.3f} ms "
                    f"p95 {common.percentile(ses, 95):.3f}"
                )
            print(line, flush=True)
    wall.close()

    def med(name: str, p: float) -> float:
        return common.median([common.percentile(r, p) for r in reps[name]])

    ratios = [
        common.percentile(a, 50) / common.percentile(b, 50)
        for a, b in zip(reps["policy"], reps["raw"], strict=True)
    ]
    print(
        f"median of {args.repeat} reps: policy p50 {med('policy', 50):.3f} ms "
        f"p95 {med('policy', 95):.3f} p99 {med('policy', 99):.3f}; "
        f"raw p50 {med('raw', 50):.3f} ms p95 {med('raw', 95):.3f} p99 {med('raw', 99):.3f}; "
        f"policy/raw p50 ratio {common.median(ratios):.2f}x"
    )
    if reps["session"]:
        print(
            f"median of {args.repeat} reps: Session.recall p50 {med('session', 50):.3f} ms "
            f"p95 {med('session', 95):.3f} p99 {med('session', 99):.3f}"
        )
    return 0


def row_check(wall: firewall.Firewall, queries: list[str], repeat: int, k: int) -> int:
    """The belief rows' seal check (``Sealer.row_problem``, a keyed MAC of each row read) priced
    in the same run: ``Session.recall`` per query with the check on, then off (the MAC skipped),
    alternating which goes first."""
    sealer = wall.store._seal.sealer
    assert sealer is not None, "the cached store must be opened with its key"
    checked = sealer.row_problem

    def unchecked(doc: bytes, tag: bytes | None) -> None:
        return None

    ratios: list[float] = []
    with wall.session(project=PROJECT, actor="bench", user=USER) as session:
        for q in queries[:100]:
            session.recall(q, k=k)
        for rep in range(repeat):
            times: dict[bool, list[float]] = {True: [], False: []}
            for i, q in enumerate(queries):
                for on in (True, False) if i % 2 == 0 else (False, True):
                    sealer.row_problem = checked if on else unchecked  # type: ignore[method-assign]
                    start = time.perf_counter()
                    session.recall(q, k=k)
                    times[on].append((time.perf_counter() - start) * 1000.0)
            sealer.row_problem = checked  # type: ignore[method-assign]
            on_p50, off_p50 = (common.percentile(times[m], 50) for m in (True, False))
            ratios.append(on_p50 / off_p50)
            print(
                f"rep {rep + 1}: Session.recall p50 checked {on_p50:.3f} ms, unchecked "
                f"{off_p50:.3f} ms, checked/unchecked {ratios[-1]:.3f}x",
                flush=True,
            )
    wall.close()
    print(
        f"median of {repeat} reps: row check costs {common.median(ratios):.3f}x Session.recall p50"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
