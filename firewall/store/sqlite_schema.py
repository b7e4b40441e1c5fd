"""The SQLite schema (version 8): the event log, the projections and the full-text index.

Each projection row keeps the record's full JSON in ``doc`` (what reads return) next to the few
columns that filters and indexes need. Times used for filtering or ordering are stored as integer
microseconds since the epoch, so comparisons are exact and timezone-proof.

Full-text search is an external-content FTS5 table over ``beliefs.terms``, which holds
``" ".join(firewall.model.text.tokens(statement))``: Python tokenizes, FTS5 only splits on the
spaces, so
SQLite matches exactly the tokens the memory backend matches and FTS5's ``bm25()`` computes the same
score the memory backend computes.

Version 2 indexes *new* beliefs from the store's write path (:data:`INDEX_NEW_BELIEFS`, one
``INSERT … SELECT`` per commit) instead of a row trigger: in SQLite before 3.43 every statement a
trigger runs opens a savepoint, and FTS5 flushes its pending terms to a new segment at each
savepoint, so a per-row trigger wrote one tiny segment per belief and then merged them (measured:
~4x slower inserts). Triggers still keep the index in step when a belief's terms change or a row
is deleted. A version 1 file keeps its insert trigger and is written in that mode
(``SQLiteStore`` checks for the trigger when it opens), so old and new files both stay exact.

Version 3 adds ``bindings`` (beliefs written through to an external memory store, see
:class:`~firewall.model.chain.StoreBinding`). Opening a version 1 or 2 file adds the table under
the write
lock (:data:`BINDINGS_DDL` is idempotent) and records version 3; nothing else changes.

Version 4 adds ``belief_versions``, the belief history: one row per version an event wrote, with
the time range the *system* held it (``from_us`` = the version's ``updated_at``, ``until_us`` = the
next version's, NULL for the current one), written in the commit that writes the belief. It has
the filter columns of ``beliefs``, so "what did I believe at T" is one indexed query: by id
(``belief_versions_id``), by subject and predicate or subject prefix (``belief_versions_subject``),
by text (FTS5 on the belief's statement, which never changes, joined on ``belief_id``). Opening an
older file creates the table and fills it from the event log, whose events carry every version.

Version 5 adds ``revisions_grant``, an index on the grant id inside each revision's document
(:data:`REVISION_GRANT`), so that "was this single-use grant already spent?" is one lookup. Opening
an older file creates the index.

Version 6 adds ``beliefs_fts_ok``, a second FTS5 index over the same ``terms`` that holds only
the *admissible* beliefs (supported, normal and clean: the states the default policy admits). A
text query whose status conditions lie inside that set (the default policy's accept query)
matches against it instead of the whole corpus, so its cost grows with the admissible matches,
not with every stored text (FTS5 ranks every match it finds). It is kept exact in the transaction
of every write: new admissible beliefs by :data:`INDEX_NEW_ADMISSIBLE`, every later move by the
triggers below. Every other condition is still checked on the joined ``beliefs`` row, and what
the query returns is re-checked against the policy and the hard floor at read time. Its BM25
statistics are those of the admissible beliefs: relevance *among what may be shown*, so the
order (and, at a small ``k``, the set) can differ from a ranking over the whole corpus. Opening
an older file creates and fills it.

Version 8 adds ``events_request``, a partial index of the action kernel's events (kinds
``action.*`` and ``approval.*``) by the request id in their payload (:data:`REQUEST_ID`), so the
kernel reads one request's state from that request's events instead of folding the whole log.
Opening an older file creates it.

Version 9 stores an import batch (:mod:`firewall.log.batch`) with one document per record. The
claims and evidence items of a batch get no row of their own: ``batch_members`` maps each
claim id to its batch event and its row there, and reads derive both documents from that
(hash-chained) event, checking that the row they find names the claim asked for. A belief's
first history version, when the batch writes it, holds an empty ``doc``: the open version is
the belief's current document, which :data:`VERSION_DOC` reads in its place and
:data:`CLOSE_VERSION` copies into the row when a newer version closes it. A replay writes an
import batch the same way; every other write still writes full rows, and reads accept both.
Opening an older file creates the table.

Version 10 writes a move batch (:mod:`firewall.log.moves`) with one document rewrite per belief:
the belief's own. Its history row holds no document either: ``move_seq`` and ``move_row`` name
the batch event and the row there, and the revisions the move records get no row of their own
(reads derive them from that hash-chained event, checking that the row names the belief and
version asked for and re-checking each transition against the gate's table). A closed history
row with an empty document is read as the next stored document of the same belief (a later
version's, else the belief's current one) with this row's axis states, version and time put
back (:data:`VERSION_DOC`): a move changes nothing else. Closing the open version by a move
therefore copies no document, unless the document's ``updated_at`` is not the text that rule
would put back (another offset than UTC), in which case the row keeps the document. A
revision row written by any other event records its ``seq``, so that stored and derived
revisions of one belief read back in log order. Opening a version 9 file adds the columns.

Version 11 adds ``events.seal``: the host's seal of each event (:mod:`firewall.log.seal`), NULL
for an event written before sealing existed. Opening an older file adds the column; its events
stay unsealed (read-only for authority until adopted, see ``docs/threat-model.md``).

Version 12 adds ``beliefs.seal``: the host's MAC of the row's document, made in SQL by the
function the host's connection registers (:data:`ROW_SEAL_FUNCTION`, also on a move batch's
rewrite) and checked by every belief read of a store that holds its key. Opening an older
file adds the column and ``beliefs_unsealed`` (the rows with no seal); a store opened with its
key that finds any there re-derives the projections from the verified log, which seals them.

Status facets are deliberately *not* in the FTS index. Pushing ``facets:(t_supported)`` into the
MATCH expression was measured ~10x slower at 100k beliefs (p50 9.8 ms against 1.1 ms): FTS5's
``bm25()`` computes an IDF for every phrase of the query by walking that phrase's whole doclist, and
a status token's doclist is as long as the table. The status conditions are evaluated on the joined
beliefs row instead, which costs one rowid lookup per text match.

Index choice for recall without text: ``beliefs_recall`` has the three status columns (equality in
every policy) followed by the result order, so a policy recall walks the newest matching beliefs
and stops at ``LIMIT`` instead of sorting every match. Its trailing columns are every other column a
policy filters on, so rejected rows are discarded from the index alone (a recall where nothing
qualifies scans index entries, ~4 ms at 100k, instead of table rows, ~45 ms). Queries naming a
subject or a session use those indexes instead (see ``SQLiteStore._belief_query``).
"""

