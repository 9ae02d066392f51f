"""The initial snapshot: the captured tables read in one transaction at ``snapshot.isolation.mode``.

As SqlServerSnapshotChangeEventSource: the isolation level is set; under ``repeatable_read`` and
``exclusive`` (lockTablesForSchemaSnapshot) ``SET LOCK_TIMEOUT`` is ``snapshot.lock.timeout.ms``,
``repeatable_read`` sets a savepoint, and each table gets the SnapshotLock's statement of
``snapshot.locking.mode`` (``exclusive``: ``SELECT TOP(0) * FROM [db].[schema].[table] WITH (TABLOCKX)``;
``none``: no lock); the maximum LSN is read inside the transaction (streaming starts after it; under
``exclusive`` the end of the log read under the locks, ``SnapshotReader._log_end_under_locks``), then
``repeatable_read`` rolls back to its savepoint, releasing the locks (releaseSchemaSnapshotLocks;
``exclusive`` keeps them to the end), and every table is read. Records carry ``commit_lsn`` = that
LSN and offsets ``{snapshot, snapshot_completed, commit_lsn}``.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from cdc_core.errors import RetriableError
from cdc_core.relational import Table
from cdc_core.snapshot.table_reader import TableSnapshotReader, first_line
from cdc_sqlserver.catalog import CaptureInstance
from cdc_sqlserver.log_end import log_end
from cdc_sqlserver.lsn import Lsn, from_value
from cdc_sqlserver.snapshot_select import quote_table
from cdc_sqlserver.source import source_block

class UncapturedTable(NamedTuple):
    """An included table without a capture instance: the snapshot reads all its columns (as Debezium 2.7.4's,
    whose captured tables are those the filters pass, CDC or not); streaming has no change table to read."""

    table: Table


ISOLATION = {"read_uncommitted": "READ UNCOMMITTED", "read_committed": "READ COMMITTED",
             "repeatable_read": "REPEATABLE READ", "snapshot": "SNAPSHOT", "exclusive": "REPEATABLE READ"}


def snapshot_offset(commit_lsn: str, completed: bool) -> dict[str, Any]:
    """Debezium's snapshot offset (SqlServerOffsetContext.getOffset while a snapshot runs)."""
    return {"snapshot": True, "snapshot_completed": completed, "commit_lsn": commit_lsn}


class ExclusiveSnapshotLock:
    """``snapshot.locking.mode=exclusive`` for SQL Server (Debezium's sqlserver ExclusiveSnapshotLock)."""

    name = "exclusive"

    def configure(self, config: Any) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: Any, quote_fn: Any) -> str | None:
        """``SELECT TOP(0) * FROM <table> WITH (TABLOCKX)`` (the timeout is the session's LOCK_TIMEOUT)."""
        return f"SELECT TOP(0) * FROM {quote_fn(table)} WITH (TABLOCKX)"


