"""ISO 8601 durations: what parses, what is refused (and how it says so), calendar arithmetic."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from gnomon.firewall.model.durations import PATTERN, Duration
from gnomon.firewall.model.errors import PolicyError

MOMENT = datetime(2026, 3, 31, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "canonical", "fields"),
    [
        ("P30D", "P30D", {"days": 30}),
        ("PT36H", "PT36H", {"hours": 36}),
        (
            "P1Y2M10DT2H30M",
            "P1Y2M10DT2H30M",
            {"years": 1, "months": 2, "days": 10, "hours": 2, "minutes": 30},
        ),
        ("PT0.5S", "PT0.5S", {"seconds": Decimal("0.5")}),
        ("PT1,50S", "PT1.5S", {"seconds": Decimal("1.5")}),
        ("P1W", "P1W", {"weeks": 1}),
        ("P1W3D", "P1W3D", {"weeks": 1, "days": 3}),
        ("P2DT0.25H", "P2DT0.25H", {"days": 2, "hours": Decimal("0.25")}),
        ("P1.5Y", "P1.5Y", {"years": Decimal("1.5")}),
        ("PT90M", "PT90M", {"minutes": 90}),
        ("P0D", "PT0S", {}),
        ("P0Y3M", "P3M", {"months": 3}),
        ("P007D", "P7D", {"days": 7}),
    ],
)
def test_valid_forms_parse_and_print_canonically(
    text: str, canonical: str, fields: dict[str, int | Decimal]
) -> None:
    duration = Duration.parse(text)
    assert str(duration) == canonical
    assert duration == Duration(**{k: Decimal(v) for k, v in fields.items()})
    assert Duration.parse(str(duration)) == duration
    assert re.search(PATTERN, text), "the published JSON Schema pattern must accept it too"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("P", "no components"),
        ("PT", "'T' must be followed"),
        ("P1DT", "'T' must be followed"),
        ("-P1D", "signed"),
        ("+P1D", "signed"),
        ("P30X", "'X' is not a duration designator"),
        ("P1.5DT2H", "only the last unit may have a fraction"),
        ("P1.5Y2M", "only the last unit may have a fraction"),
        ("PT1.5H30M", "only the last unit may have a fraction"),
        ("p30d", "upper case"),
        ("P30d", "upper case"),
        ("pt1h", "upper case"),
        ("30D", "must start with 'P'"),
        ("garbage", "must start with 'P'"),
        (" P30D", "must start with 'P'"),
        ("P30D ", "unexpected ' '"),
        ("P1M1Y", "out of order"),
        ("P1D1D", "repeated"),
        ("PT1D", "date unit and goes before 'T'"),
        ("P1H", "time unit and goes after 'T'"),
        ("P1DT1HT1M", "'T' appears twice"),
        ("P1.5", "no unit designator"),
        ("P.5D", "unexpected '.'"),
        ("P1.D", "needs digits after it"),
        ("P\u0661D", "unexpected"),  # a non-ASCII digit
        ("P99999Y", "longer than any moment"),
    ],
)
def test_invalid_forms_raise_policy_error_quoting_the_text(text: str, why: str) -> None:
    with pytest.raises(PolicyError) as caught:
        Duration.parse(text)
    message = str(caught.value)
    assert why in message
    if "longer" in why:
        return  # well-formed, but out of range: the schema pattern cannot say so
    assert repr(text) in message
    assert "example: P30D" in message
    assert not re.search(PATTERN, text), "the JSON Schema pattern must refuse it too"


def test_non_string_is_refused() -> None:
    with pytest.raises(PolicyError, match="expected text"):
        Duration.parse(30)  # type: ignore[arg-type]


def test_constructor_refuses_negative_and_misplaced_fractions() -> None:
    with pytest.raises(PolicyError, match="non-negative"):
        Duration(days=Decimal(-1))
    with pytest.raises(PolicyError, match="fraction"):
        Duration(days=Decimal("1.5"), hours=Decimal(2))
    assert Duration(days=30) == Duration.parse("P30D")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "moment", "expected"),
    [
        ("P1M", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 2, 28, tzinfo=UTC)),
        ("P1M", datetime(2024, 3, 31, tzinfo=UTC), datetime(2024, 2, 29, tzinfo=UTC)),
        ("P1Y", datetime(2024, 2, 29, tzinfo=UTC), datetime(2023, 2, 28, tzinfo=UTC)),
        ("P13M", datetime(2026, 1, 15, tzinfo=UTC), datetime(2024, 12, 15, tzinfo=UTC)),
        ("P30D", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
        ("P1W", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 3, 24, tzinfo=UTC)),
        ("PT36H", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 3, 29, 12, tzinfo=UTC)),
        ("PT0.5S", MOMENT, MOMENT - timedelta(milliseconds=500)),
        # calendar first (31 Mar -> 28 Feb), then the exact part
        ("P1M1D", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 2, 27, tzinfo=UTC)),
        ("P1.5Y", datetime(2026, 3, 31, tzinfo=UTC), datetime(2024, 9, 30, tzinfo=UTC)),
        # a fraction of a month left over counts as that fraction of 30 days
        ("P0.5M", datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 3, 16, tzinfo=UTC)),
    ],
)
def test_before_is_calendar_aware(text: str, moment: datetime, expected: datetime) -> None:
    assert Duration.parse(text).before(moment) == expected


def test_after_clamps_to_month_end_and_keeps_timezone() -> None:
    tz = timezone(timedelta(hours=5, minutes=30))
    moment = datetime(2026, 1, 31, 9, 15, tzinfo=tz)
    shifted = Duration.parse("P1MT1H").after(moment)
    assert shifted == datetime(2026, 2, 28, 10, 15, tzinfo=tz)
    assert shifted.tzinfo is tz


def test_out_of_range_arithmetic_overflows() -> None:
    with pytest.raises(OverflowError):
        Duration.parse("P9000Y").before(MOMENT)
    with pytest.raises(OverflowError):
        Duration.parse("P9000Y").after(MOMENT)


@given(
    days=st.integers(min_value=0, max_value=5000),
    seconds=st.integers(min_value=0, max_value=86_399),
)
def test_exact_units_match_timedelta(days: int, seconds: int) -> None:
    duration = Duration(days=Decimal(days), seconds=Decimal(seconds))
    delta = timedelta(days=days, seconds=seconds)
    assert duration.before(MOMENT) == MOMENT - delta
    assert duration.after(MOMENT) == MOMENT + delta
    assert Duration.parse(str(duration)) == duration


class _Holder(BaseModel):
    age: Duration
    optional: Duration | None = None


def test_pydantic_field_parses_and_serializes_iso_text() -> None:
    holder = _Holder.model_validate({"age": "PT1,5H"})
    assert holder.age == Duration.parse("PT1.5H")
    assert holder.model_dump(mode="json") == {"age": "PT1.5H", "optional": None}
    assert _Holder.model_validate_json(holder.model_dump_json()) == holder
    assert _Holder(age=Duration.parse("P1D")).age == Duration.parse("P1D")


def test_pydantic_field_errors_name_the_problem() -> None:
    with pytest.raises(ValidationError) as caught:
        _Holder.model_validate({"age": "P30X"})
    error = caught.value.errors()[0]
    assert error["type"] == "iso_duration"
    assert "'P30X' is not an ISO 8601 duration (example: P30D)" in error["msg"]
    with pytest.raises(ValidationError, match="expected an ISO 8601 duration string"):
        _Holder.model_validate({"age": 30})


def test_pydantic_json_schema_is_a_patterned_string() -> None:
    schema = _Holder.model_json_schema()["properties"]["age"]
    assert schema["type"] == "string"
    assert schema["pattern"] == PATTERN


def test_docstring_examples_run() -> None:
    import doctest
    import importlib

    failures, tried = doctest.testmod(importlib.import_module("gnomon.firewall.model.durations"))
    assert tried > 0 and failures == 0
