"""Belief-history benchmark: ``why`` and as-of queries over N beliefs with history, and the trust
report of a 10,000-event session.

The history database (``--beliefs`` beliefs, SQLite, the embedded default) is built once and
cached under ``bench/.cache/why-N.db``: beliefs are committed directly to the store, 100 per
event, each with a subject (``svcK.partJ``, 50,000 subjects) and one of 8 predicates, observed over
90 days; then 30% get a second version (promoted) and 5% a third (demoted again), each in later
events, so the history table holds ~1.35 versions per belief. Times (median of ``--repeat``
repetitions of ``--queries`` queries each, per-query latency p50/p95):

* **history by id**: ``store.belief_history(id)`` (one indexed query);
* **as-of by id**: :func:`firewall.audit.replay.version_at` at a random moment (the same query, then
  the choice of the version held);
* **as-of by subject/predicate**: ``find_beliefs_as_of(BeliefFilter(subject, predicate), t)``;
* **as-of by text**: ``find_beliefs_as_of(BeliefFilter(text=q, limit=10), t)`` (FTS5 + versions);
* **why by id** and **why subject/predicate --at**: :func:`firewall.audit.why.why` end to end
(history,
  supersession, contradictions, sources re-hashed).

The report part builds a session of ``--events`` events (observations, recalls, decisions with
actions) in a fresh SQLite store and times ``build_report`` + Markdown + HTML.

    .venv/bin/python bench/why.py --beliefs 1000000 --repeat 5 --queries 1000
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _build
import _common as common

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.replay import version_at
from gnomon.firewall.audit.report import build_report, render_html, render_markdown
from gnomon.firewall.audit.why import why
from gnomon.firewall.gate.adoption import Adopter, Context
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.states import ClaimKind, EvidenceQuality, ExtractionMethod, TruthStatus

NOW = datetime(2025, 6, 1, tzinfo=UTC)
START = NOW - timedelta(days=120)
PROJECT = "bench"
PER_EVENT = 100
PER_COMMIT = 10
SUBJECTS = 50_000
PREDICATES = ("owner", "deploy_day", "region", "runtime", "db", "oncall", "tier", "sla")


def template() -> Belief:
    ctx = Context(project=PROJECT, actor="agent", user="alice", session_id=None)
    return (
        Adopter(
            ctx,
            kind=ClaimKind.CONTENT,
            origin=Origin.external("web:bench"),
            quality=EvidenceQuality.EXTERNAL_DOCUMENT,
            extraction=ExtractionMethod.TOOL,
        )
        .adopt("template", source="web", now=START)
        .belief
    )


def subject_of(i: int) -> tuple[str, str]:
    k = i % SUBJECTS
    return f"svc{k // 10}.part{k % 10}", PREDICATES[(i // SUBJECTS) % len(PREDICATES)]


def build(path: Path, count: int) -> None:
    print(f"building {count:,} beliefs with history into {path} ...", flush=True)
    start = time.perf_counter()
    texts = common.Corpus.build().sentences(count, seed=23)
    rng = random.Random(5)
    tmp, store = _build.building_store(path)
    base = template()
    chunk = PER_EVENT * PER_COMMIT * 10

    def commit(beliefs: list[Belief]) -> None:
        _build.commit_beliefs(
            store, beliefs, at=NOW, project=PROJECT, per_event=PER_EVENT, per_commit=PER_COMMIT
        )

    later: list[Belief] = []
    for offset in range(0, count, chunk):
        made = []
        for n in range(offset, min(offset + chunk, count)):
            observed = START + timedelta(seconds=rng.uniform(0, 90 * 86400))
            subject, predicate = subject_of(n)
            b = base.model_copy(
                update={
                    "id": new_id("bel"),
                    "claim_id": new_id("clm"),
                    "statement": texts[n],
                    "subject": subject,
                    "predicate": predicate,
                    "observed_at": observed,
                    "created_at": observed,
                    "updated_at": observed,
                }
            )
            made.append(b)
            roll = rng.random()
            if roll < 0.30:
                promoted = observed + timedelta(days=rng.uniform(1, 20))
                v2 = b.model_copy(
                    update={
                        "truth_status": TruthStatus.SUPPORTED,
                        "last_verified_at": promoted,
                        "updated_at": promoted,
                        "version": 2,
                    }
                )
                later.append(v2)
                if roll < 0.05:
                    demoted = promoted + timedelta(days=rng.uniform(1, 10))
                    later.append(
                        v2.model_copy(
                            update={
                                "truth_status": TruthStatus.CONTRADICTED,
                                "updated_at": demoted,
                                "version": 3,
                            }
                        )
                    )
        commit(made)
        done = offset + len(made)
        if done % 100_000 == 0 or done == count:
            print(f"  {done:,} ({time.perf_counter() - start:.0f} s)", flush=True)
    later.sort(key=lambda b: b.version)  # every v2 before any v3
    for i in range(0, len(later), chunk):
        commit(later[i : i + chunk])
    print(f"  +{len(later):,} later versions ({time.perf_counter() - start:.0f} s)", flush=True)
    store._conn.execute("ANALYZE")
    store.close()
    _build.move_into_place(tmp, path)
    print(f"built in {time.perf_counter() - start:.0f} s", flush=True)


def sample_ids(path: Path, count: int, rng: random.Random) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(path)
    (top,) = conn.execute("SELECT max(rid) FROM beliefs").fetchone()
    ids = []
    for rid in rng.sample(range(1, top + 1), count):
        row = conn.execute("SELECT id FROM beliefs WHERE rid = ?", (rid,)).fetchone()
        if row:
            ids.append(row[0])
    conn.close()
    return ids


def bench_history(args: argparse.Namespace) -> None:
    common.CACHE_DIR.mkdir(exist_ok=True)
    path = common.CACHE_DIR / f"why-{args.beliefs}.db"
    if args.rebuild or not path.exists():
        build(path, args.beliefs)
    rng = random.Random(42)
    ids = sample_ids(path, args.queries, rng)
    moments = [START + timedelta(seconds=rng.uniform(0, 120 * 86400)) for _ in ids]
    pairs = [subject_of(rng.randrange(args.beliefs)) for _ in ids]
    corpus = common.Corpus.build()
    texts = [corpus.query(rng) for _ in ids]
    wall = firewall.open(f"sqlite:///{path}", cache_mb=256)
    store = wall.store
    versions = store.find_belief_versions(BeliefFilter(limit=1))
    total = store.count_beliefs(BeliefFilter())
    print(f"beliefs={total:,} queries/rep={len(ids)} (first version row: {len(versions)})")

    cases = {
        "history by id": lambda i: store.belief_history(ids[i]),
        "as-of by id": lambda i: version_at(store, ids[i], moments[i]),
        "as-of by subject/predicate": lambda i: store.find_beliefs_as_of(
            BeliefFilter(subject=pairs[i][0], predicate=pairs[i][1], limit=20), moments[i]
        ),
        "as-of by text": lambda i: store.find_beliefs_as_of(
            BeliefFilter(text=texts[i], limit=10), moments[i]
        ),
        "why by id": lambda i: why(store, ids[i]),
        "why subject/predicate --at": lambda i: why(
            store, f"{pairs[i][0]}/{pairs[i][1]}", at=moments[i]
        ),
    }
    warm = min(200, len(ids))
    for i in range(warm):  # warm the page cache
        for fn in cases.values():
            fn(i)
    found = sum(len(cases["as-of by subject/predicate"](i)) for i in range(warm)) / max(warm, 1)
    print(f"mean as-of results by subject/predicate: {found:.1f}")
    reps: dict[str, list[list[float]]] = {name: [] for name in cases}
    clock = time.perf_counter
    for rep in range(args.repeat):
        line = [f"rep {rep + 1}:"]
        for name, fn in cases.items():
            times = []
            for i in range(len(ids)):
                t0 = clock()
                fn(i)
                times.append((clock() - t0) * 1000.0)
            reps[name].append(times)
            line.append(f"{name} p50 {common.percentile(times, 50):.3f}")
        print("  ".join(line), flush=True)
    wall.close()
    print(f"median of {args.repeat} reps (ms):")
    for name, runs in reps.items():
        p50 = common.median([common.percentile(r, 50) for r in runs])
        p95 = common.median([common.percentile(r, 95) for r in runs])
        print(f"  {name:30s} p50 {p50:.3f}  p95 {p95:.3f}")


def bench_report(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'report.db'}"
        state = {"now": START}

        def clock() -> datetime:
            state["now"] += timedelta(milliseconds=10)
            return state["now"]

        corpus = common.Corpus.build()
        rng = random.Random(3)
        t0 = time.perf_counter()
        with firewall.open(url, clock=clock) as wall:
            alice = wall.channel(Origin.user("alice"), project=PROJECT)  # the host's channel
            with wall.session(project=PROJECT, actor="agent", user="alice") as s:
                events = 1
                last: list[str] = []
                while events < args.events - 1:
                    roll = rng.random()
                    if roll < 0.6 or not last:
                        origin = alice if rng.random() < 0.2 else Origin.external("web")
                        made = s.observe(tool="fetch", content=corpus.sentence(rng), origin=origin)
                        last = [b.id for b in made.content] or last
                    elif roll < 0.85:
                        s.recall(corpus.query(rng), policy="reference")
                    elif roll < 0.95:
                        s.decide(corpus.sentence(rng), last[-1:], policy="reference")
                    else:
                        d = s.decide(corpus.sentence(rng), last[-1:], policy="reference")
                        s.act(d.id, "shell", {"cmd": "true"})
                        events += 1
                    events += 1
            session_id = s.id
            built = time.perf_counter() - t0
            n = len(wall.store.session_events(session_id))
            print(f"session with {n:,} events built in {built:.1f} s")
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                report = build_report(wall.store, session_id)
                md = render_markdown(report)
                page = render_html(report)
                times.append(time.perf_counter() - start)
            print(
                f"report over {n:,} events: median {common.median(times):.3f} s "
                f"(min {min(times):.3f}, max {max(times):.3f}); markdown {len(md) / 1e6:.1f} MB, "
                f"html {len(page) / 1e6:.1f} MB, {len(report.warnings)} warnings"
            )


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=5)
    parser.add_argument("--beliefs", type=int, default=100_000, help="beliefs in the database")
    parser.add_argument("--queries", type=int, default=1000, help="queries per repetition")
    parser.add_argument("--events", type=int, default=10_000, help="events in the report session")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached database")
    parser.add_argument("--only", choices=["history", "report"], default=None)
    args = parser.parse_args(argv)
    print(common.machine())
    if args.only != "report":
        bench_history(args)
    if args.only != "history":
        bench_report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
