"""The sentinel arbiter: the action kernel's arbitration hook fed by sentinel alerts."""

from __future__ import annotations

from collections.abc import Sequence

from gnomon.firewall.host.sentinels.sentinel import SentinelState
from gnomon.firewall.kernel.actionpolicy import Outcome
from gnomon.firewall.kernel.decide import Case
from gnomon.firewall.model.states import SecurityStatus
from gnomon.firewall.store.base import Store

_BAD = frozenset({SecurityStatus.SUSPICIOUS, SecurityStatus.QUARANTINED, SecurityStatus.MALICIOUS})


class SentinelArbiter:
    """Hold an action that cites an alerted/suspicious/quarantined belief, or whose session
    label includes a flagged origin. Reads the alerts other processes wrote from the store
    (the tail since its last look) on every call: fail closed on what is in the log."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.state = SentinelState()

    def __call__(self, case: Case) -> tuple[Outcome, Sequence[str]] | None:
        self.state.catch_up_marks(self._store)
        reasons = []
        for ident in case.cites:
            belief = case.found.get(ident)
            if ident in self.state.alerted_beliefs:
                reasons.append(f"cited belief {ident} has sentinel alert(s): held")
            elif belief is not None and belief.security_status in _BAD:
                reasons.append(f"cited belief {ident} is {belief.security_status}: held")
        if case.label is not None:
            flagged = sorted(case.label.origin_ids & self.state.flagged_origins)
            if flagged:
                reasons.append(
                    f"the session's inputs derive from flagged origin(s) {', '.join(flagged)}: held"
                )
        return (Outcome.HOLD, reasons) if reasons else None


__all__ = ["SentinelArbiter"]