from __future__ import annotations

from gnomon.firewall.store.base import REQUEST_KIND_PREFIXES
from gnomon.firewall.store.sql_common import (
    ADMISSIBLE_RETRIEVAL,
    ADMISSIBLE_SECURITY,
    ADMISSIBLE_TRUTH,
    BeliefKeys,
)

SCHEMA_VERSION = 12
APPLICATION = "gnomon"

FTS_TOKENIZE = "unicode61 remove_diacritics 2 tokenchars '_'"

#: The grant id of a revision row, as ``revisions_grant`` indexes it (queries must say it exactly).
REVISION_GRANT = "json_extract(CAST(doc AS TEXT), '$.grant_id')"

#: The request id of an action-request event, and which events have one, as ``events_request``
#: indexes them (queries must say both exactly, or the planner cannot use the partial index).
REQUEST_ID = "json_extract(CAST(body AS TEXT), '$.payload.request_id')"
REQUEST_KINDS = (
    "(" + " OR ".join(f"substr(kind, 1, {len(p)}) = '{p}'" for p in REQUEST_KIND_PREFIXES) + ")"
)

#: Version 8: action-request events by request id (``SQLiteStore.request_events``). Partial, so
#: only the kernel's events are parsed when they are written. Idempotent.
REQUEST_INDEX_DDL = (
    f"CREATE INDEX IF NOT EXISTS events_request ON events ({REQUEST_ID}) WHERE {REQUEST_KINDS};"
)

