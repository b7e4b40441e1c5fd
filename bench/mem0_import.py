"""mem0 import benchmark: what ``GuardedMemory.gnomon.import_`` does with every memory a mem0
store holds, timed apart from mem0 itself.

Each repetition builds ``--records`` memories in the shape mem0's ``get_all`` returns them
(``id`` a UUID, ``memory``, ``created_at``, ``user_id``, ``metadata``), then, into fresh files:

* **raw store**: the same raw SQLite + FTS5 insert as ``bench/ingest.py`` (the same-run baseline);
* **mem0 import**: every row parsed by the mem0 adapter's own parser
  (:func:`adapters.mem0_backend.to_item`) and imported by :func:`adapters.transfer.import_items`
  with bindings: the batch path (``Firewall.import_records(bind=True)``, one chained event per
  batch), each record bound to its mem0 id with the hash of its text and rendered metadata;
* **re-import**: the same rows again, which must import nothing (every id already bound).

Walking a live mem0 store is mem0's own cost (its vector store's scroll) and is left out: with
the offline ``Memory`` it embeds every text on write, which is not what an import measures.

    .venv/bin/python bench/mem0_import.py --records 100000 --repeat 3
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import _common as common
from ingest import file_bytes, raw_import

from gnomon import firewall
from gnomon.adapters.mem0_backend import to_item
from gnomon.adapters.transfer import import_items


def mem0_rows(texts: list[str]) -> list[dict[str, Any]]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rng = uuid.UUID(int=7).int
    rows = []
    for i, text in enumerate(texts):
        rows.append(
            {
                "id": str(uuid.UUID(int=(rng + i * 2654435761) % (1 << 128), version=4)),
                "memory": text,
                "hash": None,
                "created_at": (start + timedelta(seconds=i)).isoformat(),
                "updated_at": None,
                "user_id": "alice",
                "metadata": {},
            }
        )
    return rows


def mem0_import(url: str, rows: list[dict[str, Any]], batch: int) -> tuple[float, float]:
    with firewall.open(url) as wall:
        start = time.perf_counter()
        report = import_items(
            wall, "mem0", (to_item(r, "get_all") for r in rows), project="shop", batch_size=batch
        )
        first = time.perf_counter() - start
        assert report.imported == len(rows), report
        start = time.perf_counter()
        again = import_items(
            wall, "mem0", (to_item(r, "get_all") for r in rows), project="shop", batch_size=batch
        )
        second = time.perf_counter() - start
        assert again.imported == 0 and again.seen == len(rows), again
    return first, second


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=3, files=True, batch="records per event")
    parser.add_argument("--records", type=int, default=100_000, help="memories per run")
    args = parser.parse_args(argv)

    print(common.machine())
    texts = common.Corpus.build().sentences(args.records)
    rows = mem0_rows(texts)
    print(f"records={args.records} batch={args.batch}")
    samples = common.Samples()
    for rep, tmp in common.fresh_directories(args.repeat, args.dir):
        raw = args.records / raw_import(tmp / "raw.db", texts, args.batch)
        first, second = mem0_import(f"sqlite:///{tmp}/gnomon.db", rows, args.batch)
        size = file_bytes(tmp / "gnomon.db") / args.records
        rate, again = args.records / first, args.records / second
        print(
            f"rep {rep}: raw {raw:,.0f}/s  mem0 import {rate:,.0f}/s  "
            f"ratio {raw / rate:.2f}x  re-import (all skipped) {again:,.0f}/s  "
            f"bytes/record {size:,.0f}",
            flush=True,
        )
        samples.add(raw=raw, rate=rate, again=again, ratio=raw / rate, size=size)
    median_rate = samples.median("rate")
    print(
        f"median: raw {samples.median('raw'):,.0f} records/s, mem0 import with bindings "
        f"{median_rate:,.0f} records/s ({1e6 / median_rate:.1f} us/record), "
        f"raw/import {samples.median('ratio'):.2f}x (same-run ratios), re-import "
        f"{samples.median('again'):,.0f} records/s, {samples.median('size'):,.0f} B/record"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
