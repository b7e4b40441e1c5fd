"""The :class:`~firewall.store.base.Store` methods both SQL backends answer the same way.

:class:`SQLStore` holds the write path and the one-statement belief reads; a backend supplies
the primitives they run on: a transaction that holds its write lock (:meth:`SQLStore._atomic`:
SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's head-locked transaction with bounded retries), the
writes inside it, a raw read (:meth:`SQLStore._read`), the statement answering a
:class:`~firewall.model.filters.BeliefFilter` (:meth:`SQLStore._belief_query`) and what
confines a statement to the store's own rows (:meth:`SQLStore._scope`: PostgreSQL's tenant).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

import orjson

from gnomon.firewall.log.events import Event, EventDraft
from gnomon.firewall.model import chain
from gnomon.firewall.model.errors import TamperedLogError
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.store.base import Store, claim_drafts
from gnomon.firewall.store.keys import micros

#: The driver's connection type.
C = TypeVar("C")
M = TypeVar("M", bound=chain.ChainModel)
R = TypeVar("R")


def decay_due(mark: str) -> str:
    """SQL that is true for a ``beliefs`` row whose freshness is due to move
    (:meth:`~firewall.store.base.Store.decay_candidates`): not yet expired and expiring by the
    first parameter (now, in microseconds), or fresh and anchored before the second
    (``stale_before``). ``mark`` is the driver's parameter mark."""
    return (
        f"(freshness <> 'expired' AND expires_us IS NOT NULL AND expires_us <= {mark}) OR "
        f"(freshness = 'fresh' AND anchor_us < {mark})"
    )


