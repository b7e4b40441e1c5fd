"""The sentinel: watches events, raises alerts (events), quarantines within its authority."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gnomon.firewall.host.sentinels.detectors import looks_injected
from gnomon.firewall.log.events import ORIGIN_FLAGGED, SENTINEL_ALERT, SENTINEL_CURSOR, Event
from gnomon.firewall.model.errors import GateError, InputError
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Integrity
from gnomon.firewall.model.states import Authority, SecurityStatus
from gnomon.firewall.store.base import Store

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

logger = logging.getLogger("gnomon.sentinel")
ALERT_KIND = SENTINEL_ALERT
FLAG_KIND = ORIGIN_FLAGGED
CURSOR_KIND = SENTINEL_CURSOR
#: The bytes every flag or alert event's body holds (its kind, as JSON writes it).
_MARK_KINDS = (FLAG_KIND.encode(), ALERT_KIND.encode())
#: Security states a quarantine, or a suspicion, has nothing left to do for.
_QUARANTINED = frozenset({SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS})
_SUSPECTED = _QUARANTINED | {SecurityStatus.SUSPICIOUS}
#: An action rests on low confidence if a cited belief's confidence is below this.
LOW_CONFIDENCE = 0.3
#: An action at or above this level after an untrusted read is an anomalous sequence (L3).
SEQUENCE_LEVELS = frozenset({"L3", "L4", "L5"})


@dataclass
class SentinelState:
    """What the log says so far: flagged origins, alerted beliefs, sessions that read untrusted
    content. Rebuilt from events alone, so any process can catch up by tailing the store."""

    seq: int = 0
    flagged_origins: set[str] = field(default_factory=set)
    alerted_beliefs: set[str] = field(default_factory=set)
    untrusted_sessions: set[str] = field(default_factory=set)

    def learn(self, event: Event) -> None:
        self.seq = max(self.seq, event.seq)
        data = event.payload
        if event.kind == FLAG_KIND:
            self.flagged_origins.add(str(data["origin_id"]))
        elif event.kind == ALERT_KIND:
            self.alerted_beliefs.update(data.get("belief_ids", []))
            self.flagged_origins.update(data.get("flag_origins", []))

    def catch_up_marks(self, store: Store) -> None:
        """Learn the flags and alerts after the last event seen, parsing only the events whose
        body names one of their kinds (the arbiter's look, on every decision: most events are
        neither, and need not be parsed to know it)."""
        for seq, body, _prev_hash, _digest in store.chain_rows(after=self.seq):
            if not isinstance(body, bytes) or any(kind in body for kind in _MARK_KINDS):
                # a verdict that holds actions: read again through the store, which checks
                # its seal (a flag appended by anyone but the host is refused, never learnt)
                for event in store.events(after=seq - 1, limit=1):
                    self.learn(event)
            self.seq = max(self.seq, seq)

    def catch_up(self, store: Store) -> list[Event]:
        """Read the events after the last one seen (an indexed tail read) and learn them."""
        fresh = list(store.events(after=self.seq))
        for event in fresh:
            self.learn(event)
        return fresh


def _alert(sentinel: str, reason: str, event: Event, **data: Any) -> dict[str, Any]:
    return {
        "alert_id": new_id("alr"),
        "sentinel": sentinel,
        "reason": reason,
        "source_seq": event.seq,
        "belief_ids": [],
        **data,
    }


#: How many alerts an operator listing shows by default (``gnomon sentinel run --limit``).
LISTING_LIMIT = 50

#: Listing order: alerts that quarantined first, then those that hold or question an action,
#: then mere suspicion of a text (the kind a flood of injection-like notes raises).
_LISTING_RANK = {
    "suspicious_origin": 0,
    "tool_sequence": 1,
    "low_confidence": 1,
    "content_signal": 2,
}


@dataclass(frozen=True, slots=True)
class AlertListing:
    """What an operator listing shows of one run's alerts: at most ``limit``, the ones that
    acted first, and whether any were left out (``omitted``; every alert is an event)."""

    shown: tuple[dict[str, Any], ...]
    total: int

    @property
    def omitted(self) -> int:
        return self.total - len(self.shown)

    @property
    def truncated(self) -> bool:
        return self.omitted > 0


def alert_listing(alerts: Sequence[dict[str, Any]], limit: int = LISTING_LIMIT) -> AlertListing:
    """``alerts`` ranked (quarantines first, injection-like text last; in raising order within
    a rank) and cut at ``limit``: a flood of low-rank alerts cannot push a quarantine out of
    the listing, and a cut listing says so.

    >>> flood = [{"sentinel": "content_signal"}] * 3 + [{"sentinel": "suspicious_origin"}]
    >>> listed = alert_listing(flood, limit=2)
    >>> [a["sentinel"] for a in listed.shown], listed.omitted
    (['suspicious_origin', 'content_signal'], 2)
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InputError(
            f"limit must be a whole number >= 0, got {limit!r}", hint="pass e.g. limit=50"
        )
    ranked = sorted(alerts, key=lambda a: _LISTING_RANK.get(str(a.get("sentinel")), 3))
    return AlertListing(tuple(ranked[:limit]), len(alerts))


