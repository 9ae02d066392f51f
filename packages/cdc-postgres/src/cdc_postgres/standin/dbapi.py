"""A DB-API cursor over a psycopg cursor, for stand-in drivers of other databases (ibm_db_dbi, pyodbc).

A stand-in driver subclasses ``PsycopgCursor``: ``error`` turns a psycopg error into its driver's
exception, ``_rows`` converts fetched rows to its driver's values; ``execute`` is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import psycopg


class PsycopgCursor:
    """The fetching half of a DB-API cursor over ``connection._pg`` (a psycopg connection)."""

    #: The driver's exception for a psycopg error.
    error: ClassVar[Callable[[psycopg.Error], Exception]]

    def __init__(self, conn: Any):
        """A cursor of ``conn`` (its ``_pg`` is the psycopg connection)."""
        self.connection = conn
        self._cur = conn._pg.cursor()
        self.arraysize = 1

    @property
    def description(self) -> Any:
        """Column descriptions (name first)."""
        return self._cur.description

    @property
    def rowcount(self) -> int:
        """Rows affected by the last statement, -1 if unknown."""
        return self._cur.rowcount

    def _rows(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """Rows as the driver returns them (psycopg's rows are tuples already, bytea as bytes)."""
        return rows if isinstance(rows, list) else list(rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        """The next row, or None."""
        try:
            row = self._cur.fetchone()
        except psycopg.Error as e:
            raise type(self).error(e) from None
        return None if row is None else self._rows([row])[0]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        """Up to ``size`` rows."""
        try:
            return self._rows(self._cur.fetchmany(size or self.arraysize))
        except psycopg.Error as e:
            raise type(self).error(e) from None

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every remaining row."""
        try:
            return self._rows(self._cur.fetchall())
        except psycopg.Error as e:
            raise type(self).error(e) from None

    def close(self) -> None:
        """Close the cursor."""
        self._cur.close()
