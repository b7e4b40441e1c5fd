"""Probe: a truncated tail is caught against a checkpoint file kept away from the store.

**Scenario.** The operator keeps the last checkpoint in a file. A store writer then deletes the
last events of the log, after the last in-log checkpoint, which leaves a shorter but perfectly
valid chain.

**Asserts.**
- Without the file the shorter chain still verifies (a truncation is undetectable from the log
  alone: this is why the file exists).
- With the file, ``verify_log`` refuses it ("truncated") and names the first missing seq.
- A checkpoint file with an edited seq does not verify against the pinned key.

**Does not claim.** To detect a truncation that happened before the checkpoint file was written;
this probe runs on its own in-memory log, whatever URL it is given.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import verify_log
from gnomon.probes._audit_log import build_log, expect_refused
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_truncated_tail"
TITLE = "A truncated tail is caught against a signed checkpoint file"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    head_seq, _, _, head_hash = log.rows[-1][0], None, None, log.rows[-1][3]
    saved = log.signer.sign("probe", head_seq, head_hash)
    c.expect(verify_log(log.rows, keys=log.keys, checkpoint=saved).ok, "the full log matches it")
    short = log.rows[:-2]
    c.expect(verify_log(short, keys=log.keys).ok, "without the file the shorter chain verifies")
    expect_refused(
        c,
        verify_log(short, keys=log.keys, checkpoint=saved),
        seq=head_seq - 1,
        what="the truncated log against the file",
        problem="truncated",
    )
    moved = saved.model_copy(update={"seq": head_seq - 2, "head_hash": short[-1][3]})
    report = verify_log(short, keys=log.keys, checkpoint=moved)
    c.expect(
        not report.ok and "forged or edited" in (report.problem or ""),
        "an edited checkpoint file does not verify",
        got=report.problem,
    )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
