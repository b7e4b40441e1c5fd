"""``postgresql://``: the shared store for many sessions, processes and machines (psycopg 3).

**Tenancy.** A store is opened for one tenant (``postgresql://host/db?tenant=acme`` or
``firewall.open(url, tenant="acme")``; default ``default``). Every table has ``tenant`` first in
its primary key and every statement this module sends filters on it, so no read path (a recall,
a listing, an audit, a ``why``) can return another tenant's rows, and each tenant has its own
gap-free hash chain.

**Appends.** :meth:`PostgresStore.commit` locks the tenant's row in ``chain_heads`` with
``SELECT … FOR UPDATE`` before it seals anything, then inserts the events, upserts the
projections, updates the BM25 statistics and moves the head, all in one transaction: writers of
one tenant queue on that row whatever process or machine they run in, and nothing is visible
until everything is. Serialization failures and deadlocks are retried a bounded number of times
and then reported as :class:`~firewall.model.errors.StoreLockedError`; they are never swallowed.

**Schema.** Versioned migrations (:mod:`firewall.store.postgres_schema`). Opening a database
with *no* Gnomon schema creates the current one (under an advisory lock, so concurrent first
opens are safe): a fresh database works like a fresh SQLite file. An *existing* schema is never
migrated implicitly: an older one asks for ``gnomon db upgrade``, a newer one for a newer gnomon.
Pass ``create=False`` to refuse to create a schema at all.

**Errors.** Every driver error is converted here: an unreachable server or a connection lost
mid-commit becomes a :class:`~firewall.model.errors.StoreError` naming ``host:port/dbname`` (never
the
password), and the transaction is rolled back by the server, so nothing is half-written. The
connection pool checks each connection before lending it, so a store keeps working after the
server (or a terminated backend) comes back.

**Recall.** Policy filters are SQL conditions on indexed columns. Text search uses a ``tsvector``
of :func:`firewall.model.text.tokens` with a GIN index, and ranks with the same BM25 formula and
constants as the memory backend (and SQLite's FTS5), so every backend orders results alike. The
index also holds each row's *gate* (:data:`~firewall.store.postgres_schema.GATE_EXPRESSION`):
a text query intersects the term postings with the reader's project, and the accept query with
the admissible beliefs of it, so it ranks the candidates it may return, not every match in the
store. The gate only narrows: every condition is still in the statement and the recall re-checks
every returned row against the policy and the read floor.

**Round trips.** A recall is three reads and one commit; a commit is ``BEGIN`` with the head lock
(one simple query), the projection writes, the events with the new head (one statement), and
``COMMIT``. Connections are not pinged on every loan; one found dead when first used (a
restarted server) is dropped and the read, or the unit of work that had sent nothing but its
``BEGIN``, runs again on another.

**Import batches** (:mod:`firewall.log.batch`) are written by COPY of rows derived straight from the
compact batch rows (:func:`~firewall.store.sql_common.batch_rows`), with no typed record built.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import psycopg
from psycopg import errors as pgerrors
from psycopg import pq
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from gnomon.firewall.log.batch import ImportBatch, expand
from gnomon.firewall.log.events import GENESIS_HASH, IMPORTS, Event, EventDraft, Records, seal
from gnomon.firewall.log.moves import resolve_moves
from gnomon.firewall.model import chain
from gnomon.firewall.model.errors import (
    GnomonError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    TamperedLogError,
    UnsupportedURLError,
)
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.states import SENSITIVITY_RANK, Scope
from gnomon.firewall.model.text import query_terms
from gnomon.firewall.store import postgres_schema as schema
from gnomon.firewall.store.base import Store, check_continues, claims_in
from gnomon.firewall.store.keys import index_tokens, micros
from gnomon.firewall.store.memory import K1, B
from gnomon.firewall.store.sealing import StoreSeal
from gnomon.firewall.store.sql_common import (
    DERIVED_TABLES,
    PROJECTION_KEYS,
    BatchRow,
    ChainRow,
    ProjectionRows,
    batch_rows,
    belief_keys,
    derived_queries,
    derived_row,
    equality_conditions,
    log_pages,
    status_conditions,
    version_rows,
    within_admissible,
)
from gnomon.firewall.store.sql_store import M, R, SQLStore

DEFAULT_TENANT = "default"
PAGE = 1000
#: Every table derived from the log (emptied, for one tenant, by a rebuild).
PROJECTION_TABLES = (*DERIVED_TABLES, "term_stats")
MAX_TENANT_LENGTH = 200
#: PostgreSQL keeps at most 256 positions per lexeme, so term frequencies above it count as 256.
MAX_TF = 256
#: Lexemes are limited to 2047 bytes; longer tokens are indexed (and queried) by their digest.
MAX_LEXEME_BYTES = 2000


# -- URLs -------------------------------------------------------------------------------------


def split_tenant(url: str) -> tuple[str, str | None]:
    """Remove the ``tenant`` query parameter: ``(url for libpq, tenant or None)``.

    >>> split_tenant("postgresql://u@h:5432/db?tenant=acme&sslmode=disable")
    ('postgresql://u@h:5432/db?sslmode=disable', 'acme')
    >>> split_tenant("postgresql://u@h/db")
    ('postgresql://u@h/db', None)
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    tenants = [v for k, v in query if k == "tenant"]
    rest = [(k, v) for k, v in query if k != "tenant"]
    if len(tenants) > 1:
        raise UnsupportedURLError(
            f"{redact(url)} names the tenant {len(tenants)} times",
            hint="give ?tenant= once",
        )
    scheme = "postgresql" if parts.scheme.lower() == "postgres" else parts.scheme
    clean = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment))
    return clean, (tenants[0] if tenants else None)


