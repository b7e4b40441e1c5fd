"""Action-kernel benchmark: a gate decision under a 100-rule policy, and an approval verification.

* **gate decision**: :func:`firewall.kernel.decide.decide` for ``git_push`` with two cited
  beliefs and a tainted session label, under a policy of 100 rules of which only the last
  matches (the worst case of first-match), the ladder and both rest-on rules applied;
* **approval verification**: :func:`firewall.kernel.approvals.check_approval` (re-validation,
  Ed25519 verify against a pinned key, request/action/inputs/policy/contract binding, expiry);
* **execution re-check**: what the kernel adds before it claims an approved request: the stored
  approval verified again, the inputs digest and the contract digest recomputed, the expiry.

Targets: gate p50 <= 50 µs, approval p50 <= 200 µs.

    .venv/bin/python bench/kernel.py --repeat 5 --n 20000
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from gnomon import firewall
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.kernel import ApprovalSigner, ToolRegistry
from gnomon.firewall.kernel.actionpolicy import ActionPolicy
from gnomon.firewall.kernel.approvals import (
    ApprovalRequest,
    check_approval,
    check_expiry,
    contract_digest,
    inputs_digest,
    verify_approval,
)
from gnomon.firewall.kernel.decide import decide
from gnomon.firewall.model.origin import Origin

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def policy_text(rules: int) -> str:
    lines = ["name: bench", "rules:"]
    for i in range(rules - 1):
        lines += [f"  - name: r{i}", f"    tools: [tool_{i}]", "    verdict: allow"]
    lines += ["  - name: last", "    levels: [L4]", "    verdict: hold"]
    return "\n".join(lines) + "\n"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_calls(call: object, n: int) -> list[float]:
    fn = call  # type: ignore[assignment]
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()

    policy = ActionPolicy.from_yaml_text(policy_text(100))
    assert len(policy.rules) == 100
    contract = ToolRegistry.builtin().lookup("git_push")
    planner = ContextPolicy.preset("planner")
    wall = firewall.open("memory://")
    with wall.session(project="bench", actor="a") as s:
        made = [s.remember(f"fact {i}") for i in range(2)]
    found = {b.id: b for b in made}
    cites = list(found)
    label = Origin.join(Origin.agent("a"), Origin.external("web:x"))

    def gate() -> None:
        decide(
            contract,
            "git_push",
            policy,
            label=label,
            cites=cites,
            found=found,
            citation_policy=planner,
            now=NOW,
        )

    signer = ApprovalSigner.generate("alice")
    request = ApprovalRequest(
        id="req_1",
        action_id="act_1",
        session_id="ses_1",
        project="bench",
        tool="git_push",
        level="L4",
        inputs_digest="a" * 64,
        policy_digest=policy.digest,
        contract_digest="c" * 64,
        reasons=("held",),
        created_at=NOW,
        deadline=NOW + timedelta(minutes=15),
    )
    approval = signer.approve(request, now=NOW)
    keys = [ApprovalSigner.generate("x").public_key, signer.public_key]

    def verify() -> None:
        check_approval(approval, request, keys, now=NOW + timedelta(minutes=1))

    args_ = {"repo": "/srv/repo", "remote": "origin", "branch": "main", "force": False}
    terms = {"tool": "git_push", "level": "L4", "category": "push", "preconditions": [{}] * 3}

    def recheck() -> None:
        verify_approval(approval, request, keys)
        inputs_digest("git_push", args_)
        contract_digest(terms)
        check_expiry(approval, NOW + timedelta(minutes=1))

    gate_p50, approve_p50, recheck_p50 = [], [], []
    for run in range(args.repeat):
        g = time_calls(gate, args.n)
        a = time_calls(verify, args.n)
        r = time_calls(recheck, args.n)
        gate_p50.append(percentile(g, 0.5))
        approve_p50.append(percentile(a, 0.5))
        recheck_p50.append(percentile(r, 0.5))
        print(
            f"run {run + 1}: gate p50 {gate_p50[-1]:.1f} µs p95 {percentile(g, 0.95):.1f} µs; "
            f"approval p50 {approve_p50[-1]:.1f} µs p95 {percentile(a, 0.95):.1f} µs; "
            f"execution re-check p50 {recheck_p50[-1]:.1f} µs"
        )
    print(
        f"median of runs: gate p50 {statistics.median(gate_p50):.1f} µs (target <= 50), "
        f"approval p50 {statistics.median(approve_p50):.1f} µs (target <= 200), "
        f"execution re-check p50 {statistics.median(recheck_p50):.1f} µs"
    )


if __name__ == "__main__":
    main()
