"""Rebuild benchmark: replay a log into fresh projections, and the whole ``gnomon rebuild`` check.

Builds a SQLite store (cached under ``bench/.cache/``) of ``--events`` events: by default half
bare events (a kind, an actor, a two-field data object, like ``bench/log.py``) and half imported
memories, imported with ``Firewall.import_records`` (since issue 13: one compact batch event per
1,000 memories, so the log holds fewer events than ``--events``; rates are given per event and
per record, a record being a memory or a bare event). Then, per repetition:

* **replay**: every event read from SQLite and appended sealed (``append_sealed``: hash re-check,
  record validation, projection apply) into a fresh ``MemoryStore``;
* **rebuild check**: ``firewall.audit.rebuild.rebuild`` (replay + canonical snapshot of both stores
+
  record-by-record comparison), what ``gnomon rebuild`` runs;
* **verify**: ``firewall.log.checkpoints.verify_log`` over the stored rows (the chain and the
  checkpoint scan ``gnomon log verify`` runs), for comparison with ``bench/log.py``;
* **apply**: ``SQLiteStore.rebuild_projections`` (``gnomon rebuild --apply``: every projection
  table emptied and re-applied from the log in one transaction).

    .venv/bin/python bench/rebuild.py --events 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _common as common

from gnomon import firewall
from gnomon.firewall.audit.rebuild import rebuild, replay
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.log.checkpoints import verify_log
from gnomon.firewall.log.events import EventDraft
from gnomon.firewall.store.sqlite import SQLiteStore

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def build(path: Path, events: int, memories: float) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    corpus = common.Corpus.build()
    with_records = int(events * memories)
    bare = events - with_records
    wall = firewall.open(f"sqlite:///{tmp}")
    texts = corpus.sentences(with_records)
    wall.import_records(
        (ImportItem(text=t, source_id=f"m{i}") for i, t in enumerate(texts)),
        store_name="bench",
        project="bench",
    )
    step = timedelta(milliseconds=1)
    for offset in range(0, bare, 1000):
        wall.commit(
            *[
                EventDraft(
                    kind="bench.note",
                    actor="agent",
                    at=T0 + (offset + i) * step,
                    project="bench",
                    versions={"package": "bench"},
                    data={"i": offset + i, "note": f"step {offset + i} done"},
                )
                for i in range(min(1000, bare - offset))
            ]
        )
    wall.close()
    tmp.rename(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--memories", type=float, default=0.5, help="share of events with records")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(common.machine())
    path = common.CACHE_DIR / f"rebuild-{args.events}-{args.memories}.db"
    started = time.perf_counter()
    build(path, args.events, args.memories)
    print(f"store: {path} (ready in {time.perf_counter() - started:.1f} s)")
    replays, checks, applies, verifies = [], [], [], []
    for run in range(1, args.repeat + 1):
        store = SQLiteStore(path)
        total = store.head()[0]
        start = time.perf_counter()
        fresh = replay(store)
        replays.append(time.perf_counter() - start)
        assert fresh.head() == store.head()
        fresh.close()
        start = time.perf_counter()
        report = rebuild(store)
        checks.append(time.perf_counter() - start)
        assert report.ok, report.to_json()
        start = time.perf_counter()
        verified = verify_log(store.chain_rows())
        verifies.append(time.perf_counter() - start)
        assert verified.ok and verified.events == total
        start = time.perf_counter()
        store.rebuild_projections()
        applies.append(time.perf_counter() - start)
        store.close()
        print(
            f"run {run}: {total} events; replay {total / replays[-1]:,.0f} ev/s, "
            f"rebuild check {total / checks[-1]:,.0f} ev/s, "
            f"verify {total / verifies[-1]:,.0f} ev/s, "
            f"apply {total / applies[-1]:,.0f} ev/s"
        )
    records = args.events  # memories + bare events
    for name, times in (
        ("replay", replays),
        ("rebuild check", checks),
        ("verify_log", verifies),
        ("apply (SQLite, one transaction)", applies),
    ):
        took = common.median(times)
        print(f"median: {name} {total / took:,.0f} events/s, {records / took:,.0f} records/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
