"""``sql_query``: one parameterised, read-only statement on SQLite or PostgreSQL (read, L0).

Invariants, checked by the executor on every call:

* the statement and its values travel apart (``sql`` with ``?`` / ``%s`` placeholders and a
  ``params`` list): values are never spliced into the text, and exactly one statement runs
  (SQLite refuses a second; on PostgreSQL the statement always goes through the extended
  protocol, which refuses several);
* it runs in a read-only transaction that is rolled back: on SQLite the database is opened
  ``mode=ro`` with ``PRAGMA query_only`` and an authorizer that allows reads and selects only (no
  ``ATTACH``, no pragma, no transaction control); on PostgreSQL a fresh connection whose
  transaction begins ``READ ONLY``, with a ``statement_timeout``;
* at most ``max_rows`` rows come back.

For defence in depth on PostgreSQL, give the tool a role that can only read.

>>> import sqlite3, tempfile, os
>>> db = os.path.join(tempfile.mkdtemp(), "shop.db")
>>> with sqlite3.connect(db) as c:
...     _ = c.execute("create table t (x)")
...     _ = c.execute("insert into t values (1), (2)")
>>> c.close()
>>> Sql(f"sqlite:///{db}").query({"sql": "select x from t where x > ?", "params": [1]}).rows
[[2]]
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import quote

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from gnomon.firewall.kernel.contracts import BlastRadius, Category, Level
from gnomon.tools.base import Inputs, Tool, ToolOutput, ToolRefused, contract

Param = StrictStr | StrictInt | StrictFloat | StrictBool | None


class SqlQueryInputs(Inputs):
    """``sql``: one statement with placeholders; ``params``: the values, in order."""

    sql: str = Field(min_length=1, max_length=20_000)
    params: list[Param] = Field(default_factory=list, max_length=1000)


class SqlQueryOutput(ToolOutput):
    """Column names and rows (``truncated``: more rows matched than ``max_rows``)."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False


_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_SQLITE_RECURSIVE = getattr(sqlite3, "SQLITE_RECURSIVE", 33)


class Sql:
    """``sql_query`` on ``url``: ``sqlite:///path`` or ``postgresql://...``."""

    def __init__(self, url: str, *, max_rows: int = 1000, timeout_s: float = 5.0) -> None:
        if url.startswith("sqlite:///"):
            self.kind = "sqlite"
            self.path = url.removeprefix("sqlite:///")  # relative: to the working folder
        elif url.startswith(("postgresql://", "postgres://")):
            self.kind = "postgres"
            self.path = url
        else:
            raise ToolRefused(
                f"sql_query: {url.split(':', 1)[0]!r} databases are not supported",
                hint="use sqlite:///path or postgresql://...",
            )
        self.max_rows = max_rows
        self.timeout_s = timeout_s

    def tools(self) -> list[Tool]:
        made = contract(
            "sql_query", Category.READ, Level.L0, SqlQueryInputs, SqlQueryOutput,
            blast_radius=BlastRadius.SELF,
        )  # fmt: skip
        return [Tool(made, self.query)]

    def query(self, args: dict[str, Any]) -> SqlQueryOutput:
        """Executor of ``sql_query``."""
        checked = SqlQueryInputs.model_validate(args)
        if self.kind == "sqlite":
            return self._sqlite(checked.sql, checked.params)
        return self._postgres(checked.sql, checked.params)

    def _sqlite(self, sql: str, params: list[Any]) -> SqlQueryOutput:
        uri = f"file:{quote(self.path)}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise ToolRefused(f"sql_query: cannot open {self.path} read-only: {exc}") from None
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("BEGIN")
            conn.set_authorizer(_sqlite_authorizer)
            try:
                cursor = conn.execute(sql, params)
                rows = cursor.fetchmany(self.max_rows + 1)
                columns = [d[0] for d in cursor.description or ()]
            except (sqlite3.DatabaseError, sqlite3.ProgrammingError, sqlite3.Warning) as exc:
                raise _refused(exc) from None
            finally:
                conn.set_authorizer(None)
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            conn.close()
        return _output(columns, rows, self.max_rows)

    def _postgres(self, sql: str, params: list[Any]) -> SqlQueryOutput:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - the postgres extra is missing
            raise ToolRefused(
                "sql_query on PostgreSQL needs psycopg", hint="pip install 'gnomon[postgres]'"
            ) from None
        timeout_ms = str(int(self.timeout_s * 1000))
        try:
            conn = psycopg.connect(self.path, connect_timeout=10)
        except psycopg.Error as exc:
            raise ToolRefused(f"sql_query: cannot connect: {exc}") from None
        try:
            conn.read_only = True  # every transaction on it begins READ ONLY
            try:
                with conn.cursor() as cursor:
                    cursor.execute("SELECT set_config('statement_timeout', %s, true)", [timeout_ms])
                    # params always given: the extended protocol, one statement only
                    cursor.execute(sql.encode("utf-8"), params, prepare=False)
                    rows = cursor.fetchmany(self.max_rows + 1) if cursor.description else []
                    columns = [d.name for d in cursor.description or ()]
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
                    raise ToolRefused("sql_query refused: the statement ended the transaction")
            except psycopg.Error as exc:
                raise _refused(exc) from None
            finally:
                conn.rollback()
        finally:
            conn.close()
        return _output(columns, [tuple(r) for r in rows], self.max_rows)


def _sqlite_authorizer(action: int, *_args: object) -> int:
    if action in _SQLITE_ALLOWED or action == _SQLITE_RECURSIVE:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _refused(exc: Exception) -> ToolRefused:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ToolRefused(
        f"sql_query refused: {text}",
        hint="one read-only statement, values as params (? on SQLite, %s on PostgreSQL)",
    )


def _output(columns: list[str], rows: list[Any], max_rows: int) -> SqlQueryOutput:
    kept = [[_cell(v) for v in row] for row in rows[:max_rows]]
    return SqlQueryOutput(columns=columns, rows=kept, truncated=len(rows) > max_rows)


def _cell(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


__all__ = ["Sql", "SqlQueryInputs", "SqlQueryOutput"]
