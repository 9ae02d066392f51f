"""A hosted database: another database's CDC objects on a database of a throwaway PostgreSQL, with its agent.

Each hosted database (SQL Server, Db2) subclasses ``HostedDatabase``: ``create_objects`` makes its
catalog and CDC objects, ``SLOT_PREFIX`` names the agent's slot, ``AGENT`` is its SlotAgent.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import psycopg

from cdc_postgres.standin.agent import SlotAgent, pg_lsn_int


class HostedDatabase:
    """PostgreSQL database ``dbname`` of ``pg`` dressed as another database, and the capture agent filling it."""

    #: The agent's replication slot is this prefix and the database's name (lower case, 63 characters at most).
    SLOT_PREFIX: ClassVar[str] = "standin_capture_"
    #: The capture agent's class.
    AGENT: ClassVar[type[SlotAgent]] = SlotAgent

    def __init__(self, pg: Any, dbname: str, agent_interval: float = 0.05):
        """Create the hosted database's objects in ``dbname`` of ``pg``; the agent (not started)."""
        self.pg = pg
        self.dbname = dbname
        self.conninfo = pg.conninfo(dbname)
        self.slot = (self.SLOT_PREFIX + dbname.lower())[:63]
        self.agent = self.AGENT(self.conninfo, self.slot, agent_interval)
        with self._connect() as conn:
            self.create_objects(conn)

    def create_objects(self, conn: psycopg.Connection) -> None:
        """Create the hosted database's catalog and CDC objects on an autocommit connection."""
        raise NotImplementedError

    def _connect(self) -> psycopg.Connection:
        """An autocommit connection in UTC."""
        return psycopg.connect(self.conninfo, autocommit=True, options="-c TimeZone=UTC")

    def execute(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run PostgreSQL ``statement`` (a writer of the source tables, as an application is)."""
        with self._connect() as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []

    def wait_captured(self, timeout: float = 30.0) -> None:
        """Wait until the agent has captured every transaction committed before this call."""
        target = pg_lsn_int(self.execute("SELECT pg_current_wal_lsn()::text")[0][0])
        deadline = time.monotonic() + timeout
        while self.agent.caught_up < target:
            if self.agent.error is not None:
                raise RuntimeError(f"the capture agent failed: {self.agent.error}")
            if time.monotonic() > deadline:
                raise TimeoutError("the capture agent did not catch up")
            time.sleep(0.02)
