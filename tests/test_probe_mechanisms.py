"""Each probe fails when the mechanism it tests is removed: the probes are not vacuous.

Every case monkeypatches one mechanism out of the library (where the code looks the name up) and
runs the probe that guards it; the probe must report ``passed is False``, and for the expected
reason: the detail names the expectation that broke (not an unexpected exception).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pytest

from gnomon import firewall
from gnomon.firewall.gate.gate import TRANSITIONS, Adoption
from gnomon.firewall.gate.grants import Grant, GrantVerifier
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.chain import EvidenceSet
from gnomon.firewall.model.origin import Integrity, Origin
from gnomon.firewall.model.states import (
    READING_CLASS,
    Authority,
    Axis,
    EvidenceRelation,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)
from gnomon.probes.runner import run_one

Patch = Callable[[pytest.MonkeyPatch], None]


# -- the mechanisms, removed ---------------------------------------------------------------------


def nothing_above_the_ceiling(mp: pytest.MonkeyPatch) -> None:
    """Shipping judges every event public: nothing is redacted."""
    import gnomon.firewall.audit.shipping as shipping

    mp.setattr(shipping, "event_sensitivity", lambda body: shipping.Sensitivity.PUBLIC)


def free_text_not_judged(mp: pytest.MonkeyPatch) -> None:
    """Shipping judges events by their labelled records only: unlabelled text is never free."""
    import gnomon.firewall.audit.shipping as shipping
    from gnomon.firewall.audit.free_text import TextScan

    mp.setattr(shipping, "scan_payload", lambda payload: TextScan())


def agent_text_judged_by_label(mp: pytest.MonkeyPatch) -> None:
    """Shipping trusts the label of a record the agent wrote: its text is never free."""
    import gnomon.firewall.audit.free_text as free_text

    mp.setattr(free_text, "agent_written", lambda record: False)


def otel_ignores_the_ceiling(mp: pytest.MonkeyPatch) -> None:
    """OpenTelemetry export puts every belief's text in its span event."""
    import gnomon.firewall.host.otel as otel

    real = otel.SpanBuilder.belief_attributes

    def belief_attributes(self: Any, belief: Any) -> dict[str, Any]:
        out: dict[str, Any] = real(self, belief)
        out["gnomon.belief.statement"] = belief.statement
        return out

    mp.setattr(otel.SpanBuilder, "belief_attributes", belief_attributes)


def otel_random_ids(mp: pytest.MonkeyPatch) -> None:
    """Span ids come from a random source instead of the log."""
    import os

    import gnomon.firewall.host.otel as otel

    mp.setattr(otel, "event_span_id", lambda event: int.from_bytes(os.urandom(8), "big") or 1)


def harvest_checks_truth_only(mp: pytest.MonkeyPatch) -> None:
    """The review harvest takes every supported belief as a candidate."""
    import gnomon.firewall.host.review as review

    mp.setattr(
        review,
        "why_not_candidate",
        lambda belief, log, now: None if belief.truth_status == TruthStatus.SUPPORTED else "no",
    )


def approval_grant_unchecked(mp: pytest.MonkeyPatch) -> None:
    """Review approval takes any grant (or none) at its word."""
    mp.setattr(GrantVerifier, "verify", lambda self, grant, *a, **kw: grant)


def redacted_links_unchecked(mp: pytest.MonkeyPatch) -> None:
    """A redacted event's digest is taken on trust: its link is never recomputed."""
    import gnomon.firewall.log.events as events

    real_checker = events.link_checker

    def link_checker() -> Callable[..., bool]:  # what every chain walk's ErasureLedger uses
        real = real_checker()
        return lambda seq, prev, body, digest: (
            isinstance(body, events.RedactedBody) or real(seq, prev, body, digest)
        )

    mp.setattr(events, "link_checker", link_checker)


def adopt_everything_trusted(mp: pytest.MonkeyPatch) -> None:
    """The gate adopts every new belief supported+normal, whatever its origin."""

    def adoption_for(origin: Origin, strongest: object) -> Adoption:
        return Adoption(
            TruthStatus.SUPPORTED, RetrievalStatus.NORMAL, Authority.AUTO_OBSERVATION, "patched"
        )

    # adoption.py imports adoption_for by name: patch it where it is looked up.
    mp.setattr(firewall.gate.adoption, "adoption_for", adoption_for)


