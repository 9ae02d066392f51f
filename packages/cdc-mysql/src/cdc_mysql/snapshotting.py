"""Taking a snapshot: the lock, the consistent-snapshot transaction, the position, the schemas, then the rows.

Workflow (Debezium's; the lock comes from ``snapshot.locking.mode``, see ``snapshot_locks``):

1. lock: the global read lock (or table locks where it is not permitted), or none;
2. ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` at REPEATABLE READ (under table locks the locks
   themselves keep the tables still, as a transaction would release them);
3. read the binlog position and GTID set: nothing commits in between, so streaming from there after
   the scan neither loses nor repeats a change;
4. read the table definitions into the history (schema change events for captured tables);
5. ``minimal``: unlock; ``extended`` and table locks keep the lock to the end;
6. read each captured table (``snapshot.include.collection.list``) with the SnapshotQuery's SELECT;
   every ``r`` event carries the step-3 position;
7. commit, unlock, and checkpoint the position with the snapshot marked complete.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from cdc_core.config import common
from cdc_core.delays import wait_before
from cdc_core.events import ChangeRecord, Checkpoint
from cdc_core.filters import snapshot_order
from cdc_core.snapshot.processes import available as processes_available
from cdc_core.relational import TableId as CoreTableId

from cdc_mysql import config as myc
from cdc_mysql.catalog import Catalog, quote
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.metrics import snapshot_lock_metrics
from cdc_mysql.model import TableChange, TableId
from cdc_mysql.schema_changes import schema_change_record
from cdc_mysql.parallel_snapshot import ParallelSnapshotReader
from cdc_mysql.process_snapshot import ProcessSnapshotReader
from cdc_mysql.snapshot import SnapshotReader
from cdc_mysql.snapshot_locks import SnapshotLocks, quote_table
from cdc_mysql.snapshot_plan import SnapshotPlan
from cdc_mysql.source import DEBEZIUM_VERSION


class Snapshotting:
    """The connector's snapshot (a mixin: it uses the connector's config, model, history, locks and queries)."""

    #: Set by the engine when it writes into a sink: with ``snapshot.max.threads`` above 1 the rows are read,
    #: converted and serialized in worker processes (``cdc_mysql.process_snapshot``).
    worker_pipeline: Any = None

    def _in_processes(self) -> bool:
        """Whether worker processes read the snapshot's rows (``snapshot.max.threads`` > 1, into a sink, fork)."""
        if self.config.get(myc.SNAPSHOT_MAX_THREADS) <= 1:
            return False
        why = "the records go to a handler, not a sink" if self.worker_pipeline is None else processes_available()
        if why is not None:
            self.log.info("snapshot.max.threads: the rows are read in this process (%s)", why)
        return why is None

    def _captured_tables(self, catalog: Catalog) -> tuple[list[TableId], list[TableId]]:
        """(tables to record in the history, tables to capture)."""
        only_captured = self.config.get(myc.STORE_ONLY_CAPTURED_TABLES)
        only_captured_dbs = self.config.get(myc.STORE_ONLY_CAPTURED_DATABASES)
        record, capture = [], []
        for db in catalog.databases():
            if db.lower() in myc.BUILTIN_DATABASES:
                continue
            if only_captured_dbs and not self.filter.includes_database(db):
                continue
            for name in catalog.tables(db):
                tid = TableId(db, name)
                captured = self.filter.includes(tid)
                if captured:
                    capture.append(tid)
                if captured or not only_captured or tid == self.signal_table:  # signal rows are decoded too
                    record.append(tid)
        return record, capture

    def _snapshot(self, plan: SnapshotPlan, resume: dict[str, Any] | None) -> Iterator[list[Any]]:
        """The snapshot between its STARTED and its COMPLETED (or ABORTED) notification (a schema-only one has no
        table notifications); returns the offset streaming starts from (None if stopped)."""
        self._notices.started()
        done = None
        try:
            done = yield from self._snapshot_at(plan, resume)
        finally:
            if done is not None:
                self._notices.completed()
            else:
                self._notices.aborted()
        return done

    def _snapshot_at(self, plan: SnapshotPlan, resume: dict[str, Any] | None) -> Iterator[list[Any]]:
        """Lock, read position and schemas, scan; returns the offset streaming starts from (None if stopped)."""
        log = self.log.with_context("snapshot")
        if plan.data and wait_before("snapshot", self.config, self._stop, log):
            return None
        conn = self._connect()
        lock_metrics = snapshot_lock_metrics(self.metrics)
        workers: list[Any] = []
        try:
            catalog = Catalog(conn)
            with conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            record_ids, capture_ids = self._captured_tables(catalog)
            locks = SnapshotLocks(conn, self.snapshot_lock, self.config.get(myc.SNAPSHOT_LOCK_TIMEOUT_MS), log,
                                  lock_metrics)
            if plan.data or resume is None:
                locks.acquire([CoreTableId(t.database, None, t.table) for t in capture_ids])
            if not locks.table_locks:
                with conn.cursor() as cur:
                    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            file, pos, gtids = catalog.binlog_position()
            position = {"file": file, "pos": pos, "event": 0, "row": 0, "gtids": gtids or None}
            if plan.data:
                workers = self._snapshot_workers(locks, len(capture_ids), log)
            if resume is not None:
                position = {k: resume.get(k) for k in ("file", "pos", "event", "row", "gtids")}
            log.info("snapshot at %s:%s (gtids %s): %d tables captured, %d recorded", position["file"],
                     position["pos"], position["gtids"], len(capture_ids), len(record_ids))
            records = self._snapshot_schema(catalog, position, record_ids, capture_ids)
            locks.after_schema()
            if records:
                yield records
            if plan.data and not self._stop.is_set():
                completed = yield from self._snapshot_rows(conn, catalog, position, capture_ids, log, workers)
                if not completed:
                    self.snapshotter.snapshot_aborted()
                    return None
            conn.commit()
            locks.release()
        finally:
            for worker in workers:
                worker.close()
            conn.close()  # also releases any lock still held (a stop or a failure)
            if lock_metrics is not None:
                lock_metrics.holding_global_lock = False
        done = {**position, "ts_sec": int(time.time())}
        # Debezium's snapshot (schema only too) ends with a heartbeat whatever the interval, when heartbeats are on
        # (2.7.4's RelationalSnapshotChangeEventSource.doExecute: dispatcher.alwaysDispatchHeartbeatEvent).
        yield [Checkpoint(done, heartbeat=True)]
        if plan.data:
            self.snapshotter.snapshot_completed()
        return done

    def _snapshot_workers(self, locks: SnapshotLocks, tables: int, log: Any) -> list[Any]:
        """``snapshot.max.threads``: further connections whose consistent snapshots start while the global
        read lock is held, so they see exactly the state at the snapshot's position (none without that lock:
        ``none``, table locks, Percona's backup lock, under which InnoDB still commits)."""
        processes = self._in_processes()
        # Worker processes: one connection each (this process keeps its own); threads: this one reads too.
        threads = self.config.get(myc.SNAPSHOT_MAX_THREADS) + 1 if processes else min(
            self.config.get(myc.SNAPSHOT_MAX_THREADS), tables)
        if threads <= 1:
            return []
        if not locks.commits_blocked:
            log.info("snapshot.max.threads=%d: reading the tables on one connection, since without the global read "
                     "lock (snapshot.locking.mode=%s) other connections cannot share the snapshot's position",
                     self.config.get(myc.SNAPSHOT_MAX_THREADS), self.config.get(myc.SNAPSHOT_LOCKING_MODE))
            return []
        workers = []
        try:
            for _ in range(threads - 1):
                worker = self._connect()
                workers.append(worker)
                with worker.cursor() as cur:
                    cur.execute("SET SESSION time_zone = '+00:00'")
                    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        except BaseException:
            for worker in workers:
                worker.close()
            raise
        if not processes:
            log.info("snapshot.max.threads: reading %d tables at once", threads)
        return workers

    def _snapshot_rows(self, conn: Any, catalog: Catalog, position: dict[str, Any], capture_ids: list[TableId],
                       log: Any, workers: list[Any] = ()) -> Iterator[list[Any]]:
        """Read the captured tables' rows; returns True if every table was read."""
        include = self.config.get(myc.SNAPSHOT_INCLUDE_COLLECTIONS)
        # The signal table's rows are never read, even when table.include.list names it (Debezium's
        # determineSnapshotSelect; MySqlConnector.signal_table_captured).
        signal = getattr(self, "signal_table", None)
        ids = [t for t in capture_ids if t in self.model.tables and t != signal
               and (not include or any(p.fullmatch(str(t)) for p in include))]
        # ... but counted by the snapshot metrics, with 0 rows, included or not (Debezium's table filter adds it;
        # SnapshotMetrics.snapshot_started's ``unread``).
        unread = (str(signal),) if signal is not None and signal in self.model.tables and (
            not include or any(p.fullmatch(str(signal)) for p in include)) else ()
        ids = snapshot_order(ids, self.config.get(common.TABLE_INCLUDE))
        estimates = catalog.row_estimates(ids)
        order = self.config.get(myc.SNAPSHOT_TABLES_ORDER)
        if order != "disabled":
            ids.sort(key=lambda t: estimates.get(str(t), 0), reverse=order == "descending")
        tables = []
        for tid in ids:
            definition = self.model.tables[tid]
            columns = [quote(c.name) for c in definition.columns]
            select = self.snapshot_query.snapshot_query(CoreTableId(tid.database, None, tid.table), columns, quote_table)
            if select is not None:
                tables.append((self.versions.table(definition), definition, select))
        args = (self.flavor.name, self.server, self._server_id, position, self.config.get(myc.SNAPSHOT_FETCH_SIZE),
                log, self.config.get(myc.MIN_ROW_COUNT_TO_STREAM), estimates)
        if workers and self.worker_pipeline is not None and len(workers) == self.config.get(myc.SNAPSHOT_MAX_THREADS):
            reader = self._snapshot_reader = ProcessSnapshotReader(conn, workers, self.worker_pipeline, *args)
        elif workers and len(tables) > 1:
            reader = self._snapshot_reader = ParallelSnapshotReader([conn, *workers], *args)
        else:
            reader = self._snapshot_reader = SnapshotReader(conn, *args)
        names = [f"{d.id.database}.{d.id.table}" for _, d, _ in tables]
        # Debezium's notifyTableInProgress names the tables it reads; its TABLE_SCAN_COMPLETED names the captured
        # ones (the signal table among them).
        reader.table_done = self._notices.announce(names, names + list(unread))
        metrics = self.metrics.snapshot if self.metrics is not None else None
        if metrics is not None:
            metrics.snapshot_started({str(d.id): estimates.get(str(d.id), 0) for _, d, _ in tables}, unread)
            reader.metrics = metrics
        completed = False
        try:
            yield from reader.read(tables)
            completed = not self._stop.is_set()
        finally:
            self._snapshot_reader = None
            if metrics is not None and metrics.running:
                metrics.snapshot_ended(completed)
        return completed

    def _snapshot_schema(self, catalog: Catalog, position: dict[str, Any], record_ids: list[TableId],
                         capture_ids: list[TableId]) -> list[ChangeRecord]:
        """Read every recorded table's definition into a fresh model; the history records and schema change events.

        The statements are Debezium's (BinlogSnapshotChangeEventSource.readTableStructure), in its
        order: the server charset's ``SET``, a ``DROP TABLE IF EXISTS`` per table, then per database
        ``DROP DATABASE IF EXISTS``, ``CREATE DATABASE`` with its charset and collation, ``USE`` and
        its tables' ``SHOW CREATE TABLE``. Each is a history record and (with include.schema.changes)
        an event on the schema change topic, for every table the history records: Debezium sends
        them for tables it does not capture too unless schema.history.internal.store.only.captured.tables.ddl.
        """
        model = SchemaModel(keep_comments=self.config.get(myc.INCLUDE_SCHEMA_COMMENTS))
        charsets = catalog.database_charsets()
        model.database_charsets.update(charsets)
        hist_position = {**position, "snapshot": True}
        include = self.config.get(myc.INCLUDE_SCHEMA_CHANGES)
        records: list[ChangeRecord] = []

        def emit(db: str, table: str | None, ddl: str, changes: list[TableChange]) -> None:
            self._history.record(hist_position, db, ddl, changes)
            if include:
                source = self._ddl_source(db, table, position, "true")
                records.append(schema_change_record(self.flavor, self.source_schema, self.schema_change_topic, db, ddl, changes,
                                                    source, None, self.partition()))

        emit("", None, catalog.charset_statement(), [])
        for tid in record_ids:
            emit(tid.database, tid.table, f"DROP TABLE IF EXISTS {quote(tid.database)}.{quote(tid.table)}",
                 [TableChange("DROP", tid, None)])
        locales = catalog.database_locales()
        for db in dict.fromkeys(t.database for t in record_ids):
            emit(db, None, f"DROP DATABASE IF EXISTS {quote(db)}", [])
            charset, collation = locales.get(db, (None, None))
            emit(db, None, f"CREATE DATABASE {quote(db)}" + (f" CHARSET {charset}" if charset else "")
                 + (f" COLLATE {collation}" if collation else ""), [])
            emit(db, None, f"USE {quote(db)}", [])
            for tid in (t for t in record_ids if t.database == db):
                change = catalog.read_table(model, tid)
                emit(tid.database, tid.table, catalog.show_create_table(tid), [change])
        self.model = model
        return records

    def _ddl_source(self, db: str, table: str | None, position: dict[str, Any], snapshot: str) -> dict[str, Any]:
        ts = int(time.time() * 1000)
        return {"version": DEBEZIUM_VERSION, "connector": self.flavor.name, "name": self.server, "ts_ms": ts,
                "snapshot": snapshot, "db": db, "sequence": None, "ts_us": ts * 1000, "ts_ns": ts * 1_000_000,
                "table": table, "server_id": 0, "gtid": None, "file": position["file"],
                "pos": position["pos"], "row": 0, "thread": None, "query": None}


def snapshot_problems(config: Any) -> list[str]:
    """Snapshot properties that cannot work together (no I/O)."""
    problems = []
    for name in config.get(myc.SNAPSHOT_SELECT_OVERRIDES) or []:
        if not config.get(f"snapshot.select.statement.overrides.{name}"):
            problems.append(f"snapshot.select.statement.overrides: names {name!r}, but "
                            f"snapshot.select.statement.overrides.{name} is not set")
    return problems

