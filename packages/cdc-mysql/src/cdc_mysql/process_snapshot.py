"""The initial snapshot read in worker processes: tables split into primary-key ranges, each read, converted and serialized by a worker.

Engaged by ``snapshot.max.threads`` above 1 when the engine writes into a sink (``cdc run``,
``Engine(sink=...)``) and the global read lock is held. As for threads (``cdc_mysql.parallel_snapshot``),
each worker's connection starts ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` while the lock is held,
so every chunk is read at the snapshot's binlog position and the hand-over to streaming stays exact;
the connections are opened by this process and each forked worker takes one over (this process does
not use it until the workers are gone). An InnoDB table with a one-column integer primary key read
with the default SELECT is split into key ranges, read in key order (the order of InnoDB's full scan);
any other table is one chunk. The main process writes the chunks in plan order, marking the edge rows
(``cdc_core.snapshot.chunk_merge``), so the records are those of the single-process read.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from cdc_core.events import RawChange
from cdc_core.relational import Table
from cdc_core.relational import TableId as CoreTableId
from cdc_core.snapshot.chunk_merge import merge_in_order
from cdc_core.snapshot.processes import WorkerPipeline, run_in_order

from cdc_mysql.catalog import quote
from cdc_mysql.model import TableDef
from cdc_mysql.snapshot import SnapshotReader, _refusal, _snapshot_cursor
from cdc_mysql.snapshot_locks import quote_table
from cdc_mysql.source import source_block
from cdc_mysql.text_rows import parsed_rows

#: Rows per chunk aimed at (from the table's row estimate): a few MB of results in flight; larger chunks cost the main
#: process page faults for each result it receives.
CHUNK_ROWS = 5_000
_INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"})


@dataclass
class _Chunk:
    table: int  # index into the plan's tables
    statement: str  # the whole SELECT of this chunk


class ChunkWorker:
    """A worker process's side: the connection it took over, a chunk read and serialized per task."""

    def __init__(self, reader: ProcessSnapshotReader, tables: list[tuple[Table, TableDef, str]],
                 pipeline: WorkerPipeline, conns: list[Any]):
        self.reader = reader
        self.tables = tables
        self.pipeline = pipeline
        self.conns = conns
        self.claimed = multiprocessing.get_context("fork").Value("i", 0)
        self.conn: Any = None

    def started(self) -> None:
        """In the worker: take the next connection opened under the lock."""
        with self.claimed.get_lock():
            self.conn = self.conns[self.claimed.value]
            self.claimed.value += 1

    def run(self, chunk: _Chunk) -> tuple[Any, Any, Any]:
        """(first row, the rows in between as packed sink records, last row); the rows parsed."""
        reader = self.reader
        table, definition, _ = self.tables[chunk.table]
        db, name = definition.id.database, definition.id.table
        with _snapshot_cursor(self.conn, pymysql.cursors.SSCursor) as cur:
            try:
                cur.execute(chunk.statement)
            except pymysql.err.MySQLError as e:
                raise _refusal(e, definition.id, chunk.statement) from None
            fetch = parsed_rows(cur, definition)
            rows = []
            while more := fetch(10_000):
                rows += more
        if not rows:
            return None, None, None
        if len(rows) <= 2:
            return rows[0], None, rows[1] if len(rows) == 2 else None
        source = source_block(reader.connector, reader.server, time.time_ns() // 1_000_000, "true", db, name,
                              0, None, reader.position["file"], reader.position["pos"], 0, None, None)
        offset = reader._offset()
        raw = [RawChange(table, "r", None, row, source, offset) for row in rows[1:-1]]
        return rows[0], self.pipeline.pack(raw), rows[-1]


