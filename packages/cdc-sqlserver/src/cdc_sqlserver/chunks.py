"""SQL Server's chunked snapshot (``cdc_core.spi.chunks``): key-range chunks, each read in its own transaction.

SQL Server cannot share one transaction's snapshot between connections, so the chunks are made
consistent with the change tables instead of with each other (as MySQL's, ``cdc_mysql.chunks``):

1. ``open`` reads the max LSN p0 (streaming resumes after it) and plans chunks: a table whose
   primary key starts with an integer column is split into ranges of that column between its
   MIN and MAX (the first range open below, the last open above); a table with another primary key
   (VARCHAR, UNIQUEIDENTIFIER, composite...) into ranges of the whole key between keys sampled every
   ``chunk_rows``-th row in the server's key order (``ROW_NUMBER() OVER (ORDER BY key)``; the
   comparisons run in T-SQL, under the columns' collations); tables without a primary key, and
   tables with a ``snapshot.select.statement.overrides`` SELECT, are one chunk.
2. Each chunk reader, in any process, starts a transaction at ``snapshot.isolation.mode``, reads
   the max LSN p_i inside it, reports it (``ChunkRead``), then reads its range. Every transaction
   whose commit LSN is at most p_i was written to the change tables by the capture job before the
   read began, so its changes are in the rows; a later one may be too (then it is applied again
   over a row that has it already: the same final state).
3. Streaming resumes after p0; the handoff filter drops a change to a key of chunk i whose commit
   LSN is at most p_i, until the stream passes every p_i.

The filter places a change in its chunk by comparing keys in Python only for integer ranges
(integers order the same in T-SQL and Python; strings under a collation do not). For a table split
at sampled keys it drops a change only if its commit LSN is at most every chunk's read LSN of that
table (then every chunk's rows contain it); a change between the earliest and its own chunk's read
LSN is applied again over a row that has it already, as a change committed after p_i that the read
saw anyway is (the same final state).
"""

from __future__ import annotations

import bisect
import copy
import math
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.relational import Table
from cdc_core.snapshot.markers import snapshot_marker
from cdc_core.spi.chunks import Chunk, ChunkRead, SnapshotPlan
from cdc_core.spi.connector import ConnectorContext
from cdc_sqlserver import config as msc
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import CaptureInstance, quote, read_capture_instances, read_tables
from cdc_sqlserver.incremental import key_greater, key_value
from cdc_sqlserver.lsn import Lsn, from_value
from cdc_sqlserver.snapshot import ISOLATION, snapshot_offset
from cdc_sqlserver.source import source_block
from cdc_sqlserver.types import TypeModes

_INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
_MAX_CHUNKS = 4096


def _modes(config: Config) -> TypeModes:
    return TypeModes.from_config(config)


def _db(config: Config) -> str:
    names = config.get(msc.NAMES) or []
    return names[0] if names else ""


def _table_sql(db: str, table: Table) -> str:
    return f"{quote(db)}.{quote(table.id.schema or 'dbo')}.{quote(table.id.table)}"


def _max_lsn(conn: Any) -> str:
    row = conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
    return str(from_value(row[0] if row else None))


def _instance(conn: Any, config: Config, schema: str, name: str) -> CaptureInstance:
    """The capture instance streaming reads ``schema.name`` from (its captured columns are the events')."""
    tables = read_tables(conn, _db(config), _modes(config))
    found = read_capture_instances(conn, {k: t for k, t in tables.items() if k == (schema, name)})
    if not found:
        raise ConnectorError(f"table {schema}.{name} has no capture instance any more")
    return next(iter(found.values()))


