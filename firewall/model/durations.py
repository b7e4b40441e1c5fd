"""ISO 8601 durations (``PnYnMnWnDTnHnMnS``) as a strict value type.

ContextPolicy freshness ceilings are written as durations (``max_age: P30D``). A timedelta cannot
hold them faithfully: "one month" is not a fixed number of seconds, and a policy author who writes
``P1M`` on 31 March means 28 (or 29) February, not "30 days ago". So a :class:`Duration` keeps the
components as written and applies them to a moment with calendar arithmetic:

1. years and months shift the calendar date, clamping the day to the target month's length;
2. weeks, days, hours, minutes and seconds are then applied as one exact timedelta.

>>> from datetime import datetime, UTC
>>> d = Duration.parse("P1M")
>>> d.before(datetime(2026, 3, 31, 12, tzinfo=UTC)).isoformat()
'2026-02-28T12:00:00+00:00'
>>> str(Duration.parse("PT1,50S"))
'PT1.5S'

Accepted: any non-empty subset of the designators in the order ``Y M W D`` then ``T H M S``
(weeks may be combined with other units, which ISO 8601-2 allows); a decimal fraction, with
``.`` or ``,``, only on the last (smallest) unit present. Refused with :class:`PolicyError`:
empty ``P`` or ``PT``, signs, unknown or lower-case designators, repeated or out-of-order units,
fractions on any unit but the last, and durations longer than about 10,000 years (no moment can
be shifted by them).

A fractional year counts as twelve times as many months; a fraction of a month that remains is
applied as that fraction of 30 days (ISO 8601 leaves fractional months to agreement; this is ours).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from gnomon.firewall.model.errors import PolicyError

EXAMPLE = "P30D"

# The same grammar as the parser below, as one ECMA-262-compatible regular expression for the
# published JSON Schema. Each fraction is allowed only when its designator ends the text.
PATTERN = (
    r"^P(?!$)"
    r"(?:[0-9]+(?:[.,][0-9]+(?=Y$))?Y)?"
    r"(?:[0-9]+(?:[.,][0-9]+(?=M$))?M)?"
    r"(?:[0-9]+(?:[.,][0-9]+(?=W$))?W)?"
    r"(?:[0-9]+(?:[.,][0-9]+(?=D$))?D)?"
    r"(?:T(?=[0-9])"
    r"(?:[0-9]+(?:[.,][0-9]+(?=H$))?H)?"
    r"(?:[0-9]+(?:[.,][0-9]+(?=M$))?M)?"
    r"(?:[0-9]+(?:[.,][0-9]+(?=S$))?S)?"
    r")?$"
)

MAX_TEXT_LENGTH = 64
# Anything longer than this cannot be applied to any datetime (years 1..9999) anyway.
_MAX_DAYS = Decimal(3_660_000)

_DATE_UNITS: tuple[str, ...] = ("Y", "M", "W", "D")
_TIME_UNITS: tuple[str, ...] = ("H", "M", "S")
_FIELDS = ("years", "months", "weeks", "days", "hours", "minutes", "seconds")
_COMPONENT = re.compile(r"([0-9]+)(?:[.,]([0-9]+))?([A-Za-z])")

_ZERO = Decimal(0)
_MICROSECONDS = {
    "weeks": Decimal(7 * 86_400 * 1_000_000),
    "days": Decimal(86_400 * 1_000_000),
    "hours": Decimal(3_600 * 1_000_000),
    "minutes": Decimal(60 * 1_000_000),
    "seconds": Decimal(1_000_000),
}
_APPROX_DAYS = {
    "years": Decimal(366),
    "months": Decimal(31),
    "weeks": Decimal(7),
    "days": Decimal(1),
    "hours": Decimal(1) / 24,
    "minutes": Decimal(1) / 1_440,
    "seconds": Decimal(1) / 86_400,
}


def _invalid(text: object, why: str) -> PolicyError:
    return PolicyError(
        f"{text!r} is not an ISO 8601 duration (example: {EXAMPLE}): {why}",
        hint="write PnYnMnWnDTnHnMnS with upper-case designators, e.g. P30D, PT36H, "
        "P1Y2M10DT2H30M or PT0.5S",
    )


def _number(whole: str, fraction: str | None) -> Decimal:
    return Decimal(f"{whole}.{fraction}") if fraction is not None else Decimal(whole)


def _canonical_number(value: Decimal) -> str:
    return format(value.normalize(), "f")


@dataclass(frozen=True, slots=True)
class Duration:
    """A non-negative ISO 8601 duration, kept component by component.

    Equality compares components: ``P1W`` and ``P7D`` move a moment by the same amount but are
    different texts, and the policy digest hashes the text the author wrote (canonicalised).
    """

    years: Decimal = _ZERO
    months: Decimal = _ZERO
    weeks: Decimal = _ZERO
    days: Decimal = _ZERO
    hours: Decimal = _ZERO
    minutes: Decimal = _ZERO
    seconds: Decimal = _ZERO

    pattern: ClassVar[str] = PATTERN

    def __post_init__(self) -> None:
        last_fraction: str | None = None
        for name in _FIELDS:
            raw: Any = getattr(self, name)
            if isinstance(raw, bool) or not isinstance(raw, int | Decimal):
                raise PolicyError(
                    f"Duration {name} must be an int or Decimal, got {type(raw).__name__}",
                    hint="use Duration.parse('P30D') or Duration(days=30)",
                )
            value = Decimal(raw)
            if not value.is_finite() or value < 0:
                raise PolicyError(
                    f"Duration {name} must be a finite, non-negative number, got {raw}",
                    hint="durations are lengths of time; write P30D, not -P30D",
                )
            if last_fraction is not None and value != 0:
                raise PolicyError(
                    f"Duration {last_fraction} has a fraction but {name} follows it",
                    hint="only the smallest unit present may carry a fraction",
                )
            if value != value.to_integral_value():
                last_fraction = name
            object.__setattr__(self, name, value)
        total_days = sum((getattr(self, n) * _APPROX_DAYS[n] for n in _FIELDS), _ZERO)
        if total_days > _MAX_DAYS:
            raise PolicyError(
                f"duration {self} is longer than any moment can be shifted by (about 10,000 years)",
                hint="use a shorter max_age, or omit it for no age limit",
            )

    # -- text -------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse ISO 8601 duration text; raise :class:`PolicyError` saying what is wrong."""
        if not isinstance(text, str):
            raise _invalid(text, f"expected text, got {type(text).__name__}")
        if not text:
            raise _invalid(text, "it is empty")
        if len(text) > MAX_TEXT_LENGTH:
            raise _invalid(text[:MAX_TEXT_LENGTH] + "...", "it is too long")
        if text[0] in "+-":
            raise _invalid(text, "signed durations are not allowed; durations are non-negative")
        if text[0] != "P":
            if text[0] == "p":
                raise _invalid(text, "designators are upper case (P, Y, M, W, D, T, H, S)")
            raise _invalid(text, "it must start with 'P'")
        values: dict[str, Decimal] = {}
        units, prefix = _DATE_UNITS, ""
        rank = -1
        fraction_on: str | None = None
        in_time = False
        pos = 1
        while pos < len(text):
            if text[pos] == "T":
                if in_time:
                    raise _invalid(text, "'T' appears twice")
                in_time, units, prefix, rank = True, _TIME_UNITS, "T", -1
                pos += 1
                if pos == len(text) or not text[pos].isascii() or not text[pos].isdigit():
                    raise _invalid(text, "'T' must be followed by hours, minutes or seconds")
                continue
            match = _COMPONENT.match(text, pos)
            if match is None:
                number = re.match(r"[0-9]+(?:([.,])([0-9]*))?", text[pos:])
                if number is not None and number.group(1) and not number.group(2):
                    raise _invalid(text, f"the fraction at position {pos} needs digits after it")
                if number is not None:
                    raise _invalid(text, f"the number at position {pos} has no unit designator")
                raise _invalid(text, f"unexpected {text[pos]!r} at position {pos}")
            whole, fraction, designator = match.groups()
            if designator.islower():
                raise _invalid(text, "designators are upper case (P, Y, M, W, D, T, H, S)")
            if designator not in units:
                if not in_time and designator in ("H", "S"):
                    raise _invalid(text, f"'{designator}' is a time unit and goes after 'T'")
                if in_time and designator in ("Y", "W", "D"):
                    raise _invalid(text, f"'{designator}' is a date unit and goes before 'T'")
                raise _invalid(text, f"'{designator}' is not a duration designator")
            if fraction_on is not None:
                raise _invalid(
                    text, f"only the last unit may have a fraction, but {fraction_on!r} does"
                )
            index = units.index(designator)
            if index <= rank:
                raise _invalid(text, f"'{designator}' is repeated or out of order")
            rank = index
            name = _FIELDS[_DATE_UNITS.index(designator)] if not in_time else _FIELDS[4 + index]
            values[name] = _number(whole, fraction)
            if fraction is not None:
                fraction_on = f"{prefix}{whole}.{fraction}{designator}"
            pos = match.end()
        if not values:
            raise _invalid(text, "it has no components")
        return cls(**values)

    def __str__(self) -> str:
        date = "".join(
            f"{_canonical_number(getattr(self, n))}{d}"
            for n, d in zip(_FIELDS[:4], _DATE_UNITS, strict=True)
            if getattr(self, n) != 0
        )
        time = "".join(
            f"{_canonical_number(getattr(self, n))}{d}"
            for n, d in zip(_FIELDS[4:], _TIME_UNITS, strict=True)
            if getattr(self, n) != 0
        )
        if not date and not time:
            return "PT0S"
        return f"P{date}" + (f"T{time}" if time else "")

    def __repr__(self) -> str:
        return f"Duration({str(self)!r})"

    # -- arithmetic -------------------------------------------------------------------------

    def _calendar_and_exact(self) -> tuple[int, timedelta]:
        months = self.years * 12 + self.months
        whole_months = int(months)
        micro = (months - whole_months) * 30 * _MICROSECONDS["days"]
        for name, scale in _MICROSECONDS.items():
            micro += getattr(self, name) * scale
        exact = int(micro.to_integral_value(rounding=ROUND_HALF_EVEN))
        return whole_months, timedelta(microseconds=exact)

    def before(self, moment: datetime) -> datetime:
        """``moment`` minus this duration; ``OverflowError`` if that is before year 1."""
        months, exact = self._calendar_and_exact()
        return _shift_months(moment, -months) - exact

    def after(self, moment: datetime) -> datetime:
        """``moment`` plus this duration; ``OverflowError`` if that is after year 9999."""
        months, exact = self._calendar_and_exact()
        return _shift_months(moment, months) + exact

    # -- pydantic ---------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate,
            serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="json"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "type": "string",
            "pattern": PATTERN,
            "description": "ISO 8601 duration, e.g. P30D, PT36H, P1Y2M10DT2H30M, P1W",
            "examples": ["P30D", "PT36H", "P1W"],
        }


def _validate(value: Any) -> Duration:
    if isinstance(value, Duration):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError(
            "iso_duration",
            "expected an ISO 8601 duration string such as {example}, got {kind} {value}",
            {"example": EXAMPLE, "kind": type(value).__name__, "value": repr(value)},
        )
    try:
        return Duration.parse(value)
    except PolicyError as exc:
        raise PydanticCustomError("iso_duration", "{message}", {"message": exc.message}) from exc


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month - 1]


def _shift_months(moment: datetime, months: int) -> datetime:
    if months == 0:
        return moment
    index = moment.year * 12 + (moment.month - 1) + months
    year, month0 = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise OverflowError(f"shifting {moment.isoformat()} by {months} months leaves 1..9999")
    day = min(moment.day, _days_in_month(year, month0 + 1))
    return moment.replace(year=year, month=month0 + 1, day=day)


__all__ = ["Duration"]
