"""The initial snapshot: every captured table read with COPY inside the slot's exported snapshot.

``snapshot.max.threads`` above 1: further connections import the same exported snapshot
(``SET TRANSACTION SNAPSHOT``), so every table is read at the slot's consistent point whichever
connection reads it; one thread reads one table at a time (each table's rows keep their order), and
the markers are Debezium's for several threads (``first_in_data_collection`` and
``last_in_data_collection`` per table, no ``first``, ``last`` on the very last record).
"""

from __future__ import annotations

import queue
import threading
import time
from contextlib import contextmanager
from collections.abc import Callable, Iterator
from functools import partial
from itertools import repeat

import psycopg
from psycopg import sql

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_core.snapshot.parallel import read_in_parallel
from cdc_postgres.copyread import read_blocks
from cdc_postgres.copytext import parse_block
from cdc_postgres.query_timeout import FirstRowDeadline, timeout_error
from cdc_postgres.source import sequence, source_block

_new_change = partial(tuple.__new__, RawChange)
_READ = repeat("r")
_NONE = repeat(None)


class SnapshotReader:
    """Reads tables in one REPEATABLE READ transaction that uses an exported snapshot.

    The slot created with that snapshot starts streaming exactly at the snapshot's consistent
    point, so nothing is lost or duplicated at the handoff.
    """

    def __init__(self, conn: psycopg.Connection, server: str, db: str, consistent_point: int, fetch_size: int, log,
                 threads: int = 1, connect: Callable[[], psycopg.Connection] | None = None):
        self.conn = conn
        #: ``snapshot.max.threads`` and how to open the further connections (None: one connection).
        self.threads = threads
        self.connect = connect
        self.snapshot_name: str | None = None
        self.server = server
        self.db = db
        self.lsn = consistent_point
        self.fetch_size = fetch_size
        self.log = log
        self.tx_id: int | None = None
        self.stopped = False
        #: ``SnapshotMetrics`` to report tables to, if any.
        self.metrics = None
        #: ``database.query.timeout.ms``: the longest wait for a table's first rows (0: none).
        self.query_timeout_ms = 0
        #: The engine's builder, transforms and serializer when it writes into a sink: with ``threads`` above 1
        #: the chunks are read and serialized in worker processes (``cdc_postgres.process_snapshot``).
        self.pipeline = None
        #: Called with each table's identifier and rows once it is read (the initial snapshot's notifications).
        self.table_done: Callable[[str, int], None] = lambda name, rows: None

    def begin(self, snapshot_name: str | None) -> None:
        """Open the snapshot transaction, on the exported snapshot if there is one."""
        self.snapshot_name = snapshot_name
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        if snapshot_name:
            self.conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot_name)))
        row = self.conn.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())").fetchone()
        self.tx_id = int(row[0]) if row else None

    def _in_processes(self) -> bool:
        """Whether worker processes read the snapshot; if not, the log says why (once per snapshot)."""
        from cdc_core.snapshot.processes import available

        why = "the records go to a handler, not a sink" if self.pipeline is None else available()
        if why is not None:
            self.log.info("snapshot.max.threads=%d: the snapshot is read in this process (%s)", self.threads, why)
        return why is None

    def end(self) -> None:
        """Close the snapshot transaction."""
        self.conn.execute("COMMIT")

    def _offset(self, last: bool) -> dict:
        return {"snapshot": True, "last_snapshot_record": last, "lsn": self.lsn, "txId": self.tx_id,
                "ts_usec": time.time_ns() // 1000}

    def lock(self, statements: list[str], timeout_ms: int) -> None:
        """Take the snapshot's table locks, waiting at most ``timeout_ms`` for each."""
        if not statements:
            return
        self.conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{int(timeout_ms)}ms")))
        for statement in statements:
            try:
                self.conn.execute(statement)
            except psycopg.errors.LockNotAvailable:
                raise ConnectorError(
                    f"could not lock a table for the snapshot within snapshot.lock.timeout.ms={timeout_ms} "
                    f"({statement}); another session holds a conflicting lock"
                ) from None

    def read(self, tables: list[tuple[Table, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield batches of ``op: r`` changes, table by table, each read with its SELECT; the last batch
        ends with the completion checkpoint.

        ``source.snapshot`` is ``first`` for the first record, ``first_in_data_collection`` /
        ``last_in_data_collection`` at each table's edges, ``last`` for the very last, ``true`` otherwise.
        """
        if self.threads > 1 and self.connect is not None and self.snapshot_name and self._in_processes():
            from cdc_postgres.process_snapshot import read_in_processes

            yield from read_in_processes(self, tables, self.pipeline)
            return
        if self.threads > 1 and self.connect is not None and self.snapshot_name and len(tables) > 1:
            yield from self._read_parallel(tables)
            return
        seq = sequence(None, self.lsn)
        if self.query_timeout_ms:
            # A COPY is one statement however large the table: the session's statement_timeout would end
            # the read of a large table; only the wait for its first rows is limited (FirstRowDeadline).
            self.conn.execute("SET LOCAL statement_timeout = 0")
        held: RawChange | None = None  # the latest row, held back until we know whether it is the last
        first_overall = True
        for table, select in tables:
            if self.stopped:
                return
            started = time.monotonic()
            ts_us = time.time_ns() // 1000
            schema, name = table.id.schema or "", table.id.table
            # Rows in the middle of a table share one source block and one offset: they are never changed.
            source = source_block(self.server, self.db, ts_us, "true", schema, name, self.tx_id, self.lsn, seq)
            offset = self._offset(False)
            rows = 0
            query = sql.SQL("COPY ({}) TO STDOUT").format(sql.SQL(select))
            deadline = FirstRowDeadline(self.conn, self.query_timeout_ms)
            with self.conn.cursor() as cur, _refusal_named(table, select), \
                    self._first_rows(table, deadline), cur.copy(query) as copy:
                for block in read_blocks(copy, self.fetch_size):
                    deadline.arrived()
                    # One RawChange per row, made by tuple.__new__ in C (no Python call per row).
                    batch = list(map(_new_change, zip(
                        repeat(table), _READ, _NONE, parse_block(block), repeat(source), repeat(offset), _NONE, _NONE)))
                    if rows == 0:
                        marker = "first" if first_overall else "first_in_data_collection"
                        batch[0] = batch[0]._replace(source={**source, "snapshot": marker})
                        first_overall = False
                    rows += len(batch)
                    last = batch.pop()
                    if held is not None:
                        batch.insert(0, held)
                    held = last
                    if batch:
                        yield batch
                        if self.stopped:
                            return
            deadline.arrived()
            # Debezium's precedence: last, first, last_in_data_collection, first_in_data_collection, true.
            if held is not None and rows and held.source["snapshot"] != "first":
                held = held._replace(source={**held.source, "snapshot": "last_in_data_collection"})
            self.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started)
            self.table_done(table.id.identifier, rows)
            if self.metrics is not None:
                self.metrics.table_completed(table.id.identifier)
        batch = []
        if held is not None:
            batch.append(held._replace(source={**held.source, "snapshot": "last"}, offset=self._offset(True)))
        batch.append(self._end())
        yield batch

    def _end(self) -> Checkpoint:
        """The snapshot's end: its offset, with the heartbeat Debezium always sends there (when heartbeats are on:
        2.7.4's RelationalSnapshotChangeEventSource.doExecute ends with dispatcher.alwaysDispatchHeartbeatEvent)."""
        return Checkpoint({"lsn": self.lsn, "lsn_commit": self.lsn, "lsn_proc": None, "txId": self.tx_id,
                           "ts_usec": time.time_ns() // 1000}, heartbeat=True)

    @contextmanager
    def _first_rows(self, table: Table, deadline: FirstRowDeadline) -> Iterator[None]:
        """A COPY cancelled by ``deadline`` as the error naming ``database.query.timeout.ms``."""
        try:
            yield
        except psycopg.errors.QueryCanceled:
            if not deadline.fired:
                raise
            raise timeout_error(self.query_timeout_ms, self.conn.info.host + ":" + str(self.conn.info.port),
                                f"the snapshot SELECT of {table.id} (no row yet)") from None
        finally:
            deadline.arrived()

    def _read_parallel(self, tables: list[tuple[Table, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """``read`` with ``threads`` connections on the same exported snapshot, one table per thread at a time."""
        assert self.connect is not None
        conns = [self.conn]
        try:
            for _ in range(min(self.threads, len(tables)) - 1):
                conn = self.connect()
                conns.append(conn)
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(self.snapshot_name)))
            if self.query_timeout_ms:  # as in ``read``: only the wait for a table's first rows is limited
                for conn in conns:
                    conn.execute("SET LOCAL statement_timeout = 0")
            self.log.info("snapshot.max.threads: reading %d tables at once", len(conns))
            held = yield from read_in_parallel(conns, tables, lambda c, item, out: self._read_table(c, *item, out),
                                               lambda: self.stopped, self._stop, queue_per_thread=8)
            if self.stopped:
                return
            batch = []
            if held is not None:
                batch.append(held._replace(source={**held.source, "snapshot": "last"}, offset=self._offset(True)))
            batch.append(self._end())
            yield batch
        finally:
            for conn in conns[1:]:
                conn.close()

    def _stop(self) -> None:
        self.stopped = True

    def _read_table(self, conn: psycopg.Connection, table: Table, select: str, out: queue.Queue) -> None:
        """One table's rows onto ``out`` in batches, first and last marked ``*_in_data_collection``."""
        started = time.monotonic()
        source = source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                              table.id.table, self.tx_id, self.lsn, sequence(None, self.lsn))
        offset = self._offset(False)
        rows, prev = 0, None
        query = sql.SQL("COPY ({}) TO STDOUT").format(sql.SQL(select))
        deadline = FirstRowDeadline(conn, self.query_timeout_ms)
        with conn.cursor() as cur, _refusal_named(table, select), self._first_rows(table, deadline), \
                cur.copy(query) as copy:
            for block in read_blocks(copy, self.fetch_size):
                deadline.arrived()
                batch = list(map(_new_change, zip(
                    repeat(table), _READ, _NONE, parse_block(block), repeat(source), repeat(offset), _NONE, _NONE)))
                if not batch:
                    continue
                if rows == 0:
                    batch[0] = batch[0]._replace(source={**source, "snapshot": "first_in_data_collection"})
                rows += len(batch)
                if prev is not None:
                    batch.insert(0, prev)
                prev = batch.pop()
                if batch:
                    out.put(batch)
                if self.stopped:
                    return
        if prev is not None:  # Debezium's precedence without first/last tables: last_in_ over first_in_
            out.put([prev._replace(source={**prev.source, "snapshot": "last_in_data_collection"})])
        self.log.info("snapshot of %s: %d rows in %.1fs (%s)", table.id, rows, time.monotonic() - started,
                      threading.current_thread().name)
        self.table_done(table.id.identifier, rows)
        if self.metrics is not None:
            self.metrics.table_completed(table.id.identifier)


@contextmanager
def _refusal_named(table: Table, select: str) -> Iterator[None]:
    """A server's refusal of a table's snapshot SELECT (an override or a custom query) as one line naming both."""
    try:
        yield
    except psycopg.OperationalError:
        raise  # the connection or the server, not the statement: retried
    except psycopg.Error as e:
        line = " ".join(select.split())
        excerpt = line if len(line) <= 120 else line[:117] + "..."
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ConnectorError(
            f"the snapshot of {table.id} failed: the server refused its SELECT ({excerpt!r}): {reason}; check "
            f"snapshot.select.statement.overrides.{table.id} (or the custom snapshot query)") from None
