"""Probe: deleting one event from the middle of the log is caught, and its seq named.

**Scenario.** A store writer deletes one event (seq 4) and leaves everything else as it was.

**Asserts.**
- ``verify_log`` refuses the log, names seq 4 as the first bad one ("events missing or
  reordered"), and does so with or without the pinned key.

**Does not claim.** Anything about a deleted *tail* (see ``tamper_truncated_tail``); this probe
runs on its own in-memory log, whatever URL it is given.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import verify_log
from gnomon.probes._audit_log import build_log, expect_intact, expect_refused
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_deleted_event"
TITLE = "Deleting an event from the middle of the log is caught at its seq"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    expect_intact(c, log)
    cut = [r for r in log.rows if r[0] != 4]
    expect_refused(c, verify_log(cut), seq=4, what="a deleted event", problem="missing")
    expect_refused(c, verify_log(cut, keys=log.keys), seq=4, what="it with the key too")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
