"""SQL Server's ad hoc snapshot capabilities for the core (see ``cdc_core.incremental.spi``), in T-SQL.

Chunks are read with one ``SELECT TOP (n) ... WHERE (key) > (after) AND NOT (key) > (upto) ORDER BY key``
on an autocommit connection; T-SQL has no row-value comparison, so a composite key is expanded
into ``a > x OR (a = x AND b > y)`` as Debezium's SqlServerConnection does. Keys travel as
JSON-compatible values (binary as hex, DECIMAL as text, dates as ISO text) and bind back as they
came. Watermarks are rows of the signal table (``signal.data.collection``, ``<database>.<schema>.<table>``,
itself enabled for CDC) inserted, and for ``insert_delete`` deleted, on that connection: the capture
job puts them in the change table in commit order around the chunk's read, and the stream reads
them back. A blocking snapshot reads its tables in one transaction at ``snapshot.isolation.mode``
with the initial snapshot's markers.

``signal_table_key`` is the connector's hook: the signal table's capture instance is streamed even
when the table is not captured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import date, datetime, time as dtime
from decimal import Decimal
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.events import RawChange
from cdc_core.incremental.spi import ChunkRows, Key
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_core.signals.names import parse_quoted_name
from cdc_core.snapshot.markers import marked_batches
from cdc_sqlserver import config as msc
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import quote, read_capture_instances, read_tables
from cdc_sqlserver.server_parse import ServerParse
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.metrics import metered_blocking_snapshot
from cdc_sqlserver.snapshot import ISOLATION, snapshot_offset
from cdc_sqlserver.source import source_block
from cdc_sqlserver.streaming import lsn_text
from cdc_sqlserver.types import TypeModes, base_name

_BATCH = 2048
_BINARY = frozenset({"BINARY", "VARBINARY", "IMAGE", "TIMESTAMP", "ROWVERSION"})


def signal_table_key(config: Config, db: str) -> tuple[str, str] | None:
    """``signal.data.collection`` (``<database>.<schema>.<table>``; quoted parts allowed) as ``(schema, table)``
    when it names a table of database ``db``, else None."""
    name = config.get(SIGNAL_DATA_COLLECTION)
    if not name:
        return None
    parts = parse_quoted_name(name) or name.split(".")
    if len(parts) == 3 and parts[0] != db:
        return None
    if len(parts) < 2:
        return None
    return parts[-2], parts[-1]


def _position_of(offset: dict[str, Any] | None) -> tuple[str | None, str | None, int | None] | None:
    """A stored offset's ``(change_lsn, commit_lsn, event_serial_no)`` (None without a commit LSN)."""
    if not offset or not offset.get("commit_lsn"):
        return None
    return lsn_text(offset.get("change_lsn")), lsn_text(offset["commit_lsn"]), offset.get("event_serial_no")


def _table_name(table: Table) -> str:
    """``[db].[schema].[table]``."""
    return ".".join(quote(p) for p in (table.id.catalog, table.id.schema or "dbo", table.id.table) if p)


def key_value(raw: Any) -> Any:
    """A key value as stored in offsets (JSON): binary as hex, DECIMAL and temporal values as text."""
    if isinstance(raw, (bytes, bytearray)):
        return raw.hex()
    if isinstance(raw, Decimal):
        return str(raw)
    if isinstance(raw, (datetime, date, dtime)):
        return raw.isoformat()
    return raw


def _bind(table: Table, name: str, value: Any) -> Any:
    """A stored key value as a parameter for column ``name``."""
    column = table.column(name)
    if isinstance(value, str) and base_name(column) in _BINARY:
        return bytes.fromhex(value)
    return value


