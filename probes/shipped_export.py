"""Probe: a shipped export redacts above the ceiling and still verifies; tampering with it fails.

**Scenario.** A session records a public fact, a secret one and an internal one. The host ships
the log with a ceiling of ``internal`` (``gnomon log export --sensitivity-ceiling internal``),
then an attacker who intercepts the file edits it.

**Asserts.**
- The shipped file never carries the secret text; the event that held it keeps only its body's
  digest, and that digest is the digest of the body the store holds.
- The shipped file verifies from genesis, and the report counts one redacted event.
- Editing the redacted event's digest, or a kept event's body, or dropping the redacted event,
  makes verification fail.

**Does not claim.** That text outside labelled records (a recall's query, a decision's summary)
is redacted: redaction follows sensitivity labels, and the ``redacted`` note on a line is not
covered by the hash.
"""

from __future__ import annotations

import io

import orjson

from gnomon.firewall import open as open_firewall
from gnomon.firewall.audit.shipping import ship
from gnomon.firewall.log.checkpoints import verify_log
from gnomon.firewall.log.events import body_digest
from gnomon.firewall.log.ndjson import parse
from gnomon.firewall.model.states import Sensitivity
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "shipped_export"
TITLE = "A shipped export redacts above the ceiling, still verifies, and resists tampering"

SECRET = "the payroll signing key is pk-wombat-7731"


def _verifies(data: bytes) -> tuple[bool, int]:
    try:
        rows = [line.row() for line in parse(data, "shipped").lines]
    except Exception:  # a malformed line: refused, as verification would be
        return False, 0
    report = verify_log(rows)
    return report.ok, report.redacted


def _edit(data: bytes, index: int, change: dict[str, object] | None) -> bytes:
    lines = data.splitlines()
    if change is None:
        del lines[index]
    else:
        doc = orjson.loads(lines[index])
        doc.update(change)
        lines[index] = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    return b"\n".join(lines) + b"\n"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        head = wall.store.head()[0]  # a shared store: judge this probe's events
        with wall.session(project=project, actor="coder") as s:
            s.remember("the wiki lives at wiki.example", sensitivity=Sensitivity.PUBLIC)
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)
            s.remember("the standup is at ten")
        held = next(e for e in wall.store.events(after=head) if SECRET.encode() in e.body)
        out = io.BytesIO()
        shipment = ship(wall.store.chain_rows(), out, Sensitivity.INTERNAL)
    data = out.getvalue()
    c.expect(SECRET.encode() not in data, "the shipped file never carries the secret text")
    lines = data.splitlines()
    seqs = [orjson.loads(raw).get("seq") for raw in lines]
    red = [i for i, raw in enumerate(lines) if b'"body_digest"' in raw and seqs[i] > head]
    c.expect(
        [seqs[i] for i in red] == [held.seq] and held.seq in shipment.redacted_seqs,
        "exactly the secret's event is redacted",
        got=[seqs[i] for i in red],
    )
    c.expect(
        orjson.loads(lines[red[0]])["body_digest"] == body_digest(held.body),
        "the redacted event keeps the digest of the body the store holds",
    )
    ok, redacted = _verifies(data)
    c.expect(
        ok and redacted == shipment.redacted, "the shipped file verifies, redacted from digests"
    )
    kept = red[0] + 1
    body = orjson.loads(lines[kept])["body"].replace("ten", "eleven")
    for what, forged in (
        ("the redacted event's digest", _edit(data, red[0], {"body_digest": "ab" * 32})),
        ("a kept event's body", _edit(data, kept, {"body": body})),
        ("dropping the redacted event", _edit(data, red[0], None)),
    ):
        c.expect(not _verifies(forged)[0], f"editing {what} fails verification")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
