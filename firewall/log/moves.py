"""The compact move batch: one chained event moving many beliefs (event schema 3).

Bulk freshness decay and an origin's quarantine fan-out move up to millions of beliefs with one
authority, one time and a handful of reasons. Schema 1 wrote every moved belief in full plus one
full revision per axis; a move batch writes **one** event whose payload holds, under ``moves``:

* ``at``: when every move was made; ``authority``: who made them; ``related``: the ids every
  revision relates to (an alert); ``reasons``: the distinct reasons, each written once;
* ``rows``: one compact entry per belief,
  ``[belief_id, version, reason_index, [[revision_id, axis, from, to], ...]]``, ``version`` being
  the version the move produces (the previous one plus one).

Nothing is restated: each belief's new version is the version the log already holds with the
named axes moved (:func:`apply_move`), and each revision document is derived from its entry
(:func:`expand_moves`). Applying a move re-checks it at every reader, not only at write time:
the previous version must be exactly ``version - 1`` in exactly the ``from`` states, the
transition must be in the gate's table for the batch's authority, a batch never promotes (no
move to ``supported`` or ``normal``) nor names an authority that needs a grant (``user``,
``probe``), and the result must keep the cross-axis invariants. A
forged or replayed batch fails those checks and is refused as a whole.

>>> from datetime import UTC, datetime
>>> from gnomon.firewall.gate.gate import Move
>>> from gnomon.firewall.model.states import Authority, Axis, FreshnessStatus
>>> batch = MoveBatch(Authority.SYSTEM, datetime(2025, 1, 1, tzinfo=UTC))
>>> batch.add("bel_1", 1, {Axis.FRESHNESS: "fresh"}, [Move(Axis.FRESHNESS, FreshnessStatus.STALE)],
...     reason="not verified or observed within P30D")
True
>>> moves, revisions = expand_moves(batch.payload())
>>> moves[0].version, moves[0].changes, revisions[0]["to_state"]
(2, ((<Axis.FRESHNESS: 'freshness'>, 'fresh', 'stale'),), 'stale')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gnomon.firewall.log.events import MOVES, Records
from gnomon.firewall.model.errors import GateError, TerminalStateError, TransitionRefused
from gnomon.firewall.model.ids import new_ids
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    FreshnessStatus,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)

if TYPE_CHECKING:
    from gnomon.firewall.gate.gate import Move
    from gnomon.firewall.model.chain import Belief


#: Each axis's states, to parse a row's ``from`` and ``to``.
STATES: dict[Axis, type[Any]] = {
    Axis.TRUTH: TruthStatus,
    Axis.RETRIEVAL: RetrievalStatus,
    Axis.SECURITY: SecurityStatus,
    Axis.FRESHNESS: FreshnessStatus,
}
#: Moves a batch may never make: they raise trust and need a grant or evidence, one at a time.
PROMOTIONS = frozenset(
    {(Axis.TRUTH, TruthStatus.SUPPORTED), (Axis.RETRIEVAL, RetrievalStatus.NORMAL)}
)

#: Authorities that move a belief only on a grant: a batch (which carries no grant) never has one.
GRANTED = frozenset({Authority.USER, Authority.PROBE})


@dataclass(frozen=True, slots=True)
class BeliefMove:
    """One belief's moves inside a batch: what it must be before, what it becomes."""

    belief_id: str
    #: The version this move produces (the previous version plus one).
    version: int
    #: ``(axis, from, to)`` for each axis moved.
    changes: tuple[tuple[Axis, str, str], ...]
    authority: Authority
    at: datetime


def check_change(axis: Axis, before: str, after: str, authority: Authority) -> None:
    """Raise the gate's error if ``authority`` may not move ``axis`` from ``before`` to
    ``after`` in a batch (the gate's table, terminal states, and never a promotion)."""
    from gnomon.firewall.gate.gate import TERMINAL, TRANSITIONS

    if (axis, after) in PROMOTIONS:
        raise GateError(
            f"a move batch cannot move {axis.value} to {after}: promotion needs a grant or "
            "corroborating evidence, one belief at a time",
            hint="promote with Session.corroborate or a user grant",
        )
    if authority in GRANTED:
        raise GateError(
            f"a move batch cannot be made with {authority.value} authority: that authority "
            "moves a belief only on a grant, and a batch carries none",
            hint="make the move through the gate with the grant, one belief at a time",
        )
    if before in TERMINAL[axis]:
        raise TerminalStateError(
            f"{axis.value} {before} is a terminal state; it cannot move to {after}",
            hint="record a new belief instead; terminal states keep the old one for audit",
        )
    allowed = TRANSITIONS[axis].get((before, after))
    if not allowed or authority not in allowed:
        raise TransitionRefused(
            axis=axis.value,
            from_state=before,
            to_state=after,
            authority=authority.value,
            allowed=allowed,
            belief_id=None,
        )


