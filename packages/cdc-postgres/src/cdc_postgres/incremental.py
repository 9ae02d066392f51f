"""PostgreSQL's ad hoc snapshot capabilities for the core (see ``cdc_core.incremental.spi``).

Chunks are read with ``COPY (SELECT ... WHERE (key) > (after) AND (key) <= (upto) ORDER BY key
LIMIT n) TO STDOUT`` on a plain autocommit connection (one statement, one consistent view), keys
kept in PostgreSQL's text form and bound as parameters. Watermarks are rows of the signal table
inserted (and, for ``insert_delete``, deleted) on the same connection, so the stream sees them in
commit order around the chunk's read. A blocking snapshot reads its tables with COPY in one
REPEATABLE READ transaction, with the initial snapshot's ``source.snapshot`` markers.

``signal_tables`` is the connector's hook: the signal table is streamed even when
``table.include.list`` leaves it out (and added to a ``filtered`` publication, as Debezium's filtered
publication names it), so watermarks and signals reach the core, which sends them on as change
events (``PostgresConnector.signal_table_captured``).

With ``read.only=true`` nothing is written: each chunk's read reports its own snapshot and WAL
position (the low watermark) and the WAL position after it is the high one (``cdc_postgres.readonly``;
the core's ``watermarks = "position"``). The signal table is then needed only if signals come
through it: an application's signal rows are still read from the stream, as Debezium does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg import sql

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import RetriableError
from cdc_core.events import RawChange
from cdc_core.incremental.spi import POSITION, SIGNAL_TABLE, ChunkRows, Key
from cdc_core.plugins import registry
from cdc_core.relational import Table, TableId
from cdc_core.signals.conditions import Node
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_core.signals.names import parse_quoted_name
from cdc_core.snapshot import snapshot_query
from cdc_core.snapshot.markers import marked_batches
from cdc_postgres import config as pgc
from cdc_postgres.catalog import Catalog, table_filter
from cdc_postgres.copytext import parse_row
from cdc_postgres import readonly
from cdc_postgres.readonly import POSITION_QUERY, EventPosition, PgSnapshot, Watermark, normalize_lsn
from cdc_postgres.source import sequence, source_block
from cdc_postgres.modes import type_modes

_BATCH = 2048


def _ident(name: str) -> str:
    """A quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def _tident(table: TableId) -> str:
    """A quoted ``"schema"."table"``."""
    return ".".join(_ident(p) for p in (table.schema, table.table) if p is not None)


def _q(name: str) -> str:
    """A quoted identifier, safe inside a psycopg query string with placeholders (``%`` doubled)."""
    return _ident(name).replace("%", "%%")


def _statement(build: Callable[[Callable[[str], str], Callable[[str], str]], tuple[str, list[Any]]]
               ) -> tuple[str, list[Any] | None]:
    """A statement and its parameters, built by ``build(quote, text)``.

    psycopg reads ``%`` as a placeholder only when there are parameters, so identifiers (``quote``)
    and trusted SQL text (``text``) get ``%`` doubled only then.
    """
    sql, params = build(_ident, lambda t: t)
    if not params:
        return sql, None
    return build(_q, lambda t: t.replace("%", "%%"))


def _connect(config: Config) -> psycopg.Connection:
    """An autocommit connection with ``database.initial.statements`` run on it."""
    conn = psycopg.connect(pgc.conninfo(config, application_name="cdc-incremental"), autocommit=True)
    for statement in pgc.initial_statements(config):
        conn.execute(statement)
    return conn


def signal_table_id(config: Config) -> TableId | None:
    """``signal.data.collection`` as a TableId (``schema.table``, quoted parts allowed), or None."""
    name = config.get(SIGNAL_DATA_COLLECTION)
    if not name:
        return None
    parts = parse_quoted_name(name) or name.split(".")
    if len(parts) == 1:
        return TableId(None, "public", parts[0])
    return TableId(None, parts[-2], parts[-1])


def _oid(conn: psycopg.Connection, table: TableId) -> int | None:
    row = conn.execute("SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')",
                       (table.schema, table.table)).fetchone()
    return None if row is None else int(row[0])