def join_keeps_first_label(mp: pytest.MonkeyPatch) -> None:
    """Origin.join forgets every input but the first (the agent's own label in remember())."""
    mp.setattr(Origin, "join", classmethod(lambda cls, *labels: labels[0]))


def session_forgets_what_it_read(mp: pytest.MonkeyPatch) -> None:
    """The session never accumulates a label, so remember() sees only the agent."""
    mp.setattr(Session, "_read", lambda self, *read: None)


def envelope_inlines_arguments(mp: pytest.MonkeyPatch) -> None:
    """render_args inlines every argument name and value verbatim, whatever the allowlist."""

    def render_args(args: Mapping[str, Any], shown: frozenset[str] = frozenset()) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(args.items()))

    mp.setattr(firewall.host.session, "render_args", render_args)


def envelope_inlines_short_arguments(mp: pytest.MonkeyPatch) -> None:
    """The allowlist is ignored: every short single-line value is inlined (the old rule)."""
    original = firewall.host.session.render_args
    old_rule = re.compile(r"^[^\x00-\x1f\x7f]{0,80}$")

    def render_args(args: Mapping[str, Any], shown: frozenset[str] = frozenset()) -> str:
        return original(args, frozenset(k for k in args if old_rule.match(k)))

    mp.setattr(firewall.model.content, "_SHOWN_VALUE", old_rule)
    mp.setattr(firewall.host.session, "render_args", render_args)


def tool_names_unchecked(mp: pytest.MonkeyPatch) -> None:
    """observe() takes any tool name: no identifier check."""
    mp.setattr(firewall.host.session, "checked_tool", lambda value: value)


def reading_counts_and_copies_count(mp: pytest.MonkeyPatch) -> None:
    """Corroboration counts every supporting item: reading-class, tainted, same origin, copies."""

    def count(self: EvidenceSet, claim_origin: Origin) -> int:
        return sum(1 for item in self.items if item.relation == EvidenceRelation.SUPPORTS)

    mp.setattr(EvidenceSet, "independent_corroboration", count)


def copies_count_separately(mp: pytest.MonkeyPatch) -> None:
    """Corroboration keeps every rule except independence groups: each item counts."""

    def count(self: EvidenceSet, claim_origin: Origin) -> int:
        return sum(
            1
            for item in self.items
            if item.relation == EvidenceRelation.SUPPORTS
            and item.quality not in READING_CLASS
            and item.origin.integrity >= Integrity.OBSERVED
            and not item.origin.shares_origin_with(claim_origin)
            and item.action_id is None
        )

    mp.setattr(EvidenceSet, "independent_corroboration", count)


def self_promotion_allowed(mp: pytest.MonkeyPatch) -> None:
    """The session no longer refuses evidence from the agent's own action."""
    mp.setattr(Session, "_refuse_self_promotion", lambda self, belief, action_id: None)


def sentinel_may_clear_quarantine(mp: pytest.MonkeyPatch) -> None:
    """The security table lets automation clear a quarantine."""
    table = dict(TRANSITIONS[Axis.SECURITY])
    table[(SecurityStatus.QUARANTINED, SecurityStatus.CLEAN)] = frozenset(Authority)
    mp.setitem(TRANSITIONS, Axis.SECURITY, table)


def signatures_not_checked(mp: pytest.MonkeyPatch) -> None:
    """The verifier checks the authority but not the signature, the key or the validity window."""

    def verify(self: GrantVerifier, grant: Grant | None, required: Any, **kw: Any) -> Grant | None:
        if grant is None or grant.authority not in frozenset(required):
            from gnomon.firewall.model.errors import MissingGrantError

            raise MissingGrantError("patched: missing")
        return grant

    mp.setattr(GrantVerifier, "verify", verify)


def untrusted_notes_demote(mp: pytest.MonkeyPatch) -> None:
    """Any conflict demotes every member, so a planted note knocks a true fact out."""
    mp.setattr(firewall.gate.contradictions, "to_demote", lambda members: list(members))


def no_contradiction_detection(mp: pytest.MonkeyPatch) -> None:
    """Conflicting subject/predicate statements are not compared at all."""
    mp.setattr(firewall.gate.contradictions, "conflicting", lambda new, existing: [])


