"""``why``: what the system believes (or believed) about something, and on what grounds.

:func:`why` resolves a query, in this order, to beliefs:

1. a **belief id** (``bel_…``);
2. a **subject**, optionally with a predicate: ``payments-api`` or ``payments-api/deploy_day``
   (the whole query is tried as a subject first, so subjects containing ``/`` still work);
3. a **topic**: a subject namespace. Topic ``payments`` is every belief whose subject starts with
   ``payments.``, ``payments/`` or ``payments:`` (one indexed prefix query per separator);
4. **full-text search** over statements (the same BM25 ranking recall uses).

The first step that finds anything wins; :attr:`WhyResult.resolved_by` says which. With ``at`` the
beliefs are the versions the system held at that moment (one indexed as-of query on the belief
history), with ``since``/``until`` every version held at some moment of the window.

For each belief it returns the version shown and the current one, the full history (each version
with the time range the system held it and the revisions that produced it: axis, from, to,
authority, reason, grant), the supersession chain with reasons, the contradicting beliefs, and the
supporting sources with their verbatim quote anchors.

Two kinds of time are kept apart: ``valid_from``/``valid_to`` are what the *source* says about
when the fact holds; ``recorded_from``/``recorded_until`` are when the *system* held a version.

``verified_against_source`` is recomputed on every call by hashing the quote against the source as
it is now: the observation block stored in Gnomon, and, when the observation's arguments name a
``path`` that exists, the file itself (see :func:`check_sources`). A stored block edited after the
fact, or a file that no longer contains the quote, shows up as drift.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from gnomon.firewall.audit.erasure import is_erased_text
from gnomon.firewall.model.chain import Belief, Contradiction, Observation, Revision
from gnomon.firewall.model.content import block_hash
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import Axis, TruthStatus
from gnomon.firewall.store.base import Store

#: Separators that make a subject part of a topic: ``payments.api``, ``payments/db``, ``pay:x``.
TOPIC_SEPARATORS = (".", "/", ":")
MAX_CHAIN = 50
#: Files larger than this are not re-read by the external-source hook.
MAX_SOURCE_FILE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class VersionView:
    """One version of a belief and the time range the system held it."""

    belief: Belief
    recorded_from: datetime
    recorded_until: datetime | None
    changed: tuple[str, ...]
    revisions: tuple[Revision, ...]


@dataclass(frozen=True, slots=True)
class SupersessionLink:
    old_id: str
    new_id: str
    reason: str | None
    authority: str | None
    grant_id: str | None
    at: datetime | None


@dataclass(frozen=True, slots=True)
class ContradictionInfo:
    contradiction: Contradiction
    others: tuple[Belief, ...]


@dataclass(frozen=True, slots=True)
class SourceCheck:
    """One supporting (or contradicting) source of a belief, re-checked now.

    ``verified_against_source`` is ``True`` when the quote hashes to the source as it is now,
    ``False`` on drift, ``None`` when there is no quote anchor to check (an agent's own
    statement, an import) or the external source is unavailable.
    """

    evidence_id: str
    source: str
    relation: str
    quality: str
    observation_id: str | None
    block_index: int | None
    quote: str | None
    recorded_hash: str | None
    current_hash: str | None
    verified_against_source: bool | None
    detail: str
    path: str | None = None
    path_verified: bool | None = None


@dataclass(frozen=True, slots=True)
class BeliefWhy:
    belief: Belief
    current: Belief | None
    history: tuple[VersionView, ...]
    supersession: tuple[SupersessionLink, ...]
    contradictions: tuple[ContradictionInfo, ...]
    sources: tuple[SourceCheck, ...]

    @property
    def verified_against_source(self) -> bool | None:
        checked = [s.verified_against_source for s in self.sources]
        if any(v is False for v in checked):
            return False
        return True if any(v is True for v in checked) else None


@dataclass(frozen=True, slots=True)
class WhyResult:
    query: str
    resolved_by: str | None
    at: datetime | None
    since: datetime | None
    until: datetime | None
    entries: tuple[BeliefWhy, ...] = field(default=())


# -- resolution --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """When a question asks about: one moment (``at``), a span (``since``/``until``), or now."""

    at: datetime | None = None
    since: datetime | None = None
    until: datetime | None = None

    def find(self, store: Store, where: BeliefFilter) -> list[Belief]:
        """The beliefs ``where`` selects as they stood then (the latest version in a span)."""
        if self.at is not None:
            return store.find_beliefs_as_of(where, self.at)
        if self.since is not None or self.until is not None:
            versions = store.find_belief_versions(where, since=self.since, until=self.until)
            return _latest_per_id(versions)
        return store.find_beliefs(where)

    def by_id(self, store: Store, query: str) -> Belief | None:
        """The belief whose id is ``query``, as it stood then."""
        if " " in query:
            return None
        at, since, until = self.at, self.since, self.until
        if at is None and since is None and until is None:
            return store.get_belief(query)
        held = [
            v
            for v in history_of(store, query)
            if _overlaps(v, since if at is None else at, until if at is None else at)
        ]
        return held[-1].belief if held else None


def resolve(
    store: Store, query: str, window: Window = Window(), limit: int = 20
) -> tuple[str | None, list[Belief]]:
    """``(how, beliefs)``: the first of id, subject, topic, text that finds anything."""
    query = query.strip()
    if not query:
        return None, []
    find = functools.partial(window.find, store)
    by_id = window.by_id(store, query)
    if by_id is not None:
        return "id", [by_id]
    found = find(BeliefFilter(subject=query, limit=limit))
    if not found and "/" in query:
        subject, predicate = query.rsplit("/", 1)
        if subject and predicate:
            found = find(BeliefFilter(subject=subject, predicate=predicate, limit=limit))
    if found:
        return "subject", found
    topic: dict[str, Belief] = {}
    for sep in TOPIC_SEPARATORS:
        for b in find(BeliefFilter(subject_prefix=query + sep, limit=limit)):
            topic.setdefault(b.id, b)
    if topic:
        return "topic", list(topic.values())[:limit]
    found = find(BeliefFilter(text=query, limit=limit))
    return ("text", found) if found else (None, [])


def _latest_per_id(versions: Sequence[Belief]) -> list[Belief]:
    out: dict[str, Belief] = {}
    for b in versions:
        kept = out.get(b.id)
        if kept is None or b.version > kept.version:
            out[b.id] = b
    return list(out.values())


def _overlaps(v: VersionView, start: datetime | None, end: datetime | None) -> bool:
    """Was ``v`` held at some moment of ``[start, end]``? (``start == end``: at that moment)."""
    if end is not None and v.recorded_from > end:
        return False
    if start is None or v.recorded_until is None:
        return True
    return v.recorded_until > start


# -- history -----------------------------------------------------------------------------------

_TRACKED = (
    "truth_status",
    "retrieval_status",
    "security_status",
    "freshness_status",
    "last_verified_at",
    "expires_at",
    "superseded_by",
    "supersedes",
    "valid_from",
    "valid_to",
    "contradicts",
    "confidence",
    "sensitivity",
)


def history_of(store: Store, belief_id: str) -> list[VersionView]:
    """Every recorded version, oldest first, each with the revisions that produced it.

    A version is held from its ``updated_at`` until the next version's ``updated_at``; a
    revision belongs to the last version recorded at or before its ``created_at``.
    """
    versions = store.belief_history(belief_id)
    if not versions:
        return []
    revisions = store.revisions_for(belief_id)
    views: list[VersionView] = []
    for index, version in enumerate(versions):
        start = version.updated_at
        end = versions[index + 1].updated_at if index + 1 < len(versions) else None
        prev = versions[index - 1] if index else None
        changed = (
            ("created",)
            if prev is None
            else tuple(f for f in _TRACKED if getattr(prev, f) != getattr(version, f))
        )
        mine = tuple(
            r
            for r in revisions
            if r.created_at >= start and (end is None or r.created_at < end) and prev is not None
        )
        views.append(VersionView(version, start, end, changed, mine))
    return views


def supersession_chain(store: Store, belief: Belief) -> list[SupersessionLink]:
    """Every supersession link reachable from ``belief``, oldest first, each with its reason."""
    seen = {belief.id}
    back = [
        (older_id, newer.id)
        for newer, older_id in _follow(store, belief, lambda b: b.supersedes, seen)
    ]
    current = store.get_belief(belief.id) or belief
    forward = [
        (older.id, newer_id)
        for older, newer_id in _follow(store, current, lambda b: b.superseded_by, seen)
    ]
    return [_link(store, old, new) for old, new in [*reversed(back), *forward]]


def _follow(
    store: Store, start: Belief, link: Callable[[Belief], str | None], seen: set[str]
) -> list[tuple[Belief, str]]:
    """Follow ``link`` from ``start`` while it names a belief not in ``seen`` (adding each, up
    to :data:`MAX_CHAIN` in ``seen``): every step as ``(belief, the id it links to)``."""
    steps: list[tuple[Belief, str]] = []
    cursor = start
    while (target := link(cursor)) and target not in seen and len(seen) < MAX_CHAIN:
        steps.append((cursor, target))
        seen.add(target)
        following = store.get_belief(target)
        if following is None:
            break
        cursor = following
    return steps


def _link(store: Store, old: str, new: str) -> SupersessionLink:
    for r in store.revisions_for(old):
        if r.axis == Axis.TRUTH and r.to_state == TruthStatus.SUPERSEDED:
            return SupersessionLink(old, new, r.reason, r.authority.value, r.grant_id, r.created_at)
    return SupersessionLink(old, new, None, None, None, None)


def contradicting(store: Store, belief: Belief) -> list[ContradictionInfo]:
    records = store.contradictions_for([belief.id])
    members = store.get_beliefs(sorted({i for c in records for i in c.belief_ids} - {belief.id}))
    return [
        ContradictionInfo(c, tuple(members[i] for i in c.belief_ids if i in members))
        for c in records
    ]


# -- sources -----------------------------------------------------------------------------------


def check_sources(store: Store, belief: Belief) -> list[SourceCheck]:
    """Re-check every evidence item of the belief's claim against its source as it is now.

    * ``obs_…#i`` (a content block): the quote (the belief's statement, which is the block
      verbatim) is hashed and compared with the stored block as it is now; the hash recorded at
      observation time is reported next to it. If the observation's arguments name a ``path``
      that exists, the file is re-read and must still contain the quote (``path_verified``).
    * ``obs_…`` (a whole observation: a tool envelope, a corroboration): every stored block must
      still hash to its recorded hash.
    * anything else (an agent's statement, an import): no anchor to check (``None``).
    """
    out: list[SourceCheck] = []
    cache: dict[str, Observation | None] = {}
    for item in store.get_evidence(belief.claim_id).items:
        obs_id, _, index_text = item.source.partition("#")
        base: dict[str, Any] = {
            "evidence_id": item.id,
            "source": item.source,
            "relation": item.relation.value,
            "quality": item.quality.value,
        }
        if not obs_id.startswith("obs_"):
            out.append(_unanchored(base, None, "no quote anchor: the source is not an observation"))
            continue
        if obs_id not in cache:
            cache[obs_id] = store.get_observation(obs_id)
        observation = cache[obs_id]
        if observation is None:
            out.append(
                _unanchored(base, False, f"observation {obs_id} is missing from the store", obs_id)
            )
            continue
        if index_text.isdigit():
            out.append(_check_block(belief, observation, int(index_text), base))
        else:
            out.append(_check_observation(observation, base))
    return out


def _check_block(
    belief: Belief, observation: Observation, index: int, base: dict[str, Any]
) -> SourceCheck:
    anchor = dict(base, observation_id=observation.id, block_index=index, quote=belief.statement)
    if index >= len(observation.blocks) or index >= len(observation.block_hashes):
        return SourceCheck(
            **anchor,
            recorded_hash=None,
            current_hash=None,
            verified_against_source=False,
            detail=f"block {index} is missing from observation {observation.id}",
        )
    if is_erased_text(observation.blocks[index]) or is_erased_text(belief.statement):
        erased = (
            observation.blocks[index]
            if is_erased_text(observation.blocks[index])
            else belief.statement
        )
        return SourceCheck(
            **anchor,
            recorded_hash=None,
            current_hash=None,
            verified_against_source=None,
            detail=f"{erased.strip('[]')}: the text and its hash are gone, nothing to check",
        )
    recorded = observation.block_hashes[index]
    current = block_hash(observation.blocks[index])
    quoted = block_hash(belief.statement)
    problems = []
    if quoted != current:
        problems.append("the quote no longer hashes to the stored block")
    if current != recorded:
        problems.append("the stored block changed since it was recorded")
    path, path_ok, path_note = _check_file(observation, belief.statement)
    if path_ok is False:
        problems.append(path_note)
    ok = not problems
    detail = "; ".join(problems) if problems else "quote matches the source block"
    if path_ok is None and path_note:
        detail += f" ({path_note})"
    elif path_ok:
        detail += f"; {path_note}"
    return SourceCheck(
        **anchor,
        recorded_hash=recorded,
        current_hash=current,
        verified_against_source=ok,
        detail=detail,
        path=path,
        path_verified=path_ok,
    )


def _check_observation(observation: Observation, base: dict[str, Any]) -> SourceCheck:
    erased = next((b for b in observation.blocks if is_erased_text(b)), None)
    if erased is not None:
        detail = f"{erased.strip('[]')}: the text and its hash are gone, nothing to check"
        return _unanchored(base, None, detail, observation.id)
    changed = [
        i
        for i, (text, recorded) in enumerate(
            zip(observation.blocks, observation.block_hashes, strict=False)
        )
        if block_hash(text) != recorded
    ]
    ok = not changed and len(observation.blocks) == len(observation.block_hashes)
    detail = (
        "every stored block matches its recorded hash"
        if ok
        else f"stored blocks changed since recorded: {changed}"
    )
    return _unanchored(base, ok, detail, observation.id)


def _unanchored(
    base: dict[str, Any], verified: bool | None, detail: str, observation_id: str | None = None
) -> SourceCheck:
    """A check with no block to compare: the source is no observation, a missing one, or a
    whole observation."""
    return SourceCheck(
        **base,
        **_NO_BLOCK,
        observation_id=observation_id,
        verified_against_source=verified,
        detail=detail,
    )


#: The block fields of a check that has no block to compare.
_NO_BLOCK: dict[str, Any] = {
    "block_index": None,
    "quote": None,
    "recorded_hash": None,
    "current_hash": None,
}


def _check_file(observation: Observation, quote: str) -> tuple[str | None, bool | None, str]:
    """The external-source hook: re-read ``args["path"]`` if it names an existing file."""
    path = observation.args.get("path")
    if not isinstance(path, str) or not path:
        return None, None, ""
    location = Path(path)
    try:
        if not location.is_file():
            return path, None, f"source file {path} is not available here"
        if location.stat().st_size > MAX_SOURCE_FILE_BYTES:
            return path, None, f"source file {path} is too large to re-read"
        text = location.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return path, None, f"source file {path} cannot be read: {exc.strerror or exc}"
    if quote in text:
        return path, True, f"source file {path} still contains the quote"
    return path, False, f"source file {path} no longer contains the quote"


# -- the whole answer --------------------------------------------------------------------------


def explain(
    store: Store, belief: Belief, *, since: datetime | None = None, until: datetime | None = None
) -> BeliefWhy:
    current = store.get_belief(belief.id)
    history = history_of(store, belief.id)
    if since is not None or until is not None:
        history = [v for v in history if _overlaps(v, since, until)]
    return BeliefWhy(
        belief=belief,
        current=current,
        history=tuple(history),
        supersession=tuple(supersession_chain(store, belief)),
        contradictions=tuple(contradicting(store, belief)),
        sources=tuple(check_sources(store, current or belief)),
    )


def why(
    store: Store,
    query: str,
    *,
    at: datetime | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 20,
) -> WhyResult:
    """Resolve ``query`` (id, subject, topic, text) and explain every belief it finds.

    >>> from gnomon import firewall
    >>> wall = firewall.open("memory://")
    >>> with wall.session(project="shop", actor="coder", user="alice") as s:
    ...     fact = s.observe(tool="chat", content="We deploy on Fridays",
    ...                      origin=wall.channel(firewall.Origin.user("alice"), project="shop"),
    ...                      subject="deploy",
    ...                      predicate="day").content[0]
    >>> found = why(wall.store, "deploy/day")
    >>> found.resolved_by, found.entries[0].belief.id == fact.id
    ('subject', True)
    >>> found.entries[0].verified_against_source
    True
    """
    how, beliefs = resolve(store, query, Window(at, since, until), limit)
    return WhyResult(
        query=query,
        resolved_by=how,
        at=at,
        since=since,
        until=until,
        entries=tuple(explain(store, b, since=since, until=until) for b in beliefs),
    )


# -- JSON --------------------------------------------------------------------------------------


def _t(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def belief_brief(b: Belief) -> dict[str, Any]:
    return {
        "id": b.id,
        "version": b.version,
        "statement": b.statement,
        "subject": b.subject,
        "predicate": b.predicate,
        "truth": b.truth_status.value,
        "retrieval": b.retrieval_status.value,
        "security": b.security_status.value,
        "freshness": b.freshness_status.value,
        "sensitivity": b.sensitivity.value,
        "authority": b.authority.value,
        "origin": b.origin.json_dict(),
        "observed_at": _t(b.observed_at),
        "last_verified_at": _t(b.last_verified_at),
        "expires_at": _t(b.expires_at),
        "valid_from": _t(b.valid_from),
        "valid_to": _t(b.valid_to),
        "recorded_at": _t(b.updated_at),
        "superseded_by": b.superseded_by,
        "supersedes": b.supersedes,
    }


def revision_json(r: Revision) -> dict[str, Any]:
    return {
        "id": r.id,
        "axis": r.axis.value if r.axis else None,
        "from": r.from_state,
        "to": r.to_state,
        "authority": r.authority.value,
        "reason": r.reason,
        "grant": r.grant_id,
        "at": _t(r.created_at),
    }


def version_json(v: VersionView) -> dict[str, Any]:
    return {
        "version": v.belief.version,
        "recorded_from": _t(v.recorded_from),
        "recorded_until": _t(v.recorded_until),
        "changed": list(v.changed),
        "state": {
            "truth": v.belief.truth_status.value,
            "retrieval": v.belief.retrieval_status.value,
            "security": v.belief.security_status.value,
            "freshness": v.belief.freshness_status.value,
        },
        "revisions": [revision_json(r) for r in v.revisions],
    }


def source_json(s: SourceCheck) -> dict[str, Any]:
    """Every field of the check, in declared order."""
    return {f.name: getattr(s, f.name) for f in fields(s)}


def why_json(result: WhyResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "resolved_by": result.resolved_by,
        "at": _t(result.at),
        "since": _t(result.since),
        "until": _t(result.until),
        "beliefs": [
            {
                "belief": belief_brief(e.belief),
                "current": belief_brief(e.current) if e.current else None,
                "verified_against_source": e.verified_against_source,
                "history": [version_json(v) for v in e.history],
                "supersession": [
                    {
                        "old": link.old_id,
                        "new": link.new_id,
                        "reason": link.reason,
                        "authority": link.authority,
                        "grant": link.grant_id,
                        "at": _t(link.at),
                    }
                    for link in e.supersession
                ],
                "contradictions": [
                    {
                        "id": c.contradiction.id,
                        "reason": c.contradiction.reason,
                        "detected_at": _t(c.contradiction.detected_at),
                        "others": [belief_brief(o) for o in c.others],
                    }
                    for c in e.contradictions
                ],
                "sources": [source_json(s) for s in e.sources],
            }
            for e in result.entries
        ],
    }


__all__ = [
    "TOPIC_SEPARATORS",
    "BeliefWhy",
    "ContradictionInfo",
    "SourceCheck",
    "SupersessionLink",
    "VersionView",
    "WhyResult",
    "Window",
    "check_sources",
    "contradicting",
    "explain",
    "history_of",
    "resolve",
    "supersession_chain",
    "why",
    "why_json",
]