#: The indexed columns of a belief (:class:`~firewall.store.sql_common.BeliefKeys`), as
#: ``beliefs`` and its history ``belief_versions`` (version 4) both declare them. Part of
#: applied schemas: never edit it (a change belongs in a new version).
_BELIEF_KEYS = """\
    truth            TEXT NOT NULL,
    retrieval        TEXT NOT NULL,
    security         TEXT NOT NULL,
    freshness        TEXT NOT NULL,
    sensitivity_rank INTEGER NOT NULL,
    anchor_us        INTEGER NOT NULL,
    observed_us      INTEGER NOT NULL,
    expires_us       INTEGER,
    project          TEXT NOT NULL,
    scope            TEXT NOT NULL,
    user             TEXT,
    subject          TEXT,
    predicate        TEXT,
    session_id       TEXT,"""

DDL = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    session_id TEXT,
    body       BLOB NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);
CREATE INDEX events_session ON events (session_id);

CREATE TABLE sessions (
    id      TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    doc     BLOB NOT NULL
);

CREATE TABLE observations (
    id         TEXT PRIMARY KEY,
    session_id TEXT,
    doc        BLOB NOT NULL
);
CREATE INDEX observations_session ON observations (session_id);

CREATE TABLE claims (
    id  TEXT PRIMARY KEY,
    doc BLOB NOT NULL
);

CREATE TABLE evidence (
    id       TEXT PRIMARY KEY,
    claim_id TEXT NOT NULL,
    doc      BLOB NOT NULL
);
CREATE INDEX evidence_claim ON evidence (claim_id);

CREATE TABLE beliefs (
    rid              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
{_BELIEF_KEYS}
    terms            TEXT NOT NULL,
    doc              BLOB NOT NULL,
    seal             BLOB
);
CREATE INDEX beliefs_recall ON beliefs (
    truth, retrieval, security, observed_us DESC, id,
    freshness, sensitivity_rank, anchor_us, expires_us, project, scope, user
);
CREATE INDEX beliefs_recent ON beliefs (observed_us DESC, id);
CREATE INDEX beliefs_subject ON beliefs (subject, predicate, project);
CREATE INDEX beliefs_session ON beliefs (session_id);

CREATE VIRTUAL TABLE beliefs_fts USING fts5 (
    terms,
    content = 'beliefs', content_rowid = 'rid',
    tokenize = "{FTS_TOKENIZE}"
);
CREATE TRIGGER beliefs_fts_delete AFTER DELETE ON beliefs BEGIN
    INSERT INTO beliefs_fts (beliefs_fts, rowid, terms) VALUES ('delete', old.rid, old.terms);
END;
CREATE TRIGGER beliefs_fts_update AFTER UPDATE OF terms ON beliefs
    WHEN old.terms IS NOT new.terms BEGIN
    INSERT INTO beliefs_fts (beliefs_fts, rowid, terms) VALUES ('delete', old.rid, old.terms);
    INSERT INTO beliefs_fts (rowid, terms) VALUES (new.rid, new.terms);
END;

CREATE TABLE decisions (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    doc        BLOB NOT NULL
);
CREATE INDEX decisions_session ON decisions (session_id);

CREATE TABLE decision_deps (
    belief_id   TEXT NOT NULL,
    decision_id TEXT NOT NULL,
    PRIMARY KEY (belief_id, decision_id)
) WITHOUT ROWID;
CREATE INDEX decision_deps_decision ON decision_deps (decision_id);

CREATE TABLE actions (
    id          TEXT PRIMARY KEY,
    decision_id TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    doc         BLOB NOT NULL
);
CREATE INDEX actions_decision ON actions (decision_id);

CREATE TABLE outcomes (
    id         TEXT PRIMARY KEY,
    action_id  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    doc        BLOB NOT NULL
);
CREATE INDEX outcomes_action ON outcomes (action_id);