class SnapshotReader(TableSnapshotReader):
    """Reads the captured tables on its own connection, in one transaction."""

    REFUSER = "the server"

    def __init__(self, conn: Any, server: str, db: str, isolation: str, fetch_size: int, log: Any):
        """Read on ``conn`` (its own connection) at ``isolation``."""
        self.conn = conn
        self.server = server
        self.db = db
        self.isolation = isolation
        self.fetch_size = fetch_size
        self.log = log
        self.stopped = False
        self.max_lsn: str = "NULL"
        #: The SnapshotLock of ``snapshot.locking.mode`` (None: no locks) and ``snapshot.lock.timeout.ms``.
        self.lock: Any = ExclusiveSnapshotLock()
        self.lock_timeout_ms = 10000
        #: Whether the snapshot captures the schema too (the snapshotter's should_snapshot_schema): Debezium 2.7.4's
        #: doExecute calls lockTablesForSchemaSnapshot, which sets the isolation level (but SNAPSHOT, set when the
        #: connection is made) and takes the locks, only then; a data-only snapshot reads at the driver's default,
        #: READ COMMITTED, without locks.
        self.schema = True

    def begin(self, instances: list[CaptureInstance | UncapturedTable]) -> str:
        """Set the isolation level, lock (module docstring), and read the max LSN inside the transaction."""
        self.conn.autocommit = False
        isolation = self.isolation if self.schema or self.isolation == "snapshot" else "read_committed"
        self.conn.execute(f"SET TRANSACTION ISOLATION LEVEL {ISOLATION[isolation]}")
        locking = self.schema and self.isolation in ("repeatable_read", "exclusive")
        if locking:
            self.conn.execute(f"SET LOCK_TIMEOUT {self.lock_timeout_ms}")
            if self.isolation == "repeatable_read":
                self.conn.execute("SAVE TRANSACTION dbz_schema_snapshot")
            quote_fn = quote_table(self.db)
            for inst in instances:
                statement = self.lock.table_lock_statement(self.lock_timeout_ms, inst.table.id, quote_fn) \
                    if self.lock is not None else None
                if not statement:
                    continue
                self.log.info("locking table %s", inst.table.id)
                try:
                    self.conn.execute(statement).fetchall()
                except Exception as e:
                    if "(1222)" not in str(e) and "Lock request time out" not in str(e):
                        raise
                    # Debezium 2.7.4's SqlServerErrorHandler: every SQLException is retriable, so the connector
                    # restarts (SnapshotIT.testDeadlockDetection: "Lock request time out period exceeded.").
                    raise RetriableError(f"the snapshot could not lock {inst.table.id} of database {self.db!r} within "
                                         f"snapshot.lock.timeout.ms={self.lock_timeout_ms} ({statement!r}): "
                                         f"{first_line(e)}") from None
        row = self.conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
        self.max_lsn = str(from_value(row[0] if row else None))
        if locking and self.isolation == "exclusive" and isinstance(self.lock, ExclusiveSnapshotLock):
            self.max_lsn = self._log_end_under_locks(self.max_lsn)
        if locking and self.isolation == "repeatable_read":
            self.conn.execute("ROLLBACK TRANSACTION dbz_schema_snapshot")
            self.log.info("schema locks released")
        return self.max_lsn

    def _log_end_under_locks(self, max_lsn: str) -> str:
        """The handoff of an ``exclusive`` snapshot: the end of the log, read while every captured table is locked
        (TABLOCKX, held to the end), when it lies above the max LSN.

        Debezium 2.7.4 hands off at the max LSN, which lags the capture job: a transaction committed just before
        the locks but not yet copied into the change tables is in the rows read and, its commit LSN being above
        that max LSN, streamed again. Every transaction that changed a locked table committed before the end of
        the log read under the locks (in the rows) or commits after the snapshot (above it), so streaming from
        there repeats and loses nothing, which is what the chapter promises for ``exclusive``. The offsets and
        the snapshot's ``commit_lsn`` then name that log position, not the last captured transaction's. Without
        the permission to read it, the max LSN, as Debezium.
        """
        try:
            end = log_end(self.conn)
        except Exception as e:  # noqa: BLE001 - the snapshot goes on, as Debezium's
            self.log.warning("snapshot.isolation.mode=exclusive: cannot read the end of the log (%s); the snapshot "
                             "hands off at the max LSN %s, and changes committed just before it that the capture "
                             "job had not read yet are delivered again after it", first_line(e), max_lsn)
            return max_lsn
        if Lsn.parse(end).key() <= Lsn.parse(max_lsn).key():
            return max_lsn
        self.log.info("the snapshot hands off at the end of the log %s, read under the table locks (the max LSN "
                      "%s lags the capture job)", end, max_lsn)
        return end

    def end(self) -> None:
        """Commit the snapshot transaction and go back to autocommit."""
        self.conn.commit()
        self.conn.autocommit = True

    def source(self, table: Any) -> dict[str, Any]:
        """The ``snapshot: true`` source block of ``table``'s rows, stamped now."""
        return source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                            table.id.table, None, self.max_lsn, None)

    def offset(self, completed: bool) -> dict[str, Any]:
        """The snapshot offset at the highest LSN read by ``begin``."""
        return snapshot_offset(self.max_lsn, completed)

