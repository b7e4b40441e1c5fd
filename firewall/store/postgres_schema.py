"""The PostgreSQL schema: versioned migrations for the log, the projections and full-text search.

Every table carries ``tenant`` as the first column of its primary key, so every index a query can
use starts with the tenant and no read can reach another tenant's rows by accident of a plan.

* ``schema_migrations`` records each applied migration (``version``, ``name``, ``applied_at``).
  A store refuses to open a schema that is older ("run ``gnomon db upgrade``") or newer ("upgrade
  gnomon") than :data:`SCHEMA_VERSION`; :func:`pending` lists what ``gnomon db upgrade`` applies.
* ``chain_heads`` holds one row per tenant: the chain head ``(seq, hash)`` and the corpus
  statistics BM25 needs (belief count, total token count). A commit locks that row with
  ``SELECT … FOR UPDATE`` before it seals anything, so appends of one tenant queue on it (across
  processes and machines) and the sequence stays gap-free; other tenants are not blocked.
* ``term_stats`` holds each tenant's document frequency per index token, kept in step by the
  commit that holds the head lock: the IDF of a query term is one primary-key lookup instead of a
  count over the term's whole posting list.
* ``beliefs.tsv`` is a ``tsvector`` built from the tokens :func:`firewall.model.text.tokens`
produces
  (not from PostgreSQL's parser, which splits words differently), one position per occurrence so
  that the term frequency is the length of a lexeme's position list; a GIN index serves
  ``tsv @@ 'a' | 'b'``. Ranking is BM25 with the memory backend's constants (see
  ``PostgresStore``), not ``ts_rank``, which has no inverse document frequency.

``beliefs.gate`` (schema 7) is a ``tsvector`` the database derives from each row (a generated
column, so no writer can set it apart from the row): one lexeme naming the row's tenant and
project (``p:``), one for a global belief (``g:``), and, while the belief holds the admissible
states, the same again prefixed ``a`` (plus ``a:`` + tenant). ``beliefs_text`` is one GIN index on
``(tsv, gate)``: a text query of a recall intersects the term postings with the reader's project,
and for the accept query with the admissible beliefs of it, inside one index scan, instead of
ranking every text match in the store. The gate only narrows candidates: every condition is still
in the statement, and every row is re-checked in Python by the recall.

Index choice for the policy filters: ``beliefs_recall`` leads with the three status columns every
policy pins by equality, then the result order, so a recall without text walks the newest matching
beliefs and stops at ``LIMIT``; ``beliefs_recent`` serves unfiltered listings; subject, session and
project lookups have their own indexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gnomon.firewall.model.states import Scope
from gnomon.firewall.store.sql_common import (
    ADMISSIBLE_RETRIEVAL,
    ADMISSIBLE_SECURITY,
    ADMISSIBLE_TRUTH,
)

GLOBAL_SCOPE = Scope.GLOBAL.value

SCHEMA_VERSION = 9

#: Taken (session-scoped) by whoever creates or migrates a schema, so that two processes
#: opening a fresh database at once do not both run the DDL. The value is arbitrary but fixed.
MIGRATION_LOCK = 0x676E6F6D6F6E  # "gnomon"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


#: The indexed columns of a belief (:class:`~firewall.store.sql_common.BeliefKeys`), as
#: ``beliefs`` (version 1) and its history ``belief_versions`` (version 3) both declare them.
#: Part of two applied migrations: never edit it (a change belongs in a new migration).
_BELIEF_KEYS = """\
    truth            text     NOT NULL,
    retrieval        text     NOT NULL,
    security         text     NOT NULL,
    freshness        text     NOT NULL,
    sensitivity_rank smallint NOT NULL,
    anchor_us        bigint   NOT NULL,
    observed_us      bigint   NOT NULL,
    expires_us       bigint,
    project          text     NOT NULL,
    scope            text     NOT NULL,
    user_id          text,
    subject          text,
    predicate        text,
    session_id       text,"""

_V1 = f"""
CREATE TABLE chain_heads (
    tenant        text   PRIMARY KEY,
    seq           bigint NOT NULL,
    hash          text   NOT NULL,
    belief_count  bigint NOT NULL DEFAULT 0,
    belief_tokens bigint NOT NULL DEFAULT 0
);

