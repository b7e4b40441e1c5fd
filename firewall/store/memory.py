"""``memory://``: the in-process store, for tests, notebooks and short-lived agents.

Everything lives in Python containers behind one re-entrant lock. The log is a list of sealed
events; projections are dicts keyed by id, with the few indexes the read paths need so that they
stay proportional to their result: beliefs by ``(project, subject, predicate)``, decision
dependencies by belief id, contradictions by belief id, and an inverted text index
``token -> {belief id: term frequency}`` from which BM25 is computed with the same formula SQLite
FTS5 uses (``k1=1.2``, ``b=0.75``, IDF ``log((N - n + 0.5) / (n + 0.5))`` floored at ``1e-6``).

A commit first does everything that can fail (sealing, tokenizing, computing sort keys) and only
then mutates, so a failing commit leaves neither events nor projections behind.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import orjson

from gnomon.firewall.log.events import GENESIS_HASH, Event, EventDraft, Records, seal
from gnomon.firewall.log.moves import resolve_moves
from gnomon.firewall.model import chain
from gnomon.firewall.model.errors import GnomonError, StoreError
from gnomon.firewall.model.states import Scope
from gnomon.firewall.model.text import query_terms
from gnomon.firewall.store.base import (
    BeliefFilter,
    Store,
    check_continues,
    claim_drafts,
    claim_of,
    is_request_kind,
)
from gnomon.firewall.store.keys import index_tokens, micros
from gnomon.firewall.store.sealing import StoreSeal

K1 = 1.2
B = 0.75


def _reindex(
    index: dict[str, set[str]], record_id: str, old_keys: Iterable[str], new_keys: Iterable[str]
) -> None:
    """Move ``record_id`` in the reverse index ``index`` from the keys its previous version
    listed to the keys its new version lists."""
    for key in old_keys:
        index.get(key, set()).discard(record_id)
    for key in new_keys:
        index.setdefault(key, set()).add(record_id)


def bm25_idf(rows: int, hits: int) -> float:
    """FTS5's IDF: terms in more than half of the rows get a tiny positive weight."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def belief_matches(
    belief: chain.Belief, where: BeliefFilter, *, anchor: int, expires: int | None
) -> bool:
    """Every condition of ``where`` except ``text`` and paging (the caller handles those)."""
    if where.truth is not None and belief.truth_status not in where.truth:
        return False
    if where.retrieval is not None and belief.retrieval_status not in where.retrieval:
        return False
    if where.security is not None and belief.security_status not in where.security:
        return False
    if where.freshness is not None and belief.freshness_status not in where.freshness:
        return False
    if where.max_sensitivity is not None and belief.sensitivity.rank > where.max_sensitivity.rank:
        return False
    if where.anchor_after is not None and anchor < micros(where.anchor_after):
        return False
    if (
        where.not_expired_at is not None
        and expires is not None
        and expires <= micros(where.not_expired_at)
    ):
        return False
    if where.project is not None and not (
        belief.project == where.project or belief.scope == Scope.GLOBAL
    ):
        return False
    if where.user is not None and belief.scope == Scope.USER and belief.user != where.user:
        return False
    if where.subject is not None and belief.subject != where.subject:
        return False
    if where.subject_prefix is not None and not (belief.subject or "").startswith(
        where.subject_prefix
    ):
        return False
    if where.predicate is not None and belief.predicate != where.predicate:
        return False
    if where.session_id is not None and belief.session_id != where.session_id:
        return False
    return belief.id not in where.exclude_ids


def _empty_set_condition(where: BeliefFilter) -> bool:
    """An empty status set admits nothing: answer without looking."""
    return any(
        s is not None and not s
        for s in (where.truth, where.retrieval, where.security, where.freshness)
    )


@dataclass(frozen=True, slots=True)
class _BeliefRow:
    belief: chain.Belief
    terms: Counter[str]
    length: int
    anchor: int
    observed: int
    expires: int | None