def key_greater(table: Table, key: list[str], values: Key) -> tuple[str, list[Any]]:
    """``key > values`` in the expanded form: ``a > x OR (a = x AND b > y)``.

    A nullable key column (message.key.columns, a surrogate key) compares as Debezium 2.7.4's
    AbstractChunkQueryBuilder.addLowerBound does where NULLs sort first (SqlServerConnection.nullsSortLast() is
    false): ``(c > x AND c IS NOT NULL)`` against a value, ``c IS NOT NULL`` greater than a NULL bound and
    ``c IS NULL`` equal to one (AbstractIncrementalSnapshotTest.insertsWithoutPksAndNull).
    """
    parts, params = [], []
    for i, name in enumerate(key):
        terms = []
        for j in range(i + 1):
            column, last = quote(key[j]), j == i
            if not table.column(key[j]).optional:
                terms.append(f"{column} > ?" if last else f"{column} = ?")
            elif values[j] is not None:
                terms.append(f"({column} > ? AND {column} IS NOT NULL)" if last else f"{column} = ?")
            else:
                terms.append(f"{column} IS NOT NULL" if last else f"{column} IS NULL")
                continue
            params.append(_bind(table, key[j], values[j]))
        parts.append("(" + " AND ".join(terms) + ")")
    return "(" + " OR ".join(parts) + ")", params


def _where(condition: Node | None) -> tuple[str, list[Any]]:
    """`` WHERE <condition>`` (``additional-conditions``) with its parameters."""
    if condition is None:
        return "", []
    text, params = condition.render(quote, "?")
    return f" WHERE {text}", params


