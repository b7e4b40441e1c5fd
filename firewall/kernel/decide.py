"""The gate decision: one pure function from (contract, policy, what the action rests on) to
allow, hold or deny, with every reason.

In order, each step can only make the verdict stricter:

1. a tool no contract names is **denied** (fail closed);
2. the contract's level is the higher of its own and its tool's floor; **L5 is denied**;
3. the policy's rules are tried in order and the first that matches decides; **no match is
   deny**;
4. the ladder: an allow above ``auto_approve_ceiling`` becomes a hold, and **L4 is always at
   least held**, whatever a rule says;
5. what the action rests on (★): every cited belief must be accepted by the citation
   ContextPolicy (``planner``), re-read from the store; an unknown citation is denied, one that
   is unverified, quoted-only, contradicted, suspicious, quarantined or stale gets the policy's
   ``untrusted_citations`` verdict (hold or deny);
6. the data flow, at or above ``tainted_from`` (L3 by default). Under the policy's default
   ``provenance: per_value``, an action carrying an argument value that only untrusted text
   supplied (:mod:`firewall.kernel.provenance`) gets ``tainted_inputs`` (hold or deny), and the
   reason names the argument and the input it came from; values the user, trusted memory or the
   host supplied, and values the agent composed, do not hold it. Under ``provenance: session``
   (strict), an action in a session whose label (the join of everything it read) is below
   ``observed`` gets ``tainted_inputs``, *even with no citation at all*.

Egress comes first: a contract's destination arguments (a URL's host, an e-mail's domain, a
payee) must be on the policy's ``egress`` allowlist, or named by the user in the session when
the policy says ``user_named``. A ``fetch`` to an allowlisted destination stays L1; to any other
it is L4 (network). Any other L1-L3 call reaching a destination off the list is held. L4 is never
lowered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from gnomon.firewall.gate.policy import ContextPolicy, floor_reasons
from gnomon.firewall.kernel.actionpolicy import ActionPolicy, Outcome
from gnomon.firewall.kernel.contracts import ActionContract, Category, Level
from gnomon.firewall.kernel.provenance import (
    Supplied,
    allowlisted,
    destination,
    untrusted_arguments,
)
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.origin import Integrity, Origin


@dataclass(frozen=True, slots=True)
class Ruling:
    """A verdict and why: ``rule`` is the policy rule that matched (``None``: none did)."""

    outcome: Outcome
    level: Level | None
    rule: str | None
    reasons: tuple[str, ...]


def effective_level(contract: ActionContract, policy: ActionPolicy | None = None) -> Level:
    """The contract's level, its tool's floor and, for a tool the ladder does not know, the
    policy's ``unknown_tool_floor`` (or the level the operator signed in ``tool_levels``)."""
    level = max(contract.required_level, contract.floor)
    if policy is not None and not contract.known:
        level = max(level, policy.tool_levels.get(contract.tool, policy.unknown_tool_floor))
    return level


def rule_verdict(policy: ActionPolicy, contract: ActionContract, level: Level) -> Ruling:
    """Steps 2-4: the rules under the ladder."""
    if level >= Level.L5:
        return Ruling(Outcome.DENY, level, None, (f"{contract.tool} is L5: prohibited",))
    matched = policy.first_match(contract.tool, level, contract.blast_radius)
    if matched is None:
        return Ruling(
            Outcome.DENY, level, None, (f"no rule of policy {policy.name!r} matches: deny",)
        )
    outcome = matched.verdict
    reasons = [f"rule {matched.name!r} says {outcome.value}"]
    if outcome == Outcome.ALLOW and level > policy.auto_approve_ceiling:
        outcome = Outcome.HOLD
        reasons.append(
            f"{level.name} is above the auto-approve ceiling "
            f"{policy.auto_approve_ceiling.name}: held"
        )
    if level >= Level.L4:
        outcome = outcome.at_least(Outcome.HOLD)
        if outcome == Outcome.HOLD:
            reasons.append(f"{level.name} is always held for a human")
    return Ruling(outcome, level, matched.name, tuple(reasons))


def citation_problems(
    cites: Sequence[str],
    found: Mapping[str, Belief],
    citation_policy: ContextPolicy,
    now: datetime,
) -> tuple[list[str], list[str]]:
    """``(unknown ids, problems)`` of the cited beliefs under the citation policy."""
    unknown = [i for i in cites if i not in found]
    problems = []
    for ident in cites:
        belief = found.get(ident)
        if belief is None:
            continue
        reasons = [*floor_reasons(belief), *citation_policy.rejection_reasons(belief, now)]
        if reasons:
            why = "; ".join(str(r) for r in reasons)
            problems.append(
                f"cited belief {ident} is not accepted by {citation_policy.name!r}: {why}"
            )
    return unknown, problems


