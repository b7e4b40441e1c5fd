"""Probe: one edited byte in one stored event is caught, and its seq named.

**Scenario.** A store writer edits one byte of a stored event body (``alice`` becomes ``alicf``
in the observation that says who said it), leaving every stored hash as it was.

**Asserts.**
- ``verify_log`` refuses the log and names exactly that event's seq as the first bad one, with
  "hash does not match the event body".

**Does not claim.** Anything about an attacker who also recomputes the hashes (see
``tamper_whole_log_rewrite``); this probe runs on its own in-memory log, whatever URL it is given.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import verify_log
from gnomon.probes._audit_log import build_log, expect_intact, expect_refused
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_edited_byte"
TITLE = "Editing one byte of a stored event is caught at its seq"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    expect_intact(c, log)
    index = next(i for i, r in enumerate(log.rows) if b"alice" in r[1] and i > 2)
    seq, body, prev, digest = log.rows[index]
    c.expect(True, f"event {seq} mentions alice")
    edited = list(log.rows)
    edited[index] = (seq, body.replace(b"alice", b"alicf", 1), prev, digest)
    expect_refused(
        c, verify_log(edited), seq=seq, what="an edited byte", problem="hash does not match"
    )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
