"""Shared pieces of the benchmarks: a Zipf-ish corpus, timing helpers, the machine description.

Not a test module and not part of the package: the ``bench/*.py`` scripts import it by path
(``python bench/ingest.py`` puts ``bench/`` on ``sys.path``).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"

_SYLLABLES = (
    "ka ro mi te lu na so vi de pa re to ga li mo ne ru sa fi do "
    "ber tal kin vor sel dun mar pel rix gon tav lem"
).split()


@dataclass(frozen=True)
class Corpus:
    """A vocabulary with Zipf(s=1.1) word frequencies and a sentence generator.

    Word rank 1 is the most frequent; a query drawn from the same distribution therefore matches
    a realistic fraction of the statements (a few common words match many, rare words few).
    """

    words: tuple[str, ...]
    cum_weights: tuple[float, ...]

    @classmethod
    def build(cls, size: int = 4000, seed: int = 7, s: float = 1.1) -> Corpus:
        rng = random.Random(seed)
        seen: dict[str, None] = {}
        while len(seen) < size:
            word = "".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4)))
            seen.setdefault(word, None)
        weights = [1.0 / (rank**s) for rank in range(1, size + 1)]
        return cls(tuple(seen), tuple(accumulate(weights)))

    def sentence(self, rng: random.Random, low: int = 6, high: int = 18) -> str:
        count = rng.randint(low, high)
        chosen = rng.choices(self.words, cum_weights=self.cum_weights, k=count)
        chosen[0] = chosen[0].capitalize()
        return " ".join(chosen) + "."

    def query(self, rng: random.Random, low: int = 2, high: int = 4) -> str:
        # The 50 most frequent words play the part of stop words (which real queries drop, see
        # firewall.model.text.STOP_WORDS): query words follow the same Zipf law over the rest.
        count = rng.randint(low, high)
        skip = 50
        base = self.cum_weights[skip - 1]
        weights = [w - base for w in self.cum_weights[skip:]]
        return " ".join(rng.choices(self.words[skip:], cum_weights=weights, k=count))

    def sentences(self, count: int, seed: int = 11) -> list[str]:
        rng = random.Random(seed)
        return [self.sentence(rng) for _ in range(count)]


def parser(
    doc: str | None, *, repeat: int, files: bool = False, batch: str | None = None
) -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first paragraph of its docstring ``doc``:
    ``--repeat`` (how many repetitions; the median is reported); for a benchmark that writes
    its stores into a fresh temporary directory each repetition (``files``, see
    :func:`fresh_directories`), ``--dir``; for one that writes in batches, ``--batch`` (``batch``
    says what a batch is, e.g. "records per transaction")."""
    out = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    out.add_argument("--repeat", type=int, default=repeat, help="repetitions (median reported)")
    if files:
        out.add_argument("--dir", type=Path, default=None, help="where the files go (tmp)")
    if batch is not None:
        out.add_argument("--batch", type=int, default=1000, help=batch)
    return out


def fresh_directories(repeat: int, parent: Path | None) -> Iterator[tuple[int, Path]]:
    """Each repetition's number (from 1) and a fresh temporary directory under ``parent``
    (``--dir``; None: the system's), removed before the next repetition starts."""
    for rep in range(1, repeat + 1):
        with tempfile.TemporaryDirectory(dir=parent) as tmp:
            yield rep, Path(tmp)


def median(values: list[float]) -> float:
    return statistics.median(values)


class Samples:
    """Each named figure's value in every repetition; a benchmark reports their medians."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def add(self, **figures: float) -> None:
        for name, value in figures.items():
            self.values.setdefault(name, []).append(value)

    def median(self, name: str) -> float:
        return median(self.values[name])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100.0 * (len(ordered) - 1))))
    return ordered[index]


@contextmanager
def timer() -> Iterator[list[float]]:
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def time_calls(fn: Callable[[], object], count: int) -> list[float]:
    """Latency of ``count`` calls, in milliseconds."""
    out = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        fn()
        out.append((clock() - start) * 1000.0)
    return out


def time_calls_each(fn: Callable[[str], object], args: list[str]) -> list[float]:
    """Latency of ``fn(arg)`` for each argument, in milliseconds."""
    out = []
    clock = time.perf_counter
    for arg in args:
        start = clock()
        fn(arg)
        out.append((clock() - start) * 1000.0)
    return out


def machine() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    return (
        f"cpus={os.cpu_count()} cpu={cpu!r} ram={ram} python={platform.python_version()} "
        f"sqlite={sqlite3.sqlite_version} platform={sys.platform}"
    )


def raw_connect(path: str) -> sqlite3.Connection:
    """The raw baseline's connection: the same pragmas the Gnomon SQLite store sets."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -65536")
    return conn


# The raw store indexes rows with its own INSERT rather than a trigger: on SQLite < 3.43 a
# trigger flushes FTS5's pending terms once per row, which makes the trigger version ~4x slower
# (measured ~50,000 rows/s here against ~200,000). The baseline is the fast way.
RAW_DDL = (
    "CREATE TABLE memories (rid INTEGER PRIMARY KEY, source_id TEXT NOT NULL, text TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE memories_fts USING fts5 (text, content = 'memories', "
    "content_rowid = 'rid')",
)


class _NoSeal:
    """A sealer that seals nothing (``tag`` is ``None``): the unsealed path, for a same-run
    ratio against the sealed one. Never outside a benchmark."""

    keys = None

    def tag(self, seq: int, digest: str, msg: bytes | None = None) -> None:
        return None

    def row_tag(self, doc: bytes) -> None:
        return None

    def row_problem(self, doc: bytes, tag: bytes | None) -> None:
        return None

    def check(self, seq: int, digest: str, tag: bytes | None) -> None:
        return None


def unsealed(store: Any) -> Any:
    """``store`` writing without seals and without a head watermark (benchmarks only)."""
    from gnomon.firewall.store.sealing import StoreSeal

    store._seal = StoreSeal(_NoSeal(), None, store.url, None)  # type: ignore[arg-type]
    return store
