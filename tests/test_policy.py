"""ContextPolicy: presets, strict loading with useful errors, reasons, and filter compilation.

The central property: the BeliefFilter a policy compiles to selects exactly the beliefs the
policy's own ``admits`` (resp. ``quotable``) accepts, so a store may push the policy into an
indexed query without changing what reaches the model.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gnomon.firewall.gate.policy import (
    PRIVILEGED_RETRIEVAL,
    PRIVILEGED_SECURITY,
    ContextPolicy,
    Reason,
    ReasonCode,
    resolve,
)
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.durations import Duration
from gnomon.firewall.model.errors import InputError, PolicyError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)
from tests.factories import T0, belief_draft, make_belief

PRESETS = ["assistant", "audit", "default", "planner", "reference"]
NOW = datetime(2026, 3, 31, 12, tzinfo=UTC)
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "policies" / "context-policy.schema.json"

VALID: dict[str, Any] = {
    "name": "custom",
    "truth": ["supported"],
    "retrieval": ["normal"],
    "security": ["clean"],
    "freshness": {"max_age": "P30D", "allow": ["fresh"]},
    "sensitivity_ceiling": "internal",
    "enforce_expiry": True,
}


def load(**changes: Any) -> ContextPolicy:
    data = {**VALID, **changes}
    return ContextPolicy.from_yaml_text(yaml.safe_dump(data), source="policies/x.yaml")


def refused(text: str, source: str = "policies/x.yaml") -> str:
    with pytest.raises(PolicyError) as caught:
        ContextPolicy.from_yaml_text(text, source=source)
    return str(caught.value)


def refused_data(**changes: Any) -> str:
    data = {key: value for key, value in {**VALID, **changes}.items() if value is not ...}
    return refused(yaml.safe_dump(data))


def good_belief(**overrides: Any) -> Belief:
    """A belief the default policy admits at NOW; override one field to fail one axis."""
    fields: dict[str, Any] = {
        "truth_status": TruthStatus.SUPPORTED,
        "retrieval_status": RetrievalStatus.NORMAL,
        "security_status": SecurityStatus.CLEAN,
        "freshness_status": FreshnessStatus.FRESH,
        "sensitivity": Sensitivity.INTERNAL,
        "observed_at": NOW - timedelta(days=2),
        "created_at": NOW - timedelta(days=2),
        "updated_at": NOW - timedelta(days=2),
    }
    fields.update(overrides)
    return make_belief(**fields)


# -- presets -------------------------------------------------------------------------------


def test_the_shipped_presets_are_exactly_these() -> None:
    assert ContextPolicy.presets() == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_preset_loads_round_trips_and_validates_against_the_schema(name: str) -> None:
    policy = ContextPolicy.preset(name)
    assert policy.name == name
    assert ContextPolicy.from_yaml_text(policy.to_yaml()) == policy
    assert ContextPolicy.from_yaml_text(policy.to_yaml()).digest == policy.digest
    assert policy.description
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    raw = yaml.safe_load(
        resources.files("gnomon.policies").joinpath(f"{name}.yaml").read_text("utf-8")
    )
    jsonschema.Draft202012Validator(schema).validate(raw)
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(policy.to_yaml()))


@pytest.mark.parametrize("name", PRESETS)
def test_preset_files_begin_with_an_explanatory_comment(name: str) -> None:
    text = resources.files("gnomon.policies").joinpath(f"{name}.yaml").read_text("utf-8")
    header = text.split("\nname:")[0]
    assert header.startswith(f"# Gnomon ContextPolicy preset: {name}")
    assert header.count("\n#") >= 4


def test_default_preset_has_the_seed_values() -> None:
    p = ContextPolicy.preset("default")
    assert p.truth == {TruthStatus.SUPPORTED}
    assert p.retrieval == {RetrievalStatus.NORMAL}
    assert p.security == {SecurityStatus.CLEAN}
    assert p.freshness.max_age == Duration.parse("P30D")
    assert p.freshness.allow == {FreshnessStatus.FRESH}
    assert p.sensitivity_ceiling is Sensitivity.INTERNAL
    assert p.enforce_expiry is True
    assert p.quote.enabled is False
    assert p.surface_contradictions is True
    assert p.surface_uncertainties is True
    assert p.decisions.require_citations is True
    assert p.decisions.allow_unverified_dependencies is False
    assert p.privileged is False


def test_planner_is_default_with_a_seven_day_window() -> None:
    default, planner = ContextPolicy.preset("default"), ContextPolicy.preset("planner")
    assert planner.freshness.max_age == Duration.parse("P7D")
    assert planner.decisions.allow_unverified_dependencies is False
    assert planner.quote.enabled is False
    same = {"name", "description", "freshness"}
    assert planner.model_dump(exclude=same) == default.model_dump(exclude=same)


def test_reference_quotes_unverified_content_only() -> None:
    p = ContextPolicy.preset("reference")
    assert (p.truth, p.retrieval, p.security) == (
        {TruthStatus.SUPPORTED},
        {RetrievalStatus.NORMAL},
        {SecurityStatus.CLEAN},
    )
    assert p.freshness.max_age == Duration.parse("P90D")
    assert p.quote.enabled and p.quote.max_items == 5
    assert p.quote.truth == {TruthStatus.UNVERIFIED}
    assert p.quote.retrieval == {RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL}
    assert p.quote.security == {SecurityStatus.CLEAN}


def test_audit_is_privileged_and_admits_everything() -> None:
    p = ContextPolicy.preset("audit")
    assert p.privileged is True
    assert p.sensitivity_ceiling is Sensitivity.SECRET
    assert p.freshness.max_age is None and p.enforce_expiry is False
    worst = good_belief(
        truth_status=TruthStatus.CONTRADICTED,
        retrieval_status=RetrievalStatus.BLOCKED,
        security_status=SecurityStatus.MALICIOUS,
        freshness_status=FreshnessStatus.EXPIRED,
        sensitivity=Sensitivity.SECRET,
        observed_at=datetime(1990, 1, 1, tzinfo=UTC),
        expires_at=datetime(1991, 1, 1, tzinfo=UTC),
    )
    assert p.admits(worst, NOW)
    where = p.accept_filter(now=NOW)
    assert (where.truth, where.retrieval, where.security, where.freshness) == (None,) * 4
    assert (where.max_sensitivity, where.anchor_after, where.not_expired_at) == (None,) * 3


def test_unknown_preset_lists_the_available_ones() -> None:
    with pytest.raises(PolicyError, match=r"unknown policy preset 'strict'.*audit, default"):
        ContextPolicy.preset("strict")
    with pytest.raises(PolicyError, match="unknown policy preset"):
        ContextPolicy.preset("../pyproject")


def test_committed_schema_is_the_generated_schema() -> None:
    generated = json.dumps(ContextPolicy.json_schema(), indent=2, sort_keys=True) + "\n"
    assert SCHEMA_FILE.read_text("utf-8") == generated, (
        'regenerate with: .venv/bin/python -c "import json; from firewall.gate.policy import '
        "ContextPolicy; open('policies/context-policy.schema.json', 'w').write(json.dumps("
        "ContextPolicy.json_schema(), indent=2, sort_keys=True) + '\\n')\""
    )


def test_schema_is_draft_2020_12_with_a_urn_id() -> None:
    schema = ContextPolicy.json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "urn:gnomon:context-policy:v1"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid({**VALID, "truht": ["supported"]})
    assert not validator.is_valid({**VALID, "freshness": {"max_age": "P30X", "allow": []}})
    assert not validator.is_valid({**VALID, "truth": ["verified"]})


# -- loading errors ------------------------------------------------------------------------


def test_bad_duration_names_source_field_and_example() -> None:
    message = refused_data(freshness={"max_age": "P30X", "allow": ["fresh"]})
    assert re.match(
        r"policies/x\.yaml: line \d+: freshness\.max_age: 'P30X' is not an ISO 8601 duration "
        r"\(example: P30D\)",
        message,
    )


def test_non_string_duration_is_refused() -> None:
    message = refused_data(freshness={"max_age": 30, "allow": ["fresh"]})
    assert "freshness.max_age: expected an ISO 8601 duration string such as P30D" in message


def test_unknown_top_level_key_is_named_with_the_known_keys() -> None:
    message = refused_data(truth=..., truht=["supported"])
    assert "unknown key 'truht' at top level (did you mean 'truth'?); known keys: name," in message
    assert "missing required key 'truth' at top level" in message


def test_unknown_nested_key_names_its_section() -> None:
    message = refused_data(quote={"enabled": False, "maxitems": 3})
    assert "unknown key 'maxitems' in quote (did you mean 'max_items'?)" in message
    assert "known keys: enabled, truth, retrieval, security, max_items" in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "truth",
            ["verified"],
            "truth: 'verified' is not a truth status; use one of unverified, supported, "
            "contradicted, superseded",
        ),
        (
            "retrieval",
            ["public"],
            "retrieval: 'public' is not a retrieval status; use one of hidden, restricted, "
            "normal, privileged_only, blocked",
        ),
        (
            "security",
            ["safe"],
            "security: 'safe' is not a security status; use one of clean, suspicious, "
            "quarantined, malicious",
        ),
        (
            "sensitivity_ceiling",
            "topsecret",
            "sensitivity_ceiling: 'topsecret' is not a sensitivity; use one of public, "
            "internal, confidential, secret",
        ),
        (
            "freshness",
            {"allow": ["new"]},
            "freshness.allow: 'new' is not a freshness status; use one of fresh, stale, expired",
        ),
        (
            "quote",
            {"truth": ["Supported"]},
            "quote.truth: 'Supported' is not a truth status",
        ),
    ],
)
def test_unknown_states_are_named(field: str, value: Any, expected: str) -> None:
    assert expected in refused_data(**{field: value})


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"enforce_expiry": "yes please"}, "enforce_expiry: expected true or false"),
        ({"enforce_expiry": "true"}, "enforce_expiry: expected true or false, got 'true'"),
        ({"truth": "supported"}, "truth: expected a list such as [supported]"),
        ({"retrieval": ["normal", "normal"]}, "retrieval: 'normal' is listed more than once"),
        ({"quote": 3}, "quote: expected a mapping of keys, got a number"),
        ({"quote": {"max_items": 0}}, "quote.max_items: "),
        ({"quote": {"max_items": "5"}}, "quote.max_items: expected a whole number"),
        ({"name": "My Policy"}, "name: 'My Policy' is not a valid policy name"),
        ({"name": ...}, "missing required key 'name' at top level"),
        ({"freshness": {"max_age": "P1D"}}, "missing required key 'allow' in freshness"),
        ({"description": 5}, "description: expected text"),
    ],
)
def test_wrong_types_are_named(changes: dict[str, Any], expected: str) -> None:
    message = refused_data(**changes)
    assert message.startswith("policies/x.yaml: ")
    assert expected in message


def test_every_error_is_reported_on_its_own_line() -> None:
    message = refused_data(truth=["verified"], security="clean", extra=1)
    lines = message.split(" (hint:")[0].splitlines()
    assert len(lines) == 3
    assert all(line.startswith("policies/x.yaml: ") for line in lines)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"retrieval": ["normal", "blocked"]}, "retrieval: blocked can be admitted only by"),
        ({"retrieval": ["hidden"]}, "retrieval: hidden can be admitted only by"),
        ({"retrieval": ["privileged_only"]}, "retrieval: privileged_only can be admitted only"),
        ({"security": ["clean", "quarantined"]}, "security: quarantined can be admitted only"),
        ({"security": ["malicious"]}, "security: malicious can be admitted only"),
        (
            {"quote": {"enabled": True, "security": ["quarantined"]}},
            "quote.security: quarantined can be admitted only by a privileged policy",
        ),
        (
            {"quote": {"enabled": True, "truth": ["supported"], "retrieval": ["normal"]}},
            "quote: the quote lists overlap the trusted lists on every axis",
        ),
        ({"privileged": True}, "a privileged policy admits every state; list them all on truth"),
    ],
)
def test_policy_rules_are_enforced_at_load(changes: dict[str, Any], expected: str) -> None:
    assert expected in refused_data(**changes)


def test_privileged_policy_must_be_wide_open() -> None:
    audit = ContextPolicy.preset("audit").model_dump(mode="json")
    for key, value, expected in [
        ("sensitivity_ceiling", "confidential", "must have sensitivity_ceiling: secret"),
        ("enforce_expiry", True, "must set enforce_expiry: false"),
        ("freshness", {**audit["freshness"], "max_age": "P1D"}, "must not set freshness.max_age"),
        ("quote", {"enabled": True}, "quote must be disabled"),
    ]:
        with pytest.raises(PolicyError, match=expected):
            ContextPolicy.from_mapping({**audit, key: value})


def test_disabled_quote_may_overlap() -> None:
    policy = load(quote={"enabled": False, "truth": ["supported"], "retrieval": ["normal"]})
    assert policy.quote_filter(now=NOW) is None


def test_yaml_syntax_error_has_line_and_column() -> None:
    message = refused("name: x\ntruth: [supported\nretrieval: [normal]\n")
    assert message.startswith("policies/x.yaml: invalid YAML at line ")
    assert "column" in message


def test_duplicate_keys_are_refused() -> None:
    text = yaml.safe_dump(VALID) + "truth: [unverified]\n"
    assert "found duplicate key 'truth'" in refused(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "policy is empty"),
        ("# only a comment\n", "policy is empty"),
        ("- truth\n- retrieval\n", "top level must be a mapping of policy keys, got a list"),
        ("just a string\n", "top level must be a mapping of policy keys, got a string"),
    ],
)
def test_top_level_must_be_a_mapping(text: str, expected: str) -> None:
    assert expected in refused(text)


def test_bytes_are_refused() -> None:
    with pytest.raises(PolicyError, match="policy text must be str"):
        ContextPolicy.from_yaml_text(b"name: x")  # type: ignore[arg-type]


def test_unsafe_yaml_tags_are_refused() -> None:
    message = refused("name: !!python/object/apply:os.system ['true']\n")
    assert "invalid YAML" in message


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such policy file"):
        ContextPolicy.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(PolicyError, match="cannot read policy file"):
        ContextPolicy.from_yaml(tmp_path)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(yaml.safe_dump(VALID).encode() + b"description: caf\xe9\n")
    with pytest.raises(PolicyError, match=r"latin\.yaml: not UTF-8"):
        ContextPolicy.from_yaml(latin)
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"#" * 300_000)
    with pytest.raises(PolicyError, match="larger than"):
        ContextPolicy.from_yaml(huge)


def test_errors_name_the_file_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**VALID, "truth": ["verified"]}), "utf-8")
    with pytest.raises(
        PolicyError, match=rf"^{re.escape(str(path))}: line \d+: truth: 'verified' is not a truth"
    ):
        ContextPolicy.from_yaml(path)


def test_empty_lists_are_legal_and_admit_nothing() -> None:
    policy = load(truth=[])
    reasons = policy.rejection_reasons(good_belief(), NOW)
    assert [r.code for r in reasons] == [ReasonCode.TRUTH]
    assert "admits nothing (empty list)" in reasons[0].detail
    assert policy.accept_filter(now=NOW).truth == frozenset()


def test_replace_validates() -> None:
    default = ContextPolicy.preset("default")
    wider = default.replace(name="wider", sensitivity_ceiling="confidential")
    assert wider.sensitivity_ceiling is Sensitivity.CONFIDENTIAL
    with pytest.raises(PolicyError, match="retrieval: blocked can be admitted only"):
        default.replace(retrieval=["normal", "blocked"])


# -- resolve -------------------------------------------------------------------------------


def test_resolve(tmp_path: Path) -> None:
    default = ContextPolicy.preset("default")
    assert resolve(default) is default
    assert resolve("default") == default
    path = tmp_path / "mine.yml"
    path.write_text(default.replace(name="mine").to_yaml(), "utf-8")
    assert resolve(str(path)).name == "mine"
    assert resolve(path).name == "mine"
    with pytest.raises(PolicyError, match="no such policy file"):
        resolve(str(tmp_path / "absent.yaml"))
    with pytest.raises(PolicyError, match="unknown policy preset 'nope'"):
        resolve("nope")
    with pytest.raises(PolicyError, match="expected a ContextPolicy"):
        resolve(42)  # type: ignore[arg-type]


# -- digest --------------------------------------------------------------------------------


def test_digest_is_domain_separated_canonical_json() -> None:
    policy = ContextPolicy.preset("default")
    canonical = orjson.dumps(policy.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    expected = hashlib.sha256(b"gnomon.policy.v1\x00" + canonical).hexdigest()
    assert policy.digest == expected
    assert ContextPolicy.preset("default").digest == policy.digest
    assert ContextPolicy.from_yaml_text(policy.to_yaml()).digest == policy.digest


def test_digest_ignores_list_order_and_changes_with_any_value() -> None:
    a = load(truth=["supported", "unverified"])
    b = load(truth=["unverified", "supported"])
    assert a.digest == b.digest
    base = load()
    changed = [
        load(truth=["unverified"]),
        load(freshness={"max_age": "P31D", "allow": ["fresh"]}),
        load(freshness={"allow": ["fresh"]}),
        load(sensitivity_ceiling="public"),
        load(enforce_expiry=False),
        load(quote={"max_items": 6}),
        load(decisions={"require_citations": False}),
        load(description="changed"),
        load(name="other"),
    ]
    digests = {p.digest for p in changed}
    assert base.digest not in digests
    assert len(digests) == len(changed)


# -- reasons -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "code", "detail"),
    [
        (
            {"truth_status": TruthStatus.UNVERIFIED},
            ReasonCode.TRUTH,
            "truth is unverified; policy 'default' admits supported",
        ),
        (
            {"retrieval_status": RetrievalStatus.RESTRICTED},
            ReasonCode.RETRIEVAL,
            "retrieval is restricted; policy 'default' admits normal",
        ),
        (
            {"security_status": SecurityStatus.QUARANTINED},
            ReasonCode.SECURITY,
            "security is quarantined; policy 'default' admits clean",
        ),
        (
            {"sensitivity": Sensitivity.CONFIDENTIAL},
            ReasonCode.SENSITIVITY,
            "sensitivity is confidential; policy 'default' admits up to internal",
        ),
        (
            {"freshness_status": FreshnessStatus.STALE},
            ReasonCode.FRESHNESS,
            "freshness is stale; policy 'default' admits fresh",
        ),
        (
            {"observed_at": NOW - timedelta(days=31)},
            ReasonCode.FRESHNESS,
            "observed_at 2026-02-28T12:00:00+00:00 is older than max_age P30D "
            "(cutoff 2026-03-01T12:00:00+00:00)",
        ),
        (
            {"expires_at": NOW - timedelta(seconds=1)},
            ReasonCode.EXPIRY,
            "expired at 2026-03-31T11:59:59+00:00; policy 'default' enforces expiry",
        ),
    ],
)
def test_each_axis_yields_exactly_its_reason(
    overrides: dict[str, Any], code: ReasonCode, detail: str
) -> None:
    policy = ContextPolicy.preset("default")
    assert policy.admits(good_belief(), NOW)
    belief = good_belief(**overrides)
    assert policy.rejection_reasons(belief, NOW) == [Reason(code=code, detail=detail)]
    assert not policy.admits(belief, NOW)


def test_all_failing_reasons_are_reported_in_a_fixed_order() -> None:
    belief = good_belief(
        truth_status=TruthStatus.CONTRADICTED,
        retrieval_status=RetrievalStatus.HIDDEN,
        security_status=SecurityStatus.SUSPICIOUS,
        sensitivity=Sensitivity.SECRET,
        freshness_status=FreshnessStatus.EXPIRED,
        observed_at=NOW - timedelta(days=400),
        expires_at=NOW - timedelta(days=1),
    )
    reasons = ContextPolicy.preset("default").rejection_reasons(belief, NOW)
    assert [r.code for r in reasons] == list(ReasonCode)
    freshness = reasons[4].detail
    assert "freshness is expired" in freshness and "older than max_age P30D" in freshness
    assert str(reasons[0]).startswith("truth: truth is contradicted")


def test_age_is_measured_from_last_verified_when_present() -> None:
    policy = ContextPolicy.preset("default")
    old_but_reverified = good_belief(
        observed_at=NOW - timedelta(days=300), last_verified_at=NOW - timedelta(days=1)
    )
    assert policy.admits(old_but_reverified, NOW)
    verified_long_ago = good_belief(
        observed_at=NOW - timedelta(days=1), last_verified_at=NOW - timedelta(days=40)
    )
    [reason] = policy.rejection_reasons(verified_long_ago, NOW)
    assert reason.code is ReasonCode.FRESHNESS and reason.detail.startswith("last_verified_at")


def test_boundaries_match_the_filter_semantics() -> None:
    policy = ContextPolicy.preset("default")
    cutoff = Duration.parse("P30D").before(NOW)
    tick = timedelta(microseconds=1)
    assert policy.admits(good_belief(observed_at=cutoff), NOW)  # anchor >= cutoff
    assert not policy.admits(good_belief(observed_at=cutoff - tick), NOW)
    assert not policy.admits(good_belief(expires_at=NOW), NOW)  # expires_at <= now excludes
    assert policy.admits(good_belief(expires_at=NOW + tick), NOW)
    lax = policy.replace(enforce_expiry=False)
    assert lax.admits(good_belief(expires_at=NOW - timedelta(days=9)), NOW)


def test_month_windows_are_calendar_months() -> None:
    policy = load(freshness={"max_age": "P1M", "allow": ["fresh"]})
    end_of_march = datetime(2026, 3, 31, tzinfo=UTC)
    assert policy.anchor_after(end_of_march) == datetime(2026, 2, 28, tzinfo=UTC)
    assert policy.admits(good_belief(observed_at=datetime(2026, 2, 28, tzinfo=UTC)), end_of_march)


def test_naive_now_is_refused() -> None:
    with pytest.raises(InputError, match="no timezone"):
        ContextPolicy.preset("default").admits(good_belief(), datetime(2026, 1, 1))


def test_quotable_under_reference() -> None:
    policy = ContextPolicy.preset("reference")
    unverified = good_belief(
        truth_status=TruthStatus.UNVERIFIED, retrieval_status=RetrievalStatus.RESTRICTED
    )
    assert not policy.admits(unverified, NOW) and policy.quotable(unverified, NOW)
    supported = good_belief()
    assert policy.admits(supported, NOW) and not policy.quotable(supported, NOW)
    for overrides in (
        {"security_status": SecurityStatus.SUSPICIOUS},
        {"freshness_status": FreshnessStatus.STALE},
        {"sensitivity": Sensitivity.CONFIDENTIAL},
        {"expires_at": NOW},
        {"observed_at": NOW - timedelta(days=91)},
        {"truth_status": TruthStatus.CONTRADICTED},
    ):
        belief = good_belief(**{"truth_status": TruthStatus.UNVERIFIED, **overrides})
        assert not policy.quotable(belief, NOW), overrides
    assert not ContextPolicy.preset("default").quotable(unverified, NOW)
    assert ContextPolicy.preset("default").quote_filter(now=NOW) is None


def test_filters_compile_the_policy() -> None:
    policy = ContextPolicy.preset("reference")
    where = policy.accept_filter(text="deploy", project="p", user="u", now=NOW, limit=7)
    assert where == BeliefFilter(
        text="deploy",
        truth=frozenset({TruthStatus.SUPPORTED}),
        retrieval=frozenset({RetrievalStatus.NORMAL}),
        security=frozenset({SecurityStatus.CLEAN}),
        freshness=frozenset({FreshnessStatus.FRESH}),
        max_sensitivity=Sensitivity.INTERNAL,
        anchor_after=Duration.parse("P90D").before(NOW),
        not_expired_at=NOW,
        project="p",
        user="u",
        limit=7,
    )
    quote = policy.quote_filter(text="deploy", project="p", user="u", now=NOW, limit=50)
    assert quote is not None
    assert quote.truth == {TruthStatus.UNVERIFIED}
    assert quote.retrieval == {RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL}
    assert quote.limit == 5  # capped at quote.max_items


def test_privileged_only_states_are_what_the_audit_preset_adds() -> None:
    audit, default = ContextPolicy.preset("audit"), ContextPolicy.preset("default")
    assert audit.retrieval >= PRIVILEGED_RETRIEVAL and not PRIVILEGED_RETRIEVAL & default.retrieval
    assert audit.security >= PRIVILEGED_SECURITY and not PRIVILEGED_SECURITY & default.security


# -- the property: compiled filter == admits ------------------------------------------------


def filter_selects(where: BeliefFilter, belief: Belief) -> bool:
    """A straightforward reading of BeliefFilter's documented semantics (no text, no scope)."""
    anchor = belief.last_verified_at or belief.observed_at
    return (
        (where.truth is None or belief.truth_status in where.truth)
        and (where.retrieval is None or belief.retrieval_status in where.retrieval)
        and (where.security is None or belief.security_status in where.security)
        and (where.freshness is None or belief.freshness_status in where.freshness)
        and (where.max_sensitivity is None or belief.sensitivity.rank <= where.max_sensitivity.rank)
        and (where.anchor_after is None or anchor >= where.anchor_after)
        and (
            where.not_expired_at is None
            or belief.expires_at is None
            or belief.expires_at > where.not_expired_at
        )
    )