class ProcessSnapshotReader(SnapshotReader):
    """A SnapshotReader whose chunks are read by worker processes, one on each of ``workers``' connections."""

    def __init__(self, conn: Any, workers: list[Any], pipeline: WorkerPipeline, *args: Any, **kwargs: Any):
        super().__init__(conn, *args, **kwargs)
        self.workers = workers
        self.pipeline = pipeline

    def plan(self, tables: list[tuple[Table, TableDef, str]]) -> list[_Chunk]:
        """The chunks, table by table in key order."""
        out = []
        for i, (table, definition, statement) in enumerate(tables):
            ranges = self._key_ranges(definition, statement)
            if not ranges:
                out.append(_Chunk(i, statement))
                continue
            key = quote(definition.primary_key[0])
            for lo, hi in ranges:
                where = f" WHERE {key} >= {lo}" + (f" AND {key} < {hi}" if hi is not None else "")
                out.append(_Chunk(i, statement + where))
        return out

    def _key_ranges(self, definition: TableDef, statement: str) -> list[tuple[int, int | None]]:
        """Key ranges of a splittable table (the first starts at its minimum, the last is open), else []."""
        pk = definition.primary_key
        if len(pk) != 1:
            return []
        column = next((c for c in definition.columns if c.name.lower() == pk[0].lower()), None)
        if column is None or column.type_name not in _INTEGER_TYPES:
            return []
        tid = CoreTableId(definition.id.database, None, definition.id.table)
        if statement != f"SELECT {', '.join(quote(c.name) for c in definition.columns)} FROM {quote_table(tid)}":
            return []
        estimate = self.estimates.get(f"{definition.id.database}.{definition.id.table}") or 0
        chunks = math.ceil(estimate / CHUNK_ROWS)
        if chunks <= 1:
            return []
        with self.conn.cursor() as cur:
            cur.execute("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                        (definition.id.database, definition.id.table))
            row = cur.fetchone()
            if row is None or str(row[0]).lower() != "innodb":
                return []
            key = quote(pk[0])
            cur.execute(f"SELECT MIN({key}), MAX({key}) FROM {quote_table(tid)}")
            low, high = cur.fetchone()
        if low is None:
            return []
        step = max(1, math.ceil((int(high) - int(low) + 1) / chunks))
        bounds = list(range(int(low), int(high) + 1, step))
        return [(lo, bounds[k + 1] if k + 1 < len(bounds) else None) for k, lo in enumerate(bounds)]

    def read(self, tables: list[tuple[Table, TableDef, str]]) -> Iterator[list[Any]]:
        """Yield the chunks' records in plan order; the last record of all is marked ``last``."""
        chunks = self.plan(tables)
        self.log.info("snapshot.max.threads=%d: %d tables in %d chunks read in worker processes",
                      len(self.workers), len(tables), len(chunks))
        worker = ChunkWorker(self, tables, self.pipeline, self.workers)
        file, pos = self.position["file"], self.position["pos"]
        sources: dict[int, dict] = {}
        started: dict[int, float] = {}
        offset = self._offset()

        def table_started(index: int) -> None:
            definition = tables[index][1]
            started[index] = time.monotonic()
            sources[index] = source_block(self.connector, self.server, time.time_ns() // 1_000_000, "true",
                                          definition.id.database, definition.id.table, 0, None, file, pos, 0,
                                          None, None)

        def table_done(index: int, rows: int) -> None:
            definition = tables[index][1]
            name = f"{definition.id.database}.{definition.id.table}"
            self.rows_scanned[name] = rows
            self.table_done(name, rows)
            if self.metrics is not None:
                self.metrics.table_completed(name)
            self.log.info("snapshot of %s: %d rows in %.1fs (worker processes)", name, rows,
                          time.monotonic() - started[index])

        def raw(index: int, row: Any, marker: str) -> RawChange:
            source = sources[index] if marker == "true" else {**sources[index], "snapshot": marker}
            return RawChange(tables[index][0], "r", None, row, source, offset)

        results = run_in_order(worker, chunks, len(self.workers), lambda: self.stopped)
        held = yield from merge_in_order(((c.table, r) for c, r in zip(chunks, results)), len(tables) > 1, raw,
                                         table_started, table_done, lambda: self.stopped)
        if held is not None:
            yield [held._replace(source={**held.source, "snapshot": "last"})]
