"""Imported logs go through the gate: every state a belief takes must be one the gate allows.

A hash chain proves a log was not edited *after* it was sealed; it says nothing about whether the
events were ever legal. Whoever holds an export can edit a belief to ``supported``, re-chain every
later hash and hand over a log that verifies perfectly. :func:`check_transitions` therefore
replays each imported event's records through the gate's own rules (:mod:`firewall.gate.gate`,
called,
never re-implemented) before anything is written:

* a belief seen for the first time starts where :func:`~firewall.gate.gate.adoption_for` puts it,
from
  its origin and the strongest evidence recorded for its claim so far (none counts as external
  reading: fail closed), clean and fresh;
* each later state comes from the revisions of the same event, grouped as one gate call (same
  authority, grant, reason and time) and re-applied with :func:`~firewall.gate.gate.apply_moves`,
  which checks the transition tables, terminal states, parallax against the evidence recorded so
  far, and the cross-axis invariants; the moves it makes must be the ones the revisions record;
* ``user`` and ``probe`` authority must name a grant id (the grant itself never enters the log,
  so its signature cannot be re-checked here: a pinned checkpoint, ``--key``, vouches for who
  wrote the log);
* a move batch (:mod:`firewall.log.moves`) is first applied to the versions known so far (its
  moves must start from them), and the versions it makes are then checked like any other;
* whatever the revisions do not explain is refused: a status that differs from the replayed
  one, a revision without the belief version it produced, a changed origin, statement, claim or
  project, two versions of one belief in one event.

The first violation raises :class:`IllegalTransitionError` naming the event's seq, the belief and
the rule; the caller imports nothing (``gnomon log import`` is all or nothing).

**Authority needs a key** (policy). The gate can check that a move was *legal*, not who asked for
it: a ``user`` revision naming a grant id, a belief or evidence attributed to a user or a probe
(attested origin, human or probe evidence), the action kernel's own ledger (a proposal it allowed,
an approval it accepted, a policy it loaded), a review approval for long-term memory, a claim on
any event (the importing store derives its one-use locks from them, so a forged one would block the
execution of a held request, or the spend of a grant, that it names), a sentinel's verdict (an
alert or a flagged origin: it holds actions and quarantines beliefs), and any new version of a
belief the importing store already held (a log may move what it brings, not what the operator has)
are all just JSON anyone can write and re-chain. So unless the caller verified the log against a
pinned key (``verified=True``: ``gnomon log import --key``, every event covered by a checkpoint
that key signed), the first event that carries such authority raises
:class:`UnverifiedAuthorityError` naming its seq and what it claims, and nothing is imported. A
tool's observation is the host's word too (an ``observed`` origin says the host saw the call;
tool-result and direct-observation evidence is what lets a later ``policy`` promotion pass
parallax), so a forged one needs the key as well. A log of agent and external content alone needs
no key: the gate holds all of it as untrusted. Catching a replica up is no exception: a tail that
moves beliefs the target already holds (a decay, an expiry, a quarantine made on a copy) needs the
key too, since a forged one would hide the operator's memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from pydantic import ValidationError

from gnomon.firewall.gate.gate import Move, adoption_for, apply_moves
from gnomon.firewall.log.events import ORIGIN_FLAGGED, REVIEW_APPROVED, SENTINEL_ALERT, Event
from gnomon.firewall.log.moves import resolve_moves
from gnomon.firewall.model.chain import Belief, EvidenceItem, EvidenceSet, Revision
from gnomon.firewall.model.errors import GateError, LogIntegrityError
from gnomon.firewall.model.ids import id_prefix
from gnomon.firewall.model.origin import Integrity, Origin
from gnomon.firewall.model.states import (
    GRANTED_AUTHORITIES,
    READING_CLASS,
    Authority,
    Axis,
    EvidenceQuality,
    FreshnessStatus,
    SecurityStatus,
)
from gnomon.firewall.store.base import Store, claim_of, is_request_kind

#: Fields a belief keeps for life: a new version that changes one was not made by the gate.
IMMUTABLE = ("claim_id", "statement", "origin", "project", "kind", "created_at")
#: The action kernel's policy event (its ledger's other kinds are request kinds).
_KERNEL_POLICY_PREFIX = "action_policy."


class IllegalTransitionError(LogIntegrityError):
    """An imported event carries a belief state the gate would have refused."""

    def __init__(self, seq: int, belief_id: str, rule: str, problem: str) -> None:
        super().__init__(seq, f"belief {belief_id}: {problem} [{rule}]")
        self.hint = (
            "nothing was imported; the log holds a state change the gate refuses, so it was "
            "edited (and re-chained) or written by a tool that bypassed the gate"
        )
        self.belief_id = belief_id
        self.rule = rule


class UnverifiedAuthorityError(LogIntegrityError):
    """An imported log that no pinned key vouches for carries user, probe or operator authority."""

    def __init__(self, seq: int, claim: str) -> None:
        super().__init__(seq, f"{claim}, but no pinned key vouches for who wrote this log")
        self.hint = (
            "nothing was imported; authority in a log counts only when its writer's key "
            "signed it: at the source run `gnomon log checkpoint --key KEYFILE` after the "
            "last event, export, then import with `--key PUBFILE`"
        )
        self.claim = claim


def _statuses(belief: Belief) -> tuple[str, str, str, str]:
    return (
        belief.truth_status,
        belief.retrieval_status,
        belief.security_status,
        belief.freshness_status,
    )


def _call(revision: Revision) -> tuple[str, str | None, str, str]:
    """Revisions one gate call produced share these (see :func:`firewall.gate.gate.apply_moves`)."""
    return (revision.authority, revision.grant_id, revision.reason, revision.created_at.isoformat())


def _attested(origin: Origin) -> bool:
    return origin.integrity >= Integrity.ATTESTED


def _vouched(origin: Origin) -> str | None:
    """What an origin claims the writing host vouched for (a user or probe attested it, or the
    host saw a tool call happen), or ``None`` for content the gate holds as untrusted."""
    if origin.integrity < Integrity.OBSERVED:
        return None
    return (
        "an attested origin (a user's or probe's)"
        if _attested(origin)
        else ("an observed origin (a tool call the host saw)")
    )


def _authority_in(event: Event) -> str | None:
    """What ``event`` itself asserts on a user's, probe's or the host kernel's behalf (apart
    from revisions, checked per gate call), or ``None``."""
    if is_request_kind(event.kind) or event.kind.startswith(_KERNEL_POLICY_PREFIX):
        return f"it is an action-kernel record ({event.kind})"
    if event.kind == REVIEW_APPROVED:
        return f"it is a user's approval for long-term memory ({event.kind})"
    if event.kind in (SENTINEL_ALERT, ORIGIN_FLAGGED):
        return f"it is a sentinel's verdict ({event.kind}): it holds actions and quarantines"
    claim = claim_of(event)
    if claim is not None:
        return f"it claims {claim} (an execution or a grant's spend: the store's one-use lock)"
    return None


class _Replay:
    def __init__(self, store: Store, *, verified: bool) -> None:
        self.store = store
        self.verified = verified
        self.beliefs: dict[str, Belief] = {}
        self.evidence: dict[str, list[EvidenceItem]] = {}

    def known(self, belief_id: str) -> Belief | None:
        if belief_id in self.beliefs:
            return self.beliefs[belief_id]
        return self.store.get_belief(belief_id)

    def known_many(self, belief_ids: list[str]) -> dict[str, Belief]:
        found = {i: self.known(i) for i in belief_ids}
        return {i: b for i, b in found.items() if b is not None}

    def evidence_for(self, claim_id: str) -> EvidenceSet:
        if claim_id not in self.evidence:
            self.evidence[claim_id] = list(self.store.get_evidence(claim_id).items)
        return EvidenceSet(claim_id=claim_id, items=list(self.evidence[claim_id]))

    def unverified(self, seq: int, claim: str | None) -> None:
        """Refuse authority the caller could not verify (:class:`UnverifiedAuthorityError`)."""
        if claim is not None and not self.verified:
            raise UnverifiedAuthorityError(seq, claim)

    def event(self, event: Event) -> None:
        self.unverified(event.seq, _authority_in(event))
        try:
            rec = event.records()
        except (ValidationError, ValueError, TypeError, KeyError) as exc:
            raise LogIntegrityError(event.seq, f"its records do not validate ({exc})") from exc
        for observation in rec.observations:
            vouched = _vouched(observation.origin)
            if vouched is not None:
                self.unverified(event.seq, f"observation {observation.id} has {vouched}")
        for item in rec.evidence:
            vouched = _vouched(item.origin)
            if vouched is not None:
                self.unverified(event.seq, f"evidence {item.id} has {vouched}")
            elif item.quality not in READING_CLASS:
                self.unverified(event.seq, f"evidence {item.id} is {item.quality.value}")
        if rec.moves:
            # a move batch's versions are derived from the known ones, then checked like any
            try:
                rec = resolve_moves([rec], self.known_many)[0]
            except ValueError as exc:
                problem = f"its move batch does not apply ({exc})"
                raise LogIntegrityError(event.seq, problem) from exc
            except GateError as exc:
                raise IllegalTransitionError(
                    event.seq, "(move batch)", f"gate: {type(exc).__name__}", exc.message
                ) from exc
        self.add_evidence(rec.evidence)
        by_belief: dict[str, list[Revision]] = {}
        for revision in rec.revisions:
            by_belief.setdefault(revision.belief_id, []).append(revision)
        written = [b.id for b in rec.beliefs]
        for belief_id in by_belief:
            if belief_id not in written:
                raise IllegalTransitionError(
                    event.seq,
                    belief_id,
                    "revision-without-version",
                    "a revision without the belief version it produced",
                )
        if len(set(written)) != len(written):
            dup = next(i for i in written if written.count(i) > 1)
            raise IllegalTransitionError(
                event.seq, dup, "one-version-per-event", "two versions of one belief in one event"
            )
        for belief in rec.beliefs:
            self.belief(event.seq, belief, by_belief.get(belief.id, []))
            self.beliefs[belief.id] = belief

    def add_evidence(self, items: Sequence[EvidenceItem]) -> None:
        for item in items:
            self.evidence_for(item.claim_id)
            self.evidence[item.claim_id].append(item)

    def baseline(self, seq: int, belief: Belief) -> Belief:
        """The version the revisions start from: the last one, or the gate's adoption."""
        before = self.known(belief.id)
        if before is not None:
            if belief.id not in self.beliefs:
                # the importing store's own belief: the log moves what it did not bring
                self.unverified(seq, f"belief {belief.id} is already held by this store")
            for name in IMMUTABLE:
                if getattr(before, name) != getattr(belief, name):
                    raise IllegalTransitionError(
                        seq, belief.id, "immutable-field", f"its {name} changed"
                    )
            return before
        vouched = _vouched(belief.origin)
        if vouched is not None:
            self.unverified(seq, f"belief {belief.id} claims {vouched}")
        strongest = self.evidence_for(belief.claim_id).strongest()
        decided = adoption_for(belief.origin, strongest or EvidenceQuality.EXTERNAL_DOCUMENT)
        return belief.model_copy(
            update={
                "truth_status": decided.truth,
                "retrieval_status": decided.retrieval,
                "security_status": SecurityStatus.CLEAN,
                "freshness_status": FreshnessStatus.FRESH,
            }
        )

    def belief(self, seq: int, belief: Belief, revisions: list[Revision]) -> None:
        current = self.baseline(seq, belief)
        for _key, group in groupby(revisions, key=_call):
            calls = list(group)
            first = calls[0]
            authority = Authority(first.authority)
            if authority in GRANTED_AUTHORITIES:
                if first.grant_id is None or id_prefix(first.grant_id) != "grt":
                    raise IllegalTransitionError(
                        seq,
                        belief.id,
                        "grant-required",
                        f"a {authority.value}-authority revision without a grant id",
                    )
                claim = f"belief {belief.id} was moved with {authority.value} authority"
                self.unverified(seq, claim)
            moves = [Move(r.axis, r.to_state) for r in calls if r.axis and r.to_state]
            if len(moves) != len(calls):
                raise IllegalTransitionError(
                    seq, belief.id, "revision-mismatch", "a revision that names no axis move"
                )
            try:
                current, made = apply_moves(
                    current,
                    moves,
                    authority=authority,
                    reason=first.reason,
                    now=first.created_at,
                    grant_id=first.grant_id,
                    evidence=self.evidence_for(belief.claim_id),
                )
            except GateError as exc:
                raise IllegalTransitionError(
                    seq, belief.id, f"gate: {type(exc).__name__}", exc.message
                ) from exc
            recorded = [(r.axis, r.from_state, r.to_state) for r in calls]
            replayed = [(r.axis, r.from_state, r.to_state) for r in made]
            if recorded != replayed:
                raise IllegalTransitionError(
                    seq,
                    belief.id,
                    "revision-mismatch",
                    f"the revisions record {recorded}, the gate makes {replayed}",
                )
        for axis, want, have in zip(Axis, _statuses(current), _statuses(belief), strict=True):
            if want != have:
                raise IllegalTransitionError(
                    seq,
                    belief.id,
                    "unexplained-move",
                    f"its {axis.value} status is {have} but the gate, from the recorded "
                    f"adoption and revisions, leaves it {want}",
                )


def check_transitions(store: Store, events: Sequence[Event], *, verified: bool) -> None:
    """Refuse (:class:`IllegalTransitionError`) unless every belief state ``events`` write is
    one the gate allows, starting from what ``store`` already holds; and, unless ``verified``
    (a pinned key vouches for the log), refuse (:class:`UnverifiedAuthorityError`) any user,
    probe or kernel authority in it."""
    replay = _Replay(store, verified=verified)
    for event in events:
        replay.event(event)


__all__ = ["IMMUTABLE", "IllegalTransitionError", "UnverifiedAuthorityError", "check_transitions"]
