"""Db2's chunked snapshot (for cdc-spark): the captured tables held in SHARE mode, read in key ranges by any process.

Db2 cannot share one transaction's snapshot between processes, so ``open`` holds the tables still
instead: one connection locks every captured table ``IN SHARE MODE`` (readers go on, writers wait)
and keeps the locks until ``close``. Chunk readers, in any process, read committed rows of a key
range on connections of their own; while the locks are held those rows do not change, so every
chunk shows the tables as they were when the locks were granted.

The handoff is exact (every change once, in the chunks or in the stream), found through SQL
Replication's own signal table rather than the highest synchpoint: a synchpoint read under the
locks lags the log (asncap writes a transaction's CD rows some time after its commit), so a
change committed just before the lock would be in the chunks and streamed again. Instead, once
the locks are granted, a second connection inserts and commits a ``USER`` signal into
``<cdc.control.schema>.IBMSNAP_SIGNAL``; asncap, reading the log, marks it ``C`` and sets its
``SIGNAL_LSN`` to the log sequence number of the signal's commit. While the SHARE locks are held
no transaction changing a captured table can commit, so every change to them committed before
the signal (all in the chunks) has a commit sequence below ``SIGNAL_LSN``, and every later one
(none in the chunks) commits after ``close`` and lies above it. Streaming resumes after
``SIGNAL_LSN`` (``plan.resume_offset``). Assumptions about real Db2, verified only on the
stand-in: ``LOCK TABLE ... IN SHARE MODE`` waits for writers holding the table and blocks new
ones until commit (Db2's documented S table lock); asncap processes USER signals as the SQL
Replication reference describes (state ``C``, ``SIGNAL_LSN`` the commit record's log sequence
number, the same form as ``IBMSNAP_COMMITSEQ``, both VARCHAR(16) FOR BIT DATA in Debezium's
``asncdctables.sql``); the user may insert into ``IBMSNAP_SIGNAL`` (asncap prunes it after
``SIGNAL_LIMIT``).

Readers tell the holder nothing through Db2 (there is no NOTIFY): ``observes_reads`` is False, so
a runtime holding the snapshot for readers elsewhere (cdc-spark's batch reads) must learn that
every chunk was read through a channel of its own before it calls ``close``. Tables without a
primary key are one chunk each.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from cdc_core.config import Config
from cdc_core.events import Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.relational import Table
from cdc_core.snapshot.markers import snapshot_marker
from cdc_core.spi.chunks import Chunk, SnapshotPlan
from cdc_core.spi.connector import ConnectorContext
from cdc_db2 import config as dbc
from cdc_db2 import driver
from cdc_db2.catalog import CaptureTable, quote
from cdc_db2.incremental import key_after, key_upto
from cdc_db2.signal_lsn import signal_lsn
from cdc_db2.snapshot import snapshot_offset, table_name
from cdc_db2.source import source_block
from cdc_db2.timestamps import select_list

_BATCH = 2048
#: How long ``open`` waits for asncap to complete its USER signal (asncap's commit interval is 30 s by default).
SIGNAL_TIMEOUT_S = 300.0


class Db2SnapshotChunks:
    """The SnapshotChunks capability of the Db2 connector (see ``cdc_core.spi.chunks``)."""

    #: ``wait_read`` cannot know when readers are done: the runtime must tell before ``close`` (module docstring).
    observes_reads = False

    def __init__(self, config: Config, log: Any):
        """No I/O."""
        self.config = config
        self.log = log
        self._conn: Any = None

    def _connector(self) -> Any:
        from cdc_db2.connector import Db2Connector

        log = connector_logger("cdc.db2.chunks", "db2", str(self.config.get("topic.prefix")), "snapshot")
        return Db2Connector(self.config, ConnectorContext(log=log))

    def _tables(self, tables: list[str] | None) -> tuple[Any, list[CaptureTable]]:
        """A started connector (its checks run) and its captured tables, limited to ``tables``."""
        connector = self._connector()
        connector.start(None)
        captured = [t for t in connector._tables if tables is None or t.table.id.identifier in tables]
        return connector, captured

    def needs_snapshot(self, offset: dict[str, Any] | None) -> bool:
        """As the connector decides: ``snapshot.mode`` and whether the last run completed its snapshot."""
        mode = self.config.get(dbc.SNAPSHOT_MODE)
        if mode == "no_data":
            return False
        return offset is None or bool(offset.get("snapshot") and not offset.get("snapshot_completed")) \
            or mode == "always"

    def describe(self, tables: list[str] | None) -> list[Table]:
        """The captured tables' current definitions."""
        connector, captured = self._tables(tables)
        connector.close()
        return [t.table for t in captured]

    def open(self, *, for_streaming: bool, tables: list[str] | None, chunk_rows: int) -> SnapshotPlan:
        """Lock the tables in SHARE mode, find the handoff through a USER signal (module docstring), plan key-range chunks."""
        connector, captured = self._tables(tables)
        connector.close()
        conn = self._conn = driver.connect(self.config)
        conn.set_autocommit(False)
        cur = conn.cursor()
        for t in captured:
            cur.execute(f"LOCK TABLE {table_name(t)} IN SHARE MODE")
        snapshot_id = uuid.uuid4().hex
        try:
            lsn = self._signal_lsn(snapshot_id)
        except BaseException:
            self.close()
            raise
        chunks: list[Chunk] = []
        for t in captured:
            chunks += self._plan(cur, t.table, snapshot_id, lsn, max(1, chunk_rows))
        if chunks:
            chunks[0].first_overall = True
            chunks[-1].last_overall = True
        resume = snapshot_offset(lsn, True) if for_streaming else None
        return SnapshotPlan(snapshot_id, chunks, resume, [t.table for t in captured])

    def _signal_lsn(self, snapshot_id: str) -> str:
        """Insert a USER signal (committed after the locks were granted) and wait for asncap's SIGNAL_LSN of it."""
        conn = driver.connect(self.config)
        try:
            return signal_lsn(conn, self.config.get(dbc.CONTROL_SCHEMA), snapshot_id, SIGNAL_TIMEOUT_S)
        finally:
            conn.close()

    def _plan(self, cur: Any, table: Table, snapshot_id: str, lsn: str, chunk_rows: int) -> list[Chunk]:
        """Chunks of about ``chunk_rows`` rows, bounded by keys sampled every ``chunk_rows``-th row.

        The last row is never a bound: the last chunk (open above) holds it, so the ``last`` marker has a row.
        """
        key = table.primary_key
        bounds: list[list[Any]] = []
        if key:
            keys = ", ".join(quote(k) for k in key)
            cur.execute(f"SELECT {keys} FROM (SELECT {keys}, ROW_NUMBER() OVER (ORDER BY {keys}) AS CDC_RN, "
                        f"COUNT(*) OVER () AS CDC_N FROM {quote(table.id.schema or '')}.{quote(table.id.table)}) "
                        f"AS CDC_T WHERE MOD(CDC_RN, {int(chunk_rows)}) = 0 AND CDC_RN < CDC_N ORDER BY {keys}")
            bounds = [list(r) for r in cur.fetchall()]
        ranges = [(bounds[i - 1] if i else None, bounds[i] if i < len(bounds) else None) for i in range(len(bounds) + 1)]
        out = []
        for i, (after, upto) in enumerate(ranges):
            out.append(Chunk(table.id.identifier, i, snapshot_id, {"after": after, "upto": upto, "key": key},
                             first=i == 0, last=i == len(ranges) - 1, extra={"commit_lsn": lsn}))
        return out

    def wait_read(self, plan: SnapshotPlan, timeout: float) -> int:
        """Chunk readers report nothing to the holder through Db2 (``observes_reads``): 0 at once."""
        return 0

    def close(self) -> None:
        """Commit the holding transaction: the locks go."""
        if self._conn is not None:
            try:
                self._conn.commit()
            finally:
                self._conn.close()
                self._conn = None

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint]]:
        """The chunk's rows, ``op: r`` with the snapshot's markers and offsets."""
        self = cls(config, None)
        connector, captured = self._tables([chunk.table])
        connector.close()
        table = captured[0].table
        key, after, upto = chunk.bounds["key"], chunk.bounds["after"], chunk.bounds["upto"]
        parts, params = [], []
        if after is not None:
            text, values = key_after(key, after)
            parts.append(text)
            params += values
        if upto is not None:
            text, values = key_upto(key, upto)
            parts.append(text)
            params += values
        where = f" WHERE {' AND '.join(parts)}" if parts else ""
        order = f" ORDER BY {', '.join(quote(k) for k in key)}" if key else ""
        conn = driver.connect(config)
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT {select_list(table.columns)} FROM {table_name(captured[0])}"
                        f"{where}{order}", tuple(params))
            rows = cur.fetchall()
        finally:
            conn.close()
        lsn = chunk.extra["commit_lsn"]
        ts_us = time.time_ns() // 1000
        batch: list[RawChange | Checkpoint] = []
        for i, row in enumerate(rows):
            marker = snapshot_marker(chunk.first_overall, chunk.last_overall, chunk.first and i == 0,
                                     chunk.last and i == len(rows) - 1)
            source = source_block(str(config.get("topic.prefix")), str(config.get(dbc.DBNAME)), ts_us, marker,
                                  table.id.schema or "", table.id.table, None, lsn)
            batch.append(RawChange(table, "r", None, list(row), source, snapshot_offset(lsn, False)))
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


#: Found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = Db2SnapshotChunks
