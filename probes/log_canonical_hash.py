"""Probe: the event log's canonical bytes and chain hash are stable.

**Scenario.** A fixed event (fixed time, actor, session, versions and payload) is sealed at seq 1
on the genesis hash, the way every store seals it.

**Asserts.**
- Its body is exactly the canonical bytes recorded here (sorted keys, compact separators, UTF-8,
  one timestamp form), whatever order the draft's fields were given in.
- Its hash is exactly hash version 2, ``SHA-256(b"gnomon.event.v2\\x00" || u64be(1) || genesis
  || SHA-256(b"gnomon.event-body.v1\\x00" || body))``, the value recorded here.
- The version-1 hash of the same body (``SHA-256(b"gnomon.event.v1\\x00" || u64be(1) || genesis
  || body)``, what logs written before hash version 2 carry) still verifies as a link.
- Re-sealing the same draft at seq 2 gives a different hash (the seq is inside the hash).

**Does not claim.** That the format never changes: a new schema version gets new recorded values,
and this probe is what makes such a change deliberate.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from gnomon.firewall.log.events import (
    BODY_DOMAIN,
    DOMAIN,
    DOMAIN_V2,
    GENESIS_HASH,
    EventDraft,
    link_holds,
    seal,
)
from gnomon.probes.runner import Checks, ProbeResult, execute

NAME = "log_canonical_hash"
TITLE = "A known event has a known canonical body and hash"

BODY = (
    b'{"actor":"coder","at":"2025-01-02T03:04:05.000006Z","kind":"probe.note","payload":'
    b'{"note":"caf\xc3\xa9","z":[1,2]},"project":"p","schema":1,"seq":1,"session":"ses_1",'
    b'"user":null,"versions":{"package":"x","schema":1}}'
)
HASH_V1 = hashlib.sha256(
    DOMAIN + (1).to_bytes(8, "big") + bytes.fromhex(GENESIS_HASH) + BODY
).hexdigest()
PINNED_HASH_V1 = "73f0f05a5d24a1f75dca97c929bb4de1c42bfcacb52f0a8b95683409dfecc5cd"
HASH = hashlib.sha256(
    DOMAIN_V2
    + (1).to_bytes(8, "big")
    + bytes.fromhex(GENESIS_HASH)
    + hashlib.sha256(BODY_DOMAIN + BODY).digest()
).hexdigest()
PINNED_HASH = "dac67b6dea0442f725daf230811f71734b0000c6c1ee235d1aee6fbe234c035d"


def check(url: str, c: Checks) -> None:
    draft = EventDraft(
        kind="probe.note",
        actor="coder",
        at=datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        session_id="ses_1",
        project="p",
        versions={"schema": 1, "package": "x"},
        data={"z": [1, 2], "note": "café"},
    )
    event = seal(1, GENESIS_HASH, draft)
    c.expect(event.body == BODY, "the body is the recorded canonical bytes", got=event.body)
    c.expect(
        event.hash == HASH,
        "the hash is SHA-256 over domain, seq, previous hash and the body's digest",
    )
    c.expect(event.hash == PINNED_HASH, "the hash is the recorded value", got=event.hash)
    c.expect(
        HASH_V1 == PINNED_HASH_V1 and link_holds(1, GENESIS_HASH, BODY, HASH_V1),
        "the version-1 hash of the body still verifies (old logs)",
    )
    c.expect(
        seal(2, GENESIS_HASH, draft).hash != event.hash, "the same body at another seq hashes apart"
    )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
