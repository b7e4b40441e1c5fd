"""Sentinels: host-side watchers of the event stream that raise alerts and act, within limits.

A :class:`Sentinel` watches every committed event, in process (``Firewall.subscribe``, after each
commit) or from another process by tailing the store (:meth:`Sentinel.follow`, ``gnomon
sentinel run --follow``). Its alerts are events (``sentinel.alert``). Its authority is the gate's
``sentinel`` authority, which the transition tables limit to clean → suspicious → quarantined: it
can never promote or clear (``firewall.gate.gate.TRANSITIONS``). :class:`SentinelArbiter` is the
action kernel's arbitration hook: an action citing an alerted or quarantined belief, or whose
session label includes a flagged origin, is held.
"""

from gnomon.firewall.host.sentinels.arbiter import SentinelArbiter
from gnomon.firewall.host.sentinels.detectors import INJECTION_PATTERNS, looks_injected
from gnomon.firewall.host.sentinels.sentinel import (
    ALERT_KIND,
    FLAG_KIND,
    LISTING_LIMIT,
    AlertListing,
    Sentinel,
    SentinelState,
    alert_listing,
)

__all__ = [
    "ALERT_KIND",
    "FLAG_KIND",
    "INJECTION_PATTERNS",
    "LISTING_LIMIT",
    "AlertListing",
    "Sentinel",
    "SentinelArbiter",
    "SentinelState",
    "alert_listing",
    "looks_injected",
]
