"""Shared material of the audit-log probes: a small real log with signed checkpoints, and the
moves of an attacker who can write the store but does not hold the checkpoint key.

Not a probe (it is not in ``PROBE_MODULES``). The tamper probes work on the ``(seq, body,
prev_hash, hash)`` rows a store hands to the verifier: exactly what such an attacker controls.
Each probe builds its own log in a fresh ``memory://`` store, whatever URL it is given, so that
it never writes checkpoints signed by a throwaway key into a team's store.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall import open as open_firewall
from gnomon.firewall.log.checkpoints import (
    CHECKPOINT_KIND,
    CheckpointSigner,
    LogVerifyReport,
    verify_log,
)
from gnomon.firewall.log.events import GENESIS_HASH, chain_hash
from gnomon.probes._fixtures import agent_reads, user_says
from gnomon.probes.runner import Checks, project_for

Row = tuple[int, bytes, str, str]


@dataclass
class SignedLog:
    rows: list[Row]
    signer: CheckpointSigner
    #: seq of the head the last in-log checkpoint covers
    checkpointed: int

    @property
    def keys(self) -> list[Ed25519PublicKey]:
        return [self.signer.public_key]


def build_log(name: str) -> SignedLog:
    """A session's worth of events, a signed checkpoint, more events, another checkpoint."""
    signer = CheckpointSigner.generate()
    project = project_for(name)
    with open_firewall("memory://", checkpoint_signer=signer) as wall:
        with wall.session(project=project, actor="coder", user="alice") as s:
            user_says(wall, s, "We deploy on Fridays")
            agent_reads(s, "README.md", "Deploys go through ArgoCD.")
        wall.checkpoint()
        with wall.session(project=project, actor="coder", user="alice") as s:
            user_says(wall, s, "Staging is eu-west-1")
        last = wall.checkpoint()
        return SignedLog(list(wall.store.chain_rows()), signer, last.seq)


def rechain(rows: list[Row]) -> list[Row]:
    """Renumber and recompute every hash: a consistent chain, made without the key."""
    out: list[Row] = []
    prev = GENESIS_HASH
    for seq, (_, body, _, _) in enumerate(rows, start=1):
        doc = orjson.loads(body)
        doc["seq"] = seq
        new_body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        digest = chain_hash(seq, prev, new_body)
        out.append((seq, new_body, prev, digest))
        prev = digest
    return out


def is_checkpoint(row: Row) -> bool:
    return bool(orjson.loads(row[1]).get("kind") == CHECKPOINT_KIND)


def expect_refused(
    c: Checks, report: LogVerifyReport, *, seq: int, what: str, problem: str | None = None
) -> None:
    c.expect(not report.ok, f"verify refuses {what}", got=report.problem)
    c.expect(
        report.first_bad_seq == seq,
        f"it names seq {seq} as the first bad one",
        got=(report.first_bad_seq, report.problem),
    )
    if problem is not None:
        c.expect(
            problem in (report.problem or ""), f"the problem says {problem!r}", got=report.problem
        )


def expect_intact(c: Checks, log: SignedLog) -> None:
    report = verify_log(log.rows, keys=log.keys)
    c.expect(report.ok, "the untouched log verifies against the pinned key", got=report.problem)