class SQLStore(Store, Generic[C]):
    """A store over a SQL driver whose connections are ``C``."""

    #: The driver's parameter mark (``?`` or ``%s``).
    MARK: ClassVar[str]

    # -- what a backend supplies ------------------------------------------------------------

    @abstractmethod
    def _atomic(self, doing: str, work: Callable[[C], R]) -> R:
        """Run ``work`` in one transaction holding the write lock; roll back on any error
        (``doing`` names the operation in the error)."""

    @abstractmethod
    def _write(self, conn: C, drafts: Sequence[EventDraft]) -> list[Event]:
        """Inside :meth:`_atomic`: seal ``drafts`` after the head and write them and their
        records."""

    @abstractmethod
    def _write_sealed(self, conn: C, events: Sequence[Event]) -> list[Event]:
        """Inside :meth:`_atomic`: check that ``events`` continue the head, reseal them with
        this host's key (:meth:`~firewall.store.sealing.StoreSeal.resealed`) and write them and
        their records (:meth:`~firewall.store.base.Store.append_sealed`); returns what it
        wrote."""

    def _set_seals(self, tags: Sequence[tuple[int, bytes]]) -> None:
        scope, params = self._scope()
        mark = self.MARK
        sql = f"UPDATE events SET seal = {mark} WHERE {scope} seq = {mark} AND seal IS NULL"

        def work(conn: C) -> None:
            cursor = conn.cursor()  # type: ignore[attr-defined]
            cursor.executemany(sql, [(tag, *params, seq) for seq, tag in tags])

        self._atomic("sealing unsealed events", work)

    @abstractmethod
    def _gap(self, conn: C) -> int | None:
        """Inside :meth:`_atomic`: the head seq if some seq below it is missing (an event
        deleted from the middle of the log), else ``None``."""

    @abstractmethod
    def _rebuild(self, conn: C) -> int:
        """Inside :meth:`_atomic`: :meth:`~firewall.store.base.Store.rebuild_projections`."""

    @abstractmethod
    def _head_is(self, conn: C, head: int) -> bool:
        """Inside :meth:`_atomic`: is the chain's last seq ``head``? (What :meth:`_write`
        continues, since no other writer can commit before this transaction ends.)"""

    @abstractmethod
    def _claim(self, conn: C, request_id: str) -> bool:
        """Inside :meth:`_atomic`: insert the execution claim of ``request_id``; False, and
        nothing written, when it is already claimed."""

    @abstractmethod
    def _claimed_through(self, conn: C, request_id: str, seq: int) -> None:
        """Inside :meth:`_atomic`: record ``seq`` as the last event of the claim."""

    @abstractmethod
    def _read(self, doing: str, sql: str, params: Any) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement."""

    @abstractmethod
    def _belief_query(self, where: BeliefFilter, *, count: bool) -> tuple[str, Any] | None:
        """``(sql, params)`` of the one statement answering ``where`` (its matching documents,
        ordered and paged, or with ``count`` their number), or None when nothing can match."""

    @abstractmethod
    def _scope(self) -> tuple[str, tuple[Any, ...]]:
        """The condition (ending in ``AND``, or empty) and its parameters that confine a
        statement on one table to this store's rows."""

    # -- the only write path ----------------------------------------------------------------

    def _sealed_write(
        self, doing: str, work: Callable[[C], list[Event] | None]
    ) -> list[Event] | None:
        """:meth:`_atomic` for a write: refused up front without the key; the sealed head
        watermark advanced after the transaction committed; a tamper problem found inside it
        (a head below the watermark, a gap) recorded once after the rollback."""
        self._seal.require(doing)
        try:
            events = self._atomic(doing, work)
        except TamperedLogError as exc:
            if exc.row is None:
                self._seal.record(exc.seq, exc.problem)
            else:  # a row: the transaction is over, so the record can be a commit
                self._recorded(exc)
            raise
        if events:
            self._seal.advance(events)
        return events

    def commit(self, drafts: Sequence[EventDraft]) -> list[Event]:
        if not drafts:
            return []
        events = self._sealed_write("committing events", lambda conn: self._write(conn, drafts))
        assert events is not None
        return events

    def commit_if_head(self, drafts: Sequence[EventDraft], head: int) -> list[Event] | None:
        def work(conn: C) -> list[Event] | None:
            if not self._head_is(conn, head):
                return None
            return self._write(conn, drafts) if drafts else []

        return self._sealed_write("committing on a pinned head", work)

    def claim_execution(self, request_id: str, drafts: Sequence[EventDraft]) -> list[Event] | None:
        claim_drafts(drafts)
        self._seal.require("claiming an execution")
        self._verify_since(request_id)

        def work(conn: C) -> list[Event] | None:
            gap = self._gap(conn)
            if gap is not None:
                # an event deleted from the middle may be this request's claim: never run twice
                raise TamperedLogError(gap, "events are missing from the middle of the log")
            if not self._claim(conn, request_id):
                return None
            events = self._write(conn, drafts)
            self._claimed_through(conn, request_id, events[-1].seq)
            return events

        return self._sealed_write("claiming an execution", work)

    def append_sealed(self, events: Sequence[Event]) -> None:
        if events:
            self._sealed_write(
                "appending sealed events", lambda conn: self._write_sealed(conn, events)
            )

    @abstractmethod
    def _rewrite_bodies(self, conn: C, rewrites: Mapping[int, bytes]) -> None:
        """Inside :meth:`_atomic`: store each ``seq``'s erased body in place of its body."""

    def erase_bodies(
        self, rewrites: Mapping[int, bytes], draft: EventDraft, head: int
    ) -> list[Event] | None:
        def work(conn: C) -> list[Event] | None:
            if not self._head_is(conn, head):
                return None
            self._rewrite_bodies(conn, rewrites)
            # the projections (documents, history, text indexes) rebuilt from the erased log,
            # then the erasure event (it writes no records) continues the chain
            self._rebuild(conn)
            return self._write(conn, [draft])

        events = self._sealed_write("erasing event bodies", work)
        if events is not None:
            self._after_erasure()
        return events

    def _after_erasure(self) -> None:
        """After an erasure committed: purge what the backend keeps of old row versions."""

    def rebuild_projections(self) -> int:
        self._seal.require("rebuilding the projections")
        # every event verified (and a bad one recorded) before a row is replaced from it
        for _ in self.events():
            pass
        return self._atomic("rebuilding the projections", self._rebuild)

    # -- reads ------------------------------------------------------------------------------

    def _docs(self, model: type[M], sql: str, params: Any) -> list[M]:
        """The documents ``sql`` selects (one column), as ``model``."""
        validate = model.model_validate_json
        return [validate(doc, strict=False) for (doc,) in self._read("reading", sql, params)]

    def _beliefs(self, sql: str, params: Any) -> list[chain.Belief]:
        """The beliefs ``sql`` selects as ``(doc, seal)`` rows, each row's seal checked first
        (:meth:`_check_row`)."""
        rows = self._read("reading beliefs", sql, params)
        validate = chain.Belief.model_validate_json
        if self._seal.sealer is None:
            return [validate(doc, strict=False) for doc, _ in rows]
        check = self._check_row
        found: list[chain.Belief] = []
        for doc, tag in rows:
            check(doc, tag)
            found.append(validate(doc, strict=False))
        return found

    def _check_row(self, doc: bytes, tag: bytes | None) -> None:
        """Unless the belief row ``doc`` carries the host's seal ``tag``, raise
        :class:`~firewall.model.errors.TamperedLogError`, recorded once: a row edited or
        planted outside the host is never acted on."""
        error = self._row_error(doc, tag)
        if error is not None:
            raise self._recorded(error)

    def _check_row_in_write(self, doc: bytes, tag: bytes | None) -> None:
        """:meth:`_check_row` inside a write transaction: the error is recorded by
        :meth:`_sealed_write` after the rollback (a record is a commit of its own)."""
        error = self._row_error(doc, tag)
        if error is not None:
            raise error

    def _row_error(self, doc: bytes, tag: bytes | None) -> TamperedLogError | None:
        """The error if the belief row ``doc`` does not carry the host's seal ``tag``. A store
        without its key cannot tell (its reads are unverified, as its events are)."""
        sealer = self._seal.sealer
        if sealer is None:
            return None
        problem = sealer.row_problem(bytes(doc), None if tag is None else bytes(tag))
        return None if problem is None else self._row_tampered("beliefs", row_id(doc), problem)

    def find_beliefs(self, where: BeliefFilter) -> list[chain.Belief]:
        query = self._belief_query(where, count=False) if where.limit > 0 else None
        return [] if query is None else self._beliefs(*query)

    def count_beliefs(self, where: BeliefFilter) -> int:
        query = self._belief_query(where, count=True)
        return 0 if query is None else int(self._read("counting beliefs", *query)[0][0])

    def decay_candidates(
        self, *, stale_before: datetime, now: datetime, after: str = "", limit: int = 1000
    ) -> list[chain.Belief]:
        scope, params = self._scope()
        mark = self.MARK
        return self._beliefs(
            f"SELECT doc, seal FROM beliefs WHERE {scope} id > {mark} AND ({decay_due(mark)}) "
            f"ORDER BY id LIMIT {mark}",
            (*params, after, micros(now), micros(stale_before), limit),
        )


def row_id(doc: bytes | memoryview | str) -> str:
    """The id a stored belief document names (for the error; ``?`` if it names none)."""
    try:
        found = orjson.loads(doc).get("id")
    except (orjson.JSONDecodeError, AttributeError):
        return "?"
    return found if isinstance(found, str) else "?"


__all__ = ["SQLStore", "decay_due", "row_id"]
