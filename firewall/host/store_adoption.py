"""Adopt a memory store's existing memories in one signed, logged step.

Memories that existed before Gnomon come in through ``gnomon import`` unverified and restricted
(origin ``imported:<store>``): nobody knows who wrote them. An operator who does know (the store
held only what its users said) adopts them with **one** grant scoped to the store and project
(``Firewall.grant("user", "ops", project="shop", store="mem0")``), and :func:`adopt_store`
promotes every covered belief to supported and normal in **one event** (``store.adopted``)
naming the grant. The grant is spent by that use, like any promoting grant; a belief the grant
does not cover, or one already moved (quarantined, superseded, promoted), is left as it is.

>>> from gnomon import firewall
>>> wall = firewall.open("memory://")
>>> from gnomon.firewall.host.firewall import ImportItem
>>> _ = wall.import_records([ImportItem(text="Deploys go through ArgoCD.", source_id="m1")],
...                        store_name="mem0", project="shop", bind=True)
>>> grant = wall.grant("user", "ops", project="shop", store="mem0")
>>> adopt_store(wall, "mem0", grant=grant, reason="the store held only users' statements").adopted
1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from gnomon.firewall.gate.gate import Move, apply_moves
from gnomon.firewall.gate.grants import Grant, GrantAuthority
from gnomon.firewall.log.events import Records
from gnomon.firewall.model.chain import Belief, BindingState, Revision, StoreBinding
from gnomon.firewall.model.errors import GrantScopeError, InputError, SpentGrantError
from gnomon.firewall.model.states import Authority, Axis, RetrievalStatus, TruthStatus

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

#: The binding detail of a memory the import recorded, and the prefix of one a guarded read
#: recorded as written around the firewall (``adapters.guard.Guard.adopt_unbound``).
IMPORTED_DETAIL = "imported"
UNBOUND_DETAIL = "unbound:"

_AUTHORITY = {GrantAuthority.USER: Authority.USER, GrantAuthority.PROBE: Authority.PROBE}
_PROMOTE = (
    Move(Axis.TRUTH, TruthStatus.SUPPORTED),
    Move(Axis.RETRIEVAL, RetrievalStatus.NORMAL),
)


@dataclass(frozen=True, slots=True)
class AdoptionReport:
    """What one adoption did: ``adopted`` beliefs promoted, ``skipped`` left as they were."""

    grant_id: str
    adopted: int
    skipped: int
    belief_ids: tuple[str, ...]
    #: why the skipped ones were not adopted: reason -> count
    not_adopted: dict[str, int] = field(default_factory=dict)


def adopt_store(
    wall: Firewall,
    store: str,
    *,
    grant: Grant,
    reason: str,
    belief_ids: Iterable[str] | None = None,
) -> AdoptionReport:
    """Promote the unverified memories imported from ``store`` (all of them in the grant's
    project, or only ``belief_ids``) on one store-scoped, single-use grant, in one event."""
    if not reason or not isinstance(reason, str):
        raise InputError("an adoption needs a reason", hint="pass reason='...'")
    checked = wall.verifier.verify(
        grant,
        set(_AUTHORITY),
        now=wall.clock(),
        operation=f"adopting {store} memories",
        project=grant.project,
    )
    if checked.store != store or checked.project is None:
        raise GrantScopeError(
            f"grant {checked.id} does not cover the memories imported from {store!r}",
            hint=f"issue one with Firewall.grant('user', ..., project=P, store={store!r})",
        )
    if wall.store.revisions_by_grant(checked.id):
        raise SpentGrantError(
            f"grant {checked.id} was already used; a grant that promotes is single-use",
            hint="issue a fresh grant for this adoption",
        )
    wanted = set(belief_ids) if belief_ids is not None else None
    bindings = {b.belief_id: b for b in wall.store.list_bindings(store)}
    ids = [i for i in bindings if wanted is None or i in wanted]
    beliefs = wall.store.get_beliefs(list(bindings))
    cutoff = _first_import(bindings.values(), beliefs)
    now = wall.clock()
    moved: list[Belief] = []
    revisions: list[Revision] = []
    why_not: Counter[str] = Counter()
    for ident in ids:
        belief = beliefs.get(ident)
        why = _refusal(belief, bindings[ident], checked, store, cutoff)
        if why is not None:
            why_not[why] += 1
            continue
        assert belief is not None
        updated, revs = apply_moves(
            belief,
            _PROMOTE,
            authority=_AUTHORITY[checked.authority],
            reason=reason,
            now=now,
            grant_id=checked.id,
            evidence=wall.store.get_evidence(belief.claim_id),
        )
        moved.append(updated)
        revisions.extend(revs)
    skipped = sum(why_not.values())
    if moved:
        wall.spend(
            checked.id,
            wall.draft(
                "store.adopted",
                actor=checked.subject,
                now=now,
                project=checked.project,
                data={
                    "store": store,
                    "grant_id": checked.id,
                    "adopted": len(moved),
                    "skipped": skipped,
                    "not_adopted": dict(sorted(why_not.items())),
                    "reason": reason,
                },
                records=Records(beliefs=tuple(moved), revisions=tuple(revisions)),
            ),
        )
    return AdoptionReport(
        checked.id, len(moved), skipped, tuple(b.id for b in moved), dict(sorted(why_not.items()))
    )


#: Why a bound belief was not adopted (the keys of :attr:`AdoptionReport.not_adopted`).
ALREADY = "already adopted, promoted or moved"
NOT_COVERED = "written through the firewall with its own origin (not an import)"
PLANTED = "first seen after the store's first import (written around the firewall)"
NOT_BOUND = "its binding is not written (pending, failed, deleted or drifted)"


def adoption_failed(report: AdoptionReport) -> bool:
    """True when an adoption promoted nothing it was asked to promote: no memory at all, or
    none promoted while some were refused for a reason other than being adopted already (a
    second run over an adopted store is not a failure: adoption is idempotent)."""
    if report.adopted:
        return False
    return not report.not_adopted or set(report.not_adopted) != {ALREADY}


def _first_import(
    bindings: Iterable[StoreBinding], beliefs: Mapping[str, Belief]
) -> datetime | None:
    """When the store's first import recorded a memory (None: never imported)."""
    times = [
        beliefs[b.belief_id].created_at
        for b in bindings
        if b.detail == IMPORTED_DETAIL and b.belief_id in beliefs
    ]
    return min(times, default=None)


