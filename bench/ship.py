"""Shipping benchmark: ``gnomon log export --sensitivity-ceiling`` against the plain export.

A SQLite log of ``--sessions`` agent sessions (each: a tool observation, two remembered facts,
a recall, a decision, an action and its outcome; about ten events), one fact in the first session
labelled ``secret``. Each repetition, interleaved, writes the same log three ways to memory:

* plain: :func:`firewall.log.ndjson.write_export`, one pass, nothing judged (the baseline);
* shipped, log above the ceiling (ceiling ``internal``): two passes, every event's records
  judged, every body's free text walked and credential-scanned, most events redacted;
* shipped, nothing above the ceiling (ceiling ``secret``): the same work, nothing but
  credentials redacted;
* labels only: one pass judging each event's records (:func:`event_sensitivity`), which is what
  shipping did before unlabelled text was judged.

    .venv/bin/python bench/ship.py --sessions 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import _common as common

from gnomon import firewall
from gnomon.firewall.audit.credentials import credential_kinds_memo
from gnomon.firewall.audit.shipping import event_sensitivity, ship
from gnomon.firewall.log.ndjson import write_export
from gnomon.firewall.model.states import Sensitivity


def build(url: str, sessions: int) -> int:
    with firewall.open(url) as wall:
        user = wall.channel(firewall.Origin.user("alice"), project="bench")
        for i in range(sessions):
            with wall.session(project="bench", actor="coder", user="alice") as s:
                seen = s.observe(
                    tool="chat", content=f"deploy {i} goes through ArgoCD", origin=user
                )
                level = Sensitivity.SECRET if i == 0 else Sensitivity.INTERNAL
                s.remember(f"the rota for week {i} is in the wiki", sensitivity=level)
                s.remember(f"build {i} took {i % 17} minutes", sensitivity=Sensitivity.PUBLIC)
                s.recall(f"deploy rota week {i}", "default")
                decision = s.decide(
                    f"page the on-call for week {i}", depends_on=[seen.content[0].id]
                )
                action = s.act(decision.id, "page", {"who": "on-call", "week": i})
                s.record_outcome(action.id, success=True, summary=f"paged for week {i}")
        return wall.store.head()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000, help="agent sessions in the log")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (median reported)")
    parser.add_argument("--dir", type=Path, default=None, help="where the file goes (tmp)")
    args = parser.parse_args(argv)

    print(common.machine())
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        url = f"sqlite:///{Path(tmp) / 'g.db'}"
        events = build(url, args.sessions)
        print(f"log: {events} events")
        times: dict[str, list[float]] = {"plain": [], "above": [], "below": [], "labels": []}
        redacted: dict[str, int] = {}
        with firewall.open(url) as wall:
            store = wall.store
            for rep in range(args.repeat):
                start = time.perf_counter()
                write_export(store.chain_rows(), io.BytesIO())
                times["plain"].append(time.perf_counter() - start)
                start = time.perf_counter()
                for _, body, _, _ in store.chain_rows():
                    event_sensitivity(body)
                times["labels"].append(time.perf_counter() - start)
                for key, ceiling in (
                    ("above", Sensitivity.INTERNAL),
                    ("below", Sensitivity.SECRET),
                ):
                    credential_kinds_memo.cache_clear()  # each export starts cold
                    start = time.perf_counter()
                    shipment = ship(store.chain_rows, io.BytesIO(), ceiling)
                    times[key].append(time.perf_counter() - start)
                    assert shipment.events == events
                    redacted[key] = shipment.redacted
                print(
                    f"rep {rep + 1}: plain {events / times['plain'][-1]:,.0f} events/s, "
                    f"shipped (log above) {events / times['above'][-1]:,.0f}/s, "
                    f"shipped (nothing above) {events / times['below'][-1]:,.0f}/s",
                    flush=True,
                )
    ratios = {
        key: common.median([t / p for t, p in zip(times[key], times["plain"], strict=True)])
        for key in ("above", "below", "labels")
    }
    med = {key: events / common.median(v) for key, v in times.items()}
    print(
        f"median: plain {med['plain']:,.0f} events/s; shipped with the log above the ceiling "
        f"{med['above']:,.0f}/s ({ratios['above']:.1f}x the plain time, {redacted['above']} "
        f"redacted); nothing above {med['below']:,.0f}/s ({ratios['below']:.1f}x, "
        f"{redacted['below']} redacted); labels only {med['labels']:,.0f}/s "
        f"({ratios['labels']:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