CREATE TABLE revisions (
    rid        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    belief_id  TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    doc        BLOB NOT NULL,
    seq        INTEGER
);
CREATE INDEX revisions_belief ON revisions (belief_id, created_us, rid);
CREATE INDEX revisions_grant ON revisions ({REVISION_GRANT});

CREATE TABLE contradictions (
    id          TEXT PRIMARY KEY,
    detected_us INTEGER NOT NULL,
    doc         BLOB NOT NULL
);

CREATE TABLE contradiction_members (
    belief_id        TEXT NOT NULL,
    contradiction_id TEXT NOT NULL,
    PRIMARY KEY (belief_id, contradiction_id)
) WITHOUT ROWID;
CREATE INDEX contradiction_members_contradiction ON contradiction_members (contradiction_id);
"""


def _admissible(row: str) -> str:
    """The states a belief must have to be in ``beliefs_fts_ok`` (as SQL on a ``beliefs`` row)."""
    return (
        f"{row}.truth = '{ADMISSIBLE_TRUTH}' AND {row}.retrieval = '{ADMISSIBLE_RETRIEVAL}' "
        f"AND {row}.security = '{ADMISSIBLE_SECURITY}'"
    )


#: Version 6: the admissible-state text index and the triggers that keep it exact on every
#: update and delete (new rows are indexed by :data:`INDEX_NEW_ADMISSIBLE`). Idempotent.
ADMISSIBLE_DDL = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS beliefs_fts_ok USING fts5 (
    terms,
    content = 'beliefs', content_rowid = 'rid',
    tokenize = "{FTS_TOKENIZE}"
);
CREATE TRIGGER IF NOT EXISTS beliefs_fts_ok_delete AFTER DELETE ON beliefs
    WHEN {_admissible("old")} BEGIN
    INSERT INTO beliefs_fts_ok (beliefs_fts_ok, rowid, terms) VALUES ('delete', old.rid, old.terms);
END;
CREATE TRIGGER IF NOT EXISTS beliefs_fts_ok_leave AFTER UPDATE ON beliefs
    WHEN ({_admissible("old")}) AND (NOT ({_admissible("new")}) OR old.terms IS NOT new.terms)
    BEGIN
    INSERT INTO beliefs_fts_ok (beliefs_fts_ok, rowid, terms) VALUES ('delete', old.rid, old.terms);
END;
CREATE TRIGGER IF NOT EXISTS beliefs_fts_ok_enter AFTER UPDATE ON beliefs
    WHEN ({_admissible("new")}) AND (NOT ({_admissible("old")}) OR old.terms IS NOT new.terms)
    BEGIN
    INSERT INTO beliefs_fts_ok (rowid, terms) VALUES (new.rid, new.terms);
END;
"""
#: Fill the admissible index from the rows an older file already holds.
FILL_ADMISSIBLE = (
    f"INSERT INTO beliefs_fts_ok (rowid, terms) SELECT rid, terms FROM beliefs b "
    f"WHERE {_admissible('b')}"
)
#: Index the admissible beliefs inserted since rowid ``?`` (see :data:`INDEX_NEW_BELIEFS`).
INDEX_NEW_ADMISSIBLE = FILL_ADMISSIBLE + " AND b.rid > ?"

#: Version 5: applied by the upgrade at open (new stores have it in :data:`DDL`).
GRANT_INDEX_DDL = f"CREATE INDEX IF NOT EXISTS revisions_grant ON revisions ({REVISION_GRANT});"

#: Version 3: one row per (store, belief). Applied by new stores and by the upgrade at open.
BINDINGS_DDL = """
CREATE TABLE IF NOT EXISTS bindings (
    store     TEXT NOT NULL,
    belief_id TEXT NOT NULL,
    store_id  TEXT,
    doc       BLOB NOT NULL,
    PRIMARY KEY (store, belief_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bindings_store_id ON bindings (store, store_id);
CREATE INDEX IF NOT EXISTS bindings_belief ON bindings (belief_id, store);
"""