class SqlServerSnapshotChunks:
    """The SnapshotChunks capability of the SQL Server connector (module docstring)."""

    def __init__(self, config: Config, log: Any = None):
        """No I/O."""
        self.config = config
        self.log = log or connector_logger("cdc.sqlserver", "sqlserver", config.get(common.TOPIC_PREFIX) or "-",
                                           "snapshot")

    def _connector(self) -> Any:
        from cdc_sqlserver.connector import SqlServerConnector

        return SqlServerConnector(self.config, ConnectorContext(log=self.log))

    def needs_snapshot(self, offset: dict[str, Any] | None) -> bool:
        """As the connector's ``snapshot.mode`` decides for ``offset``."""
        in_progress = bool(offset and offset.get("snapshot") and not offset.get("snapshot_completed"))
        return bool(self._connector().snapshotter.should_snapshot_data(offset is not None, in_progress))

    def _instances(self, tables: list[str] | None) -> list[CaptureInstance]:
        connector = self._connector()
        connector.start(None)  # the connector's start-up checks; its capture instances
        try:
            found = {i.table.id.identifier: i for i in connector._instances}
        finally:
            connector.close()
        if tables:
            missing = sorted(set(tables) - set(found))
            if missing:
                raise ConnectorError(f"table {missing[0]!r} is not a captured table of database {_db(self.config)!r} "
                                     "(check its name, table.include.list and that CDC is enabled on it)")
        return [found[k] for k in sorted(found) if tables is None or k in tables]

    def describe(self, tables: list[str] | None) -> list[Table]:
        """The captured tables as their capture instances stream them, in name order."""
        return [i.table for i in self._instances(tables)]

    def open(self, *, for_streaming: bool, tables: list[str] | None, chunk_rows: int) -> SnapshotPlan:
        """Read p0 and plan the chunks (module docstring); nothing is held."""
        instances = self._instances(tables)
        db = _db(self.config)
        conn = odbc.connect(self.config, db)
        try:
            p0 = _max_lsn(conn)
            snapshot_id = f"{p0}:{secrets.token_hex(4)}"
            chunks: list[Chunk] = []
            for inst in instances:
                chunks += self._plan_table(conn, db, inst, snapshot_id, chunk_rows)
        finally:
            conn.close()
        for c in chunks:
            c.extra.update(p0=p0, first_table=c.table == chunks[0].table, last_table=c.table == chunks[-1].table)
        if chunks:
            chunks[0].first_overall = True
            chunks[-1].last_overall = True
        self.log.info("snapshot %s of %d tables in %d chunks", snapshot_id, len(instances), len(chunks))
        return SnapshotPlan(snapshot_id, chunks, snapshot_offset(p0, True) if for_streaming else None,
                            [i.table for i in instances], reports_reads=True)

    def _plan_table(self, conn: Any, db: str, inst: CaptureInstance, snapshot_id: str,
                    chunk_rows: int) -> list[Chunk]:
        table = inst.table
        override = self.config.get(f"snapshot.select.statement.overrides.{db}.{table.id.identifier}") or \
            self.config.get(f"snapshot.select.statement.overrides.{table.id.identifier}")
        first = table.column(table.primary_key[0]) if table.primary_key else None
        ranges: list[dict[str, Any]]
        if override or first is None:
            ranges = [{"kind": "all", "override": override}]
        elif first.type_name.upper() in _INTEGER_TYPES:
            ranges = self._key_ranges(conn, db, table, first.name, chunk_rows)
        else:
            ranges = self._sampled_ranges(conn, db, table, chunk_rows)
        return [Chunk(table.id.identifier, i, snapshot_id, r, first=i == 0, last=i == len(ranges) - 1,
                      extra={"schema": table.id.schema, "name": table.id.table})
                for i, r in enumerate(ranges)]

    def _key_ranges(self, conn: Any, db: str, table: Table, column: str, chunk_rows: int) -> list[dict[str, Any]]:
        """Equal ranges of the key's first (integer) column between its MIN and MAX."""
        lo, hi, rows = conn.execute(f"SELECT MIN({quote(column)}), MAX({quote(column)}), COUNT(*) "
                                    f"FROM {_table_sql(db, table)}").fetchone()
        if lo is None:
            return [{"kind": "keys", "column": column, "from": None, "to": None}]
        lo, hi = int(lo), int(hi)
        n = max(1, min(_MAX_CHUNKS, math.ceil(int(rows) / max(1, chunk_rows)), hi - lo + 1))
        step = math.ceil((hi - lo + 1) / n)
        edges: list[int | None] = [None, *range(lo + step, hi + 1, step), None]
        return [{"kind": "keys", "column": column, "from": edges[i], "to": edges[i + 1]} for i in range(len(edges) - 1)]

    def _sampled_ranges(self, conn: Any, db: str, table: Table, chunk_rows: int) -> list[dict[str, Any]]:
        """Ranges ``(after, upto]`` of the whole key between keys sampled every ``chunk_rows``-th row (see module).

        No cut at the last row, so the last range (open above) is not empty and carries the table's last marker.
        """
        key = list(table.primary_key)
        cols = ", ".join(quote(k) for k in key)
        count = int(conn.execute(f"SELECT COUNT(*) FROM {_table_sql(db, table)}").fetchone()[0])
        step = max(1, chunk_rows, math.ceil(count / _MAX_CHUNKS))  # at most _MAX_CHUNKS chunks
        if count <= step:
            return [{"kind": "keyset", "key": key, "after": None, "upto": None}]
        rows = conn.execute(f"SELECT {cols} FROM (SELECT {cols}, ROW_NUMBER() OVER (ORDER BY {cols}) AS [cdc_rn] "
                            f"FROM {_table_sql(db, table)}) AS [cdc_keys] "
                            f"WHERE [cdc_rn] % {step} = 0 AND [cdc_rn] < {count} "
                            f"ORDER BY {cols}").fetchall()
        cuts = [[key_value(v) for v in r] for r in rows]
        edges: list[list[Any] | None] = [None, *cuts, None]
        return [{"kind": "keyset", "key": key, "after": edges[i], "upto": edges[i + 1]} for i in range(len(edges) - 1)]

    def wait_read(self, plan: SnapshotPlan, timeout: float) -> int:
        """Nothing is held between reads: 0 at once."""
        return 0

    def close(self) -> None:
        """Nothing is held."""

    def handoff(self, plan: SnapshotPlan, reports: Mapping[tuple[str, int], list[dict[str, Any]]]) -> dict | None:
        """Each chunk at its earliest reported read LSN (unreported: p0); None if every chunk read at p0."""
        if not plan.chunks:
            return None
        p0 = plan.chunks[0].extra["p0"]
        tables: dict[str, Any] = {}
        until = Lsn.parse(p0)
        for chunk in plan.chunks:
            got = [Lsn.parse(r["lsn"]) for r in reports.get((chunk.table, chunk.index)) or []]
            at = min(got, key=Lsn.key, default=Lsn.parse(p0))
            until = max(until, at, key=Lsn.key)
            entry = tables.setdefault(chunk.table, {"column": chunk.bounds.get("column"), "chunks": []})
            entry["chunks"].append([chunk.bounds.get("from"), chunk.bounds.get("to"), str(at)])
        if until.key() <= Lsn.parse(p0).key():
            return None
        return {"until": str(until), "tables": tables}

    @classmethod
    def handoff_filter(cls, config: Config, state: dict[str, Any]) -> LsnHandoffFilter:
        """The stream filter for a handoff state."""
        return LsnHandoffFilter(state)

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint | ChunkRead]]:
        """Start a transaction, report its max LSN, read the chunk's rows as ``op: r`` changes."""
        db = _db(config)
        conn = odbc.connect(config, db, autocommit=False)
        try:
            isolation = config.get(msc.SNAPSHOT_ISOLATION_MODE)
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {ISOLATION[isolation]}")
            lsn = _max_lsn(conn)
            yield [ChunkRead(chunk.table, chunk.index, {"lsn": lsn})]
            inst = _instance(conn, config, chunk.extra["schema"], chunk.extra["name"])
            yield from _read_rows(conn, config, db, inst.table, chunk, lsn)
            conn.commit()
        finally:
            conn.close()


