"""``sqlite:///path``: the embedded default store (stdlib :mod:`sqlite3`, WAL, FTS5).

One connection per store, shared by threads behind a lock. Every write goes through
:meth:`SQLiteStore.commit`, which takes SQLite's write lock with ``BEGIN IMMEDIATE`` *before*
reading the chain head: several processes appending to one file therefore queue on that lock and
keep one gap-free chain. Every :mod:`sqlite3` exception is converted at this module's edge into
:class:`~firewall.model.errors.StoreLockedError`, :class:`~firewall.model.errors.StoreCorruptError`
or
:class:`~firewall.model.errors.StoreError`, each naming the file.

>>> from gnomon.firewall.store.sqlite import SQLiteStore
>>> with SQLiteStore(":memory:") as store:
...     store.head()[0]
0
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from gnomon.firewall.log.batch import (
    IMPORTS,
    ImportBatch,
    belief_doc,
    binding_doc,
    member_docs,
    read_batch,
    record_docs,
)
from gnomon.firewall.log.events import (
    GENESIS_HASH,
    MOVES,
    Event,
    EventDraft,
    Records,
    records_from_payload,
    seal,
)
from gnomon.firewall.log.moves import MoveBatch, resolve_moves, row_revisions
from gnomon.firewall.model import chain
from gnomon.firewall.model.errors import (
    GnomonError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    TamperedLogError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import (
    SENSITIVITY_RANK,
    Scope,
)
from gnomon.firewall.model.text import fts5_match
from gnomon.firewall.store import sqlite_schema as schema
from gnomon.firewall.store.base import (
    DecayRow,
    OriginRow,
    Store,
    check_continues,
    claims_in,
)
from gnomon.firewall.store.keys import index_tokens, micros
from gnomon.firewall.store.sealing import StoreSeal, file_identity
from gnomon.firewall.store.sql_common import (
    DERIVED_TABLES,
    PROJECTION_KEYS,
    ChainRow,
    batch_keys,
    belief_keys,
    derived_queries,
    derived_row,
    equality_conditions,
    log_pages,
    status_conditions,
    with_moved,
    within_admissible,
)
from gnomon.firewall.store.sql_store import M, R, SQLStore, decay_due
from gnomon.firewall.store.sqlite_moves import apply_moves

PAGE = 1000
#: ``(seq, body, prev_hash, hash, seal)`` of one stored event.
SealedRow = tuple[int, bytes, str, str, bytes | None]
#: Every table derived from the log, emptied by a rebuild (beliefs first, so that its delete
#: trigger keeps the FTS index in step).
PROJECTION_TABLES = ("beliefs", *(t for t in DERIVED_TABLES if t != "beliefs"), "batch_members")
#: The FTS5 indexes over ``beliefs.terms``: every belief, and the admissible ones only.
TEXT_INDEXES = ("beliefs_fts", "beliefs_fts_ok")
_IN_CHUNK = 500
#: What a history read selects (alias ``b``): the version's document and whether it is derived.
_VERSION = f"{schema.VERSION_DOC}, {schema.VERSION_DERIVED}"
_dumps = orjson.dumps


class SQLiteStore(SQLStore[sqlite3.Connection]):
    """The ``sqlite:///`` backend.

    ``path`` is a file path (parent directories are created) or ``":memory:"``.
    ``busy_timeout`` is how many seconds a writer waits for another process's lock before
    :class:`StoreLockedError` is raised; ``cache_mb`` sizes the page cache and the memory map.
    """

    MARK = "?"

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 5.0,
        cache_mb: int = 64,
        url: str | None = None,
        seal_key: str | Path | None = None,
    ) -> None:
        self.path = str(path)
        self.url = url or f"sqlite:///{self.path}"
        self.busy_timeout = busy_timeout
        self.cache_mb = cache_mb
        self._lock = threading.RLock()
        self._closed = True
        self._index_by_trigger = False
        #: The last import batch payload read for a batch member, by ``(seq, hash)``.
        self._batch_cache: dict[tuple[int, str], Any] = {}
        #: The last move batch payload read for a derived revision, by ``(seq, hash)``.
        self._moves_cache: dict[tuple[int, str], Any] = {}
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the directory for {self.path}: {exc.strerror or exc}",
                    hint="check the path in the store URL and the directory permissions",
                ) from exc
        try:
            self._conn = sqlite3.connect(
                self.path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=512,
            )
        except sqlite3.Error as exc:
            raise self._convert(exc, "opening the database") from exc
        self._closed = False
        try:
            with self._guard("opening the database"):
                self._setup()
            if self.path == ":memory:":
                self._seal = StoreSeal.ephemeral(self.url)
            else:
                self._seal = StoreSeal.open(
                    file_identity(self.path), self.url, empty=self.head()[0] == 0, key=seal_key
                )
            self._conn.create_function(
                schema.ROW_SEAL_FUNCTION, 1, self._row_seal, deterministic=True
            )
            self._reseal_rows()
        except BaseException:
            self._closed = True
            self._conn.close()
            raise

    def _reseal_rows(self) -> None:
        if self._seal.sealed and self._read("opening", schema.ANY_UNSEALED, ()):
            # rows written before row sealing (or stripped of it): re-derived from the verified
            # log, which seals them; a log that does not verify leaves them refused on read
            with suppress(TamperedLogError):
                self.rebuild_projections()

    def _row_seal(self, doc: bytes) -> bytes | None:
        """The host's seal of a belief row's document (SQL :data:`schema.ROW_SEAL_FUNCTION`);
        NULL without the key (such a store writes nothing anyway)."""
        sealer = self._seal.sealer
        return None if sealer is None else sealer.row_tag(doc)

    # -- opening --------------------------------------------------------------------------

    def _setup(self) -> None:
        conn = self._conn
        self._enable_wal()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(f"PRAGMA cache_size = {-1024 * int(self.cache_mb)}")
        if self.path != ":memory:":
            conn.execute(f"PRAGMA mmap_size = {1024 * 1024 * int(self.cache_mb) * 4}")
        if "meta" in self._tables():
            # the common case: an existing store, no write lock needed
            if self._check_meta() < schema.SCHEMA_VERSION:
                self._upgrade()
            self._index_by_trigger = self._has_v1_insert_trigger()
            return
        with self._immediate():
            tables = self._tables()  # again, under the lock: another process may have won
            if "meta" in tables:
                if self._check_meta() < schema.SCHEMA_VERSION:
                    self._upgrade_locked()
            elif tables:
                raise StoreCorruptError(
                    f"{self.path} is an SQLite database but not a Gnomon store "
                    f"(it has tables {', '.join(sorted(tables)[:5])} and no gnomon meta table)",
                    hint="point the store URL at a new file or an existing Gnomon store",
                )
            else:
                ddl = (
                    schema.DDL
                    + schema.BINDINGS_DDL
                    + schema.HISTORY_DDL
                    + schema.CLAIMS_DDL
                    + schema.ADMISSIBLE_DDL
                    + schema.REQUEST_INDEX_DDL
                    + schema.BATCH_DDL
                )
                for statement in _statements(ddl):
                    conn.execute(statement)
                conn.execute(schema.SEAL_COLUMN_DDL)
                conn.execute(schema.UNSEALED_INDEX_DDL)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("application", schema.APPLICATION),
                        ("schema_version", str(schema.SCHEMA_VERSION)),
                    ],
                )
            self._index_by_trigger = self._has_v1_insert_trigger()

    @contextmanager
    def _immediate(self) -> Iterator[None]:
        """A ``BEGIN IMMEDIATE`` transaction (SQLite's write lock) for opening and upgrading:
        committed when the block ends, rolled back on any exception, which is re-raised."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            conn.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _upgrade(self) -> None:
        """Bring an older file to the current version, under the write lock."""
        with self._immediate():
            if self._check_meta() < schema.SCHEMA_VERSION:  # another process may have done it
                self._upgrade_locked()

    def _upgrade_locked(self) -> None:
        # Version 3 only adds the bindings table; versions 1 and 2 differ in how new beliefs
        # are indexed, which stays as it is (see ``_has_v1_insert_trigger``).
        for statement in _statements(schema.BINDINGS_DDL):
            self._conn.execute(statement)
        # Version 4 adds the belief history, filled from the log (every event carries the full
        # versions it wrote), so an upgraded file answers as-of queries for its whole past.
        if "belief_versions" not in self._tables():
            for statement in _statements(schema.HISTORY_DDL):
                self._conn.execute(statement)
            self._backfill_history()
        # Version 5 adds the index behind ``revisions_by_grant``.
        self._conn.execute(schema.GRANT_INDEX_DDL)
        # Version 6 adds the execution claims of the action kernel.
        for statement in _statements(schema.CLAIMS_DDL):
            self._conn.execute(statement)
        # Version 7 adds the admissible-state text index, filled from the rows already stored.
        if "beliefs_fts_ok" not in self._tables():
            for statement in _statements(schema.ADMISSIBLE_DDL):
                self._conn.execute(statement)
            self._conn.execute(schema.FILL_ADMISSIBLE)
        # Version 8 adds the index behind ``request_events``.
        self._conn.execute(schema.REQUEST_INDEX_DDL)
        # Version 9 adds the members of import batches stored without claim/evidence rows.
        for statement in _statements(schema.BATCH_DDL):
            self._conn.execute(statement)
        # Version 10 records which move batch made a history version, which event a revision.
        for table, column in schema.MOVE_COLUMNS:
            have = {r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER")
        # Version 11 seals events; those written before stay unsealed (NULL).
        if "seal" not in {r[1] for r in self._conn.execute("PRAGMA table_info(events)")}:
            self._conn.execute(schema.SEAL_COLUMN_DDL)
        # Version 12 seals belief rows: re-derived from the verified log once the key is known.
        if "seal" not in {r[1] for r in self._conn.execute("PRAGMA table_info(beliefs)")}:
            self._conn.execute(schema.ROW_SEAL_COLUMN_DDL)
        self._conn.execute(schema.UNSEALED_INDEX_DDL)
        self._conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'",
            (str(schema.SCHEMA_VERSION),),
        )

    def _backfill_history(self) -> None:
        conn = self._conn
        after = 0
        while True:
            page = conn.execute(
                "SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after, PAGE)
            ).fetchall()
            if not page:
                return
            rows = _Rows()
            for seq, body in page:
                after = seq
                payload = orjson.loads(body).get("payload") or {}
                docs = record_docs(payload).get("beliefs")
                if docs:
                    beliefs = tuple(chain.Belief.model_validate(d, strict=False) for d in docs)
                    rows.add(Records(beliefs=beliefs), {"beliefs": docs})
            if rows.versions:
                rows._write_versions(conn)

    def _has_v1_insert_trigger(self) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?",
            (schema.V1_INSERT_TRIGGER,),
        ).fetchone()
        return row is not None

    def _enable_wal(self) -> None:
        # Switching a new file to WAL needs an exclusive lock and SQLite does not call the busy
        # handler for it: two processes opening a fresh store at once would fail without a retry.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    def _tables(self) -> set[str]:
        rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        return {name for (name,) in rows}

    def _check_meta(self) -> int:
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        application = meta.get("application")
        if application != schema.APPLICATION:
            raise StoreCorruptError(
                f"{self.path} belongs to another application ({application!r}), not a Gnomon store",
                hint="point the store URL at a new file or an existing Gnomon store",
            )
        version = meta.get("schema_version", "")
        if not version.isdigit():
            raise StoreCorruptError(
                f"{self.path} has an unreadable schema_version {version!r}",
                hint="restore the store from a verified NDJSON export",
            )
        if int(version) > schema.SCHEMA_VERSION:
            raise StoreCorruptError(
                f"{self.path} uses Gnomon store schema {version}, newer than the "
                f"{schema.SCHEMA_VERSION} this version understands",
                hint="upgrade gnomon (`pip install -U gnomon`) to open this store",
            )
        return int(version)

    # -- error edge -----------------------------------------------------------------------

    def _convert(self, exc: sqlite3.Error, doing: str) -> StoreError:
        text = str(exc)
        low = text.lower()
        if "locked" in low or "busy" in low:
            return StoreLockedError(
                f"{self.path} is locked by another connection or process "
                f"(waited {self.busy_timeout:g} s while {doing})",
                hint="wait for the other writer to finish, or open the store with a longer "
                "busy_timeout, e.g. firewall.open(url, busy_timeout=30)",
            )
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return StoreCorruptError(
                f"{self.path} is not a readable Gnomon store ({text})",
                hint="move the file aside and open a new path, or restore from a verified "
                "NDJSON export",
            )
        return StoreError(
            f"{self.url}: {doing} failed: {text}",
            hint="check that the database file is readable and writable and the disk has space",
        )

    @contextmanager
    def _guard(self, doing: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreError(
                    f"{self.url} is closed", hint="open the store again with firewall.open()"
                )
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._convert(exc, doing) from exc

    # -- the only write path --------------------------------------------------------------

    def _head_is(self, conn: sqlite3.Connection, head: int) -> bool:
        # Under BEGIN IMMEDIATE (one writer at a time): the head read here is the one _write
        # continues.
        row = conn.execute("SELECT max(seq) FROM events").fetchone()
        return bool((row[0] or 0) == head)

    def _claim(self, conn: sqlite3.Connection, request_id: str) -> bool:
        # Under BEGIN IMMEDIATE (one writer at a time): the primary key decides the winner.
        claimed = conn.execute(
            "INSERT OR IGNORE INTO execution_claims (request_id) VALUES (?)", (request_id,)
        )
        return claimed.rowcount != 0

    def _claimed_through(self, conn: sqlite3.Connection, request_id: str, seq: int) -> None:
        conn.execute("UPDATE execution_claims SET seq = ? WHERE request_id = ?", (seq, request_id))

    def _atomic(self, doing: str, work: Callable[[sqlite3.Connection], R]) -> R:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any error."""
        with self._guard(doing) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = work(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if isinstance(exc, GnomonError | sqlite3.Error) or not isinstance(exc, Exception):
                    raise
                raise StoreError(
                    f"{self.url}: {doing} failed and was rolled back: {exc!r}",
                    hint="nothing was written; fix the draft that could not be stored",
                ) from exc
            return done

    def _rewrite_bodies(self, conn: sqlite3.Connection, rewrites: Mapping[int, bytes]) -> None:
        # secure_delete: the pages that held the erased text are zeroed, not left free
        conn.execute("PRAGMA secure_delete = ON")
        conn.executemany(
            "UPDATE events SET body = ? WHERE seq = ?", [(b, s) for s, b in rewrites.items()]
        )

    def _after_erasure(self) -> None:
        # the write-ahead log still holds the old pages until it is checkpointed and truncated
        with self._guard("checkpointing after an erasure") as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _gap(self, conn: sqlite3.Connection) -> int | None:
        count, top = conn.execute("SELECT count(*), coalesce(max(seq), 0) FROM events").fetchone()
        return None if count == top else int(top)

    def _write(self, conn: sqlite3.Connection, drafts: Sequence[EventDraft]) -> list[Event]:
        row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (row[0], row[1]) if row else (0, GENESIS_HASH)
        sealer = self._seal.require("committing events")
        self._seal.check_head(seq, prev)
        sealed: list[Event] = []
        rows = _Rows()
        for draft in drafts:
            seq += 1
            event = seal(seq, prev, draft, sealer)
            prev = event.hash
            sealed.append(event)
            if draft.records:
                rows.add(draft.records, event.payload["records"], seq)
            if draft.batch is not None:
                rows.add_batch(draft.batch, event.payload[IMPORTS], seq)
            if draft.moves is not None:
                # moves apply to what earlier drafts of this commit wrote: write those first
                rows.write(conn, index_new_beliefs=not self._index_by_trigger)
                rows = _Rows()
                apply_moves(conn, draft.moves, seq, self._check_row_in_write)
        self._insert_events(conn, self._seal.closed(sealed))
        rows.write(conn, index_new_beliefs=not self._index_by_trigger)
        return sealed

    def _insert_events(self, conn: sqlite3.Connection, events: Sequence[Event]) -> None:
        conn.executemany(
            schema.INSERT_EVENT,
            [
                (e.seq, e.kind, e.at, e.actor, e.session_id, e.body, e.prev_hash, e.hash, e.tag)
                for e in events
            ],
        )

    def _write_sealed(self, conn: sqlite3.Connection, events: Sequence[Event]) -> list[Event]:
        row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (row[0], row[1]) if row else (0, GENESIS_HASH)
        self._seal.check_head(seq, prev)
        for event in events:
            check_continues(event, seq, prev)
            seq, prev = event.seq, event.hash
        events = self._seal.resealed(events)
        self._insert_events(conn, events)
        self._apply_events(conn, events)
        self._derive_claims(conn, events)
        return events

    def _derive_claims(self, conn: sqlite3.Connection, events: Sequence[Event]) -> None:
        """The claims the events record (:func:`~firewall.store.base.claims_in`); kept ones stay."""
        conn.executemany(
            "INSERT OR IGNORE INTO execution_claims (request_id, seq) VALUES (?, ?)",
            claims_in(events),
        )

    def _apply_events(self, conn: sqlite3.Connection, events: Sequence[Event]) -> None:
        rows = _Rows()
        for event in events:
            payload = event.payload
            imports, moves = payload.get(IMPORTS), payload.get(MOVES)
            if imports is None and moves is None:
                records = records_from_payload(payload)
                if records:
                    rows.add(records, record_docs(payload), event.seq)
                continue
            rest = {k: payload[k] for k in payload if k not in (IMPORTS, MOVES)}
            records = records_from_payload(rest)
            if records:
                rows.add(records, record_docs(rest), event.seq)
            # a batch applies to what came before it (a move to the versions the log holds
            # before it, a later move to a batch's beliefs): write that first
            rows.write(conn, index_new_beliefs=not self._index_by_trigger)
            rows = _Rows()
            if imports is not None:
                # an import batch's rows straight from its compact rows, as its commit writes
                # them (one document per record; claims and evidence derived on read)
                rows.add_batch(read_batch(imports), imports, event.seq)
                rows.write(conn, index_new_beliefs=not self._index_by_trigger)
                rows = _Rows()
            if moves is not None:
                self._replay_moves(conn, event)
        rows.write(conn, index_new_beliefs=not self._index_by_trigger)

    def _replay_moves(self, conn: sqlite3.Connection, event: Event) -> None:
        """Apply the move batch of a sealed ``event`` as its commit did (:func:`apply_moves`),
        after deriving each new version from the stored one and re-checking it against the
        gate (:func:`~firewall.log.moves.resolve_moves`), as every reader of a log does."""
        batch = MoveBatch.from_payload(event.payload[MOVES])
        resolve_moves([Records(moves=batch.moves())], lambda ids: self._stored_beliefs(conn, ids))
        apply_moves(conn, batch, event.seq)

    def _stored_beliefs(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, chain.Belief]:
        """The stored versions of ``ids``, inside the caller's transaction."""
        found: dict[str, chain.Belief] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            for doc, tag in conn.execute(
                f"SELECT doc, seal FROM beliefs WHERE id IN ({marks})", chunk
            ):
                # a move rewrites the stored document: it must be the host's
                self._check_row_in_write(doc, tag)
                belief = chain.Belief.model_validate_json(doc, strict=False)
                found[belief.id] = belief
        return found

    def _rebuild(self, conn: sqlite3.Connection) -> int:
        present = self._tables()
        for table in PROJECTION_TABLES:  # beliefs first: its trigger empties the FTS index
            if table in present:
                conn.execute(f"DELETE FROM {table}")
        # Entries planted in the index alone survive the delete trigger: drop them all.
        for index in TEXT_INDEXES:
            conn.execute(f"INSERT INTO {index} ({index}) VALUES ('delete-all')")
        count = 0
        after = 0
        while True:
            page = [
                Event.from_body(*r)
                for r in conn.execute(
                    "SELECT seq, body, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq "
                    "LIMIT ?",
                    (after, PAGE),
                ).fetchall()
            ]
            if not page:
                return count
            self._apply_events(conn, page)
            self._derive_claims(conn, page)
            count += len(page)
            after = page[-1].seq

    def projection_docs(self) -> Iterator[tuple[str, str, bytes]]:
        rowed: dict[str, set[str]] = {"claims": set(), "evidence": set(), "revisions": set()}
        for table, key in PROJECTION_KEYS:
            with self._guard("reading projections") as conn:
                rows = conn.execute(f"SELECT {key}, doc FROM {table}").fetchall()
            for ident, doc in rows:
                if table in rowed:
                    rowed[table].add(str(ident))
                yield table, ident, doc
        yield from self._member_docs(rowed)
        for ident, doc in self._moved_revisions(rowed["revisions"]):
            yield "revisions", ident, b"null" if doc is None else _dumps(doc)

    def _moved_revisions(self, rowed: set[str]) -> Iterator[tuple[str, dict[str, Any] | None]]:
        """``(id, document)`` of the revisions of move batches (no row of their own), derived
        from their events one batch at a time; a history row whose batch row is not its move
        is yielded under a name of its own with no document, so a check names it. A revision
        with a row of its own (in ``rowed``) is not yielded: reads serve that row too, so the
        check compares it."""
        with self._guard("reading moved versions") as conn:
            seqs = [
                s
                for (s,) in conn.execute(
                    "SELECT DISTINCT move_seq FROM belief_versions "
                    "WHERE move_seq IS NOT NULL ORDER BY move_seq"
                )
            ]
        for seq in seqs:
            with self._guard("reading moved versions") as conn:
                members = conn.execute(
                    "SELECT belief_id, version, move_row FROM belief_versions WHERE move_seq = ?",
                    (seq,),
                ).fetchall()
            for belief_id, version, row in members:
                try:
                    docs = self._move_revisions(seq, row, belief_id, version)
                except StoreCorruptError:
                    yield f"{belief_id} version {version} (move {seq})", None
                    continue
                for doc in docs:
                    if doc["id"] not in rowed:
                        yield doc["id"], doc

    def _member_docs(
        self, rowed: Mapping[str, set[str]] | None = None
    ) -> Iterator[tuple[str, str, bytes]]:
        """The claim and evidence documents of import batch members (no row of their own),
        derived from their events one batch at a time; a member its event does not hold is
        yielded as a document that is no valid record, so a check names it.

        A member with a row of its own in ``rowed`` (``{table: ids}``) is not yielded: reads
        serve that row (:meth:`get_claim`, :meth:`get_evidence`), so the row is what a check
        must compare with the log, and a row planted over a member is named, not hidden."""
        rowed = rowed or {}
        claim_rows, evidence_rows = rowed.get("claims", set()), rowed.get("evidence", set())
        with self._guard("reading batch members") as conn:
            if "batch_members" not in self._tables():
                return
            seqs = [s for (s,) in conn.execute("SELECT DISTINCT seq FROM batch_members")]
        for seq in seqs:
            with self._guard("reading batch members") as conn:
                members = conn.execute(
                    "SELECT claim_id, row FROM batch_members WHERE seq = ?", (seq,)
                ).fetchall()
                found = conn.execute("SELECT body FROM events WHERE seq = ?", (seq,)).fetchone()
            try:
                imports = orjson.loads(found[0])["payload"][IMPORTS]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                imports = None
            for claim_id, index in members:
                try:
                    claim, evidence = member_docs(imports, index)
                except (IndexError, KeyError, TypeError, ValueError):
                    claim = evidence = {}
                if claim_id in claim_rows:
                    pass  # its own row was yielded: reads serve that
                elif claim.get("id") != claim_id:
                    yield "claims", claim_id, b"null"
                    continue
                else:
                    yield "claims", claim_id, _dumps(claim)
                if evidence and str(evidence.get("id")) not in evidence_rows:
                    yield "evidence", str(evidence["id"]), _dumps(evidence)

    def derived_rows(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        # A move's pointer (``move_seq``, ``move_row``) is compared through what it derives:
        # the revisions below and the version's document (stored or derived, read alike).
        kept = ", ".join(f"b.{c}" for c in schema.VERSION_COLUMNS[:-1])
        queries = derived_queries(
            schema.BELIEF_COLUMNS[1:-2],
            schema.VERSION_COLUMNS[1:],
            "",
            versions_from=f"(SELECT b.rid, {kept}, {schema.VERSION_DOC} AS doc "
            "FROM belief_versions b)",
        )
        for table, sql, columns in queries:
            if table not in self._tables():
                continue
            with self._guard(f"reading {table}") as conn:
                rows = conn.execute(sql).fetchall()
            for ident, *values in rows:
                yield table, str(ident), derived_row(columns, tuple(values))
        for table, ident, doc in self._member_docs():
            if table == "evidence":  # what the evidence table would index for it
                yield table, ident, {"claim_id": orjson.loads(doc)["claim_id"]}
        with self._guard("reading revisions") as conn:
            rowed = {str(i) for (i,) in conn.execute("SELECT id FROM revisions")}
        for ident, found in self._moved_revisions(rowed):
            # what the revisions table would index for it
            yield "revisions", ident, {} if found is None else _revision_keys(found)
        for index in TEXT_INDEXES:
            yield from self._text_index(index)
        with self._guard("reading execution_claims") as conn:
            claims = conn.execute("SELECT request_id, seq FROM execution_claims").fetchall()
        for claim, seq in claims:
            yield "execution_claims", claim, {"seq": seq}

    def _text_index(self, index: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """What an FTS5 index itself holds (not its content table): each belief's tokens in
        order, read through an ``fts5vocab`` view of the index. A token planted in the index
        alone makes a belief match queries its statement does not answer; a belief planted in
        the admissible index alone makes it a candidate for trusted context."""
        vocab = f"temp.gnomon_vocab_{index}"
        with self._guard("reading the text index") as conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} "
                f"USING fts5vocab(main, {index}, instance)"
            )
            ids = dict(conn.execute("SELECT rid, id FROM beliefs").fetchall())
            found: dict[int, list[tuple[int, str]]] = {}
            for doc, term, offset in conn.execute(f"SELECT doc, term, offset FROM {vocab}"):
                found.setdefault(doc, []).append((offset, term))
        for rid, terms in found.items():
            ident = ids.get(rid, f"rowid {rid} (no such belief)")
            yield index, str(ident), {"terms": " ".join(t for _, t in sorted(terms))}

    def scratch(self) -> Store:
        return SQLiteStore(":memory:")

    # -- the log --------------------------------------------------------------------------

    def head(self) -> tuple[int, str]:
        with self._guard("reading the chain head") as conn:
            row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    def _pages(self, after: int, limit: int | None) -> Iterator[ChainRow]:
        def fetch(cursor: int, size: int) -> list[ChainRow]:
            with self._guard("reading events") as conn:
                page: list[ChainRow] = conn.execute(
                    "SELECT seq, body, prev_hash, hash FROM events "
                    "WHERE seq > ? ORDER BY seq LIMIT ?",
                    (cursor, size),
                ).fetchall()
            return page

        return log_pages(fetch, after, limit, page_size=PAGE)

    def _sealed_pages(self, after: int, limit: int | None) -> Iterator[SealedRow]:
        def fetch(cursor: int, size: int) -> list[SealedRow]:
            with self._guard("reading events") as conn:
                page: list[SealedRow] = conn.execute(
                    "SELECT seq, body, prev_hash, hash, seal FROM events "
                    "WHERE seq > ? ORDER BY seq LIMIT ?",
                    (cursor, size),
                ).fetchall()
            return page

        return log_pages(fetch, after, limit, page_size=PAGE)

    def events(self, after: int = 0, limit: int | None = None) -> Iterator[Event]:
        return self._verified(
            (
                Event.from_body(seq, body, prev_hash, digest, tag)
                for seq, body, prev_hash, digest, tag in self._sealed_pages(after, limit)
            ),
            contiguous=True,
        )

    def seal_rows(self, after: int = 0) -> Iterator[tuple[int, str, bytes | None]]:
        def fetch(cursor: int, size: int) -> list[tuple[int, str, bytes | None]]:
            with self._guard("reading seals") as conn:
                page: list[tuple[int, str, bytes | None]] = conn.execute(
                    "SELECT seq, hash, seal FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                    (cursor, size),
                ).fetchall()
            return page

        return log_pages(fetch, after, None, page_size=PAGE)

    def chain_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str]]:
        return self._pages(after, None)

    def sealed_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str, bytes | None]]:
        def fetch(cursor: int, size: int) -> list[tuple[int, bytes, str, str, bytes | None]]:
            with self._guard("reading the log") as conn:
                page: list[tuple[int, bytes, str, str, bytes | None]] = conn.execute(
                    "SELECT seq, body, prev_hash, hash, seal FROM events WHERE seq > ? "
                    "ORDER BY seq LIMIT ?",
                    (cursor, size),
                ).fetchall()
            return page

        return log_pages(fetch, after, None, page_size=PAGE)

    # -- projections ----------------------------------------------------------------------

    def _one(self, model: type[M], sql: str, params: Sequence[Any]) -> M | None:
        with self._guard("reading") as conn:
            row = conn.execute(sql, params).fetchone()
        return None if row is None else model.model_validate_json(row[0], strict=False)

    def _read(self, doing: str, sql: str, params: Any) -> list[tuple[Any, ...]]:
        with self._guard(doing) as conn:
            return conn.execute(sql, params).fetchall()

    def _scope(self) -> tuple[str, tuple[Any, ...]]:
        return "", ()

    def get_session(self, session_id: str) -> chain.SessionInfo | None:
        return self._one(chain.SessionInfo, "SELECT doc FROM sessions WHERE id = ?", (session_id,))

    def get_observation(self, observation_id: str) -> chain.Observation | None:
        return self._one(
            chain.Observation, "SELECT doc FROM observations WHERE id = ?", (observation_id,)
        )

    def get_claim(self, claim_id: str) -> chain.Claim | None:
        claim = self._one(chain.Claim, "SELECT doc FROM claims WHERE id = ?", (claim_id,))
        if claim is None:
            member = self._member(claim_id)
            if member is not None:
                claim = chain.Claim.model_validate(member[0], strict=False)
        return claim

    def get_evidence(self, claim_id: str) -> chain.EvidenceSet:
        items = self._docs(
            chain.EvidenceItem,
            "SELECT doc FROM evidence WHERE claim_id = ? ORDER BY rowid",
            (claim_id,),
        )
        member = self._member(claim_id)
        if member is not None:
            # The batch's item came first; a row with its id (a later upsert) replaces it there.
            first = chain.EvidenceItem.model_validate(member[1], strict=False)
            stored = [i for i in items if i.id == first.id]
            items = [stored[0] if stored else first, *(i for i in items if i.id != first.id)]
        return chain.EvidenceSet(claim_id=claim_id, items=items)

    def _member(self, claim_id: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The claim and evidence documents of an import batch member, derived from its event
        (None when ``claim_id`` is no batch member). The row the member table points at must
        name the claim: a row pointed elsewhere by an edit of the file is refused, not
        served."""
        with self._guard("reading a batch member") as conn:
            found = conn.execute(schema.BATCH_MEMBER, (claim_id,)).fetchone()
            if found is None:
                return None
            index, seq, digest, body = found
            imports = self._batch_cache.get((seq, digest))
            if imports is None:
                try:
                    imports = orjson.loads(body)["payload"][IMPORTS]
                except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                    problem = f"its event holds no batch ({exc})"
                    raise self._bad_member(claim_id, seq, problem) from exc
                self._batch_cache = {(seq, digest): imports}  # one batch: reads go in order
        try:
            claim, evidence = member_docs(imports, index)
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            raise self._bad_member(claim_id, seq, f"row {index} is not in it ({exc!r})") from exc
        if claim.get("id") != claim_id:
            raise self._bad_member(claim_id, seq, f"row {index} holds another claim")
        return claim, evidence

    def _bad_member(self, claim_id: str, seq: int, problem: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{self.path}: claim {claim_id} is listed as a member of import batch event {seq}, "
            f"but {problem}",
            hint="run `gnomon rebuild --apply` to rebuild the projections from the verified log",
        )

    def get_beliefs(self, belief_ids: Sequence[str]) -> dict[str, chain.Belief]:
        ids = list(dict.fromkeys(belief_ids))
        found: dict[str, chain.Belief] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT doc, seal FROM beliefs WHERE id IN ({marks})"
            for belief in self._beliefs(sql, chunk):
                found[belief.id] = belief
        return {i: found[i] for i in ids if i in found}

    def beliefs_with_origin(self, origin_id: str) -> list[chain.Belief]:
        # The same answer as the generic pass, read from the beliefs table alone: SQLite tests
        # each document's origin ids (the label, not any text that mentions the id).
        return self._beliefs(
            "SELECT doc, seal FROM beliefs WHERE instr(doc, ?) > 0 AND EXISTS (SELECT 1 FROM "
            "json_each(CAST(doc AS TEXT), '$.origin.origin_ids') WHERE value = ?) ORDER BY id",
            (orjson.dumps(origin_id)[1:-1], origin_id),
        )

    def origin_rows(self, origin_id: str) -> list[OriginRow]:
        # beliefs_with_origin's pass (the text test first), then ONE JSON parse per document:
        # the version, the two states (what the move is checked against when it is applied)
        # and the label's origin ids, tested here; no belief parsed into a record
        loads = orjson.loads
        rows: list[OriginRow] = []
        with self._guard("reading beliefs with an origin") as conn:
            for belief_id, found, doc, tag in conn.execute(
                "SELECT id, json_extract(CAST(doc AS TEXT), '$.version', '$.security_status', "
                "'$.retrieval_status', '$.origin.origin_ids'), doc, seal FROM beliefs "
                "WHERE instr(doc, ?) > 0 ORDER BY id",
                (orjson.dumps(origin_id)[1:-1],),
            ):
                # a row that is not the host's refuses the whole fan-out (and is recorded)
                self._check_row(doc, tag)
                version, security, retrieval, origin_ids = loads(found)
                if type(origin_ids) is not list:
                    # a label that is no list of ids: not a belief version (the fan-out
                    # refuses it rather than skip a belief that may carry the origin)
                    rows.append(OriginRow(belief_id, None, security, retrieval))  # type: ignore[arg-type]
                elif origin_id in origin_ids:
                    rows.append(OriginRow(belief_id, version, security, retrieval))
        return rows

    def decisions_citing(self, belief_ids: Sequence[str]) -> list[tuple[str, chain.Decision]]:
        ids = list(dict.fromkeys(belief_ids))
        place = {b: i for i, b in enumerate(ids)}
        found: list[tuple[int, int, str, str, bytes]] = []
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            with self._guard("reading the decisions citing beliefs") as conn:
                found.extend(
                    (place[b], created, ident, b, doc)
                    for b, created, ident, doc in conn.execute(
                        "SELECT x.belief_id, d.created_us, d.id, d.doc FROM decision_deps x "
                        f"JOIN decisions d ON d.id = x.decision_id WHERE x.belief_id IN ({marks})",
                        chunk,
                    )
                )
        found.sort(key=lambda r: r[:3])
        validate = chain.Decision.model_validate_json
        return [(b, validate(doc, strict=False)) for _, _, _, b, doc in found]

    def decay_rows(
        self, *, stale_before: datetime, now: datetime, after: str = "", limit: int = 1000
    ) -> list[DecayRow]:
        # Version and state from the document (what the move is checked against when it is
        # applied, :mod:`firewall.store.sqlite_moves`); due-ness from the indexed columns.
        now_us = micros(now)
        with self._guard("reading decay candidates") as conn:
            rows = conn.execute(
                "SELECT id, json_extract(CAST(doc AS TEXT), '$.version'), "
                "json_extract(CAST(doc AS TEXT), '$.freshness_status'), "
                "expires_us IS NOT NULL AND expires_us <= ? FROM beliefs WHERE id > ? AND "
                f"({decay_due('?')}) ORDER BY id LIMIT ?",
                [now_us, after, now_us, micros(stale_before), limit],
            ).fetchall()
        return [DecayRow(i, v, f, bool(e)) for i, v, f, e in rows]

    # -- belief history ---------------------------------------------------------------------

    def belief_history(self, belief_id: str) -> list[chain.Belief]:
        return self._versions(
            f"SELECT {_VERSION} FROM belief_versions b WHERE b.belief_id = ? "
            "ORDER BY b.from_us, b.rid",
            (belief_id,),
        )

    def _versions(self, sql: str, params: Sequence[Any]) -> list[chain.Belief]:
        """History rows selected as ``_VERSION``: a version derived from a later document
        (schema 10) must keep the gate's cross-axis invariants, or the read is refused."""
        from gnomon.firewall.gate.gate import check_invariants

        with self._guard("reading belief history") as conn:
            rows = conn.execute(sql, params).fetchall()
        validate = chain.Belief.model_validate_json
        found = []
        for doc, derived in rows:
            belief = validate(doc, strict=False)
            if derived:
                try:
                    check_invariants(belief)
                except GnomonError as exc:
                    raise StoreCorruptError(
                        f"{self.path}: version {belief.version} of belief {belief.id} in the "
                        f"history breaks the gate's invariants ({exc})",
                        hint="run `gnomon rebuild --apply` to rebuild the projections from the "
                        "verified log",
                    ) from exc
            found.append(belief)
        return found

    def _versions_held(
        self, where: BeliefFilter, since_us: int | None, until_us: int | None
    ) -> list[chain.Belief]:
        """One statement on ``belief_versions``: by text, FTS5 drives and each match joins its
        versions on ``belief_versions_id``; by subject (or prefix) ``belief_versions_subject``
        serves the subject and the time range together."""
        found = _conditions(where, id_column="belief_id")
        if found is None:
            return []
        conds, params = found
        if until_us is not None:
            conds.append("b.from_us <= ?")
            params.append(until_us)
        if since_us is not None:
            conds.append("(b.until_us IS NULL OR b.until_us > ?)")
            params.append(since_us)
        if where.text is not None:
            match = fts5_match(where.text)
            if match is None:
                return []
            # FTS5 ranks its matches first (a heap, no join), and only the best ``cap`` of them
            # join their versions; if that leaves the page short, the uncapped query answers.
            wanted = max(where.limit, 0) + max(where.offset, 0)
            cap = max(500, 50 * wanted)
            capped = self._versions_by_text(where, conds, params, match, cap)
            if len(capped) >= max(where.limit, 0):
                return capped
            return self._versions_by_text(where, conds, params, match, None)
        else:
            subject = where.subject is not None or where.subject_prefix is not None
            hint = " INDEXED BY belief_versions_subject" if subject else ""
            sql = f"SELECT {_VERSION} FROM belief_versions b{hint} WHERE 1"
            order = "b.observed_us DESC, b.belief_id, b.from_us DESC, b.rid DESC"
        if conds:
            sql += " AND " + " AND ".join(conds)
        sql += f" ORDER BY {order} LIMIT ? OFFSET ?"
        params.extend((max(where.limit, 0), max(where.offset, 0)))
        return self._versions(sql, params)

    def _versions_by_text(
        self,
        where: BeliefFilter,
        conds: list[str],
        params: list[Any],
        match: str,
        cap: int | None,
    ) -> list[chain.Belief]:
        limit = "" if cap is None else f" LIMIT {int(cap)}"
        sql = (
            f"SELECT {_VERSION} FROM (SELECT rowid AS r, rank AS k FROM beliefs_fts "
            f"WHERE beliefs_fts MATCH ? ORDER BY rank{limit}) f "
            "CROSS JOIN beliefs c ON c.rid = f.r "
            "CROSS JOIN belief_versions b INDEXED BY belief_versions_id ON b.belief_id = c.id "
            "WHERE 1"
        )
        if conds:
            sql += " AND " + " AND ".join(conds)
        sql += " ORDER BY f.k, b.belief_id, b.from_us DESC, b.rid DESC LIMIT ? OFFSET ?"
        values = [match, *params, max(where.limit, 0), max(where.offset, 0)]
        return self._versions(sql, values)

    def session_events(self, session_id: str) -> list[Event]:
        with self._guard("reading a session's events") as conn:
            rows = conn.execute(
                "SELECT seq, body, prev_hash, hash, seal FROM events WHERE session_id = ? "
                "ORDER BY seq",
                (session_id,),
            ).fetchall()
        return list(self._verified(Event.from_body(*row) for row in rows))

    def request_events(self, request_id: str) -> list[Event]:
        with self._guard("reading a request's events") as conn:
            rows = conn.execute(
                "SELECT seq, body, prev_hash, hash, seal FROM events INDEXED BY events_request "
                f"WHERE {schema.REQUEST_ID} = ? AND {schema.REQUEST_KINDS} ORDER BY seq",
                (request_id,),
            ).fetchall()
        return list(self._verified(Event.from_body(*row) for row in rows))

    def _belief_query(self, where: BeliefFilter, *, count: bool) -> tuple[str, list[Any]] | None:
        """One SQL statement answering ``where``, or None when nothing can match.

        The plan is fixed rather than left to the statistics: with text, FTS5 drives (``CROSS
        JOIN`` keeps it the outer loop) and every other condition is checked on the joined row;
        without text, only the status columns and the scoping columns may pick an index (the
        unary ``+`` on the others keeps them out of index selection), so a policy recall walks
        ``beliefs_recall`` newest first and stops at the limit.
        """
        found = _conditions(where, id_column="id")
        if found is None:
            return None
        conds, params = found

        select = "count(*)" if count else "b.doc, b.seal"
        if where.text is not None:
            match = fts5_match(where.text)
            if match is None:
                return None
            # The admissible index holds a superset of what such a filter can match (its
            # statuses lie inside the index's); every condition is still checked on the row.
            index = "beliefs_fts_ok" if within_admissible(where) else "beliefs_fts"
            sql = (
                f"SELECT {select} FROM {index} CROSS JOIN beliefs b "
                f"ON b.rid = {index}.rowid WHERE {index} MATCH ?"
            )
            params.insert(0, match)
            # Unranked: newest rows first, straight off the index, stopping at the limit.
            order = f"{index}.rowid DESC" if where.unranked else f"{index}.rank, b.id"
        else:
            # A subject or a session is far more selective than any status, but the planner
            # would rather walk an index already in result order: name the index it should use.
            if where.subject is not None or where.subject_prefix is not None:
                hint = " INDEXED BY beliefs_subject"
            elif where.session_id is not None:
                hint = " INDEXED BY beliefs_session"
            else:
                hint = ""
            sql = f"SELECT {select} FROM beliefs b{hint} WHERE 1"
            order = "b.observed_us DESC, b.id"
        if conds:
            sql += " AND " + " AND ".join(conds)
        if not count:
            sql += f" ORDER BY {order} LIMIT ? OFFSET ?"
            params.extend((max(where.limit, 0), max(where.offset, 0)))
        return sql, params

    def get_decision(self, decision_id: str) -> chain.Decision | None:
        return self._one(chain.Decision, "SELECT doc FROM decisions WHERE id = ?", (decision_id,))

    def get_action(self, action_id: str) -> chain.Action | None:
        return self._one(chain.Action, "SELECT doc FROM actions WHERE id = ?", (action_id,))

    def decisions_depending_on(self, belief_id: str) -> list[chain.Decision]:
        return self._docs(
            chain.Decision,
            "SELECT d.doc FROM decision_deps x JOIN decisions d ON d.id = x.decision_id "
            "WHERE x.belief_id = ? ORDER BY d.created_us, d.id",
            (belief_id,),
        )

    def revisions_for(self, belief_id: str) -> list[chain.Revision]:
        with self._guard("reading revisions") as conn:
            stored = conn.execute(
                "SELECT doc, created_us, coalesce(seq, 0), rid FROM revisions "
                "WHERE belief_id = ? ORDER BY created_us, rid",
                (belief_id,),
            ).fetchall()
            moved = conn.execute(
                "SELECT move_seq, move_row, version FROM belief_versions "
                "WHERE belief_id = ? AND move_seq IS NOT NULL ORDER BY move_seq",
                (belief_id,),
            ).fetchall()
        validate = chain.Revision.model_validate_json
        found = [
            ((created, seq, 0, rid), validate(doc, strict=False))
            for doc, created, seq, rid in stored
        ]
        for seq, row, version in moved:
            for i, doc in enumerate(self._move_revisions(seq, row, belief_id, version)):
                revision = chain.Revision.model_validate(doc, strict=False)
                found.append(((micros(revision.created_at), seq, 1, i), revision))
        if not moved:
            return [r for _, r in found]
        return [r for _, r in sorted(found, key=lambda entry: entry[0])]

    def _move_batch(self, seq: int) -> Any:
        """The move batch payload of event ``seq`` (the last one read is kept: reads of many
        beliefs moved by one batch go one batch at a time)."""
        with self._guard("reading a move batch") as conn:
            found = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
            if found is None:
                raise self._bad_move(seq, "no such event")
            key = (seq, found[0])
            moves = self._moves_cache.get(key)
            if moves is None:
                (body,) = conn.execute("SELECT body FROM events WHERE seq = ?", (seq,)).fetchone()
                try:
                    moves = orjson.loads(body)["payload"][MOVES]
                except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                    raise self._bad_move(seq, f"its event holds no move batch ({exc})") from exc
                self._moves_cache = {key: moves}
        return moves

    def _move_revisions(
        self, seq: int, row: int, belief_id: str, version: int
    ) -> list[dict[str, Any]]:
        """The revision documents of belief ``belief_id``'s move to ``version``, derived from
        row ``row`` of move batch event ``seq`` (:func:`~firewall.log.moves.row_revisions`:
        the row must be that move, each transition one the gate allows)."""
        try:
            return row_revisions(self._move_batch(seq), row, belief_id, version)
        except (GnomonError, IndexError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, StoreCorruptError):
                raise
            raise self._bad_move(
                seq, f"row {row} is not belief {belief_id}'s move ({exc})"
            ) from exc

    def _bad_move(self, seq: int, problem: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{self.path}: a belief version names move batch event {seq}, but {problem}",
            hint="run `gnomon rebuild --apply` to rebuild the projections from the verified log",
        )

    def revisions_by_grant(self, grant_id: str) -> list[chain.Revision]:
        return self._docs(
            chain.Revision,
            f"SELECT doc FROM revisions WHERE {schema.REVISION_GRANT} = ? ORDER BY created_us, rid",
            (grant_id,),
        )

    def contradictions_for(self, belief_ids: Sequence[str]) -> list[chain.Contradiction]:
        ids = list(dict.fromkeys(belief_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self._docs(
            chain.Contradiction,
            "SELECT doc FROM contradictions WHERE id IN (SELECT contradiction_id "
            f"FROM contradiction_members WHERE belief_id IN ({marks})) "
            "ORDER BY detected_us, id",
            ids,
        )

    # -- store bindings ---------------------------------------------------------------------

    def bindings_by_store_id(
        self, store: str, store_ids: Sequence[str]
    ) -> dict[str, chain.StoreBinding]:
        ids = list(dict.fromkeys(store_ids))
        found: dict[str, chain.StoreBinding] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            for binding in self._docs(
                chain.StoreBinding,
                f"SELECT doc FROM bindings WHERE store = ? AND store_id IN ({marks})",
                [store, *chunk],
            ):
                assert binding.store_id is not None
                found[binding.store_id] = binding
        return found

    def bound_store_ids(self, store: str, store_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(store_ids))
        found: set[str] = set()
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            with self._guard("reading bindings") as conn:
                found.update(
                    sid
                    for (sid,) in conn.execute(
                        "SELECT store_id FROM bindings INDEXED BY bindings_store_id "
                        f"WHERE store = ? AND store_id IN ({marks})",
                        [store, *chunk],
                    )
                )
        return found

    def bindings_for_beliefs(self, belief_ids: Sequence[str]) -> list[chain.StoreBinding]:
        ids = list(dict.fromkeys(belief_ids))
        found: list[chain.StoreBinding] = []
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.extend(
                self._docs(
                    chain.StoreBinding,
                    f"SELECT doc FROM bindings WHERE belief_id IN ({marks})",
                    chunk,
                )
            )
        return sorted(found, key=lambda b: (b.belief_id, b.store))

    def list_bindings(
        self, store: str, *, after: str | None = None, limit: int = 1000
    ) -> list[chain.StoreBinding]:
        return self._docs(
            chain.StoreBinding,
            "SELECT doc FROM bindings WHERE store = ? AND belief_id > ? ORDER BY belief_id LIMIT ?",
            (store, "" if after is None else after, max(limit, 0)),
        )

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                with suppress(sqlite3.Error):
                    # keeps the planner statistics current; bounded so close() stays fast
                    self._conn.execute("PRAGMA analysis_limit = 400")
                    self._conn.execute("PRAGMA optimize")
            finally:
                self._conn.close()


class _Rows:
    """Projection rows of one commit, collected per table for ``executemany``."""

    def __init__(self) -> None:
        self.sessions: list[tuple[Any, ...]] = []
        self.observations: list[tuple[Any, ...]] = []
        self.claims: list[tuple[Any, ...]] = []
        self.evidence: list[tuple[Any, ...]] = []
        self.beliefs: dict[str, tuple[Any, ...]] = {}
        self.decisions: dict[str, tuple[chain.Decision, bytes]] = {}
        self.actions: list[tuple[Any, ...]] = []
        self.outcomes: list[tuple[Any, ...]] = []
        self.revisions: list[tuple[Any, ...]] = []
        self.contradictions: dict[str, tuple[chain.Contradiction, bytes]] = {}
        self.bindings: list[tuple[Any, ...]] = []
        self.versions: list[tuple[str, int, tuple[Any, ...]]] = []  # (id, from_us, row)
        #: First versions of beliefs new in this commit (an import batch): nothing to close.
        self.first_versions: list[tuple[Any, ...]] = []
        #: ``(claim_id, seq, row)`` of import batch members (no claim or evidence row).
        self.members: list[tuple[str, int, int]] = []
        #: Beliefs and bindings of import batches: fresh ids, written by plain inserts.
        self.new_beliefs: list[tuple[Any, ...]] = []
        self.new_bindings: list[tuple[Any, ...]] = []

    def add_batch(self, batch: ImportBatch, imports: dict[str, Any], seq: int) -> None:
        """The rows of an import batch sealed as event ``seq``, straight from its compact rows:
        no typed record is built, and one document per record is written (the belief's). Its
        claims and evidence items are derived from the event on read (``batch_members``); its
        history row opens the belief's history with no document of its own (the belief's
        current one, :data:`~firewall.store.sqlite_schema.VERSION_DOC`). Every belief is new
        (fresh ids), so nothing is closed."""
        at = imports["at"]
        template = imports["template"]
        belief_t, binding_t = template["belief"], template.get("binding")
        now = micros(batch.now)
        version = batch.template.belief.version
        dumps = _dumps
        beliefs, members, firsts = self.new_beliefs, self.members, self.first_versions
        for index, (row, keys, doc_row) in enumerate(
            zip(batch.rows, batch_keys(batch), imports["rows"], strict=True)
        ):
            belief_id, claim_id, text = row[0], row[1], row[3]
            doc = dumps(belief_doc(belief_t, at, doc_row))
            beliefs.append((belief_id, *keys, " ".join(index_tokens(text)), doc, doc))
            firsts.append((belief_id, version, now, None, *keys, b""))
            members.append((claim_id, seq, index))
            if binding_t is not None:
                binding = binding_doc(binding_t, at, doc_row)
                self.new_bindings.append(
                    (binding["store"], belief_id, binding["store_id"], dumps(binding))
                )

    def add(
        self, rec: Records, payload: dict[str, list[dict[str, Any]]], seq: int | None = None
    ) -> None:
        """The rows of ``rec`` (sealed as event ``seq``: its revisions record it)."""
        # The event payload already holds each record's JSON form: reuse it as the row's doc.
        if rec.sessions:
            self.sessions.extend(
                (s.id, s.project, _dumps(d))
                for s, d in zip(rec.sessions, payload["sessions"], strict=True)
            )
        if rec.observations:
            self.observations.extend(
                (o.id, o.session_id, _dumps(d))
                for o, d in zip(rec.observations, payload["observations"], strict=True)
            )
        if rec.claims:
            self.claims.extend(
                (c.id, _dumps(d)) for c, d in zip(rec.claims, payload["claims"], strict=True)
            )
        if rec.evidence:
            self.evidence.extend(
                (e.id, e.claim_id, _dumps(d))
                for e, d in zip(rec.evidence, payload["evidence"], strict=True)
            )
        in_event: dict[str, int] = {}
        for belief, doc in zip(
            rec.beliefs, with_moved("beliefs", rec.beliefs, payload), strict=True
        ):
            # Only the last version of a belief in one commit is written: each id then appears
            # once in the upsert, so a belief is either new (indexed after the upsert) or an
            # update of a row already indexed (re-indexed by its trigger), never both.
            self.beliefs.pop(belief.id, None)
            row = self.beliefs[belief.id] = _belief_row(belief, _dumps(doc))
            # History keeps one version per event (the last one, should an event repeat an id).
            start = micros(belief.updated_at)
            values = (belief.id, belief.version, start, None, *row[1:15], row[16])
            version = (belief.id, start, values)
            if belief.id in in_event:
                self.versions[in_event[belief.id]] = version
            else:
                in_event[belief.id] = len(self.versions)
                self.versions.append(version)
        for decision, doc in zip(rec.decisions, payload.get("decisions", ()), strict=True):
            self.decisions.pop(decision.id, None)  # keep the last version, in order
            self.decisions[decision.id] = (decision, _dumps(doc))
        if rec.actions:
            self.actions.extend(
                (a.id, a.decision_id, a.session_id, _dumps(d))
                for a, d in zip(rec.actions, payload["actions"], strict=True)
            )
        if rec.outcomes:
            self.outcomes.extend(
                (o.id, o.action_id, o.session_id, _dumps(d))
                for o, d in zip(rec.outcomes, payload["outcomes"], strict=True)
            )
        if rec.revisions:
            self.revisions.extend(
                (r.id, r.belief_id, micros(r.created_at), _dumps(d), seq)
                for r, d in zip(rec.revisions, payload["revisions"], strict=True)
            )
        for contradiction, doc in zip(
            rec.contradictions, payload.get("contradictions", ()), strict=True
        ):
            self.contradictions.pop(contradiction.id, None)
            self.contradictions[contradiction.id] = (contradiction, _dumps(doc))
        if rec.bindings:
            self.bindings.extend(
                (b.store, b.belief_id, b.store_id, _dumps(d))
                for b, d in zip(rec.bindings, payload["bindings"], strict=True)
            )

    def _write_versions(self, conn: sqlite3.Connection) -> None:
        closes, rows = _version_rows(self.versions)
        conn.executemany(schema.CLOSE_VERSION, closes)
        conn.executemany(schema.INSERT_VERSION, rows)

    def write(self, conn: sqlite3.Connection, *, index_new_beliefs: bool) -> None:
        if self.versions:
            self._write_versions(conn)
        if self.first_versions:
            conn.executemany(schema.INSERT_VERSION, self.first_versions)
        if self.members:
            conn.executemany(schema.INSERT_BATCH_MEMBER, self.members)
        if self.beliefs or self.new_beliefs:
            (before,) = conn.execute(schema.MAX_BELIEF_RID).fetchone()
            if self.beliefs:
                conn.executemany(schema.UPSERT_BELIEF, self.beliefs.values())
            if self.new_beliefs:
                conn.executemany(schema.INSERT_BELIEF, self.new_beliefs)
            if index_new_beliefs:
                conn.execute(schema.INDEX_NEW_BELIEFS, (before,))
            conn.execute(schema.INDEX_NEW_ADMISSIBLE, (before,))
        for sql, rows in (
            (schema.UPSERT_SESSION, self.sessions),
            (schema.UPSERT_OBSERVATION, self.observations),
            (schema.UPSERT_CLAIM, self.claims),
            (schema.UPSERT_EVIDENCE, self.evidence),
            (schema.UPSERT_ACTION, self.actions),
            (schema.UPSERT_OUTCOME, self.outcomes),
            (schema.UPSERT_REVISION, self.revisions),
            (schema.UPSERT_BINDING, self.bindings),
            (schema.INSERT_BINDING, self.new_bindings),
        ):
            if rows:
                conn.executemany(sql, rows)
        if self.decisions:
            decisions = list(self.decisions.values())
            conn.executemany(
                schema.UPSERT_DECISION,
                [(d.id, d.session_id, micros(d.created_at), doc) for d, doc in decisions],
            )
            conn.executemany(schema.DELETE_DECISION_DEPS, [(d.id,) for d, _ in decisions])
            conn.executemany(
                schema.INSERT_DECISION_DEP,
                [(b, d.id) for d, _ in decisions for b in d.depends_on],
            )
        if self.contradictions:
            found = list(self.contradictions.values())
            conn.executemany(
                schema.UPSERT_CONTRADICTION,
                [(c.id, micros(c.detected_at), doc) for c, doc in found],
            )
            conn.executemany(schema.DELETE_CONTRADICTION_MEMBERS, [(c.id,) for c, _ in found])
            conn.executemany(
                schema.INSERT_CONTRADICTION_MEMBER,
                [(b, c.id) for c, _ in found for b in c.belief_ids],
            )


def _conditions(where: BeliefFilter, *, id_column: str) -> tuple[list[str], list[Any]] | None:
    """The SQL conditions of ``where`` on alias ``b`` (``beliefs`` or ``belief_versions``),
    or None when nothing can match. Only the status and scoping columns may pick an index (the
    unary ``+`` keeps the others out of index selection)."""
    conds: list[str] = []
    params: list[Any] = []
    statuses = status_conditions(where)
    if statuses is None:
        return None
    for column, ordered in statuses:
        if len(ordered) == 1:
            conds.append(f"b.{column} = ?")
        else:
            conds.append(f"b.{column} IN ({','.join('?' * len(ordered))})")
        params.extend(ordered)
    if where.max_sensitivity is not None:
        conds.append("+b.sensitivity_rank <= ?")
        params.append(SENSITIVITY_RANK[where.max_sensitivity])
    if where.anchor_after is not None:
        conds.append("+b.anchor_us >= ?")
        params.append(micros(where.anchor_after))
    if where.not_expired_at is not None:
        conds.append("(+b.expires_us IS NULL OR +b.expires_us > ?)")
        params.append(micros(where.not_expired_at))
    if where.project is not None:
        conds.append("(+b.project = ? OR +b.scope = ?)")
        params.extend((where.project, Scope.GLOBAL))
    if where.user is not None:
        conds.append("(+b.scope <> ? OR +b.user = ?)")
        params.extend((Scope.USER, where.user))
    if where.subject_prefix is not None:
        # a range on the subject index: every text starting with the prefix sorts inside it
        conds.append("b.subject >= ? AND b.subject < ?")
        params.extend((where.subject_prefix, where.subject_prefix + "\U0010ffff"))
    for column, value in equality_conditions(where):
        conds.append(f"b.{column} = ?")
        params.append(value)
    if where.exclude_ids:
        conds.append(f"+b.{id_column} NOT IN ({','.join('?' * len(where.exclude_ids))})")
        params.extend(sorted(where.exclude_ids))
    return conds, params


def _version_rows(
    versions: list[tuple[str, int, tuple[Any, ...]]],
) -> tuple[list[tuple[int, str]], list[tuple[Any, ...]]]:
    """``(closes, inserts)`` for versions in commit order: each belief's first version closes
    the open row already stored, later ones close the previous version of the same commit."""
    closes: list[tuple[int, str]] = []
    rows: list[tuple[Any, ...]] = []
    open_at: dict[str, int] = {}
    for belief_id, start, row in versions:
        index = open_at.get(belief_id)
        if index is None:
            closes.append((start, belief_id))
        else:
            prev = rows[index]
            rows[index] = (*prev[:3], max(start, prev[2]), *prev[4:])
        open_at[belief_id] = len(rows)
        rows.append(row)
    return closes, rows


def _revision_keys(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The indexed columns a revision row would hold for the revision ``doc``."""
    created = micros(datetime.fromisoformat(str(doc["created_at"]).replace("Z", "+00:00")))
    return {"belief_id": doc["belief_id"], "created_us": created}


def _belief_row(b: chain.Belief, doc: bytes) -> tuple[Any, ...]:
    # the document twice: the row's, and the seal's input (``schema.BELIEF_COLUMNS``)
    return (b.id, *belief_keys(b), " ".join(index_tokens(b.statement)), doc, doc)


def _statements(script: str) -> Iterator[str]:
    """Split a DDL script into statements (trigger bodies included) without executescript,
    which would commit the surrounding transaction."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            buffer = ""
            if statement:
                yield statement


__all__ = ["SQLiteStore"]
