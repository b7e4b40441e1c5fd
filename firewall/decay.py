"""Freshness decay: fresh → stale → expired, by the policy's window and ``expires_at``.

A belief is **expired** once its ``expires_at`` has passed, and **stale** once its anchor
(``last_verified_at``, else ``observed_at``) is older than the stale window: by default the
``max_age`` of the ``default`` ContextPolicy (P30D), so a belief goes stale exactly when the
default policy stops admitting it by age. Every move is a gate transition on ``system``
authority (the freshness table), recorded as a ``belief.decayed`` event; a stale belief leaves
the default context because the default policy admits only ``fresh``.

Two ways it runs: **in bulk** (:func:`decay_all`, ``gnomon decay``), one event per chunk of
beliefs, candidates found by the store's indexed :meth:`~firewall.store.base.Store.decay_candidates`
pages; and **lazily on read** (:func:`decay_seen`), for the beliefs a recall rejected on age or
expiry, so a store nobody ran ``gnomon decay`` on still records what decayed when it was read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from firewall.chain import Belief, Revision
from firewall.durations import Duration
from firewall.errors import InputError
from firewall.events import Records
from firewall.gate import Move, apply_moves
from firewall.policy import ContextPolicy
from firewall.states import Authority, Axis, FreshnessStatus

if TYPE_CHECKING:
    from firewall.firewall import Firewall

DECAY_KIND = "belief.decayed"
CHUNK = 2000


@functools.lru_cache(maxsize=1)
def default_window() -> Duration:
    """The stale window: the ``default`` policy's ``max_age`` (P30D), read once (the preset is
    a file shipped in the package; a Duration is immutable)."""
    age = ContextPolicy.preset("default").freshness.max_age
    assert age is not None, "the default policy sets freshness.max_age"
    return age


def due(belief: Belief, now: datetime, stale_before: datetime) -> FreshnessStatus | None:
    """The freshness state ``belief`` is due to move to, or ``None``."""
    current = belief.freshness_status
    if belief.expires_at is not None and belief.expires_at <= now:
        return FreshnessStatus.EXPIRED if current != FreshnessStatus.EXPIRED else None
    anchor = belief.last_verified_at or belief.observed_at
    if current == FreshnessStatus.FRESH and anchor < stale_before:
        return FreshnessStatus.STALE
    return None


@dataclass(frozen=True, slots=True)
class DecayReport:
    stale: int
    expired: int
    events: int


def _commit(
    wall: Firewall, beliefs: Iterable[Belief], now: datetime, window: Duration
) -> tuple[int, int]:
    stale_before = window.before(now)
    moved: list[Belief] = []
    revisions: list[Revision] = []
    counts = {FreshnessStatus.STALE: 0, FreshnessStatus.EXPIRED: 0}
    for belief in beliefs:
        target = due(belief, now, stale_before)
        if target is None:
            continue
        why = (
            f"expires_at {belief.expires_at.isoformat()} has passed"
            if target == FreshnessStatus.EXPIRED and belief.expires_at is not None
            else f"not verified or observed within {window}"
        )
        updated, revs = apply_moves(
            belief, [Move(Axis.FRESHNESS, target)], authority=Authority.SYSTEM, reason=why, now=now
        )
        moved.append(updated)
        revisions.extend(revs)
        counts[target] += 1
    if moved:
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
                records=Records(beliefs=tuple(moved), revisions=tuple(revisions)),
            )
        )
    return counts[FreshnessStatus.STALE], counts[FreshnessStatus.EXPIRED]


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
    chosen = _window(window)
    moment = now or wall.clock()
    stale = expired = events = 0
    after = ""
    while True:
        page = wall.store.decay_candidates(
            stale_before=chosen.before(moment), now=moment, after=after, limit=chunk
        )
        if not page:
            return DecayReport(stale, expired, events)
        s, e = _commit(wall, page, moment, chosen)
        stale, expired, events = stale + s, expired + e, events + (1 if s or e else 0)
        after = page[-1].id


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
    s, e = _commit(wall, beliefs, wall.clock(), _window(window))
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
