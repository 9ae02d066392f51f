"""A stand-in capture agent's thread: polls a logical replication slot (``test_decoding``) on its own connection.

Each hosted database (SQL Server's capture job, Db2's asncap) subclasses ``SlotAgent``: ``poll``
turns the slot's complete transactions into its change rows; ``STATUS_TABLE`` is the one-row
table whose ``running`` column shows the service's state, ``THREAD`` the thread's name prefix.
"""

from __future__ import annotations

import re
import threading
from typing import ClassVar

import psycopg

#: A ``test_decoding`` commit line (``include-xids``, ``include-timestamp``): the xid and the commit time.
COMMIT = re.compile(r"COMMIT (\d+)(?: \(at (.+)\))?")


def pg_lsn_int(pg_lsn: str) -> int:
    """A PostgreSQL LSN (``X/Y``) as an int."""
    hi, lo = (int(p, 16) for p in pg_lsn.split("/"))
    return hi << 32 | lo


def pg_lsn_bytes(pg_lsn: str, suffix: int, width: int) -> bytes:
    """A PostgreSQL LSN (``X/Y``) as bytes: 4 of X, 4 of Y, then ``suffix`` in ``width`` bytes (all big-endian)."""
    hi, lo = (int(p, 16) for p in pg_lsn.split("/"))
    return hi.to_bytes(4, "big") + lo.to_bytes(4, "big") + suffix.to_bytes(width, "big")


class SlotAgent:
    """A thread polling the slot every ``interval`` seconds; a lost connection (a server restart) is retried."""

    #: The table whose ``running`` column the agent sets while it polls.
    STATUS_TABLE: ClassVar[str] = "standin.agent"
    #: The polling thread's name, before ``-<slot>``.
    THREAD: ClassVar[str] = "capture-agent"

    def __init__(self, conninfo: str, slot: str, interval: float = 0.05, batch: int = 20000):
        """An agent for the slot ``slot`` of the database ``conninfo`` names."""
        self.conninfo = conninfo
        self.slot = slot
        self.interval = interval
        self.batch = batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The WAL position (an int) up to which every committed transaction has been captured.
        self.caught_up = 0
        self.error: BaseException | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        """Start polling in a daemon thread; returns once the service shows as running."""
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name=f"{self.THREAD}-{self.slot}", daemon=True)
        self._thread.start()
        self._ready.wait(30)

    def stop(self) -> None:
        """Stop polling (the service stopped); rows already written stay."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None

    def poll(self, conn: psycopg.Connection) -> bool:
        """Capture every complete transaction the slot holds; True if a full batch was read (poll again at once)."""
        raise NotImplementedError

    def _run(self) -> None:
        """Poll until stopped; a lost connection (a server restart) is retried, as the service's job retries."""
        try:
            while not self._stop.is_set():
                try:
                    self._session()
                except psycopg.OperationalError:
                    if self._stop.wait(self.interval * 10):
                        return
        except BaseException as e:  # kept for the tests to see; the agent stops as the real service would
            self.error = e
        finally:
            self._ready.set()

    def _session(self) -> None:
        """One connection's polling loop; ``STATUS_TABLE.running`` is true while it lasts."""
        with psycopg.connect(self.conninfo, options="-c TimeZone=UTC") as conn:
            conn.execute(f"UPDATE {self.STATUS_TABLE} SET running = true")
            conn.commit()
            self._ready.set()
            try:
                while not self._stop.is_set():
                    if not self.poll(conn):
                        self._stop.wait(self.interval)
            finally:
                if not conn.closed and not conn.broken:
                    conn.rollback()
                    conn.execute(f"UPDATE {self.STATUS_TABLE} SET running = false")
                    conn.commit()