def signal_tables(config: Config, conn: psycopg.Connection, catalog: Catalog, captured: dict[int, Table],
                  log: Any) -> dict[int, Table]:
    """The signal table by oid if it must be streamed besides the captured tables (the connector's hook).

    In ``publication.autocreate.mode=filtered`` it is added to the publication; in the other
    modes a warning says so if the publication lacks it (its rows would never reach the core).
    """
    tid = signal_table_id(config)
    if tid is None:
        return {}
    oid = _oid(conn, tid)
    if oid is None:
        log.warning("signal.data.collection %s does not exist: create it as (id varchar(42) PRIMARY KEY, "
                    "type varchar(32) NOT NULL, data varchar(2048)) to use signals and incremental snapshots", tid)
        return {}
    publication = config.get(pgc.PUBLICATION_NAME)
    published = conn.execute("SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s "
                             "AND tablename = %s", (publication, tid.schema, tid.table)).fetchone()
    if not published:
        if config.get(pgc.PUBLICATION_AUTOCREATE) == "filtered":
            try:
                conn.execute(f"ALTER PUBLICATION {_ident(publication)} ADD TABLE {_tident(tid)}")
                log.info("added signal table %s to publication %s", tid, publication)
            except psycopg.errors.InsufficientPrivilege as e:
                # A read-only connector user (read.only=true) may not own the publication or the table.
                log.warning("signal table %s is not in publication %s and cannot be added (%s): signals "
                            "written to it will not reach the connector", tid, publication, str(e).strip())
        else:
            log.warning("signal table %s is not in publication %s: signals and incremental snapshot watermarks "
                        "written to it will not reach the connector; add it with ALTER PUBLICATION", tid, publication)
    if oid in captured:
        return {}
    table = catalog.table(oid)
    return {} if table is None else {oid: table}


