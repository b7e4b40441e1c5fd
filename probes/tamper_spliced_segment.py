"""Probe: a segment spliced in from another valid log is caught where it starts.

**Scenario.** Two stores hold valid logs of the same length. A writer copies events 4..6 of the
other log over events 4..6 of this one (same seqs, each a genuine event with its genuine hash).

**Asserts.**
- ``verify_log`` refuses the result and names seq 4: the spliced event's ``prev_hash`` points into
  the other log, not at this log's event 3.

**Does not claim.** Anything about a splice followed by rehashing the rest (that is a rewrite,
see ``tamper_whole_log_rewrite``); this probe runs on its own in-memory logs.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import verify_log
from gnomon.probes._audit_log import build_log, expect_intact, expect_refused
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_spliced_segment"
TITLE = "A segment spliced in from another valid log is caught where it starts"


def check(url: str, c: Checks) -> None:
    log, other = build_log(NAME), build_log(NAME)
    expect_intact(c, log)
    c.expect(verify_log(other.rows).ok, "the other log is valid on its own")
    spliced = log.rows[:3] + other.rows[3:6] + log.rows[6:]
    expect_refused(c, verify_log(spliced), seq=4, what="a spliced segment", problem="prev_hash")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