CREATE TABLE events (
    tenant     text   NOT NULL,
    seq        bigint NOT NULL,
    kind       text   NOT NULL,
    at         text   NOT NULL,
    actor      text   NOT NULL,
    session_id text,
    body       bytea  NOT NULL,
    prev_hash  text   NOT NULL,
    hash       text   NOT NULL,
    PRIMARY KEY (tenant, seq)
);
CREATE INDEX events_session ON events (tenant, session_id);

CREATE TABLE sessions (
    tenant  text  NOT NULL,
    id      text  NOT NULL,
    project text  NOT NULL,
    doc     bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE observations (
    tenant     text  NOT NULL,
    id         text  NOT NULL,
    session_id text,
    doc        bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX observations_session ON observations (tenant, session_id);

CREATE TABLE claims (
    tenant text  NOT NULL,
    id     text  NOT NULL,
    doc    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE evidence (
    rid      bigint GENERATED ALWAYS AS IDENTITY,
    tenant   text  NOT NULL,
    id       text  NOT NULL,
    claim_id text  NOT NULL,
    doc      bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX evidence_claim ON evidence (tenant, claim_id, rid);

CREATE TABLE beliefs (
    tenant           text     NOT NULL,
    id               text     NOT NULL,
{_BELIEF_KEYS}
    length           integer  NOT NULL,
    tsv              tsvector NOT NULL,
    doc              bytea    NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX beliefs_recall ON beliefs (
    tenant, truth, retrieval, security, observed_us DESC, id
);
CREATE INDEX beliefs_recent ON beliefs (tenant, observed_us DESC, id);
CREATE INDEX beliefs_subject ON beliefs (tenant, subject, predicate, project);
CREATE INDEX beliefs_session ON beliefs (tenant, session_id);
CREATE INDEX beliefs_project ON beliefs (tenant, project, scope);
CREATE INDEX beliefs_tsv ON beliefs USING gin (tsv);

CREATE TABLE term_stats (
    tenant text   NOT NULL,
    term   text   NOT NULL,
    df     bigint NOT NULL,
    PRIMARY KEY (tenant, term)
);

CREATE TABLE decisions (
    tenant     text   NOT NULL,
    id         text   NOT NULL,
    session_id text   NOT NULL,
    created_us bigint NOT NULL,
    doc        bytea  NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX decisions_session ON decisions (tenant, session_id);

CREATE TABLE decision_deps (
    tenant      text NOT NULL,
    belief_id   text NOT NULL,
    decision_id text NOT NULL,
    PRIMARY KEY (tenant, belief_id, decision_id)
);
CREATE INDEX decision_deps_decision ON decision_deps (tenant, decision_id);

CREATE TABLE actions (
    tenant      text  NOT NULL,
    id          text  NOT NULL,
    decision_id text  NOT NULL,
    session_id  text  NOT NULL,
    doc         bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX actions_decision ON actions (tenant, decision_id);

CREATE TABLE outcomes (
    tenant     text  NOT NULL,
    id         text  NOT NULL,
    action_id  text  NOT NULL,
    session_id text  NOT NULL,
    doc        bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX outcomes_action ON outcomes (tenant, action_id);

CREATE TABLE revisions (
    rid        bigint GENERATED ALWAYS AS IDENTITY,
    tenant     text   NOT NULL,
    id         text   NOT NULL,
    belief_id  text   NOT NULL,
    created_us bigint NOT NULL,
    doc        bytea  NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX revisions_belief ON revisions (tenant, belief_id, created_us, rid);

CREATE TABLE contradictions (
    tenant      text   NOT NULL,
    id          text   NOT NULL,
    detected_us bigint NOT NULL,
    doc         bytea  NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE contradiction_members (
    tenant           text NOT NULL,
    belief_id        text NOT NULL,
    contradiction_id text NOT NULL,
    PRIMARY KEY (tenant, belief_id, contradiction_id)
);
CREATE INDEX contradiction_members_contradiction ON contradiction_members (
    tenant, contradiction_id
);
"""

#: Version 2: beliefs written through to external memory stores (``StoreBinding``), one row per
#: (tenant, store, belief), looked up by the id the store gave the item. ``belief_id`` is
#: collated "C" so that keyset pages follow code-point order whatever the database's collation.
_V2 = """
CREATE TABLE bindings (
    tenant    text  NOT NULL,
    store     text  NOT NULL,
    belief_id text  COLLATE "C" NOT NULL,
    store_id  text,
    doc       bytea NOT NULL,
    PRIMARY KEY (tenant, store, belief_id)
);
CREATE INDEX bindings_store_id ON bindings (tenant, store, store_id);
CREATE INDEX bindings_belief ON bindings (tenant, belief_id, store);
"""

#: Version 3: the belief history, one row per version an event wrote, with the time range the
#: system held it (``from_us`` = the version's ``updated_at``, ``until_us`` = the next one's, NULL
#: while current) and the filter columns of ``beliefs``, so that "what did I believe at T" is one
#: indexed query by id, by subject (and predicate or prefix), or by text (joined to ``beliefs``).
#: Existing beliefs get one row, their current version; earlier versions remain in the log.
_V3 = f"""
CREATE TABLE belief_versions (
    tenant           text     NOT NULL,
    rid              bigint   GENERATED ALWAYS AS IDENTITY,
    belief_id        text     NOT NULL,
    version          integer  NOT NULL,
    from_us          bigint   NOT NULL,
    until_us         bigint,
{_BELIEF_KEYS}
    doc              bytea    NOT NULL,
    PRIMARY KEY (tenant, rid)
);
CREATE INDEX belief_versions_id ON belief_versions (tenant, belief_id, from_us);
CREATE INDEX belief_versions_subject ON belief_versions (tenant, subject, predicate, from_us);
INSERT INTO belief_versions (
    tenant, belief_id, version, from_us, until_us, truth, retrieval, security, freshness,
    sensitivity_rank, anchor_us, observed_us, expires_us, project, scope, user_id, subject,
    predicate, session_id, doc
)
SELECT tenant, id, (convert_from(doc, 'UTF8')::jsonb ->> 'version')::integer,
       (extract(epoch FROM (convert_from(doc, 'UTF8')::jsonb ->> 'updated_at')::timestamptz)
           * 1000000)::bigint,
       NULL, truth, retrieval, security, freshness, sensitivity_rank, anchor_us, observed_us,
       expires_us, project, scope, user_id, subject, predicate, session_id, doc
FROM beliefs;
"""

#: Version 4: the grant each revision was made on, indexed, so that "was this single-use grant
#: already spent?" is one lookup (``PostgresStore.revisions_by_grant``). Existing revisions get
#: theirs from the document.
_V4 = """
ALTER TABLE revisions ADD COLUMN grant_id text;
UPDATE revisions SET grant_id = convert_from(doc, 'UTF8')::jsonb ->> 'grant_id';
CREATE INDEX revisions_grant ON revisions (tenant, grant_id) WHERE grant_id IS NOT NULL;
"""

#: Version 5: the action kernel's exactly-once claims, one row per executed request. A lock
#: table, not a projection: a rebuild leaves it alone.
_V5 = """
CREATE TABLE execution_claims (
    tenant     text   NOT NULL,
    request_id text   NOT NULL,
    seq        bigint,
    PRIMARY KEY (tenant, request_id)
);
"""

#: The request id of an action-request event (kinds ``action.*`` and ``approval.*``), as
#: ``events_request`` indexes it (queries must call it exactly so). ``\u0000`` escapes, which
#: ``jsonb`` refuses and an agent may put in a tool's arguments, are read as U+FFFD: same length
#: and shape, so the document stays valid JSON and a commit never fails on them. The request id
#: itself is the kernel's (never caller text).
REQUEST_ID_FUNCTION = "gnomon_event_request_id"
REQUEST_KINDS = "(kind LIKE 'action.%' OR kind LIKE 'approval.%')"

#: Version 6: the action kernel's events by request id (``PostgresStore.request_events``), so a
#: request's state is read from its own events, not folded from the whole log. Partial: only
#: the kernel's events are parsed when written. ``convert_from`` is only STABLE in general; with
#: the encoding fixed it is immutable, as an index expression must be.
_V6 = f"""
CREATE FUNCTION {REQUEST_ID_FUNCTION}(body bytea) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT replace(convert_from(body, 'UTF8'), '\\u0000', '\\ufffd')::jsonb
                 -> 'payload' ->> 'request_id' $$;
CREATE INDEX events_request ON events (tenant, {REQUEST_ID_FUNCTION}(body), seq)
    WHERE {REQUEST_KINDS};
"""

#: The states a belief must hold to carry the admissible gate lexemes (see ``sql_common``).
_ADMISSIBLE = (
    f"truth = '{ADMISSIBLE_TRUTH}' AND retrieval = '{ADMISSIBLE_RETRIEVAL}' "
    f"AND security = '{ADMISSIBLE_SECURITY}'"
)
#: The reach lexemes of a row (see :func:`firewall.store.postgres.gate_terms`): tenant and project
#: are cut to lengths that keep a lexeme under PostgreSQL's 2047 bytes (a cut only widens the
#: candidates; the exact conditions are in every statement).
_PROJECT = "left(tenant, 200) || ':' || left(project, 300)"
_GLOBAL = "left(tenant, 200)"
GATE_EXPRESSION = f"""array_to_tsvector(
    ARRAY['p:' || {_PROJECT}]
    || CASE WHEN scope = '{GLOBAL_SCOPE}' THEN ARRAY['g:' || {_GLOBAL}] ELSE '{{}}'::text[] END
    || CASE WHEN {_ADMISSIBLE} THEN
           ARRAY['a:' || {_GLOBAL}, 'ap:' || {_PROJECT}]
           || CASE WHEN scope = '{GLOBAL_SCOPE}' THEN ARRAY['ag:' || {_GLOBAL}]
              ELSE '{{}}'::text[] END
       ELSE '{{}}'::text[] END)"""

#: Version 7: the recall gate (see the module docstring). The generated column is computed for
#: every existing row by the ``ALTER TABLE`` (a table rewrite); the new index replaces
#: ``beliefs_tsv``, whose every query it also serves. Its pending list (GIN's insert buffer) is
#: capped at 512 kB instead of 4 MB: every text query scans the pending list linearly until it
#: is merged, which at 4 MB (13k rows) cost more than the query itself, while inserting without
#: one (``fastupdate = off``) was 3x slower on ingest; 512 kB kept the bulk-insert rate.
_V7 = f"""
ALTER TABLE beliefs ADD COLUMN gate tsvector GENERATED ALWAYS AS ({GATE_EXPRESSION}) STORED;
CREATE INDEX beliefs_text ON beliefs USING gin (tsv, gate) WITH (gin_pending_list_limit = 512);
DROP INDEX beliefs_tsv;
"""

#: Version 8: the host's seal of each event (:mod:`firewall.log.seal`); NULL for an event
#: written before sealing existed.
_V8 = "ALTER TABLE events ADD COLUMN seal bytea;"

#: Version 9: the host's seal of each belief row (its document's MAC, checked on every read
#: of a store that holds its key), and the rows still without one, so that the host finds them
#: at open without a scan and re-derives them from the verified log.
_V9 = """
ALTER TABLE beliefs ADD COLUMN seal bytea;
CREATE INDEX beliefs_unsealed ON beliefs (tenant) WHERE seal IS NULL;
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _V1),
    Migration(2, "store bindings", _V2),
    Migration(3, "belief history", _V3),
    Migration(4, "revisions by grant", _V4),
    Migration(5, "execution claims", _V5),
    Migration(6, "events by request", _V6),
    Migration(7, "recall gate", _V7),
    Migration(8, "event seals", _V8),
    Migration(9, "belief row seals", _V9),
)

CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""

#: Tables of the first migration, used to tell "an empty database" from "someone else's tables".
TABLES = tuple(re.findall(r"^CREATE TABLE (\w+)", _V1, re.MULTILINE))


def pending(current: int, migrations: tuple[Migration, ...] | None = None) -> list[Migration]:
    """Migrations newer than ``current``, in order (of :data:`MIGRATIONS` unless given).

    >>> [m.version for m in pending(0)]
    [1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> pending(SCHEMA_VERSION)
    []
    """
    chosen = MIGRATIONS if migrations is None else migrations
    return [m for m in chosen if m.version > current]


__all__ = [
    "CREATE_MIGRATIONS_TABLE",
    "GATE_EXPRESSION",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "REQUEST_ID_FUNCTION",
    "REQUEST_KINDS",
    "SCHEMA_VERSION",
    "TABLES",
    "Migration",
    "pending",
]
