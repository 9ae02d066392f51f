"""The initial snapshot: the captured tables read in one transaction at ``snapshot.isolation.mode``.

As Db2SnapshotChangeEventSource: the isolation level is set (read_uncommitted UR, read_committed
CS, repeatable_read RS, exclusive RS plus ``LOCK TABLE ... IN EXCLUSIVE MODE`` on every table), the
highest synchpoint is read inside the transaction (streaming starts after it; under ``exclusive`` a
handoff signal's position instead, ``SnapshotReader._signal_handoff``), then every table is read. Records
carry ``commit_lsn`` = that LSN and offsets ``{snapshot, snapshot_completed, commit_lsn}``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.snapshot.table_reader import TableSnapshotReader, first_line
from cdc_db2.catalog import LUW, CaptureTable, max_lsn_query, quote
from cdc_db2.dialects import Dialect
from cdc_db2.lsn import Lsn, from_value
from cdc_db2.signal_lsn import signal_lsn
from cdc_db2.source import source_block
from cdc_db2.timestamps import select_list

#: How long an ``exclusive`` snapshot waits, its tables locked, for asncap to complete its handoff signal (asncap
#: commits every 30 s by default).
HANDOFF_TIMEOUT_S = 120.0

ISOLATION = {"read_uncommitted": "UR", "read_committed": "CS", "repeatable_read": "RS", "exclusive": "RS"}


def snapshot_offset(commit_lsn: str, completed: bool) -> dict[str, Any]:
    """Debezium's snapshot offset (Db2OffsetContext.getOffset while a snapshot runs)."""
    return {"snapshot": True, "snapshot_completed": completed, "commit_lsn": commit_lsn}


def quote_table_id(table: Any) -> str:
    """``"SCHEMA"."TABLE"`` for a core TableId (a SnapshotLock's quote function)."""
    return f"{quote(table.schema or '')}.{quote(table.table)}"


