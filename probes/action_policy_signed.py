"""Probe: an unsigned or tampered action policy refuses to load.

**Scenario.** An attacker who can write the policy file replaces the operator's signed policy
with a permissive one: unsigned, then edited after signing, then signed with their own key.

**Asserts.**
- A policy with no signature file refuses to load (UnsignedPolicyError).
- A policy edited after signing refuses to load.
- A policy signed by a key the host did not pin refuses to load.
- The operator's own signature over the untouched policy loads.

**Does not claim.** That an operator key stolen from disk is detected, or that the
development flag (``allow_unsigned=True``, logged) is never set by a careless host.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gnomon.firewall.kernel import PolicySigner, load_action_policy
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.firewall.model.errors import UnsignedPolicyError
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "action_policy_signed"
TITLE = "Unsigned, tampered or unpinned action policies refuse to load"


def check(url: str, c: Checks) -> None:
    operator, attacker = PolicySigner.generate(), PolicySigner.generate()
    with tempfile.TemporaryDirectory(prefix="gnomon-probe-") as tmp:
        path = Path(tmp) / "actions.yaml"
        path.write_bytes(preset_bytes("default"))
        keys = [operator.public_key]
        c.raises(
            UnsignedPolicyError,
            "an unsigned policy refuses to load",
            load_action_policy,
            path,
            keys=keys,
        )
        operator.sign_file(path)
        c.expect(load_action_policy(path, keys=keys).signed, "the operator's signed policy loads")
        path.write_bytes(preset_bytes("default").replace(b"verdict: hold", b"verdict: allow", 1))
        c.raises(
            UnsignedPolicyError,
            "a policy edited after signing refuses to load",
            load_action_policy,
            path,
            keys=keys,
        )
        attacker.sign_file(path)
        c.raises(
            UnsignedPolicyError,
            "a policy signed by an unpinned key refuses to load",
            load_action_policy,
            path,
            keys=keys,
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
