"""PostgreSQL benchmarks (issues 4 and 13): recall under the default policy, ingest, and eight
concurrent writer processes, each against the same work without the policy (or the chain).

* **ingest**, over the same ``--ingest-sample`` statements: ``Firewall.import_records`` end to
  end (adoption, one compact batch event per ``--batch``/2 records, the store's COPY fast path);
  ``PostgresStore.commit`` of import batch drafts built beforehand; ``commit`` of drafts carrying
  one belief and one event each (the typed path every other write takes, on a fifth of the
  sample); against a *raw* insert of the same statements into a plain table with a GIN-indexed
  tsvector and no chain.
* **recall**: ``find_beliefs`` with the default policy's accept filter (``ContextPolicy
  .accept_filter``: supported + normal + clean, sensitivity <= internal, fresh within P30D,
  not expired, project or global, user scope), k=10, against the same text query with no policy
  filter; also without text (the newest admissible beliefs), and the full ``Session.recall``
  (three store queries and the logged recall event), also with ``synchronous_commit=off``.
  ``--explain`` prints the plans of the first query. The corpus is written through import
  batches (one project, scope and state combination per batch of 250).
* **writers**: 8 processes appending to one tenant, then the chain is checked gap-free and valid;
  against 8 processes inserting the same rows into a plain table (no chain, no lock).

    .venv/bin/python bench/postgres.py --beliefs 1000000
    .venv/bin/python bench/postgres.py --beliefs 100000 --skip-build   # reuse the tenant

The database (``--url``, default ``postgresql://postgres@127.0.0.1:5432/gnomon_bench``) is
created if missing; each corpus size gets its own tenant (``bench_<n>``), so a 1M corpus is
built once and reused with ``--skip-build``. Tenants of one database share its text index: the
unfiltered baseline then reads every tenant's matches (the gate holds the tenant, so the policy
queries do not), so give each corpus size its own ``--url`` when the ratio matters.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import secrets
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import _common as common
import psycopg

from gnomon.firewall.gate.adoption import Adopter, Context
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.log.batch import ImportBatch
from gnomon.firewall.log.events import EventDraft, Records
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import (
    Authority,
    ClaimKind,
    EvidenceQuality,
    ExtractionMethod,
    RetrievalStatus,
    Scope,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)
from gnomon.firewall.store.postgres import PostgresStore

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/gnomon_bench"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
PROJECTS = [f"proj{i}" for i in range(20)]
ORIGIN = Origin.tool("bench")


def ensure_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit((parts.scheme, parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def make_beliefs(rng: random.Random, statements: list[str]) -> list[Belief]:
    """A realistic mix: ~45% trusted (supported/normal/clean), the rest spread over the axes."""
    out = []
    for statement in statements:
        roll = rng.random()
        trusted = roll < 0.45
        observed = NOW - timedelta(minutes=rng.randint(0, 90 * 24 * 60))
        scope = Scope.GLOBAL if rng.random() < 0.02 else Scope.PROJECT
        out.append(
            Belief(
                id=new_id("bel"),
                claim_id=new_id("clm"),
                kind=ClaimKind.STATEMENT,
                statement=statement,
                project=rng.choice(PROJECTS),
                scope=scope,
                authority=Authority.SYSTEM,
                origin=ORIGIN,
                truth_status=TruthStatus.SUPPORTED if trusted else TruthStatus.UNVERIFIED,
                retrieval_status=_retrieval(trusted, roll),
                security_status=SecurityStatus.QUARANTINED if roll > 0.97 else SecurityStatus.CLEAN,
                sensitivity=Sensitivity.CONFIDENTIAL
                if rng.random() < 0.1
                else Sensitivity.INTERNAL,
                observed_at=observed,
                created_at=observed,
                updated_at=observed,
            )
        )
    return out


def _retrieval(trusted: bool, roll: float) -> RetrievalStatus:
    if roll > 0.97:
        return RetrievalStatus.BLOCKED  # a quarantined belief stays blocked (gate invariant)
    return RetrievalStatus.NORMAL if trusted or roll < 0.7 else RetrievalStatus.RESTRICTED


def batch_drafts(rng: random.Random, statements: list[str], size: int = 50) -> list[EventDraft]:
    """The same mix as :func:`make_beliefs`, written the way an import writes (one compact batch
    event per ``size`` records, :mod:`firewall.log.batch`): each batch draws one project, scope and
    state combination, each record its own sensitivity and observation time. The states are set
    on the template directly (the benchmark plays the host, as ``drafts_for`` does)."""
    drafts = []
    for offset in range(0, len(statements), size):
        roll = rng.random()
        trusted = roll < 0.45
        project = rng.choice(PROJECTS)
        adopter = Adopter(
            Context(project, "bench", None, None),
            kind=ClaimKind.CONTENT,
            origin=Origin.imported("bench"),
            quality=EvidenceQuality.EXTERNAL_DOCUMENT,
            extraction=ExtractionMethod.IMPORT,
        )
        made = adopter.adopt("template", source="bench:template", now=NOW)
        belief = made.belief.model_copy(
            update={
                "scope": Scope.GLOBAL if rng.random() < 0.02 else Scope.PROJECT,
                "truth_status": TruthStatus.SUPPORTED if trusted else TruthStatus.UNVERIFIED,
                "retrieval_status": _retrieval(trusted, roll),
                "security_status": SecurityStatus.QUARANTINED
                if roll > 0.97
                else SecurityStatus.CLEAN,
            }
        )
        batch = ImportBatch(replace(made, belief=belief), None, NOW)
        for i, statement in enumerate(statements[offset : offset + size]):
            batch.add(
                statement,
                source=f"bench:{offset + i}",
                sensitivity=Sensitivity.CONFIDENTIAL
                if rng.random() < 0.1
                else Sensitivity.INTERNAL,
                observed_at=NOW - timedelta(minutes=rng.randint(0, 90 * 24 * 60)),
            )
        drafts.append(
            EventDraft(kind="memory.imported", actor="bench", at=NOW, project=project, batch=batch)
        )
    return drafts


def drafts_for(beliefs: list[Belief]) -> list[EventDraft]:
    return [
        EventDraft(
            kind="belief.imported",
            actor="bench",
            at=b.created_at,
            project=b.project,
            records=Records(beliefs=(b,)),
        )
        for b in beliefs
    ]


# -- ingest ---------------------------------------------------------------------------------


def build(url: str, tenant: str, total: int, batch: int, corpus: common.Corpus) -> float:
    """Ingest ``total`` beliefs through the import batch path (the fast ingest); returns
    records per second of the commits alone."""
    rng = random.Random(5)
    committed = 0.0
    with PostgresStore(url, tenant=tenant) as store:
        done = store.count_beliefs(BeliefFilter())
        while done < total:
            size = min(batch, total - done)
            statements = [corpus.sentence(rng) for _ in range(size)]
            drafts = batch_drafts(rng, statements, size=250)
            start = time.perf_counter()
            store.commit(drafts)
            committed += time.perf_counter() - start
            done += size
            if done % 100_000 < batch:
                print(
                    f"  built {done:,} ({done / committed:,.0f} records/s in commits)", flush=True
                )
    return total / committed if committed else 0.0


def raw_ingest(url: str, statements: list[str], batch: int) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_raw")
        conn.execute(
            "CREATE TABLE bench_raw (id text PRIMARY KEY, text text NOT NULL, "
            "tsv tsvector NOT NULL)"
        )
        conn.execute("CREATE INDEX bench_raw_tsv ON bench_raw USING gin (tsv)")
        start = time.perf_counter()
        for offset in range(0, len(statements), batch):
            chunk = statements[offset : offset + batch]
            with conn.transaction():
                conn.execute(
                    "INSERT INTO bench_raw SELECT u.id, u.t, to_tsvector('simple', u.t) "
                    "FROM unnest(%s::text[], %s::text[]) AS u(id, t)",
                    ([secrets.token_hex(8) for _ in chunk], chunk),
                )
        elapsed = time.perf_counter() - start
        conn.execute("DROP TABLE bench_raw")
    return len(statements) / elapsed


def ingest_section(url: str, corpus: common.Corpus, batch: int, sample: int) -> dict[str, float]:
    """Records per second of each ingest path over the same ``sample`` statements."""
    rng = random.Random(9)
    statements = [corpus.sentence(rng) for _ in range(sample)]
    tenant = f"bench_ingest_{secrets.token_hex(4)}"
    rates: dict[str, float] = {}
    from gnomon import firewall

    # Firewall.import_records end to end: adoption, one compact batch event per batch_size
    # records, the store's fast path (COPY of rows derived from the compact rows)
    items = [ImportItem(text=t, source_id=f"m{i}") for i, t in enumerate(statements)]
    with firewall.open(url, tenant=f"{tenant}_fw") as wall:
        start = time.perf_counter()
        wall.import_records(items, store_name="bench", project="proj0", batch_size=batch // 2)
        rates["import_records"] = sample / (time.perf_counter() - start)
        assert wall.verify_log().ok
        wall.store.discard()  # type: ignore[attr-defined]
    # the store alone, committing import batch drafts built beforehand
    drafts = batch_drafts(rng, statements, size=batch // 2)
    with PostgresStore(url, tenant=f"{tenant}_batch") as store:
        start = time.perf_counter()
        for offset in range(0, len(drafts), 2):
            store.commit(drafts[offset : offset + 2])
        rates["store_batch"] = sample / (time.perf_counter() - start)
        assert store.verify().ok
        store.discard()
    # the typed path: one event per record (what every non-import write does), a fifth of it
    small = statements[: max(1, sample // 5)]
    typed = drafts_for(make_beliefs(rng, small))
    with PostgresStore(url, tenant=tenant) as store:
        start = time.perf_counter()
        for offset in range(0, len(typed), batch):
            store.commit(typed[offset : offset + batch])
        rates["store_typed"] = len(small) / (time.perf_counter() - start)
        assert store.verify().ok
        store.discard()
    rates["raw"] = raw_ingest(url, statements, batch)
    return rates


# -- recall ---------------------------------------------------------------------------------


def timed(fn: object, count: int) -> list[float]:
    call = fn  # type: ignore[assignment]
    out = []
    for _ in range(count):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"p50 {statistics.median(values):.2f} ms, p95 {p95:.2f} ms"


def recall_section(
    url: str, tenant: str, corpus: common.Corpus, queries: int, *, explain: bool = False
) -> None:
    policy = ContextPolicy.preset("default")
    rng = random.Random(3)
    texts = [corpus.query(rng) for _ in range(queries)]
    with PostgresStore(url, tenant=tenant) as store:
        with psycopg.connect(store.conninfo, autocommit=True) as conn:
            conn.execute("ANALYZE beliefs")
        total = store.count_beliefs(BeliefFilter())
        print(f"recall over {total:,} beliefs in tenant {tenant}, {queries} queries, k=10")
        # warm up caches and prepared statements
        for text in texts[:20]:
            store.find_beliefs(BeliefFilter(text=text, limit=10))
        cases = []
        for i, text in enumerate(texts):
            project = PROJECTS[i % len(PROJECTS)]
            cases.append(
                (
                    policy.accept_filter(text=text, project=project, user="alice", now=NOW),
                    BeliefFilter(text=text, limit=10),
                    policy.accept_filter(project=project, user="alice", now=NOW),
                    BeliefFilter(limit=10),
                )
            )
        names = ["text + default policy", "text, no filter", "no text + policy", "no text, none"]
        results: dict[str, list[float]] = {n: [] for n in names}
        matches = []
        for case in cases:
            for name, where in zip(names, case, strict=True):
                results[name].extend(timed(lambda w=where: store.find_beliefs(w), 1))
            matches.append(store.count_beliefs(BeliefFilter(text=case[1].text)))
        for name in names:
            print(f"  {name:24} {summary(results[name])}")
        p50 = {n: statistics.median(v) for n, v in results.items()}
        print(
            f"  ratio policy/no-filter: text {p50[names[0]] / p50[names[1]]:.2f}x, "
            f"no text {p50[names[2]] / p50[names[3]]:.2f}x"
        )
        print(
            f"  text matches per query (before the policy): median "
            f"{statistics.median(matches):,.0f}, max {max(matches):,}"
        )
        if explain:
            for name, where in (("accept query", cases[0][0]), ("raw text query", cases[0][1])):
                query = store._belief_query(where, count=False)
                assert query is not None
                with psycopg.connect(store.conninfo, autocommit=True) as conn:
                    plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query[0], query[1])
                    print(f"  EXPLAIN ANALYZE, {name}:")
                    for (line,) in plan:
                        print(f"    {line}")
    from gnomon import firewall

    # the same recall committed without waiting for the WAL flush: the durability SQLite's
    # synchronous=NORMAL gives every commit (a crash may lose the last events, never a link)
    relaxed = f"{url}{'&' if '?' in url else '?'}options=-csynchronous_commit%3Doff"
    for name, target in (("", url), (", synchronous_commit=off", relaxed)):
        with firewall.open(target, tenant=tenant, clock=lambda: NOW) as wall:
            with wall.session(project=PROJECTS[0], actor="bench", user="alice") as session:
                session.recall(texts[0])
                full = timed(lambda: session.recall(rng.choice(texts)), min(200, queries))
            print(f"  Session.recall (default policy, logged{name})  {summary(full)}")


# -- concurrent writers ---------------------------------------------------------------------


def _writer(
    url: str,
    tenant: str,
    commits: int,
    per_commit: int,
    seed: int,
    raw: bool,
    start: object,
    spans: object,
) -> None:
    """Prepare (imports, connection, the rows), wait for the common start, then write."""
    corpus = common.Corpus.build()
    rng = random.Random(seed)
    chunks = [[corpus.sentence(rng) for _ in range(per_commit)] for _ in range(commits)]
    if raw:
        with psycopg.connect(url, autocommit=True) as conn:
            start.wait()  # type: ignore[attr-defined]
            began = time.time()
            for chunk in chunks:
                conn.execute(
                    "INSERT INTO bench_raw_writers SELECT u.id, u.t, to_tsvector('simple', u.t) "
                    "FROM unnest(%s::text[], %s::text[]) AS u(id, t)",
                    ([secrets.token_hex(8) for _ in chunk], chunk),
                )
            spans.put((began, time.time()))  # type: ignore[attr-defined]
        return
    drafts = [drafts_for(make_beliefs(rng, chunk)) for chunk in chunks]
    with PostgresStore(url, tenant=tenant, pool_size=1) as store:
        store.head()
        start.wait()  # type: ignore[attr-defined]
        began = time.time()
        for batch in drafts:
            store.commit(batch)
        spans.put((began, time.time()))  # type: ignore[attr-defined]


def _run_writers(url: str, tenant: str, procs: int, commits: int, per: int, raw: bool) -> float:
    """Seconds from the common start to the last writer's end (start-up excluded)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(procs)
    spans = ctx.Queue()
    workers = [
        ctx.Process(target=_writer, args=(url, tenant, commits, per, seed, raw, start, spans))
        for seed in range(procs)
    ]
    for w in workers:
        w.start()
    found = [spans.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
        assert w.exitcode == 0
    return max(end for _, end in found) - min(began for began, _ in found)


def writers_section(url: str, commits: int, per_commit: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_raw_writers")
        conn.execute(
            "CREATE TABLE bench_raw_writers (id text PRIMARY KEY, text text, tsv tsvector)"
        )
        conn.execute("CREATE INDEX ON bench_raw_writers USING gin (tsv)")
    print(f"writers: {commits} commits x {per_commit} belief(s) per process")
    for procs in (1, 8):
        tenant = f"bench_writers_{procs}_{secrets.token_hex(4)}"
        elapsed = _run_writers(url, tenant, procs, commits, per_commit, raw=False)
        with PostgresStore(url, tenant=tenant) as store:
            seqs = [e[0] for e in store.chain_rows()]
            gap_free = seqs == list(range(1, len(seqs) + 1))
            ok = store.verify().ok
        events = procs * commits * per_commit
        raw = _run_writers(url, tenant, procs, commits, per_commit, raw=True)
        print(
            f"  {procs} process(es): {events / elapsed:,.0f} events/s aggregate "
            f"({events:,} events, gap-free {gap_free}, chain valid {ok}); "
            f"raw inserts {events / raw:,.0f} rows/s; gnomon/raw throughput {raw / elapsed:.2f}x"
        )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE bench_raw_writers")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--beliefs", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--ingest-sample", type=int, default=50_000)
    parser.add_argument("--writer-commits", type=int, default=200)
    parser.add_argument("--per-commit", type=int, default=5)
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--explain", action="store_true", help="print the plans of one query")
    parser.add_argument("--only", choices=["ingest", "recall", "writers"], default=None)
    args = parser.parse_args(argv)
    ensure_database(args.url)
    corpus = common.Corpus.build()
    print(common.machine())
    with psycopg.connect(args.url) as conn:
        print(conn.execute("SELECT version()").fetchone()[0])  # type: ignore[index]
    if args.only in (None, "ingest"):
        rates = ingest_section(args.url, corpus, args.batch, args.ingest_sample)
        raw = rates["raw"]
        print(
            f"ingest {args.ingest_sample:,} records in commits of {args.batch}: "
            f"Firewall.import_records {rates['import_records']:,.0f} records/s "
            f"(raw/this {raw / rates['import_records']:.2f}x); store commit of import batches "
            f"{rates['store_batch']:,.0f} records/s (raw/this {raw / rates['store_batch']:.2f}x); "
            f"store commit, one event per record {rates['store_typed']:,.0f} records/s "
            f"(raw/this {raw / rates['store_typed']:.2f}x); raw table {raw:,.0f} rows/s"
        )
    tenant = f"bench_{args.beliefs}"
    if args.only in (None, "recall"):
        if not args.skip_build:
            rate = build(args.url, tenant, args.beliefs, args.batch, corpus)
            print(f"built {args.beliefs:,} beliefs ({rate:,.0f} records/s in commits)")
        recall_section(args.url, tenant, corpus, args.queries, explain=args.explain)
    if args.only in (None, "writers"):
        writers_section(args.url, args.writer_commits, args.per_commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
