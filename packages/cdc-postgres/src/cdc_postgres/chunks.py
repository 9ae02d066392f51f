"""PostgreSQL's chunked snapshot: an exported snapshot that many processes read in key or page ranges.

For streaming, ``open`` creates the replication slot with an exported snapshot and keeps that
replication connection idle (the snapshot stays valid until its next command) while other
processes run ``SET TRANSACTION SNAPSHOT`` and read their chunk; streaming then starts at the
slot's consistent point. For a one-off snapshot, a plain REPEATABLE READ transaction exports it.

Tables with a single integer primary key are split into equal key ranges between the snapshot's
min and max; other keyed tables at boundaries sampled from the key; tables without a primary
key into ``ctid`` page ranges (TID range scans).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import psycopg
from psycopg import sql

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.relational import Table
from cdc_core.snapshot.markers import snapshot_marker
from cdc_core.spi.chunks import Chunk, SnapshotPlan
from cdc_core.spi.connector import ConnectorContext
from cdc_postgres import config as pgc
from cdc_postgres.catalog import Catalog, table_filter
from cdc_postgres.copytext import parse_row
from cdc_postgres.modes import type_modes
from cdc_postgres.replication import ReplicationConnection, format_lsn, parse_lsn
from cdc_postgres.source import sequence, source_block

_INTEGER_TYPES = frozenset({"smallint", "integer", "bigint", "int2", "int4", "int8"})  # SQL and catalog (typname) spellings
_BATCH = 2048


def _connect(config: Config) -> psycopg.Connection:
    """A regular autocommit connection with ``database.initial.statements`` run on it."""
    conn = psycopg.connect(pgc.conninfo(config), autocommit=True)
    for statement in pgc.initial_statements(config):
        conn.execute(statement)
    return conn


def _channel(snapshot: str) -> str:
    """The NOTIFY channel chunk readers report to, derived from the snapshot name."""
    return "cdc_snapshot_" + "".join(c if c.isalnum() else "_" for c in snapshot.lower())[:48]


class PostgresSnapshotChunks:
    """The SnapshotChunks capability of the PostgreSQL connector (see ``cdc_core.spi.chunks``)."""

    #: The output plug-in a streaming snapshot's slot is created with.
    slot_plugin: ClassVar[str] = "pgoutput"

    def __init__(self, config: Config, log: Any = None):
        self.config = config
        self.log = log or connector_logger("cdc.postgres", "postgres", config.get(common.TOPIC_PREFIX) or "-", "snapshot")
        self.slot = config.get(pgc.SLOT_NAME)
        self._repl: ReplicationConnection | None = None
        self._holder: psycopg.Connection | None = None
        self._listener: psycopg.Connection | None = None

    def needs_snapshot(self, offset: dict[str, Any] | None) -> bool:
        """As the connector decides: ``snapshot.mode`` and whether the last run completed its snapshot."""
        mode = self.config.get(pgc.SNAPSHOT_MODE)
        if mode == "no_data":
            return False
        if offset is None or offset.get("snapshot") or mode == "always":
            return True
        if mode == "when_needed":
            with _connect(self.config) as conn:
                return conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                    (self.slot,)).fetchone() is None
        return False

    def describe(self, tables: list[str] | None) -> list[Table]:
        """The captured tables' current definitions, in name order."""
        with _connect(self.config) as conn:
            return self._tables(conn, tables)

    def _tables(self, conn: psycopg.Connection, tables: list[str] | None) -> list[Table]:
        catalog = Catalog(conn, type_modes(self.config), table_filter(self.config))
        found = catalog.captured_tables()
        out = [t for t in found.values() if tables is None or t.id.identifier in tables]
        if tables:
            missing = sorted(set(tables) - {t.id.identifier for t in out})
            if missing:
                raise ConnectorError(
                    f"table {missing[0]!r} is not a captured table of database {self.config.get(pgc.DBNAME)!r} "
                    "(check its name and table.include.list / table.exclude.list)"
                )
        oids = {id(t): oid for oid, t in found.items()}
        self._oids = {t.id.identifier: oids[id(t)] for t in out}
        return sorted(out, key=lambda t: t.id.identifier)

    def open(self, *, for_streaming: bool, tables: list[str] | None, chunk_rows: int) -> SnapshotPlan:
        """Create and hold the snapshot (with the slot when streaming); plan each table's chunks."""
        resume: dict[str, Any] | None = None
        if for_streaming:
            self._prepare_connector()
            with _connect(self.config) as conn:
                row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)).fetchone()
            if row is not None and row[0]:
                raise ConnectorError(f"replication slot {self.slot!r} is in use by another connection; "
                                     "stop the other client or use another slot.name")
            self._repl = ReplicationConnection(pgc.conninfo(self.config))
            if row is not None:
                self.log.info("dropping slot %s to export a fresh snapshot from a new one", self.slot)
                self._repl.drop_slot(self.slot)
            created = self._repl.create_slot(self.slot, self.slot_plugin, export_snapshot=True)
            snapshot, lsn = created.snapshot_name or "", created.consistent_point
            resume = {"lsn_proc": None, "lsn_commit": lsn, "lsn": lsn, "txId": None, "ts_usec": None}
            self.log.info("created slot %s at %s with snapshot %s", self.slot, format_lsn(lsn), snapshot)
            plan_conn = _connect(self.config)
            plan_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            plan_conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        else:
            plan_conn = self._holder = _connect(self.config)
            plan_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            snapshot, lsn_text = plan_conn.execute("SELECT pg_export_snapshot(), pg_current_wal_lsn()::text").fetchone()
            lsn = parse_lsn(lsn_text)
        try:
            tx_id = int(plan_conn.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())").fetchone()[0])
            described = self._tables(plan_conn, tables)
            chunks: list[Chunk] = []
            for table in described:
                chunks += self._plan_table(plan_conn, table, snapshot, lsn, tx_id, chunk_rows)
        finally:
            if plan_conn is not self._holder:
                plan_conn.close()
        if chunks:
            chunks[0].first_overall = True
            chunks[-1].last_overall = True
            for c in chunks:  # Debezium's first/last table: by table order, even when it is empty
                c.extra.update(first_table=c.table == chunks[0].table, last_table=c.table == chunks[-1].table)
        self._listener = _connect(self.config)
        self._listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(_channel(snapshot))))
        self.log.info("snapshot %s of %d tables in %d chunks", snapshot, len(described), len(chunks))
        return SnapshotPlan(snapshot, chunks, resume, described)

    def _prepare_connector(self) -> None:
        """The connector's own start: server checks, include-list check and the publication."""
        from cdc_postgres.connector import PostgresConnector

        connector = PostgresConnector(self.config, ConnectorContext(log=self.log))
        try:
            connector.start(None)
        finally:
            connector.close()

    def _plan_table(self, conn: psycopg.Connection, table: Table, snapshot: str, lsn: int,
                    tx_id: int, chunk_rows: int) -> list[Chunk]:
        oid = self._oids[table.id.identifier]
        ident = sql.Identifier(table.id.schema or "", table.id.table)
        pages, tuples = conn.execute(
            "SELECT (pg_relation_size(%s::oid) / current_setting('block_size')::int)::bigint, reltuples::bigint "
            "FROM pg_class WHERE oid = %s::oid", (oid, oid)).fetchone()
        if tuples is None or tuples < 0:
            tuples = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(ident)).fetchone()[0]
        n = max(1, min(4096, math.ceil(max(tuples, 0) / max(1, chunk_rows))))
        base = {"oid": oid, "lsn": lsn, "tx_id": tx_id}
        ranges: list[dict[str, Any]]
        # Key ranges leave out rows with a NULL in the key: a table keyed by a unique index on nullable
        # columns (no primary key) is split by pages instead.
        keyed = bool(table.primary_key) and not any(table.column(c).optional for c in table.primary_key)
        if n == 1:
            ranges = [{"kind": "all"}]
        elif keyed and len(table.primary_key) == 1 and table.column(table.primary_key[0]).type_name in _INTEGER_TYPES:
            col = sql.Identifier(table.primary_key[0])
            lo, hi = conn.execute(sql.SQL("SELECT min({c}), max({c}) FROM {t}").format(c=col, t=ident)).fetchone()
            if lo is None:
                ranges = [{"kind": "all"}]
            else:
                step = max(1, math.ceil((hi - lo + 1) / n))
                cuts = list(range(lo + step, hi + 1, step))
                ranges = _key_ranges(table.primary_key, [[c] for c in cuts])
        elif keyed:
            cols = sql.SQL(", ").join(sql.Identifier(c) for c in table.primary_key)
            percent = min(100.0, max(0.01, 100.0 * n * 64 / max(tuples, 1)))
            sample = conn.execute(sql.SQL("SELECT {c} FROM {t} TABLESAMPLE SYSTEM ({p}) ORDER BY {c}").format(
                c=cols, t=ident, p=sql.Literal(percent))).fetchall()
            cuts = [list(sample[(len(sample) * i) // n]) for i in range(1, n)] if len(sample) >= n else []
            unique = [c for i, c in enumerate(cuts) if i == 0 or c != cuts[i - 1]]
            ranges = _key_ranges(table.primary_key, unique) if unique else [{"kind": "all"}]
        else:
            step = max(1, math.ceil(max(pages, 1) / n))
            cuts = list(range(step, max(pages, 1), step))
            edges = [None, *cuts, None]
            ranges = [{"kind": "pages", "from": edges[i], "to": edges[i + 1]} for i in range(len(edges) - 1)]
        return [
            Chunk(table.id.identifier, i, snapshot, r, first=i == 0, last=i == len(ranges) - 1, extra=dict(base))
            for i, r in enumerate(ranges)
        ]

    def wait_read(self, plan: SnapshotPlan, timeout: float) -> int:
        """Wait until every chunk was read again (readers NOTIFY after each chunk), up to ``timeout`` s.

        Returns how many chunk reads were reported meanwhile (0: nobody read anything).
        """
        assert self._listener is not None
        wanted = {(c.table, c.index) for c in plan.chunks}
        done: set[tuple[str, int]] = set()
        seen = 0
        deadline = time.monotonic() + timeout
        while not wanted <= done:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for note in self._listener.notifies(timeout=min(left, 1.0)):
                table, _, index = note.payload.rpartition("#")
                done.add((table, int(index)))
                seen += 1
                if wanted <= done:
                    break
        return seen

    def close(self) -> None:
        """Release the snapshot: close the holding connection (the slot stays, for streaming)."""
        for conn in (self._listener, self._holder):
            if conn is not None and not conn.closed:
                conn.close()
        self._listener = self._holder = None
        if self._repl is not None:
            self._repl.close()
            self._repl = None
            self._wait_slot_inactive()

    def _wait_slot_inactive(self, timeout: float = 10.0) -> None:
        """Wait until the server has released the slot, so the connector can take it over."""
        deadline = time.monotonic() + timeout
        with _connect(self.config) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)).fetchone()
                if row is None or not row[0]:
                    return
                time.sleep(0.05)

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint]]:
        """Read one chunk with COPY inside the exported snapshot; then report it on the snapshot's channel."""
        conn = _connect(config)
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(chunk.snapshot)))
            catalog = Catalog(conn, type_modes(config), table_filter(config))
            table = catalog.table(chunk.extra["oid"])
            if table is None:
                raise ConnectorError(f"table {chunk.table!r} is gone from the snapshot")
            yield from _copy_chunk(conn, config, table, chunk)
            conn.execute("COMMIT")
            conn.execute("SELECT pg_notify(%s, %s)", (_channel(chunk.snapshot), f"{chunk.table}#{chunk.index}"))
        finally:
            conn.close()