def _read_rows(conn: Any, config: Config, db: str, table: Table, chunk: Chunk, lsn: str) -> Iterator[list[RawChange]]:
    """The chunk's rows with Debezium's ``source.snapshot`` markers."""
    bounds = chunk.bounds
    cols = ", ".join(quote(c.name) for c in table.columns)
    params: list[Any] = []
    if bounds.get("kind") == "keys":
        parts = []
        for edge, op in (("from", ">="), ("to", "<")):
            if bounds.get(edge) is not None:
                parts.append(f"{quote(bounds['column'])} {op} ?")
                params.append(bounds[edge])
        statement = f"SELECT {cols} FROM {_table_sql(db, table)}" + (" WHERE " + " AND ".join(parts) if parts else "")
    elif bounds.get("kind") == "keyset":
        parts = []
        for edge, negate in (("after", ""), ("upto", "NOT ")):
            if bounds.get(edge) is not None:
                text, values = key_greater(table, bounds["key"], bounds[edge])
                parts.append(negate + text)
                params += values
        statement = f"SELECT {cols} FROM {_table_sql(db, table)}" + (" WHERE " + " AND ".join(parts) if parts else "")
    elif bounds.get("override"):
        statement = f"SELECT {cols} FROM ({bounds['override']}) AS cdc_snapshot_select"
    else:
        statement = f"SELECT {cols} FROM {_table_sql(db, table)}"
    first_table = chunk.extra.get("first_table", chunk.first_overall)
    last_table = chunk.extra.get("last_table", chunk.last_overall)
    source = source_block(config.get(common.TOPIC_PREFIX), db, time.time_ns() // 1000, "true", table.id.schema or "",
                          table.id.table, None, lsn, None)
    offset = snapshot_offset(lsn, False)
    first_marker = snapshot_marker(first_table, last_table, chunk.first, False)
    prev: RawChange | None = None
    rows = 0
    cur = conn.execute(statement, *params)
    fetch = config.get(msc.SNAPSHOT_FETCH_SIZE)
    while fetched := cur.fetchmany(fetch):
        batch: list[RawChange] = []
        for raw in fetched:
            if prev is not None:
                batch.append(prev)
            src = source if rows or first_marker == "true" else {**source, "snapshot": first_marker}
            prev = RawChange(table, "r", None, list(raw), src, offset)
            rows += 1
        if batch:
            yield batch
    if prev is not None:
        marker = snapshot_marker(first_table, last_table, chunk.first and rows == 1, chunk.last)
        if marker != prev.source["snapshot"]:
            prev = prev._replace(source={**prev.source, "snapshot": marker})
        yield [prev]