class Sentinel:
    """Host-side. ``attach()`` watches in process; ``follow()`` tails the store."""

    def __init__(self, wall: Firewall, *, low_confidence: float = LOW_CONFIDENCE) -> None:
        self._wall = wall
        self._low = low_confidence
        self.state = SentinelState()
        # Our own commits (alerts, quarantines) come back through the hook on this thread:
        # skip them there; other threads wait for the lock.
        self._lock = threading.RLock()
        self._local = threading.local()
        self.alerts: list[dict[str, Any]] = []

    def attach(self) -> Sentinel:
        """Watch every later commit of this firewall, in process (after what is already
        in the log: the state catches up first)."""
        self.state.catch_up(self._wall.store)
        self._wall.subscribe(self.observe)
        return self

    def resume(self) -> int:
        """Pick up where the last durable run stopped (``gnomon sentinel run``): the flags and
        alerts of the whole log are learned (only the events naming them are parsed), and
        detection resumes after the last ``sentinel.cursor``; returns that seq (0: none).

        Not restored: which sessions read untrusted content before the cursor (a session that
        spans two runs is judged on what it reads after the cursor)."""
        cursor = 0
        marks = (*_MARK_KINDS, CURSOR_KIND.encode())
        for seq, body, prev_hash, digest in self._wall.store.chain_rows():
            if isinstance(body, bytes) and not any(kind in body for kind in marks):
                continue
            event = Event.from_body(seq, body, prev_hash, digest)
            if event.kind == CURSOR_KIND:
                at = event.payload.get("seq")
                cursor = max(cursor, at if type(at) is int else 0)
            else:
                self.state.learn(event)
        self.state.seq = cursor
        return cursor

    def follow(self, *, once: bool = False, interval: float = 0.5, durable: bool = False) -> int:
        """Tail the store (another process writes it); returns how many events were seen.
        With ``durable``, each pass that saw events records a ``sentinel.cursor`` (see
        :meth:`resume`)."""
        seen = 0
        while True:
            fresh = list(self._wall.store.events(after=self.state.seq))
            self.observe(fresh)
            seen += len(fresh)
            if durable and any(e.kind != CURSOR_KIND for e in fresh):
                self._mark_cursor()
            if once:
                return seen
            time.sleep(interval)

    def _mark_cursor(self) -> None:
        wall = self._wall
        data = {"seq": self.state.seq}
        wall.commit(wall.draft(CURSOR_KIND, actor="sentinel:cursor", now=wall.clock(), data=data))

    def observe(self, events: Iterable[Event]) -> None:
        if getattr(self._local, "busy", False):  # our own alerts and quarantines
            return
        with self._lock:
            self._local.busy = True
            try:
                for event in events:
                    if event.seq <= self.state.seq:
                        continue
                    self.state.learn(event)
                    for alert in self._detect(event):
                        self._raise(alert, event)
            finally:
                self._local.busy = False

    # -- detectors ------------------------------------------------------------------------

    def _detect(self, event: Event) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if event.kind in (ALERT_KIND, FLAG_KIND):
            return out
        records = event.records()
        for obs in records.observations:
            if obs.session_id and obs.origin.integrity < Integrity.OBSERVED:
                self.state.untrusted_sessions.add(obs.session_id)
        for belief in records.beliefs:
            if belief.security_status in (SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS):
                continue
            hit = sorted(belief.origin.origin_ids & self.state.flagged_origins)
            if hit:
                out.append(
                    _alert(
                        "suspicious_origin",
                        f"belief derives from flagged origin(s) {', '.join(hit)}",
                        event,
                        belief_ids=[belief.id],
                        act="quarantine",
                    )
                )
            elif belief.version == 1 and belief.origin.integrity < Integrity.OBSERVED:
                pattern = looks_injected(belief.statement)
                if pattern and belief.security_status == SecurityStatus.CLEAN:
                    out.append(
                        _alert(
                            "content_signal",
                            f"injection-like text (pattern {pattern!r})",
                            event,
                            belief_ids=[belief.id],
                            act="suspect",
                        )
                    )
        if event.kind == "action.proposed":
            out.extend(self._action(event))
        return out

    def _action(self, event: Event) -> list[dict[str, Any]]:
        data = event.payload
        out = []
        if event.session_id in self.state.untrusted_sessions and data.get("level") in (
            SEQUENCE_LEVELS
        ):
            out.append(
                _alert(
                    "tool_sequence",
                    f"untrusted content read, then {data.get('tool')} ({data.get('level')}) "
                    "requested in the same session",
                    event,
                    request_id=data.get("request_id"),
                    session=event.session_id,
                )
            )
        cites = [str(c) for c in data.get("cites", [])]
        found = self._wall.store.get_beliefs(cites)
        low = sorted(i for i, b in found.items() if b.confidence < self._low)
        if low:
            out.append(
                _alert(
                    "low_confidence",
                    f"{data.get('tool')} rests on belief(s) below confidence {self._low}",
                    event,
                    belief_ids=low,
                    request_id=data.get("request_id"),
                )
            )
        return out

    # -- acting ---------------------------------------------------------------------------

    def _raise(self, alert: dict[str, Any], event: Event) -> None:
        act = alert.pop("act", None)
        wall = self._wall
        if act is not None:
            # the event's snapshot may be old: a belief already quarantined (an operator's
            # flag, an earlier run) is neither alerted nor moved again
            now = wall.store.get_beliefs(alert["belief_ids"])
            done = _QUARANTINED if act == "quarantine" else _SUSPECTED
            alert["belief_ids"] = [
                i for i in alert["belief_ids"] if i in now and now[i].security_status not in done
            ]
            if not alert["belief_ids"]:
                return
        wall.commit(
            wall.draft(
                ALERT_KIND,
                actor=f"sentinel:{alert['sentinel']}",
                now=wall.clock(),
                session_id=event.session_id,
                project=event.project,
                data=alert,
            )
        )
        self.alerts.append(alert)
        self.state.alerted_beliefs.update(alert["belief_ids"])
        target = SecurityStatus.QUARANTINED if act == "quarantine" else SecurityStatus.SUSPICIOUS
        if act is None:
            return
        from gnomon.firewall.gate.gate import Move
        from gnomon.firewall.model.states import Axis

        for belief_id in alert["belief_ids"]:
            try:
                wall.transition(
                    belief_id,
                    [Move(Axis.SECURITY, target)],
                    reason=f"sentinel alert {alert['alert_id']}: {alert['reason']}",
                    authority=Authority.SENTINEL,
                    kind="belief.quarantined" if act == "quarantine" else "belief.suspected",
                    related_ids=[alert["alert_id"]],
                )
            except GateError as exc:  # moved meanwhile (another process): the alert stands,
                # and one belief the gate refuses must not stop the watch (it never wedges)
                logger.warning("gnomon sentinel: %s not moved: %s", belief_id, exc)

    def flag_origin(self, origin_id: str, *, reason: str) -> list[str]:
        """Raise an alert flagging ``origin_id`` and quarantine everything derived from it
        (one transaction, :meth:`Firewall.flag_origin`)."""
        alert_id = new_id("alr")
        moved = self._wall.flag_origin(
            origin_id, reason=reason, actor="sentinel:suspicious_origin", alert_id=alert_id
        )
        self.state.flagged_origins.add(origin_id)
        return moved


__all__ = ["ALERT_KIND", "CURSOR_KIND", "FLAG_KIND", "Sentinel", "SentinelState"]