def _refusal(
    belief: Belief | None,
    binding: StoreBinding,
    grant: Grant,
    store: str,
    cutoff: datetime | None,
) -> str | None:
    """Why ``belief`` is not adopted, or None when it is.

    Adoptable: a memory the store held before Gnomon, however the firewall first saw it:
    imported (origin ``imported:<store>``, bound by the import), or first met by a guarded
    read as a memory written around the firewall (origin ``external:<store>:unbound:<id>``)
    before the store's first import. One the read path met *after* an import was planted
    around the firewall since (the import listed the store and did not see it). A belief
    written through the firewall keeps its own origin: a caller's ``gnomon_origin=`` naming
    ``imported:<store>`` is not an import (its binding says so)."""
    if belief is None or binding.state != BindingState.WRITTEN:
        return NOT_BOUND
    ids = belief.origin.origin_ids
    if ids == {f"imported:{store}"} and binding.detail != IMPORTED_DETAIL:
        return NOT_COVERED  # a write that named the import's origin: not an import
    unbound = (
        grant.store == store
        and belief.project == grant.project
        and ids == {f"external:{store}:unbound:{binding.store_id}"}
        and (binding.detail or "").startswith(UNBOUND_DETAIL)
    )
    if unbound and belief.id not in grant.beliefs:
        if cutoff is not None and belief.created_at >= cutoff:
            return PLANTED
    elif not grant.covers(belief):
        return NOT_COVERED
    return None if _adoptable(belief) else ALREADY


def _adoptable(belief: Belief) -> bool:
    """Only an untouched import: unverified, restricted or normal, clean."""
    from gnomon.firewall.model.states import SecurityStatus

    return (
        belief.truth_status == TruthStatus.UNVERIFIED
        and belief.retrieval_status in (RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL)
        and belief.security_status == SecurityStatus.CLEAN
    )


__all__ = ["AdoptionReport", "adopt_store", "adoption_failed"]