def _key_ranges(key: list[str], cuts: list[list[Any]]) -> list[dict[str, Any]]:
    """Ranges ``[None, c1), [c1, c2), ..., [cn, None)`` over the key columns (row comparisons)."""
    edges: list[list[Any] | None] = [None, *cuts, None]
    return [{"kind": "keys", "columns": list(key), "from": edges[i], "to": edges[i + 1]} for i in range(len(edges) - 1)]


def _condition(bounds: dict[str, Any]) -> tuple[sql.Composable, list[Any]]:
    """The WHERE clause of a chunk and its parameters."""
    kind = bounds.get("kind")
    parts: list[sql.Composable] = []
    params: list[Any] = []
    if kind == "keys":
        cols = sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in bounds["columns"]))
        for edge, op in ((bounds["from"], ">="), (bounds["to"], "<")):
            if edge is not None:
                marks = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() for _ in edge))
                parts.append(sql.SQL("{} {} {}").format(cols, sql.SQL(op), marks))
                params += edge
    elif kind == "pages":
        for edge, op in ((bounds["from"], ">="), (bounds["to"], "<")):
            if edge is not None:
                parts.append(sql.SQL("ctid {} {}::tid").format(sql.SQL(op), sql.Literal(f"({int(edge)},0)")))
    if not parts:
        return sql.SQL(""), []
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(parts), params