#: Version 6: one row per executed action request (the action kernel's exactly-once claim).
CLAIMS_DDL = """
CREATE TABLE IF NOT EXISTS execution_claims (
    request_id TEXT PRIMARY KEY,
    seq        INTEGER
) WITHOUT ROWID;
"""

#: Version 4: the belief history. Applied by new stores and by the upgrade at open.
HISTORY_DDL = f"""
CREATE TABLE IF NOT EXISTS belief_versions (
    rid              INTEGER PRIMARY KEY,
    belief_id        TEXT NOT NULL,
    version          INTEGER NOT NULL,
    from_us          INTEGER NOT NULL,
    until_us         INTEGER,
{_BELIEF_KEYS}
    doc              BLOB NOT NULL,
    move_seq         INTEGER,
    move_row         INTEGER
);
CREATE INDEX IF NOT EXISTS belief_versions_id ON belief_versions (belief_id, from_us);
CREATE INDEX IF NOT EXISTS belief_versions_subject
    ON belief_versions (subject, predicate, from_us);
CREATE INDEX IF NOT EXISTS belief_versions_from ON belief_versions (from_us);
"""

#: ``beliefs`` columns copied into ``belief_versions`` (everything but the text index terms).
VERSION_COLUMNS = ("belief_id", "version", "from_us", "until_us", *BeliefKeys._fields, "doc")
INSERT_VERSION = (
    f"INSERT INTO belief_versions ({', '.join(VERSION_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in VERSION_COLUMNS)})"
)
#: Close the open version of a belief when a newer one arrives (never before its own start);
#: a version stored without its document (version 8) takes the belief's document first, so
#: this must run before the belief's row is overwritten.
CLOSE_VERSION = (
    "UPDATE belief_versions SET until_us = max(from_us, ?), doc = CASE WHEN length(doc) > 0 "
    "THEN doc ELSE coalesce((SELECT c.doc FROM beliefs c WHERE c.id = belief_versions.belief_id), "
    "doc) END WHERE belief_id = ? AND until_us IS NULL"
)


def time_text(micros_sql: str) -> str:
    """SQL for the text a record document writes for the UTC time ``micros_sql`` (integer
    microseconds): ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, as ``to_json_dict`` gives it."""
    return (
        f"(strftime('%Y-%m-%dT%H:%M:%S', {micros_sql} / 1000000, 'unixepoch') || "
        f"CASE WHEN {micros_sql} % 1000000 = 0 THEN '' "
        f"ELSE printf('.%06d', {micros_sql} % 1000000) END || 'Z')"
    )


