"""A DB-API connection with ibm_db_dbi's interface over psycopg, for the stand-in only.

The connector calls ``connect(connection_string)``, ``cursor().execute(sql, params)``,
``fetchone``/``fetchmany``/``fetchall``, ``commit``/``rollback``, ``set_autocommit`` and ``close``
exactly as on ibm_db_dbi; the Db2 SQL is adapted (``translate``) and run on PostgreSQL, values
come back as ibm_db_dbi gives them (``FOR BIT DATA`` as bytes) and errors are raised as
ibm_db_dbi's exception classes with Db2's message shape (``... SQLSTATE=xxxxx``), the states
PostgreSQL names differently mapped to Db2's (undefined object 42704, undefined routine 42884).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import ibm_db_dbi
import psycopg
from psycopg.adapt import Loader

from cdc_db2.standin.translate import translate
from cdc_postgres.standin.dbapi import PsycopgCursor

#: PostgreSQL SQLSTATEs whose Db2 counterpart differs.
_STATES = {"42P01": "42704", "42883": "42884", "42P06": "42710", "42P07": "42710"}


def parse_connection_string(text: str) -> dict[str, str]:
    """A CLI connection string's ``KEY=value;`` pairs (keys upper-cased; ``{...}`` values unbraced)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        eq = text.find("=", i)
        if eq < 0:
            break
        key = text[i:eq].strip().upper()
        i = eq + 1
        if text.startswith("{", i):
            j = text.index("}", i)
            out[key] = text[i + 1:j]
            i = j + 1
        else:
            j = text.find(";", i)
            j = len(text) if j < 0 else j
            out[key] = text[i:j]
            i = j
        if i < len(text) and text[i] == ";":
            i += 1
    return out


def _error(e: psycopg.Error) -> ibm_db_dbi.Error:
    """A psycopg error as ibm_db_dbi raises one: Db2's message shape, with the SQLSTATE last."""
    message = (str(e).strip().splitlines() or [type(e).__name__])[0]
    if isinstance(e, psycopg.errors.QueryCanceled):
        return ibm_db_dbi.OperationalError(f"[stand-in] SQL0952N Processing was cancelled due to an interrupt: "
                                           f"{message} SQLSTATE=57014 SQLCODE=-952")
    if isinstance(e, psycopg.errors.LockNotAvailable):
        return ibm_db_dbi.ProgrammingError("[stand-in] SQL0911N The current transaction has been rolled back because "
                                           'of a deadlock or timeout.  Reason code "68". SQLSTATE=40001 SQLCODE=-911')
    if isinstance(e, psycopg.OperationalError):
        return ibm_db_dbi.OperationalError(f"[stand-in] SQL30081N A communication error has been detected: {message}. "
                                           "SQLSTATE=08001 SQLCODE=-30081")
    state = getattr(e, "sqlstate", None) or "58004"
    state = _STATES.get(state, state)
    if isinstance(e, psycopg.IntegrityError):
        return ibm_db_dbi.IntegrityError(f"[stand-in] {message} SQLSTATE={state}")
    return ibm_db_dbi.ProgrammingError(f"[stand-in] {message} SQLSTATE={state}")


class Db2TimestampLoader(Loader):
    """A TIMESTAMP(7..12) value (``standin.db2_timestamp``, Db2's string) as ibm_db returns it: a ``datetime`` with
    the microseconds, the digits below them dropped (ibm_db divides SQL_TIMESTAMP_STRUCT's nanoseconds by 1000)."""

    def load(self, data: Any) -> datetime:
        text = bytes(data).decode()
        fraction = text[20:26] if len(text) > 20 else ""
        return datetime.strptime(text[:19], "%Y-%m-%d-%H.%M.%S").replace(microsecond=int((fraction + "000000")[:6]))


def _register_loaders(pg: psycopg.Connection) -> None:
    """Load ``standin.db2_timestamp`` values as ibm_db gives a TIMESTAMP (a database without the type: nothing)."""
    pg.autocommit = True  # as ibm_db_dbi starts (Connection), and no transaction left open by the look-up
    row = pg.execute("SELECT t.oid FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
                     "WHERE n.nspname = 'standin' AND t.typname = 'db2_timestamp'").fetchone()
    if row is not None:
        pg.adapters.register_loader(row[0], Db2TimestampLoader)


