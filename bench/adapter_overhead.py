"""Adapter overhead: the guarded ``search`` against the raw client's ``search``, same run, same
queries, and the import rate from a mem0 export.

* mem0: a real offline ``mem0.Memory`` (in-memory qdrant, the shipped hash embedder) holding
  ``--n`` memories, imported into the firewall (so every hit is bound), then ``--queries``
  queries run alternately through ``raw.search`` and ``GuardedMemory.search`` (``top_k=10``).
  The overhead per query is guarded minus raw for the same query; the figures are its p50 and
  the ratio of the p50s.
* local: the same with :class:`adapters.local.LocalMemory`.
* import: ``adapters.transfer.import_items`` of the mem0 export (``get_all``) into a fresh
  ``memory://`` and ``sqlite://`` firewall, records per second.

Run: ``.venv/bin/python bench/adapter_overhead.py [--n 10000] [--queries 300]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

from _common import Corpus, machine

os.environ["MEM0_TELEMETRY"] = "false"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="gnomon-bench-mem0-"))

from gnomon import firewall
from gnomon.adapters.base import StoreItem
from gnomon.adapters.local import GuardedLocalMemory, LocalMemory
from gnomon.adapters.transfer import import_items


def overhead(raw_search: Any, guarded_search: Any, queries: list[str]) -> dict[str, float]:
    raw_t: list[float] = []
    guarded_t: list[float] = []
    diffs: list[float] = []
    for i, q in enumerate(queries):
        order = (raw_search, guarded_search) if i % 2 == 0 else (guarded_search, raw_search)
        took = {}
        for fn in order:
            start = time.perf_counter()
            fn(q)
            took[fn] = time.perf_counter() - start
        raw_t.append(took[raw_search])
        guarded_t.append(took[guarded_search])
        diffs.append(took[guarded_search] - took[raw_search])
    raw_p50 = statistics.median(raw_t)
    guarded_p50 = statistics.median(guarded_t)
    return {
        "raw_p50_ms": raw_p50 * 1e3,
        "guarded_p50_ms": guarded_p50 * 1e3,
        "overhead_p50_ms": statistics.median(diffs) * 1e3,
        "overhead_pct": (guarded_p50 / raw_p50 - 1) * 100,
    }


def bench_mem0(
    sentences: list[str], queries: list[str]
) -> tuple[dict[str, float], dict[str, float]]:
    from gnomon.adapters.mem0 import GuardedMemory
    from gnomon.adapters.testing import offline_memory

    raw = offline_memory(tempfile.mkdtemp())
    start = time.perf_counter()
    for text in sentences:
        raw.add(text, user_id="u", infer=False)
    fill = time.perf_counter() - start
    print(f"mem0: {len(sentences)} raw adds in {fill:.1f} s", file=sys.stderr)
    export = raw.get_all(filters={"user_id": "u"}, top_k=len(sentences) + 10)["results"]
    items = [StoreItem(r["id"], r["memory"]) for r in export]
    rates = {}
    for url in ("memory://", f"sqlite:///{tempfile.mkdtemp()}/g.db"):
        wall = firewall.open(url)
        start = time.perf_counter()
        report = import_items(wall, "mem0", items, project="bench", progress=False)
        took = time.perf_counter() - start
        assert report.imported == len(items)
        rates[url.split(":")[0]] = len(items) / took
        if url != "memory://":
            wall.close()
    wall = firewall.open("memory://")
    import_items(wall, "mem0", items, project="bench", progress=False)
    guarded = GuardedMemory(raw, wall, project="bench", user="u", policy="reference")
    figures = overhead(
        lambda q: raw.search(q, top_k=10, filters={"user_id": "u"}),
        lambda q: guarded.search(q, top_k=10, filters={"user_id": "u"}),
        queries,
    )
    return figures, rates


def bench_local(sentences: list[str], queries: list[str]) -> dict[str, float]:
    raw = LocalMemory()
    for text in sentences:
        raw.add(text, user_id="u")
    wall = firewall.open("memory://")
    rows = raw.get_all(filters={"user_id": "u"}, top_k=len(sentences) + 10)["results"]
    import_items(
        wall,
        "local",
        [StoreItem(r["id"], r["memory"]) for r in rows],
        project="bench",
        progress=False,
    )
    guarded = GuardedLocalMemory(raw, wall, project="bench", user="u", policy="reference")
    return overhead(
        lambda q: raw.search(q, top_k=10, filters={"user_id": "u"}),
        lambda q: guarded.search(q, top_k=10, filters={"user_id": "u"}),
        queries,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    corpus = Corpus.build()
    sentences = corpus.sentences(args.n)
    rng = random.Random(5)
    queries = [corpus.query(rng) for _ in range(args.queries)]
    print(machine())
    mem0_figures, rates = bench_mem0(sentences, queries)
    local_figures = bench_local(sentences, queries)
    for name, figures in (("mem0", mem0_figures), ("local", local_figures)):
        print(
            f"{name:5} n={args.n} search top_k=10: raw p50 {figures['raw_p50_ms']:.3f} ms, "
            f"guarded p50 {figures['guarded_p50_ms']:.3f} ms, overhead p50 "
            f"{figures['overhead_p50_ms']:.3f} ms ({figures['overhead_pct']:+.1f}%)"
        )
    for store, rate in rates.items():
        print(f"import from a mem0 export into {store}://: {rate:,.0f} records/s")


if __name__ == "__main__":
    main()
