"""``database.query.timeout.ms``: how long one of cdc's queries may run, and the error when one runs longer.

Debezium sets it as the JDBC query timeout of every statement it runs (catalog reads, locks,
``database.initial.statements``, snapshot reads, where pgjdbc's timer covers the wait for the first
rows of a fetch-size cursor, not the whole read). cdc sets it as the session's ``statement_timeout``
on its query connections (never on the replication connection), and for a snapshot's COPY, which
is one statement however large the table, limits only the wait for its first rows, as pgjdbc does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from cdc_core.errors import ConnectorError

PROPERTY = "database.query.timeout.ms"


def is_statement_timeout(e: BaseException) -> bool:
    """True for the server's cancellation of a statement that ran past ``statement_timeout``."""
    return isinstance(e, psycopg.errors.QueryCanceled) and "statement timeout" in str(e)


def timeout_error(timeout_ms: int, address: str, what: str) -> ConnectorError:
    """The one-line error for a query that ran past the limit."""
    return ConnectorError(f"{what} on PostgreSQL at {address} ran longer than {PROPERTY}={timeout_ms} ms and was "
                          f"cancelled; raise {PROPERTY} (0: no limit) or make the query faster")


@contextmanager
def statement_timeouts(timeout_ms: int, address: str) -> Iterator[None]:
    """Turn a statement timeout raised inside into ``timeout_error`` (a stop, not a reconnect)."""
    try:
        yield
    except psycopg.errors.QueryCanceled as e:
        if not is_statement_timeout(e):
            raise
        line = (str(e).strip().splitlines() or [""])[0]
        context = next((x.strip() for x in str(e).splitlines() if x.strip().startswith("CONTEXT")), "")
        raise timeout_error(timeout_ms, address, f"a query ({line}{'; ' + context if context else ''})") from None


class FirstRowDeadline:
    """Cancel a connection's running statement unless ``arrived()`` is called within ``timeout_ms``."""

    def __init__(self, conn: psycopg.Connection, timeout_ms: int):
        self.conn = conn
        self.fired = False
        self._done = threading.Event()
        self._timer = threading.Timer(timeout_ms / 1000.0, self._fire) if timeout_ms > 0 else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        if not self._done.is_set():
            self.fired = True
            self.conn.cancel_safe()

    def arrived(self) -> None:
        """The first rows arrived (or the statement ended): no cancellation from now on."""
        if not self._done.is_set():
            self._done.set()
            if self._timer is not None:
                self._timer.cancel()
