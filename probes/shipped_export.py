"""Probe: a shipped export redacts above the ceiling and still verifies; tampering with it fails.

**Scenario.** A session records a public fact, a secret one and an internal one. In another
session (which read nothing) the (hostile) agent copies the secret's key into unlabelled fields,
a recall's query and a decision's summary, and into a note it labels ``public``. The host
ships the log with a ceiling of ``internal`` (``gnomon log export --sensitivity-ceiling
internal``), then an attacker who intercepts the file edits it.

**Asserts.**
- The shipped file never carries the secret text, nor the key smuggled into other events; the
  event that held the secret keeps only its body's digest, and that digest is the digest of the
  body the store holds; the smuggling events, the public note among them, are redacted as free
  text in a log above the ceiling, and so are the agent's other notes (the agent chose their
  text, whatever their label); the events that carry no free text (sessions opening and
  closing) are kept.
- The shipped file verifies from genesis, counting the redacted events.
- Editing the redacted event's digest, or a kept event's body, or dropping the redacted event,
  makes verification fail.

**Does not claim.** That structural fields (ids, digests, states) cannot carry a covert
channel, or that a secret copied into a record of another origin (a user's or a tool's) under a
lower label is withheld (unless it is a credential). The ``redacted`` note on a line is not
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
KEY = "pk-wombat-7731"


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
            wiki = s.remember("the wiki lives at wiki.example", sensitivity=Sensitivity.PUBLIC)
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)
            s.remember("the standup is at ten")
        with wall.session(project=project, actor="coder") as s:
            s.recall(f"who else uses {KEY}", "default")
            s.decide(f"rotate {KEY} tonight", depends_on=[wiki.id])
            s.remember(f"from memory: {KEY}", sensitivity=Sensitivity.PUBLIC)
        events = list(wall.store.events(after=head))
        held = next(e for e in events if SECRET.encode() in e.body)
        smuggled = [e.seq for e in events if KEY.encode() in e.body and e.seq != held.seq]
        notes = [e.seq for e in events if b"wiki.example" in e.body or b"standup" in e.body]
        opened_closed = [e.seq for e in events if e.kind in ("session.started", "session.ended")]
        out = io.BytesIO()
        shipment = ship(wall.store.chain_rows, out, Sensitivity.INTERNAL)
    data = out.getvalue()
    c.expect(KEY.encode() not in data, "the shipped file never carries the secret text")
    lines = data.splitlines()
    seqs = [orjson.loads(raw).get("seq") for raw in lines]
    red = [i for i, raw in enumerate(lines) if b'"body_digest"' in raw and seqs[i] > head]
    c.expect(
        [seqs[i] for i in red] == sorted([held.seq, *notes, *smuggled])
        and len(smuggled) == 3
        and len(notes) == 2
        and held.seq in shipment.redacted_seqs,
        "the secret's event, the three that smuggled its key and the agent's other notes are "
        "redacted, nothing else",
        got=[seqs[i] for i in red],
    )
    kept = [i for i, seq in enumerate(seqs) if seq in opened_closed and b'"body"' in lines[i]]
    c.expect(
        len(kept) == len(opened_closed) == 4
        and b"the standup is at ten" not in data
        and b"wiki.example" not in data,
        "the agent's notes are withheld; the sessions' opening and closing events are kept",
    )
    secret_at = next(i for i in red if seqs[i] == held.seq)
    c.expect(
        orjson.loads(lines[secret_at])["body_digest"] == body_digest(held.body),
        "the redacted event keeps the digest of the body the store holds",
    )
    ok, redacted = _verifies(data)
    c.expect(
        ok and redacted == shipment.redacted, "the shipped file verifies, redacted from digests"
    )
    body = orjson.loads(lines[kept[0]])["body"].replace('"coder"', '"mallory"')
    for what, forged in (
        ("the redacted event's digest", _edit(data, secret_at, {"body_digest": "ab" * 32})),
        ("a kept event's body", _edit(data, kept[0], {"body": body})),
        ("dropping the redacted event", _edit(data, secret_at, None)),
    ):
        c.expect(not _verifies(forged)[0], f"editing {what} fails verification")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