class SqlServerChunkReader:
    """Chunk reads and watermark writes on one autocommit connection (``cdc_core.incremental.spi.ChunkReader``)."""

    def __init__(self, source: SqlServerIncrementalSource):
        """Open the reader's own connection."""
        self.source = source
        self.conn = odbc.connect(source.config, source.db)
        # incremental.snapshot.option.recompile: as SqlServerConnection.buildSelectWithRowLimits, both the chunk and
        # the maximum key SELECTs end with OPTION(RECOMPILE).
        self._recompile = " OPTION(RECOMPILE)" if source.config.get(msc.INCREMENTAL_OPTION_RECOMPILE) else ""

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The largest key of the matching rows (``SELECT TOP (1) ... ORDER BY key DESC``)."""
        where, params = _where(condition)
        cols = ", ".join(quote(k) for k in key)
        order = ", ".join(f"{quote(k)} DESC" for k in key)
        row = self.conn.execute(f"SELECT TOP (1) {cols} FROM {_table_name(table)}{where} ORDER BY {order}"
                                f"{self._recompile}", *params).fetchone()
        return None if row is None else [key_value(v) for v in row]

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """Up to ``limit`` rows after ``after`` up to ``upto`` in key order, as ``op: r`` incremental READs."""
        parts, params = [], []
        if after is not None:
            text, values = key_greater(table, key, after)
            parts.append(text)
            params += values
        text, values = key_greater(table, key, upto)
        parts.append(f"NOT {text}")
        params += values
        if condition is not None:
            rendered, values = condition.render(quote, "?")
            parts.append(f"({rendered})")
            params += values
        cols = ", ".join(quote(c.name) for c in table.columns)
        query = (f"SELECT TOP ({int(limit)}) {cols} FROM {_table_name(table)} WHERE {' AND '.join(parts)} "
                 f"ORDER BY {', '.join(quote(k) for k in key)}{self._recompile}")
        raw_rows = self.conn.execute(query, *params).fetchall()
        if not raw_rows:
            return ChunkRows()
        source = source_block(self.source.server, self.source.db, time.time_ns() // 1000, "incremental",
                              table.id.schema or "", table.id.table, None, None, None)
        positions = [table.columns.index(table.column(k)) for k in key]
        rows = [RawChange(table, "r", None, list(raw), source, None) for raw in raw_rows]
        return ChunkRows(rows, [key_value(raw_rows[-1][i]) for i in positions],
                         [key_value(raw_rows[0][i]) for i in positions])

    def _signal(self) -> str:
        key = signal_table_key(self.source.config, self.source.db)
        if key is None:
            raise RuntimeError(f"signal.data.collection is not set to a table of database {self.source.db!r} "
                               "(<database>.<schema>.<table>): incremental snapshots write their watermarks there")
        return f"{quote(self.source.db)}.{quote(key[0])}.{quote(key[1])}"

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """Insert a watermark row (autocommit: the capture job must see it)."""
        self.conn.execute(f"INSERT INTO {self._signal()} ([id], [type], [data]) VALUES (?, ?, ?)", row_id, kind, data)

    def delete_watermark(self, row_id: str) -> None:
        """Delete a watermark row."""
        self.conn.execute(f"DELETE FROM {self._signal()} WHERE [id] = ?", row_id)

    def current_position(self) -> Any:
        """Not offered: SQL Server's watermarks are signal table rows."""
        raise NotImplementedError("SQL Server incremental snapshots use signal table watermarks")

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class SqlServerIncrementalSource:
    """The SQL Server connector's ad hoc snapshot capabilities (``cdc_core.incremental.spi``)."""

    def __init__(self, config: Config, log: Any):
        """No I/O."""
        self.config = config
        self.log = log
        self.server = config.get(common.TOPIC_PREFIX)
        names = config.get(msc.NAMES) or []
        self.db = names[0] if names else ""
        self.modes = TypeModes.from_config(config)
        #: The connector's metrics (set by the connector): a blocking snapshot drives its database's snapshot group.
        self.metrics: Any = None
        #: ``(schema, table) -> bool``: the connector's table filter (set by the connector; all tables if None).
        self.included: Callable[[str, str], bool] | None = None
        #: ``(table, captured columns) -> Table | None``: the schema history's structure of a table (set by the
        #: connector when it keeps a history; None, or a None answer: the catalog's).
        self.recorded: Callable[[Table, list[str], ServerParse], Table | None] | None = None
        #: The connector's cache of the server's PARSE of temporal defaults (None: one per read).
        self.parse: ServerParse | None = None
        #: ``(tables, position, event offset, (change_lsn, commit_lsn, event_serial_no)) -> records``: a blocking
        #: snapshot's CREATE events, recorded in the schema history (set by the connector; None: none).
        self.created: Callable[[list[Table], dict[str, Any], dict[str, Any] | None,
                                tuple[str | None, str | None, int | None]], list[Any]] | None = None
        #: ``() -> (change_lsn, commit_lsn, event_serial_no) | None``: where the stream stands where a blocking
        #: snapshot pauses it (set by the connector: SqlServerConnector.round_position; None: the paused offset's).
        self.position: Callable[[], tuple[str | None, str | None, int | None] | None] | None = None

    def captured_tables(self) -> list[Table]:
        """The captured tables, read now: as their capture instances stream them (captured columns only), and
        those without CDC with all their columns (Debezium 2.7.4's schema holds them from the initial snapshot);
        each with the schema history's structure when it has one (Debezium reads chunks with
        ``databaseSchema.tableFor``: a column whose type changed with no new capture instance keeps its type)."""
        return self._tables(recorded=True)

    def _tables(self, recorded: bool) -> list[Table]:
        """The captured tables as the catalog has them now, or, if ``recorded``, as the schema history has them."""
        conn = odbc.connect(self.config, self.db)
        try:
            parse = self.parse.on(conn) if self.parse is not None else ServerParse(lambda: conn)
            tables = read_tables(conn, self.db, self.modes, parse)
            if self.included is not None:
                tables = {k: t for k, t in tables.items() if self.included(*k)}
            instances = read_capture_instances(conn, tables)
            out = []
            for k, t in tables.items():
                inst = instances.get(k)
                live, captured = (inst.table, inst.columns) if inst is not None else (t, [c.name for c in t.columns])
                # The history's structure rebuilds its temporal defaults with the server's PARSE on this connection.
                known = self.recorded(live, captured, parse) if recorded and self.recorded is not None else None
                out.append(live if known is None else known)
        finally:
            conn.close()
        return out

    def stream_source(self, read: dict[str, Any], streamed: dict[str, Any]) -> dict[str, Any]:
        """A chunk's READ source with the position of the streamed row that closed its window: Debezium 2.7.4
        closes it while dispatching that row, and its READs take the stream's SqlServerOffsetContext as it is."""
        return {**read, "change_lsn": streamed.get("change_lsn"), "commit_lsn": streamed.get("commit_lsn"),
                "event_serial_no": streamed.get("event_serial_no")}

    def reader(self) -> SqlServerChunkReader:
        """A chunk reader on a new connection."""
        return SqlServerChunkReader(self)

    def transaction_of(self, change: RawChange) -> Any:
        """Unknown: a chunk read never misses a committed transaction the capture job has not written yet
        (the watermark rows are captured after it in commit order)."""
        return None

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool],
                          position: tuple[str | None, str | None, int | None] | None = None,
                          paused_here: bool = True) -> Iterator[list[Any]]:
        """The tables read in one transaction at ``snapshot.isolation.mode``, with the initial snapshot's markers,
        each with the catalog's structure, after a CREATE for each (``created``).

        As Debezium 2.7.4, whose blocking task has ``snapshotSchema`` true: it reads the structure again
        (readTableStructure) and records and sends it (createSchemaChangeEventsForTables) before the rows.

        Positions, as Debezium's: SqlServerSnapshotChangeEventSource.determineSnapshotOffset takes the
        previous offset, the stream's SqlServerOffsetContext the signal handed over (unless
        ``snapshot.mode=always``), so the CREATEs' and rows' source blocks carry ``change_lsn``,
        ``commit_lsn`` and ``event_serial_no`` as the stream left them at the pause (the end of the poll
        round: the last event streamed, cdc_sqlserver.streaming.StreamReader.source_position): ``position``
        (this database's, given by cdc_sqlserver.databases), else ``self.position()``, else the paused
        offset (``offset_for``: a blocking snapshot resumed before streaming started; only if
        ``paused_here``, the paused offset being this database's). With
        ``snapshot.mode=always`` it makes a new offset context at the max LSN (read in the snapshot's
        transaction: ``commit_lsn`` only), as it does when there is no position at all (a database that
        has not streamed yet). The events' offset is the paused one plus what is left to read
        (cdc_core.incremental.blocking; Debezium's is ``{snapshot, snapshot_completed: false,
        commit_lsn}``, which resumes nothing after a crash).
        """
        live = {t.id.identifier: t for t in self._tables(recorded=False)}
        tables = [(live.get(t.id.identifier, t), condition) for t, condition in tables]
        conn = odbc.connect(self.config, self.db)
        try:
            isolation = self.config.get(msc.SNAPSHOT_ISOLATION_MODE)
            conn.autocommit = False
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {ISOLATION[isolation]}")
            row = conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
            max_lsn = str(from_value(row[0] if row else None))
            fetch = self.config.get(msc.SNAPSHOT_FETCH_SIZE)
            paused = offset_for(tables[0][0]) if tables else None
            at = None if self.config.get(msc.SNAPSHOT_MODE) == "always" else \
                position or (self.position() if self.position is not None else None) or \
                (_position_of(paused) if paused_here else None)
            if at is not None:
                lsns = at
                keys = ("change_lsn", "commit_lsn", "event_serial_no")
                position_doc = {k: v for k, v in zip(keys, at) if v is not None}
            else:
                lsns = (None, max_lsn, None)
                position_doc = snapshot_offset(max_lsn, False)
            if self.created is not None and tables:
                events = self.created([t for t, _ in tables], position_doc, paused, lsns)
                if events:
                    yield events

            def reads(table: Table, condition: Node | None) -> Iterator[RawChange]:
                where, params = _where(condition)
                cols = ", ".join(quote(c.name) for c in table.columns)
                offset = offset_for(table)
                source = source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                                      table.id.table, *lsns)
                cur = conn.execute(f"SELECT {cols} FROM {_table_name(table)}{where}", *params)
                while rows := cur.fetchmany(fetch):
                    for raw in rows:
                        yield RawChange(table, "r", None, list(raw), source, offset)

            # As Debezium's determineSnapshotSelect: the signal table gets its CREATE but no rows are read (nor
            # does it take part in the first/last markers).
            signal = signal_table_key(self.config, self.db)
            data = [(t, c) for t, c in tables if (t.id.schema, t.id.table) != signal]
            yield from metered_blocking_snapshot(
                marked_batches((reads(table, condition) for table, condition in data), _BATCH, stopped),
                self.metrics, self.db, [t.id.identifier for t, _ in data])
            if stopped():
                return
            conn.commit()
        finally:
            conn.close()

    def close(self) -> None:
        """Nothing held between calls."""


#: The capability, found by ``cdc_core.incremental.spi.incremental_source_for``.
incremental_snapshot_source = SqlServerIncrementalSource
