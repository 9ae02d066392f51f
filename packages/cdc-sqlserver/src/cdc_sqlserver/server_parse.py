"""Temporal default texts parsed by SQL Server itself (``SELECT PARSE(? AS <type>)``), each (type, text) asked once.

As 2.7.4's SqlServerDefaultValueConverter, which runs ``SELECT PARSE(? AS date|datetime|datetime2|
datetimeoffset|smalldatetime|time)`` on the metadata connection for every temporal default: the server
applies its own rounding (DATETIME's 1/300 s, SMALLDATETIME's minute) and its own idea of what parses.
Debezium asks again each time it builds a table's schema; cdc caches the answer per ``(type, text)``
(the same server gives the same answer) and shares the cache between the connections of one connector
(``on``). A text the server refuses (an error with its SQLSTATE) is remembered as refused. A lost
connection is not an answer: it is raised (and not cached), where Debezium's catch-all would give the
column no default for as long as the task runs; the connector then retries as for any lost connection.
Any other failure (no connection yet) is raised uncached too: the caller gives no default this time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_sqlserver.driver_errors import first_line, is_connection_error

#: The types whose defaults Debezium hands to the server's PARSE.
TEMPORAL_TYPES = frozenset({"date", "datetime", "datetime2", "datetimeoffset", "smalldatetime", "time"})


def _from_server(e: BaseException) -> bool:
    """True for the driver's error carrying the server's SQLSTATE (pyodbc: ``(sqlstate, message)``)."""
    state = e.args[0] if getattr(e, "args", None) else None
    return isinstance(state, str) and len(state) == 5


class ParseRefused(ValueError):
    """The server could not PARSE the text as the type (its error message, first line)."""


class ServerParse:
    """``parse(type_name, text)``: the value ``SELECT PARSE(? AS <type_name>)`` returns, cached per (type, text)."""

    def __init__(self, connection: Callable[[], Any], cache: dict[tuple[str, str], Any] | None = None):
        """``connection``: gives the open connection to ask (called at each uncached question)."""
        self._connection = connection
        self._cache: dict[tuple[str, str], Any] = {} if cache is None else cache

    def on(self, conn: Any) -> ServerParse:
        """The same cache, asking on ``conn`` (another thread's or process's own connection)."""
        return ServerParse(lambda: conn, self._cache)

    def __call__(self, type_name: str, text: str) -> Any:
        """The server's value of ``text`` as ``type_name``; ParseRefused when the server cannot parse it."""
        if type_name not in TEMPORAL_TYPES:
            raise ValueError(f"PARSE of a default is for the temporal types {sorted(TEMPORAL_TYPES)}, not {type_name!r}")
        key = (type_name, text)
        if key not in self._cache:
            try:
                row = self._connection().execute(f"SELECT PARSE(? AS {type_name})", text).fetchone()
            except Exception as e:
                if is_connection_error(e) or not _from_server(e):
                    raise
                self._cache[key] = ParseRefused(first_line(e))
            else:
                self._cache[key] = row[0] if row else None
        value = self._cache[key]
        if isinstance(value, ParseRefused):
            raise value
        return value
