"""Probe: a signed checkpoint cannot be forged, edited or signed by an unpinned key.

**Scenario.** The operator pins one public key. Someone presents checkpoints that claim to vouch
for the log: a genuine one with its seq or hash edited, one with an edited timestamp, one signed
by a key nobody pinned, and one signed by an unpinned key but relabelled with the pinned key's id.

**Asserts.**
- The genuine checkpoint verifies against the pinned key and matches the chain.
- Every other one fails: edited fields break the Ed25519 signature over the domain-separated
  canonical bytes ("forged or edited"), an unpinned key is named as such ("not pinned"), and
  a relabelled key id does not make a foreign signature verify.

**Does not claim.** Anything if the checkpoint private key leaks; this probe runs on its own
in-memory log, whatever URL it is given.
"""

from __future__ import annotations

from gnomon.firewall.log.checkpoints import CheckpointSigner, verify_log
from gnomon.probes._audit_log import build_log
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "checkpoint_unforgeable"
TITLE = "A signed checkpoint cannot be forged, edited or signed by an unpinned key"


def check(url: str, c: Checks) -> None:
    log = build_log(NAME)
    seq, _, _, digest = log.rows[-1]
    genuine = log.signer.sign("probe", seq, digest)
    c.expect(genuine.verify_signature(log.keys) is None, "the genuine checkpoint verifies")
    c.expect(verify_log(log.rows, keys=log.keys, checkpoint=genuine).ok, "and matches the chain")
    earlier = log.rows[-3]
    stranger = CheckpointSigner.generate()
    forgeries = {
        "a checkpoint with its seq and hash moved back": genuine.model_copy(
            update={"seq": earlier[0], "head_hash": earlier[3]}
        ),
        "a checkpoint with its timestamp edited": genuine.model_copy(
            update={"at": "2000-01-01T00:00:00.000000Z"}
        ),
        "a checkpoint signed by an unpinned key": stranger.sign("probe", seq, digest),
        "an unpinned signature relabelled with the pinned key id": stranger.sign(
            "probe", seq, digest
        ).model_copy(update={"key_id": log.signer.key_id}),
    }
    for what, forged in forgeries.items():
        wrong = forged.verify_signature(log.keys)
        c.expect(wrong is not None, f"{what} does not verify", got=wrong)
        report = verify_log(log.rows, keys=log.keys, checkpoint=forged)
        c.expect(
            not report.ok and report.checkpoint_failure,
            f"verify refuses the log with {what}",
            got=report.problem,
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
