"""First-match through the policy's rule index is exactly first-match over every rule.

The kernel no longer scans every rule for each decision (:meth:`ActionPolicy.first_match`
looks only at the rules that name the tool or ``*``). A wrong index would let an action reach
a later, laxer rule: e.g. an ``allow`` for ``*`` standing after a ``deny`` that names the tool.
Here hypothesis builds policies of tool-specific and wildcard rules, in any order, and checks
the index against the plain scan for named and unnamed tools at every level and radius."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnomon.firewall.kernel.actionpolicy import ActionPolicy, Rule
from gnomon.firewall.kernel.contracts import BlastRadius, Level

TOOLS = ["git_push", "write_file", "send_email", "fs_read"]
LEVELS = [lv for lv in Level if lv < Level.L5]


def _scan(policy: ActionPolicy, tool: str, level: Level, radius: BlastRadius) -> str | None:
    return next((r.name for r in policy.rules if r.matches(tool, level, radius)), None)


rule = st.fixed_dictionaries(
    {
        "tools": st.one_of(st.just(["*"]), st.lists(st.sampled_from(TOOLS), min_size=1)),
        "levels": st.one_of(st.none(), st.lists(st.sampled_from(LEVELS), min_size=1)),
        "blast_radius": st.one_of(st.none(), st.lists(st.sampled_from(list(BlastRadius)))),
        "verdict": st.sampled_from(["allow", "hold", "deny"]),
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(rule, min_size=1, max_size=12))
def test_the_rule_index_picks_the_rule_a_full_scan_picks(rules: list[dict[str, object]]) -> None:
    doc = {"name": "p", "rules": []}
    for i, r in enumerate(rules):
        entry = {"name": f"r{i}", "tools": r["tools"], "verdict": r["verdict"]}
        if r["levels"] is not None:
            entry["levels"] = [lv.name for lv in r["levels"]]  # type: ignore[attr-defined]
        if r["blast_radius"] is not None:
            entry["blast_radius"] = [b.value for b in r["blast_radius"]]  # type: ignore[attr-defined]
        doc["rules"].append(entry)  # type: ignore[attr-defined]
    policy = ActionPolicy.model_validate(doc)
    for tool in [*TOOLS, "unnamed_tool"]:
        for level in LEVELS:
            for radius in BlastRadius:
                got = policy.first_match(tool, level, radius)
                assert (got.name if got else None) == _scan(policy, tool, level, radius)


def test_attack_a_wildcard_allow_after_a_named_deny_never_wins() -> None:
    """The ordering an attacker would want broken: the tool's own deny comes first."""
    policy = ActionPolicy.model_validate(
        {
            "name": "p",
            "rules": [
                {"name": "no-push", "tools": ["git_push"], "verdict": "deny"},
                {"name": "rest", "verdict": "allow"},
            ],
        }
    )
    hit = policy.first_match("git_push", Level.L1, BlastRadius.EXTERNAL)
    assert hit is not None and hit.name == "no-push"
    other = policy.first_match("fs_read", Level.L0, BlastRadius.SELF)
    assert other is not None and other.name == "rest"


def test_flip_an_index_that_forgets_the_wildcard_rules_lets_a_push_skip_its_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flip: an index listing only the rules that name a tool skips a ``*`` hold that
    stands first, and the push reaches the later allow."""
    doc = {
        "name": "p",
        "rules": [
            {"name": "hold-all", "verdict": "hold"},
            {"name": "push-ok", "tools": ["git_push"], "verdict": "allow"},
        ],
    }
    hit = ActionPolicy.model_validate(doc).first_match("git_push", Level.L1, BlastRadius.SELF)
    assert hit is not None and hit.name == "hold-all"

    def named_only(self: ActionPolicy) -> tuple[dict[str, tuple[Rule, ...]], tuple[Rule, ...]]:
        return {"git_push": tuple(r for r in self.rules if "git_push" in r.tools)}, ()

    monkeypatch.setattr(ActionPolicy, "rule_index", property(named_only))
    hit = ActionPolicy.model_validate(doc).first_match("git_push", Level.L1, BlastRadius.SELF)
    assert hit is not None and hit.name == "push-ok"