def hostile_peers_demote(mp: pytest.MonkeyPatch) -> None:
    """Every member weighs in a contradiction, quarantined or malicious ones included."""
    mp.setattr(firewall.gate.contradictions, "stands", lambda belief: True)


def readers_see_stored_truth(mp: pytest.MonkeyPatch) -> None:
    """Recall shows every belief's stored truth: no reader's view of contradictions."""

    from gnomon import firewall

    mp.setattr(firewall.gate.retrieval, "as_seen_by", lambda store, reader, beliefs: {})


def readers_know_every_peer(mp: pytest.MonkeyPatch) -> None:
    """Contradiction views list every member, whatever the reader may see."""
    from gnomon.firewall.gate.contested import Reader

    mp.setattr(Reader, "may_know", lambda self, belief: True)


def checkpoint_signatures_trusted(mp: pytest.MonkeyPatch) -> None:
    """Every checkpoint counts as signed by a pinned key, whoever signed it."""
    mp.setattr(firewall.log.checkpoints.Checkpoint, "verify_signature", lambda self, keys: None)


def checkpoints_ignored(mp: pytest.MonkeyPatch) -> None:
    """The verifier no longer recognises log.checkpoint events (only the hash chain is left)."""
    mp.setattr(firewall.log.checkpoints, "_checkpoint_in", lambda body: None)


def mem0_passes_unknown_methods_through(mp: pytest.MonkeyPatch) -> None:
    """The mem0 wrapper hands any unguarded name to the raw client instead of refusing it."""
    from gnomon.adapters.mem0_guard import _Guarded

    mp.setattr(_Guarded, "__getattr__", lambda self, name: getattr(self._client, name))


def zep_resources_pass_through(mp: pytest.MonkeyPatch) -> None:
    """Guarded Zep resources hand unguarded names to the SDK resource they wrap."""
    from gnomon import adapters
    from gnomon.adapters.errors import BypassRefusedError

    def passthrough(self: Any, name: str) -> Any:
        raw = self.__dict__.get("_raw")
        if raw is None:  # the top-level client holds no SDK object: still refused
            raise BypassRefusedError(name, store="zep", call=name)
        return getattr(raw, name)

    mp.setattr(adapters.zep._Refusing, "__getattr__", passthrough)


def drift_not_flagged(mp: pytest.MonkeyPatch) -> None:
    """The guard notices a hash mismatch but neither marks the binding nor the belief."""
    from gnomon.adapters.guard import Guard

    mp.setattr(Guard, "mark_drifted", lambda self, binding, belief, item: (binding, belief))


def channel_not_fed(mp: pytest.MonkeyPatch) -> None:
    """The guarded clients' contradiction channel says nothing (the links stay in the log)."""

    from gnomon import adapters

    mp.setattr(adapters.conflicts, "of_beliefs", lambda guard, policy, reader, beliefs: [])


def trusted_rivals_supersede(mp: pytest.MonkeyPatch) -> None:
    """Any write at least as trusted supersedes: another user's statement retires the fact."""

    from gnomon import adapters

    mp.setattr(adapters.guard, "rivals", lambda old, new: False)


def channel_reveals_hidden_members(mp: pytest.MonkeyPatch) -> None:
    """The channel forgets the reader's visibility: quarantined members are named."""
    from gnomon.firewall.gate.contested import Reader

    mp.setattr(Reader, "may_know", lambda self, belief: True)


def zep_context_passed_through(mp: pytest.MonkeyPatch) -> None:
    """The guarded client returns the server's context blob instead of rebuilding it."""
    from gnomon import adapters

    original = adapters.zep._Core.context

    def context(self: Any, response: Any, graph: str, call: str, query: str) -> Any:
        _, results, channel = original(self, response, graph, call, query)
        return response.context, results, channel

    mp.setattr(adapters.zep._Core, "context", context)


def mem0_facts_drop_the_session_label(mp: pytest.MonkeyPatch) -> None:
    """mem0's extracted facts are recorded as the agent's own writing over nothing: the join
    with the session's label (everything it read, the input messages included) is dropped."""
    from gnomon.adapters.mem0_guard import _Guarded

    def fact(self: Any, text: str, inputs: Any = (), context: Any = ()) -> Any:
        return self.gnomon._guard.session.remember(text, [])

    mp.setattr(_Guarded, "_fact", fact)
    session_forgets_what_it_read(mp)  # the session label is the fact's taint too