#: Version 10: close the open version of every belief a move batch moves (the ids in the
#: batch's temporary ``move_rows`` table, :mod:`firewall.store.sqlite_moves`): no document is
#: copied (the closed row is read as the next document with its own states put back,
#: :data:`VERSION_DOC`) unless the belief's ``updated_at`` is not the text that puts back.
#: Runs before the beliefs' rows are updated.
CLOSE_VERSION_BY_MOVE = (
    "UPDATE belief_versions SET until_us = max(from_us, ?), doc = CASE WHEN length(doc) > 0 "
    "THEN doc ELSE coalesce((SELECT c.doc FROM beliefs c WHERE c.id = belief_versions.belief_id "
    f"AND json_extract(CAST(c.doc AS TEXT), '$.updated_at') IS NOT {time_text('from_us')}), "
    "doc) END WHERE belief_id IN (SELECT id FROM temp.move_rows) AND until_us IS NULL"
)
#: The next stored document after history row ``b``: a later version's, else the belief's.
_NEXT_DOC = (
    "coalesce((SELECT n.doc FROM belief_versions n WHERE n.belief_id = b.belief_id "
    "AND length(n.doc) > 0 "
    "AND (n.from_us > b.from_us OR (n.from_us = b.from_us AND n.rid > b.rid)) "
    "ORDER BY n.from_us, n.rid LIMIT 1), (SELECT c.doc FROM beliefs c WHERE c.id = b.belief_id))"
)
#: True for a history row (alias ``b``) whose document is derived from a later one.
VERSION_DERIVED = "(length(b.doc) = 0 AND b.until_us IS NOT NULL)"
#: A history row's document (alias ``b``): its own; for the open version stored without one
#: (an import batch's first version, a move's), the belief's current document; for a closed
#: version stored without one (version 10, moved on by a move batch), the next stored document
#: with this row's axis states, version and time put back.
VERSION_DOC = (
    "CASE WHEN length(b.doc) > 0 THEN b.doc "
    "WHEN b.until_us IS NULL THEN (SELECT c.doc FROM beliefs c WHERE c.id = b.belief_id) "
    f"ELSE CAST(json_set(CAST({_NEXT_DOC} AS TEXT), '$.truth_status', b.truth, "
    "'$.retrieval_status', b.retrieval, '$.security_status', b.security, "
    "'$.freshness_status', b.freshness, '$.version', b.version, "
    f"'$.updated_at', {time_text('b.from_us')}) AS BLOB) END"
)
#: Version 10: the columns an older file gets (``belief_versions``: the move batch that made
#: a version; ``revisions``: the event that wrote a stored revision).
MOVE_COLUMNS = (
    ("belief_versions", "move_seq"),
    ("belief_versions", "move_row"),
    ("revisions", "seq"),
)

#: Version 8: claims and evidence items of import batches, derived from their event on read.
BATCH_DDL = """
CREATE TABLE IF NOT EXISTS batch_members (
    claim_id TEXT PRIMARY KEY,
    seq      INTEGER NOT NULL,
    row      INTEGER NOT NULL
) WITHOUT ROWID;
"""
INSERT_BATCH_MEMBER = "INSERT INTO batch_members (claim_id, seq, row) VALUES (?, ?, ?)"
#: A batch member's event body, its row index and the event's hash.
BATCH_MEMBER = (
    "SELECT m.row, e.seq, e.hash, e.body FROM batch_members m JOIN events e ON e.seq = m.seq "
    "WHERE m.claim_id = ?"
)

#: ``beliefs`` columns a belief's row is written with: the seal last, computed from the
#: document by the connection's :data:`ROW_SEAL_FUNCTION` (the row's tuple repeats the document).
BELIEF_COLUMNS = ("id", *BeliefKeys._fields, "terms", "doc", "seal")
#: The SQL function a store's connection registers to seal a belief row's document (version 12):
#: the host's keyed MAC (:meth:`~firewall.log.seal.Sealer.row_tag`), NULL without the key.
ROW_SEAL_FUNCTION = "gnomon_row_seal"
_BELIEF_MARKS = ", ".join(["?"] * (len(BELIEF_COLUMNS) - 1) + [f"{ROW_SEAL_FUNCTION}(?)"])