def redact(url: str) -> str:
    """The URL with any password replaced by ``***``.

    >>> redact("postgresql://gnomon:s3cret@db.example:5433/prod?tenant=a")
    'postgresql://gnomon:***@db.example:5433/prod?tenant=a'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def database_name(conninfo: str) -> str:
    """``host:port/dbname`` for messages (defaults as libpq applies them; never a password).

    >>> database_name("postgresql://postgres:pw@127.0.0.1:5432/test")
    '127.0.0.1:5432/test'
    >>> database_name("postgresql:///test")
    'localhost:5432/test'
    """
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "an unparseable PostgreSQL URL"
    host = str(params.get("host") or "localhost")
    port = str(params.get("port") or "5432")
    dbname = str(params.get("dbname") or params.get("user") or "postgres")
    return f"{host}:{port}/{dbname}"


def check_tenant(tenant: object) -> str:
    if (
        not isinstance(tenant, str)
        or not tenant
        or len(tenant) > MAX_TENANT_LENGTH
        or not tenant.isprintable()
    ):
        raise UnsupportedURLError(
            f"invalid tenant {tenant!r}",
            hint=f"a tenant is a non-empty printable string of at most {MAX_TENANT_LENGTH} "
            "characters, e.g. ?tenant=acme",
        )
    return tenant


# -- the full-text index ----------------------------------------------------------------------


def lexeme(token: str) -> str:
    """The lexeme stored for a token: itself, or a digest if PostgreSQL could not hold it."""
    if len(token) * 4 <= MAX_LEXEME_BYTES or len(token.encode()) <= MAX_LEXEME_BYTES:
        return token
    import hashlib

    return "~" + hashlib.sha256(token.encode()).hexdigest()


def tsvector_text(counts: Counter[str]) -> str:
    """A ``tsvector`` literal with one position per occurrence (capped at :data:`MAX_TF`).

    Tokens are ``\\w+`` runs (no quote or backslash), so quoting them needs no escaping.

    >>> tsvector_text(Counter({"stripe": 3, "billing": 1}))
    "'stripe':1,2,3 'billing':1"
    """
    positions = _POSITIONS
    return " ".join(f"'{term}':{positions[min(n, MAX_TF)]}" for term, n in counts.items())


#: ``"1,2,…,n"`` for every term frequency a lexeme can record.
_POSITIONS = [",".join(str(i) for i in range(1, n + 1)) for n in range(MAX_TF + 1)]


def tsquery_term(lexeme: str) -> str:
    """One operand of a ``tsquery`` literal, quoted so that any text is read as one lexeme
    (a quote is doubled, a backslash escaped).

    >>> print(tsquery_term("it's a ~ test"))
    'it''s a ~ test'
    """
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def gate_query(tenant: str, where: BeliefFilter) -> str | None:
    """The ``tsquery`` on ``beliefs.gate`` that narrows a text query (see
    :data:`firewall.store.postgres_schema.GATE_EXPRESSION`, which derives the lexemes), or None
    when ``where`` pins neither a project nor the admissible states.

    >>> from gnomon.firewall.model.states import (
    ...     TruthStatus as T, RetrievalStatus as R, SecurityStatus as S)
    >>> gate_query("acme", BeliefFilter(project="web"))
    "'p:acme:web' | 'g:acme'"
    >>> gate_query("acme", BeliefFilter(truth=frozenset({T.SUPPORTED}),
    ...     retrieval=frozenset({R.NORMAL}), security=frozenset({S.CLEAN})))
    "'a:acme'"
    """
    scope = tenant[:200]
    admissible = within_admissible(where)
    if where.project is None:
        return tsquery_term(f"a:{scope}") if admissible else None
    prefix = "a" if admissible else ""
    project = f"{prefix}p:{scope}:{where.project[:300]}"
    return f"{tsquery_term(project)} | {tsquery_term(f'{prefix}g:{scope}')}"


def _term_counts(statement: str) -> Counter[str]:
    return Counter(lexeme(t) for t in index_tokens(statement))


# -- SQL --------------------------------------------------------------------------------------


def _upsert(
    table: str,
    columns: Sequence[tuple[str, str]],
    *,
    conflict: str = "tenant, id",
    update: bool = True,
) -> str:
    """``INSERT … SELECT FROM unnest(arrays) … ON CONFLICT``: one statement per table per commit.

    ``columns`` are ``(name, array element type)``; ``tsvector`` columns travel as text. Rows keep
    their order (``WITH ORDINALITY``) so identity columns number them in write order.
    """
    names = [name for name, _ in columns]
    aliases = [f"c{i}" for i in range(len(columns))]
    arrays = ", ".join(f"%s::{'text' if kind == 'tsvector' else kind}[]" for _name, kind in columns)
    values = ", ".join(
        f"u.{alias}::tsvector" if kind == "tsvector" else f"u.{alias}"
        for alias, (_name, kind) in zip(aliases, columns, strict=True)
    )
    sql = (
        f"INSERT INTO {table} (tenant, {', '.join(names)}) "
        f"SELECT %s, {values} FROM unnest({arrays}) WITH ORDINALITY "
        f"AS u({', '.join(aliases)}, n) ORDER BY u.n ON CONFLICT ({conflict}) "
    )
    keys = {c.strip() for c in conflict.split(",")}
    sets = [f"{n} = excluded.{n}" for n in names if n not in keys]
    if update and sets:
        return sql + "DO UPDATE SET " + ", ".join(sets)
    return sql + "DO NOTHING"


UPSERT_SESSIONS = _upsert("sessions", [("id", "text"), ("project", "text"), ("doc", "bytea")])
UPSERT_OBSERVATIONS = _upsert(
    "observations", [("id", "text"), ("session_id", "text"), ("doc", "bytea")]
)
UPSERT_CLAIMS = _upsert("claims", [("id", "text"), ("doc", "bytea")])
UPSERT_EVIDENCE = _upsert("evidence", [("id", "text"), ("claim_id", "text"), ("doc", "bytea")])
BELIEF_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "text"),
    ("truth", "text"),
    ("retrieval", "text"),
    ("security", "text"),
    ("freshness", "text"),
    ("sensitivity_rank", "smallint"),
    ("anchor_us", "bigint"),
    ("observed_us", "bigint"),
    ("expires_us", "bigint"),
    ("project", "text"),
    ("scope", "text"),
    ("user_id", "text"),
    ("subject", "text"),
    ("predicate", "text"),
    ("session_id", "text"),
    ("length", "integer"),
    ("tsv", "tsvector"),
    ("doc", "bytea"),
    # the host's MAC of the document (Sealer.row_tag), checked on every read with the key
    ("seal", "bytea"),
)
UPSERT_BELIEFS = _upsert("beliefs", BELIEF_COLUMNS)
VERSION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("belief_id", "text"),
    ("version", "integer"),
    ("from_us", "bigint"),
    ("until_us", "bigint"),
    *BELIEF_COLUMNS[1:15],
    ("doc", "bytea"),
)
INSERT_VERSIONS = (
    f"INSERT INTO belief_versions (tenant, {', '.join(n for n, _ in VERSION_COLUMNS)}) "
    f"SELECT %s, {', '.join(f'u.c{i}' for i in range(len(VERSION_COLUMNS)))} FROM unnest("
    + ", ".join(f"%s::{kind}[]" for _, kind in VERSION_COLUMNS)
    + f") WITH ORDINALITY AS u({', '.join(f'c{i}' for i in range(len(VERSION_COLUMNS)))}, n) "
    "ORDER BY u.n"
)
#: Close each belief's open version at the start of its next one (never before its own start).
CLOSE_VERSIONS = (
    "UPDATE belief_versions v SET until_us = greatest(v.from_us, u.start) "
    "FROM unnest(%s::text[], %s::bigint[]) AS u(belief_id, start) "
    "WHERE v.tenant = %s AND v.belief_id = u.belief_id AND v.until_us IS NULL"
)
UPSERT_DECISIONS = _upsert(
    "decisions",
    [("id", "text"), ("session_id", "text"), ("created_us", "bigint"), ("doc", "bytea")],
)
UPSERT_ACTIONS = _upsert(
    "actions",
    [("id", "text"), ("decision_id", "text"), ("session_id", "text"), ("doc", "bytea")],
)
UPSERT_OUTCOMES = _upsert(
    "outcomes",
    [("id", "text"), ("action_id", "text"), ("session_id", "text"), ("doc", "bytea")],
)
UPSERT_REVISIONS = _upsert(
    "revisions",
    [
        ("id", "text"),
        ("belief_id", "text"),
        ("created_us", "bigint"),
        ("grant_id", "text"),
        ("doc", "bytea"),
    ],
)
UPSERT_CONTRADICTIONS = _upsert(
    "contradictions", [("id", "text"), ("detected_us", "bigint"), ("doc", "bytea")]
)
UPSERT_BINDINGS = _upsert(
    "bindings",
    [("store", "text"), ("belief_id", "text"), ("store_id", "text"), ("doc", "bytea")],
    conflict="tenant, store, belief_id",
)
INSERT_DECISION_DEPS = _upsert(
    "decision_deps",
    [("belief_id", "text"), ("decision_id", "text")],
    conflict="tenant, belief_id, decision_id",
    update=False,
)
INSERT_CONTRADICTION_MEMBERS = _upsert(
    "contradiction_members",
    [("belief_id", "text"), ("contradiction_id", "text")],
    conflict="tenant, belief_id, contradiction_id",
    update=False,
)


def _tag(value: Any) -> bytes | None:
    """A stored seal as bytes (the driver returns ``bytea`` as ``bytes`` or ``memoryview``)."""
    return None if value is None else bytes(value)


def postgres_identity(conninfo: str, tenant: str) -> str:
    """The sealing identity of a tenant: its connection parameters (server, port, database,
    options such as a schema's search path) and the tenant, not the user or the password,
    which may change without the store changing."""
    params = conninfo_to_dict(conninfo)
    kept = sorted((k, str(v)) for k, v in params.items() if k not in _CREDENTIALS)
    return "postgresql:" + urlencode([*kept, ("tenant", tenant)])


_CREDENTIALS = frozenset({"user", "password", "passfile", "sslpassword", "connect_timeout"})


INSERT_EVENTS = (
    "INSERT INTO events (tenant, seq, kind, at, actor, session_id, body, prev_hash, hash, seal) "
    "SELECT %s, * FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::text[], %b::text[], "
    "%b::bytea[], %b::text[], %b::text[], %b::bytea[])"
)


def _copy(table: str, columns: Sequence[str]) -> str:
    return f"COPY {table} (tenant, {', '.join(columns)}) FROM STDIN"


#: The import batch fast path (:meth:`PostgresStore._write_batch`): plain COPY of new rows.
COPY_CLAIMS = _copy("claims", ("id", "doc"))
COPY_EVIDENCE = _copy("evidence", ("id", "claim_id", "doc"))
COPY_BELIEFS = _copy("beliefs", [n for n, _ in BELIEF_COLUMNS])
COPY_VERSIONS = _copy("belief_versions", [n for n, _ in VERSION_COLUMNS])
COPY_BINDINGS = _copy("bindings", ("store", "belief_id", "store_id", "doc"))
#: The tenant's chain head, locked until the transaction ends (writers of a tenant queue here).
LOCK_HEAD = (
    "SELECT seq, hash, belief_count, belief_tokens FROM chain_heads WHERE tenant = {} FOR UPDATE"
)
INSERT_EVENTS_MOVE_HEAD = (
    f"WITH inserted AS ({INSERT_EVENTS}) UPDATE chain_heads SET seq = %s, hash = %s, "
    "belief_count = %s, belief_tokens = %s WHERE tenant = %s"
)
UPDATE_TERM_STATS = (
    "INSERT INTO term_stats (tenant, term, df) SELECT %s, * FROM unnest(%s::text[], %s::bigint[]) "
    "ON CONFLICT (tenant, term) DO UPDATE SET df = term_stats.df + excluded.df"
)

# BM25 as the memory backend computes it: IDF from the tenant's statistics, summed over the query
# terms in query order (the ORDER BY inside sum() keeps the floating-point sum identical).
_TEXT_FROM = """
WITH stats AS (
    SELECT belief_count::float8 AS n,
           CASE WHEN belief_count > 0 THEN belief_tokens::float8 / belief_count ELSE 0 END
               AS avgdl
    FROM chain_heads WHERE tenant = %(tenant)s
), w AS MATERIALIZED (
    SELECT q.ord, q.term,
           greatest(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 0) AS raw_idf
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS q(term, ord)
    JOIN term_stats t ON t.tenant = %(tenant)s AND t.term = q.term AND t.df > 0
    CROSS JOIN stats s
)
SELECT {select}
FROM beliefs b CROSS JOIN stats s CROSS JOIN LATERAL (
    SELECT sum(
        (CASE WHEN w.raw_idf > 0 THEN w.raw_idf ELSE 1e-6::float8 END)
        * (cardinality(u.positions)::float8 * %(k1p1)s::float8)
        / (cardinality(u.positions) + CASE WHEN s.avgdl > 0
            THEN %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * b.length / s.avgdl)
            ELSE %(k1)s::float8 END)
        ORDER BY w.ord) AS score
    FROM unnest(b.tsv) AS u JOIN w ON w.term = u.lexeme
) r
WHERE b.tsv @@ %(tsquery)s::tsquery
"""


class PostgresStore(SQLStore[psycopg.Connection[Any]]):
    """The ``postgresql://`` backend.

    ``tenant`` scopes everything this store reads and writes (it may also be given as the URL's
    ``?tenant=`` parameter); ``pool_size`` bounds the connection pool; ``timeout`` is how many
    seconds to wait for a connection (or for the server at open); ``lock_timeout`` how long a
    commit waits for another writer of the same tenant; ``retries`` how many times a
    serialization failure or deadlock is retried; ``create=False`` refuses to create the schema
    in a database that has none.
    """

    MARK = "%s"

    def __init__(
        self,
        url: str,
        *,
        tenant: str | None = None,
        pool_size: int = 8,
        timeout: float = 10.0,
        lock_timeout: float = 30.0,
        retries: int = 5,
        create: bool = True,
        seal_key: str | os.PathLike[str] | None = None,
    ) -> None:
        conninfo, url_tenant = split_tenant(url)
        if tenant is not None and url_tenant is not None and tenant != url_tenant:
            raise UnsupportedURLError(
                f"two tenants given: {url_tenant!r} in the URL and {tenant!r} as an option",
                hint="give the tenant once, in the URL (?tenant=) or as the tenant= option",
            )
        chosen = tenant if tenant is not None else url_tenant
        self.tenant = check_tenant(DEFAULT_TENANT if chosen is None else chosen)
        self.conninfo = conninfo
        self.database = database_name(conninfo)
        self.url = redact(url)
        self.timeout = timeout
        self.lock_timeout = lock_timeout
        self.retries = max(0, retries)
        self._closed = True
        self._close_lock = threading.Lock()
        #: Chain heads locked by the statement that began a transaction, per connection.
        self._heads: dict[int, tuple[int, str, int, int]] = {}
        # Open and check the schema on a direct connection: an unreachable server fails now,
        # with the driver's reason, instead of after the pool's timeout.
        try:
            with psycopg.connect(
                conninfo, autocommit=True, connect_timeout=max(1, round(timeout))
            ) as conn:
                ensure_schema(conn, self.database, create=create)
                conn.execute(
                    "INSERT INTO chain_heads (tenant, seq, hash) VALUES (%s, 0, %s) "
                    "ON CONFLICT (tenant) DO NOTHING",
                    (self.tenant, GENESIS_HASH),
                )
        except psycopg.Error as exc:
            raise self._convert(exc, "opening the store") from exc
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=self._configure,
            # No check on every loan (one more round trip per statement): a connection found
            # dead when first used is replaced instead, see _lost.
            timeout=timeout,
            name=f"gnomon {self.database}",
            open=False,
        )
        self._pool.open(wait=False)
        self._closed = False
        self._seal = StoreSeal.open(
            postgres_identity(conninfo, self.tenant),
            f"{self.url} (tenant {self.tenant})",
            empty=self.head()[0] == 0,
            key=seal_key,
        )
        self._reseal_rows()

    def _reseal_rows(self) -> None:
        unsealed = "SELECT 1 FROM beliefs WHERE tenant = %s AND seal IS NULL LIMIT 1"
        if self._seal.sealed and self._read("opening", unsealed, (self.tenant,)):
            # rows written before row sealing (migration 9) or stripped of it: re-derived from
            # the verified log, which seals them; a log that does not verify leaves them
            # refused on read
            with suppress(TamperedLogError):
                self.rebuild_projections()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")

    # -- error edge -----------------------------------------------------------------------

    def _convert(self, exc: Exception, doing: str) -> StoreError:
        where = f"PostgreSQL database {self.database}"
        if isinstance(exc, GnomonError | PoolTimeout) and not isinstance(exc, psycopg.Error):
            if isinstance(exc, StoreError):
                return exc
            return StoreError(
                f"{where}: no connection within {self.timeout:g} s while {doing}",
                hint="check that the server is running and reachable; the store reconnects "
                "by itself once it is",
            )
        text = _first_line(exc)
        conflicts = (
            pgerrors.LockNotAvailable,
            pgerrors.SerializationFailure,
            pgerrors.DeadlockDetected,
        )
        if isinstance(exc, conflicts):
            return StoreLockedError(
                f"{where}: {doing} conflicted with concurrent writers ({text}); nothing was "
                "written",
                hint="retry later, or open the store with a longer lock_timeout",
            )
        if isinstance(exc, pgerrors.UndefinedTable | pgerrors.UndefinedColumn):
            return StoreCorruptError(
                f"{where}: the Gnomon schema is missing or damaged while {doing} ({text})",
                hint="run `gnomon db upgrade --url URL`, or restore from a verified NDJSON export",
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return StoreError(
                f"{where} is unreachable or the connection was lost while {doing} ({text}); "
                "the transaction was rolled back, nothing was written",
                hint="check that the server is running and the URL is right; the store "
                "reconnects by itself once the server is back",
            )
        return StoreError(f"{where}: {doing} failed: {text}", hint="see the PostgreSQL server log")

    @contextmanager
    def _connection(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise StoreError(
                f"{self.url} is closed", hint="open the store again with firewall.open()"
            )
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._convert(exc, doing) from exc

    def _lost(self, conn: psycopg.Connection[Any], exc: BaseException, attempt: int) -> bool:
        """True if ``exc`` says ``conn`` is dead (a restarted server, a terminated backend) and
        another pooled connection may be tried: the pool drops a dead connection when it is
        given back, so after at most ``pool_size`` tries a fresh one is opened."""
        return (
            isinstance(exc, psycopg.OperationalError)
            and (conn.closed or conn.pgconn.status == pq.ConnStatus.BAD)
            and attempt < self._pool.max_size
        )

    def _read(self, doing: str, sql: str, params: Any) -> list[tuple[Any, ...]]:
        attempt = 0
        while True:
            with self._connection(doing) as conn:
                try:
                    return conn.execute(sql, params, binary=True).fetchall()
                except psycopg.OperationalError as exc:
                    # a read repeats safely on another connection
                    if not self._lost(conn, exc, attempt):
                        raise
            attempt += 1

    # -- the only write path --------------------------------------------------------------

    def _rewrite_bodies(self, conn: psycopg.Connection[Any], rewrites: Mapping[int, bytes]) -> None:
        conn.cursor().executemany(
            "UPDATE events SET body = %s WHERE tenant = %s AND seq = %s",
            [(body, self.tenant, seq) for seq, body in rewrites.items()],
        )

    def _head_is(self, conn: psycopg.Connection[Any], head: int) -> bool:
        # The head row is locked FOR UPDATE when the transaction begins: no other writer of
        # this tenant commits until this one ends, so the seq read is the one continued.
        locked = self._lock_head(conn)
        if locked[0] != head:
            return False
        self._heads[id(conn)] = locked  # _write takes the lock this transaction holds
        return True

    def _claim(self, conn: psycopg.Connection[Any], request_id: str) -> bool:
        # A concurrent claimer of the same id waits on the primary key until this transaction
        # ends, then finds the row and claims nothing.
        claimed = conn.execute(
            "INSERT INTO execution_claims (tenant, request_id) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            (self.tenant, request_id),
        )
        return claimed.rowcount != 0

    def _claimed_through(self, conn: psycopg.Connection[Any], request_id: str, seq: int) -> None:
        conn.execute(
            "UPDATE execution_claims SET seq = %s WHERE tenant = %s AND request_id = %s",
            (seq, self.tenant, request_id),
        )

    def _atomic(self, doing: str, work: Callable[[psycopg.Connection[Any]], R]) -> R:
        """Run ``work`` in one transaction, retrying serialization failures and deadlocks."""
        attempt = 0
        while True:
            try:
                return self._once(doing, work, lock=True)
            except StoreLockedError as exc:
                cause = exc.__cause__
                retryable = isinstance(
                    cause, pgerrors.SerializationFailure | pgerrors.DeadlockDetected
                )
                if not retryable or attempt >= self.retries:
                    if retryable:
                        raise StoreLockedError(
                            f"{exc.message} (gave up after {attempt + 1} attempts)",
                            hint=exc.hint,
                        ) from cause
                    raise
                attempt += 1
                time.sleep(min(0.2, 0.005 * 2**attempt))

    def _once(
        self, doing: str, work: Callable[[psycopg.Connection[Any]], R], *, lock: bool = False
    ) -> R:
        """Run ``work`` in one transaction; with ``lock``, the transaction starts by locking
        the tenant's chain head, in the same round trip as ``BEGIN`` (see :meth:`_lock_head`)."""
        attempt = 0
        while True:
            with self._connection(doing) as conn:
                try:
                    if lock:
                        self._begin_locked(conn)
                    else:
                        conn.execute("BEGIN")
                except psycopg.OperationalError as exc:
                    # nothing was sent but BEGIN: the unit may start again on another connection
                    if not self._lost(conn, exc, attempt):
                        raise
                else:
                    return self._in_transaction(conn, work)
            attempt += 1

    def _in_transaction(
        self, conn: psycopg.Connection[Any], work: Callable[[psycopg.Connection[Any]], R]
    ) -> R:
        """Run ``work`` in the transaction just begun on ``conn``, then commit (or roll back)."""
        committing = False
        try:
            done = work(conn)
            committing = True
            conn.execute("COMMIT")
            return done
        except BaseException as exc:
            if not conn.closed:
                with suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
            if committing and isinstance(exc, psycopg.OperationalError):
                raise StoreError(
                    f"PostgreSQL database {self.database}: the connection was lost while "
                    f"the commit was being confirmed ({_first_line(exc)})",
                    hint="the events may or may not be written: check `gnomon log verify` "
                    "and the chain head before retrying",
                ) from exc
            if isinstance(exc, GnomonError | psycopg.Error) or not isinstance(exc, Exception):
                raise
            raise StoreError(
                f"{self.url}: commit failed and was rolled back: {exc!r}",
                hint="nothing was written; fix the draft that could not be stored",
            ) from exc

    def _gap(self, conn: psycopg.Connection[Any]) -> int | None:
        row = conn.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM events WHERE tenant = %s", (self.tenant,)
        ).fetchone()
        assert row is not None
        return None if row[0] == row[1] else int(row[1])

    def _write(self, conn: psycopg.Connection[Any], drafts: Sequence[EventDraft]) -> list[Event]:
        head = self._lock_head(conn)
        seq, prev = head[0], head[1]
        sealer = self._seal.require("committing events")
        self._seal.check_head(seq, prev)
        sealed: list[Event] = []
        batches: list[tuple[ImportBatch, Event]] = []
        for draft in drafts:
            seq += 1
            event = seal(seq, prev, draft, sealer)
            prev = event.hash
            sealed.append(event)
            if draft.batch is not None:
                batches.append((draft.batch, event))
        # an import batch's rows are derived from its compact rows (no typed record is built);
        # a move batch's versions from the versions this transaction sees
        records = self._resolved(
            conn, [d.typed_records() if d.batch is None else Records() for d in drafts]
        )
        self._store_events(conn, head, self._seal.closed(sealed), records, batches)
        return sealed

    def _resolved(self, conn: psycopg.Connection[Any], records: list[Records]) -> list[Records]:
        """Move batches turned into the belief versions they make (:mod:`firewall.log.moves`),
        from the versions this transaction sees."""
        if not any(rec.moves for rec in records):
            return records

        def load(ids: list[str]) -> dict[str, chain.Belief]:
            rows = conn.execute(
                "SELECT doc, seal FROM beliefs WHERE tenant = %s AND id = ANY(%s)",
                (self.tenant, ids),
            ).fetchall()
            found: list[chain.Belief] = []
            for doc, tag in rows:
                # a move makes its new version from the stored one: it must be the host's
                self._check_row_in_write(doc, tag)
                found.append(chain.Belief.model_validate_json(bytes(doc), strict=False))
            return {b.id: b for b in found}

        return resolve_moves(records, load)

    def _write_sealed(self, conn: psycopg.Connection[Any], events: Sequence[Event]) -> list[Event]:
        head = self._lock_head(conn)
        seq, prev = head[0], head[1]
        self._seal.check_head(seq, prev)
        for event in events:
            check_continues(event, seq, prev)
            seq, prev = event.seq, event.hash
        resealed = self._seal.resealed(events)
        records = self._resolved(conn, [e.records() for e in resealed])
        self._store_events(conn, head, resealed, records)
        self._derive_claims(conn, resealed)
        return resealed

    def _derive_claims(self, conn: psycopg.Connection[Any], events: Sequence[Event]) -> None:
        """The claims the events record (:func:`~firewall.store.base.claims_in`); kept ones stay."""
        claims = claims_in(events)
        if claims:
            conn.cursor().executemany(
                "INSERT INTO execution_claims (tenant, request_id, seq) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [(self.tenant, claim, seq) for claim, seq in claims],
            )

    def _rebuild(self, conn: psycopg.Connection[Any]) -> int:
        tenant = self.tenant
        self._lock_head(conn)
        cur = conn.cursor()
        for table in PROJECTION_TABLES:
            found = cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
            if found is not None and found[0]:
                cur.execute(f"DELETE FROM {table} WHERE tenant = %s", (tenant,))
        count = belief_count = belief_tokens = 0
        after = 0
        while True:
            page = [
                Event.from_body(int(seq), bytes(body), prev_hash, digest)
                for seq, body, prev_hash, digest in cur.execute(
                    "SELECT seq, body, prev_hash, hash FROM events WHERE tenant = %s AND seq > %s "
                    "ORDER BY seq LIMIT %s",
                    (tenant, after, PAGE),
                ).fetchall()
            ]
            if not page:
                break
            rows = ProjectionRows.of(page, self._resolved(conn, [e.records() for e in page]))
            count_delta, token_delta = self._write_beliefs(cur, rows)
            self._write_projections(cur, rows)
            self._derive_claims(conn, page)
            belief_count += count_delta
            belief_tokens += token_delta
            count += len(page)
            after = page[-1].seq
        cur.execute(
            "UPDATE chain_heads SET belief_count = %s, belief_tokens = %s WHERE tenant = %s",
            (belief_count, belief_tokens, tenant),
        )
        return count

    def projection_docs(self) -> Iterator[tuple[str, str, bytes]]:
        for table, key in PROJECTION_KEYS:
            rows = self._read(
                "reading projections",
                f"SELECT {key}, doc FROM {table} WHERE tenant = %s",
                (self.tenant,),
            )
            for ident, doc in rows:
                yield table, ident, bytes(doc)

    def derived_rows(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        beliefs = tuple("tsv::text" if n == "tsv" else n for n, _ in BELIEF_COLUMNS[1:-2])
        versions = tuple(n for n, _ in VERSION_COLUMNS[1:])
        where = "WHERE tenant = %(tenant)s"
        params = {"tenant": self.tenant}
        for table, sql, columns in derived_queries(beliefs, versions, where):
            for ident, *values in self._read(f"reading {table}", sql, params):
                yield table, str(ident), derived_row(columns, tuple(values))
        # BM25's corpus statistics: a document frequency or a corpus size edited alone
        # re-ranks every text recall.
        for term, df in self._read(
            "reading term_stats", f"SELECT term, df FROM term_stats {where}", params
        ):
            yield "term_stats", term, {"df": int(df)}
        for count, tokens in self._read(
            "reading chain_heads",
            f"SELECT belief_count, belief_tokens FROM chain_heads {where}",
            params,
        ):
            yield (
                "chain_heads",
                "corpus",
                {"belief_count": int(count), "belief_tokens": int(tokens)},
            )
        for claim, seq in self._read(
            "reading execution_claims",
            f"SELECT request_id, seq FROM execution_claims {where}",
            params,
        ):
            yield "execution_claims", claim, {"seq": None if seq is None else int(seq)}

    def scratch(self) -> Store:
        """A fresh tenant of the same database, removed again by :meth:`discard`."""
        return PostgresStore(
            self.conninfo,
            tenant=f"gnomon-rebuild-{os.urandom(8).hex()}",
            pool_size=1,
            timeout=self.timeout,
            lock_timeout=self.lock_timeout,
            create=False,
        )

    def discard(self) -> None:
        def drop(conn: psycopg.Connection[Any]) -> None:
            for table in (*PROJECTION_TABLES, "events", "chain_heads"):
                conn.execute(f"DELETE FROM {table} WHERE tenant = %s", (self.tenant,))

        try:
            self._once("removing a scratch tenant", drop)
        finally:
            self.close()

    def _begin_locked(self, conn: psycopg.Connection[Any]) -> None:
        """``BEGIN`` and lock the tenant's chain head row in one round trip (two statements in
        one simple query, the tenant as a quoted literal); :meth:`_lock_head` returns the row."""
        self._heads.pop(id(conn), None)
        query = pgsql.SQL("BEGIN; {}").format(
            pgsql.SQL(LOCK_HEAD).format(pgsql.Literal(self.tenant))
        )
        cur = conn.execute(query)
        if cur.nextset():
            row = cur.fetchone()
            if row is not None:
                self._heads[id(conn)] = (int(row[0]), row[1], int(row[2]), int(row[3]))

    def _lock_head(self, conn: psycopg.Connection[Any]) -> tuple[int, str, int, int]:
        """Lock the tenant's chain head row: ``(seq, hash, belief_count, belief_tokens)``."""
        locked = self._heads.pop(id(conn), None)
        if locked is not None:  # locked by the statement that began this transaction
            return locked
        tenant = self.tenant
        head = conn.execute(
            "SELECT seq, hash, belief_count, belief_tokens FROM chain_heads "
            "WHERE tenant = %s FOR UPDATE",
            (tenant,),
        ).fetchone()
        if head is None:  # the head row was removed behind our back: start the chain again
            conn.execute(
                "INSERT INTO chain_heads (tenant, seq, hash) VALUES (%s, 0, %s) "
                "ON CONFLICT (tenant) DO NOTHING",
                (tenant, GENESIS_HASH),
            )
            head = conn.execute(
                "SELECT seq, hash, belief_count, belief_tokens FROM chain_heads "
                "WHERE tenant = %s FOR UPDATE",
                (tenant,),
            ).fetchone()
            assert head is not None
        return int(head[0]), head[1], int(head[2]), int(head[3])

    def _store_events(
        self,
        conn: psycopg.Connection[Any],
        head: tuple[int, str, int, int],
        sealed: list[Event],
        records: Sequence[Records],
        batches: Sequence[tuple[ImportBatch, Event]] = (),
    ) -> None:
        """Insert sealed events, apply their records and import batches, move the head (head
        row locked)."""
        tenant = self.tenant
        belief_count, belief_tokens = head[2], head[3]
        seq, prev = sealed[-1].seq, sealed[-1].hash
        rows = ProjectionRows.of(sealed, list(records))
        cur = conn.cursor()
        count_delta, token_delta = self._write_beliefs(cur, rows)
        self._write_projections(cur, rows)
        if batches:
            added, tokens = self._write_batches(cur, batches)
            count_delta += added
            token_delta += tokens
        # the events and the new head in one statement (one round trip)
        cur.execute(
            INSERT_EVENTS_MOVE_HEAD,
            (
                tenant,
                [e.seq for e in sealed],
                [e.kind for e in sealed],
                [e.at for e in sealed],
                [e.actor for e in sealed],
                [e.session_id for e in sealed],
                [e.body for e in sealed],
                [e.prev_hash for e in sealed],
                [e.hash for e in sealed],
                [e.tag for e in sealed],
                seq,
                prev,
                belief_count + count_delta,
                belief_tokens + token_delta,
                tenant,
            ),
        )

    def _write_versions(self, cur: psycopg.Cursor[Any], rows: ProjectionRows) -> None:
        """The belief history rows of one commit (see :func:`sql_common.version_rows`)."""
        tenant = self.tenant
        closes, inserts = version_rows(rows.versions)
        cur.execute(CLOSE_VERSIONS, ([i for i, _ in closes], [t for _, t in closes], tenant))
        columns: list[list[Any]] = [[] for _ in VERSION_COLUMNS]
        for belief, doc, start, end in inserts:
            values = (belief.id, belief.version, start, end, *belief_keys(belief), doc)
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        cur.execute(INSERT_VERSIONS, (tenant, *columns))

    def _write_beliefs(self, cur: psycopg.Cursor[Any], rows: ProjectionRows) -> tuple[int, int]:
        """Upsert the beliefs and keep the BM25 statistics exact: ``(count, token) deltas``."""
        if not rows.beliefs:
            return 0, 0
        tenant = self.tenant
        if rows.versions:
            self._write_versions(cur, rows)
        ids = list(rows.beliefs)
        old = cur.execute(
            "SELECT length, tsvector_to_array(tsv) FROM beliefs WHERE tenant = %s AND id = ANY(%s)",
            (tenant, ids),
        ).fetchall()
        df: Counter[str] = Counter()
        tokens = -sum(length for length, _ in old)
        for _length, terms in old:
            df.subtract(terms)
        columns: list[list[Any]] = [[] for _ in BELIEF_COLUMNS]
        seal = self._seal.require("writing beliefs").row_tag
        for belief, doc in rows.beliefs.values():
            counts = _term_counts(belief.statement)
            df.update(counts.keys())
            length = sum(counts.values())
            tokens += length
            values = (
                belief.id,
                *belief_keys(belief),
                length,
                tsvector_text(counts),
                doc,
                seal(doc),
            )
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        cur.execute(UPSERT_BELIEFS, (tenant, *columns))
        changed = sorted((t, n) for t, n in df.items() if n)
        if changed:
            cur.execute(
                UPDATE_TERM_STATS, (tenant, [t for t, _ in changed], [n for _, n in changed])
            )
        return len(ids) - len(old), tokens

    def _write_batches(
        self, cur: psycopg.Cursor[Any], batches: Sequence[tuple[ImportBatch, Event]]
    ) -> tuple[int, int]:
        """Write the rows of a commit's import batches, one COPY per table: ``(belief count,
        token) deltas``.

        Every id of a batch is new (fresh ids minted by the batch), so its rows are inserted,
        not upserted, and each belief's history starts here: nothing to close, no old text to
        take out of the statistics. Should an id exist after all, the primary key refuses the
        COPY and the whole commit is rolled back: nothing is overwritten.
        """
        tenant = self.tenant
        df: Counter[str] = Counter()
        tokens = 0
        rows: list[tuple[BatchRow, int, int]] = []
        bound: list[dict[str, Any]] = []
        for batch, event in batches:
            docs = expand(event.payload[IMPORTS])
            version, start = batch.template.belief.version, micros(batch.now)
            rows.extend((row, version, start) for row in batch_rows(batch, docs))
            bound.extend(docs.get("bindings", ()))
        with cur.copy(COPY_CLAIMS) as claims:
            for row, _, _ in rows:
                claims.write_row((tenant, row.claim_id, row.claim))
        with cur.copy(COPY_EVIDENCE) as evidence:
            for row, _, _ in rows:
                evidence.write_row((tenant, row.evidence_id, row.claim_id, row.evidence))
        seal = self._seal.require("writing beliefs").row_tag
        with cur.copy(COPY_BELIEFS) as beliefs:
            for row, _, _ in rows:
                counts = _term_counts(row.statement)
                df.update(counts.keys())
                length = sum(counts.values())
                tokens += length
                terms = tsvector_text(counts)
                beliefs.write_row(
                    (tenant, row.belief_id, *row.keys, length, terms, row.belief, seal(row.belief))
                )
        with cur.copy(COPY_VERSIONS) as versions:
            for row, version, start in rows:
                versions.write_row(
                    (tenant, row.belief_id, version, start, None, *row.keys, row.belief)
                )
        if bound:
            dumps = orjson.dumps
            with cur.copy(COPY_BINDINGS) as bindings:
                for doc in bound:
                    bindings.write_row(
                        (tenant, doc["store"], doc["belief_id"], doc["store_id"], dumps(doc))
                    )
        changed = sorted(df.items())
        if changed:
            cur.execute(
                UPDATE_TERM_STATS, (tenant, [t for t, _ in changed], [n for _, n in changed])
            )
        return len(rows), tokens

    def _write_projections(self, cur: psycopg.Cursor[Any], rows: ProjectionRows) -> None:
        tenant = self.tenant

        def put(
            sql: str, table: dict[str, tuple[Any, bytes]], *fields: Callable[[Any], Any]
        ) -> None:
            if not table:
                return
            items = list(table.values())
            arrays = [[field(record) for record, _ in items] for field in fields]
            cur.execute(sql, (tenant, *arrays, [doc for _, doc in items]))

        def ident(r: Any) -> Any:
            return r.id

        put(UPSERT_SESSIONS, rows.sessions, ident, lambda s: s.project)
        put(UPSERT_OBSERVATIONS, rows.observations, ident, lambda o: o.session_id)
        put(UPSERT_CLAIMS, rows.claims, ident)
        put(UPSERT_EVIDENCE, rows.evidence, ident, lambda e: e.claim_id)
        put(UPSERT_ACTIONS, rows.actions, ident, lambda a: a.decision_id, lambda a: a.session_id)
        put(UPSERT_OUTCOMES, rows.outcomes, ident, lambda o: o.action_id, lambda o: o.session_id)
        put(
            UPSERT_REVISIONS,
            rows.revisions,
            ident,
            lambda r: r.belief_id,
            lambda r: micros(r.created_at),
            lambda r: r.grant_id,
        )
        put(
            UPSERT_BINDINGS,
            rows.bindings,
            lambda b: b.store,
            lambda b: b.belief_id,
            lambda b: b.store_id,
        )
        if rows.decisions:
            put(
                UPSERT_DECISIONS,
                rows.decisions,
                ident,
                lambda d: d.session_id,
                lambda d: micros(d.created_at),
            )
            decisions = [d for d, _ in rows.decisions.values()]
            cur.execute(
                "DELETE FROM decision_deps WHERE tenant = %s AND decision_id = ANY(%s)",
                (tenant, [d.id for d in decisions]),
            )
            pairs = [(b, d.id) for d in decisions for b in d.depends_on]
            if pairs:
                cur.execute(
                    INSERT_DECISION_DEPS, (tenant, [b for b, _ in pairs], [d for _, d in pairs])
                )
        if rows.contradictions:
            put(
                UPSERT_CONTRADICTIONS,
                rows.contradictions,
                ident,
                lambda c: micros(c.detected_at),
            )
            found = [c for c, _ in rows.contradictions.values()]
            cur.execute(
                "DELETE FROM contradiction_members "
                "WHERE tenant = %s AND contradiction_id = ANY(%s)",
                (tenant, [c.id for c in found]),
            )
            pairs = [(b, c.id) for c in found for b in c.belief_ids]
            if pairs:
                cur.execute(
                    INSERT_CONTRADICTION_MEMBERS,
                    (tenant, [b for b, _ in pairs], [c for _, c in pairs]),
                )

    # -- the log --------------------------------------------------------------------------

    def head(self) -> tuple[int, str]:
        rows = self._read(
            "reading the chain head",
            "SELECT seq, hash FROM chain_heads WHERE tenant = %s",
            (self.tenant,),
        )
        return (int(rows[0][0]), rows[0][1]) if rows else (0, GENESIS_HASH)

    def _pages(self, after: int, limit: int | None) -> Iterator[ChainRow]:
        def fetch(cursor: int, size: int) -> list[ChainRow]:
            page = self._read(
                "reading events",
                "SELECT seq, body, prev_hash, hash FROM events "
                "WHERE tenant = %s AND seq > %s ORDER BY seq LIMIT %s",
                (self.tenant, cursor, size),
            )
            return [(int(seq), bytes(body), prev, digest) for seq, body, prev, digest in page]

        return log_pages(fetch, after, limit, page_size=PAGE)

    def _sealed_pages(
        self, after: int, limit: int | None
    ) -> Iterator[tuple[int, bytes, str, str, bytes | None]]:
        def fetch(cursor: int, size: int) -> list[tuple[int, bytes, str, str, bytes | None]]:
            page = self._read(
                "reading events",
                "SELECT seq, body, prev_hash, hash, seal FROM events "
                "WHERE tenant = %s AND seq > %s ORDER BY seq LIMIT %s",
                (self.tenant, cursor, size),
            )
            return [(int(q), bytes(b), p, h, _tag(t)) for q, b, p, h, t in page]

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
            page = self._read(
                "reading seals",
                "SELECT seq, hash, seal FROM events WHERE tenant = %s AND seq > %s "
                "ORDER BY seq LIMIT %s",
                (self.tenant, cursor, size),
            )
            return [(int(q), h, _tag(t)) for q, h, t in page]

        return log_pages(fetch, after, None, page_size=PAGE)

    def chain_rows(self, after: int = 0) -> Iterator[tuple[int, bytes, str, str]]:
        return self._pages(after, None)

    # -- projections ----------------------------------------------------------------------

    def _scope(self) -> tuple[str, tuple[Any, ...]]:
        return "tenant = %s AND", (self.tenant,)

    def _doc(self, model: type[M], table: str, ident: str) -> M | None:
        found = self._docs(
            model, f"SELECT doc FROM {table} WHERE tenant = %s AND id = %s", (self.tenant, ident)
        )
        return found[0] if found else None

    def _docs_of(self, model: type[M], sql: str, ids: Sequence[str], *params: Any) -> list[M]:
        """:meth:`_docs` with the distinct ``ids`` as the last parameter (an ``ANY(%s)``); no
        query when there are none."""
        distinct = list(dict.fromkeys(ids))
        return self._docs(model, sql, (*params, distinct)) if distinct else []

    def get_session(self, session_id: str) -> chain.SessionInfo | None:
        return self._doc(chain.SessionInfo, "sessions", session_id)

    def get_observation(self, observation_id: str) -> chain.Observation | None:
        return self._doc(chain.Observation, "observations", observation_id)

    def get_claim(self, claim_id: str) -> chain.Claim | None:
        return self._doc(chain.Claim, "claims", claim_id)

    def get_evidence(self, claim_id: str) -> chain.EvidenceSet:
        items = self._docs(
            chain.EvidenceItem,
            "SELECT doc FROM evidence WHERE tenant = %s AND claim_id = %s ORDER BY rid",
            (self.tenant, claim_id),
        )
        return chain.EvidenceSet(claim_id=claim_id, items=items)

    def get_beliefs(self, belief_ids: Sequence[str]) -> dict[str, chain.Belief]:
        distinct = list(dict.fromkeys(belief_ids))
        if not distinct:
            return {}
        found = {
            b.id: b
            for b in self._beliefs(
                "SELECT doc, seal FROM beliefs WHERE tenant = %s AND id = ANY(%s)",
                (self.tenant, distinct),
            )
        }
        return {i: found[i] for i in belief_ids if i in found}

    def get_decision(self, decision_id: str) -> chain.Decision | None:
        return self._doc(chain.Decision, "decisions", decision_id)

    def get_action(self, action_id: str) -> chain.Action | None:
        return self._doc(chain.Action, "actions", action_id)

    def decisions_depending_on(self, belief_id: str) -> list[chain.Decision]:
        return self._docs(
            chain.Decision,
            "SELECT d.doc FROM decision_deps x JOIN decisions d "
            "ON d.tenant = x.tenant AND d.id = x.decision_id "
            "WHERE x.tenant = %s AND x.belief_id = %s ORDER BY d.created_us, d.id",
            (self.tenant, belief_id),
        )

    def revisions_for(self, belief_id: str) -> list[chain.Revision]:
        return self._docs(
            chain.Revision,
            "SELECT doc FROM revisions WHERE tenant = %s AND belief_id = %s "
            "ORDER BY created_us, rid",
            (self.tenant, belief_id),
        )

    def revisions_by_grant(self, grant_id: str) -> list[chain.Revision]:
        return self._docs(
            chain.Revision,
            "SELECT doc FROM revisions WHERE tenant = %s AND grant_id = %s "
            "ORDER BY created_us, rid",
            (self.tenant, grant_id),
        )

    def contradictions_for(self, belief_ids: Sequence[str]) -> list[chain.Contradiction]:
        return self._docs_of(
            chain.Contradiction,
            "SELECT doc FROM contradictions WHERE tenant = %s AND id IN ("
            "SELECT contradiction_id FROM contradiction_members "
            "WHERE tenant = %s AND belief_id = ANY(%s)) ORDER BY detected_us, id",
            belief_ids,
            self.tenant,
            self.tenant,
        )

    # -- store bindings ---------------------------------------------------------------------

    def bindings_by_store_id(
        self, store: str, store_ids: Sequence[str]
    ) -> dict[str, chain.StoreBinding]:
        found: dict[str, chain.StoreBinding] = {}
        for binding in self._docs_of(
            chain.StoreBinding,
            "SELECT doc FROM bindings WHERE tenant = %s AND store = %s AND store_id = ANY(%s)",
            store_ids,
            self.tenant,
            store,
        ):
            assert binding.store_id is not None
            found[binding.store_id] = binding
        return found

    def bindings_for_beliefs(self, belief_ids: Sequence[str]) -> list[chain.StoreBinding]:
        return self._docs_of(
            chain.StoreBinding,
            "SELECT doc FROM bindings WHERE tenant = %s AND belief_id = ANY(%s) "
            "ORDER BY belief_id, store",
            belief_ids,
            self.tenant,
        )

    def list_bindings(
        self, store: str, *, after: str | None = None, limit: int = 1000
    ) -> list[chain.StoreBinding]:
        return self._docs(
            chain.StoreBinding,
            "SELECT doc FROM bindings WHERE tenant = %s AND store = %s AND belief_id > %s "
            "ORDER BY belief_id LIMIT %s",
            (self.tenant, store, "" if after is None else after, max(limit, 0)),
        )

    # -- find_beliefs ---------------------------------------------------------------------

    # -- belief history ---------------------------------------------------------------------

    def belief_history(self, belief_id: str) -> list[chain.Belief]:
        return self._docs(
            chain.Belief,
            "SELECT doc FROM belief_versions WHERE tenant = %s AND belief_id = %s "
            "ORDER BY from_us, rid",
            (self.tenant, belief_id),
        )

    def _versions_held(
        self, where: BeliefFilter, since_us: int | None, until_us: int | None
    ) -> list[chain.Belief]:
        """One statement on ``belief_versions``; by text, the GIN index on ``beliefs`` finds the
        matching ids and each joins its versions on ``belief_versions_id``. Text results are
        ordered by recency here, not by BM25."""
        found = _pg_conditions(where, self.tenant, id_column="belief_id")
        if found is None:
            return []
        conds, params = found
        if until_us is not None:
            conds.append("b.from_us <= %(until_us)s")
            params["until_us"] = until_us
        if since_us is not None:
            conds.append("(b.until_us IS NULL OR b.until_us > %(since_us)s)")
            params["since_us"] = since_us
        source = "belief_versions b"
        if where.text is not None:
            terms = list(dict.fromkeys(lexeme(t) for t in query_terms(where.text)))
            if not terms:
                return []
            params["tsquery"] = " | ".join(f"'{t}'" for t in terms)
            source = (
                "beliefs c JOIN belief_versions b ON b.tenant = c.tenant AND b.belief_id = c.id"
            )
            conds.append("c.tenant = %(tenant)s AND c.tsv @@ %(tsquery)s::tsquery")
        params["limit"] = max(where.limit, 0)
        params["offset"] = max(where.offset, 0)
        sql = (
            f"SELECT b.doc FROM {source} WHERE "
            + " AND ".join(conds)
            + " ORDER BY b.observed_us DESC, b.belief_id, b.from_us DESC, b.rid DESC"
            " LIMIT %(limit)s OFFSET %(offset)s"
        )
        return self._docs(chain.Belief, sql, params)

    def session_events(self, session_id: str) -> list[Event]:
        rows = self._read(
            "reading a session's events",
            "SELECT seq, body, prev_hash, hash, seal FROM events WHERE tenant = %s AND "
            "session_id = %s ORDER BY seq",
            (self.tenant, session_id),
        )
        return list(
            self._verified(
                Event.from_body(int(q), bytes(body), prev, h, _tag(t))
                for q, body, prev, h, t in rows
            )
        )

    def request_events(self, request_id: str) -> list[Event]:
        kinds = schema.REQUEST_KINDS.replace("%", "%%")
        rows = self._read(
            "reading a request's events",
            "SELECT seq, body, prev_hash, hash, seal FROM events WHERE tenant = %s AND "
            f"{schema.REQUEST_ID_FUNCTION}(body) = %s AND {kinds} ORDER BY seq",
            (self.tenant, request_id),
        )
        return list(
            self._verified(
                Event.from_body(int(q), bytes(body), prev, h, _tag(t))
                for q, body, prev, h, t in rows
            )
        )

    def _belief_query(
        self, where: BeliefFilter, *, count: bool
    ) -> tuple[str, dict[str, Any]] | None:
        """One statement answering ``where`` for this tenant, or None when nothing can match."""
        found = _pg_conditions(where, self.tenant, id_column="id")
        if found is None:
            return None
        conds, params = found

        paging = " LIMIT %(limit)s OFFSET %(offset)s"
        params["limit"] = max(where.limit, 0)
        params["offset"] = max(where.offset, 0)
        if where.text is not None:
            terms = list(dict.fromkeys(lexeme(t) for t in query_terms(where.text)))
            if not terms:
                return None
            params["terms"] = terms
            params["tsquery"] = " | ".join(f"'{t}'" for t in terms)
            gate = gate_query(self.tenant, where)
            if gate is not None:
                # the reader's project (and the admissible states) inside the text index scan
                conds.append("b.gate @@ %(gate)s::tsquery")
                params["gate"] = gate
            if count:
                sql = (
                    "SELECT count(*) FROM beliefs b WHERE b.tsv @@ %(tsquery)s::tsquery AND "
                    + " AND ".join(conds)
                )
                return sql, params
            if where.unranked:
                # no BM25: any matches, in the no-text order (a top-k sort, no scoring)
                sql = "SELECT b.doc, b.seal FROM beliefs b WHERE b.tsv @@ %(tsquery)s::tsquery AND "
                sql += " AND ".join(conds) + " ORDER BY b.observed_us DESC, b.id"
                return sql + paging, params
            params.update(k1=K1, b=B, k1p1=K1 + 1.0)
            sql = _TEXT_FROM.format(select="b.doc, b.seal") + " AND " + " AND ".join(conds)
            return sql + " ORDER BY r.score DESC, b.id" + paging, params
        select = "count(*)" if count else "b.doc, b.seal"
        sql = f"SELECT {select} FROM beliefs b WHERE " + " AND ".join(conds)
        if count:
            return sql, params
        return sql + " ORDER BY b.observed_us DESC, b.id" + paging, params

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._pool.close()


def _pg_conditions(
    where: BeliefFilter, tenant: str, *, id_column: str
) -> tuple[list[str], dict[str, Any]] | None:
    """The conditions of ``where`` on alias ``b`` (``beliefs`` or ``belief_versions``) for one
    tenant, or None when nothing can match."""
    params: dict[str, Any] = {"tenant": tenant}
    conds = ["b.tenant = %(tenant)s"]
    statuses = status_conditions(where)
    if statuses is None:
        return None
    for column, ordered in statuses:
        if len(ordered) == 1:
            conds.append(f"b.{column} = %({column})s")
            params[column] = ordered[0]
        else:
            conds.append(f"b.{column} = ANY(%({column})s::text[])")
            params[column] = ordered
    if where.max_sensitivity is not None:
        conds.append("b.sensitivity_rank <= %(sensitivity)s")
        params["sensitivity"] = SENSITIVITY_RANK[where.max_sensitivity]
    if where.anchor_after is not None:
        conds.append("b.anchor_us >= %(anchor)s")
        params["anchor"] = micros(where.anchor_after)
    if where.not_expired_at is not None:
        conds.append("(b.expires_us IS NULL OR b.expires_us > %(expiry)s)")
        params["expiry"] = micros(where.not_expired_at)
    if where.project is not None:
        conds.append("(b.project = %(project)s OR b.scope = %(global)s)")
        params["project"] = where.project
        params["global"] = str(Scope.GLOBAL)
    if where.user is not None:
        conds.append("(b.scope <> %(user_scope)s OR b.user_id = %(user)s)")
        params["user_scope"] = str(Scope.USER)
        params["user"] = where.user
    if where.subject_prefix is not None:
        conds.append("starts_with(b.subject, %(subject_prefix)s)")
        params["subject_prefix"] = where.subject_prefix
    for column, value in equality_conditions(where):
        conds.append(f"b.{column} = %({column})s")
        params[column] = value
    if where.exclude_ids:
        conds.append(f"NOT (b.{id_column} = ANY(%(exclude)s::text[]))")
        params["exclude"] = sorted(where.exclude_ids)
    return conds, params


# -- schema management ------------------------------------------------------------------------


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The applied schema version, ``None`` if the database has no ``schema_migrations``."""
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    found = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(found[0]) if found else 0


def _foreign_tables(conn: psycopg.Connection[Any]) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
        (list(schema.TABLES),),
    ).fetchall()
    return [name for (name,) in rows]


def ensure_schema(conn: psycopg.Connection[Any], database: str, *, create: bool) -> None:
    """Check the schema version at open; create the schema in a database that has none."""
    version = schema_version(conn)
    if version is None or version == 0:
        if not create:
            raise StoreError(
                f"PostgreSQL database {database} has no Gnomon schema",
                hint="run `gnomon db upgrade --url URL` to create it",
            )
        upgrade(conn, database, only_if_empty=True)
        return
    if version < schema.SCHEMA_VERSION and create:
        # a concurrent first open may still be applying the migrations one by one: look
        # again under its lock, once it is done (a store really older still gets the error)
        upgrade(conn, database, only_if_empty=True)
        return
    check_version(version, database)


def check_version(version: int, database: str) -> None:
    current = schema.SCHEMA_VERSION
    if version < current:
        raise StoreError(
            f"PostgreSQL database {database} has Gnomon schema version {version}, older than "
            f"the version {current} this gnomon uses",
            hint="run `gnomon db upgrade --url URL` (back the database up first)",
        )
    if version > current:
        raise StoreCorruptError(
            f"PostgreSQL database {database} has Gnomon schema version {version}, newer than "
            f"the version {current} this gnomon understands",
            hint="upgrade gnomon (`pip install -U 'gnomon[postgres]'`) to open this store",
        )


def upgrade(
    conn: psycopg.Connection[Any], database: str, *, only_if_empty: bool = False
) -> list[schema.Migration]:
    """Apply every pending migration, each in its own transaction; return those applied.

    ``conn`` must be in autocommit mode. Runs under a session-scoped advisory lock, so
    concurrent upgrades (or first opens) apply each migration once; the checks after taking the
    lock run in new transactions, so they see what a concurrent upgrader committed. With
    ``only_if_empty`` it does nothing unless the database has no schema yet.
    """
    applied: list[schema.Migration] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (schema.MIGRATION_LOCK,))
    try:
        version = schema_version(conn) or 0
        if version == 0:
            foreign = _foreign_tables(conn)
            if foreign:
                raise StoreCorruptError(
                    f"PostgreSQL database {database} has tables named like Gnomon's "
                    f"({', '.join(foreign[:5])}) but no Gnomon schema_migrations record",
                    hint="point the URL at another database or schema (search_path)",
                )
        elif only_if_empty or version > schema.SCHEMA_VERSION:
            check_version(version, database)
            return applied
        for migration in schema.pending(version):
            with conn.transaction():
                conn.execute(schema.CREATE_MIGRATIONS_TABLE)
                conn.execute(migration.sql)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
            applied.append(migration)
    finally:
        if not conn.closed:
            with suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (schema.MIGRATION_LOCK,))
    return applied


def upgrade_url(url: str) -> tuple[str, int, list[schema.Migration]]:
    """``gnomon db upgrade``: bring the database at ``url`` to the current schema.

    Returns ``(host:port/dbname, schema version now, migrations applied)``.
    """
    conninfo, _tenant = split_tenant(url)
    database = database_name(conninfo)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            applied = upgrade(conn, database)
            version = schema_version(conn) or 0
    except psycopg.Error as exc:
        raise StoreError(
            f"PostgreSQL database {database}: upgrading the schema failed ({_first_line(exc)}); "
            "each migration is one transaction, so the schema is at the last one that completed",
            hint="check that the server is reachable and the user may create tables",
        ) from exc
    return database, version, applied


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


__all__ = [
    "DEFAULT_TENANT",
    "PostgresStore",
    "check_version",
    "database_name",
    "ensure_schema",
    "redact",
    "schema_version",
    "split_tenant",
    "upgrade",
    "upgrade_url",
]