class MoveBatch:
    """Moves of many beliefs by one authority at one time, built without a typed record.

    :meth:`add` checks each move against the gate's table as it is added; :meth:`payload` is
    the compact form the event carries, :meth:`records` the typed revisions and moves (for
    stores that derive the new versions in Python).
    """

    def __init__(self, authority: Authority, now: datetime, *, related: Sequence[str] = ()) -> None:
        from gnomon.firewall.log.batch import _time_text

        self.authority = authority
        self.now = now
        self.now_text = _time_text(now)
        self.related = list(related)
        self.reasons: dict[str, int] = {}
        #: ``(belief_id, version, reason_index, ((revision_id, axis, from, to), ...))``
        self.rows: list[tuple[str, int, int, tuple[tuple[str, Axis, str, str], ...]]] = []
        self._records: Records | None = None
        self._ids: list[str] = []

    @classmethod
    def from_payload(cls, moves: Mapping[str, Any]) -> MoveBatch:
        """The batch a sealed payload carries (:meth:`payload`'s inverse), every row checked
        as :func:`expand_moves` checks it and every transition against the gate's table.
        Raises ``ValueError``/``KeyError``/``TypeError`` on a malformed batch, the gate's error
        on a refused move."""
        header = _header(moves)
        batch = cls(header.authority, header.at, related=header.related)
        batch.now_text = header.at_text
        batch.reasons = {r: i for i, r in enumerate(header.reasons)}
        for row in header.rows:
            move, _ = _expand_row(row, header)
            batch.rows.append(
                (
                    move.belief_id,
                    move.version,
                    row[2],
                    tuple(
                        (rev, axis, before, after)
                        for (rev, *_), (axis, before, after) in zip(
                            row[3], move.changes, strict=True
                        )
                    ),
                )
            )
            for axis, before, after in move.changes:
                check_change(axis, before, after, batch.authority)
        check_each_once([r[0] for r in batch.rows])
        return batch

    def add(
        self,
        belief_id: str,
        version: int,
        current: Mapping[Axis, str],
        moves: Iterable[Move],
        *,
        reason: str,
    ) -> bool:
        """Add the moves of one belief now at ``version`` in the ``current`` states of the axes
        moved (quarantine and malicious add their retrieval move, as the gate couples them).
        Returns False if nothing moves; raises the gate's error for a move it refuses."""
        return self.add_planned(belief_id, version, self.plan(current, moves), reason=reason)

    def add_planned(
        self,
        belief_id: str,
        version: int,
        plan: tuple[tuple[Axis, str, str], ...],
        *,
        reason: str,
    ) -> bool:
        """:meth:`add` with the changes :meth:`plan` gave for the belief's states (a bulk
        move plans once per distinct state and reuses it: no per-belief gate lookup)."""
        if not plan:
            return False
        index = self.reasons.setdefault(reason, len(self.reasons))
        rev_id = self._rev_id
        self.rows.append((belief_id, version + 1, index, tuple([(rev_id(), *c) for c in plan])))
        self._records = None
        return True

    def plan(
        self, current: Mapping[Axis, str], moves: Iterable[Move]
    ) -> tuple[tuple[Axis, str, str], ...]:
        """The ``(axis, from, to)`` changes ``moves`` make from the ``current`` states, the
        gate's coupled moves added and each transition checked against the gate's table for
        this batch's authority (raises the gate's error for one it refuses)."""
        from gnomon.firewall.gate.gate import coupled_moves

        changes: list[tuple[Axis, str, str]] = []
        for move in coupled_moves(moves):
            before = str(current[move.axis])
            after = str(move.to_state)
            if before == after:
                continue
            check_change(move.axis, before, after, self.authority)
            changes.append((move.axis, before, after))
        return tuple(changes)

    def _rev_id(self) -> str:
        """A fresh revision id, drawn in blocks (one clock read and one ``os.urandom`` call
        per block, :func:`~firewall.model.ids.new_ids`)."""
        if not self._ids:
            self._ids = new_ids("rev", 1024)
            self._ids.reverse()
        return self._ids.pop()

    def __len__(self) -> int:
        return len(self.rows)

    def payload(self) -> dict[str, Any]:
        """The compact form the event carries under :data:`MOVES`."""
        return {
            "at": self.now_text,
            "authority": self.authority.value,
            "related": list(self.related),
            "reasons": list(self.reasons),
            "rows": [
                [
                    b,
                    v,
                    r,
                    [[rev, axis._value_, before, after] for rev, axis, before, after in changes],
                ]
                for b, v, r, changes in self.rows
            ],
        }

    def _move(
        self, row: tuple[str, int, int, tuple[tuple[str, Axis, str, str], ...]]
    ) -> BeliefMove:
        belief_id, version, _, changes = row
        return BeliefMove(
            belief_id,
            version,
            tuple((axis, before, after) for _, axis, before, after in changes),
            self.authority,
            self.now,
        )

    def moves(self) -> tuple[BeliefMove, ...]:
        """Each belief's move, as a reader of the payload derives it."""
        return tuple(self._move(r) for r in self.rows)

    def records(self) -> Records:
        """The typed revisions and moves (built once, for stores without a fast path)."""
        from gnomon.firewall.model.chain import Revision

        if self._records is None:
            reasons = list(self.reasons)
            revisions = [
                Revision(
                    id=rev,
                    belief_id=belief_id,
                    axis=axis,
                    from_state=before,
                    to_state=after,
                    authority=self.authority,
                    reason=reasons[index],
                    related_ids=list(self.related),
                    created_at=self.now,
                )
                for belief_id, _, index, changes in self.rows
                for rev, axis, before, after in changes
            ]
            self._records = Records(revisions=tuple(revisions), moves=self.moves())
        return self._records


