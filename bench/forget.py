"""Erasure benchmark: forget 10,000 beliefs of one origin in an SQLite store, target < 1 minute.

Each repetition builds a fresh SQLite store (not timed) holding ``--beliefs`` memories of alice
and as many of bob: with ``--via import`` imported from stores named after them
(``Firewall.import_records``: one compact batch event per 1,000 memories), with ``--via observe``
observed one user message per event through host channels (the realistic worst case: every
event rewritten on its own). Then it times ``Firewall.forget`` of alice's origin: the whole log
read and swept, the rewritten bodies stored, every projection rebuilt, the erasure event
committed, the write-ahead log truncated. It then checks that no sample of alice's text is left
in the file, and times ``Store.verify`` (chain and seals) of the erased log beside it.

    PYTHONPATH=. .venv/bin/python bench/forget.py --beliefs 10000 --repeat 3 [--via observe]
"""

from __future__ import annotations

import os
import sys
import time

import _common as common

from gnomon import firewall
from gnomon.firewall.audit.erasure import ErasureTarget, TargetKind
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.model.origin import Origin


def build(url: str, beliefs: int, via: str) -> tuple[list[str], str]:
    """The store's memories, alice's and bob's; returns alice's texts and her origin id."""
    corpus = common.Corpus.build()
    texts = corpus.sentences(2 * beliefs)
    alice = [f"alice {i}: {t}" for i, t in enumerate(texts[:beliefs])]
    bob = [f"bob {i}: {t}" for i, t in enumerate(texts[beliefs:])]
    with firewall.open(url) as wall:
        if via == "import":
            for name, items in (("alice", alice), ("bob", bob)):
                wall.import_records(
                    (ImportItem(text=t, source_id=f"{name}{i}") for i, t in enumerate(items)),
                    store_name=name,
                    project="bench",
                )
            return alice, "imported:alice"
        channels = {n: wall.channel(Origin.user(n), project="bench") for n in ("alice", "bob")}
        with wall.session(project="bench", actor="agent") as s:
            for a, b in zip(alice, bob, strict=True):
                s.observe(tool="chat", content=a, origin=channels["alice"])
                s.observe(tool="chat", content=b, origin=channels["bob"])
    return alice, "user:alice"


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, repeat=3, files=True)
    parser.add_argument("--beliefs", type=int, default=10_000, help="beliefs to erase")
    parser.add_argument(
        "--via",
        choices=("import", "observe"),
        default="import",
        help="import: compact import batches; observe: one user message per event (two "
        "beliefs each, the message and its envelope; only the message is alice's)",
    )
    args = parser.parse_args(argv)
    samples = common.Samples()
    for rep, folder in common.fresh_directories(args.repeat, args.dir):
        os.environ["GNOMON_HOME"] = str(folder / "home")
        path = folder / "forget.db"
        url = f"sqlite:///{path}"
        alice, origin = build(url, args.beliefs, args.via)
        with firewall.open(url) as wall:
            grant = wall.grant("eraser", "bench", project="bench")
            start = time.perf_counter()
            done = wall.forget(ErasureTarget(TargetKind.ORIGIN, origin), grant=grant)
            erase_s = time.perf_counter() - start
            start = time.perf_counter()
            report = wall.verify_log()
            verify_s = time.perf_counter() - start
        data = path.read_bytes()
        left = sum(1 for t in alice[:: max(1, len(alice) // 200)] if t.encode() in data)
        assert report.ok, report.problem
        assert len(done.beliefs) == args.beliefs, len(done.beliefs)
        samples.add(erase=erase_s, verify=verify_s)
        print(
            f"rep {rep}: erased {len(done.beliefs)} beliefs in {len(done.events)} events in "
            f"{erase_s:.2f} s ({args.beliefs / erase_s:,.0f} beliefs/s); verify {verify_s:.2f} s "
            f"({report.events} events); sampled texts left in the file: {left}"
        )
        if left:
            print("FAIL: erased text is still in the file", file=sys.stderr)
            return 1
    erase = samples.median("erase")
    print(
        f"median: erase {erase:.2f} s for {args.beliefs} beliefs (target < 60 s: "
        f"{'met' if erase < 60 else 'NOT met'}); verify {samples.median('verify'):.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["build", "main"]
