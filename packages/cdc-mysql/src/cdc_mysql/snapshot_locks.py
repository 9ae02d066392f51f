"""``snapshot.locking.mode`` as SnapshotLock plugins, and how a snapshot takes and releases their locks.

Each built-in mode is a SnapshotLock (``cdc_core.snapshot.spi``) registered by the MySQL plugin
through the ``register_snapshot_locks`` hook (``none`` is the core's). A lock gives the statement
that blocks writes while the snapshot reads the binlog position and the table definitions, and says
as data how long it is held:

=================  ================================  =====================================
mode               statement                         held until
=================  ================================  =====================================
minimal            FLUSH TABLES WITH READ LOCK       the table definitions are read
minimal_percona    LOCK TABLES FOR BACKUP (Percona)  the table definitions are read
extended           FLUSH TABLES WITH READ LOCK       the rows are read and committed
none               (none)                            -
=================  ================================  =====================================

Where the global read lock is not permitted (Amazon RDS, Aurora) the captured tables are locked
with ``LOCK TABLES ... READ`` instead and held until the rows are read. A custom SnapshotLock
(``snapshot.locking.mode=custom``) returns per-table ``LOCK TABLES`` statements, which are merged
into one (each ``LOCK TABLES`` releases the previous one), or a global statement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import pymysql

from cdc_core.config import Config
from cdc_core.relational import TableId

GLOBAL_READ_LOCK = "FLUSH TABLES WITH READ LOCK"


def quote_table(table: TableId) -> str:
    """```db`.`table``` for a core TableId (catalog = database)."""
    return ".".join("`" + str(p).replace("`", "``") + "`" for p in (table.catalog, table.table) if p is not None)


class _GlobalLock:
    """A lock whose statement does not depend on the table."""

    name: ClassVar[str] = ""
    statement: ClassVar[str] = GLOBAL_READ_LOCK
    #: Release once the table definitions are read (else after the rows are read and committed).
    release_after_schema: ClassVar[bool] = True

    def configure(self, config: Config) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: TableId, quote: Callable[[TableId], str]) -> str | None:
        """The same global statement for every table."""
        return self.statement


class MinimalLock(_GlobalLock):
    """``minimal``: the global read lock only while the binlog position and table definitions are read."""

    name = "minimal"


class MinimalPerconaLock(_GlobalLock):
    """``minimal_percona``: Percona Server's backup lock (no table flush, not blocked by long reads)."""

    name = "minimal_percona"
    statement = "LOCK TABLES FOR BACKUP"


class ExtendedLock(_GlobalLock):
    """``extended``: the global read lock for the whole snapshot (blocks every write until it ends)."""

    name = "extended"
    release_after_schema = False


BUILTIN_LOCKS = [MinimalLock, MinimalPerconaLock, ExtendedLock]


class SnapshotLocks:
    """Takes a SnapshotLock's locks on a snapshot connection, falls back to table locks, releases them."""

    def __init__(self, conn: pymysql.connections.Connection, lock: Any, timeout_ms: int, log: Any,
                 metrics: Any = None):
        self.conn = conn
        self.lock = lock
        self.timeout_ms = timeout_ms
        self.log = log
        #: ``cdc_mysql.metrics.SnapshotLockMetrics`` (``HoldingGlobalLock``), if any.
        self.metrics = metrics
        self.global_lock = False
        #: True while FLUSH TABLES WITH READ LOCK is held: no commit anywhere (a backup lock lets InnoDB commit).
        self.commits_blocked = False
        #: True while LOCK TABLES locks are held: the snapshot then reads without a transaction of its own.
        self.table_locks = False

    def _holding(self, held: bool) -> None:
        """Report ``HoldingGlobalLock``."""
        if self.metrics is not None:
            self.metrics.holding_global_lock = held

    def acquire(self, tables: list[TableId]) -> None:
        """Block writes to ``tables`` (nothing to do without tables or with a lock that gives no statement)."""
        statements = list(dict.fromkeys(
            s for t in tables if (s := self.lock.table_lock_statement(self.timeout_ms, t, quote_table)) is not None))
        if not statements:
            return
        with self.conn.cursor() as cur:
            cur.execute(f"SET SESSION lock_wait_timeout = {max(1, math.ceil(self.timeout_ms / 1000))}")
            if all(s.upper().startswith("LOCK TABLES ") and s.upper() != "LOCK TABLES FOR BACKUP" for s in statements):
                self._table_locks(cur, [s[len("LOCK TABLES "):] for s in statements])
                return
            for statement in statements:
                try:
                    cur.execute(statement)
                except pymysql.err.OperationalError as e:
                    if statement.upper() != GLOBAL_READ_LOCK or e.args[0] not in (1044, 1045, 1227):
                        raise
                    self.log.warning("the global read lock is not permitted (%s); locking the %d captured tables "
                                     "instead, until their rows are read", e.args[-1], len(tables))
                    self._table_locks(cur, [f"{quote_table(t)} READ" for t in tables])
                    return
            self.global_lock = True
            self.commits_blocked = any(s.upper() == GLOBAL_READ_LOCK for s in statements)
            self._holding(True)

    def _table_locks(self, cur: Any, items: list[str]) -> None:
        self.conn.autocommit(False)  # LOCK TABLES and START TRANSACTION release each other: read under the locks
        cur.execute("LOCK TABLES " + ", ".join(items))
        self.table_locks = True
        self._holding(True)

    def after_schema(self) -> None:
        """Release a global lock that is held only while the table definitions are read."""
        if self.global_lock and getattr(self.lock, "release_after_schema", True):
            self._unlock()

    def release(self) -> None:
        """Release whatever is still held (after the snapshot's rows are read and committed)."""
        if self.global_lock or self.table_locks:
            self._unlock()

    def _unlock(self) -> None:
        with self.conn.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        if self.table_locks:
            self.conn.autocommit(True)
        self.global_lock = self.table_locks = self.commits_blocked = False
        self._holding(False)
