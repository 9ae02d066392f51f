"""A DB-API connection with pyodbc's interface over psycopg, for the stand-in only.

The connector calls ``connect(connection_string, autocommit=...)``, ``cursor().execute(sql, *params)``,
``fetchone``/``fetchmany``/``fetchall``, ``commit``/``rollback`` and ``autocommit`` exactly as on
pyodbc; here the T-SQL is translated (``translate``) and run on PostgreSQL, values come back as
pyodbc gives them (``uniqueidentifier`` as an upper-case string, ``binary`` as bytes) and server
errors are raised as pyodbc's exception classes with an SQLSTATE first, as pyodbc does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
import pyodbc

from cdc_postgres.standin.dbapi import PsycopgCursor
from cdc_sqlserver.standin.translate import translate


def parse_connection_string(text: str) -> dict[str, str]:
    """An ODBC connection string's ``key=value`` pairs (keys lower-cased; ``{...}`` values unbraced)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq].strip().lower()
        i = eq + 1
        if text.startswith("{", i):
            j = i + 1
            value = []
            while True:
                if text[j] == "}":
                    if text.startswith("}}", j):
                        value.append("}")
                        j += 2
                        continue
                    break
                value.append(text[j])
                j += 1
            out[key] = "".join(value)
            i = j + 1
        else:
            j = text.find(";", i)
            j = len(text) if j < 0 else j
            out[key] = text[i:j]
            i = j
        if i < len(text) and text[i] == ";":
            i += 1
    return out


def _error(e: psycopg.Error) -> pyodbc.Error:
    """A psycopg error as pyodbc raises one: ``(sqlstate, message)``."""
    state = getattr(e, "sqlstate", None) or "HY000"
    message = f"[stand-in] {(str(e).strip().splitlines() or [type(e).__name__])[0]} ({state})"
    if isinstance(e, psycopg.errors.LockNotAvailable):  # lock_timeout: SQL Server's error 1222 (SQLSTATE HYT00)
        return pyodbc.OperationalError("HYT00", f"[stand-in] Lock request time out period exceeded. (1222) {message}")
    if isinstance(e, psycopg.OperationalError) and not isinstance(e, psycopg.errors.QueryCanceled):
        return pyodbc.OperationalError("08S01", message)
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        return pyodbc.ProgrammingError("42000", message)
    if isinstance(e, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedFunction | psycopg.errors.SyntaxError):
        return pyodbc.ProgrammingError("42S02", message)
    if isinstance(e, psycopg.IntegrityError):
        return pyodbc.IntegrityError("23000", message)
    return pyodbc.DatabaseError(state, message)


#: PostgreSQL types whose Python values differ from pyodbc's: uuid (pyodbc gives a str). psycopg gives bytea
#: as bytes, as pyodbc gives binary.
_CONVERTED_OIDS = frozenset({2950})


def _value(v: Any) -> Any:
    """A psycopg value as pyodbc returns it."""
    if isinstance(v, uuid.UUID):
        return str(v).upper()
    if isinstance(v, memoryview):
        return bytes(v)
    return v