def extraction_lineage_unchecked(mp: pytest.MonkeyPatch) -> None:
    """Any fact an extractor wrote is an extracted fact: the inputs, the scope's memories and
    the session's reads are not checked, and the policy trusts any label naming a user."""
    import gnomon.firewall.host.session as session_module
    from gnomon.firewall.model.origin import OriginClass

    mp.setattr(session_module, "user_statement", lambda belief: True)
    mp.setattr(session_module, "clean_extracted", lambda belief: True)
    mp.setattr(session_module, "_SESSION_CLEAN", frozenset(OriginClass))
    mp.setattr(Origin, "user_lineage", property(lambda self: OriginClass.USER in self.classes))


def ladder_removed(mp: pytest.MonkeyPatch) -> None:
    """The ladder is gone: the first matching rule's verdict stands, whatever the level."""
    import gnomon.firewall.kernel.decide as decide
    from gnomon.firewall.kernel.actionpolicy import Outcome

    def rule_verdict(policy: Any, contract: Any, level: Any) -> Any:
        rule = next(
            (r for r in policy.rules if r.matches(contract.tool, level, contract.blast_radius)),
            None,
        )
        return decide.Ruling(rule.verdict if rule else Outcome.DENY, level, None, ())

    mp.setattr(decide, "rule_verdict", rule_verdict)


def floors_not_enforced(mp: pytest.MonkeyPatch) -> None:
    """A contract may declare any level: the registry no longer compares it with the floor."""
    import gnomon.firewall.kernel.contracts as contracts

    mp.setattr(contracts, "FLOORS", {c: contracts.Level.L0 for c in contracts.Category})


def ladder_softens_stricter_rules(mp: pytest.MonkeyPatch) -> None:
    """Tightening takes the later verdict instead of the stricter: an L4 deny becomes a hold."""
    from gnomon.firewall.kernel.actionpolicy import Outcome

    mp.setattr(Outcome, "at_least", lambda self, other: other)


def unmatched_allowed(mp: pytest.MonkeyPatch) -> None:
    """No matching rule means allow (fail open)."""
    import gnomon.firewall.kernel.decide as decide
    from gnomon.firewall.kernel.actionpolicy import Outcome

    original = decide.rule_verdict

    def rule_verdict(policy: Any, contract: Any, level: Any) -> Any:
        got = original(policy, contract, level)
        if got.rule is None and level < 4:
            return decide.Ruling(Outcome.ALLOW, level, None, ())
        return got

    mp.setattr(decide, "rule_verdict", rule_verdict)


def policy_signatures_not_checked(mp: pytest.MonkeyPatch) -> None:
    """Any signature file, or none, is accepted."""
    import gnomon.firewall.kernel.signing as signing

    mp.setattr(signing, "verify_policy", lambda policy, doc, keys, source: ("k", "s"))

    def load(path: Any, *, keys: Any = (), allow_unsigned: bool = False) -> Any:
        policy = signing.ActionPolicy.from_bytes(signing.read_policy_file(path), str(path))
        return signing.SignedPolicy(policy, policy.digest, "k", "s", str(path))

    mp.setattr(signing, "load_action_policy", load)
    import gnomon.probes.action_policy_signed as probe

    mp.setattr(probe, "load_action_policy", load)


def held_actions_executable(mp: pytest.MonkeyPatch) -> None:
    """The kernel executes a request whatever its status (held included)."""
    import gnomon.firewall.kernel.kernel as kernel

    mp.setattr(kernel, "EXECUTABLE", frozenset({"allowed", "approved", "held"}))


def preconditions_not_revalidated(mp: pytest.MonkeyPatch) -> None:
    """Execution trusts the facts recorded at proposal."""
    import gnomon.firewall.kernel.kernel as kernel

    mp.setattr(kernel, "revalidate", lambda snapshots, **kw: [])


def approvals_not_checked(mp: pytest.MonkeyPatch) -> None:
    """Any Approval object is taken at its word."""
    import gnomon.firewall.kernel.kernel as kernel

    mp.setattr(kernel, "check_approval", lambda approval, request, keys, *, now: approval)


