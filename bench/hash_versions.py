"""Event hash versions: the cost of hash version 2 (the link covers a digest of the body) against
version 1 (the link covers the body).

The same rows are hashed and verified in one run under each version, so the ratio is a same-run
ratio: ``--events`` bench-sized bodies (the drafts of ``bench/log.py``, ~230 B), and a tenth as
many of ~2.2 KB.

    .venv/bin/python bench/hash_versions.py --events 200000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import _common as common

from gnomon.firewall.log.events import GENESIS_HASH, chain_hash, chain_hash_v1, link_checker


def chain(
    bodies: list[bytes], hasher: Callable[[int, str, bytes], str]
) -> list[tuple[int, bytes, str, str]]:
    rows, prev = [], GENESIS_HASH
    for seq, body in enumerate(bodies, 1):
        digest = hasher(seq, prev, body)
        rows.append((seq, body, prev, digest))
        prev = digest
    return rows


def verify(rows: list[tuple[int, bytes, str, str]]) -> None:
    link_holds = link_checker()
    for seq, body, prev, digest in rows:
        if not link_holds(seq, prev, body, digest):
            raise SystemExit(f"seq {seq} does not verify")


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Seconds per run (:func:`_common.time_calls` gives milliseconds)."""
    return [ms / 1000.0 for ms in common.time_calls(fn, repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    small = [
        b'{"actor":"agent","at":"2025-01-01T00:00:00.%06dZ","kind":"bench.note","payload":'
        b'{"i":%d,"note":"step %d done"},"project":"bench","schema":1,"seq":%d,"session":'
        b'"ses_bench","user":null,"versions":{"gate":"1","package":"bench","schema":1}}'
        % (i % 1_000_000, i, i, i + 1)
        for i in range(args.events)
    ]
    large = [body + b" " * 2000 for body in small[: args.events // 10]]
    print(common.machine())
    for name, bodies in (("small (~230 B)", small), ("large (~2.2 KB)", large)):
        results = {}
        for version, hasher in (("v1", chain_hash_v1), ("v2", chain_hash)):
            seal = timed(lambda h=hasher, b=bodies: chain(b, h), args.repeat)
            rows = chain(bodies, hasher)
            check = timed(lambda r=rows: verify(r), args.repeat)
            results[version] = (statistics.median(seal), statistics.median(check))
            print(
                f"{name} {version}: seal {len(bodies) / results[version][0]:,.0f} ev/s, "
                f"verify {len(bodies) / results[version][1]:,.0f} ev/s "
                f"(verify reps {', '.join(f'{len(bodies) / t:,.0f}' for t in check)})"
            )
        print(
            f"{name} v2/v1 time: seal {results['v2'][0] / results['v1'][0]:.2f}x, "
            f"verify {results['v2'][1] / results['v1'][1]:.2f}x"
        )


if __name__ == "__main__":
    main()
