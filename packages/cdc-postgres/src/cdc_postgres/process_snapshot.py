"""The initial snapshot read in worker processes: tables split into page ranges, each read, converted and serialized by a worker.

Engaged by ``snapshot.max.threads`` above 1 when the engine writes into a sink (``cdc run``,
``Engine(sink=...)``) and the slot exported a snapshot. Every worker imports that exported snapshot
(``SET TRANSACTION SNAPSHOT``), so every chunk is read at the slot's consistent point and streaming
starts exactly after it, as with one connection. A table of plain heap pages (the default SELECT,
PostgreSQL 14 or later: TID range scans) is split into ``ctid`` page ranges, read in page order, so the
rows come in the order one sequential scan gives; any other table (an override SELECT, a partitioned
table) is one chunk. The main process writes the chunks in plan order; only the first and last row of
each chunk come back unserialized, for it to mark (``source.snapshot``) and to carry the offsets, so the
records are byte for byte those of the single-process read (markers as ``snapshot.max.threads`` gives
them: per table ``first_in_data_collection``/``last_in_data_collection`` when there are several tables).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from cdc_core.events import RawChange
from cdc_core.relational import Table
from cdc_core.snapshot.chunk_merge import merge_in_order
from cdc_core.snapshot.processes import WorkerPipeline, run_in_order
from cdc_postgres.copyread import read_blocks
from cdc_postgres.copytext import parse_block
from cdc_postgres.snapshot import _refusal_named
from cdc_postgres.source import sequence, source_block

#: Rows per chunk aimed at (from the planner's rows per page): large enough that a chunk's two rows built
#: in the main process cost nothing, small enough that the workers' results in flight stay a few MB.
CHUNK_ROWS = 5_000


@dataclass
class _Chunk:
    table: int  # index into the plan's tables
    select: str  # the whole SELECT of this chunk
    ts_us: int  # the table's source.ts (one per table, as the single-process read)


class ChunkWorker:
    """A worker process's side: one connection on the exported snapshot, a chunk read and serialized per task."""

    def __init__(self, reader: Any, tables: list[tuple[Table, str]], pipeline: WorkerPipeline):
        self.reader = reader
        self.tables = tables
        self.pipeline = pipeline
        self.conn: Any = None

    def _connection(self) -> Any:
        if self.conn is None:
            conn = self.reader.connect()
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(self.reader.snapshot_name)))
            conn.execute("SET LOCAL statement_timeout = 0")
            self.conn = conn
        return self.conn

    def run(self, chunk: _Chunk) -> tuple[Any, Any, Any]:
        """(first row, the rows in between as packed sink records, last row); the rows as COPY text values."""
        reader, conn = self.reader, self._connection()
        table = self.tables[chunk.table][0]
        source = source_block(reader.server, reader.db, chunk.ts_us, "true", table.id.schema or "", table.id.table,
                              reader.tx_id, reader.lsn, sequence(None, reader.lsn))
        offset = reader._offset(False)
        rows: list = []
        query = sql.SQL("COPY ({}) TO STDOUT").format(sql.SQL(chunk.select))
        with conn.cursor() as cur, _refusal_named(table, chunk.select), cur.copy(query) as copy:
            for block in read_blocks(copy, reader.fetch_size):
                rows += parse_block(block)
        if not rows:
            return None, None, None
        first, last = rows[0], rows[-1]
        middle = rows[1:-1]
        if not middle:
            return first, None, last if len(rows) > 1 else None
        raw = [RawChange(table, "r", None, row, source, offset, None, None) for row in middle]
        return first, self.pipeline.pack(raw), last


def plan(reader: Any, tables: list[tuple[Table, str]]) -> list[_Chunk]:
    """The chunks, table by table in page order (a table read with an override SELECT is one chunk)."""
    conn = reader.conn
    ranges = conn.info.server_version >= 140000
    out = []
    for i, (table, select) in enumerate(tables):
        ts_us = time.time_ns() // 1000
        pages = per_chunk = 0
        if ranges and not select.endswith(" AS cdc_snapshot_select"):
            row = conn.execute(
                "SELECT c.relkind, pg_relation_size(c.oid) / current_setting('block_size')::int, c.reltuples, c.relpages "
                "FROM pg_class c WHERE c.oid = %s::regclass",
                (_qualified(table),)).fetchone()
            if row is not None and row[0] == "r":
                pages = int(row[1])
                per_page = (row[2] / row[3]) if row[3] and row[2] > 0 else 100.0
                per_chunk = max(1, int(CHUNK_ROWS / max(per_page, 1.0)))
        if pages <= per_chunk or per_chunk == 0:
            out.append(_Chunk(i, select, ts_us))
            continue
        for lo in range(0, pages, per_chunk):
            where = f" WHERE ctid >= '({lo},0)'::tid"
            if lo + per_chunk < pages:
                where += f" AND ctid < '({lo + per_chunk},0)'::tid"
            out.append(_Chunk(i, select + where, ts_us))
    return out


def _qualified(table: Table) -> str:
    schema = table.id.schema or "public"
    return sql.Identifier(schema, table.id.table).as_string(None)


def read_in_processes(reader: Any, tables: list[tuple[Table, str]], pipeline: WorkerPipeline) -> Iterator[list[Any]]:
    """``SnapshotReader.read`` with the chunks read, converted and serialized by ``reader.threads`` worker processes."""
    chunks = plan(reader, tables)
    reader.log.info("snapshot.max.threads=%d: %d tables in %d chunks read in worker processes",
                    reader.threads, len(tables), len(chunks))
    worker = ChunkWorker(reader, tables, pipeline)
    sources: dict[int, dict] = {}
    started: dict[int, float] = {}
    offset = reader._offset(False)

    def table_started(index: int) -> None:
        table = tables[index][0]
        started[index] = time.monotonic()
        ts_us = next(c.ts_us for c in chunks if c.table == index)
        sources[index] = source_block(reader.server, reader.db, ts_us, "true", table.id.schema or "",
                                      table.id.table, reader.tx_id, reader.lsn, sequence(None, reader.lsn))

    def table_done(index: int, rows: int) -> None:
        table = tables[index][0]
        reader.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started[index])
        reader.table_done(table.id.identifier, rows)
        if reader.metrics is not None:
            reader.metrics.table_completed(table.id.identifier)

    def raw(index: int, row: Any, marker: str) -> RawChange:
        source = sources[index] if marker == "true" else {**sources[index], "snapshot": marker}
        return RawChange(tables[index][0], "r", None, row, source, offset, None, None)

    results = run_in_order(worker, chunks, reader.threads, lambda: reader.stopped)
    held = yield from merge_in_order(((c.table, r) for c, r in zip(chunks, results)), len(tables) > 1, raw,
                                     table_started, table_done, lambda: reader.stopped)
    if reader.stopped:
        return
    batch: list[Any] = []
    if held is not None:
        batch.append(held._replace(source={**held.source, "snapshot": "last"}, offset=reader._offset(True)))
    batch.append(reader._end())
    yield batch
