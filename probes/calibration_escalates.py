"""Probe: a badly calibrated class escalates its actions to a hold; calibration events are
durable and replayable.

**Scenario.** On a fresh SQLite file, a user states a fact (supported, confidence 0.9, class
``user``). A host runs the action kernel (default policy) with a ``CalibrationArbiter``. First an L1
``suggest`` citing the fact executes. Then ten more ``suggest`` calls cite the fact and fail as
the host observes them (the kernel records each failure), while the agent reports a success for
an action of its own each time; the host records calibration (``gnomon calibration
--record``), and the agent proposes the same ``suggest`` again; a ``suggest`` citing nothing
is proposed too. The store is reopened and the calibration event replayed; a copy of it with
an edited score is replayed too.

**Asserts.**
- Before any outcome, the citing ``suggest`` executes.
- The recorded class ``user`` has 11 samples (the ten observed failures and the first
  ``suggest``, whose execution the kernel recorded as a success; the agent's ten reported
  successes are not samples): ECE |0.9 - 1/11| = 0.809091, Brier 0.737273.
- After it, the citing ``suggest`` is held with a reason naming the calibration class; the one
  citing nothing executes.
- After reopening the store the ``calibration.computed`` event is there and ``replay`` gives the
  same scores; an edited copy is refused with ``LogIntegrityError``.

**Does not claim.** That ten bins suit small samples.
"""

from __future__ import annotations

import dataclasses

from gnomon.firewall import Origin
from gnomon.firewall import open as open_firewall
from gnomon.firewall.kernel import calibration as cal
from gnomon.firewall.model.errors import LogIntegrityError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "calibration_escalates"
TITLE = "A badly calibrated class holds its actions; calibration events replay"
STORE = "sqlite"  # reopened to show the calibration event is durable: a fresh file each run


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        user = wall.channel(Origin.user("alice"), project=project)
        with wall.session(project=project, actor="coder", user="alice") as s:
            (fact,) = s.observe(tool="chat", content="Builds use cache v2", origin=user).content
        calls: list[dict[str, object]] = []

        def suggest(args: dict[str, object]) -> str:
            calls.append(args)
            if 2 <= len(calls) <= 11:  # the ten runs after the first fail, as the host sees
                raise RuntimeError("cache miss")
            return "ok"

        arbiters = [cal.CalibrationArbiter(wall.store)]
        with host(wall, arbiters=arbiters, executors={"suggest": suggest}) as h:
            with wall.session(project=project, actor="coder", user="alice") as s:
                before = h.kernel.handle(s).request("suggest", {"text": "go"}, cites=[fact.id])
            c.expect(before.status == "executed", "before any outcome the action executes")
            with wall.session(project=project, actor="coder", user="alice") as s:
                for i in range(10):
                    h.kernel.handle(s).request("suggest", {"text": f"{i}"}, cites=[fact.id])
                    # and the agent reports a success of its own for each: not a sample
                    action = s.act(s.decide(f"use cache v2 ({i})", [fact.id]).id, "build")
                    s.record_outcome(action.id, success=True, summary="all green")
            event, scores = cal.record(wall)
            mine = scores.get("user")
            c.expect(
                mine == cal.ClassScore(11, 0.809091, 0.737273) and mine.ece > cal.MAX_ECE,
                "the user class is recorded as badly calibrated (ECE above the threshold)",
                got=mine,
            )
            with wall.session(project=project, actor="coder", user="alice") as s:
                after = h.kernel.handle(s).request("suggest", {"text": "go"}, cites=[fact.id])
                bare = h.kernel.handle(s).request("suggest", {"text": "go"})
            c.expect(
                after.status == "held" and any("calibration class" in r for r in after.reasons),
                "after it, the action citing the fact is held for its calibration class",
                got=(after.status, after.reasons),
            )
            c.expect(bare.status == "executed", "an action citing nothing still executes")
    with open_firewall(url) as again:
        stored = next((e for e in again.store.events(after=event.seq - 1)), None)
        c.expect(
            stored is not None and stored.kind == cal.KIND and cal.replay(stored) == scores,
            "after reopening, the calibration event replays to the same scores",
        )
        if stored is not None:
            edited = dataclasses.replace(
                stored,
                payload={
                    **stored.payload,
                    "scores": {"user": {"samples": 10, "ece": 0.0, "brier": 0.0}},
                },
            )
            c.raises(
                LogIntegrityError, "an edited calibration event is refused", cal.replay, edited
            )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