def subset(values: list[Any]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from([v.value for v in values]), unique=True)


ORDINARY_RETRIEVAL = [s for s in RetrievalStatus if s not in PRIVILEGED_RETRIEVAL]
ORDINARY_SECURITY = [s for s in SecurityStatus if s not in PRIVILEGED_SECURITY]
ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=30))]
)


@st.composite
def policies(draw: st.DrawFn) -> ContextPolicy:
    if draw(st.integers(0, 4)) == 0:
        return ContextPolicy.preset(draw(st.sampled_from(PRESETS)))
    data = {
        "name": "generated",
        "truth": draw(subset(list(TruthStatus))),
        "retrieval": draw(subset(ORDINARY_RETRIEVAL)),
        "security": draw(subset(ORDINARY_SECURITY)),
        "freshness": {
            "allow": draw(subset(list(FreshnessStatus))),
            "max_age": draw(
                st.sampled_from([None, "P30D", "P1M", "PT36H", "P1Y2M10DT2H30M", "PT0.5S", "P1W"])
            ),
        },
        "sensitivity_ceiling": draw(st.sampled_from([s.value for s in Sensitivity])),
        "enforce_expiry": draw(st.booleans()),
        "quote": {
            "enabled": draw(st.booleans()),
            "truth": draw(subset(list(TruthStatus))),
            "retrieval": draw(subset(ORDINARY_RETRIEVAL)),
            "security": draw(subset(ORDINARY_SECURITY)),
            "max_items": 1000,
        },
    }
    if data["freshness"]["max_age"] is None:
        del data["freshness"]["max_age"]
    try:
        return ContextPolicy.from_mapping(data)
    except PolicyError:
        assume(False)
        raise


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ContextPolicy, datetime, list[Belief]]:
    policy = draw(policies())
    now = draw(
        st.datetimes(
            min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=ZONES
        )
    )
    cutoff = policy.anchor_after(now) or now - timedelta(days=30)
    tick = timedelta(microseconds=1)

    def moment(around: datetime) -> st.SearchStrategy[datetime]:
        # Either anywhere in a wide window, or right on a boundary, in any zone.
        return st.one_of(
            st.builds(
                lambda d, z: (around + timedelta(seconds=d)).astimezone(z),
                st.integers(-400 * 86_400, 40 * 86_400),
                ZONES,
            ),
            st.builds(lambda k, z: (around + k * tick).astimezone(z), st.integers(-1, 1), ZONES),
        )

    def state(enum: Any, *preferred: frozenset[Any]) -> Any:
        # Lean towards the states the policy names, so that admitted, quoted and rejected
        # beliefs all turn up often, not just the rejected ones.
        pools = [sorted(p) for p in preferred if p] + [list(enum)]
        return draw(st.sampled_from(draw(st.sampled_from(pools))))

    q = policy.quote
    ceiling = [s for s in Sensitivity if s.rank <= policy.sensitivity_ceiling.rank]
    beliefs = []
    for _ in range(draw(st.integers(1, 12))):
        observed = draw(st.one_of(moment(cutoff), moment(now)))
        beliefs.append(
            make_belief(
                truth_status=state(TruthStatus, policy.truth, q.truth),
                retrieval_status=state(RetrievalStatus, policy.retrieval, q.retrieval),
                security_status=state(SecurityStatus, policy.security, q.security),
                freshness_status=state(FreshnessStatus, policy.freshness.allow),
                sensitivity=state(Sensitivity, frozenset(ceiling)),
                observed_at=observed,
                last_verified_at=draw(st.one_of(st.none(), moment(cutoff))),
                expires_at=draw(st.one_of(st.none(), moment(now))),
                created_at=T0,
                updated_at=T0,
            )
        )
    return policy, now, beliefs


