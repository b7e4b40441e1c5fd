"""The belief gate: the states a belief starts in and the moves it may make, by whose authority.

Each axis has its own transition table. A move that is not in the table is refused; a move in the
table is refused unless the acting authority is listed for it. Every accepted move becomes a
:class:`~firewall.model.chain.Revision` (and so an event). Three rules sit on top of the tables and
are
enforced here, in the core, whatever path the request came from:

* **parallax**: a claim whose strongest supporting evidence is reading-class (an external
  document, a model inference) is never made ``supported`` by anything but a verified grant, and
  a corroboration only counts if it is strictly stronger and from an independent origin;
* **no self-promotion**: evidence produced by the agent's own action never promotes a belief that
  the action's decision depended on;
* **one-way quarantine**: leaving ``quarantined`` takes user authority; ``malicious``,
  ``blocked`` and ``superseded`` are terminal.

``user`` and ``probe`` authority only arrive here after :class:`~firewall.gate.grants.GrantVerifier`
has checked a signature; the gate itself never mints authority.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from gnomon.firewall.model.chain import Belief, EvidenceSet, Revision
from gnomon.firewall.model.errors import (
    GateError,
    InputError,
    ParallaxError,
    TerminalStateError,
    TransitionRefused,
)
from gnomon.firewall.model.ids import new_id
from gnomon.firewall.model.origin import Integrity, Origin
from gnomon.firewall.model.states import (
    READING_CLASS,
    Authority,
    Axis,
    EvidenceQuality,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)

GATE_VERSION = "1"

U, P, POL, SEN, REF, AUTO, SYS = (
    Authority.USER,
    Authority.PROBE,
    Authority.POLICY,
    Authority.SENTINEL,
    Authority.REFLECTION,
    Authority.AUTO_OBSERVATION,
    Authority.SYSTEM,
)


def _table(
    rows: dict[tuple[str, str], set[Authority]],
) -> dict[tuple[str, str], frozenset[Authority]]:
    return {move: frozenset(who) for move, who in rows.items()}


T, R, S, F = TruthStatus, RetrievalStatus, SecurityStatus, FreshnessStatus

TRANSITIONS: dict[Axis, dict[tuple[str, str], frozenset[Authority]]] = {
    Axis.TRUTH: _table(
        {
            # Promotion: a grant, or the policy acting on independent stronger corroboration.
            (T.UNVERIFIED, T.SUPPORTED): {U, P, POL},
            (T.UNVERIFIED, T.CONTRADICTED): {U, P, POL, SEN},
            (T.SUPPORTED, T.CONTRADICTED): {U, P, POL, SEN},
            (T.SUPPORTED, T.UNVERIFIED): {U, P, POL, SEN},
            (T.CONTRADICTED, T.SUPPORTED): {U, P},
            (T.CONTRADICTED, T.UNVERIFIED): {U, P},
            (T.UNVERIFIED, T.SUPERSEDED): {U, P, POL, SYS},
            (T.SUPPORTED, T.SUPERSEDED): {U, P, POL, SYS},
            (T.CONTRADICTED, T.SUPERSEDED): {U, P, POL, SYS},
        }
    ),
    Axis.RETRIEVAL: _table(
        {
            (R.RESTRICTED, R.NORMAL): {U, P, POL},
            (R.NORMAL, R.RESTRICTED): {U, P, POL, SEN, SYS},
            (R.RESTRICTED, R.HIDDEN): {U, POL, SEN, SYS},
            (R.NORMAL, R.HIDDEN): {U, POL, SEN, SYS},
            (R.HIDDEN, R.RESTRICTED): {U},
            (R.HIDDEN, R.NORMAL): {U},
            (R.RESTRICTED, R.PRIVILEGED_ONLY): {U, P, POL, SEN, SYS},
            (R.NORMAL, R.PRIVILEGED_ONLY): {U, P, POL, SEN, SYS},
            (R.HIDDEN, R.PRIVILEGED_ONLY): {U, P, POL, SEN, SYS},
            (R.PRIVILEGED_ONLY, R.RESTRICTED): {U},
            (R.PRIVILEGED_ONLY, R.NORMAL): {U},
            (R.RESTRICTED, R.BLOCKED): {U, P, SEN, SYS},
            (R.NORMAL, R.BLOCKED): {U, P, SEN, SYS},
            (R.HIDDEN, R.BLOCKED): {U, P, SEN, SYS},
            (R.PRIVILEGED_ONLY, R.BLOCKED): {U, P, SEN, SYS},
        }
    ),
    Axis.SECURITY: _table(
        {
            (S.CLEAN, S.SUSPICIOUS): {U, P, POL, SEN, REF, SYS},
            (S.SUSPICIOUS, S.CLEAN): {U, P},
            (S.CLEAN, S.QUARANTINED): {U, P, POL, SEN, SYS},
            (S.SUSPICIOUS, S.QUARANTINED): {U, P, POL, SEN, SYS},
            # One-way: only a user clears a quarantine.
            (S.QUARANTINED, S.CLEAN): {U},
            (S.QUARANTINED, S.SUSPICIOUS): {U},
            # Sentinel authority stops at quarantine: clean -> suspicious -> quarantined.
            (S.CLEAN, S.MALICIOUS): {U, P},
            (S.SUSPICIOUS, S.MALICIOUS): {U, P},
            (S.QUARANTINED, S.MALICIOUS): {U, P},
        }
    ),
    Axis.FRESHNESS: _table(
        {
            (F.FRESH, F.STALE): {U, P, POL, SYS},
            (F.FRESH, F.EXPIRED): {U, P, POL, SYS},
            (F.STALE, F.EXPIRED): {U, P, POL, SYS},
            (F.STALE, F.FRESH): {U, P, POL},
            (F.EXPIRED, F.FRESH): {U, P},
        }
    ),
}

TERMINAL: dict[Axis, frozenset[str]] = {
    Axis.TRUTH: frozenset({T.SUPERSEDED}),
    Axis.RETRIEVAL: frozenset({R.BLOCKED}),
    Axis.SECURITY: frozenset({S.MALICIOUS}),
    Axis.FRESHNESS: frozenset(),
}


@dataclass(frozen=True, slots=True)
class Move:
    axis: Axis
    to_state: str


@dataclass(frozen=True, slots=True)
class Adoption:
    """The states a new belief starts in, and the authority that set them."""

    truth: TruthStatus
    retrieval: RetrievalStatus
    authority: Authority
    reason: str


def adoption_for(origin: Origin, strongest: EvidenceQuality) -> Adoption:
    """Initial states for a new belief: decided by origin and evidence class, never by text.

    Legitimate facts flow: a statement the host attributes to the user, a tool envelope the host
    observed, and output a trusted tool produced itself start ``supported`` and ``normal``.
    Everything else (external content, agent writes, imports, anything joined with them) starts
    ``unverified`` and ``restricted``. Parallax: reading-class evidence never starts supported,
    and neither does a probe's synthetic record: synthetic evidence alone supports nothing.
    """
    if (
        strongest in READING_CLASS
        or strongest == EvidenceQuality.SYNTHETIC_PROBE
        or origin.integrity < Integrity.OBSERVED
    ):
        return Adoption(
            TruthStatus.UNVERIFIED,
            RetrievalStatus.RESTRICTED,
            Authority.AUTO_OBSERVATION,
            f"adopted unverified: origin {origin.describe()}, evidence {strongest.value}",
        )
    if origin.integrity == Integrity.ATTESTED:
        authority = U
        return Adoption(
            TruthStatus.SUPPORTED,
            RetrievalStatus.NORMAL,
            authority,
            f"adopted supported: attested by {origin.describe()}",
        )
    return Adoption(
        TruthStatus.SUPPORTED,
        RetrievalStatus.NORMAL,
        Authority.AUTO_OBSERVATION,
        f"adopted supported: observed {strongest.value} from {origin.describe()}",
    )


def adoption_strict(origin: Origin, strongest: EvidenceQuality) -> Adoption:
    """Gate ``1-strict``: only attested origins (a user or probe statement) start supported.

    Tool envelopes and a trusted tool's own output, which gate ``1`` adopts supported because
    the host observed them, start ``unverified`` and ``restricted`` here like everything else
    and need a grant or corroboration. It exists to answer "what if we had not trusted our own
    tools?" in ``gnomon replay --gate-version 1-strict``; no live firewall runs it.
    """
    decided = adoption_for(origin, strongest)
    if origin.integrity == Integrity.ATTESTED or decided.truth != TruthStatus.SUPPORTED:
        return decided
    return Adoption(
        TruthStatus.UNVERIFIED,
        RetrievalStatus.RESTRICTED,
        Authority.AUTO_OBSERVATION,
        f"adopted unverified (gate 1-strict): origin {origin.describe()}, "
        f"evidence {strongest.value} is not attested",
    )


AdoptionRule = Callable[[Origin, EvidenceQuality], Adoption]

#: The adoption rule of each gate version. ``GATE_VERSION`` is what the firewall runs and what
#: every event records; the others exist for replay (``firewall.audit.replay``).
ADOPTION_RULES: dict[str, AdoptionRule] = {
    GATE_VERSION: adoption_for,
    "1-strict": adoption_strict,
}


def adoption_rule(version: str) -> AdoptionRule:
    """The adoption rule of gate ``version``; unknown versions are refused (fail closed)."""
    rule = ADOPTION_RULES.get(version)
    if rule is None:
        raise InputError(
            f"unknown gate version {version!r}",
            hint=f"known gate versions: {', '.join(sorted(ADOPTION_RULES))}",
        )
    return rule


def check_move(belief: Belief, move: Move, authority: Authority) -> None:
    """Raise the precise :class:`GateError` if ``authority`` may not make ``move``."""
    current = belief.status(move.axis)
    if current == move.to_state:
        return
    if current in TERMINAL[move.axis]:
        raise TerminalStateError(
            f"belief {belief.id} is {current} on the {move.axis.value} axis, a terminal state; "
            f"it cannot move to {move.to_state}",
            hint="record a new belief instead; terminal states keep the old one for audit",
        )
    allowed = TRANSITIONS[move.axis].get((current, move.to_state))
    if not allowed or authority not in allowed:
        raise TransitionRefused(
            axis=move.axis.value,
            from_state=current,
            to_state=move.to_state,
            authority=authority.value,
            allowed=allowed,
            belief_id=belief.id,
        )


def check_parallax(
    belief: Belief, evidence: EvidenceSet, authority: Authority, *, required: int = 1
) -> None:
    """Promotion to ``supported`` without a grant needs independent, stronger corroboration."""
    if authority in (U, P):
        return
    count = evidence.independent_corroboration(belief.origin)
    if count < required:
        strongest = evidence.strongest()
        raise ParallaxError(
            f"belief {belief.id} cannot become supported on {authority.value} authority: its "
            f"strongest evidence is {strongest.value if strongest else 'none'} and it has "
            f"{count} independent corroboration(s) stronger than reading ({required} needed)",
            hint="corroborate with a tool result or direct observation from an origin "
            "independent of the claim, or promote with a user grant",
        )


def coupled_moves(moves: Iterable[Move]) -> list[Move]:
    """Add the moves another move implies: quarantine hides, malicious blocks, promotion shows."""
    out = list(moves)
    axes = {m.axis for m in out}
    for move in list(out):
        if Axis.RETRIEVAL in axes:
            continue
        if move.axis == Axis.SECURITY and move.to_state == S.QUARANTINED:
            out.append(Move(Axis.RETRIEVAL, R.PRIVILEGED_ONLY))
        elif move.axis == Axis.SECURITY and move.to_state == S.MALICIOUS:
            out.append(Move(Axis.RETRIEVAL, R.BLOCKED))
    return out


def _promotes(belief: Belief, move: Move) -> bool:
    if belief.status(move.axis) == move.to_state:
        return False
    if move.axis == Axis.TRUTH:
        return move.to_state == T.SUPPORTED
    if move.axis == Axis.RETRIEVAL:
        return move.to_state == R.NORMAL and belief.truth_status != T.SUPPORTED
    return False


def apply_moves(
    belief: Belief,
    moves: Iterable[Move],
    *,
    authority: Authority,
    reason: str,
    now: datetime,
    grant_id: str | None = None,
    related_ids: Iterable[str] = (),
    evidence: EvidenceSet | None = None,
    required: int = 1,
) -> tuple[Belief, list[Revision]]:
    """Check and apply moves; returns the new belief version and one revision per axis moved.

    Parallax is enforced here, for every caller: a move that makes a belief ``supported``, or
    normally retrievable while it is not supported, needs a user/probe grant or ``evidence``
    with independent corroboration stronger than reading.
    """
    current = belief
    revisions: list[Revision] = []
    related = list(related_ids)
    for move in coupled_moves(moves):
        check_move(current, move, authority)
        if _promotes(current, move) and authority not in (U, P):
            if evidence is None:
                raise ParallaxError(
                    f"{move.axis.value} move to {move.to_state} on belief {belief.id} by "
                    f"{authority.value} authority needs corroborating evidence, and none was given",
                    hint="corroborate it (Session.corroborate) or promote with a user grant",
                )
            check_parallax(current, evidence, authority, required=required)
        before = current.status(move.axis)
        if before == move.to_state:
            continue
        field = f"{move.axis.value}_status"
        update: dict[str, object] = {field: move.to_state}
        if move.axis == Axis.TRUTH and move.to_state == T.SUPPORTED:
            update["last_verified_at"] = now
        current = current.model_copy(update=update)
        revisions.append(
            Revision(
                id=new_id("rev"),
                belief_id=belief.id,
                axis=move.axis,
                from_state=before,
                to_state=move.to_state,
                authority=authority,
                reason=reason,
                grant_id=grant_id,
                related_ids=related,
                created_at=now,
            )
        )
    check_invariants(current)
    if revisions:
        current = current.model_copy(update={"updated_at": now, "version": belief.version + 1})
    return current, revisions


# Security states that pin the retrieval axis: what is quarantined stays on the audit path and
# what is malicious stays blocked, whatever else moves, until a user clears the security state.
PINNED_RETRIEVAL: dict[str, frozenset[str]] = {
    S.QUARANTINED: frozenset({R.PRIVILEGED_ONLY, R.BLOCKED}),
    S.MALICIOUS: frozenset({R.BLOCKED}),
}


def check_invariants(belief: Belief) -> None:
    """Cross-axis rules the per-axis tables cannot express on their own."""
    allowed = PINNED_RETRIEVAL.get(belief.security_status)
    if allowed is not None and belief.retrieval_status not in allowed:
        raise GateError(
            f"belief {belief.id} is {belief.security_status}; its retrieval must stay "
            f"{' or '.join(sorted(allowed))}, not {belief.retrieval_status}",
            hint="clear the security state first (`gnomon clear` with a user grant)",
        )


__all__ = [
    "ADOPTION_RULES",
    "GATE_VERSION",
    "TERMINAL",
    "TRANSITIONS",
    "Adoption",
    "AdoptionRule",
    "Move",
    "adoption_for",
    "adoption_rule",
    "adoption_strict",
    "apply_moves",
    "check_invariants",
    "check_move",
    "check_parallax",
    "coupled_moves",
]
