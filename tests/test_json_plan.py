"""The generated record dumpers (``ChainModel.to_json_dict``) agree with pydantic exactly.

Event bodies and projection rows are built from ``to_json_dict``; pydantic's
``model_dump(mode="json")`` is the reference it replaced for speed. Any divergence would change
canonical bytes, so every record type is compared on ordinary values and on the edge cases the
fast paths special-case (UTC written as ``Z``, other offsets, microseconds zero, optional
fields set, nested JSON in ``args``, enum-valued mappings, ints in float fields).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from pydantic_core import TzInfo

from gnomon.firewall.log.events import RECORD_TYPES
from gnomon.firewall.model.chain import BindingState, ChainModel, EvidenceSet
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Axis, Sensitivity, TruthStatus
from tests.factories import (
    make_action,
    make_belief,
    make_binding,
    make_claim,
    make_contradiction,
    make_decision,
    make_evidence,
    make_observation,
    make_origin,
    make_outcome,
    make_revision,
    make_session,
)

MOMENTS = [
    datetime(2025, 1, 1, tzinfo=UTC),
    datetime(2025, 1, 1, 12, 30, 5, 120000, tzinfo=UTC),
    datetime(2025, 1, 1, 12, 30, 5, 1, tzinfo=UTC),
    datetime(2025, 6, 1, 8, tzinfo=timezone(timedelta(hours=2))),
    datetime(2025, 6, 1, 8, tzinfo=timezone(timedelta(hours=-5, minutes=-30, seconds=-7))),
    datetime(2025, 6, 1, 8, tzinfo=timezone(timedelta(0))),
    datetime(2025, 6, 1, 8, tzinfo=TzInfo(0)),
    datetime(9, 1, 1, tzinfo=UTC),
]

ORIGINS = [
    make_origin("tool", "t"),
    Origin.join(Origin.user("alice"), Origin.external("file:README.md"), Origin.agent("coder")),
]


def records(moment: datetime, origin: Origin) -> list[ChainModel]:
    return [
        make_session(started_at=moment, ended_at=moment, model_id="m", user="u"),
        make_observation(
            captured_at=moment,
            origin=origin,
            args={"n": 1, "f": 0.5, "nested": {"list": [1, "two", None, True]}},
        ),
        make_claim(created_at=moment, origin=origin, valid_from=moment, subject="s"),
        make_evidence(observed_at=moment, origin=origin, action_id="act_x", note="n"),
        make_belief(
            observed_at=moment,
            created_at=moment,
            updated_at=moment,
            last_verified_at=moment,
            expires_at=moment + timedelta(days=1),
            origin=origin,
            confidence=1,
            sensitivity=Sensitivity.SECRET,
            truth_status=TruthStatus.SUPPORTED,
            contradicts=["bel_a", "bel_b"],
        ),
        make_belief(origin=origin, confidence=0.25),
        make_decision(
            created_at=moment,
            dependency_truth={"bel_a": TruthStatus.CONTRADICTED},
            flags=["unverified_dependency"],
        ),
        make_action(created_at=moment, args={"path": "x", "deep": [{"a": 1}]}),
        make_outcome(created_at=moment, success=False, summary="failed"),
        make_revision(created_at=moment, axis=Axis.TRUTH, related_ids=["x"]),
        make_revision(created_at=moment, axis=None),
        make_contradiction(detected_at=moment, subject="s", predicate="p"),
        make_binding(updated_at=moment, detail="error: 503"),
        make_binding(updated_at=moment, store_id=None, state=BindingState.PENDING),
    ]


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
@pytest.mark.parametrize("origin", ORIGINS, ids=["single", "joined"])
def test_dumper_matches_pydantic(moment: datetime, origin: Origin) -> None:
    for record in records(moment, origin):
        expected: dict[str, Any] = record.model_dump(mode="json")
        got = record.to_json_dict()
        assert got == expected, type(record).__name__
        assert list(got) == list(expected)  # same key order, so projection docs keep their bytes
        assert orjson.dumps(got) == orjson.dumps(expected)
        assert orjson.dumps(got, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            expected, option=orjson.OPT_SORT_KEYS
        )


def test_every_record_type_is_covered() -> None:
    covered = {type(r) for r in records(MOMENTS[0], ORIGINS[0])}
    assert {model for _, model in RECORD_TYPES} <= covered


def test_unknown_annotation_falls_back_to_pydantic() -> None:
    evidence = EvidenceSet(claim_id="clm_x", items=[make_evidence()])
    assert evidence.to_json_dict() == evidence.model_dump(mode="json")


def test_dump_returns_fresh_containers() -> None:
    origin = ORIGINS[1]
    belief = make_belief(origin=origin, contradicts=["bel_a"])
    first = belief.to_json_dict()
    first["origin"]["origin_ids"].append("tampered")
    first["contradicts"].append("tampered")
    assert belief.to_json_dict() == belief.model_dump(mode="json")
    assert origin.json_dict() == origin.model_dump(mode="json")
