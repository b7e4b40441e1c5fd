"""Bulk freshness decay and origin fan-out on SQLite, and in-process sentinel overhead per event.

Each figure is printed with the process CPU time it took and the load average after it (the
machine is shared: compare runs by ratios taken in the same session).

Builds a SQLite store of ``--beliefs`` imported memories (``Firewall.import_records``, cached
under ``bench/.cache/``), copies it per measurement, then:

* **decay**: ``firewall.host.decay.decay_all`` with the clock 60 days later, so every belief is due
  (the worst case: every belief moves; one compact ``belief.decayed`` move batch per 50,000);
* **fan-out**: ``Firewall.flag_origin`` on the origin every imported memory carries, so every
  belief is quarantined in ONE event and transaction;
* **sentinel overhead**: ``Sentinel.observe`` per ordinary session event with no alert raised
  (p50; :func:`sentinel_p50`). Batch events (an import of 1,000, a decay chunk) cost in
  proportion to their records and are not what the per-event target is about.

    .venv/bin/python bench/decay.py --beliefs 100000

At 1M, ``--store bench/.cache/recall-1000000.db --no-fan-out`` decays a copy of the recall
benchmark's million-belief store (built by ``bench/recall.py``) instead of importing a new one.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

import _common as common

from gnomon import firewall
from gnomon.firewall.host.decay import decay_all
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.host.sentinels import Sentinel


def build(path: Path, count: int) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    with firewall.open(f"sqlite:///{tmp}") as wall:
        texts = common.Corpus.build().sentences(count)
        wall.import_records(
            (ImportItem(text=t, source_id=f"m{i}") for i, t in enumerate(texts)),
            store_name="bench",
            project="bench",
        )
    tmp.rename(path)


def sentinel_p50(sessions: int = 200) -> float:
    """Per-event cost of ``Sentinel.observe`` on ordinary session events (start, an external
    read, a remember, a recall, end), no alert raised: the in-process overhead per event."""
    with firewall.open("memory://") as wall:
        for i in range(sessions):
            with wall.session(project="bench", actor="coder", user="alice") as s:
                s.observe(
                    tool="read_file",
                    content=f"note {i}: the build uses cache layer {i % 7}",
                    origin=firewall.Origin.external(f"file:notes/{i}.md"),
                )
                s.remember(f"summary {i}: builds are cached")
                s.recall("build cache", "default")
        events = list(wall.store.events())
        sentinel = Sentinel(wall)
        sentinel.state.flagged_origins.add("external:none")
        samples = []
        for event in events:
            t = time.perf_counter_ns()
            sentinel.observe([event])
            samples.append((time.perf_counter_ns() - t) / 1000)
        return statistics.median(samples)


def _load() -> str:
    """The load average when a figure was taken (the machine is shared: read ratios)."""
    with open("/proc/loadavg") as f:
        return "load avg " + " ".join(f.read().split()[:3])


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beliefs", type=int, default=100_000)
    parser.add_argument(
        "--store",
        type=Path,
        help="decay a copy of this SQLite store instead (e.g. bench/.cache/recall-1000000.db)",
    )
    parser.add_argument("--no-fan-out", action="store_true", help="skip the fan-out figure")
    args = parser.parse_args()
    base = args.store or common.CACHE_DIR / f"decay-{args.beliefs}.db"
    started = time.perf_counter()
    if args.store is None:
        build(base, args.beliefs)
    print(f"built/cached {base} in {time.perf_counter() - started:.1f} s")

    work = base.with_name("decay-work.db")
    shutil.copy(base, work)
    with firewall.open(f"sqlite:///{work}") as wall:
        later = wall.clock() + timedelta(days=60)
        wall.clock = lambda: later
        t, cpu = time.perf_counter(), time.process_time()
        report = decay_all(wall)
        spent, cpu = time.perf_counter() - t, time.process_time() - cpu
    moved = report.stale + report.expired
    print(
        f"decay: {report.stale} stale, {report.expired} expired in {report.events} events, "
        f"{spent:.1f} s ({moved / spent:,.0f} beliefs/s), CPU {cpu:.1f} s, {_load()}"
    )

    if args.no_fan_out:
        _remove(work)
        return
    shutil.copy(base, work)
    with firewall.open(f"sqlite:///{work}") as wall:
        first = next(iter(wall.store.decay_candidates(stale_before=later, now=later, limit=1)))
        (origin_id,) = sorted(first.origin.origin_ids)[:1]
        t, cpu = time.perf_counter(), time.process_time()
        moved = wall.flag_origin(origin_id, reason="bench")
        spent, cpu = time.perf_counter() - t, time.process_time() - cpu
        print(
            f"fan-out: {len(moved)} quarantined in one event, {spent:.1f} s, CPU {cpu:.1f} s, "
            f"{_load()}"
        )
    _remove(work)
    print(f"sentinel observe per session event (memory://): p50 {sentinel_p50():.1f} us")
    print(common.machine(), file=sys.stderr)


if __name__ == "__main__":
    main()