class PostgresChunkReader:
    """Chunk reads and watermark writes on one autocommit connection (see ``cdc_core.incremental.spi.ChunkReader``)."""

    def __init__(self, config: Config, signal_table: Table | None, read_only: bool = False):
        self.config = config
        self.server = config.get(common.TOPIC_PREFIX)
        self.db = config.get(pgc.DBNAME)
        self.conn = _connect(config)
        self.signal_table = signal_table
        self.read_only = read_only
        self._lsn: int | None = None
        self._tx_id: int | None = None
        #: A chunk's read transaction is still open: the next watermark write commits it in the same message.
        self._reading = False
        self._block_size = 8192
        if read_only:
            # read.only=true: this connection can write nothing, whatever the user's privileges.
            self.conn.execute("SET default_transaction_read_only = on")
            self._block_size = int(self.conn.execute("SELECT current_setting('wal_block_size')").fetchone()[0])

    def _end_read(self) -> None:
        if self._reading:
            self._reading = False
            self.conn.execute("COMMIT")

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The largest key, read with COPY so it has the same text form as the chunks' keys."""
        def build(q: Callable[[str], str], _text: Callable[[str], str]) -> tuple[str, list[Any]]:
            where, params = _where(condition, q)
            order = ", ".join(f"{q(k)} DESC" for k in key)
            return (f"COPY (SELECT {', '.join(q(k) for k in key)} FROM {_tq(table.id, q)}{where} "
                    f"ORDER BY {order} LIMIT 1) TO STDOUT", params)

        query, params = _statement(build)
        self._end_read()
        with self.conn.cursor() as cur, cur.copy(query, params) as copy:
            rows = [parse_row(bytes(data).decode("utf-8")[:-1]) for data in copy]
        return rows[0] if rows else None

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """Up to ``limit`` rows after ``after`` up to ``upto`` in key order, as ``op: r`` incremental READs."""
        keys = f"({', '.join(_q(k) for k in key)})"
        marks = f"({', '.join('%s' for _ in key)})"
        parts, params = [], []
        if after is not None:
            parts.append(f"{keys} > {marks}")
            params += after
        parts.append(f"{keys} <= {marks}")
        params += upto
        if condition is not None:
            text, values = condition.render(_q, "%s")
            parts.append(f"({text})")
            params += values
        cols = ", ".join(_q(c.name) for c in table.columns)
        query = (f"COPY (SELECT {cols} FROM {_tq(table.id, _q)} WHERE {' AND '.join(parts)} "
                 f"ORDER BY {', '.join(_q(k) for k in key)} LIMIT {int(limit)}) TO STDOUT")
        # One snapshot for the read and the list of transactions it does not see (see ChunkRows.invisible),
        # taken in one round trip; the transaction ends with the high watermark's message.
        self._end_read()
        low = None
        if self.read_only:
            # The read's own snapshot and WAL position: the low watermark (cdc_postgres.readonly).
            cur = self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; " + POSITION_QUERY)
            self._reading = True
            cur.nextset()
            text, lsn = cur.fetchone()
            snapshot = PgSnapshot.parse(text)
            low = Watermark(normalize_lsn(int(lsn), self._block_size), snapshot, read=True)
            invisible = snapshot.in_progress()
            self._tx_id, self._lsn = snapshot.xmin & 0xFFFFFFFF, int(lsn)
        else:
            cur = self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                                    "SELECT txid_snapshot_xip(txid_current_snapshot())")
            self._reading = True
            cur.nextset()
            invisible = frozenset(int(x) & 0xFFFFFFFF for (x,) in cur.fetchall())
        ts_us = time.time_ns() // 1000
        schema, name = table.id.schema or "", table.id.table
        source = source_block(self.server, self.db, ts_us, "incremental", schema, name, self._tx_id, self._lsn,
                              sequence(None, self._lsn))
        rows: list[RawChange] = []
        append = rows.append
        new = tuple.__new__
        with self.conn.cursor() as cur, cur.copy(query, params) as copy:
            for data in copy:
                append(new(RawChange, (table, "r", None, parse_row(bytes(data).decode("utf-8")[:-1]), source,
                                       None, None, None)))
        if not rows:
            return ChunkRows(invisible=invisible, low=low)
        positions = [table.columns.index(table.column(k)) for k in key]
        first, last = rows[0].after, rows[-1].after
        return ChunkRows(rows, [last[i] for i in positions], [first[i] for i in positions], invisible, low)

    def current_position(self) -> Watermark:
        """(``read.only=true``) The WAL insert position now, with the current snapshot; ends a chunk's read
        transaction in the same message. Writes nothing."""
        reading, self._reading = self._reading, False
        cur = self.conn.execute(("COMMIT; " if reading else "") + POSITION_QUERY)
        if reading:
            cur.nextset()
        text, lsn = cur.fetchone()
        return Watermark(normalize_lsn(int(lsn), self._block_size), PgSnapshot.parse(text))

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """Insert a watermark row (its own transaction); its transaction id and LSN mark the chunk's READs.

        After a chunk read, one message commits the read and inserts the row (values as quoted literals).
        """
        if self.read_only:
            raise RuntimeError("read.only=true: the connector writes no watermarks to the signal table")
        signal = self._signal()
        insert = sql.SQL("INSERT INTO {} ({}) VALUES ({}, {}, {}) "
                         "RETURNING txid_current(), (pg_current_wal_lsn() - '0/0')::bigint").format(
            sql.Identifier(*_parts(signal.id)), sql.SQL(", ").join(sql.Identifier(c.name) for c in signal.columns[:3]),
            sql.Literal(row_id), sql.Literal(kind), sql.Literal(data))
        cur = self.conn.execute(sql.SQL("COMMIT; ") + insert if self._reading else insert)
        if self._reading:
            self._reading = False
            cur.nextset()
        row = cur.fetchone()
        self._tx_id, self._lsn = int(row[0]), int(row[1])

    def delete_watermark(self, row_id: str) -> None:
        """Delete a watermark row (its own transaction; after a chunk read, in the read's commit message)."""
        signal = self._signal()
        delete = sql.SQL("DELETE FROM {} WHERE {} = {}").format(
            sql.Identifier(*_parts(signal.id)), sql.Identifier(signal.columns[0].name), sql.Literal(row_id))
        self.conn.execute(sql.SQL("COMMIT; ") + delete if self._reading else delete)
        self._reading = False

    def _signal(self) -> Table:
        if self.signal_table is None:
            raise RuntimeError("signal.data.collection names no existing table: incremental snapshots write their "
                               "watermarks there")
        return self.signal_table

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _parts(table: TableId) -> list[str]:
    return [p for p in (table.schema, table.table) if p is not None]


def _where(condition: Node | None, quote: Callable[[str], str]) -> tuple[str, list[Any]]:
    if condition is None:
        return "", []
    text, params = condition.render(quote, "%s")
    return f" WHERE {text}", params


def _tq(table: TableId, quote: Callable[[str], str]) -> str:
    return ".".join(quote(p) for p in (table.schema, table.table) if p is not None)