@dataclass(frozen=True, slots=True)
class Case:
    """What an arbiter sees of one proposed action (after the kernel's own ruling)."""

    tool: str
    level: Level | None
    session_id: str
    label: Origin | None
    cites: tuple[str, ...]
    found: Mapping[str, Belief]


#: An arbiter (the kernel's arbitration hook): host-side code that may only make a ruling
#: stricter. It returns ``None`` (no opinion) or ``(verdict, reasons)``; the kernel applies
#: ``outcome.at_least(verdict)``, so an arbiter can hold or deny, never allow.
Arbiter = Callable[[Case], "tuple[Outcome, Sequence[str]] | None"]


def arbitrate(ruling: Ruling, case: Case, arbiters: Sequence[Arbiter]) -> Ruling:
    """Apply every arbiter to ``ruling``; each can only raise the verdict (allow < hold < deny)."""
    outcome, reasons = ruling.outcome, list(ruling.reasons)
    for arbiter in arbiters:
        said = arbiter(case)
        if said is None:
            continue
        verdict, why = said
        outcome = outcome.at_least(verdict)
        reasons.extend(why)
    return Ruling(outcome, ruling.level, ruling.rule, tuple(reasons))


def tainted(label: Origin | None) -> bool:
    return label is not None and label.integrity < Integrity.OBSERVED


def egress(
    contract: ActionContract,
    policy: ActionPolicy,
    args: Mapping[str, object],
    named_by_user: Callable[[str], bool],
) -> tuple[Level, list[str]]:
    """The contract's level (its tool's floor and the policy's level for unknown tools, see
    :func:`effective_level`) after its destinations, and the destinations off the allowlist."""
    level = effective_level(contract, policy)
    off = []
    for name in contract.destinations:
        value = args.get(name)
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if not isinstance(item, str) or not item:
                continue
            dest = destination(item)
            if allowlisted(dest, policy.egress.allow):
                continue
            if policy.egress.user_named and named_by_user(dest):
                continue
            off.append(f"{name} reaches {dest!r}")
    if contract.category == Category.FETCH and off and level < Level.L4:
        level = Level.L4
    return level, off


def decide(
    contract: ActionContract | None,
    tool: str,
    policy: ActionPolicy,
    *,
    label: Origin | None,
    cites: Sequence[str],
    found: Mapping[str, Belief],
    citation_policy: ContextPolicy,
    now: datetime,
    args: Mapping[str, object] | None = None,
    supplied: Sequence[Supplied] | None = None,
    named_by_user: Callable[[str], bool] = lambda _: False,
) -> Ruling:
    """The verdict for one proposed action (see the module docstring for the order).

    ``supplied`` is the provenance of every argument (:func:`firewall.kernel.provenance.trace`);
    without it the session-level rule applies whatever the policy says."""
    if contract is None:
        return Ruling(Outcome.DENY, None, None, (f"no contract names tool {tool!r}: deny",))
    level, off = egress(contract, policy, args or {}, named_by_user)
    ruling = rule_verdict(policy, contract, level)
    outcome, reasons = ruling.outcome, list(ruling.reasons)
    if off and level < Level.L4:
        outcome = outcome.at_least(Outcome.HOLD)
        reasons.append(f"{'; '.join(off)}: not on the egress allowlist: hold")
    elif off and contract.category == Category.FETCH:
        reasons.append(f"{'; '.join(off)}: a fetch off the egress allowlist is network (L4)")
    unknown, problems = citation_problems(cites, found, citation_policy, now)
    if unknown:
        outcome = Outcome.DENY
        reasons.append(f"cited belief(s) {', '.join(unknown)} do not exist: deny")
    if problems:
        outcome = outcome.at_least(policy.untrusted_citations)
        reasons.extend(problems)
    if level < policy.tainted_from:
        return Ruling(outcome, level, ruling.rule, tuple(reasons))
    if supplied is not None and policy.provenance == "per_value":
        for arg in untrusted_arguments(supplied):
            outcome = outcome.at_least(policy.tainted_inputs)
            reasons.append(
                f"argument {arg.describe()}: only untrusted text supplied it and {tool} is "
                f"{level.name}: {policy.tainted_inputs.value}"
            )
    elif tainted(label):
        assert label is not None
        outcome = outcome.at_least(policy.tainted_inputs)
        reasons.append(
            f"the session's inputs are {label.describe()} (below observed) and {tool} is "
            f"{level.name}: {policy.tainted_inputs.value}"
        )
    return Ruling(outcome, level, ruling.rule, tuple(reasons))


__all__ = [
    "Arbiter",
    "Case",
    "Ruling",
    "arbitrate",
    "citation_problems",
    "decide",
    "effective_level",
    "egress",
    "rule_verdict",
    "tainted",
]