def upsert(table: str, columns: tuple[str, ...], key: str = "id", marks: str | None = None) -> str:
    """``INSERT … ON CONFLICT(key) DO UPDATE``: a new version keeps the row (and its rowid)."""
    names = ", ".join(columns)
    marks = marks or ", ".join("?" for _ in columns)
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
    return (
        f"INSERT INTO {table} ({names}) VALUES ({marks}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )


UPSERT_SESSION = upsert("sessions", ("id", "project", "doc"))
UPSERT_OBSERVATION = upsert("observations", ("id", "session_id", "doc"))
UPSERT_CLAIM = upsert("claims", ("id", "doc"))
UPSERT_EVIDENCE = upsert("evidence", ("id", "claim_id", "doc"))
UPSERT_BELIEF = upsert("beliefs", BELIEF_COLUMNS, marks=_BELIEF_MARKS)
#: A belief new in this commit (an import batch's fresh ids): a plain insert, about half the
#: cost of the upsert; an id that did exist fails the whole commit instead of overwriting.
INSERT_BELIEF = f"INSERT INTO beliefs ({', '.join(BELIEF_COLUMNS)}) VALUES ({_BELIEF_MARKS})"
UPSERT_DECISION = upsert("decisions", ("id", "session_id", "created_us", "doc"))
UPSERT_ACTION = upsert("actions", ("id", "decision_id", "session_id", "doc"))
UPSERT_OUTCOME = upsert("outcomes", ("id", "action_id", "session_id", "doc"))
UPSERT_REVISION = upsert("revisions", ("id", "belief_id", "created_us", "doc", "seq"))
UPSERT_CONTRADICTION = upsert("contradictions", ("id", "detected_us", "doc"))
INSERT_BINDING = "INSERT INTO bindings (store, belief_id, store_id, doc) VALUES (?, ?, ?, ?)"
UPSERT_BINDING = (
    "INSERT INTO bindings (store, belief_id, store_id, doc) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (store, belief_id) DO UPDATE SET store_id = excluded.store_id, doc = excluded.doc"
)

#: Version 11: the host's seal of each event (NULL: written before sealing).
SEAL_COLUMN_DDL = "ALTER TABLE events ADD COLUMN seal BLOB"
#: Version 12: the host's seal of each belief row (NULL: written before row sealing).
ROW_SEAL_COLUMN_DDL = "ALTER TABLE beliefs ADD COLUMN seal BLOB"
#: Version 12: the rows without a seal (empty once resealed), so that opening with the key finds
#: them without a scan. Idempotent.
UNSEALED_INDEX_DDL = (
    "CREATE INDEX IF NOT EXISTS beliefs_unsealed ON beliefs (rid) WHERE seal IS NULL"
)
#: Whether any belief row has no seal.
ANY_UNSEALED = "SELECT 1 FROM beliefs INDEXED BY beliefs_unsealed WHERE seal IS NULL LIMIT 1"
INSERT_EVENT = (
    "INSERT INTO events (seq, kind, at, actor, session_id, body, prev_hash, hash, seal) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
#: The name of the version 1 row trigger that indexed each inserted belief.
V1_INSERT_TRIGGER = "beliefs_fts_insert"
#: Index the beliefs inserted since rowid ``?`` (new rows get ``max(rid) + 1``; an upsert of an
#: existing belief keeps its rowid and is re-indexed by ``beliefs_fts_update``).
INDEX_NEW_BELIEFS = (
    "INSERT INTO beliefs_fts (rowid, terms) SELECT rid, terms FROM beliefs WHERE rid > ?"
)
MAX_BELIEF_RID = "SELECT coalesce(max(rid), 0) FROM beliefs"
DELETE_DECISION_DEPS = "DELETE FROM decision_deps WHERE decision_id = ?"
INSERT_DECISION_DEP = "INSERT OR IGNORE INTO decision_deps (belief_id, decision_id) VALUES (?, ?)"
DELETE_CONTRADICTION_MEMBERS = "DELETE FROM contradiction_members WHERE contradiction_id = ?"
INSERT_CONTRADICTION_MEMBER = (
    "INSERT OR IGNORE INTO contradiction_members (belief_id, contradiction_id) VALUES (?, ?)"
)

__all__ = [
    "ADMISSIBLE_DDL",
    "ANY_UNSEALED",
    "APPLICATION",
    "BATCH_DDL",
    "BELIEF_COLUMNS",
    "BINDINGS_DDL",
    "CLAIMS_DDL",
    "DDL",
    "FTS_TOKENIZE",
    "GRANT_INDEX_DDL",
    "HISTORY_DDL",
    "REQUEST_ID",
    "REQUEST_INDEX_DDL",
    "REQUEST_KINDS",
    "REVISION_GRANT",
    "ROW_SEAL_COLUMN_DDL",
    "ROW_SEAL_FUNCTION",
    "SCHEMA_VERSION",
    "SEAL_COLUMN_DDL",
    "UNSEALED_INDEX_DDL",
]