class _Ranges:
    """One table's chunks: sorted lower bounds, upper bounds, read LSN keys."""

    def __init__(self, column: str | None, chunks: list[list[Any]]):
        self.column = column
        rows = sorted(chunks, key=lambda c: (c[0] is not None, c[0] if c[0] is not None else 0))
        self.lows = [float("-inf") if c[0] is None else c[0] for c in rows]
        self.highs = [c[1] for c in rows]
        self.lsns = [Lsn.parse(c[2]).key() for c in rows]
        self.index: dict[int, int] = {}

    def lsn_of(self, value: Any) -> bytes | None:
        """The read LSN of the chunk whose range holds ``value`` (None if none does)."""
        if self.column is None:
            return min(self.lsns)
        if not isinstance(value, int):
            return None
        i = bisect.bisect_right(self.lows, value) - 1
        if i < 0:
            return None
        hi = self.highs[i]
        return self.lsns[i] if hi is None or value < hi else None


class LsnHandoffFilter:
    """Drops the streamed changes a chunk's rows contain: commit LSN at most the chunk's read LSN (module docstring)."""

    def __init__(self, state: dict[str, Any]):
        """From a state made by ``SqlServerSnapshotChunks.handoff``."""
        self._state = copy.deepcopy(state)
        self.version = 0
        self._until = Lsn.parse(state["until"]).key()
        self._tables = {name: _Ranges(t["column"], t["chunks"]) for name, t in state["tables"].items()}
        self._passed = False

    def state(self) -> dict[str, Any] | None:
        """The state (None once the stream passed every read LSN)."""
        return None if self._passed else copy.deepcopy(self._state)

    def filter(self, batch: Sequence[Any]) -> list[Any]:
        """The batch without the changes the chunk reads contain."""
        if self._passed:
            return list(batch)
        out: list[Any] = []
        for item in batch:
            offset = getattr(item, "offset", None)
            at = (Lsn.parse(offset["commit_lsn"]).key()
                  if not self._passed and offset and not offset.get("snapshot") and offset.get("commit_lsn") else None)
            if at is not None and at > self._until:
                self._passed = True
                self.version += 1
            if self._passed or at is None or item.__class__ is not RawChange:
                out.append(item)
                continue
            kept = self._change(item, at)
            if kept is not None:
                out.append(kept)
        return out

    def _change(self, change: RawChange, at: bytes) -> RawChange | None:
        ranges = self._tables.get(change.table.id.identifier)
        if ranges is None:
            return change
        if ranges.column is None:  # one chunk, or sampled key ranges: only what every chunk read holds
            return None if at <= min(ranges.lsns) else change
        index = ranges.index.get(id(change.table))
        if index is None:
            index = ranges.index[id(change.table)] = [c.name for c in change.table.columns].index(ranges.column)
        before = None if change.before is None else ranges.lsn_of(change.before[index])
        after = None if change.after is None else ranges.lsn_of(change.after[index])
        drop_before = before is not None and at <= before
        drop_after = after is not None and at <= after
        if change.op != "u" or change.before is None or change.after is None or \
                change.before[index] == change.after[index]:
            return None if (drop_after if change.after is not None else drop_before) else change
        if drop_before and drop_after:
            return None
        if drop_before:
            return change._replace(op="c", before=None)  # the old key's removal is in its chunk already
        if drop_after:
            return change._replace(op="d", after=None)  # the new key's row is in its chunk already
        return change


#: The capability, found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = SqlServerSnapshotChunks