def nonces_forgotten(mp: pytest.MonkeyPatch) -> None:
    """The kernel forgets which approval nonces were used (replays accepted)."""
    import gnomon.firewall.kernel.ledger as ledger

    original = ledger.read_ledger

    def read(store: Any, **kw: Any) -> Any:
        got = original(store, **kw)
        got.nonces = set()
        for state in got.requests.values():
            state.nonces = set()
            if state.status in ("executed", "refused"):
                state.status = "held"
        return got

    mp.setattr(ledger, "read_ledger", read)


def holds_never_expire(mp: pytest.MonkeyPatch) -> None:
    """Deadlines are ignored: a hold waits forever."""
    from gnomon.firewall.kernel.kernel import ActionKernel

    mp.setattr(ActionKernel, "_expire_one", lambda self, state: False)


def why_explains_any_id(mp: pytest.MonkeyPatch) -> None:
    """The MCP memory server explains any id it is asked about, not only what recall showed
    (and no longer re-checks the privileged states, which would still hide a quarantined one)."""
    from gnomon import firewall
    from gnomon.firewall.host.mcp_memory import MemoryServer

    original = MemoryServer._why

    def explain_all(self: Any, args: dict[str, Any]) -> str:
        self._shown.add(args.get("belief_id"))
        return original(self, args)

    mp.setattr(MemoryServer, "_why", explain_all)
    mp.setattr(firewall.host.mcp_memory, "floor_reasons", lambda belief: [])


def proxy_hold_never_times_out(mp: pytest.MonkeyPatch) -> None:
    """The proxy's wait runs out but the hold stays open (a later approval would still run)."""
    from gnomon.firewall.kernel.kernel import ActionKernel

    mp.setattr(ActionKernel, "withdraw", lambda self, request_id, reason: self.status(request_id))


def action_events_lose_context(mp: pytest.MonkeyPatch) -> None:
    """Events about a request after its proposal are recorded without the session's ids."""
    from gnomon.firewall.kernel.kernel import ActionKernel

    original = ActionKernel._draft

    def draft(
        self: Any, session_id: Any, project: Any, user: Any, kind: str, *a: Any, **kw: Any
    ) -> Any:
        if kind != "action.proposed":
            session_id = user = None
        return original(self, session_id, project, user, kind, *a, **kw)

    mp.setattr(ActionKernel, "_draft", draft)


def argument_provenance_ignored(mp: pytest.MonkeyPatch) -> None:
    """The data-flow rule is gone: a value only untrusted text supplied never holds an action."""
    import gnomon.firewall.kernel.decide as decide

    mp.setattr(decide, "untrusted_arguments", lambda supplied: [])


def citations_not_checked(mp: pytest.MonkeyPatch) -> None:
    """Cited beliefs are never checked against the planner policy."""
    import gnomon.firewall.kernel.decide as decide

    mp.setattr(decide, "citation_problems", lambda cites, found, policy, now: ([], []))


def origin_fanout_finds_nothing(mp: pytest.MonkeyPatch) -> None:
    """The store's bulk origin lookup returns nothing: a flag quarantines no derived belief."""
    from gnomon.firewall.store.base import Store

    mp.setattr(Store, "beliefs_with_origin", lambda self, origin_id: [])


def fanout_one_event_per_belief(mp: pytest.MonkeyPatch) -> None:
    """Flagging an origin quarantines belief by belief, one event (transaction) each."""
    from gnomon.firewall.host.firewall import Firewall

    def flag(self: Firewall, origin_id: str, *, reason: str, **kw: Any) -> list[Any]:
        moved = [
            self.quarantine(b.id, reason=reason, authority=Authority.SENTINEL).id
            for b in self.store.beliefs_with_origin(origin_id)
        ]
        data = {"origin_id": origin_id, "alert_id": kw.get("alert_id")}
        self.commit(self.draft("origin.flagged", actor="x", now=self.clock(), data=data))
        return moved

    mp.setattr(Firewall, "flag_origin", flag)


def content_signal_silent(mp: pytest.MonkeyPatch) -> None:
    """The content signal never matches."""
    import gnomon.firewall.host.sentinels.sentinel as sentinel

    mp.setattr(sentinel, "looks_injected", lambda text: None)


def sentinel_may_mark_malicious(mp: pytest.MonkeyPatch) -> None:
    """The security table lets a sentinel go past quarantine (clean -> malicious)."""
    table = dict(TRANSITIONS[Axis.SECURITY])
    table[(SecurityStatus.SUSPICIOUS, SecurityStatus.MALICIOUS)] = frozenset(Authority)
    mp.setitem(TRANSITIONS, Axis.SECURITY, table)


