"""The initial snapshot: the captured tables read in one transaction at ``snapshot.isolation.mode``.

As SqlServerSnapshotChangeEventSource: the isolation level is set, ``exclusive`` takes
``TABLOCKX`` on every table, the maximum LSN is read inside the transaction (streaming starts
after it), then every table is read. Records carry ``commit_lsn`` = that LSN and offsets
``{snapshot, snapshot_completed, commit_lsn}``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_sqlserver.catalog import CaptureInstance, quote
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.source import source_block

ISOLATION = {"read_uncommitted": "READ UNCOMMITTED", "read_committed": "READ COMMITTED",
             "repeatable_read": "REPEATABLE READ", "snapshot": "SNAPSHOT", "exclusive": "REPEATABLE READ"}


def snapshot_offset(commit_lsn: str, completed: bool) -> dict[str, Any]:
    """Debezium's snapshot offset (SqlServerOffsetContext.getOffset while a snapshot runs)."""
    return {"snapshot": True, "snapshot_completed": completed, "commit_lsn": commit_lsn}


class SnapshotReader:
    """Reads the captured tables on its own connection, in one transaction."""

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

    def begin(self, instances: list[CaptureInstance]) -> str:
        """Set the isolation level, lock (``exclusive``), and read the max LSN inside the transaction."""
        self.conn.autocommit = False
        self.conn.execute(f"SET TRANSACTION ISOLATION LEVEL {ISOLATION[self.isolation]}")
        if self.isolation == "exclusive":
            for inst in instances:
                self.conn.execute(f"SELECT TOP (0) * FROM {_table(self.db, inst)} WITH (TABLOCKX)").fetchall()
        row = self.conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
        self.max_lsn = str(from_value(row[0] if row else None))
        return self.max_lsn

    def end(self) -> None:
        """Commit the snapshot transaction and go back to autocommit."""
        self.conn.commit()
        self.conn.autocommit = True

    def read(self, tables: list[tuple[CaptureInstance, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield ``op: r`` batches table by table; the very last record carries ``snapshot_completed``."""
        held: RawChange | None = None
        first = True
        offset = snapshot_offset(self.max_lsn, False)
        for inst, select in tables:
            if self.stopped:
                return
            started = time.monotonic()
            table = inst.table
            source = source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                                  table.id.table, None, self.max_lsn, None)
            cur = self.conn.cursor()
            try:
                cur.execute(select)
            except Exception as e:
                if type(e).__name__ in ("OperationalError",):
                    raise
                raise ConnectorError(f"the snapshot of {table.id} failed: the server refused {select!r}: "
                                     f"{_first_line(e)}") from None
            rows = 0
            table_first = True
            while True:
                fetched = cur.fetchmany(self.fetch_size)
                if not fetched:
                    break
                batch: list[RawChange | Checkpoint] = []
                for row in fetched:
                    marker = "first" if first else ("first_in_data_collection" if table_first else "true")
                    first = table_first = False
                    src = source if marker == "true" else {**source, "snapshot": marker}
                    change = RawChange(table, "r", None, list(row), src, offset)
                    if held is not None:
                        batch.append(held)
                    held = change
                rows += len(fetched)
                if batch:
                    yield batch
                    if self.stopped:
                        return
            cur.close()
            if held is not None and rows and held.source["snapshot"] not in ("first",):
                held = held._replace(source={**held.source, "snapshot": "last_in_data_collection"})
            self.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started)
        last: list[RawChange | Checkpoint] = []
        if held is not None:
            last.append(held._replace(source={**held.source, "snapshot": "last"},
                                      offset=snapshot_offset(self.max_lsn, True)))
        last.append(Checkpoint(snapshot_offset(self.max_lsn, True)))
        yield last


def _table(db: str, inst: CaptureInstance) -> str:
    """``[db].[schema].[table]``."""
    return f"{quote(db)}.{quote(inst.table.id.schema or 'dbo')}.{quote(inst.table.id.table)}"


def select_for(db: str, inst: CaptureInstance) -> str:
    """``SELECT [c1], ... FROM [db].[schema].[table]``: the captured columns, in the table's order."""
    return f"SELECT {', '.join(quote(c.name) for c in inst.table.columns)} FROM {_table(db, inst)}"


def _first_line(e: BaseException) -> str:
    """The first line of an error's message."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
