"""Probe: reordered events are caught, even when renumbered to look in order.

**Scenario.** A store writer swaps events 3 and 4: first as they are, then giving each the other's
seq so the sequence numbers look monotonic.

**Asserts.**
- Both reorderings are refused with seq 3 named as the first bad one (the seq is inside the hash,
  so a renumbered event no longer matches its stored hash or its successor's link).

**Does not claim.** Anything about an attacker who recomputes every hash (see
``tamper_whole_log_rewrite``); this probe runs on its own in-memory log.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import verify_log
from gnomon.probes._audit_log import build_log, expect_intact, expect_refused
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_reordered"
TITLE = "Reordered (and renumbered) events are caught at the first moved seq"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    expect_intact(c, log)
    swapped = list(log.rows)
    swapped[2], swapped[3] = swapped[3], swapped[2]
    expect_refused(c, verify_log(swapped), seq=3, what="two swapped events")
    a, b = log.rows[2], log.rows[3]
    renumbered = list(log.rows)
    renumbered[2] = (3, b[1], a[2], b[3])
    renumbered[3] = (4, a[1], b[2], a[3])
    expect_refused(c, verify_log(renumbered), seq=3, what="two swapped, renumbered events")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