def lock_timeout(ms: int) -> str:
    """Db2's ``CURRENT LOCK TIMEOUT`` value for ``snapshot.lock.timeout.ms``: seconds rounded up, WAIT, NOT WAIT."""
    if ms < 0:
        return "WAIT"
    return "NOT WAIT" if ms == 0 else str(-(-ms // 1000))


class ExclusiveSnapshotLock:
    """``snapshot.locking.mode=exclusive`` for Db2: Debezium's ``SELECT * FROM t WHERE 0=1 WITH CS``."""

    name = "exclusive"

    def configure(self, config: Any) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: Any, quote_fn: Any) -> str | None:
        """The statement Debezium's Db2 ExclusiveSnapshotLock gives (the timeout is CURRENT LOCK TIMEOUT's)."""
        return f"SELECT * FROM {quote_fn(table)} WHERE 0=1 WITH CS"


def table_name(captured: CaptureTable) -> str:
    """``"SCHEMA"."TABLE"``."""
    return f"{quote(captured.table.id.schema or '')}.{quote(captured.table.id.table)}"


def select_for(captured: CaptureTable) -> str:
    """``SELECT "C1", ... FROM "SCHEMA"."TABLE"`` (a TIMESTAMP(7..12) as ``VARCHAR("C")``: cdc_db2.timestamps)."""
    return f"SELECT {select_list(captured.table.columns)} FROM {table_name(captured)}"


class SnapshotReader(TableSnapshotReader):
    """Reads the captured tables on its own connection, in one transaction."""

    REFUSER = "Db2"

    def __init__(self, conn: Any, server: str, db: str, control: str, isolation: str, fetch_size: int, log: Any,
                 dialect: Dialect = LUW):
        """Read on ``conn`` (its own connection) at ``isolation``."""
        self.conn = conn
        self.server = server
        self.db = db
        self.control = control
        self.dialect = dialect
        self.isolation = isolation
        self.fetch_size = fetch_size
        self.log = log
        self.stopped = False
        self.max_lsn = "NULL"
        #: The SnapshotLock of ``snapshot.locking.mode`` (None: no locks) and ``snapshot.lock.timeout.ms``.
        self.lock: Any = None
        self.lock_timeout_ms = 10000
        #: The id of the table being read (its failure's notification names it).
        self.reading: Any = None
        #: ``() -> connection`` (autocommit) on which an ``exclusive`` snapshot commits its handoff signal
        #: (``_signal_handoff``); None: the highest synchpoint, as Debezium.
        self.connect: Any = None

    def begin(self, tables: list[CaptureTable], structure: Any = None) -> str:
        """Set the isolation level, take the locks, read the highest synchpoint inside the transaction.

        As Db2SnapshotChangeEventSource: under ``repeatable_read`` and ``exclusive`` each table gets
        the SnapshotLock's statement (``exclusive``: ``SELECT * FROM t WHERE 0=1 WITH CS``) at
        ``CURRENT LOCK TIMEOUT`` = ``snapshot.lock.timeout.ms``; ``repeatable_read`` releases them (a
        rollback to a savepoint) once the synchpoint is read, ``exclusive`` keeps them and also takes
        ``LOCK TABLE ... IN EXCLUSIVE MODE`` (cdc's reading of the chapter's "exclusive lock").
        ``structure`` (if given) reads the table definitions after the synchpoint, under the locks.
        """
        self.conn.set_autocommit(False)
        cur = self.conn.cursor()
        cur.execute(f"SET CURRENT ISOLATION = {ISOLATION[self.isolation]}")
        locks: list[tuple[CaptureTable, str]] = []
        if self.isolation in ("repeatable_read", "exclusive") and self.lock is not None:
            locks = [(t, st) for t in tables
                     if (st := self.lock.table_lock_statement(self.lock_timeout_ms, t.table.id, quote_table_id))]
        if self.isolation == "exclusive":
            locks += [(t, f"LOCK TABLE {table_name(t)} IN EXCLUSIVE MODE") for t in tables]
        if locks:
            cur.execute(f"SET CURRENT LOCK TIMEOUT = {lock_timeout(self.lock_timeout_ms)}")
            if self.isolation == "repeatable_read":
                cur.execute("SAVEPOINT cdc_schema_snapshot ON ROLLBACK RETAIN CURSORS")
            for t, statement in locks:
                try:
                    cur.execute(statement)
                except Exception as e:
                    if type(e).__name__ == "OperationalError":
                        raise
                    raise ConnectorError(
                        f"the snapshot could not lock {t.table.id} within snapshot.lock.timeout.ms="
                        f"{self.lock_timeout_ms} ({statement!r}): {first_line(e)}") from None
            cur.execute("SET CURRENT LOCK TIMEOUT = NULL")
        cur.execute(max_lsn_query(self.control, self.dialect))
        row = cur.fetchone()
        self.max_lsn = str(from_value(row[0] if row else None))
        if self.isolation == "exclusive" and locks and self.connect is not None:
            self.max_lsn = self._signal_handoff(self.max_lsn)
        if structure is not None:
            structure()
        if locks and self.isolation == "repeatable_read":
            cur.execute("ROLLBACK TO SAVEPOINT cdc_schema_snapshot")
            self.log.info("schema locks released")
        return self.max_lsn

    def _signal_handoff(self, max_lsn: str) -> str:
        """The handoff of an ``exclusive`` snapshot: a USER signal's ``SIGNAL_LSN`` (``cdc_db2.signal_lsn``), the
        signal committed on a second connection while every captured table is locked, when it lies above the
        highest synchpoint.

        Debezium 2.7.4 hands off at the highest synchpoint, which lags asncap: a transaction committed just before
        the locks but not yet captured is in the rows read and, its commit sequence being above that synchpoint,
        streamed again. With the tables locked, every change of theirs committed before the signal is in the rows
        and lies below its ``SIGNAL_LSN``, every later one above it, so streaming from there repeats and loses
        nothing. The snapshot's ``commit_lsn`` and offsets then name that position. Without the signal (no
        privilege, or asncap not completing it within ``HANDOFF_TIMEOUT_S``), the synchpoint, as Debezium.
        """
        conn = None
        try:
            conn = self.connect()
            lsn = signal_lsn(conn, self.control, uuid.uuid4().hex, HANDOFF_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the snapshot goes on, as Debezium's
            self.log.warning("snapshot.isolation.mode=exclusive: no handoff signal (%s); the snapshot hands off at "
                             "the highest synchpoint %s, and changes committed just before it that asncap had not "
                             "captured yet are delivered again after it", first_line(e), max_lsn)
            return max_lsn
        finally:
            if conn is not None:
                conn.close()
        if Lsn.parse(lsn).key() <= Lsn.parse(max_lsn).key():
            return max_lsn
        self.log.info("the snapshot hands off at its signal's log position %s, committed under the table locks (the "
                      "highest synchpoint %s lags the capture program)", lsn, max_lsn)
        return lsn

    def end(self) -> None:
        """Commit the snapshot transaction (releasing its locks) and go back to autocommit."""
        self.conn.commit()
        self.conn.set_autocommit(True)

    def source(self, table: Any) -> dict[str, Any]:
        """The ``snapshot: true`` source block of ``table``'s rows, stamped now (``read`` asks as it starts the table,
        which becomes ``reading``)."""
        self.reading = table.id
        return source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                            table.id.table, None, self.max_lsn)

    def offset(self, completed: bool) -> dict[str, Any]:
        """The snapshot offset at the highest LSN read by ``begin``."""
        return snapshot_offset(self.max_lsn, completed)