PROPERTY = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@PROPERTY
@given(scenarios())
def test_accept_filter_selects_exactly_what_admits_accepts(
    scenario: tuple[ContextPolicy, datetime, list[Belief]],
) -> None:
    policy, now, beliefs = scenario
    assert ContextPolicy.from_yaml_text(policy.to_yaml()) == policy
    where = policy.accept_filter(now=now, limit=len(beliefs))
    for belief in beliefs:
        assert filter_selects(where, belief) == policy.admits(belief, now)
        assert policy.admits(belief, now) == (not policy.rejection_reasons(belief, now))


@PROPERTY
@given(scenarios())
def test_quote_filter_selects_exactly_what_quotable_accepts(
    scenario: tuple[ContextPolicy, datetime, list[Belief]],
) -> None:
    policy, now, beliefs = scenario
    where = policy.quote_filter(now=now, limit=1000)
    for belief in beliefs:
        selected = where is not None and filter_selects(where, belief)
        assert selected == policy.quotable(belief, now)
        assert not (policy.quotable(belief, now) and policy.admits(belief, now))


@PROPERTY
@given(scenarios())
def test_memory_store_agrees_with_the_policy(
    scenario: tuple[ContextPolicy, datetime, list[Belief]],
) -> None:
    memory = pytest.importorskip("gnomon.firewall.store.memory")
    policy, now, beliefs = scenario
    store = memory.MemoryStore()
    try:
        store.commit([belief_draft(*beliefs)])
        found = store.find_beliefs(policy.accept_filter(now=now, limit=len(beliefs)))
        assert {b.id for b in found} == {b.id for b in beliefs if policy.admits(b, now)}
        quote_where = policy.quote_filter(now=now, limit=1000)
        if quote_where is not None:
            quoted = store.find_beliefs(quote_where)
            assert {b.id for b in quoted} == {b.id for b in beliefs if policy.quotable(b, now)}
    finally:
        store.close()


def test_docstring_examples_run() -> None:
    import doctest
    import importlib

    failures, tried = doctest.testmod(importlib.import_module("gnomon.firewall.gate.policy"))
    assert tried > 0 and failures == 0
