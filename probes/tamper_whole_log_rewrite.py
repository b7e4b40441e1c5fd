"""Probe: a whole log rewritten without the key is refused when the key is pinned.

**Scenario.** A store writer edits an early event and recomputes every hash after it, so the
chain is internally consistent again. Three variants: keep the old signed checkpoints, drop them,
or re-sign new checkpoints with the attacker's own key.

**Asserts.**
- The hash chain alone accepts the variant without checkpoints (this is the attack checkpoints
  exist for).
- With the operator's pinned key, all three are refused: the kept checkpoints no longer match the
  chain (naming seq 1, the first seq they no longer vouch for), no checkpoint signed by the pinned
  key remains, or the new checkpoints are signed by a key that is not pinned.

**Does not claim.** Anything if the attacker holds the checkpoint private key; this probe runs on
its own in-memory log, whatever URL it is given.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gnomon.firewall.log.checkpoints import CHECKPOINT_KIND, CheckpointSigner, verify_log
from gnomon.firewall.log.events import EventDraft, seal
from gnomon.probes._audit_log import (
    build_log,
    expect_intact,
    expect_refused,
    is_checkpoint,
    rechain,
)
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "tamper_whole_log_rewrite"
TITLE = "A whole log rewritten without the key is refused"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    expect_intact(c, log)
    edited = [(s, b.replace(b"Fridays", b"Mondays"), p, h) for s, b, p, h in log.rows]
    kept = rechain(edited)
    expect_refused(
        c,
        verify_log(kept, keys=log.keys),
        seq=1,
        what="a rewrite that keeps the old checkpoints",
        problem="rewritten",
    )
    dropped = rechain([r for r in edited if not is_checkpoint(r)])
    c.expect(verify_log(dropped).ok, "without the key, the rewritten chain alone verifies")
    report = verify_log(dropped, keys=log.keys)
    c.expect(
        not report.ok and "no checkpoint signed by a pinned key" in (report.problem or ""),
        "with the pinned key, a rewrite without checkpoints is refused",
        got=report.problem,
    )
    attacker = CheckpointSigner.generate()
    rows = dropped
    checkpoint = attacker.sign("probe", rows[-1][0], rows[-1][3])
    tail = seal(
        rows[-1][0] + 1,
        rows[-1][3],
        EventDraft(
            kind=CHECKPOINT_KIND,
            actor="system",
            at=datetime.now(UTC),
            data={"checkpoint": checkpoint.model_dump()},
        ),
    )
    resigned = [*rows, (tail.seq, tail.body, tail.prev_hash, tail.hash)]
    expect_refused(
        c,
        verify_log(resigned, keys=log.keys),
        seq=tail.seq,
        what="a rewrite re-signed with the attacker's key",
        problem="not pinned",
    )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