class MemoryStore(Store):
    """The ``memory://`` backend. Thread-safe; everything is lost when the process exits."""

    def __init__(self, url: str = "memory://", *, seal: StoreSeal | None = None) -> None:
        self.url = url
        #: An in-process key unless a subclass holds a file-backed one.
        self._seal = seal if seal is not None else StoreSeal.ephemeral(url)
        self._lock = threading.RLock()
        self._executed: set[str] = set()
        # request id -> its events (``request_events``), kept by ``_apply``
        self._by_request: dict[str, list[Event]] = {}
        self._closed = False
        self._events: list[Event] = []
        self._sessions: dict[str, chain.SessionInfo] = {}
        self._observations: dict[str, chain.Observation] = {}
        self._claims: dict[str, chain.Claim] = {}
        self._evidence: dict[str, dict[str, chain.EvidenceItem]] = {}
        self._evidence_claim: dict[str, str] = {}
        self._beliefs: dict[str, _BeliefRow] = {}
        self._decisions: dict[str, chain.Decision] = {}
        self._actions: dict[str, chain.Action] = {}
        self._outcomes: dict[str, chain.Outcome] = {}
        self._revisions: dict[str, tuple[int, int, chain.Revision]] = {}
        self._revision_order = 0
        self._contradictions: dict[str, chain.Contradiction] = {}
        self._bindings: dict[tuple[str, str], chain.StoreBinding] = {}  # (store, belief_id)
        # belief id -> [(recorded_from_us, version)], one entry per commit that wrote it
        self._history: dict[str, list[tuple[int, chain.Belief]]] = {}
        # indexes
        self._by_spo: dict[tuple[str, str | None, str | None], set[str]] = {}
        self._global: set[str] = set()
        self._decision_deps: dict[str, set[str]] = {}
        self._revisions_by_belief: dict[str, set[str]] = {}
        self._revisions_by_grant: dict[str, set[str]] = {}
        self._contradictions_by_belief: dict[str, set[str]] = {}
        self._bindings_by_store_id: dict[tuple[str, str], tuple[str, str]] = {}
        self._bindings_by_belief: dict[str, set[str]] = {}
        # per store, belief ids in order, sorted lazily like ``_recent``
        self._binding_order: dict[str, list[str]] = {}
        self._binding_sorted: dict[str, int] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._total_length = 0
        # (-observed, id) newest first; appended unsorted, sorted lazily by the next read
        # (timsort merges the new run in linear time).
        self._recent: list[tuple[int, str]] = []
        self._recent_sorted = 0

    # -- write path -----------------------------------------------------------------------

    def commit(self, drafts: Sequence[EventDraft]) -> list[Event]:
        if not drafts:
            return []
        self._seal.require("committing events")
        with self._lock:
            self._check_open()
            with self._writing():
                events = self._append(drafts)
        self._seal.advance(events)
        return events

    def commit_if_head(self, drafts: Sequence[EventDraft], head: int) -> list[Event] | None:
        self._seal.require("committing events")
        with self._lock:
            self._check_open()
            with self._writing():  # a shared file log: what other processes appended counts
                if self._head()[0] != head:
                    return None
                events = self._append(drafts) if drafts else []
        self._seal.advance(events)
        return events

    def claim_execution(self, request_id: str, drafts: Sequence[EventDraft]) -> list[Event] | None:
        self._seal.require("claiming an execution")
        with self._lock:
            self._check_open()
            with self._writing():
                if request_id in self._executed:
                    return None
                events = self._append(claim_drafts(drafts))
                self._executed.add(request_id)
        self._seal.advance(events)
        return events

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Around every write, under ``_lock``: a log shared with other processes is locked
        and caught up here (:class:`~firewall.store.ndjson_file.FileLogStore`)."""
        yield

    def _append(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Seal the drafts and apply them; the caller holds ``_lock`` inside :meth:`_writing`."""
        sealed, records, staged = self._prepare(drafts)
        self._apply(sealed, records, staged)
        return sealed

    def append_sealed(self, events: Sequence[Event]) -> None:
        self._seal.require("appending events")
        with self._lock:
            self._check_open()
            records, staged = self._check_sealed(events)
            resealed = self._seal.resealed(events)
            self._apply(resealed, records, staged)
        self._seal.advance(resealed)

    def _prepare(
        self, drafts: Sequence[EventDraft]
    ) -> tuple[list[Event], list[Records], list[_BeliefRow]]:
        """Seal and stage everything that can fail, before anything is mutated."""
        seq, prev = self._head()
        sealer = self._seal.require("committing events")
        self._seal.check_head(seq, prev)
        sealed: list[Event] = []
        with self._nothing_written(
            "commit failed and was rolled back", "fix the draft that could not be stored"
        ):
            for draft in drafts:
                seq += 1
                event = seal(seq, prev, draft, sealer)
                prev = event.hash
                sealed.append(event)
            self._seal.closed(sealed)
            records = self._resolved([d.typed_records() for d in drafts])
            staged = [_stage_belief(b) for rec in records for b in rec.beliefs]
        return sealed, records, staged

    def _resolved(self, records: list[Records]) -> list[Records]:
        """Move batches turned into the belief versions they make (:mod:`firewall.log.moves`)."""
        if not any(rec.moves for rec in records):
            return records
        return resolve_moves(records, self.get_beliefs)

    def _check_sealed(self, events: Sequence[Event]) -> tuple[list[Records], list[_BeliefRow]]:
        """Check sealed events continue the chain and stage their records (no mutation)."""
        seq, prev = self._head()
        for event in events:
            check_continues(event, seq, prev)
            seq, prev = event.seq, event.hash
        with self._nothing_written(
            "the events' records could not be read",
            "the events verify but their payload is not a record this version reads",
        ):
            records = self._resolved([event.records() for event in events])
            staged = [_stage_belief(b) for rec in records for b in rec.beliefs]
        return records, staged

    @contextmanager
    def _nothing_written(self, failure: str, hint: str) -> Iterator[None]:
        """Staging, before anything is mutated: any error but a :class:`GnomonError` becomes a
        :class:`StoreError` saying ``failure`` and that nothing was written."""
        try:
            yield
        except GnomonError:
            raise
        except Exception as exc:
            raise StoreError(
                f"{self.url}: {failure}: {exc!r}", hint=f"nothing was written; {hint}"
            ) from exc

    def _apply(
        self, sealed: list[Event], records: Sequence[Records], staged: list[_BeliefRow]
    ) -> None:
        # Nothing here can fail: the commit is all or nothing.
        self._events.extend(sealed)
        for event in sealed:
            # a log loaded from a file (or imported) keeps the claims it recorded
            claimed = claim_of(event)
            if claimed is not None:
                self._executed.add(claimed)
            if is_request_kind(event.kind):
                request_id = event.payload.get("request_id")
                if isinstance(request_id, str):
                    self._by_request.setdefault(request_id, []).append(event)
        rows = iter(staged)
        plain = self._plain_tables()
        for rec in records:
            for name, table in plain:
                table.update((item.id, item) for item in getattr(rec, name))
            for item in rec.evidence:
                self._put_evidence(item)
            written: dict[str, chain.Belief] = {}  # history: the last version of each in this event
            for _ in rec.beliefs:
                row = next(rows)
                self._put_belief(row)
                written[row.belief.id] = row.belief
            for belief in written.values():
                self._history.setdefault(belief.id, []).append((micros(belief.updated_at), belief))
            for decision in rec.decisions:
                self._put_decision(decision)
            for revision in rec.revisions:
                self._put_revision(revision)
            for contradiction in rec.contradictions:
                self._put_contradiction(contradiction)
            for binding in rec.bindings:
                self._put_binding(binding)

    def erase_bodies(
        self, rewrites: Mapping[int, bytes], draft: EventDraft, head: int
    ) -> list[Event] | None:
        with self._lock:
            self._check_open()
            self._seal.require("erasing event bodies")
            if self.head()[0] != head:
                return None
            kept = list(self._events)
            for seq, body in rewrites.items():
                old = kept[seq - 1]
                kept[seq - 1] = Event.from_body(seq, body, old.prev_hash, old.hash, old.tag)
            self._events = kept
            self.rebuild_projections()
            return self.commit([draft])

    def rebuild_projections(self) -> int:
        with self._lock:
            self._check_open()
            self._seal.require("rebuilding the projections")
            fresh = MemoryStore(self.url)
            fresh.append_sealed(self._events)
            # every projection (and index) attribute of a fresh store replaces ours
            for name, value in vars(fresh).items():
                if name not in ("url", "_lock", "_closed", "_events", "_seal"):
                    setattr(self, name, value)
            return len(self._events)

    def projection_docs(self) -> Iterator[tuple[str, str, bytes]]:
        with self._lock:
            tables: list[tuple[str, Iterable[chain.ChainModel]]] = [
                *((name, list(table.values())) for name, table in self._plain_tables()),
                ("evidence", [i for group in self._evidence.values() for i in group.values()]),
                ("beliefs", [row.belief for row in self._beliefs.values()]),
                ("decisions", list(self._decisions.values())),
                ("revisions", [r for _, _, r in self._revisions.values()]),
                ("contradictions", list(self._contradictions.values())),
                ("bindings", list(self._bindings.values())),
            ]
        dumps = orjson.dumps
        for table, items in tables:
            for item in items:
                yield table, item.id, dumps(item.to_json_dict())  # type: ignore[attr-defined]

    def _plain_tables(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The projections kept as plain ``{id: record}`` maps (no index of their own), each
        with its :class:`~firewall.log.events.Records` field."""
        return (
            ("sessions", self._sessions),
            ("observations", self._observations),
            ("claims", self._claims),
            ("actions", self._actions),
            ("outcomes", self._outcomes),
        )

    def _put_evidence(self, item: chain.EvidenceItem) -> None:
        old_claim = self._evidence_claim.get(item.id)
        if old_claim is not None and old_claim != item.claim_id:
            self._evidence[old_claim].pop(item.id, None)
        self._evidence_claim[item.id] = item.claim_id
        self._evidence.setdefault(item.claim_id, {})[item.id] = item

    def _put_belief(self, row: _BeliefRow) -> None:
        belief = row.belief
        old = self._beliefs.get(belief.id)
        if old is not None:
            self._unindex_belief(old)
        if old is None or old.observed != row.observed:
            if old is not None:
                self._recent.remove((-old.observed, belief.id))  # rare: observed_at moved
                self._recent_sorted = 0
            self._recent.append((-row.observed, belief.id))
        self._beliefs[belief.id] = row
        self._by_spo.setdefault((belief.project, belief.subject, belief.predicate), set()).add(
            belief.id
        )
        if belief.scope == Scope.GLOBAL:
            self._global.add(belief.id)
        for term, count in row.terms.items():
            self._postings.setdefault(term, {})[belief.id] = count
        self._total_length += row.length

    def _unindex_belief(self, row: _BeliefRow) -> None:
        belief = row.belief
        key = (belief.project, belief.subject, belief.predicate)
        bucket = self._by_spo.get(key)
        if bucket is not None:
            bucket.discard(belief.id)
            if not bucket:
                del self._by_spo[key]
        self._global.discard(belief.id)
        for term in row.terms:
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(belief.id, None)
                if not posting:
                    del self._postings[term]
        self._total_length -= row.length

    def _put_decision(self, decision: chain.Decision) -> None:
        old = self._decisions.get(decision.id)
        self._decisions[decision.id] = decision
        _reindex(
            self._decision_deps, decision.id, old.depends_on if old else (), decision.depends_on
        )

    def _put_revision(self, revision: chain.Revision) -> None:
        old = self._revisions.get(revision.id)
        if old is not None:
            self._revisions_by_belief.get(old[2].belief_id, set()).discard(revision.id)
            order = old[1]
        else:
            self._revision_order += 1
            order = self._revision_order
        self._revisions[revision.id] = (micros(revision.created_at), order, revision)
        self._revisions_by_belief.setdefault(revision.belief_id, set()).add(revision.id)
        if old is not None and old[2].grant_id is not None:
            self._revisions_by_grant.get(old[2].grant_id, set()).discard(revision.id)
        if revision.grant_id is not None:
            self._revisions_by_grant.setdefault(revision.grant_id, set()).add(revision.id)

    def _put_contradiction(self, contradiction: chain.Contradiction) -> None:
        old = self._contradictions.get(contradiction.id)
        self._contradictions[contradiction.id] = contradiction
        _reindex(
            self._contradictions_by_belief,
            contradiction.id,
            old.belief_ids if old else (),
            contradiction.belief_ids,
        )

    def _put_binding(self, binding: chain.StoreBinding) -> None:
        key = (binding.store, binding.belief_id)
        old = self._bindings.get(key)
        if old is None:
            self._binding_order.setdefault(binding.store, []).append(binding.belief_id)
            self._bindings_by_belief.setdefault(binding.belief_id, set()).add(binding.store)
        elif (
            old.store_id is not None
            and old.store_id != binding.store_id
            and self._bindings_by_store_id.get((old.store, old.store_id)) == key
        ):
            del self._bindings_by_store_id[(old.store, old.store_id)]
        self._bindings[key] = binding
        if binding.store_id is not None:
            self._bindings_by_store_id[(binding.store, binding.store_id)] = key

    # -- the log --------------------------------------------------------------------------

    def head(self) -> tuple[int, str]:
        with self._lock:
            return self._head()

    def _set_seals(self, tags: Sequence[tuple[int, bytes]]) -> None:
        if type(self) is not MemoryStore:
            super()._set_seals(tags)  # a file log is not rewritten in place
        with self._lock:
            for seq, tag in tags:
                if self._events[seq - 1].tag is None:
                    self._events[seq - 1] = replace(self._events[seq - 1], tag=tag)

    def _head(self) -> tuple[int, str]:
        if not self._events:
            return 0, GENESIS_HASH
        last = self._events[-1]
        return last.seq, last.hash

    def events(self, after: int = 0, limit: int | None = None) -> Iterator[Event]:
        with self._lock:
            # seq n lives at index n - 1: the chain is gap-free by construction.
            chosen = self._events[max(after, 0) :]
            if limit is not None:
                chosen = chosen[: max(limit, 0)]
        return iter(chosen)

    def chain_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str]]:
        with self._lock:
            chosen = self._events[max(after, 0) :]
        return ((e.seq, e.body, e.prev_hash, e.hash) for e in chosen)

    def request_events(self, request_id: str) -> list[Event]:
        with self._lock:
            return list(self._by_request.get(request_id, ()))

    # -- projections ----------------------------------------------------------------------

    def get_session(self, session_id: str) -> chain.SessionInfo | None:
        with self._lock:
            return self._sessions.get(session_id)

    def get_observation(self, observation_id: str) -> chain.Observation | None:
        with self._lock:
            return self._observations.get(observation_id)

    def get_claim(self, claim_id: str) -> chain.Claim | None:
        with self._lock:
            return self._claims.get(claim_id)

    def get_evidence(self, claim_id: str) -> chain.EvidenceSet:
        with self._lock:
            items = list(self._evidence.get(claim_id, {}).values())
        return chain.EvidenceSet(claim_id=claim_id, items=items)

    def get_beliefs(self, belief_ids: Sequence[str]) -> dict[str, chain.Belief]:
        with self._lock:
            out: dict[str, chain.Belief] = {}
            for belief_id in belief_ids:
                row = self._beliefs.get(belief_id)
                if row is not None:
                    out[belief_id] = row.belief
            return out

    def find_beliefs(self, where: BeliefFilter) -> list[chain.Belief]:
        start = max(where.offset, 0)
        if where.text is None and not (where.subject and where.predicate and where.project):
            with self._lock:
                return self._newest(where, start, max(where.limit, 0))
        with self._lock:
            ranked = self._select(where)
        return [row.belief for row in ranked[start : start + max(where.limit, 0)]]

    def count_beliefs(self, where: BeliefFilter) -> int:
        with self._lock:
            return len(self._select(where, rank=False))

    def _newest(self, where: BeliefFilter, start: int, limit: int) -> list[chain.Belief]:
        """Walk beliefs newest first and stop once the page is full."""
        if limit == 0 or _empty_set_condition(where):
            return []
        if self._recent_sorted != len(self._recent):
            self._recent.sort()
            self._recent_sorted = len(self._recent)
        wanted = start + limit
        found: list[chain.Belief] = []
        for _, belief_id in self._recent:
            row = self._beliefs[belief_id]
            if belief_matches(row.belief, where, anchor=row.anchor, expires=row.expires):
                found.append(row.belief)
                if len(found) == wanted:
                    break
        return found[start:]

    def _select(self, where: BeliefFilter, *, rank: bool = True) -> list[_BeliefRow]:
        if _empty_set_condition(where):
            return []
        if where.text is not None:
            terms = [t for t in query_terms(where.text) if t in self._postings]
            candidates: Iterable[str] = {i for t in terms for i in self._postings[t]}
        elif where.subject is not None and where.predicate is not None and where.project:
            key = (where.project, where.subject, where.predicate)
            candidates = self._by_spo.get(key, set()) | self._global
        else:
            candidates = self._beliefs.keys()
        rows = [
            row
            for row in (self._beliefs[i] for i in candidates)
            if belief_matches(row.belief, where, anchor=row.anchor, expires=row.expires)
        ]
        if not rank:
            return rows
        if where.text is None:
            rows.sort(key=lambda r: r.belief.id)
            rows.sort(key=lambda r: r.observed, reverse=True)
            return rows
        scores = self._bm25(rows, terms)
        rows.sort(key=lambda r: (-scores[r.belief.id], r.belief.id))
        return rows

    def _bm25(self, rows: list[_BeliefRow], terms: list[str]) -> dict[str, float]:
        count = len(self._beliefs)
        avgdl = self._total_length / count if count else 0.0
        weights = [(t, bm25_idf(count, len(self._postings[t]))) for t in terms]
        scores: dict[str, float] = {}
        for row in rows:
            norm = K1 * (1 - B + B * row.length / avgdl) if avgdl else K1
            score = 0.0
            for term, idf in weights:
                freq = row.terms.get(term, 0)
                if freq:
                    score += idf * (freq * (K1 + 1.0)) / (freq + norm)
            scores[row.belief.id] = score
        return scores

    # -- belief history ---------------------------------------------------------------------

    def belief_history(self, belief_id: str) -> list[chain.Belief]:
        with self._lock:
            return [b for _, b in self._history.get(belief_id, ())]

    def _versions_held(
        self, where: BeliefFilter, since_us: int | None, until_us: int | None
    ) -> list[chain.Belief]:
        if _empty_set_condition(where):
            return []
        with self._lock:
            if where.text is not None:
                terms = [t for t in query_terms(where.text) if t in self._postings]
                ids: Iterable[str] = {i for t in terms for i in self._postings[t]}
            else:
                ids = self._history.keys()
            found: list[tuple[_BeliefRow, chain.Belief]] = []
            for belief_id in ids:
                versions = self._history.get(belief_id, ())
                for index, (start, version) in enumerate(versions):
                    end = versions[index + 1][0] if index + 1 < len(versions) else None
                    if until_us is not None and start > until_us:
                        continue
                    if since_us is not None and end is not None and max(end, start) <= since_us:
                        continue
                    staged = _stage_belief(version)
                    if belief_matches(version, where, anchor=staged.anchor, expires=staged.expires):
                        found.append((staged, version))
            if where.text is not None:
                scores = self._bm25([row for row, _ in found], terms)
                found.sort(key=lambda f: (-scores[f[1].id], f[1].id, -f[1].version))
            else:
                found.sort(key=lambda f: (-f[0].observed, f[1].id, -f[1].version))
        start = max(where.offset, 0)
        return [b for _, b in found[start : start + max(where.limit, 0)]]

    def get_decision(self, decision_id: str) -> chain.Decision | None:
        with self._lock:
            return self._decisions.get(decision_id)

    def get_action(self, action_id: str) -> chain.Action | None:
        with self._lock:
            return self._actions.get(action_id)

    def decisions_depending_on(self, belief_id: str) -> list[chain.Decision]:
        with self._lock:
            found = [self._decisions[i] for i in self._decision_deps.get(belief_id, ())]
        return sorted(found, key=lambda d: (micros(d.created_at), d.id))

    def revisions_for(self, belief_id: str) -> list[chain.Revision]:
        with self._lock:
            found = [self._revisions[i] for i in self._revisions_by_belief.get(belief_id, ())]
        return [r for _, _, r in sorted(found, key=lambda entry: entry[:2])]

    def revisions_by_grant(self, grant_id: str) -> list[chain.Revision]:
        with self._lock:
            found = [self._revisions[i] for i in self._revisions_by_grant.get(grant_id, ())]
        return [r for _, _, r in sorted(found, key=lambda entry: entry[:2])]

    def contradictions_for(self, belief_ids: Sequence[str]) -> list[chain.Contradiction]:
        with self._lock:
            ids = {c for b in belief_ids for c in self._contradictions_by_belief.get(b, ())}
            found = [self._contradictions[i] for i in ids]
        return sorted(found, key=lambda c: (micros(c.detected_at), c.id))

    # -- store bindings ---------------------------------------------------------------------

    def bindings_by_store_id(
        self, store: str, store_ids: Sequence[str]
    ) -> dict[str, chain.StoreBinding]:
        with self._lock:
            out: dict[str, chain.StoreBinding] = {}
            for store_id in store_ids:
                key = self._bindings_by_store_id.get((store, store_id))
                if key is not None:
                    out[store_id] = self._bindings[key]
            return out

    def bindings_for_beliefs(self, belief_ids: Sequence[str]) -> list[chain.StoreBinding]:
        with self._lock:
            found = [
                self._bindings[(store, belief_id)]
                for belief_id in dict.fromkeys(belief_ids)
                for store in self._bindings_by_belief.get(belief_id, ())
            ]
        return sorted(found, key=lambda b: (b.belief_id, b.store))

    def list_bindings(
        self, store: str, *, after: str | None = None, limit: int = 1000
    ) -> list[chain.StoreBinding]:
        with self._lock:
            order = self._binding_order.get(store, [])
            if self._binding_sorted.get(store) != len(order):
                order.sort()
                self._binding_sorted[store] = len(order)
            start = 0 if after is None else bisect.bisect_right(order, after)
            chosen = order[start : start + max(limit, 0)]
            return [self._bindings[(store, belief_id)] for belief_id in chosen]

    # -- lifecycle ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.url} is closed", hint="open a new store with firewall.open()")

    def close(self) -> None:
        self._closed = True


def _stage_belief(belief: chain.Belief) -> _BeliefRow:
    terms = Counter(index_tokens(belief.statement))
    return _BeliefRow(
        belief=belief,
        terms=terms,
        length=sum(terms.values()),
        anchor=micros(belief.last_verified_at or belief.observed_at),
        observed=micros(belief.observed_at),
        expires=micros(belief.expires_at) if belief.expires_at is not None else None,
    )


__all__ = ["MemoryStore", "belief_matches", "bm25_idf"]
