"""Export boundaries (issue 28): a shipped export honours belief snapshots' labels.

The attacker wants a secret fact out of the host in a shipped export (ceiling ``internal``). The
fact's observation event is withheld by its label; the fact's text also rides in every later
event that carries the belief's snapshot, such as a sentinel's transition. The promise: that
event is withheld for its own label (``secret records above the internal ceiling``), and the
secret text appears nowhere in the file, which still verifies. The FLIP drops belief snapshots
from what :func:`payload_sensitivity` reads: the transition event is then no longer withheld for
its label. (It is still withheld, by the free-text layer, because a transition carries a reason
and the log holds a secret record: defence in depth, which is why this test pins the reason.)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall import Authority, Origin
from gnomon.firewall.audit import shipping
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.log.events import Records
from gnomon.firewall.model.states import Axis, Sensitivity, TruthStatus
from tests.attested import attested

SECRET_TEXT = "The vault code is 4417"


def _shipped(tmp_path: Path) -> tuple[shipping.Shipment, bytes]:
    wall = firewall.open("memory://")
    with wall.session(project="ship", actor="coder", user="alice") as s:
        belief = s.observe(
            tool="chat",
            content=SECRET_TEXT,
            origin=attested(wall, Origin.user("alice")),
            sensitivity=Sensitivity.SECRET,
        ).content[0]
    assert isinstance(belief, firewall.Belief) and belief.sensitivity == Sensitivity.SECRET
    wall.transition(
        belief.id,
        [Move(Axis.TRUTH, TruthStatus.CONTRADICTED)],
        reason="a sentinel disagrees",
        authority=Authority.SENTINEL,
    )
    path = tmp_path / "shipped.ndjson"
    shipment = shipping.ship_to_file(wall.store.chain_rows, path, Sensitivity.INTERNAL)
    return shipment, path.read_bytes()


def _note(data: bytes, seq: int) -> str | None:
    for line in data.splitlines()[1:]:
        doc: dict[str, Any] = orjson.loads(line)
        if doc["seq"] == seq:
            return doc.get("redacted")
    raise AssertionError(f"no line for seq {seq}")


def test_a_belief_snapshot_above_the_ceiling_is_withheld_for_its_label(tmp_path: Path) -> None:
    shipment, data = _shipped(tmp_path)
    last = shipment.redacted_seqs[-1]
    assert last == shipment.events  # the transition, the last event, carries only the snapshot
    assert _note(data, last) == "secret records above the internal ceiling"
    assert shipment.reasons == {shipping.LABEL: 2}  # observation event and transition event
    assert b"4417" not in data
    report = shipping.verify_file(tmp_path / "shipped.ndjson")
    assert report.redacted == 2


def test_flip_ignoring_belief_labels_stops_withholding_the_snapshot_for_its_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shipping.records_from_payload

    def without_beliefs(payload: dict[str, Any]) -> Records:
        return dataclasses.replace(real(payload), beliefs=())

    monkeypatch.setattr(shipping, "records_from_payload", without_beliefs)
    shipment, data = _shipped(tmp_path)
    last = shipment.events
    # the label is ignored: only the free-text layer (the transition's reason) still holds it
    assert _note(data, last) == (
        "unlabelled or agent-written text in a log holding records above the internal ceiling"
    )
    assert shipment.reasons[shipping.LABEL] == 1