def arbiters_ignored(mp: pytest.MonkeyPatch) -> None:
    """The kernel's arbitration hook is skipped: arbiters never see a proposal."""
    import gnomon.firewall.kernel.kernel as kernel

    mp.setattr(kernel, "arbitrate", lambda ruling, case, arbiters: ruling)


def flags_not_learned(mp: pytest.MonkeyPatch) -> None:
    """Sentinel state forgets origin.flagged events (the arbiter never hears of a flag)."""
    from gnomon.firewall.host.sentinels.sentinel import FLAG_KIND, SentinelState

    original = SentinelState.learn

    def learn(self: SentinelState, event: Any) -> None:
        if event.kind != FLAG_KIND:
            original(self, event)

    mp.setattr(SentinelState, "learn", learn)


def decay_never_due(mp: pytest.MonkeyPatch) -> None:
    """Nothing is ever due to decay: freshness stays as written."""
    import gnomon.firewall.host.decay as decay

    mp.setattr(decay, "due_state", lambda current, *, expired, aged: None)


def calibration_never_bad(mp: pytest.MonkeyPatch) -> None:
    """The calibration arbiter never finds a class badly calibrated."""
    import gnomon.firewall.kernel.calibration as cal

    mp.setattr(cal.CalibrationArbiter, "_catch_up", lambda self: None)


def calibration_events_not_checked(mp: pytest.MonkeyPatch) -> None:
    """Replay returns what the event says instead of recomputing it."""
    import gnomon.firewall.kernel.calibration as cal

    mp.setattr(
        cal,
        "replay",
        lambda event: {k: cal.ClassScore(**v) for k, v in event.payload["scores"].items()},
    )


# -- probe, removed mechanism → the expectation that must break --------------------------------

