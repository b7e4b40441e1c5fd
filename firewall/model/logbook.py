"""The ``gnomon`` logger: refusals and withheld reads at INFO, formatted in one place.

Operators watch logs before they read audit trails. Every typed refusal at an agent-facing
boundary (a bad argument, a gate refusal, a missing or wrong grant, a bypass), every kernel
denial and hold, and every read that withheld something is one INFO record on the logger named
``gnomon``. Each record says *what kind* of refusal, *where*, and the ids involved; never the
error's message, never an argument, never memory text. A message can quote the argument it
refuses (:func:`firewall.model.arguments.record_error` shows the value it got), and that argument
may be a secret: an operator's log is not the place for it, whatever the sensitivity ceiling.

Each record also carries its fields as ``record.gnomon`` (a dict) for structured handlers.

>>> import logging
>>> class Seen(logging.Handler):
...     def emit(self, record): print(record.getMessage())
>>> log.addHandler(handler := Seen()); log.setLevel(logging.INFO)
>>> withheld_read("recall", returned=1, quoted=0, withheld=2, reasons={"truth": 2})
recall: 1 returned (0 quoted), 2 withheld {'truth': 2}
>>> log.removeHandler(handler); log.setLevel(logging.NOTSET)
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("gnomon")

#: Set on an exception once it is logged, so nested checked calls log a refusal once.
_LOGGED = "_gnomon_logged"


def _emit(message: str, fields: Mapping[str, Any], *args: object) -> None:
    log.info(message, *args, extra={"gnomon": dict(fields)})


def refused(where: str, error: BaseException) -> None:
    """A typed refusal at ``where`` (a public call): its type, and for a gate refusal the move.
    The message is never logged: it may quote the refused argument."""
    if getattr(error, _LOGGED, False):
        return
    with contextlib.suppress(AttributeError):  # an exception type with __slots__
        setattr(error, _LOGGED, True)
    kind = type(error).__name__
    fields: dict[str, Any] = {"record": "refused", "where": where, "error": kind}
    move = ""
    axis = getattr(error, "axis", None)
    if isinstance(axis, str):
        parts = {
            name: getattr(error, name, None)
            for name in ("axis", "from_state", "to_state", "authority", "belief_id")
        }
        fields.update({k: v for k, v in parts.items() if isinstance(v, str)})
        move = (
            f" ({parts['axis']} {parts['from_state']} -> {parts['to_state']} by "
            f"{parts['authority']}"
            + (f" on {parts['belief_id']}" if parts["belief_id"] else "")
            + ")"
        )
    _emit("refused %s: %s%s", fields, where, kind, move)


def withheld_read(
    where: str, *, returned: int, quoted: int, withheld: int, reasons: Mapping[str, int]
) -> None:
    """A read (a recall, or a guarded store's read) and what the policy withheld: counts and
    reason codes."""
    fields = {
        "record": "read",
        "where": where,
        "returned": returned,
        "quoted": quoted,
        "withheld": withheld,
        "reasons": dict(reasons),
    }
    _emit(
        "%s: %d returned (%d quoted), %d withheld %s",
        fields,
        where,
        returned,
        quoted,
        withheld,
        dict(reasons),
    )


def kernel_ruling(
    outcome: str,
    *,
    tool: str | None,
    request_id: str,
    session_id: str | None,
    level: str | None = None,
    rule: str | None = None,
) -> None:
    """A kernel hold, denial, expiry, refusal at execution or forged approval (never its
    arguments, never its reasons' text)."""
    fields = {
        "record": "kernel",
        "outcome": outcome,
        "tool": tool,
        "level": level,
        "rule": rule,
        "request_id": request_id,
        "session_id": session_id,
    }
    _emit(
        "action %s %s: %s (request %s, session %s%s)",
        fields,
        tool or "?",
        level or "",
        outcome,
        request_id,
        session_id or "-",
        f", rule {rule}" if rule else "",
    )


__all__ = ["kernel_ruling", "log", "refused", "withheld_read"]
