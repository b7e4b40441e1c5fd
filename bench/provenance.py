"""Argument provenance benchmark: one gate decision with provenance at 1,000 recorded inputs.

A session has recorded ``--inputs`` inputs (a tenth the user's words, the rest untrusted pages
of about 300 characters, each with an e-mail address, a URL and an amount), and the agent
proposes a ``write_file`` whose path the user gave and whose body is a 600-character summary
carrying two structured values. Timed: :func:`firewall.kernel.provenance.trace` of the
arguments plus :func:`firewall.kernel.decide.decide` with them (what the kernel runs per
proposal), against the same decision without provenance, in the same run.

Target: p50 <= 100 µs at 1,000 recorded inputs.

    .venv/bin/python bench/provenance.py --inputs 1000 --n 5000
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime

from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.kernel import ToolRegistry
from gnomon.firewall.kernel.actionpolicy import ActionPolicy
from gnomon.firewall.kernel.decide import decide
from gnomon.firewall.kernel.provenance import Input, Inputs, trace
from gnomon.firewall.model.origin import Origin

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = "deal shoe price renew account report meeting budget team review invoice page".split()


def recorded(n: int, rng: random.Random) -> Inputs:
    inputs = Inputs()
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(40))
        if i % 10 == 0:
            text = f"Please file the {words} notes under /home/emma/notes/{i}.md"
            inputs.add(text, Input("user", f"obs_u{i}", "attested [user:emma]"))
        else:
            text = (
                f"{words} write to seller{i}@shop{i}.example or visit "
                f"https://shop{i}.example/deals/{i} pay {i * 7}.{i % 100:02d} EUR"
            )
            inputs.add(text, Input("untrusted", f"obs_{i}", f"untrusted [external:web:{i}]"))
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--inputs", type=int, default=1000)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    session = recorded(args.inputs, rng)
    host = Inputs()
    contract = ToolRegistry.builtin().lookup("write_file")
    policy = ActionPolicy.preset("default")
    citation = ContextPolicy.preset(policy.citation_policy)
    label = Origin.external("web:x")
    body = " ".join(rng.choice(WORDS) for _ in range(80))
    call = {
        "path": "/home/emma/notes/500.md",
        "content": f"Summary: {body} contact team@corp.example see https://corp.example/q3",
    }

    def with_provenance() -> object:
        supplied = trace(call, (session, host))
        return decide(
            contract,
            "write_file",
            policy,
            label=label,
            cites=(),
            found={},
            citation_policy=citation,
            now=NOW,
            args=call,
            supplied=supplied,
        )

    def without() -> object:
        return decide(
            contract,
            "write_file",
            policy,
            label=label,
            cites=(),
            found={},
            citation_policy=citation,
            now=NOW,
        )

    ruling = with_provenance()
    print(f"{args.inputs} recorded inputs; ruling: {ruling.outcome.value}")  # type: ignore[attr-defined]
    for name, fn in (("decision with provenance", with_provenance), ("decision alone", without)):
        medians = []
        for _ in range(args.repeat):
            times = []
            for _ in range(args.n):
                start = time.perf_counter_ns()
                fn()
                times.append(time.perf_counter_ns() - start)
            medians.append(statistics.median(times) / 1000)
            p99 = sorted(times)[int(len(times) * 0.99)] / 1000
        print(f"{name:26} p50 {min(medians):7.1f} µs  p99 {p99:7.1f} µs")


if __name__ == "__main__":
    main()
