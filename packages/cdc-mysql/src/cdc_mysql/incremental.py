"""MySQL's and MariaDB's ad hoc snapshot capabilities for the core (see ``cdc_core.incremental.spi``).

Chunks are read with one ``SELECT ... WHERE key > after AND key <= upto ORDER BY key LIMIT n``
(composite keys expanded into the index-friendly ``a > x OR (a = x AND b > y)`` form) on an
autocommit connection in UTC. Keys travel in the text protocol's form (binary key columns as hex),
so they are JSON for the offsets and bind back as they came. Watermarks are rows of the signal
table inserted (and, for ``insert_delete``, deleted) on that connection: with the binlog on, a
commit is visible to later reads once it returns, and the server commits in binlog order, so no
transaction before the low watermark can be missing from a chunk. A blocking snapshot reads its
tables in one consistent-snapshot transaction with the initial snapshot's markers.

With ``read.only=true`` nothing is written: the watermarks are executed GTID sets read before and
after each chunk (``cdc_mysql.readonly``; the core's ``watermarks = "position"``), the signal table
is needed only if signals come through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pymysql.cursors

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.errors import ConnectorError
from cdc_core.incremental.spi import POSITION, SIGNAL_TABLE, ChunkRows, Key
from cdc_core.plugins import registry
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.snapshot import snapshot_query
from cdc_core.snapshot.markers import marked_batches

from cdc_mysql import config as myc
from cdc_mysql.catalog import Catalog, quote
from cdc_mysql.connection import Connection
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.filters import CaptureFilter
from cdc_mysql.gtid import gtid_set
from cdc_mysql.model import TableDef, TableId
from cdc_mysql.readonly import (
    DIALECTS, MYSQL, EventPosition, GtidWatermark, StreamPositions, after, event_position, read_only_problem,
)
from cdc_mysql.snapshot import ENCODERS_ONLY, row_parser
from cdc_mysql.snapshot_position import snapshot_with_position
from cdc_mysql.snapshot_locks import quote_table
from cdc_mysql.source import source_block
from cdc_mysql.streaming import TableVersions
from cdc_mysql.text_rows import parsed_rows
from cdc_mysql.types import type_modes

_BATCH = 2048
_BINARY = frozenset({"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB", "BIT"})


def _connect(config: Config) -> Connection:
    """An autocommit connection in UTC (TIMESTAMP keys read and bound in one time zone)."""
    conn = Connection(**myc.connect_args(config, conv=ENCODERS_ONLY))
    with conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
    return conn


def _key_value(raw: Any) -> Any:
    """A key value as stored in offsets: text as is, binary as hex."""
    return raw.hex() if isinstance(raw, (bytes, bytearray)) else raw


def _placeholder(definition: TableDef, column: str) -> str:
    col = definition.column(column)
    return "UNHEX(%s)" if col is not None and col.type_name in _BINARY else "%s"


def _greater(definition: TableDef, key: list[str], values: Key) -> tuple[str, list[Any]]:
    """``key > values`` for a (composite) key, in the expanded form indexes serve: ``a > x OR (a = x AND b > y)``."""
    parts, params = [], []
    for i, name in enumerate(key):
        terms = [f"{quote(key[j])} = {_placeholder(definition, key[j])}" for j in range(i)]
        terms.append(f"{quote(name)} > {_placeholder(definition, name)}")
        parts.append("(" + " AND ".join(terms) + ")")
        params += list(values[:i + 1])
    return "(" + " OR ".join(parts) + ")", params


class MySqlChunkReader:
    """Chunk reads and watermark writes on one autocommit connection (``cdc_core.incremental.spi.ChunkReader``)."""

    def __init__(self, source: MySqlIncrementalSource):
        self.source = source
        self.conn = _connect(source.config)
        self._position: GtidWatermark | None = None

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The largest key of the matching rows, in the text protocol's form."""
        where, params = _where(condition)
        order = ", ".join(f"{quote(k)} DESC" for k in key)
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(quote(k) for k in key)} FROM {quote_table(table.id)}{where} "
                        f"ORDER BY {order} LIMIT 1", params)
            row = cur.fetchone()
        return None if row is None else [_key_value(v) for v in row]

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """Up to ``limit`` rows after ``after`` up to ``upto`` in key order, as ``op: r`` incremental READs.

        With ``incremental.snapshot.allow.schema.changes`` the table's definition is read again first; when
        it changed since the last read, nothing is read (``schema_changed``: the core reads the chunk again
        in the next window, by when the stream has passed the DDL) and later rows carry the new shape."""
        definition = self.source.definition(table)
        if self.source.allow_schema_changes:
            current = self.source.reread(definition.id, self.conn)
            if current is not None and current.columns != definition.columns:
                self.source.log.info("the schema of %s changed during the incremental snapshot", definition.id)
                self.source.replace(table, current)
                return ChunkRows(schema_changed=True)
            table = self.source.versions.table(definition)
        parts, params = [], []
        if after is not None:
            text, values = _greater(definition, key, after)
            parts.append(text)
            params += values
        text, values = _greater(definition, key, upto)
        parts.append(f"NOT {text}")
        params += values
        if condition is not None:
            rendered, values = condition.render(quote, "%s")
            parts.append(f"({rendered})")
            params += values
        cols = ", ".join(quote(c.name) for c in definition.columns)
        query = (f"SELECT {cols} FROM {quote_table(table.id)} WHERE {' AND '.join(parts)} "
                 f"ORDER BY {', '.join(quote(k) for k in key)} LIMIT {int(limit)}")
        parse = row_parser(definition)
        positions = [definition.columns.index(definition.column(k)) for k in key]
        low = None
        with self.conn.cursor() as cur:
            if self.source.snapshot_position:
                # The read's exact binlog position (see cdc_mysql.readonly): a consistent snapshot, read
                # only; taken so that another session's SHOW STATUS cannot hand us its position.
                timeout_s = max(1, -(-self.source.config.get(myc.SNAPSHOT_LOCK_TIMEOUT_MS) // 1000))
                try:
                    found = snapshot_with_position(self.conn, cur, timeout_s)
                    if found is None:
                        raise ConnectorError(f"{self.source.flavor} shows no binlog_snapshot_file for a consistent "
                                             "snapshot, which read.only needs")
                    file, pos = found
                    cur.execute(query, params)
                    raw_rows = cur.fetchall()
                finally:
                    self.conn.commit()
                before = self._position  # the low watermark the core took just before this read
                gtids = before.gtids if before is not None else gtid_set(self.source.dialect.gtid_format)
                low = GtidWatermark(gtids, str(file), int(pos))
            else:
                cur.execute("SHOW MASTER STATUS")
                file, pos = cur.fetchone()[:2]
                cur.execute(query, params)
                raw_rows = cur.fetchall()
        if not raw_rows:
            return ChunkRows(low=low)
        source = source_block(self.source.flavor, self.source.server, time.time_ns() // 1_000_000, "incremental",
                              definition.id.database, definition.id.table, self.source.server_id, None, file,
                              int(pos), 0, None, None)
        rows = [RawChange(table, "r", None, parse(raw), source, None) for raw in raw_rows]
        return ChunkRows(rows, [_key_value(raw_rows[-1][i]) for i in positions],
                         [_key_value(raw_rows[0][i]) for i in positions], low=low)

    def current_position(self) -> GtidWatermark:
        """(``read.only=true``) The server's executed GTID set now: a watermark. Reads only."""
        with self.conn.cursor() as cur:
            cur.execute(self.source.dialect.executed_query)
            row = cur.fetchone()
        text = str(row[0] or "").replace("\n", "") if row else ""
        self._position = GtidWatermark(gtid_set(self.source.dialect.gtid_format, text))
        return self._position

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """Insert a watermark row (committed at once: the stream must see it)."""
        if self.source.read_only:
            raise RuntimeError("read.only=true: the connector writes no watermarks to the signal table")
        signal = self.source.signal_definition()
        cols = ", ".join(quote(c.name) for c in signal.columns[:3])
        with self.conn.cursor() as cur:
            cur.execute(f"INSERT INTO {quote(signal.id.database)}.{quote(signal.id.table)} ({cols}) "
                        "VALUES (%s, %s, %s)", (row_id, kind, data))

    def delete_watermark(self, row_id: str) -> None:
        """Delete a watermark row."""
        signal = self.source.signal_definition()
        with self.conn.cursor() as cur:
            cur.execute(f"DELETE FROM {quote(signal.id.database)}.{quote(signal.id.table)} "
                        f"WHERE {quote(signal.columns[0].name)} = %s", (row_id,))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _where(condition: Node | None) -> tuple[str, list[Any]]:
    if condition is None:
        return "", []
    text, params = condition.render(quote, "%s")
    return f" WHERE {text}", params


class MySqlIncrementalSource:
    """The MySQL/MariaDB connector's ad hoc snapshot capabilities (``cdc_core.incremental.spi``)."""

    def __init__(self, config: Config, log: Any, flavor: str = "mysql"):
        self.config = config
        self.log = log
        self.flavor = flavor
        self.server = config.get("topic.prefix")
        self.server_id = 0
        self.versions = TableVersions(type_modes(config))
        self.read_only = bool(config.get(myc.READ_ONLY))
        #: ``incremental.snapshot.allow.schema.changes``: each chunk read checks the table's shape first.
        self.allow_schema_changes = bool(config.get(myc.INCREMENTAL_ALLOW_SCHEMA_CHANGES))
        #: ``cdc_core.incremental.spi``: GTID positions with read.only=true, else rows in the signal table.
        self.watermarks = POSITION if self.read_only else SIGNAL_TABLE
        self.dialect = DIALECTS.get(flavor, MYSQL)
        self.snapshot_position = self.read_only and self.dialect.snapshot_position
        self._stream = StreamPositions(self.dialect.gtid_format)
        self._checked = False
        self._definitions: dict[Any, TableDef] = {}
        self._signal: TableDef | None = None
        self._conn: Connection | None = None
        #: A blocking snapshot's schema change events (the connector's hook, MySqlConnector._blocking_created):
        #: given the tables, a connection in the snapshot's transaction and the position, before the rows.
        self.created: Callable[[list[TableId], Any, dict[str, Any]], list[Any]] | None = None

    def _connection(self) -> Connection:
        if self._conn is None or not self._conn.open:
            self._conn = _connect(self.config)
            with self._conn.cursor() as cur:
                cur.execute("SELECT @@server_id")
                self.server_id = int(cur.fetchone()[0])
        return self._conn

    def _read(self, tables: list[TableId]) -> list[TableDef]:
        catalog = Catalog(self._connection())
        model = SchemaModel(keep_comments=self.config.get(myc.INCLUDE_SCHEMA_COMMENTS))
        model.database_charsets.update(catalog.database_charsets())
        out = []
        for tid in tables:
            change = catalog.read_table(model, tid)
            if change.table is not None:
                out.append(change.table)
        return out

    def captured_tables(self) -> list[Table]:
        """The captured tables' current definitions (read from the catalog now)."""
        catalog = Catalog(self._connection())
        capture = CaptureFilter(self.config)
        ids = [TableId(db, name) for db in catalog.databases() if capture.includes_database(db)
               for name in catalog.tables(db) if capture.includes(TableId(db, name))]
        out = []
        for definition in self._read(ids):
            table = self.versions.table(definition)
            self._definitions[table.id] = definition
            out.append(table)
        return out

    def definition(self, table: Table) -> TableDef:
        """The TableDef behind a Table of ``captured_tables``."""
        found = self._definitions.get(table.id)
        if found is None:
            found = self._read([TableId(table.id.catalog or "", table.id.table)])[0]
            self._definitions[table.id] = found
        return found

    def reread(self, table: TableId, conn: Connection) -> TableDef | None:
        """A table's definition in the database now, read on ``conn`` (a reader's: readers run in threads)."""
        catalog = Catalog(conn)
        model = SchemaModel(keep_comments=self.config.get(myc.INCLUDE_SCHEMA_COMMENTS))
        model.database_charsets.update(catalog.database_charsets())
        return catalog.read_table(model, table).table

    def replace(self, table: Table, definition: TableDef) -> None:
        """Use ``definition`` for ``table``'s chunk reads from now on."""
        self._definitions[table.id] = definition

    def signal_definition(self) -> TableDef:
        """The signal table's definition (``signal.data.collection``)."""
        if self._signal is None:
            tid = signal_table_id(self.config)
            if tid is None:
                raise RuntimeError("signal.data.collection is not set: incremental snapshots write their watermarks "
                                   "to the signal table")
            found = self._read([tid])
            if not found:
                raise RuntimeError(f"signal.data.collection {tid} does not exist: create it as (id VARCHAR(42) "
                                   "PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
            self._signal = found[0]
        return self._signal

    def reader(self) -> MySqlChunkReader:
        """A chunk reader on a new connection (with read.only=true, on a server whose GTIDs can be watermarks)."""
        conn = self._connection()
        if self.read_only and not self._checked:
            problem = read_only_problem(self.dialect, Catalog(conn).variable,
                                        f"{self.flavor} at {myc.server_address(self.config)}")
            if problem is not None:
                raise ConnectorError(problem)
            self._checked = True
        return MySqlChunkReader(self)

    # -- position watermarks (read.only=true; cdc_core.incremental.spi.PositionWatermarks) --------

    def event_position(self, change: RawChange) -> EventPosition | None:
        """A binlog event's transaction GTID, file and position."""
        return event_position(change)

    def after(self, watermark: GtidWatermark, position: EventPosition) -> bool:
        """True if the event's transaction is not in the watermark (or, MariaDB, at/after the read's position)."""
        return after(watermark, position)

    def caught_up(self, watermark: GtidWatermark, offset: dict[str, Any]) -> bool:
        """True if the GTID set a checkpoint offset records contains the watermark's."""
        return self._stream.caught_up(watermark, offset)

    def transaction_of(self, change: RawChange) -> Any:
        """A log event's transaction (its GTID); no chunk read ever misses a logged transaction (see above)."""
        return change.source.get("gtid")

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool]) -> Iterator[list[RawChange]]:
        """The tables read in one consistent-snapshot transaction, with the initial snapshot's markers."""
        query_spi = snapshot_query(self.config, self.config.get(myc.SNAPSHOT_QUERY_MODE), registry())
        conn = _connect(self.config)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                cur.execute("SHOW MASTER STATUS")
                file, pos = cur.fetchone()[:2]
            self._connection()
            paused = offset_for(tables[0][0]) if tables else None
            if self.created is not None and tables:
                # As Debezium 2.7.4, whose blocking task has snapshotSchema true: BinlogSnapshotChangeEventSource
                # sends a DROP TABLE IF EXISTS and the SHOW CREATE TABLE of each signalled table (on demand: no
                # database statements) before the rows, at the position streaming paused at.
                at = paused if paused and paused.get("file") else {"file": file, "pos": int(pos)}
                events = self.created([self.definition(t).id for t, _ in tables], conn, at)
                if events:
                    yield events
            signal = signal_table_id(self.config)

            def reads(table: Table, condition: Node | None) -> Iterator[RawChange]:
                definition = self.definition(table)
                columns = [quote(c.name) for c in definition.columns]
                select = query_spi.snapshot_query(table.id, columns, quote_table)
                if select is None:
                    return
                where, params = _where(condition)
                if where:
                    select = f"SELECT * FROM ({select}) AS cdc_blocking_select{where}"
                offset = offset_for(table)
                source = source_block(self.flavor, self.server, time.time_ns() // 1_000_000, "true",
                                      definition.id.database, definition.id.table, self.server_id, None, file,
                                      int(pos), 0, None, None)
                with conn.cursor(pymysql.cursors.SSCursor) as cur:
                    cur.execute(select, params or None)
                    fetch = parsed_rows(cur, definition)
                    while rows := fetch(_BATCH):
                        for row in rows:
                            yield RawChange(table, "r", None, row, source, offset)

            # As Debezium's determineSnapshotSelect: the signal table gets its schema events but no rows are read
            # (nor does it take part in the first/last markers).
            data = [(t, c) for t, c in tables if self.definition(t).id != signal]
            yield from marked_batches((reads(table, condition) for table, condition in data), _BATCH, stopped)
            if stopped():
                return
            conn.commit()
        finally:
            conn.close()

    def close(self) -> None:
        """Close the catalog connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def signal_table_id(config: Config) -> TableId | None:
    """``signal.data.collection`` (``db.table``, quoted parts allowed) as a TableId, or None."""
    from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
    from cdc_core.signals.names import parse_quoted_name

    name = config.get(SIGNAL_DATA_COLLECTION)
    if not name:
        return None
    parts = parse_quoted_name(name) or name.split(".")
    return TableId(parts[-2], parts[-1]) if len(parts) >= 2 else None


def incremental_snapshot_source(config: Config, log: Any) -> MySqlIncrementalSource:
    """The capability, found by ``cdc_core.incremental.spi.incremental_source_for`` (the connector's flavor is set
    by ``MySqlConnector.incremental_snapshot_source``)."""
    return MySqlIncrementalSource(config, log)
