"""MySQL's and MariaDB's chunked snapshot: key-range chunks, each read in its own consistent read, then a handoff.

PostgreSQL can export one transaction snapshot that many processes import; MySQL and MariaDB
cannot share a snapshot between connections. So the chunks are made consistent with the binlog
instead of with each other:

1. ``open`` takes the connector's snapshot lock (``snapshot.locking.mode``; ``minimal``: the global
   read lock, only while step 2 runs), starts ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, reads
   the binlog position p0 and the GTID set, and the table definitions into the schema history at
   p0 (as the connector's own snapshot does; their schema change events go with the first chunk,
   unless the snapshot is limited to some tables), then plans chunks in that transaction: tables whose
   primary key starts with an integer column are split into ranges of that column (the first range
   open below, the last open above, so rows inserted later fall in one too); other tables, and
   tables with a ``snapshot.select.statement.overrides`` SELECT, are one chunk. The plan's resume
   offset is p0.
2. Each chunk reader, in any process, starts its own consistent read and learns the exact binlog
   position p_i its rows correspond to: on MariaDB (and Percona Server) from
   ``SHOW STATUS LIKE 'binlog_snapshot_%'`` right after ``START TRANSACTION WITH CONSISTENT
   SNAPSHOT`` (consistent with the transaction, no lock on writes needed; but the server can show
   a session another session's value, so readers take it one at a time under a named lock and
   only when repeated readings agree: ``cdc_mysql.snapshot_position``); on MySQL under a brief global read
   lock around the start of the transaction and ``SHOW MASTER STATUS``, as Debezium's ``minimal``
   lock does. It reports p_i (``ChunkRead``) and reads its range. p_i >= p0, as the chunk's read
   starts after ``open``.
3. Streaming resumes at p0. A change logged before p_i to a key in chunk i's range is already in
   chunk i's rows, so the handoff filter (``cdc_mysql.handoff``) drops it; changes at or after p_i
   pass. Each key belongs to exactly one range, so every change is applied exactly once on top of
   the rows of its chunk: no stale row, no change twice. The filter compares transaction start
   positions with p_i: a transaction is in a consistent read exactly when it starts before the
   read's binlog position (the binlog holds whole transactions in commit order).

With ``snapshot.locking.mode=extended`` (or table locks, where the global read lock is not
permitted) the lock is held until ``close``: every chunk then reads at p0 and nothing is filtered.
With ``none`` on a server without ``binlog_snapshot_*`` (MySQL) a reader cannot know its position:
it reports p0, so changes between p0 and its read are applied again over its rows (the stream
converges to the table, but passes through older states; as Debezium's ``none`` warns, the
snapshot is not consistent).

Only integer key ranges are split because the filter compares keys in Python: integers order the
same in SQL and Python, strings under a collation do not.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pymysql
import pymysql.cursors

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.relational import Table
from cdc_core.relational import TableId as CoreTableId
from cdc_core.snapshot.markers import snapshot_marker
from cdc_core.spi.chunks import Chunk, ChunkRead, SnapshotPlan
from cdc_core.spi.connector import ConnectorContext

from cdc_mysql import config as myc
from cdc_mysql.catalog import Catalog, quote
from cdc_mysql.connection import Connection
from cdc_mysql.snapshot_position import snapshot_with_position, status_position
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.model import TableDef, TableId
from cdc_mysql.snapshot import ENCODERS_ONLY
from cdc_mysql.snapshot_locks import SnapshotLocks, quote_table
from cdc_mysql.source import source_block
from cdc_mysql.streaming import TableVersions
from cdc_mysql.text_rows import parsed_rows
from cdc_mysql.types import type_modes

_INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT"})
#: How a chunk reader learns its position: MariaDB's status variables, a brief global read lock, or not at all.
SNAPSHOT_STATUS, READ_LOCK, NO_POSITION = "snapshot_status", "read_lock", "none"
_MAX_CHUNKS = 4096


def connect(config: Config) -> pymysql.connections.Connection:
    """A regular autocommit connection (``database.initial.statements`` run on it); login errors name the user."""
    try:
        conn = Connection(**myc.connect_args(config, conv=ENCODERS_ONLY))
    except pymysql.err.OperationalError as e:
        address = myc.server_address(config)
        if e.args and e.args[0] in (1045, 1044):
            raise ConnectorError(f"cannot log in to {address} as user {config.get(myc.USER)!r}: {e.args[-1]}; "
                                 "check database.user and database.password") from None
        raise ConnectorError(f"cannot connect to {address}: {e.args[-1] if e.args else e}") from None
    initial = config.get(myc.INITIAL_STATEMENTS)
    with conn.cursor() as cur:
        for statement in (initial or "").replace(";;", "\0").split(";"):
            if statement.strip():
                cur.execute(statement.replace("\0", ";"))
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    return conn


class MySqlSnapshotChunks:
    """The SnapshotChunks capability of the MySQL connector (see ``cdc_core.spi.chunks`` and the module docstring)."""

    #: The connector whose names, flavor and snapshot plugins the chunks use (imported lazily).
    connector_module: ClassVar[str] = "cdc_mysql.connector"
    connector_name: ClassVar[str] = "MySqlConnector"

    def __init__(self, config: Config, log: Any = None):
        self.config = config
        self.log = log or connector_logger("cdc.mysql", self.connector_class().name,
                                           config.get(common.TOPIC_PREFIX) or "-", "snapshot")
        self._holder: Any = None
        self._locks: SnapshotLocks | None = None

    @classmethod
    def connector_class(cls) -> type:
        """The connector class these chunks belong to."""
        import importlib

        return getattr(importlib.import_module(cls.connector_module), cls.connector_name)

    def _connector(self) -> Any:
        return self.connector_class()(self.config, ConnectorContext(log=self.log))

    def needs_snapshot(self, offset: dict[str, Any] | None) -> bool:
        """As the connector's ``snapshot.mode`` decides for ``offset``."""
        in_progress = bool(offset and offset.get("snapshot"))
        return bool(self._connector().snapshotter.should_snapshot_data(offset is not None, in_progress))

    def describe(self, tables: list[str] | None) -> list[Table]:
        """The captured tables' current definitions, in name order."""
        connector = self._connector()
        conn = connect(self.config)
        try:
            model = SchemaModel(keep_comments=self.config.get(myc.INCLUDE_SCHEMA_COMMENTS))
            _, capture = connector._captured_tables(Catalog(conn))
            ids = self._select(capture, tables)
            catalog = Catalog(conn)
            for tid in ids:
                catalog.read_table(model, tid)
        finally:
            conn.close()
        versions = TableVersions(type_modes(self.config))
        return [versions.table(model.tables[t]) for t in ids]

    def _select(self, capture: list[TableId], tables: list[str] | None) -> list[TableId]:
        ids = sorted((t for t in capture if tables is None or str(t) in tables), key=str)
        if tables:
            missing = sorted(set(tables) - {str(t) for t in ids})
            if missing:
                raise ConnectorError(f"table {missing[0]!r} is not a captured table (check its name, "
                                     "database.include.list and table.include.list)")
        return ids

    def open(self, *, for_streaming: bool, tables: list[str] | None, chunk_rows: int) -> SnapshotPlan:
        """Lock briefly, fix p0 and the schema (history at p0 when streaming), plan chunks; see the module docstring."""
        connector = self._connector()
        if for_streaming:
            connector.start(None)  # the server checks and the schema history store
            connector.close()
        conn = connect(self.config)
        keep = False
        try:
            catalog = Catalog(conn)
            record_ids, capture_ids = connector._captured_tables(catalog)
            ids = self._select(capture_ids, tables)
            locks = SnapshotLocks(conn, connector.snapshot_lock, self.config.get(myc.SNAPSHOT_LOCK_TIMEOUT_MS), self.log)
            locks.acquire([CoreTableId(t.database, None, t.table) for t in ids])
            if not locks.table_locks:
                with conn.cursor() as cur:
                    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                    method = SNAPSHOT_STATUS if status_position(cur) else READ_LOCK
            else:
                method = NO_POSITION
            file, pos, gtids = catalog.binlog_position()
            position = {"file": file, "pos": pos, "event": 0, "row": 0, "gtids": gtids or None}
            model, schema_changes = self._read_schema(connector, catalog, position, record_ids, capture_ids,
                                                      for_streaming)
            # Streaming holds an extended (or table) lock until close; a batch read's holder cannot
            # know when executors are done (wait_read), so it never keeps one.
            keep = for_streaming and (locks.table_locks or (
                locks.global_lock and not getattr(connector.snapshot_lock, "release_after_schema", True)))
            locks.after_schema()
            if locks.table_locks and not keep:
                locks.release()
            if keep:
                method = NO_POSITION  # writes stay blocked until close: every chunk reads at p0
            elif method == READ_LOCK and self.config.get(myc.SNAPSHOT_LOCKING_MODE) == "none":
                method = NO_POSITION  # no lock allowed: a reader cannot know its position (module docstring)
            server_id = int(catalog.query("SELECT @@server_id")[0][0])
            snapshot_id = f"{file}:{pos}:{secrets.token_hex(4)}"
            chunks: list[Chunk] = []
            for tid in ids:
                chunks += self._plan_table(catalog, connector, model.tables[tid], snapshot_id, chunk_rows)
            if not keep:
                conn.commit()
        finally:
            if keep:
                self._holder, self._locks = conn, locks
            else:
                conn.close()
        resume = {**position, "ts_sec": int(time.time())}
        base = {"method": method, "resume": {"file": file, "pos": pos, "gtids": gtids or None}, "server_id": server_id,
                "lock_timeout_ms": self.config.get(myc.SNAPSHOT_LOCK_TIMEOUT_MS)}
        for c in chunks:
            c.extra.update(base, first_table=c.table == chunks[0].table, last_table=c.table == chunks[-1].table)
        if chunks:
            chunks[0].first_overall = True
            chunks[-1].last_overall = True
            if tables is None and schema_changes:  # one table's snapshot (Spark's ``table``) has no DDL events
                chunks[0].extra["schema_changes"] = schema_changes
        self.log.info("snapshot %s of %d tables in %d chunks (chunk positions: %s)", snapshot_id, len(ids), len(chunks),
                      method)
        versions = TableVersions(type_modes(self.config))
        return SnapshotPlan(snapshot_id, chunks, resume if for_streaming else None,
                            [versions.table(model.tables[t]) for t in ids], reports_reads=True)

    def _read_schema(self, connector: Any, catalog: Catalog, position: dict[str, Any], record_ids: list[TableId],
                     capture_ids: list[TableId], for_streaming: bool) -> tuple[SchemaModel, list[Any]]:
        """The table definitions at p0 and the schema change events, as the connector's own snapshot reads them.

        Streaming records them in the connector's schema history (started by ``start(None)``); a
        one-off snapshot in a throwaway one.
        """
        if not for_streaming:
            from cdc_core.stores.memory_history import MemorySchemaHistoryStore
            from cdc_mysql.history import SchemaHistory

            connector._history = SchemaHistory(MemorySchemaHistoryStore(), connector.server)
            connector._server_id = int(catalog.query("SELECT @@server_id")[0][0])
        records = connector._snapshot_schema(catalog, position, record_ids, capture_ids)
        return connector.model, records

    def _plan_table(self, catalog: Catalog, connector: Any, definition: TableDef, snapshot_id: str,
                    chunk_rows: int) -> list[Chunk]:
        tid = definition.id
        core_id = CoreTableId(tid.database, None, tid.table)
        columns = [quote(c.name) for c in definition.columns]
        statement = connector.snapshot_query.snapshot_query(core_id, columns, quote_table)
        default = f"SELECT {', '.join(columns)} FROM {quote_table(core_id)}"
        ranges: list[dict[str, Any]]
        first = definition.column(definition.primary_key[0]) if definition.primary_key else None
        if statement is None:
            return []
        if statement != default or first is None or first.type_name not in _INTEGER_TYPES:
            ranges = [{"kind": "all", "select": statement}]
        else:
            ranges = self._key_ranges(catalog, tid, first.name, chunk_rows)
        return [Chunk(str(tid), i, snapshot_id, r, first=i == 0, last=i == len(ranges) - 1,
                      extra={"db": tid.database, "name": tid.table})
                for i, r in enumerate(ranges)]

    def _key_ranges(self, catalog: Catalog, tid: TableId, column: str, chunk_rows: int) -> list[dict[str, Any]]:
        """Equal ranges of the key's first (integer) column between its min and max in the snapshot."""
        table = f"{quote(tid.database)}.{quote(tid.table)}"
        lo, hi = catalog.query(f"SELECT MIN({quote(column)}), MAX({quote(column)}) FROM {table}")[0]
        if lo is None:
            return [{"kind": "keys", "column": column, "from": None, "to": None}]
        lo, hi = int(lo), int(hi)
        rows = catalog.row_estimates([tid]).get(str(tid), 0)
        if rows < chunk_rows:  # InnoDB's estimate lags behind recent inserts: count small tables
            rows = int(catalog.query(f"SELECT COUNT(*) FROM {table}")[0][0])
        n = max(1, min(_MAX_CHUNKS, math.ceil(rows / max(1, chunk_rows)), hi - lo + 1))
        step = math.ceil((hi - lo + 1) / n)
        edges: list[int | None] = [None, *range(lo + step, hi + 1, step), None]
        return [{"kind": "keys", "column": column, "from": edges[i], "to": edges[i + 1]} for i in range(len(edges) - 1)]

    def wait_read(self, plan: SnapshotPlan, timeout: float) -> int:
        """Nothing is held between reads (each chunk reads on its own): 0 at once."""
        return 0

    def close(self) -> None:
        """Release a lock held for the whole snapshot (``extended``, table locks), if any."""
        if self._holder is not None:
            try:
                if self._locks is not None:
                    self._locks.release()
                self._holder.commit()
            finally:
                self._holder.close()
                self._holder = self._locks = None

    def handoff(self, plan: SnapshotPlan, reports: Mapping[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any] | None:
        """The chunks read after p0 (earliest report each; unreported chunks at p0); see ``cdc_mysql.handoff``."""
        from cdc_mysql.handoff import handoff_state

        return handoff_state(plan, reports)

    @classmethod
    def handoff_filter(cls, config: Config, state: dict[str, Any]) -> Any:
        """The stream filter for a handoff state (``cdc_mysql.handoff``)."""
        from cdc_mysql.handoff import BinlogHandoffFilter

        return BinlogHandoffFilter(state)

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint | ChunkRead]]:
        """Start a consistent read, report its binlog position, read the chunk's rows as ``op: r`` changes."""
        conn = connect(config)
        try:
            with conn.cursor() as cur:
                file, pos, gtids = cls._start_read(conn, cur, chunk)
            yield [ChunkRead(chunk.table, chunk.index, {"file": file, "pos": pos})]
            if chunk.extra.get("schema_changes"):
                yield list(chunk.extra["schema_changes"])  # before the first row, as the connector's snapshot
            catalog = Catalog(conn)
            model = SchemaModel(keep_comments=config.get(myc.INCLUDE_SCHEMA_COMMENTS))
            definition = catalog.read_table(model, TableId(chunk.extra["db"], chunk.extra["name"])).table
            if definition is None:
                raise ConnectorError(f"table {chunk.table!r} is gone")
            table = TableVersions(type_modes(config)).table(definition)
            position = {"file": file, "pos": pos, "event": 0, "row": 0, "gtids": gtids}
            yield from _read_rows(conn, config, cls.connector_class().name, table, definition, chunk, position)
            conn.commit()
        finally:
            conn.close()

    @classmethod
    def _start_read(cls, conn: Any, cur: Any, chunk: Chunk) -> tuple[str, int, str | None]:
        """Start the chunk's consistent read; its binlog file, position and GTID set."""
        method = chunk.extra["method"]
        resume = chunk.extra["resume"]
        if method == READ_LOCK:
            timeout_s = max(1, math.ceil(chunk.extra.get("lock_timeout_ms", 10_000) / 1000))
            cur.execute(f"SET SESSION lock_wait_timeout = {timeout_s}")
            cur.execute("FLUSH TABLES WITH READ LOCK")
            try:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                file, pos, gtids = Catalog(conn).binlog_position()
            finally:
                cur.execute("UNLOCK TABLES")
            return file, pos, gtids or None
        if method == SNAPSHOT_STATUS:
            found = snapshot_with_position(conn, cur, max(1, math.ceil(chunk.extra.get("lock_timeout_ms", 10_000) / 1000)))
        else:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            found = None
        if found is None:
            return resume["file"], int(resume["pos"]), resume.get("gtids")
        file, pos = found
        gtids = resume.get("gtids")
        if gtids and (file, pos) != (resume["file"], resume["pos"]):
            try:
                cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
                gtids = cur.fetchone()[0] or gtids
            except pymysql.err.MySQLError:
                pass
        return file, pos, gtids


