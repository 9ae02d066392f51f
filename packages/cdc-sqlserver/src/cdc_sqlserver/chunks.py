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
2. Each chunk reader, in any process, reads its range at READ COMMITTED ``WITH (HOLDLOCK)``: shared
   key-range locks (SERIALIZABLE for that table: the rows read and the gaps between them) held to
   the end of its transaction. With the range held it reads the end of the log, e_i
   (``sys.dm_db_log_stats(DB_ID()).log_end_lsn``), commits, and reports e_i (``ChunkRead``).
   Every transaction that changed the range and committed before the locks were granted has its
   commit record below e_i and its changes in the rows; none can commit while they are held, so
   every later one commits after the reader's commit, above e_i, and is not in the rows. So e_i
   splits the range's changes exactly, whatever the capture job's lag (the max LSN read inside
   the transaction would not: a transaction committed before the read but not yet captured has a
   commit LSN above it and is in the rows). ``snapshot.isolation.mode`` does not apply to these
   reads. A chunk's rows are fetched before e_i is read, so a reader holds them in memory.
3. Streaming resumes after p0; the handoff filter drops a change to a key of chunk i whose commit
   LSN is at most e_i, until the stream passes every e_i.

The filter places a change in its chunk by comparing keys in Python for integer ranges (integers
order the same in T-SQL and Python). Keys of a table split at sampled keys compare under their
columns' collations, which Python cannot reproduce, so the server places them: when the
stream meets a change of such a table between p0 and the table's last e_i, the filter reads the
keys of the change table's rows in that LSN window with each chunk's own range predicate (the
change table's columns have the source columns' types and collations) and keeps ``key -> chunk``
in memory (not in the state, which stays the bounds and LSNs; a restart reads them again). The
capture job may lag behind the e_i (log ends, not captured LSNs): the rows up to its max LSN,
read first, are placed, and a change above that places the rows written since.

Verified only on the stand-in, which takes a table-level SHARE lock for ``HOLDLOCK`` (stronger than
SQL Server's key-range locks, with the same guarantee for the reader) and answers
``sys.dm_db_log_stats`` from PostgreSQL's WAL insert position. A chunk with a
``snapshot.select.statement.overrides`` SELECT is read without the hint (its tables are the
user's): its handoff is exact only if nothing changes the table while it is read.
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
from cdc_core.snapshot.table_reader import result_order
from cdc_core.spi.chunks import Chunk, ChunkRead, SnapshotPlan
from cdc_core.spi.connector import ConnectorContext
from cdc_sqlserver import config as msc
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import CaptureInstance, quote, read_capture_instances, read_tables
from cdc_sqlserver.incremental import key_greater, key_value
from cdc_sqlserver.log_end import log_end
from cdc_sqlserver.lsn import Lsn, from_value
from cdc_sqlserver.snapshot import snapshot_offset
from cdc_sqlserver.snapshot_select import SnapshotSelect
from cdc_sqlserver.source import source_block
from cdc_sqlserver.types import TypeModes, base_name

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
        # The table's override as the connector finds it (listed in snapshot.select.statement.overrides, its * the
        # columns: cdc_sqlserver.snapshot_select), read in one chunk.
        override = SnapshotSelect(self.config, db, None, self.log).override(table)
        first = table.column(table.primary_key[0]) if table.primary_key else None
        ranges: list[dict[str, Any]]
        if override or first is None:
            ranges = [{"kind": "all", "override": override}]
        elif base_name(first) in _INTEGER_TYPES:
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
            if chunk.bounds.get("kind") == "keyset":
                entry = tables.setdefault(chunk.table, {"column": None, "key": chunk.bounds["key"], "chunks": [],
                                                        "schema": chunk.extra["schema"], "name": chunk.extra["name"],
                                                        "from": p0})
                entry["chunks"].append([chunk.bounds.get("after"), chunk.bounds.get("upto"), str(at)])
                continue
            entry = tables.setdefault(chunk.table, {"column": chunk.bounds.get("column"), "chunks": []})
            entry["chunks"].append([chunk.bounds.get("from"), chunk.bounds.get("to"), str(at)])
        if until.key() <= Lsn.parse(p0).key():
            return None
        return {"until": str(until), "tables": tables}

    @classmethod
    def handoff_filter(cls, config: Config, state: dict[str, Any]) -> LsnHandoffFilter:
        """The stream filter for a handoff state (it asks the server where sampled keys lie: module docstring)."""
        return LsnHandoffFilter(state, config)

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint | ChunkRead]]:
        """Read the chunk's range under HOLDLOCK, then the log's end with the range held; report it, then the rows."""
        db = _db(config)
        conn = odbc.connect(config, db, autocommit=False)
        try:
            inst = _instance(conn, config, chunk.extra["schema"], chunk.extra["name"])
            conn.commit()
            conn.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            statement, params = _select(db, inst.table, chunk)
            cur = conn.execute(statement, *params)
            fetch = config.get(msc.SNAPSHOT_FETCH_SIZE)
            raws: list[Any] = []
            order = result_order(cur.description, [c.name for c in inst.table.columns])
            while fetched := cur.fetchmany(fetch):
                raws += fetched if order is None else [[None if i is None else row[i] for i in order] for row in fetched]
            lsn = log_end(conn)
            conn.commit()
        finally:
            conn.close()
        yield [ChunkRead(chunk.table, chunk.index, {"lsn": lsn})]
        yield from _changes(config, db, inst.table, chunk, raws, lsn)


