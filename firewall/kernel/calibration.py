"""Calibration: how well the confidence of the beliefs actions rested on predicted their outcomes.

Every recorded :class:`~firewall.model.chain.Outcome` is linked, through its action and the action's
decision, to the beliefs the decision cited; each cited belief contributes one sample
``(confidence, success)`` to its **calibration class** (the sorted origin classes of its label,
e.g. ``user`` or ``agent+external``). Per class: the **Brier score** (mean squared error of the
confidence) and the **ECE** (expected calibration error over ten equal-width confidence bins).

:func:`record` appends a ``calibration.computed`` event holding the samples it used as well as
the scores, so the figures are durable and :func:`replay` recomputes them from the event alone.
:class:`CalibrationArbiter` is an arbitration hook for the action kernel: an action citing a
belief of a class whose latest recorded ECE is above the threshold (with enough samples) is held.
Only host-observed outcomes count (the kernel's ``action.executed``): an outcome the agent
reports about its own action is never a sample, so the agent cannot talk a class's flag away;
nothing here ever loosens a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gnomon.firewall.kernel.actionpolicy import Outcome as Verdict
from gnomon.firewall.kernel.decide import Case
from gnomon.firewall.log.events import Event
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.errors import InputError, LogIntegrityError
from gnomon.firewall.store.base import Store

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

KIND = "calibration.computed"
BINS = 10
MAX_ECE = 0.25
MIN_SAMPLES = 10


def calibration_class(belief: Belief) -> str:
    return "+".join(sorted(c.value for c in belief.origin.classes))


@dataclass(frozen=True, slots=True)
class ClassScore:
    samples: int
    ece: float
    brier: float

    def json(self) -> dict[str, Any]:
        return {"samples": self.samples, "ece": self.ece, "brier": self.brier}


def score(pairs: Sequence[tuple[float, bool]]) -> ClassScore:
    """ECE over ``BINS`` equal-width bins and the Brier score of ``(confidence, success)``."""
    n = len(pairs)
    if n == 0:
        return ClassScore(0, 0.0, 0.0)
    brier = sum((p - (1.0 if y else 0.0)) ** 2 for p, y in pairs) / n
    bins: dict[int, list[tuple[float, bool]]] = {}
    for p, y in pairs:
        bins.setdefault(min(int(p * BINS), BINS - 1), []).append((p, y))
    ece = 0.0
    for members in bins.values():
        confidence = sum(p for p, _ in members) / len(members)
        accuracy = sum(1 for _, y in members if y) / len(members)
        ece += abs(confidence - accuracy) * len(members) / n
    return ClassScore(n, round(ece, 6), round(brier, 6))


#: The one event that carries a host-observed outcome: the kernel's record of an execution.
OBSERVED_KIND = "action.executed"


def samples(store: Store) -> dict[str, list[tuple[str, float, bool]]]:
    """``{class: [(outcome id, confidence, success)]}`` from every host-observed outcome in
    the log (the kernel's ``action.executed``). An outcome the agent reports about its own
    action (``Session.record_outcome``) is its word, not an observation: counted, a run of
    reported successes would lift a class's flag and let the flagged action run."""
    out: dict[str, list[tuple[str, float, bool]]] = {}
    for event in store.events():
        if event.kind != OBSERVED_KIND:
            continue
        for outcome in event.records().outcomes:
            action = store.get_action(outcome.action_id)
            decision = store.get_decision(action.decision_id) if action else None
            if decision is None:
                continue
            for belief in store.get_beliefs(decision.depends_on).values():
                out.setdefault(calibration_class(belief), []).append(
                    (outcome.id, belief.confidence, outcome.success)
                )
    return out


def scores(by_class: Mapping[str, Iterable[tuple[str, float, bool]]]) -> dict[str, ClassScore]:
    return {k: score([(p, y) for _, p, y in v]) for k, v in sorted(by_class.items())}


def record(wall: Firewall) -> tuple[Event, dict[str, ClassScore]]:
    """Compute the scores and append them, with their samples, as one event."""
    by_class = samples(wall.store)
    computed = scores(by_class)
    (event,) = wall.commit(
        wall.draft(
            KIND,
            actor="system",
            now=wall.clock(),
            data={
                "bins": BINS,
                "scores": {k: v.json() for k, v in computed.items()},
                "samples": {k: [list(s) for s in v] for k, v in sorted(by_class.items())},
            },
        )
    )
    return event, computed


def replay(event: Event) -> dict[str, ClassScore]:
    """Recompute the scores of a ``calibration.computed`` event from its samples; raise
    :class:`LogIntegrityError` if they differ from what the event records."""
    if event.kind != KIND:
        raise InputError(f"event {event.seq} is a {event.kind}, not a {KIND}")
    data = event.payload
    recomputed = scores(
        {k: [(str(o), float(p), bool(y)) for o, p, y in v] for k, v in data["samples"].items()}
    )
    if {k: v.json() for k, v in recomputed.items()} != data["scores"]:
        raise LogIntegrityError(event.seq, "calibration scores do not follow from its samples")
    return recomputed


def latest(store: Store) -> Event | None:
    found = None
    for event in store.events():
        if event.kind == KIND:
            found = event
    return found


class CalibrationArbiter:
    """Hold an action citing a belief of a badly calibrated class (latest recorded ECE above
    ``max_ece`` over at least ``min_samples`` samples). Reads new events on each call."""

    def __init__(
        self, store: Store, *, max_ece: float = MAX_ECE, min_samples: int = MIN_SAMPLES
    ) -> None:
        self._store = store
        self._max = max_ece
        self._min = min_samples
        self._seq = 0
        self._bad: dict[str, dict[str, Any]] = {}

    def _catch_up(self) -> None:
        for event in self._store.events(after=self._seq):
            self._seq = event.seq
            if event.kind == KIND:
                self._bad = {
                    k: v
                    for k, v in event.payload["scores"].items()
                    if v["samples"] >= self._min and v["ece"] > self._max
                }

    def __call__(self, case: Case) -> tuple[Verdict, Sequence[str]] | None:
        self._catch_up()
        reasons = []
        for ident in case.cites:
            belief = case.found.get(ident)
            if belief is None:
                continue
            bad = self._bad.get(calibration_class(belief))
            if bad is not None:
                reasons.append(
                    f"cited belief {ident} is of calibration class {calibration_class(belief)} "
                    f"with ECE {bad['ece']} over {bad['samples']} outcomes (above "
                    f"{self._max}): held"
                )
        return (Verdict.HOLD, reasons) if reasons else None


__all__ = [
    "KIND",
    "CalibrationArbiter",
    "ClassScore",
    "calibration_class",
    "latest",
    "record",
    "replay",
    "samples",
    "score",
    "scores",
]
