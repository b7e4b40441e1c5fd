"""Event log benchmark: batched append (``store.commit``) and full verification (``verify``).

Each repetition appends ``--events`` small drafts (a kind, an actor, a time and a two-field data
object, no records) in commits of ``--batch`` drafts to a fresh SQLite store, then verifies the
whole chain from genesis. The raw store in the same run inserts the same event bodies into a
plain ``(seq, body)`` table in the same batches, and reads them all back (``SELECT body``): the
cost of keeping and scanning a log with no hashing, no chain and no canonical encoding.

Sealing (:mod:`firewall.log.seal`), in the same run: the same appends to a store whose sealer
seals nothing (``_common.unsealed``) give the sealed/unsealed append ratio; verification is
timed as the chain alone and as the chain plus every event's seal and the head watermark
(``store.verify()``), and the seals alone (``store.seal_report()``).

    .venv/bin/python bench/log.py --events 200000 --repeat 3
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _common as common

from gnomon.firewall.log.events import EventDraft, verify_chain
from gnomon.firewall.store.sqlite import SQLiteStore

T0 = datetime(2025, 1, 1, tzinfo=UTC)
VERSIONS = {"package": "bench", "schema": 1, "gate": "1"}


def drafts(count: int) -> list[EventDraft]:
    step = timedelta(milliseconds=1)
    return [
        EventDraft(
            kind="bench.note",
            actor="agent",
            at=T0 + i * step,
            session_id="ses_bench",
            project="bench",
            versions=VERSIONS,
            data={"i": i, "note": f"step {i} done"},
        )
        for i in range(count)
    ]


def firewall_log(
    path: Path, items: list[EventDraft], batch: int, *, sealed: bool = True
) -> tuple[float, float, float, float]:
    """Append times, then (sealed) verify: chain only, chain + seals, seals only."""
    store = SQLiteStore(path)
    if not sealed:
        common.unsealed(store)
    start = time.perf_counter()
    for offset in range(0, len(items), batch):
        store.commit(items[offset : offset + batch])
    append = time.perf_counter() - start
    if not sealed:
        store.close()
        return append, 0.0, 0.0, 0.0
    start = time.perf_counter()
    chain_only = verify_chain(store.chain_rows())
    chain = time.perf_counter() - start
    assert chain_only.ok and chain_only.events == len(items), chain_only
    start = time.perf_counter()
    report = store.verify()
    verify = time.perf_counter() - start
    assert report.ok and report.events == len(items), report
    start = time.perf_counter()
    seals = store.seal_report()
    seal_only = time.perf_counter() - start
    assert seals is not None and seals.ok and seals.events == len(items)
    store.close()
    return append, chain, verify, seal_only


def raw_log(path: Path, bodies: list[bytes], batch: int) -> tuple[float, float]:
    conn = common.raw_connect(str(path))
    conn.execute("CREATE TABLE log (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    start = time.perf_counter()
    for offset in range(0, len(bodies), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO log (seq, body) VALUES (?, ?)",
            [(offset + i + 1, b) for i, b in enumerate(bodies[offset : offset + batch])],
        )
        conn.execute("COMMIT")
    append = time.perf_counter() - start
    start = time.perf_counter()
    count = sum(1 for _ in conn.execute("SELECT body FROM log ORDER BY seq"))
    scan = time.perf_counter() - start
    assert count == len(bodies)
    conn.close()
    return append, scan


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=3, files=True, batch="drafts per commit")
    parser.add_argument("--events", type=int, default=200_000, help="events per run")
    args = parser.parse_args(argv)

    print(common.machine())
    items = drafts(args.events)
    samples = common.Samples()
    for rep, tmp in common.fresh_directories(args.repeat, args.dir):
        append, chain, verify, seal_only = firewall_log(tmp / "gnomon.db", items, args.batch)
        unsealed_append = firewall_log(tmp / "unsealed.db", items, args.batch, sealed=False)[0]
        store = SQLiteStore(tmp / "gnomon.db")
        bodies = [body for _, body, _, _ in store.chain_rows()]
        store.close()
        raw_append, raw_scan = raw_log(tmp / "raw.db", bodies, args.batch)
        n = args.events
        rates = {
            "append": n / append,
            "unsealed_append": n / unsealed_append,
            "verify": n / verify,
            "verify_chain": n / chain,
            "seals": n / seal_only,
            "raw_append": n / raw_append,
            "raw_scan": n / raw_scan,
        }
        samples.add(
            **rates,
            append_ratio=rates["raw_append"] / rates["append"],
            verify_ratio=rates["raw_scan"] / rates["verify"],
            seal_cost=rates["unsealed_append"] / rates["append"],
        )
        print(
            f"rep {rep}: append {rates['append']:,.0f}/s (raw {rates['raw_append']:,.0f}/s)  "
            f"verify {rates['verify']:,.0f}/s (raw scan {rates['raw_scan']:,.0f}/s)  "
            f"unsealed append {rates['unsealed_append']:,.0f}/s  "
            f"chain-only verify {rates['verify_chain']:,.0f}/s  seals {rates['seals']:,.0f}/s",
            flush=True,
        )
    med = {k: samples.median(k) for k in samples.values}
    print(
        f"median: append {med['append']:,.0f} events/s (raw {med['raw_append']:,.0f}/s, "
        f"raw/firewall {med['append_ratio']:.2f}x); "
        f"verify {med['verify']:,.0f} events/s (raw scan {med['raw_scan']:,.0f}/s, "
        f"raw/firewall {med['verify_ratio']:.2f}x)"
    )
    print(
        f"median sealing: unsealed/sealed append {med['seal_cost']:.3f}x "
        f"(sealing costs {100 * (1 - 1 / med['seal_cost']):.1f}% of append throughput); "
        f"verify chain+seals {med['verify']:,.0f}/s, chain only {med['verify_chain']:,.0f}/s, "
        f"seals only {med['seals']:,.0f}/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
