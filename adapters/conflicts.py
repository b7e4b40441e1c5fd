"""The contradiction channel of every guarded client, written once for all stores.

A read's hits and ``client.gnomon.contradictions(query=None, ids=None)`` both come here. Each
entry is one :class:`~firewall.model.chain.Contradiction` as this client's reader may know it
(:func:`firewall.gate.contested.contradiction_views`: members the reader's policy may not see,
quarantined or above its ceiling or another tenant's, are left out without a trace, and an entry
with fewer than two members left is not an entry), with each member's states and origins, the
member the policy trusts (if any) and why, and the record's ``reason``, which names the store
and the call the conflict came from (``gnomon why BELIEF`` shows the same record).

mem0 puts the list beside ``results`` (``{"results": [...], "contradictions": [...]}``); Letta
and Zep responses carry it as ``response.gnomon.contradictions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gnomon.firewall.gate.contested import Reader, contradiction_views, in_scope
from gnomon.firewall.gate.policy import ContextPolicy, resolve
from gnomon.firewall.gate.recall import ContradictionView
from gnomon.firewall.model.chain import Belief

if TYPE_CHECKING:
    from gnomon.adapters.guard import Guard


def member(belief: Belief, trusted: bool) -> dict[str, Any]:
    """One visible member: its text, states and origins, and whether the policy trusts it."""
    return {
        "belief_id": belief.id,
        "statement": belief.statement,
        "truth": belief.truth_status.value,
        "security": belief.security_status.value,
        "retrieval": belief.retrieval_status.value,
        "origin_ids": sorted(belief.origin.origin_ids),
        "integrity": belief.origin.integrity.name.lower(),
        "trusted": trusted,
    }


def why(trusted: Sequence[Belief], others: Sequence[Belief], withheld: Sequence[str]) -> str:
    """Which member the policy trusts, and why, in one line (ids and labels, no text)."""

    def label(b: Belief) -> str:
        return f"{b.id} ({b.truth_status.value}, {b.origin.integrity.name.lower()})"

    hidden = f"; {len(withheld)} member(s) withheld by this policy" if withheld else ""
    if not trusted:
        return f"no member is trusted: {', '.join(label(b) for b in others)}{hidden}"
    rest = ", ".join(label(b) for b in others) or "none visible"
    return (
        f"trusts {', '.join(label(b) for b in trusted)}: the policy admits it; not {rest}{hidden}"
    )


def entry(view: ContradictionView, policy: ContextPolicy, reader: Reader) -> dict[str, Any]:
    record = view.contradiction
    trusted = [b for b in view.visible if not policy.rejection_reasons(b, reader.now)]
    others = [b for b in view.visible if b not in trusted]
    return {
        "id": record.id,
        "belief_ids": list(record.belief_ids),
        "beliefs": [member(b, b in trusted) for b in view.visible],
        "withheld": list(view.withheld),
        "trusted": [b.id for b in trusted],
        "why": why(trusted, others, view.withheld),
        "reason": record.reason,
        "detected_at": record.detected_at.isoformat(),
    }


def reader_of(guard: Guard) -> tuple[ContextPolicy, Reader]:
    policy = resolve(guard.policy)
    s = guard.session
    return policy, Reader(policy, s.project, s.user, guard.wall.clock())


def entries(guard: Guard, belief_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The channel for ``belief_ids`` (of this reader's tenant), as this reader may know it."""
    policy, reader = reader_of(guard)
    found = guard.wall.store.get_beliefs(sorted(set(belief_ids)))
    return of_beliefs(guard, policy, reader, found.values())


def of_beliefs(
    guard: Guard, policy: ContextPolicy, reader: Reader, beliefs: Iterable[Belief]
) -> list[dict[str, Any]]:
    """The channel for beliefs already in hand (a read's hits: no second fetch, policy
    resolve or clock read); only their ids and tenant matter, members are read fresh."""
    unique = {b.id: b for b in beliefs}
    matched = [
        unique[i] for i in sorted(unique) if in_scope(unique[i], reader.project, reader.user)
    ]
    if not matched:
        return []
    views = contradiction_views(guard.wall.store, reader, matched, {})
    return [entry(v, policy, reader) for v in views]


def bound_to(guard: Guard, store_ids: Iterable[str]) -> list[str]:
    """The belief ids bound to ``store_ids`` in this client's store."""
    bindings = guard.wall.store.bindings_by_store_id(guard.store, list(store_ids))
    return [b.belief_id for b in bindings.values()]


def all_bound(guard: Guard) -> list[str]:
    """Every belief bound in this client's store (the channel's default scope)."""
    out: list[str] = []
    after: str | None = None
    while True:
        page = guard.wall.store.list_bindings(guard.store, after=after, limit=1000)
        out.extend(b.belief_id for b in page)
        if len(page) < 1000:
            return out
        after = page[-1].belief_id


def matching(found: list[dict[str, Any]], query: str | None) -> list[dict[str, Any]]:
    """The entries a visible member of which contains every word of ``query`` (all if None)."""
    if query is None:
        return found
    words = query.casefold().split()
    return [
        e
        for e in found
        if any(all(w in m["statement"].casefold() for w in words) for m in e["beliefs"])
    ]


__all__ = [
    "all_bound",
    "bound_to",
    "entries",
    "entry",
    "matching",
    "member",
    "of_beliefs",
    "reader_of",
    "why",
]