def _select(db: str, table: Table, chunk: Chunk) -> tuple[str, list[Any]]:
    """The chunk's SELECT (``WITH (HOLDLOCK)`` on the table unless an override SELECT reads it) and its parameters."""
    bounds = chunk.bounds
    cols = ", ".join(quote(c.name) for c in table.columns)
    held = f"{_table_sql(db, table)} WITH (HOLDLOCK)"
    if bounds.get("override"):  # run as written, its columns matched by name (cdc_sqlserver.snapshot_select)
        return bounds["override"], []
    parts, params = _range(table, bounds)
    return f"SELECT {cols} FROM {held}" + (" WHERE " + " AND ".join(parts) if parts else ""), params


def _range(table: Table, bounds: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """The predicates (ANDed) of a chunk's key range, with their parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if bounds.get("kind") == "keys":
        for edge, op in (("from", ">="), ("to", "<")):
            if bounds.get(edge) is not None:
                parts.append(f"{quote(bounds['column'])} {op} ?")
                params.append(bounds[edge])
    elif bounds.get("kind") == "keyset":
        for edge, negate in (("after", ""), ("upto", "NOT ")):
            if bounds.get(edge) is not None:
                text, values = key_greater(table, bounds["key"], bounds[edge])
                parts.append(negate + text)
                params += values
    return parts, params


def _changes(config: Config, db: str, table: Table, chunk: Chunk, raws: list[Any],
             lsn: str) -> Iterator[list[RawChange]]:
    """The chunk's rows as ``op: r`` changes with Debezium's ``source.snapshot`` markers."""
    first_table = chunk.extra.get("first_table", chunk.first_overall)
    last_table = chunk.extra.get("last_table", chunk.last_overall)
    source = source_block(config.get(common.TOPIC_PREFIX), db, time.time_ns() // 1000, "true", table.id.schema or "",
                          table.id.table, None, lsn, None)
    offset = snapshot_offset(lsn, False)
    count = len(raws)
    fetch = max(1, config.get(msc.SNAPSHOT_FETCH_SIZE))
    for start in range(0, count, fetch):
        batch: list[RawChange] = []
        for i in range(start, min(count, start + fetch)):
            marker = snapshot_marker(first_table, last_table, chunk.first and i == 0, chunk.last and i == count - 1)
            src = source if marker == "true" else {**source, "snapshot": marker}
            batch.append(RawChange(table, "r", None, list(raws[i]), src, offset))
        yield batch


class _Ranges:
    """One table's chunks: sorted lower bounds, upper bounds, read LSN keys."""

    def __init__(self, column: str | None, chunks: list[list[Any]]):
        self.column = column
        rows = sorted(chunks, key=lambda c: (c[0] is not None, c[0] if c[0] is not None else 0))
        self.lows = [float("-inf") if c[0] is None else c[0] for c in rows]
        self.highs = [c[1] for c in rows]
        self.lsns = [Lsn.parse(c[2]).key() for c in rows]
        self.index: dict[int, Any] = {}

    def columns(self) -> list[str]:
        """The columns ``lsn_of`` takes the values of."""
        return [] if self.column is None else [self.column]

    def lsn_of(self, values: tuple[Any, ...], at: bytes) -> bytes | None:
        """The read LSN of the chunk whose range holds the key ``values`` (None if none does)."""
        if self.column is None:
            return min(self.lsns)
        value = values[0]
        if not isinstance(value, int):
            return None
        i = bisect.bisect_right(self.lows, value) - 1
        if i < 0:
            return None
        hi = self.highs[i]
        return self.lsns[i] if hi is None or value < hi else None


class _SampledRanges:
    """A table split at sampled keys: the server places the keys changed in the handoff window (module docstring)."""

    def __init__(self, entry: dict[str, Any], config: Config | None):
        self.entry = entry
        self.config = config
        self.key: list[str] = list(entry["key"])
        self.lsns = [Lsn.parse(c[2]).key() for c in entry["chunks"]]
        self.index: dict[int, Any] = {}
        self._placed: dict[tuple[Any, ...], bytes] = {}
        #: The change table's rows up to this LSN were placed (None: none yet).
        self._covered: bytes | None = None

    def columns(self) -> list[str]:
        """The key columns."""
        return self.key

    def lsn_of(self, values: tuple[Any, ...], at: bytes) -> bytes | None:
        """The read LSN of the chunk holding the key ``values`` of a change committed at ``at`` (None: none)."""
        if self._covered is None or (at > self._covered and self._covered < max(self.lsns)):
            self._place()
        return self._placed.get(values)

    def _place(self) -> None:
        """Place the keys of the change table's rows in ``(p0 or what was placed, last read LSN]``.

        The capture job may not have written them all yet (the read LSNs are the log's end, not captured
        LSNs): what it wrote up to its max LSN, read first, is placed, and a change above that places again.
        """
        if self.config is None:
            raise ConnectorError("the SQL Server handoff filter needs the connector's configuration")
        entry = self.entry
        low = self._covered or Lsn.parse(entry["from"]).key() or bytes(10)  # p0 NULL: nothing captured then
        high = max(self.lsns)
        conn = odbc.connect(self.config, _db(self.config))
        try:
            self._covered = max(low, Lsn.parse(_max_lsn(conn)).key())
            inst = _instance(conn, self.config, entry["schema"], entry["name"])
            cols = ", ".join(quote(k) for k in self.key)
            window = f"SELECT {cols} FROM {inst.change_table} WHERE [__$start_lsn] > ? AND [__$start_lsn] <= ?"
            for (after, upto, _), lsn in zip(entry["chunks"], self.lsns, strict=True):
                parts, params = _range(inst.table, {"kind": "keyset", "key": self.key, "after": after, "upto": upto})
                text = window + "".join(f" AND {p}" for p in parts)
                for row in conn.execute(text, low, high, *params).fetchall():
                    self._placed[tuple(row)] = lsn
        finally:
            conn.close()


class LsnHandoffFilter:
    """Drops the streamed changes a chunk's rows contain: commit LSN at most the chunk's read LSN (module docstring)."""

    def __init__(self, state: dict[str, Any], config: Config | None = None):
        """From a state made by ``SqlServerSnapshotChunks.handoff`` (``config``: to place sampled keys)."""
        self._state = copy.deepcopy(state)
        self.version = 0
        self._until = Lsn.parse(state["until"]).key()
        self._tables: dict[str, _Ranges | _SampledRanges] = {
            name: _SampledRanges(t, config) if t.get("key") else _Ranges(t["column"], t["chunks"])
            for name, t in state["tables"].items()}
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
        index = ranges.index.get(id(change.table))
        if index is None:
            names = [c.name for c in change.table.columns]
            index = ranges.index[id(change.table)] = [names.index(c) for c in ranges.columns()]
        before = None if change.before is None else ranges.lsn_of(tuple(change.before[i] for i in index), at)
        after = None if change.after is None else ranges.lsn_of(tuple(change.after[i] for i in index), at)
        drop_before = before is not None and at <= before
        drop_after = after is not None and at <= after
        if change.op != "u" or change.before is None or change.after is None or \
                all(change.before[i] == change.after[i] for i in index):
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