@dataclass(frozen=True, slots=True)
class _Header:
    """What every row of a batch payload shares, checked."""

    at: datetime
    at_text: str
    authority: Authority
    related: list[str]
    reasons: list[str]
    rows: list[Any]


def _header(moves: Mapping[str, Any]) -> _Header:
    if not isinstance(moves, Mapping):
        raise ValueError("a move batch must be an object")
    at_text, authority_text = moves["at"], moves["authority"]
    related, reasons, rows = moves["related"], moves["reasons"], moves["rows"]
    if not isinstance(at_text, str) or not isinstance(authority_text, str):
        raise ValueError("a move batch's at and authority are text")
    if not isinstance(related, list) or not all(isinstance(i, str) for i in related):
        raise ValueError("a move batch's related ids are a list of text")
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise ValueError("a move batch's reasons are a list of text")
    if not isinstance(rows, list):
        raise ValueError("a move batch's rows are a list")
    at = datetime.fromisoformat(at_text)
    if at.tzinfo is None:
        raise ValueError("a move batch's time must carry its offset")
    return _Header(at, at_text, Authority(authority_text), related, reasons, rows)


def _expand_row(row: Any, header: _Header) -> tuple[BeliefMove, list[dict[str, Any]]]:
    """One row of a batch payload: the move and the revision documents it records."""
    belief_id, version, index, changes = row
    if type(belief_id) is not str or type(version) is not int or version < 2:
        raise ValueError(f"a move row needs a belief id and a version above 1, got {row!r}")
    if type(index) is not int or not 0 <= index < len(header.reasons):
        raise ValueError(f"a move row's reason index is out of range: {row!r}")
    if not isinstance(changes, list) or not changes:
        raise ValueError(f"a move row moves at least one axis: {row!r}")
    parsed: list[tuple[Axis, str, str]] = []
    docs: list[dict[str, Any]] = []
    for rev, axis_text, before, after in changes:
        axis = Axis(axis_text)
        states = STATES[axis]
        before, after = str(states(before)), str(states(after))
        if type(rev) is not str or axis in {a for a, _, _ in parsed}:
            raise ValueError(f"a move row names each axis once, with a revision id: {row!r}")
        parsed.append((axis, before, after))
        docs.append(
            revision_doc(
                rev,
                belief_id,
                axis,
                before,
                after,
                header.authority,
                header.reasons[index],
                header.related,
                header.at_text,
            )
        )
    return BeliefMove(belief_id, version, tuple(parsed), header.authority, header.at), docs


def expand_moves(moves: Mapping[str, Any]) -> tuple[list[BeliefMove], list[dict[str, Any]]]:
    """The moves of a batch payload and the revision documents they record.

    Raises ``ValueError``/``KeyError``/``TypeError`` on a malformed batch (readers turn that
    into a log integrity error); the revision documents are validated as records by whoever
    reads them, each move's transition by :func:`apply_move`.
    """
    header = _header(moves)
    out: list[BeliefMove] = []
    docs: list[dict[str, Any]] = []
    for row in header.rows:
        move, revisions = _expand_row(row, header)
        out.append(move)
        docs.extend(revisions)
    check_each_once([m.belief_id for m in out])
    return out, docs