class Cursor(PsycopgCursor):
    """pyodbc's Cursor over a psycopg cursor."""

    error = staticmethod(_error)

    def execute(self, sql: str, *params: Any) -> Cursor:
        """Run one T-SQL statement with ``?`` parameters (given as arguments or one sequence)."""
        if len(params) == 1 and isinstance(params[0], list | tuple):
            params = tuple(params[0])
        kind, pg_sql, locks = translate(sql)
        try:
            if kind == "isolation":
                self.connection._set_isolation(pg_sql)
                return self
            for table, mode in locks:
                self._cur.execute(f"LOCK TABLE {table} IN {mode} MODE")
            values = {f"p{i}": bytes(p) if isinstance(p, bytearray) else p for i, p in enumerate(params)}
            if kind == "statement" and not self.connection.autocommit:
                self._in_savepoint(pg_sql, values)
            else:
                self._cur.execute(pg_sql, values)
            self.connection._queried = True
        except psycopg.Error as e:
            raise _error(e) from None
        return self

    def _in_savepoint(self, pg_sql: str, values: dict[str, Any]) -> None:
        """Run ``pg_sql`` so that its error ends the statement only, as SQL Server's (XACT_ABORT OFF) does: a
        PostgreSQL error would abort the whole transaction (``translate``'s ``statement`` kind: PARSE)."""
        pg = self.connection._pg  # the savepoint's statements on their own cursors: this one keeps the rows
        pg.execute("SAVEPOINT standin_statement")
        try:
            self._cur.execute(pg_sql, values)
        except psycopg.Error:
            pg.execute("ROLLBACK TO SAVEPOINT standin_statement")
            raise
        pg.execute("RELEASE SAVEPOINT standin_statement")

    def _rows(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """Rows as pyodbc returns them (only uuid values need converting)."""
        description = self._cur.description or ()
        if not any(d.type_code in _CONVERTED_OIDS for d in description):
            return rows if isinstance(rows, list) else list(rows)  # psycopg's rows are tuples already
        return [tuple(_value(v) for v in row) for row in rows]

    def __iter__(self):
        """Iterate over the remaining rows."""
        while (row := self.fetchone()) is not None:
            yield row


class Connection:
    """pyodbc's Connection over a psycopg connection to the stand-in database."""

    def __init__(self, pg: psycopg.Connection, autocommit: bool):
        """Wrap a psycopg cursor or connection."""
        self._pg = pg
        self._pg.autocommit = autocommit
        self._queried = False
        self.timeout = 0

    @property
    def autocommit(self) -> bool:
        """As pyodbc: True runs every statement in its own transaction."""
        return self._pg.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        """Switch autocommit (pyodbc commits nothing pending when switching on)."""
        try:
            self._pg.autocommit = value
        except psycopg.Error as e:
            raise _error(e) from None

    def _set_isolation(self, level: str) -> None:
        """``SET TRANSACTION ISOLATION LEVEL``: SQL Server's is per session, and applies from the next statement."""
        self._pg.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}")
        if not self._pg.autocommit and not self._queried:
            self._pg.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")

    def cursor(self) -> Cursor:
        """A new cursor."""
        return Cursor(self)

    def execute(self, sql: str, *params: Any) -> Cursor:
        """``cursor().execute(...)``, as pyodbc's shortcut."""
        return self.cursor().execute(sql, *params)

    def commit(self) -> None:
        """Commit the open transaction."""
        try:
            self._pg.commit()
        except psycopg.Error as e:
            raise _error(e) from None
        self._queried = False

    def rollback(self) -> None:
        """Roll the open transaction back."""
        try:
            self._pg.rollback()
        except psycopg.Error as e:
            raise _error(e) from None
        self._queried = False

    def close(self) -> None:
        """Close the connection."""
        self._pg.close()

    @property
    def closed(self) -> bool:
        """True once closed (pyodbc raises on use instead; here for the tests)."""
        return self._pg.closed


def connect(connection_string: str, autocommit: bool = False, **_: Any) -> Connection:
    """Open a stand-in connection from an ODBC connection string (``Server=host,port;Database=...;UID;PWD``)."""
    params = parse_connection_string(connection_string)
    server = params.get("server", "")
    host, _, port = server.partition(",")
    try:
        pg = psycopg.connect(host=host, port=int(port or 1433), dbname=params.get("database", ""),
                             user=params.get("uid") or None, password=params.get("pwd") or None,
                             connect_timeout=5, options="-c TimeZone=UTC")
    except psycopg.OperationalError as e:
        reason = (str(e).strip().splitlines() or ["connection failed"])[-1]
        if "password authentication failed" in str(e) or "does not exist" in str(e):
            raise pyodbc.InterfaceError("28000", f"[stand-in] Login failed: {reason}") from None
        raise pyodbc.OperationalError("08001", f"[stand-in] cannot connect to {server}: {reason}") from None
    return Connection(pg, autocommit)


def drivers() -> list[str]:
    """The driver list the connector's driver search sees while the stand-in is installed."""
    return ["ODBC Driver 18 for SQL Server (stand-in)"]


def install() -> None:
    """Route the connector's connections to the stand-in (tests only)."""
    from cdc_sqlserver import odbc

    odbc.install(connect, drivers)
