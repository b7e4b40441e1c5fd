"""Ingest benchmark: ``Firewall.import_records`` into SQLite against a raw SQLite + FTS5 insert.

Each repetition imports the same ``--records`` texts twice, into fresh files in a temporary
directory:

* **raw store**: ``executemany`` of ``(source_id, text)`` into one table and of ``(rowid, text)``
  into its external-content FTS5 index, in transactions of ``--batch`` rows (WAL,
  ``synchronous=NORMAL``, the pragmas the Gnomon store uses): what a bare memory store pays to
  keep text findable, done the fast way.
* **firewall**: ``wall.import_records(items, ...)``: every record validated, adopted as a claim,
  an evidence item and a belief, one chained event per batch (the compact import form,
  ``firewall.log.batch``), committed with its projections.

Each line also gives the bytes the store file holds per record after the run (database plus
WAL, after close), for both.

Optionally (``--memory``) the firewall is also measured over ``memory://``.

Sealing (:mod:`firewall.log.seal`), in the same run: the firewall import again into a store
whose sealer seals nothing (``_common.unsealed``) gives the sealed/unsealed ratio.

    .venv/bin/python bench/ingest.py --records 100000 --repeat 3
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common as common

from gnomon import firewall
from gnomon.firewall.host.firewall import ImportItem


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def raw_import(path: Path, texts: list[str], batch: int) -> float:
    conn = common.raw_connect(str(path))
    for statement in common.RAW_DDL:
        conn.execute(statement)
    start = time.perf_counter()
    for offset in range(0, len(texts), batch):
        chunk = texts[offset : offset + batch]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO memories (rid, source_id, text) VALUES (?, ?, ?)",
            [(offset + i + 1, f"m{offset + i}", t) for i, t in enumerate(chunk)],
        )
        conn.executemany(
            "INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
            [(offset + i + 1, t) for i, t in enumerate(chunk)],
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def firewall_import(url: str, texts: list[str], batch: int, *, sealed: bool = True) -> float:
    wall = firewall.open(url)
    if not sealed:
        common.unsealed(wall.store)
    items = [ImportItem(text=t, source_id=f"m{i}") for i, t in enumerate(texts)]
    start = time.perf_counter()
    count = wall.import_records(items, store_name="bench", project="bench", batch_size=batch)
    elapsed = time.perf_counter() - start
    assert count == len(texts)
    assert wall.store.head()[0] == -(-len(texts) // batch)  # one event per batch
    wall.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=3, files=True, batch="records per transaction")
    parser.add_argument("--records", type=int, default=100_000, help="records per run")
    parser.add_argument("--memory", action="store_true", help="also measure memory://")
    args = parser.parse_args(argv)

    print(common.machine())
    texts = common.Corpus.build().sentences(args.records)
    mean_len = sum(map(len, texts)) / len(texts)
    print(f"records={args.records} batch={args.batch} mean text length={mean_len:.0f} chars")
    samples = common.Samples()
    for rep, tmp in common.fresh_directories(args.repeat, args.dir):
        raw = args.records / raw_import(tmp / "raw.db", texts, args.batch)
        fw = args.records / firewall_import(f"sqlite:///{tmp}/gnomon.db", texts, args.batch)
        bare = args.records / firewall_import(
            f"sqlite:///{tmp}/unsealed.db", texts, args.batch, sealed=False
        )
        samples.add(unsealed=bare, seal_cost=bare / fw)
        raw_b = file_bytes(tmp / "raw.db") / args.records
        fw_b = file_bytes(tmp / "gnomon.db") / args.records
        line = (
            f"rep {rep}: raw {raw:,.0f}/s  firewall(sqlite) {fw:,.0f}/s  ratio {raw / fw:.2f}x"
            f"  bytes/record raw {raw_b:,.0f} firewall {fw_b:,.0f}"
            f"  unsealed {bare:,.0f}/s (unsealed/sealed {bare / fw:.3f}x)"
        )
        if args.memory:
            mem = args.records / firewall_import("memory://", texts, args.batch)
            samples.add(memory=mem)
            line += f"  firewall(memory) {mem:,.0f}/s"
        print(line, flush=True)
        samples.add(raw=raw, firewall=fw, ratio=raw / fw)
    print(
        f"median: raw {samples.median('raw'):,.0f} records/s, "
        f"firewall(sqlite) {samples.median('firewall'):,.0f} records/s "
        f"({1e6 / samples.median('firewall'):.1f} us/record), "
        f"raw/firewall {samples.median('ratio'):.2f}x (same-run ratios)"
    )
    print(
        f"median sealing: unsealed/sealed {samples.median('seal_cost'):.3f}x "
        f"(sealing costs {100 * (1 - 1 / samples.median('seal_cost')):.1f}% of ingest)"
    )
    if args.memory:
        print(f"median: firewall(memory) {samples.median('memory'):,.0f} records/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