def check_each_once(belief_ids: Sequence[str]) -> None:
    """Raise ``ValueError`` if a batch names a belief more than once: a batch moves each
    belief once (every writer builds it so), and a store that applies it in one set-based pass
    (SQLite) could not apply two moves of one belief in order."""
    if len(set(belief_ids)) != len(belief_ids):
        raise ValueError("a move batch names a belief more than once; it moves each belief once")


def row_revisions(
    moves: Mapping[str, Any], index: int, belief_id: str, version: int
) -> list[dict[str, Any]]:
    """The revision documents of row ``index`` of a batch payload, which must be the move of
    ``belief_id`` to ``version``, each transition re-checked against the gate's table (what a
    store that keeps no revision row of its own derives on read). Raises ``ValueError`` when
    the row is another belief's or version's, the gate's error for a refused move, and
    ``ValueError``/``KeyError``/``TypeError``/``IndexError`` on a malformed batch."""
    header = _header(moves)
    if type(index) is not int or index < 0:
        raise ValueError(f"no row {index!r} in a move batch")
    move, docs = _expand_row(header.rows[index], header)
    if move.belief_id != belief_id or move.version != version:
        raise ValueError(
            f"row {index} moves belief {move.belief_id} to version {move.version}, "
            f"not {belief_id} to version {version}"
        )
    for axis, before, after in move.changes:
        check_change(axis, before, after, move.authority)
    return docs


def revision_doc(
    rev: str,
    belief_id: str,
    axis: Axis,
    before: str,
    after: str,
    authority: Authority,
    reason: str,
    related: Sequence[str],
    at_text: str,
) -> dict[str, Any]:
    """The document of the revision one move of a batch records (what a reader derives from the
    payload, and what a store writing the move without a typed record stores)."""
    return {
        "id": rev,
        "belief_id": belief_id,
        "axis": axis.value,
        "from_state": before,
        "to_state": after,
        "authority": authority.value,
        "reason": reason,
        "grant_id": None,
        "related_ids": list(related),
        "created_at": at_text,
    }


def apply_move(before: Belief, move: BeliefMove) -> Belief:
    """The version ``move`` makes of ``before``, re-checked (see the module docstring).

    Raises ``ValueError`` if ``before`` is not the version and states the move starts from, and
    the gate's error if the move is not one the batch's authority may make.
    """
    from gnomon.firewall.gate.gate import check_invariants

    if before.id != move.belief_id or before.version + 1 != move.version:
        raise ValueError(
            f"move of belief {move.belief_id} to version {move.version} does not continue "
            f"its version {before.version}"
        )
    for axis, start, end in move.changes:
        if before.status(axis) != start:
            raise ValueError(
                f"move of belief {move.belief_id} starts {axis.value} at {start}, but the belief "
                f"is {before.status(axis)}"
            )
        check_change(axis, start, end, move.authority)
    after = _moved(before, move)
    check_invariants(after)
    return after


def _moved(before: Belief, move: BeliefMove) -> Belief:
    update: dict[str, object] = {
        f"{axis.value}_status": STATES[axis](end) for axis, _, end in move.changes
    }
    update["version"] = move.version
    update["updated_at"] = move.at
    return before.model_copy(update=update)


def resolve_moves(
    records: Sequence[Records], load: Callable[[list[str]], Mapping[str, Belief]]
) -> list[Records]:
    """``records`` with each move turned into the belief version it makes, in order.

    For stores that derive projections from typed records: a move applies to the latest
    version, whether an earlier record of the same call wrote it or ``load`` (the store's
    current beliefs) holds it. A move of an unknown belief is a ``ValueError``.
    """
    latest: dict[str, Belief] = {}
    out: list[Records] = []
    for rec in records:
        if not rec.moves:
            latest.update((b.id, b) for b in rec.beliefs)
            out.append(rec)
            continue
        latest.update((b.id, b) for b in rec.beliefs)
        check_each_once([m.belief_id for m in rec.moves])
        missing = [m.belief_id for m in rec.moves if m.belief_id not in latest]
        if missing:
            latest.update(load(missing))
        moved: list[Belief] = []
        for move in rec.moves:
            before = latest.get(move.belief_id)
            if before is None:
                raise ValueError(f"move of belief {move.belief_id}, which the log never wrote")
            after = apply_move(before, move)
            latest[after.id] = after
            moved.append(after)
        out.append(replace(rec, beliefs=(*rec.beliefs, *moved), moves=()))
    return out


__all__ = [
    "GRANTED",
    "MOVES",
    "BeliefMove",
    "MoveBatch",
    "apply_move",
    "check_change",
    "check_each_once",
    "expand_moves",
    "resolve_moves",
    "revision_doc",
    "row_revisions",
]
