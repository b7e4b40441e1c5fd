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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gnomon.firewall.gate.gate import Move, apply_moves
from gnomon.firewall.gate.grants import Grant, GrantAuthority
from gnomon.firewall.log.events import Records
from gnomon.firewall.model.chain import Belief, Revision
from gnomon.firewall.model.errors import GrantScopeError, InputError, SpentGrantError
from gnomon.firewall.model.states import Authority, Axis, RetrievalStatus, TruthStatus

if TYPE_CHECKING:
    from gnomon.firewall.host.firewall import Firewall

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
    bound = [b.belief_id for b in wall.store.list_bindings(store)]
    ids = [i for i in dict.fromkeys(bound) if wanted is None or i in wanted]
    beliefs = wall.store.get_beliefs(ids)
    now = wall.clock()
    moved: list[Belief] = []
    revisions: list[Revision] = []
    skipped = 0
    for ident in ids:
        belief = beliefs.get(ident)
        if belief is None or not checked.covers(belief) or not _adoptable(belief):
            skipped += 1
            continue
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
                    "reason": reason,
                },
                records=Records(beliefs=tuple(moved), revisions=tuple(revisions)),
            ),
        )
    return AdoptionReport(checked.id, len(moved), skipped, tuple(b.id for b in moved))


def _adoptable(belief: Belief) -> bool:
    """Only an untouched import: unverified, restricted or normal, clean."""
    from gnomon.firewall.model.states import SecurityStatus

    return (
        belief.truth_status == TruthStatus.UNVERIFIED
        and belief.retrieval_status in (RetrievalStatus.RESTRICTED, RetrievalStatus.NORMAL)
        and belief.security_status == SecurityStatus.CLEAN
    )


__all__ = ["AdoptionReport", "adopt_store"]