def _where(bounds: dict[str, Any]) -> tuple[str, list[Any]]:
    parts, params = [], []
    column = bounds.get("column")
    for edge, op in (("from", ">="), ("to", "<")):
        if bounds.get(edge) is not None:
            parts.append(f"{quote(column)} {op} %s")
            params.append(bounds[edge])
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


def _rows_beyond(cur: Any, definition: TableDef, bounds: dict[str, Any], edge: str) -> bool:
    """True if the table has rows below (``edge="from"``) or above (``"to"``) the chunk's range, in this read."""
    if bounds.get("kind") != "keys" or bounds.get(edge) is None:
        return False
    op = "<" if edge == "from" else ">="
    table = f"{quote(definition.id.database)}.{quote(definition.id.table)}"
    cur.execute(f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {quote(bounds['column'])} {op} %s)", (bounds[edge],))
    return bool(cur.fetchone()[0])


def _read_rows(conn: Any, config: Config, connector: str, table: Table, definition: TableDef, chunk: Chunk,
               position: dict[str, Any]) -> Iterator[list[RawChange]]:
    """The chunk's rows with Debezium's ``source.snapshot`` markers (as PostgreSQL's chunks mark them)."""
    server = config.get(common.TOPIC_PREFIX)
    fetch = config.get(myc.SNAPSHOT_FETCH_SIZE)
    bounds = chunk.bounds
    first_table = chunk.extra.get("first_table", chunk.first_overall)
    last_table = chunk.extra.get("last_table", chunk.last_overall)
    with conn.cursor() as cur:
        first_in_table = chunk.first or not _rows_beyond(cur, definition, bounds, "from")
        last_in_table = chunk.last or not _rows_beyond(cur, definition, bounds, "to")
    if bounds.get("kind") == "keys":
        where, params = _where(bounds)
        columns = ", ".join(quote(c.name) for c in definition.columns)
        statement = f"SELECT {columns} FROM {quote(definition.id.database)}.{quote(definition.id.table)}{where}"
    else:
        statement, params = bounds["select"], []
    db, name = definition.id.database, definition.id.table
    file, pos = position["file"], position["pos"]
    server_id = int(chunk.extra.get("server_id") or 0)
    offset = {**position, "snapshot": True, "ts_sec": int(time.time())}
    first_marker = snapshot_marker(first_table, last_table, first_in_table, False)
    prev: RawChange | None = None
    rows = 0
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(statement, params or None)
        fetch_rows = parsed_rows(cur, definition)
        while True:
            fetched = fetch_rows(fetch)
            if not fetched:
                break
            # Rows in the middle of a chunk share one source block per fetch.
            source = source_block(connector, server, time.time_ns() // 1_000_000, "true", db, name, server_id, None,
                                  file, pos, 0, None, None)
            batch: list[RawChange] = []
            for row in fetched:
                if prev is not None:
                    batch.append(prev)
                src = source if rows or first_marker == "true" else {**source, "snapshot": first_marker}
                prev = RawChange(table, "r", None, row, src, offset)
                rows += 1
            if batch:
                yield batch
    if prev is not None:
        marker = snapshot_marker(first_table, last_table, first_in_table and rows == 1, last_in_table)
        if marker != prev.source["snapshot"]:
            prev = prev._replace(source={**prev.source, "snapshot": marker})
        yield [prev]


#: The capability, found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = MySqlSnapshotChunks
