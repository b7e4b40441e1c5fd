"""Freshness decay: fresh → stale → expired, by the policy's window and ``expires_at``.

A belief is **expired** once its ``expires_at`` has passed, and **stale** once its anchor
(``last_verified_at``, else ``observed_at``) is older than the stale window: by default the
``max_age`` of the ``default`` ContextPolicy (P30D), so a belief goes stale exactly when the
default policy stops admitting it by age. Every move is a gate transition on ``system``
authority (the freshness table), recorded as a ``belief.decayed`` event carrying a compact move
batch (:mod:`firewall.log.moves`: one entry per belief, nothing restated); a stale belief leaves the
default context because the default policy admits only ``fresh``.

Two ways it runs: **in bulk** (:func:`decay_all`, ``gnomon decay``), one event and transaction
per chunk of beliefs, candidates found by the store's indexed
:meth:`~firewall.store.base.Store.decay_rows` pages; and **lazily on read** (:func:`decay_read`,
:func:`decay_seen`), for the beliefs a recall rejected on age or expiry, so a store nobody ran
``gnomon decay`` on still records what decayed when it was read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gnomon.firewall.gate.gate import Move
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.log.moves import MoveBatch
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.durations import Duration
from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.heap import cyclic_gc_paused
from gnomon.firewall.model.states import Authority, Axis, FreshnessStatus
from gnomon.firewall.store.base import DecayRow

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

DECAY_KIND = "belief.decayed"
#: Beliefs per event and transaction in bulk: one compact event each (~100 B per belief).
CHUNK = 50_000


@functools.lru_cache(maxsize=1)
def default_window() -> Duration:
    """The stale window: the ``default`` policy's ``max_age`` (P30D), read once (the preset is
    a file shipped in the package; a Duration is immutable)."""
    age = ContextPolicy.preset("default").freshness.max_age
    assert age is not None, "the default policy sets freshness.max_age"
    return age


def due(belief: Belief, now: datetime, stale_before: datetime) -> FreshnessStatus | None:
    """The freshness state ``belief`` is due to move to, or ``None``."""
    anchor = belief.last_verified_at or belief.observed_at
    return due_state(
        belief.freshness_status,
        expired=belief.expires_at is not None and belief.expires_at <= now,
        aged=anchor < stale_before,
    )


def due_state(current: FreshnessStatus, *, expired: bool, aged: bool) -> FreshnessStatus | None:
    """The one decay rule, for a typed belief (:func:`due`) and a store's compact candidate
    rows alike: past ``expires_at`` means expired; a fresh belief whose anchor is older than
    the stale window goes stale; nothing else moves (stale never expires by age alone)."""
    if expired:
        return FreshnessStatus.EXPIRED if current != FreshnessStatus.EXPIRED else None
    if current == FreshnessStatus.FRESH and aged:
        return FreshnessStatus.STALE
    return None


@dataclass(frozen=True, slots=True)
class DecayReport:
    stale: int
    expired: int
    events: int


#: The reason an expired belief's revision gives (its own ``expires_at`` is in its versions).
EXPIRED_REASON = "expires_at has passed"
_STATES = frozenset(FreshnessStatus)


def _commit(
    wall: Firewall,
    due_now: Iterable[tuple[str, int, FreshnessStatus, FreshnessStatus]],
    now: datetime,
    window: Duration,
) -> tuple[int, int]:
    """One ``belief.decayed`` move batch (:mod:`firewall.log.moves`) for ``(belief id, version,
    from, to)`` moves: one event, one transaction, no belief restated."""
    batch: MoveBatch | None = None  # built on the first due move: a read usually has none
    stale_reason = f"not verified or observed within {window}"
    counts = {FreshnessStatus.STALE: 0, FreshnessStatus.EXPIRED: 0}
    plans: dict[tuple[FreshnessStatus, FreshnessStatus], tuple[tuple[Axis, str, str], ...]] = {}
    for belief_id, version, current, target in due_now:
        reason = EXPIRED_REASON if target == FreshnessStatus.EXPIRED else stale_reason
        if batch is None:
            batch = MoveBatch(Authority.SYSTEM, now)
        plan = plans.get((current, target))
        if plan is None:  # the gate is asked once per (from, to), not once per belief
            plan = batch.plan({Axis.FRESHNESS: current}, [Move(Axis.FRESHNESS, target)])
            plans[current, target] = plan
        if batch.add_planned(belief_id, version, plan, reason=reason):
            counts[target] += 1
    if batch is not None and batch:
        wall.commit(
            wall.draft(
                DECAY_KIND,
                actor="system",
                now=now,
                data={
                    "window": str(window),
                    "stale": counts[FreshnessStatus.STALE],
                    "expired": counts[FreshnessStatus.EXPIRED],
                },
                moves=batch,
            )
        )
    return counts[FreshnessStatus.STALE], counts[FreshnessStatus.EXPIRED]


def _due_rows(
    rows: Iterable[DecayRow],
) -> Iterable[tuple[str, int, FreshnessStatus, FreshnessStatus]]:
    """The moves the store's candidate rows are due (a row whose stored document does not
    read as a belief version, e.g. edited by hand, is not moved: a rebuild names it)."""
    for row in rows:
        if type(row.version) is not int or row.freshness not in _STATES:
            continue
        current = FreshnessStatus(row.freshness)
        # a candidate that is not expired was found by its anchor: older than the window
        target = due_state(current, expired=row.expired, aged=True)
        if target is not None:
            yield row.belief_id, row.version, current, target


def _window(window: Duration | str | None) -> Duration:
    if window is None:
        return default_window()
    chosen = Duration.parse(window) if isinstance(window, str) else window
    if not isinstance(chosen, Duration) or chosen == Duration():
        raise InputError(
            f"the stale window must be a non-zero ISO 8601 duration, got {window!r}",
            hint="e.g. P30D",
        )
    return chosen


def decay_all(
    wall: Firewall,
    *,
    now: datetime | None = None,
    window: Duration | str | None = None,
    chunk: int = CHUNK,
) -> DecayReport:
    """Move every belief that is due, one ``belief.decayed`` event per ``chunk``."""
    with cyclic_gc_paused():  # each chunk's rows are short-lived containers with no cycles
        return _decay_chunks(wall, moment=now or wall.clock(), window=_window(window), chunk=chunk)


def _decay_chunks(wall: Firewall, *, moment: datetime, window: Duration, chunk: int) -> DecayReport:
    stale = expired = events = 0
    after = ""
    while True:
        page = wall.store.decay_rows(
            stale_before=window.before(moment), now=moment, after=after, limit=chunk
        )
        if not page:
            return DecayReport(stale, expired, events)
        s, e = _commit(wall, _due_rows(page), moment, window)
        stale, expired, events = stale + s, expired + e, events + (1 if s or e else 0)
        after = page[-1].belief_id


def decay_seen(
    wall: Firewall, belief_ids: Iterable[str], *, window: Duration | str | None = None
) -> int:
    """Lazily decay the given beliefs (what a read just saw); returns how many moved."""
    found = wall.store.get_beliefs(list(belief_ids))
    return decay_read(wall, found.values(), window=window)


def decay_read(
    wall: Firewall, beliefs: Iterable[Belief], *, window: Duration | str | None = None
) -> int:
    """:func:`decay_seen` for beliefs the read already holds as stored (no second read):
    nothing is written unless one of them is due."""
    chosen = _window(window)
    now = wall.clock()
    stale_before = chosen.before(now)
    moves = []
    for belief in beliefs:
        target = due(belief, now, stale_before)
        if target is not None:
            moves.append((belief.id, belief.version, belief.freshness_status, target))
    s, e = _commit(wall, moves, now, chosen)
    return s + e


__all__ = [
    "DECAY_KIND",
    "DecayReport",
    "decay_all",
    "decay_read",
    "decay_seen",
    "default_window",
    "due",
]