CASES: list[tuple[str, Patch, str]] = [
    ("auto_observation_gate", adopt_everything_trusted, "external file content is adopted"),
    ("laundering_summarization", adopt_everything_trusted, "adopted unverified+restricted"),
    ("laundering_summarization", join_keeps_first_label, "carries the external origin class"),
    ("laundering_summarization", session_forgets_what_it_read, "carries the external origin"),
    ("laundering_tool_echo", envelope_inlines_arguments, "contains no part of the multi-line"),
    ("laundering_tool_echo", envelope_inlines_short_arguments, "short single-line argument"),
    ("laundering_tool_echo", tool_names_unchecked, "tool name that is a sentence"),
    ("laundering_tool_echo", reading_counts_and_copies_count, "does not promote it"),
    ("laundering_corroboration", reading_counts_and_copies_count, "still unverified"),
    ("laundering_corroboration", copies_count_separately, "CI corroboration #2"),
    ("no_self_promotion", self_promotion_allowed, "refused as self-promotion"),
    ("quarantine_not_retrievable", sentinel_may_clear_quarantine, "sentinel authority"),
    ("quarantine_not_retrievable", signatures_not_checked, "refused as forged"),
    ("contradiction_routing", untrusted_notes_demote, "does not demote the supported fact"),
    ("contradiction_routing", no_contradiction_detection, "become contradicted"),
    ("contradiction_fairness", readers_see_stored_truth, "accepted again once its hostile"),
    ("contradiction_fairness", readers_know_every_peer, "no trace of the quarantined peer"),
    ("contradiction_fairness", hostile_peers_demote, "stated after a quarantined peer"),
    ("checkpoint_unforgeable", checkpoint_signatures_trusted, "does not verify"),
    ("tamper_whole_log_rewrite", checkpoint_signatures_trusted, "re-signed with the attacker"),
    ("tamper_whole_log_rewrite", checkpoints_ignored, "the untouched log verifies against"),
    ("adapter_bypass", mem0_passes_unknown_methods_through, "mem0: no public SDK attribute"),
    ("adapter_bypass", zep_resources_pass_through, "zep: no public SDK attribute"),
    ("adapter_sync_drift", drift_not_flagged, "its binding is drifted"),
    ("adapter_contradiction_channel", channel_not_fed, "the conflict is in the channel"),
    ("adapter_contradiction_channel", trusted_rivals_supersede, "overwrite is refused"),
    ("adapter_contradiction_channel", channel_reveals_hidden_members, "named in no channel entry"),
    ("zep_context_leak", zep_context_passed_through, "the guarded blob contains none"),
    ("mem0_infer_join", mem0_facts_drop_the_session_label, "carries every input message"),
    ("extracted_tier", extraction_lineage_unchecked, "the fact is not trusted"),
    ("action_ladder", ladder_removed, "an L4 push is held under an allow-everything"),
    ("action_ladder", floors_not_enforced, "below the push floor is refused"),
    ("action_ladder", ladder_softens_stricter_rules, "a stricter L4 deny rule is preserved"),
    ("action_ladder", unmatched_allowed, "an unmatched action is denied"),
    ("action_policy_signed", policy_signatures_not_checked, "an unsigned policy refuses"),
    ("action_two_phase", held_actions_executable, "a pending action cannot execute"),
    ("action_two_phase", preconditions_not_revalidated, "git HEAD changed"),
    ("approval_forgeries", approvals_not_checked, "an edited approval does not execute"),
    ("approval_forgeries", nonces_forgotten, "a replayed approval is refused"),
    ("approval_timeout", holds_never_expire, "after the deadline the request is denied"),
    ("action_context_ids", action_events_lose_context, "carries the session id"),
    ("sidecar_boundary", why_explains_any_id, "quarantined text never reaches the agent"),
    ("sidecar_boundary", proxy_hold_never_times_out, "never run without a human"),
    ("action_dataflow", argument_provenance_ignored, "even with no citation"),
    ("action_dataflow", citations_not_checked, "citing the laundered summary is held"),
    ("sentinel_quarantine", fanout_one_event_per_belief, "the fan-out is exactly one"),
    ("sentinel_quarantine", origin_fanout_finds_nothing, "quarantines the three blocks"),
    ("sentinel_quarantine", content_signal_silent, "the injected email is suspicious"),
    ("sentinel_authority", sentinel_may_clear_quarantine, "cannot clear to clean"),
    ("sentinel_authority", sentinel_may_mark_malicious, "cannot mark malicious"),
    ("sentinel_arbiter", arbiters_ignored, "citing an alerted belief is held"),
    ("sentinel_arbiter", flags_not_learned, "read a flagged origin is held"),
    ("decay_stale_context", decay_never_due, "the day-0 fact is stale after decay"),
    ("calibration_escalates", calibration_never_bad, "held for its calibration class"),
    ("calibration_escalates", calibration_events_not_checked, "an edited calibration event"),
    ("shipped_export", nothing_above_the_ceiling, "never carries the secret text"),
    ("shipped_export", free_text_not_judged, "never carries the secret text"),
    ("shipped_export", agent_text_judged_by_label, "never carries the secret text"),
    ("shipped_export", redacted_links_unchecked, "editing the redacted event's digest"),
    ("otel_ceiling", otel_ignores_the_ceiling, "no span carries the secret belief's text"),
    ("otel_ceiling", otel_random_ids, "the same ids"),
    ("harvest_candidates", harvest_checks_truth_only, "the only candidate is the clean"),
    ("harvest_candidates", approval_grant_unchecked, "approving without a grant is refused"),
]


@pytest.mark.parametrize(
    ("probe", "remove", "breaks"),
    CASES,
    ids=[f"{probe}-without-{remove.__name__}" for probe, remove, _ in CASES],
)
def test_probe_fails_without_its_mechanism(
    monkeypatch: pytest.MonkeyPatch, probe: str, remove: Patch, breaks: str
) -> None:
    assert run_one(probe).passed, "control: the probe passes with the mechanism in place"
    remove(monkeypatch)
    result = run_one(probe)
    assert result.passed is False, f"{probe} still passed without {remove.__name__}"
    assert result.detail.startswith("expectation broke:"), result.detail
    assert breaks in result.detail, result.detail


def test_the_inlining_patch_really_inlines() -> None:
    # Guard against a vacuous patch: the replacement must reproduce the unsafe behaviour.
    mp = pytest.MonkeyPatch()
    try:
        envelope_inlines_arguments(mp)
        rendered = getattr(firewall.host.session, "render_args")({"pattern": "a\nb"})  # noqa: B009
    finally:
        mp.undo()
    assert "a\nb" in rendered
    assert orjson.dumps("a\nb").decode() not in rendered
