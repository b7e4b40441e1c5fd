"""Say what a guarded read withheld: counts and reasons, never the text.

A guarded read that drops hits must not look like an empty store. Every screened read yields a
:func:`report` (a plain dict, no memory text), which each adapter puts beside its results: the
``gnomon`` key of mem0's dict, a ``gnomon`` attribute on Letta and Zep responses. The same
counts go to the ``gnomon`` logger at INFO (formatted by
:func:`firewall.model.logbook.withheld_read`,
as every refusal and withheld read is), and the first time a guarded client's read comes back
empty *only* because of the policy, one WARNING names the commands that explain it.

>>> report([])["returned"], report([])["withheld"]
(0, 0)
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gnomon.firewall.model.logbook import withheld_read

if TYPE_CHECKING:
    from gnomon.adapters.guard import Screened

log = logging.getLogger("gnomon")

#: What the warning tells a newcomer to run.
EXPLAIN = (
    "gnomon recall QUERY --project {project} (the buckets and every reason); memories from "
    "before Gnomon stay unverified until adopted: gnomon import {store} ... --adopt-as user "
    "--grant FILE"
)


#: The reason code (and note prefix) of a quoted hit withheld past the policy's
#: ``quote.max_items`` (:func:`adapters.guard.capped`).
QUOTE_CAP = "quote_cap"


def reason_codes(screened: Screened) -> list[str]:
    """Why one hit was withheld, as codes (``truth``, ``security``…, ``quote_cap``, or the drop
    note's kind)."""
    if screened.note is not None and screened.note.startswith(QUOTE_CAP):
        return [QUOTE_CAP]
    if screened.reasons:
        return [r.code.value for r in screened.reasons]
    note = screened.note or screened.verdict
    return ["unbound" if note.startswith("no belief") else note.replace(" ", "_")]


def withheld_note(screened: Screened) -> dict[str, Any]:
    """What a single withheld item carries as ``gnomon`` in place of its text."""
    return {
        "withheld": True,
        "belief_id": screened.belief.id if screened.belief else None,
        "reasons": [str(r) for r in screened.reasons] or [screened.note or screened.verdict],
    }


class Summary(dict[str, Any]):
    """One read's report: a dict whose keys also read as attributes
    (``response.gnomon.contradictions``, ``response.gnomon["withheld"]``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def report(
    screened: Sequence[Screened], *, policy: str | None = None, quotes_shown: bool = True
) -> Summary:
    """Counts and reasons of one screened read: ``quoted`` counts as returned, labelled, unless
    ``quotes_shown`` is False (where there is no room for the label: a Letta step's prompt)."""
    withheld = [s for s in screened if not (s.passed if quotes_shown else s.verdict == "accepted")]
    reasons: Counter[str] = Counter(code for s in withheld for code in reason_codes(s))
    out = Summary(
        {
            "returned": len(screened) - len(withheld),
            "quoted": sum(1 for s in screened if s.verdict == "quoted") if quotes_shown else 0,
            "withheld": len(withheld),
            "reasons": dict(sorted(reasons.items())),
        }
    )
    if policy is not None:
        out["policy"] = policy
    return out


class Announcer:
    """Logs each read's report; warns once per guarded client on a policy-only empty read."""

    def __init__(self, store: str, project: str) -> None:
        self.store = store
        self.project = project
        self.warned = False

    def announce(self, summary: dict[str, Any], *, call: str) -> None:
        withheld_read(
            f"{self.store}.{call}",
            returned=summary["returned"],
            quoted=summary["quoted"],
            withheld=summary["withheld"],
            reasons=summary["reasons"],
        )
        if summary["returned"] == 0 and summary["withheld"] > 0 and not self.warned:
            self.warned = True
            log.warning(
                "%s.%s came back empty because the policy withheld %d hit(s) (%s); see %s",
                self.store,
                call,
                summary["withheld"],
                ", ".join(summary["reasons"]),
                EXPLAIN.format(project=self.project, store=self.store),
            )


def attach(response: Any, summary: dict[str, Any]) -> Any:
    """``response`` with the report as its ``gnomon`` attribute: a pydantic model's copy, a
    list as :class:`ScreenedList`, anything else set in place (where it allows it)."""
    if isinstance(response, list):
        return ScreenedList(response, summary)
    copy = getattr(response, "model_copy", None)
    if copy is not None:
        try:
            return copy(update={"gnomon": summary})
        except (TypeError, ValueError):  # pragma: no cover - a model that forbids extras
            pass
    try:
        response.gnomon = summary
    except (AttributeError, TypeError, ValueError):  # pragma: no cover - a frozen object
        object.__setattr__(response, "gnomon", summary)
    return response


class ScreenedList(list[Any]):
    """A list of screened hits that says what was withheld (``.gnomon``)."""

    def __init__(self, items: Sequence[Any], summary: dict[str, Any]) -> None:
        super().__init__(items)
        self.gnomon = summary


__all__ = ["EXPLAIN", "QUOTE_CAP", "Announcer", "ScreenedList", "Summary", "attach", "report"]