class Cursor(PsycopgCursor):
    """ibm_db_dbi's Cursor over a psycopg cursor (rows need no conversion: ``FOR BIT DATA`` is bytea, bytes)."""

    error = staticmethod(_error)

    def execute(self, operation: str, parameters: Any = None) -> bool:
        """Run one Db2 statement with ``?`` markers."""
        kind, pg = translate(operation)
        try:
            if kind == "isolation":
                self.connection._pg.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {pg}")
                if not self.connection._pg.autocommit:
                    self.connection._pg.execute(f"SET TRANSACTION ISOLATION LEVEL {pg}")
                return True
            self._cur.execute(pg, tuple(bytes(p) if isinstance(p, bytearray) else p for p in parameters or ()))  # always a tuple: % is read
        except psycopg.Error as e:
            raise _error(e) from None
        return True


class Connection:
    """ibm_db_dbi's Connection over a psycopg connection to the stand-in database."""

    def __init__(self, pg: psycopg.Connection):
        """Wrap a psycopg connection (ibm_db_dbi starts in autocommit)."""
        self._pg = pg
        self._pg.autocommit = True

    def set_autocommit(self, value: bool) -> bool:
        """As ibm_db_dbi: True runs every statement in its own transaction."""
        try:
            self._pg.autocommit = value
        except psycopg.Error as e:
            raise _error(e) from None
        return True

    def set_option(self, attributes: dict[int, Any]) -> bool:
        """As ibm_db_dbi: CLI attributes; ``SQL_ATTR_QUERY_TIMEOUT`` (0, seconds) is PostgreSQL's statement_timeout."""
        for key, value in attributes.items():
            if key == 0:
                self._pg.execute(f"SET statement_timeout = {int(value) * 1000}")
        return True

    def cursor(self) -> Cursor:
        """A new cursor."""
        return Cursor(self)

    def commit(self) -> bool:
        """Commit the open transaction."""
        try:
            self._pg.commit()
        except psycopg.Error as e:
            raise _error(e) from None
        return True

    def rollback(self) -> bool:
        """Roll the open transaction back."""
        try:
            self._pg.rollback()
        except psycopg.Error as e:
            raise _error(e) from None
        return True

    def close(self) -> bool:
        """Close the connection."""
        self._pg.close()
        return True


def connect(dsn: str, user: str = "", password: str = "") -> Connection:
    """Open a stand-in connection from a CLI connection string (``DATABASE=...;HOSTNAME=...;PORT=...``)."""
    params = parse_connection_string(dsn)
    db = params.get("DATABASE", "")
    try:
        pg = psycopg.connect(host=params.get("HOSTNAME"), port=int(params.get("PORT") or 50000), dbname=db,
                             user=user or params.get("UID") or None, password=password or params.get("PWD") or None,
                             connect_timeout=5, options="-c TimeZone=UTC")
    except psycopg.OperationalError as e:
        reason = (str(e).strip().splitlines() or ["connection failed"])[-1]
        if "password authentication failed" in str(e) or "role" in str(e) and "does not exist" in str(e):
            raise ibm_db_dbi.OperationalError(
                f'[stand-in] SQL30082N Security processing failed with reason "24" ("USERNAME AND/OR PASSWORD '
                f'INVALID"): {reason}  SQLSTATE=08001 SQLCODE=-30082') from None
        if "database" in str(e) and "does not exist" in str(e):
            raise ibm_db_dbi.OperationalError(
                f'[stand-in] SQL1013N The database alias name or database name "{db}" could not be found.  '
                "SQLSTATE=42705 SQLCODE=-1013") from None
        raise ibm_db_dbi.OperationalError(f"[stand-in] SQL30081N A communication error has been detected: {reason}  "
                                          "SQLSTATE=08001 SQLCODE=-30081") from None
    try:
        _register_loaders(pg)
    except psycopg.Error as e:
        pg.close()
        raise _error(e) from None
    return Connection(pg)


def install() -> None:
    """Route the connector's connections to the stand-in (tests only)."""
    from cdc_db2 import driver

    driver.install(connect)