def _rows_beyond(conn: psycopg.Connection, table: Table, bounds: dict[str, Any], edge: str) -> bool:
    """True if the table has rows before (``edge="from"``) or after (``"to"``) the chunk's range, in its snapshot."""
    if bounds.get(edge) is None or bounds.get("kind") not in ("keys", "pages"):
        return False
    other = {"kind": bounds["kind"], "columns": bounds.get("columns"), "from": None, "to": None}
    other["to" if edge == "from" else "from"] = bounds[edge]
    where, params = _condition(other)
    query = sql.SQL("SELECT EXISTS (SELECT 1 FROM {}{})").format(sql.Identifier(table.id.schema or "", table.id.table), where)
    return bool(conn.execute(query, params or None).fetchone()[0])


def _copy_chunk(conn: psycopg.Connection, config: Config, table: Table, chunk: Chunk) -> Iterator[list[RawChange]]:
    """COPY the chunk's rows out as ``op: r`` RawChanges, with Debezium's ``source.snapshot`` markers.

    A chunk holds its table's first (last) row if it is the table's first (last) chunk or every
    chunk before (after) it is empty; rows in the middle share one source block.
    """
    server, db = config.get(common.TOPIC_PREFIX), config.get(pgc.DBNAME)
    lsn, tx_id = chunk.extra["lsn"], chunk.extra["tx_id"]
    schema, name = table.id.schema or "", table.id.table
    seq = sequence(None, lsn)
    first_table = chunk.extra.get("first_table", chunk.first_overall)
    last_table = chunk.extra.get("last_table", chunk.last_overall)
    first_in_table = chunk.first or not _rows_beyond(conn, table, chunk.bounds, "from")
    last_in_table = chunk.last or not _rows_beyond(conn, table, chunk.bounds, "to")
    where, params = _condition(chunk.bounds)
    query = sql.SQL("COPY (SELECT {} FROM {}{}) TO STDOUT").format(
        sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns), sql.Identifier(schema, name), where)
    ts_us = time.time_ns() // 1000
    offset = {"snapshot": True, "last_snapshot_record": False, "lsn": lsn, "txId": tx_id, "ts_usec": ts_us}
    source = source_block(server, db, ts_us, "true", schema, name, tx_id, lsn, seq)
    first_marker = snapshot_marker(first_table, last_table, first_in_table, False)
    batch: list[RawChange] = []
    prev: RawChange | None = None
    rows = 0
    with conn.cursor() as cur, cur.copy(query, params or None) as copy:
        for data in copy:
            if prev is not None:
                batch.append(prev)
                if len(batch) >= _BATCH:
                    yield batch
                    batch = []
            prev = RawChange(table, "r", None, parse_row(str(data, "utf-8")[:-1]),
                             source if rows or first_marker == "true" else {**source, "snapshot": first_marker}, offset)
            rows += 1
    if prev is not None:
        marker = snapshot_marker(first_table, last_table, first_in_table and rows == 1, last_in_table)
        if marker != prev.source["snapshot"]:
            prev = prev._replace(source={**source, "snapshot": marker})
        if marker == "last":
            prev = prev._replace(offset={**offset, "last_snapshot_record": True})
        batch.append(prev)
    if batch:
        yield batch


#: The capability, found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = PostgresSnapshotChunks
