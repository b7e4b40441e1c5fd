"""Event-loop stalls: ``AsyncGuardedMemory`` against the raw ``AsyncMemory``, same run.

A ticker coroutine sleeps 1 ms in a loop and records how late each wake-up is (the time the loop
was blocked by something else). While it runs, 100 calls go through the client: 50
``add(messages, infer=False)`` and 50 ``search`` (top 5), alternating. The figure is the longest
stall (max lateness) and the p99, for the raw ``AsyncMemory`` (offline, hash embedder) and for
the guarded client over a firewall on SQLite (a file: real store I/O), each run ``--runs`` times
alternately; medians over runs are reported with the guarded/raw ratio.

Run: ``PYTHONPATH=. python bench/async_stall.py [--runs 5] [--calls 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "false")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="gnomon-bench-mem0-"))
sys.path.insert(0, os.path.dirname(__file__))

from _common import machine, percentile

from gnomon import firewall
from gnomon.adapters.mem0 import AsyncGuardedMemory
from gnomon.adapters.testing import HashEmbedder, offline_config

TICK = 0.001


async def stalls(work: Callable[[], Awaitable[None]]) -> list[float]:
    """Lateness of every 1 ms tick while ``work`` runs (seconds)."""
    late: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            late.append(max(0.0, time.perf_counter() - start - TICK))

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        await work()
    finally:
        done.set()
        await tick
    return late


async def calls(client: Any, n: int, tag: str) -> None:
    for i in range(n):
        if i % 2 == 0:
            text = f"{tag} note {i}: the build server {i} needs a restart."
            await client.add([{"role": "user", "content": text}], user_id="alice", infer=False)
        else:
            await client.search(f"build server {i - 1}", filters={"user_id": "alice"}, top_k=5)


def summary(late: list[float]) -> tuple[float, float]:
    """The longest stall and the p99 lateness, in ms."""
    return max(late, default=0.0) * 1e3, percentile(late, 99) * 1e3


def offline_async() -> Any:
    """A real ``mem0.AsyncMemory``, offline (in-memory qdrant, the hash embedder)."""
    from mem0 import AsyncMemory

    raw = AsyncMemory.from_config(offline_config(tempfile.mkdtemp()))
    raw.embedding_model = HashEmbedder()
    return raw


async def run_raw(n: int) -> tuple[float, float]:
    raw = offline_async()
    return summary(await stalls(lambda: calls(raw, n, "raw")))


async def run_guarded(n: int, url: str = "") -> tuple[float, float]:
    raw = offline_async()
    url = url or f"sqlite:///{os.path.join(tempfile.mkdtemp(), 'gnomon.db')}"
    wall = firewall.open(url)
    try:
        client = AsyncGuardedMemory(raw, wall, project="bench", actor="coder", user="alice")
        out = summary(await stalls(lambda: calls(client, n, "guarded")))
        await client.close()
        return out
    finally:
        wall.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--url", default="", help="the firewall's store (default: a sqlite file)")
    parser.add_argument(
        "--switch-ms", type=float, default=0.0, help="sys.setswitchinterval, in ms (0: leave it)"
    )
    args = parser.parse_args()
    if args.switch_ms:
        sys.setswitchinterval(args.switch_ms / 1e3)
    store = args.url.split(":", 1)[0] if args.url else "sqlite"
    raw_runs: list[tuple[float, float]] = []
    guarded_runs: list[tuple[float, float]] = []
    for i in range(args.runs):
        order = (run_raw, run_guarded) if i % 2 == 0 else (run_guarded, run_raw)
        for fn in order:
            got = asyncio.run(fn(args.calls, args.url) if fn is run_guarded else fn(args.calls))
            (raw_runs if fn is run_raw else guarded_runs).append(got)
            print(f"run {i} {fn.__name__}: max {got[0]:.1f} ms, p99 {got[1]:.2f} ms", flush=True)
    raw_max = statistics.median(r[0] for r in raw_runs)
    guarded_max = statistics.median(r[0] for r in guarded_runs)
    raw_p99 = statistics.median(r[1] for r in raw_runs)
    guarded_p99 = statistics.median(r[1] for r in guarded_runs)
    print(f"machine: {machine()}; switch interval {sys.getswitchinterval() * 1e3:g} ms")
    print("| client | longest stall (median of runs) | p99 tick lateness |")
    print("|---|---|---|")
    print(f"| raw AsyncMemory | {raw_max:.1f} ms | {raw_p99:.2f} ms |")
    print(f"| AsyncGuardedMemory ({store}) | {guarded_max:.1f} ms | {guarded_p99:.2f} ms |")
    print(f"ratio guarded/raw: longest {guarded_max / raw_max:.2f}x, p99 "
          f"{guarded_p99 / raw_p99 if raw_p99 else float('nan'):.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
