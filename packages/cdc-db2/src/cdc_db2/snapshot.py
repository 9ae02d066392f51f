"""The initial snapshot: the captured tables read in one transaction at ``snapshot.isolation.mode``.

As Db2SnapshotChangeEventSource: the isolation level is set (read_uncommitted UR, read_committed
CS, repeatable_read RS, exclusive RS plus ``LOCK TABLE ... IN EXCLUSIVE MODE`` on every table), the
highest synchpoint is read inside the transaction (streaming starts after it), then every table
is read. Records carry ``commit_lsn`` = that LSN and offsets ``{snapshot, snapshot_completed, commit_lsn}``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_db2.catalog import CaptureTable, max_lsn_query, quote
from cdc_db2.lsn import from_value
from cdc_db2.source import source_block

ISOLATION = {"read_uncommitted": "UR", "read_committed": "CS", "repeatable_read": "RS", "exclusive": "RS"}


def snapshot_offset(commit_lsn: str, completed: bool) -> dict[str, Any]:
    """Debezium's snapshot offset (Db2OffsetContext.getOffset while a snapshot runs)."""
    return {"snapshot": True, "snapshot_completed": completed, "commit_lsn": commit_lsn}


def table_name(captured: CaptureTable) -> str:
    """``"SCHEMA"."TABLE"``."""
    return f"{quote(captured.table.id.schema or '')}.{quote(captured.table.id.table)}"


def select_for(captured: CaptureTable) -> str:
    """``SELECT "C1", ... FROM "SCHEMA"."TABLE"``."""
    return f"SELECT {', '.join(quote(c.name) for c in captured.table.columns)} FROM {table_name(captured)}"


class SnapshotReader:
    """Reads the captured tables on its own connection, in one transaction."""

    def __init__(self, conn: Any, server: str, db: str, control: str, isolation: str, fetch_size: int, log: Any):
        """Read on ``conn`` (its own connection) at ``isolation``."""
        self.conn = conn
        self.server = server
        self.db = db
        self.control = control
        self.isolation = isolation
        self.fetch_size = fetch_size
        self.log = log
        self.stopped = False
        self.max_lsn = "NULL"

    def begin(self, tables: list[CaptureTable]) -> str:
        """Set the isolation level, lock (``exclusive``), and read the highest synchpoint inside the transaction."""
        self.conn.set_autocommit(False)
        cur = self.conn.cursor()
        cur.execute(f"SET CURRENT ISOLATION = {ISOLATION[self.isolation]}")
        if self.isolation == "exclusive":
            for t in tables:
                cur.execute(f"LOCK TABLE {table_name(t)} IN EXCLUSIVE MODE")
        cur.execute(max_lsn_query(self.control))
        row = cur.fetchone()
        self.max_lsn = str(from_value(row[0] if row else None))
        return self.max_lsn

    def end(self) -> None:
        """Commit the snapshot transaction (releasing its locks) and go back to autocommit."""
        self.conn.commit()
        self.conn.set_autocommit(True)

    def read(self, tables: list[tuple[CaptureTable, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield ``op: r`` batches table by table; the very last record carries ``snapshot_completed``."""
        held: RawChange | None = None
        first = True
        offset = snapshot_offset(self.max_lsn, False)
        for captured, select in tables:
            if self.stopped:
                return
            started = time.monotonic()
            table = captured.table
            source = source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                                  table.id.table, None, self.max_lsn)
            cur = self.conn.cursor()
            try:
                cur.execute(select)
            except Exception as e:
                if type(e).__name__ == "OperationalError":
                    raise
                raise ConnectorError(f"the snapshot of {table.id} failed: Db2 refused {select!r}: "
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
                    if held is not None:
                        batch.append(held)
                    held = RawChange(table, "r", None, list(row), src, offset)
                rows += len(fetched)
                if batch:
                    yield batch
                    if self.stopped:
                        return
            cur.close()
            if held is not None and rows and held.source["snapshot"] != "first":
                held = held._replace(source={**held.source, "snapshot": "last_in_data_collection"})
            self.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started)
        last: list[RawChange | Checkpoint] = []
        if held is not None:
            last.append(held._replace(source={**held.source, "snapshot": "last"},
                                      offset=snapshot_offset(self.max_lsn, True)))
        last.append(Checkpoint(snapshot_offset(self.max_lsn, True)))
        yield last


def _first_line(e: BaseException) -> str:
    """The first line of an error's message."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
