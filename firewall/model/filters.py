"""The shape of a belief query: what a ContextPolicy compiles to and every store answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.states import (
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    Sensitivity,
    TruthStatus,
)


@dataclass(frozen=True, slots=True)
class BeliefFilter:
    """A conjunction of conditions on beliefs. ``None`` means "no condition on this field".

    ``text`` matches if any query term (``firewall.model.text.query_terms``) occurs in the
    statement;
    results are then ordered by BM25 relevance (best first), otherwise by ``observed_at``
    descending then id. Time conditions:

    * ``anchor_after``: ``coalesce(last_verified_at, observed_at) >= anchor_after`` (freshness);
    * ``not_expired_at``: ``expires_at IS NULL OR expires_at > not_expired_at``;

    ``unranked``: with ``text``, return any ``limit`` matches (newest written first where the
    backend can say so) instead of the best-ranked ones, so the query stops at the limit instead
    of ranking every match: what recall uses for its rejected and uncertain buckets.

    ``subject_prefix`` matches beliefs whose subject starts with it (a topic, see
    :mod:`firewall.audit.why`). Belief history (:meth:`Store.find_belief_versions`) takes the same
    filter and evaluates it on each past version.

    Scoping: when ``project`` is set, a belief matches if its project equals it or its scope is
    ``global``; when ``user`` is set, beliefs with scope ``user`` must belong to that user.
    """

    text: str | None = None
    truth: frozenset[TruthStatus] | None = None
    retrieval: frozenset[RetrievalStatus] | None = None
    security: frozenset[SecurityStatus] | None = None
    freshness: frozenset[FreshnessStatus] | None = None
    max_sensitivity: Sensitivity | None = None
    anchor_after: datetime | None = None
    not_expired_at: datetime | None = None
    project: str | None = None
    user: str | None = None
    subject: str | None = None
    subject_prefix: str | None = None
    predicate: str | None = None
    session_id: str | None = None
    exclude_ids: frozenset[str] = field(default_factory=frozenset)
    limit: int = 10
    offset: int = 0
    unranked: bool = False

    def __post_init__(self) -> None:
        # a negative LIMIT is "no limit" to SQLite: a page size must never mean "everything"
        for name in ("limit", "offset"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise InputError(
                    f"a belief query's {name} must be a whole number >= 0, not {value!r}",
                    hint=f"pass {name}=10 (or another non-negative int)",
                )
