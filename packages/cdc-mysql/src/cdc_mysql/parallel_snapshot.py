"""``snapshot.max.threads``: the initial snapshot reads several tables at once, each on its own connection.

Every worker connection starts its ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` while the
snapshot's global read lock is held (``cdc_mysql.snapshotting``), so all of them see exactly the
state at the snapshot's binlog position and the hand-over to streaming stays exact. One thread
reads one table at a time, so each table's rows keep their order; tables interleave. Markers are
Debezium's for more than one thread (RelationalSnapshotContext with ``snapshotMaxThreads > 1``):
each table's first row ``first_in_data_collection``, its last ``last_in_data_collection``, no
``first``, and the snapshot's very last record ``last`` (BufferingSnapshotChangeRecordReceiver).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pymysql
import pymysql.cursors

from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_core.snapshot.parallel import read_in_parallel

from cdc_mysql.model import TableDef
from cdc_mysql.snapshot import SnapshotReader, _refusal, _snapshot_cursor
from cdc_mysql.text_rows import parsed_rows
from cdc_mysql.source import source_block

class ParallelSnapshotReader(SnapshotReader):
    """A SnapshotReader over several connections (the first is the snapshot's own), one table per thread."""

    def __init__(self, conns: list[pymysql.connections.Connection], *args: Any, **kwargs: Any):
        """``conns``: the snapshot's connection first, then the workers'; the rest as SnapshotReader's."""
        super().__init__(conns[0], *args, **kwargs)
        self.conns = conns

    def read(self, tables: list[tuple[Table, TableDef, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield batches of ``r`` changes as the threads read them; the last record of all is marked ``last``."""
        held = yield from read_in_parallel(self.conns, tables, lambda c, item, out: self._read_table(c, *item, out),
                                           lambda: self.stopped, self._stop)
        if held is not None:
            yield [held._replace(source={**held.source, "snapshot": "last"})]

    def _stop(self) -> None:
        self.stopped = True

    def _read_table(self, conn: pymysql.connections.Connection, table: Table, definition: TableDef, statement: str,
                    out: queue.Queue) -> None:
        """One table's rows onto ``out`` in batches, first and last marked ``*_in_data_collection``."""
        started = time.monotonic()
        db, name = definition.id.database, definition.id.table
        file, pos = self.position["file"], self.position["pos"]
        streamed = self.streams(f"{db}.{name}")
        rows = 0
        prev: RawChange | None = None
        with _snapshot_cursor(conn, pymysql.cursors.SSCursor if streamed else pymysql.cursors.Cursor) as cur:
            try:
                cur.execute(statement)
            except pymysql.err.MySQLError as e:
                raise _refusal(e, definition.id, statement) from None
            fetch = parsed_rows(cur, definition)
            while not self.stopped:
                chunk = fetch(self.fetch_size)
                if not chunk:
                    break
                source = source_block(self.connector, self.server, time.time_ns() // 1_000_000, "true", db, name,
                                      0, None, file, pos, 0, None, None)
                offset = self._offset()
                batch = []
                for row in chunk:
                    src = source if prev is not None or rows else {**source, "snapshot": "first_in_data_collection"}
                    if prev is not None:
                        batch.append(prev)
                    prev = RawChange(table, "r", None, row, src, offset)
                    rows += 1
                if batch:
                    out.put(batch)
        if self.stopped:
            return
        if prev is not None:  # Debezium's precedence without first/last tables: last_in_ over first_in_
            out.put([prev._replace(source={**prev.source, "snapshot": "last_in_data_collection"})])
        self.rows_scanned[f"{db}.{name}"] = rows
        self.table_done(f"{db}.{name}", rows)
        if self.metrics is not None:
            self.metrics.table_completed(f"{db}.{name}")
        self.log.info("snapshot of %s.%s: %d rows in %.1fs (%s, thread %s)", db, name, rows, time.monotonic() - started,
                      "streamed" if streamed else "buffered", threading.current_thread().name)
