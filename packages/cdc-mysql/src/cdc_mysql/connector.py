"""The MySQL connector (and, through ``Flavor``, the MariaDB one): checks, snapshot, binlog streaming, DDL."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pymysql

from cdc_core.config import Config, Fields
from cdc_core.config import common
from cdc_core.config.config import exclusive
from cdc_core.errors import ConnectorError, RetriableError
from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.schema import Schema
from cdc_core.spi.connector import ConnectorContext

from cdc_mysql import config as myc
from cdc_mysql import snapshot_mode
from cdc_mysql.binlog import BinlogConnectionLost, BinlogStartPosition, CdcBinLogStreamReader
from cdc_mysql.catalog import Catalog
from cdc_mysql.ddl import AppliedDdl, SchemaModel, UnparseableDdl
from cdc_mysql.filters import CaptureFilter
from cdc_mysql.flavor import MYSQL, Flavor
from cdc_mysql.history import SchemaHistory
from cdc_mysql.model import TableChange, TableDef, TableId
from cdc_mysql.schema_changes import schema_change_record
from cdc_mysql.snapshot import ENCODERS_ONLY, SnapshotLocks, SnapshotReader
from cdc_mysql.source import DEBEZIUM_VERSION, source_schema
from cdc_mysql.streaming import BinlogStreamer, DdlHandler, TableVersions
from cdc_mysql.types import TypeModes

#: Memory schema histories by Config object, so a retry of the same engine keeps its history.
_MEMORY_HISTORIES: dict[int, Any] = {}


class MySqlConnector(DdlHandler):
    """Debezium's MySQL connector: consistent snapshot under a lock, then the binlog from the snapshot's position."""

    flavor: ClassVar[Flavor] = MYSQL
    name: ClassVar[str] = MYSQL.name
    class_names: ClassVar[tuple[str, ...]] = MYSQL.class_names
    fields: ClassVar[Fields] = myc.FIELDS
    source_schema: ClassVar[Schema] = source_schema(MYSQL)

    def __init__(self, config: Config, context: ConnectorContext):
        self.config = config
        self.context = context
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.address = myc.server_address(config)
        self.filter = CaptureFilter(config)
        self.modes = TypeModes(
            decimal_handling=config.get(common.DECIMAL_MODE),
            time_precision=config.get(myc.TIME_PRECISION_MODE),
            bigint_unsigned_handling=config.get(myc.BIGINT_UNSIGNED_MODE),
            binary_handling=config.get(common.BINARY_MODE),
            adjust_years=config.get(myc.ENABLE_TIME_ADJUSTER),
        )
        self.versions = TableVersions(self.modes)
        self.model = SchemaModel()
        self._stop = threading.Event()
        self._conn: pymysql.connections.Connection | None = None
        self._reader: CdcBinLogStreamReader | None = None
        self._snapshot_reader: SnapshotReader | None = None
        self._offset: dict[str, Any] | None = None
        self._history: SchemaHistory | None = None
        self._server_id = 0
        self.metrics = context.metrics

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Cross-property problems: exclusive pairs and unsupported plugin modes."""
        problems = exclusive(self.config, myc.EXCLUSIVE_PAIRS)
        for field, value in ((myc.SNAPSHOT_MODE, "custom"), (myc.SNAPSHOT_LOCKING_MODE, "custom"),
                             (myc.SNAPSHOT_QUERY_MODE, "custom")):
            if self.config.get(field) == value:
                problems.append(f"{field.name}: 'custom' is not supported yet by the {self.flavor.name} connector")
        return problems

    def partition(self) -> dict[str, Any]:
        """Offsets are stored under ``{"server": topic.prefix}``, as Debezium does."""
        return {"server": self.server}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect, check the server's binlog settings and grants, and recover the schema history."""
        self._offset = offset
        self._conn = self._connect()
        self._check_server()
        self._history = SchemaHistory(self._history_store(), self.server)
        if offset is not None and not offset.get("snapshot") and self._history.exists():
            started = time.monotonic()
            count = self._history.recover(self.model, offset)
            self.log.info("recovered %d schema history records (%d tables) in %.2fs", count, len(self.model.tables),
                          time.monotonic() - started)

    def stream(self) -> Iterator[list[RawChange | Checkpoint | ChangeRecord]]:
        """Snapshot as the mode says, then stream the binlog until stopped."""
        try:
            yield from self._run()
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError, BinlogConnectionLost, socket.error) as e:
            if self._stop.is_set():
                return
            if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] == 1236:
                raise ConnectorError(self._purged_message(str(e.args[-1]))) from None
            if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] in (1227, 1045, 1044, 1142):
                raise ConnectorError(self._privilege_message(str(e.args[-1]))) from None
            raise RetriableError(f"lost the connection to {self.flavor.name} at {self.address}: {_first_line(e)}") from None

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """The binlog needs no acknowledgement; the engine stores the offset."""

    def stop(self) -> None:
        """Ask ``stream`` to end; unblock a binlog read in progress."""
        self._stop.set()
        if self.metrics is not None:
            self.metrics.streaming.connected = False
        if self._snapshot_reader is not None:
            self._snapshot_reader.stopped = True
        reader = self._reader
        if reader is not None:
            conn = reader.stream_connection
            sock = getattr(conn, "_sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        """Close the connections."""
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            self._reader = None
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    # -- connections and checks ----------------------------------------------------------------

    def _connect(self) -> pymysql.connections.Connection:
        """A regular connection with ``database.initial.statements`` run on it (``;;`` escapes a semicolon)."""
        try:
            conn = pymysql.connect(**myc.connect_args(self.config, conv=ENCODERS_ONLY))
        except pymysql.err.OperationalError as e:
            if e.args and e.args[0] in (1045, 1044):
                raise ConnectorError(f"cannot log in to {self.flavor.name} at {self.address} as user "
                                     f"{self.config.get(myc.USER)!r}: {e.args[-1]}; check database.user and "
                                     "database.password") from None
            raise RetriableError(f"cannot connect to {self.flavor.name} at {self.address}: {_first_line(e)}") from None
        initial = self.config.get(myc.INITIAL_STATEMENTS)
        if initial:
            with conn.cursor() as cur:
                for statement in initial.replace(";;", "\0").split(";"):
                    if statement.strip():
                        cur.execute(statement.replace("\0", ";"))
        return conn

    def _check_server(self) -> None:
        assert self._conn is not None
        catalog = Catalog(self._conn)
        where = f"{self.flavor.name} at {self.address}"
        if (catalog.variable("log_bin") or "OFF").upper() != "ON":
            raise ConnectorError(f"binary logging is disabled on {where}: the connector reads the binlog. Enable it "
                                 "(log_bin=mysql-bin, server_id=<n> under [mysqld]) and restart the server.")
        fmt = (catalog.variable("binlog_format") or "").upper()
        if fmt != "ROW":
            raise ConnectorError(f"{where} has binlog_format={fmt}; the connector needs ROW. Run SET GLOBAL "
                                 "binlog_format = 'ROW' and set binlog_format=ROW in the server configuration.")
        image = (catalog.variable("binlog_row_image") or "FULL").upper()
        if image != "FULL":
            raise ConnectorError(f"{where} has binlog_row_image={image}; the connector needs FULL row images. Run "
                                 "SET GLOBAL binlog_row_image = 'FULL' and set it in the server configuration.")
        value_options = (catalog.variable("binlog_row_value_options") or "").upper()
        if "PARTIAL_JSON" in value_options:
            raise ConnectorError(f"{where} has binlog_row_value_options=PARTIAL_JSON, which the connector cannot "
                                 "read; run SET GLOBAL binlog_row_value_options = ''.")
        missing = []
        try:
            catalog.binlog_position()
        except pymysql.err.OperationalError as e:
            missing.append(f"{self.flavor.replication_client_privilege} (the server says: {e.args[-1]})")
        grants = " ".join(str(r[0]).upper() for r in catalog.query("SHOW GRANTS"))
        if not any(g in grants for g in ("REPLICATION SLAVE", "REPLICATION REPLICA", "ALL PRIVILEGES")):
            missing.append("REPLICATION SLAVE (to read the binlog)")
        if missing:
            raise ConnectorError(self._privilege_message("missing: " + "; ".join(missing)))
        self._server_id = int(catalog.query("SELECT @@server_id")[0][0])
        if self.config.get(myc.INCLUDE_QUERY):
            if (catalog.variable(self.flavor.query_log_variable) or "OFF").upper() != "ON":
                self.log.warning("include.query is set but %s is OFF on %s: events will carry no query",
                                 self.flavor.query_log_variable, where)

    def _privilege_message(self, detail: str) -> str:
        user = self.config.get(myc.USER)
        return (f"user {user!r} on {self.flavor.name} at {self.address} lacks privileges the connector needs "
                f"({detail}). Grant what it needs with: GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, "
                f"REPLICATION CLIENT ON *.* TO '{user}'@'%';")

    def _purged_message(self, detail: str) -> str:
        offset = self._offset or {}
        return (f"{self.flavor.name} at {self.address} cannot send the binlog from {offset.get('file')}:"
                f"{offset.get('pos')} ({detail}): it was purged. A new snapshot is needed: set snapshot.mode="
                "when_needed, or delete the offsets and the schema history to start over.")

    def _history_store(self) -> Any:
        if self.context.history is not None:
            return self.context.history
        if not self.config.get(common.SCHEMA_HISTORY_FILE):
            from cdc_core.stores.memory_history import MemorySchemaHistoryStore

            return _MEMORY_HISTORIES.setdefault(id(self.config), MemorySchemaHistoryStore())
        from cdc_core.plugins import registry

        return registry().get("schema history store", self.config.get(common.SCHEMA_HISTORY))(self.config)

    # -- the run -------------------------------------------------------------------------------

    def _position_available(self, offset: dict[str, Any]) -> bool:
        assert self._conn is not None
        return offset.get("file") in Catalog(self._conn).binary_logs()

    def _run(self) -> Iterator[list[Any]]:
        assert self._conn is not None and self._history is not None
        offset = self._offset
        available = offset is None or offset.get("snapshot") or self._position_available(offset)
        plan = snapshot_mode.plan(self.config, offset, self._history.exists(), bool(available),
                                  f"{self.flavor.name} at {self.address}")
        start = offset
        if plan.schema or plan.data:
            start = yield from self._snapshot(plan, offset if plan.resume else None)
        if not plan.stream or self._stop.is_set() or start is None:
            return
        yield from self._stream(start)

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
                if captured or not only_captured:
                    record.append(tid)
        return record, capture

    def _snapshot(self, plan: snapshot_mode.SnapshotPlan, resume: dict[str, Any] | None) -> Iterator[list[Any]]:
        """Lock, read position and schemas, scan; returns the offset streaming starts from."""
        assert self._history is not None
        log = self.log.with_context("snapshot")
        conn = self._connect()
        try:
            catalog = Catalog(conn)
            with conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            record_ids, capture_ids = self._captured_tables(catalog)
            locks = SnapshotLocks(conn, self.config.get(myc.SNAPSHOT_LOCKING_MODE) if plan.data or not resume else "none",
                                  log)
            locks.acquire([TableDef(t, ()) for t in capture_ids])
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            file, pos, gtids = catalog.binlog_position()
            position = {"file": file, "pos": pos, "event": 0, "row": 0, "gtids": gtids or None}
            if resume is not None:
                position = {k: resume.get(k) for k in ("file", "pos", "event", "row", "gtids")}
            log.info("snapshot at %s:%s (gtids %s): %d tables captured, %d recorded", position["file"],
                     position["pos"], position["gtids"], len(capture_ids), len(record_ids))
            records = self._snapshot_schema(catalog, position, record_ids, capture_ids)
            locks.after_schema()
            if records:
                yield records
            if plan.data and not self._stop.is_set():
                tables = [(self.versions.table(self.model.tables[t]), self.model.tables[t]) for t in capture_ids
                          if t in self.model.tables]
                overrides = self._select_overrides()
                reader = self._snapshot_reader = SnapshotReader(
                    conn, self.flavor.name, self.server, self._server_id, position,
                    self.config.get(myc.SNAPSHOT_FETCH_SIZE), overrides, log)
                metrics = self.metrics.snapshot if self.metrics is not None else None
                if metrics is not None:
                    metrics.snapshot_started(catalog.row_estimates([d.id for _, d in tables]))
                    reader.metrics = metrics
                completed = False
                try:
                    yield from reader.read(tables)
                    completed = not self._stop.is_set()
                finally:
                    self._snapshot_reader = None
                    if metrics is not None and metrics.running:
                        metrics.snapshot_ended(completed)
                if self._stop.is_set():
                    return None
            with conn.cursor() as cur:
                cur.execute("COMMIT")
            locks.release()
        finally:
            conn.close()
        done = {**position, "ts_sec": int(time.time())}
        yield [Checkpoint(done)]
        return done

    def _snapshot_schema(self, catalog: Catalog, position: dict[str, Any], record_ids: list[TableId],
                         capture_ids: list[TableId]) -> list[ChangeRecord]:
        """Read every recorded table's definition into a fresh model and the history; schema change events."""
        assert self._history is not None
        model = SchemaModel()
        charsets = catalog.database_charsets()
        model.database_charsets.update(charsets)
        captured = set(capture_ids)
        hist_position = {**position, "snapshot": True}
        include = self.config.get(myc.INCLUDE_SCHEMA_CHANGES)
        records: list[ChangeRecord] = []
        for db in sorted({t.database for t in record_ids}):
            ddl = f"CREATE DATABASE `{db}` CHARACTER SET {charsets.get(db, model.server_charset)}"
            self._history.record(hist_position, db, ddl, [])
        for tid in record_ids:
            change = catalog.read_table(model, tid)
            ddl = catalog.show_create_table(tid)
            self._history.record(hist_position, tid.database, ddl, [change])
            if include and tid in captured:
                source = self._ddl_source(tid.database, tid.table, position, "true")
                records.append(schema_change_record(self.flavor, self.source_schema, self.server, tid.database, ddl,
                                                    [change], source, None, self.partition()))
        self.model = model
        return records

    def _select_overrides(self) -> dict[str, str]:
        names = self.config.get(myc.SNAPSHOT_SELECT_OVERRIDES) or []
        out = {}
        for name in names:
            statement = self.config.get(f"snapshot.select.statement.overrides.{name}")
            if not statement:
                raise ConnectorError(f"snapshot.select.statement.overrides names {name!r}, but "
                                     f"snapshot.select.statement.overrides.{name} is not set")
            out[name] = str(statement)
        return out

    def _ddl_source(self, db: str, table: str | None, position: dict[str, Any], snapshot: str) -> dict[str, Any]:
        ts = int(time.time() * 1000)
        return {"version": DEBEZIUM_VERSION, "connector": self.flavor.name, "name": self.server, "ts_ms": ts,
                "snapshot": snapshot, "db": db, "sequence": None, "ts_us": ts * 1000, "ts_ns": ts * 1_000_000,
                "table": table, "server_id": self._server_id, "gtid": None, "file": position["file"],
                "pos": position["pos"], "row": 0, "thread": None, "query": None}

    def _stream(self, start: dict[str, Any]) -> Iterator[list[Any]]:
        log = self.log.with_context("streaming")
        gtid_only = False
        begin = BinlogStartPosition(start["file"], int(start["pos"]))
        if gtid_only:  # pragma: no cover - reserved for GTID failover
            begin = BinlogStartPosition(gtids=start.get("gtids") or "")
        self._reader = CdcBinLogStreamReader(
            myc.connect_args(self.config), myc.server_id(self.config), begin,
            mariadb=self.flavor.mariadb_protocol, annotate_rows=self.config.get(myc.INCLUDE_QUERY),
            heartbeat_seconds=1.0,
        )
        log.info("streaming the binlog from %s (skipping %s events, %s rows of the first transaction)", begin,
                 start.get("event") or 0, start.get("row") or 0)
        streamer = BinlogStreamer(
            self._reader, self.model, self.versions, connector=self.flavor.name, server=self.server,
            gtid_format=self.flavor.gtid_format, offset=start, captured=self.filter.includes, ddl=self,
            include_query=self.config.get(myc.INCLUDE_QUERY),
            inconsistent_mode=self.config.get(myc.INCONSISTENT_SCHEMA_MODE),
            max_batch=self.config.get(common.MAX_BATCH_SIZE), log=log,
            heartbeat=self.config.get(common.HEARTBEAT_INTERVAL_MS) > 0,
            on_connected=self._connected, stop_requested=self._stop.is_set,
        )
        self._streamer = streamer
        action = self.config.get(common.HEARTBEAT_ACTION_QUERY)
        interval = self.config.get(common.HEARTBEAT_INTERVAL_MS) / 1000.0
        last_action = time.monotonic()
        for batch in streamer.batches():
            yield batch
            if self._stop.is_set():
                streamer.stopped = True
                break
            if action and interval and time.monotonic() - last_action >= interval:
                last_action = time.monotonic()
                self._heartbeat_action(action, log)

    def _connected(self) -> None:
        """The replication connection delivered its first event."""
        if self.metrics is not None:
            self.metrics.streaming.connected = True
            self.metrics.streaming.captured_tables = {str(t) for t in self.model.tables if self.filter.includes(t)}

    def _heartbeat_action(self, query: str, log: Any) -> None:
        assert self._conn is not None
        try:
            with self._conn.cursor() as cur:
                cur.execute(query)
        except pymysql.err.OperationalError:
            raise
        except pymysql.err.MySQLError as e:
            log.warning("heartbeat.action.query failed: %s", _first_line(e))

    # -- DDL while streaming -------------------------------------------------------------------

    def ddl(self, statement: str, database: str | None, position: dict[str, Any], source: dict[str, Any],
            offset: dict[str, Any]) -> tuple[AppliedDdl | None, list[ChangeRecord]]:
        """Apply a binlog DDL statement to the model; record it; return its schema change events."""
        assert self._history is not None
        log = self.log.with_context("streaming")
        try:
            applied = self.model.apply(statement, database)
        except UnparseableDdl as e:
            applied = self._unparseable(e, database, log)
            if applied is None:
                return None, []
        if applied.kind in ("ignored", "use", "truncate"):
            return applied, []
        captured = [c for c in applied.changes if self.filter.includes(c.id)
                    or (c.previous_id is not None and self.filter.includes(c.previous_id))]
        dbs_captured = [d for d in applied.databases if self.filter.includes_database(d)]
        only_captured = self.config.get(myc.STORE_ONLY_CAPTURED_TABLES)
        if not only_captured or captured or (applied.kind == "database" and dbs_captured):
            self._history.record(position, database or (applied.databases[0] if applied.databases else None),
                                 statement, applied.changes)
        if not self.config.get(myc.INCLUDE_SCHEMA_CHANGES) or not (captured or (applied.kind == "database" and dbs_captured)):
            return applied, []
        db = (captured[0].id.database if captured else dbs_captured[0])
        table = captured[0].id.table if len(captured) == 1 else None
        src = dict(source, db=db, table=table)
        record = schema_change_record(self.flavor, self.source_schema, self.server, db, statement, captured, src,
                                      offset, self.partition())
        return applied, [record]

    def _unparseable(self, e: UnparseableDdl, database: str | None, log: Any) -> AppliedDdl | None:
        """Re-read the tables an unparseable statement touches from the catalog; else skip or fail."""
        captured = [t for t in e.tables if self.filter.includes(t)]
        if captured and self._conn is not None:
            catalog = Catalog(self._conn)
            changes: list[TableChange] = []
            try:
                for tid in captured:
                    if tid.table in catalog.tables(tid.database):
                        known = tid in self.model.tables
                        change = catalog.read_table(self.model, tid)
                        changes.append(TableChange("ALTER" if known else "CREATE", tid, change.table))
                    elif self.model.tables.pop(tid, None) is not None:
                        changes.append(TableChange("DROP", tid, None))
            except (pymysql.err.MySQLError, UnparseableDdl) as again:
                log.warning("cannot re-read %s from the catalog either: %s", ", ".join(map(str, captured)), again)
            else:
                log.warning("cannot parse DDL statement (%s); re-read the definitions of %s from the server's "
                            "catalog instead: %s", e.reason, ", ".join(map(str, captured)), e.statement)
                return AppliedDdl("table", changes, sorted({t.database for t in captured}))
        if e.tables and not captured:
            log.warning("cannot parse DDL statement (%s) on tables that are not captured; ignoring it: %s",
                        e.reason, e.statement)
            return None
        if self.config.get(myc.SKIP_UNPARSEABLE_DDL):
            log.warning("cannot parse DDL statement (%s); skipping it (schema.history.internal.skip.unparseable.ddl"
                        "=true): %s", e.reason, e.statement)
            return None
        raise ConnectorError(f"cannot parse DDL statement ({e.reason}) in database {database!r}: {e.statement}. "
                             "Set schema.history.internal.skip.unparseable.ddl=true to skip statements the connector "
                             "cannot parse.")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