class PostgresIncrementalSource:
    """The PostgreSQL connector's ad hoc snapshot capabilities (``cdc_core.incremental.spi``)."""

    def __init__(self, config: Config, log: Any):
        self.config = config
        self.log = log
        self.read_only = bool(config.get(pgc.READ_ONLY))
        #: ``cdc_core.incremental.spi``: snapshots and WAL positions with read.only=true, else signal table rows.
        self.watermarks = POSITION if self.read_only else SIGNAL_TABLE
        self._conn: psycopg.Connection | None = None
        self._signal: Table | None = None

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = _connect(self.config)
        return self._conn

    def captured_tables(self) -> list[Table]:
        """The captured tables' current definitions (read from the catalog now)."""
        catalog = Catalog(self._connection(), type_modes(self.config), table_filter(self.config), self.log)
        return sorted(catalog.captured_tables().values(), key=lambda t: t.id.identifier)

    def reader(self) -> PostgresChunkReader:
        """A chunk reader on a new connection."""
        if self._signal is None:
            tid = signal_table_id(self.config)
            if tid is not None:
                conn = _connect(self.config)
                try:
                    oid = _oid(conn, tid)
                    catalog = Catalog(conn, type_modes(self.config), table_filter(self.config), self.log)
                    self._signal = catalog.table(oid) if oid is not None else None
                finally:
                    conn.close()
        return PostgresChunkReader(self.config, self._signal, self.read_only)

    # -- position watermarks (read.only=true; cdc_core.incremental.spi.PositionWatermarks) --------

    def event_position(self, change: RawChange) -> EventPosition | None:
        """A WAL event's transaction: its xid and commit LSN."""
        return readonly.event_position(change)

    def after(self, watermark: Watermark, position: EventPosition) -> bool:
        """True if the event's transaction commits at or past the watermark's position (or the read did not see it)."""
        return readonly.after(watermark, position)

    def caught_up(self, watermark: Watermark, offset: dict[str, Any]) -> bool:
        """True if a checkpoint's position is at or past the watermark's WAL position."""
        return readonly.caught_up(watermark, offset)

    def transaction_of(self, change: RawChange) -> int | None:
        """A log event's transaction id (``source.txId``, the 32-bit xid, as ``ChunkRows.invisible`` holds it)."""
        return change.source.get("txId")

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool]) -> Iterator[list[RawChange]]:
        """The tables read with COPY in one REPEATABLE READ transaction, with the initial snapshot's markers."""
        try:
            yield from self._blocking_snapshot(tables, offset_for, stopped)
        except psycopg.OperationalError as e:
            raise RetriableError(f"lost the connection to PostgreSQL during a blocking snapshot: {e}") from None

    def _blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                           stopped: Callable[[], bool]) -> Iterator[list[RawChange]]:
        query_spi = snapshot_query(self.config, self.config.get(common.SNAPSHOT_QUERY_MODE), registry())
        server, db = self.config.get(common.TOPIC_PREFIX), self.config.get(pgc.DBNAME)
        conn = _connect(self.config)
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            tx_id, lsn = conn.execute("SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                                      "(pg_current_wal_lsn() - '0/0')::bigint").fetchone()
            seq = sequence(None, lsn)

            def reads(table: Table, condition: Node | None) -> Iterator[RawChange]:
                columns = [_ident(c.name) for c in table.columns]
                default = f"SELECT {', '.join(columns)} FROM {_tident(table.id)}"
                select = query_spi.snapshot_query(table.id, columns, _tident)
                if select is None:
                    return
                if select != default:
                    # An override may filter or order rows; selecting the columns from it keeps their order.
                    select = f"SELECT {', '.join(columns)} FROM ({select}) AS cdc_snapshot_select"

                def build(q: Callable[[str], str], text: Callable[[str], str]) -> tuple[str, list[Any]]:
                    where, params = _where(condition, q)
                    return f"COPY ({text(select)}{where}) TO STDOUT", params

                statement, params = _statement(build)
                offset = offset_for(table)
                source = source_block(server, db, time.time_ns() // 1000, "true", table.id.schema or "",
                                      table.id.table, tx_id, lsn, seq)
                with conn.cursor() as cur, cur.copy(statement, params) as copy:
                    for data in copy:
                        yield RawChange(table, "r", None, parse_row(bytes(data).decode("utf-8")[:-1]), source, offset)

            # As Debezium's determineSnapshotSelect: the signal table's rows are never read (nor does it take part
            # in the first/last markers).
            signal = signal_table_id(self.config)
            skip = None if signal is None else (signal.schema, signal.table)
            data = [(t, c) for t, c in tables if (t.id.schema, t.id.table) != skip]
            yield from marked_batches((reads(table, condition) for table, condition in data), _BATCH, stopped)
            if stopped():
                return
            conn.execute("COMMIT")
        finally:
            conn.close()

    def close(self) -> None:
        """Close the catalog connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


#: The capability, found by ``cdc_core.incremental.spi.incremental_source_for``.
incremental_snapshot_source = PostgresIncrementalSource
