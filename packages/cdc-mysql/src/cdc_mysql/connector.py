"""The MySQL connector (and, through ``Flavor``, the MariaDB one): lifecycle, the start decision, binlog streaming.

The snapshot is ``cdc_mysql.snapshotting``, the start checks ``cdc_mysql.checks``, the DDL read
while streaming ``cdc_mysql.ddl_events``; the snapshot decision and locks are the core's snapshot
SPIs (``snapshot.mode``, ``snapshot.locking.mode``, ``snapshot.query.mode``, custom ones included).
"""

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
from cdc_core.delays import wait_before
from cdc_core.errors import ConnectorError, RetriableError, UnknownHostError, offsets_ahead
from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.notifications.initial import InitialSnapshotNotifications
from cdc_core.plugins import registry
from cdc_core.stores.configured_history import history_store
from cdc_core.topics import topic_naming_strategy
from cdc_core.schema import Schema
from cdc_core.snapshot import snapshot_lock, snapshot_query, snapshotter
from cdc_core.spi.connector import ConnectorContext
from cdc_core.snapshot.spi import streams_from_snapshot
from cdc_core.spi.offsets import OffsetShape

from cdc_mysql import config as myc
from cdc_mysql import stream_workers
from cdc_mysql.binlog import BinlogConnectionLost, BinlogStartPosition, CdcBinLogStreamReader
from cdc_mysql.catalog import Catalog, quote
from cdc_mysql.checks import check_server, privilege_message
from cdc_mysql.driver_options import MAPPED as MAPPED_DRIVER_OPTIONS
from cdc_mysql.connection import Connection
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.ddl_events import DdlEvents
from cdc_mysql.filters import CaptureFilter
from cdc_mysql.flavor import MYSQL, Flavor
from cdc_mysql.gtid import gtid_set, source_filter
from cdc_mysql.history import SchemaHistory
from cdc_mysql.incremental import MySqlIncrementalSource, signal_table_id
from cdc_mysql import tls
from cdc_mysql.keepalive import KeepAlive
from cdc_mysql.metrics import binlog_metrics, schema_history_metrics
from cdc_mysql.model import TableChange, TableId
from cdc_mysql.readonly import check_read_only
from cdc_mysql.schema_changes import schema_change_record
from cdc_mysql.snapshot import ENCODERS_ONLY, SnapshotReader
from cdc_mysql.snapshot_plan import plan
from cdc_mysql.snapshotting import Snapshotting, snapshot_problems
from cdc_mysql.source import source_schema
from cdc_mysql.streaming import BinlogStreamer, TableVersions
from cdc_mysql.types import type_modes

class MySqlConnector(Snapshotting, DdlEvents):
    """Debezium's MySQL connector: consistent snapshot under a lock, then the binlog from the snapshot's position."""

    flavor: ClassVar[Flavor] = MYSQL
    name: ClassVar[str] = MYSQL.name
    class_names: ClassVar[tuple[str, ...]] = MYSQL.class_names
    fields: ClassVar[Fields] = myc.FIELDS
    source_schema: ClassVar[Schema] = source_schema(MYSQL)
    #: tasks.max > 1 is refused with this, as Debezium 2.7.4's taskConfigs throws it (cdc_core.engine).
    max_tasks_refusal: ClassVar[str] = "Only a single connector task may be started"
    #: As Debezium 2.7.4's MySQL and MariaDB connectors, whose RelationalTableFilters add ``signal.data.collection`` to the
    #: table filter whatever ``table.include.list``/``table.exclude.list`` say: the signal table's rows (signals and
    #: watermarks) are streamed as change events on its topic (EventDispatcher.dispatchDataChangeEvent emits them after
    #: handing them to the source channel), and never read by a snapshot (determineSnapshotSelect skips the signal data
    #: collection; cdc's snapshot reads only the captured tables). cdc_core.signals.controller reads this.
    signal_table_captured: ClassVar[bool] = True
    #: What a stored offset looks like (checked by the engine before ``start``).
    offset_shape: ClassVar[OffsetShape] = OffsetShape(
        required={"file": "str", "pos": "uint"},
        optional={"row": "uint", "event": "uint", "gtids": "str", "ts_sec": "uint", "server_id": "uint",
                  "snapshot": "snapshot"})

    def __init__(self, config: Config, context: ConnectorContext):
        self.config = config
        self.context = context
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.address = myc.server_address(config)
        self.filter = CaptureFilter(config)
        self.modes = type_modes(config)
        self.signal_table = signal_table_id(config)
        self.versions = TableVersions(self.modes)
        self.model = SchemaModel(keep_comments=config.get(myc.INCLUDE_SCHEMA_COMMENTS))
        plugins = context.plugins if context.plugins is not None else registry()
        #: Where schema change events go (``topic.naming.strategy``'s schema change topic: ``<topic.prefix>``).
        self.schema_change_topic = topic_naming_strategy(config, plugins).schema_change_topic()
        self.snapshotter = snapshotter(config, config.get(myc.SNAPSHOT_MODE), plugins)
        self.snapshot_query = snapshot_query(config, config.get(myc.SNAPSHOT_QUERY_MODE), plugins)
        #: The initial snapshot's notifications (the signal controller hands over the engine's notifier).
        self._notices = InitialSnapshotNotifications(None)
        self.snapshot_lock = snapshot_lock(config, config.get(myc.SNAPSHOT_LOCKING_MODE), plugins)
        self.metrics = context.metrics
        self.binlog_metrics = binlog_metrics(self.metrics)
        self._stop = threading.Event()
        self._conn: pymysql.connections.Connection | None = None
        self._reader: CdcBinLogStreamReader | None = None
        self._snapshot_reader: SnapshotReader | None = None
        self._offset: dict[str, Any] | None = None
        self._history: SchemaHistory | None = None
        self._streamer: BinlogStreamer | None = None
        self._server_id = 0
        #: The GTID set the stored offset restarts from (None: its file/pos), decided at the start of the run.
        self._start_gtids: str | None = None

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Cross-property problems: exclusive pairs, locking modes this server family lacks, overrides."""
        problems = exclusive(self.config, myc.EXCLUSIVE_PAIRS)
        mode = self.config.get(myc.SNAPSHOT_LOCKING_MODE)
        if mode not in self.flavor.snapshot_locking_modes:
            problems.append(f"snapshot.locking.mode: {mode!r} is not available for {self.flavor.name}; use one of "
                            f"{', '.join(self.flavor.snapshot_locking_modes)}")
        return problems + snapshot_problems(self.config) + tls.problems(self.config)

    def incremental_snapshot_source(self) -> MySqlIncrementalSource:
        """Ad hoc (incremental and blocking) snapshots: chunk reads and watermarks for the core."""
        source = MySqlIncrementalSource(self.config, self.log.with_context("incremental"), self.flavor.name)
        source.created = self._blocking_created
        return source

    def _blocking_created(self, tables: list[TableId], conn: Any, position: dict[str, Any]) -> list[ChangeRecord]:
        """A blocking snapshot's schema change events: ``DROP TABLE IF EXISTS`` of each table, then its
        ``SHOW CREATE TABLE``, recorded in the schema history and read into the model streaming converts with.

        As Debezium 2.7.4 (BinlogSnapshotChangeEventSource.readTableStructure with an on-demand task: the
        signalled tables' statements only, no database statements; createSchemaChangeEventsForTables
        records and sends them, source snapshot true, at the position streaming paused at).
        """
        if self._history is None:
            return []
        catalog = Catalog(conn)
        at = {"file": position["file"], "pos": position["pos"]}
        for key in ("gtids", "server_id"):
            if key in position:
                at[key] = position[key]
        hist_position = {**at, "snapshot": True}
        include = self.config.get(myc.INCLUDE_SCHEMA_CHANGES)
        records: list[ChangeRecord] = []

        def emit(tid: TableId, ddl: str, changes: list[Any]) -> None:
            self._history.record(hist_position, tid.database, ddl, changes)
            if include:
                source = self._ddl_source(tid.database, tid.table, at, "true")
                records.append(schema_change_record(self.flavor, self.source_schema, self.schema_change_topic,
                                                    tid.database, ddl, changes, source, None, self.partition()))

        for tid in tables:
            emit(tid, f"DROP TABLE IF EXISTS {quote(tid.database)}.{quote(tid.table)}", [TableChange("DROP", tid, None)])
        for tid in tables:
            ddl = catalog.show_create_table(tid)
            emit(tid, ddl, [catalog.read_table(self.model, tid)])
        self.log.info("blocking snapshot: schema change events of %s", ", ".join(str(t) for t in tables))
        return records

    def streamed(self, table: TableId) -> bool:
        """True if the binlog rows of ``table`` go to the core: captured tables and the signal table."""
        return self.filter.includes(table) or table == self.signal_table

    def partition(self) -> dict[str, Any]:
        """Offsets are stored under ``{"server": topic.prefix}``, as Debezium does."""
        return {"server": self.server}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect, check the server's binlog settings and grants, and recover the schema history."""
        self._offset = offset
        ignored = myc.ignored_driver_options(self.config)
        if ignored:
            self.log.warning("ignoring %s: Connector/J connection properties (or values) with no PyMySQL "
                             "equivalent (cdc maps driver.%s and passes PyMySQL's own options by name)",
                             ", ".join(ignored), ", driver.".join(MAPPED_DRIVER_OPTIONS))
        self._conn = self._connect()
        self._server_id = check_server(Catalog(self._conn), self.flavor, self.address, self.config.get(myc.USER),
                                       self.config.get(myc.INCLUDE_QUERY), self.log)
        check_read_only(Catalog(self._conn), self.flavor.name, self.address, self.config)  # read.only needs GTIDs
        self._history = SchemaHistory(self._history_store(), self.server, schema_history_metrics(self.metrics))
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
            if isinstance(e, BinlogConnectionLost) and self.binlog_metrics is not None:
                self.binlog_metrics.disconnects += 1
            code = e.args[0] if isinstance(e, pymysql.err.OperationalError) and e.args else None
            if code == 2013 and "timed out" in str(e) and not isinstance(e, BinlogConnectionLost):
                raise ConnectorError(
                    f"a query on {self.flavor.name} at {self.address} did not complete within "
                    f"database.query.timeout.ms={self.config.get(myc.QUERY_TIMEOUT_MS)}: {_first_line(e)}. Raise "
                    "database.query.timeout.ms, or set it to 0 for no limit") from None
            if code == 1236:
                raise ConnectorError(self._purged_message(str(e.args[-1]))) from None
            if code in (1227, 1045, 1044, 1142):
                raise ConnectorError(privilege_message(self.flavor, self.address, self.config.get(myc.USER),
                                                       str(e.args[-1]))) from None
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
        reader = self._streamer.reader if self._streamer is not None else self._reader
        sock = getattr(reader.stream_connection, "_sock", None) if reader is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Close the connections."""
        if self._streamer is not None:
            self._reader = self._streamer.reader
        if self._history is not None and self._history.metrics is not None:
            self._history.metrics.stopped()
        if self._history is not None:
            try:
                self._history.store.close()
            except Exception as e:  # noqa: BLE001 - every append was already acknowledged
                self.log.warning("closing the schema history store failed: %s", e)
        for closable in (self._reader, self._conn):
            if closable is not None:
                try:
                    closable.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass
        self._reader = self._conn = None

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> pymysql.connections.Connection:
        """A regular connection with ``database.initial.statements`` run on it (``;;`` escapes a semicolon)."""
        try:
            conn = Connection(**myc.connect_args(self.config, conv=ENCODERS_ONLY))
        except (TypeError, ValueError) as e:
            # PyMySQL checks its options' types and ranges itself; only driver.* options can reach it unchecked.
            raise ConnectorError(f"PyMySQL refused the connection options (check the driver.* properties): "
                                 f"{_first_line(e)}") from None
        except pymysql.err.OperationalError as e:
            if e.args and e.args[0] in (1045, 1044, 1049):
                also = (" (and database.ssl.keystore, if the user must present a client certificate)"
                        if not self.config.get(myc.SSL_KEYSTORE) else
                        " (and database.ssl.mode: with 'disabled' no client certificate is sent)"
                        if self.config.get(myc.SSL_MODE) == "disabled" else "")
                raise ConnectorError(f"cannot log in to {self.flavor.name} at {self.address} as user "
                                     f"{self.config.get(myc.USER)!r}: {e.args[-1]}; check database.user and "
                                     f"database.password{also}") from None
            if (properties := tls.refusal(e)) is not None:  # the TLS handshake failed
                raise ConnectorError(f"cannot connect to {self.flavor.name} at {self.address}: the TLS handshake "
                                     f"failed: {e.args[-1]}; check {properties}") from None
            if e.args and e.args[0] == 2003 and "Name or service not known" in str(e.args[-1]):
                raise UnknownHostError(f"cannot connect to {self.flavor.name} at {self.address}: the host name "
                                       f"{self.config.get(myc.HOSTNAME)!r} does not resolve; check "
                                       "database.hostname") from None
            if e.args and e.args[0] == 2026:  # CR_SSL_CONNECTION_ERROR: TLS cannot be set up as configured
                raise ConnectorError(f"cannot connect to {self.flavor.name} at {self.address}: {e.args[-1]}; check "
                                     "database.ssl.mode and the server's TLS setup") from None
            raise RetriableError(f"cannot connect to {self.flavor.name} at {self.address}: {_first_line(e)}") from None
        except pymysql.err.MySQLError as e:  # the server refused a driver.init_command
            raise ConnectorError(f"{self.flavor.name} at {self.address} refused the connection's set-up (check the "
                                 f"driver.* properties): {_first_line(e)}") from None
        initial = self.config.get(myc.INITIAL_STATEMENTS)
        if initial:
            statements = [s.replace("\0", ";") for s in initial.replace(";;", "\0").split(";") if s.strip()]
            with conn.cursor() as cur:
                for n, statement in enumerate(statements, 1):
                    try:
                        cur.execute(statement)
                    except pymysql.err.MySQLError as e:
                        conn.close()
                        if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] in _CONNECTION_LOST:
                            raise RetriableError(f"lost the connection to {self.flavor.name} at {self.address} while "
                                                 f"running database.initial.statements: {_first_line(e)}") from None
                        line = " ".join(statement.split())
                        excerpt = line if len(line) <= 80 else line[:77] + "..."
                        raise ConnectorError(f"database.initial.statements: {self.flavor.name} at {self.address} "
                                             f"refused statement {n} ({excerpt!r}): {_first_line(e)}") from None
        return conn

    def _purged_message(self, detail: str) -> str:
        offset = self._offset or {}
        return (f"{self.flavor.name} at {self.address} cannot send the binlog from {offset.get('file')}:"
                f"{offset.get('pos')} ({detail}): it was purged. A new snapshot is needed: set snapshot.mode="
                "when_needed, or delete the offsets and the schema history to start over.")

    def _history_store(self) -> Any:
        return history_store(self.config, self.context.history)

    # -- the run -------------------------------------------------------------------------------

    def _check_offset_not_ahead(self, offset: dict[str, Any]) -> None:
        """Refuse a stored binlog position the server has not written yet (offsets from elsewhere, or edited)."""
        assert self._conn is not None
        with self._conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            logs = [(str(r[0]), int(r[1])) for r in cur.fetchall()]
        if not logs:
            return
        file, pos = str(offset["file"]), int(offset.get("pos") or 0)
        sizes = dict(logs)
        last_file, last_size = logs[-1]
        if file in sizes:
            ahead = pos > sizes[file]
        else:
            base, _, number = file.rpartition(".")
            last_base, _, last_number = last_file.rpartition(".")
            ahead = base == last_base and number.isdigit() and last_number.isdigit() and int(number) > int(last_number)
        if ahead:
            raise offsets_ahead(
                self.config, f"binlog position {file}:{pos}", f"binlog position {last_file}:{last_size}",
                f"{self.flavor.name} at {self.address}", "Restore the right offsets file, or delete it and the "
                "schema history to start over (snapshot.mode decides whether a new snapshot is taken).")

    def attach_notifier(self, notifier: Any) -> None:
        """Send the initial snapshot's notifications through ``notifier`` (cdc_core.notifications.initial)."""
        self._notices = InitialSnapshotNotifications(notifier)

    def _run(self) -> Iterator[list[Any]]:
        assert self._conn is not None and self._history is not None
        offset = self._offset
        self._start_gtids = self._gtid_start(offset)
        if self._start_gtids is not None:
            available = self._gtids_available(self._start_gtids)
        else:
            if offset is not None and not offset.get("snapshot") and offset.get("file"):
                self._check_offset_not_ahead(offset)
            available = offset is None or bool(offset.get("snapshot")) or \
                offset.get("file") in Catalog(self._conn).binary_logs()
        path = getattr(self._history.store, "path", None)
        history = f"the schema history file {path}" if path is not None else "the schema history"
        todo = plan(self.snapshotter, offset, self._history.exists(), available, f"{self.flavor.name} at {self.address}",
                    history)
        start = offset
        if todo.data and offset is not None and todo.stream and not streams_from_snapshot(self.snapshotter):
            # Debezium 2.7's MySQL/MariaDB coordinator has no catch-up step (only PostgreSQL's does).
            self.log.info("snapshot.mode.custom.name=%s: should_stream_events_starting_from_snapshot() is false, but "
                          "the binlog connectors stream from the snapshot's position, as Debezium's do",
                          self.snapshotter.name)
        if todo.schema or todo.data:
            start = yield from self._snapshot(todo, offset if todo.resume else None)
        else:
            self._notices.skipped()  # Debezium's snapshot source runs at every start and says it took none
        if not todo.stream or self._stop.is_set() or start is None:
            if not todo.stream:
                self.log.info("snapshot.mode=%s does not stream: done", self.config.get(myc.SNAPSHOT_MODE))
            return
        if (todo.data or todo.schema) and wait_before("streaming", self.config, self._stop, self.log):
            return
        yield from self._stream(start)

    def _gtid_start(self, offset: dict[str, Any] | None) -> str | None:
        """The GTID set a stored offset restarts from, as Debezium positions it whenever the server uses GTIDs.

        The offset's ``gtids`` (restricted by ``gtid.source.includes``/``excludes``) name the same point on
        every server of a replication topology, while ``file``/``pos`` are one server's: so a restart against
        a promoted replica continues exactly where the old primary left off. None: position by file/pos."""
        if offset is None or offset.get("snapshot") or not offset.get("gtids") or not self._gtid_mode():
            return None
        gtids = gtid_set(self.flavor.gtid_format, str(offset["gtids"]))
        keep = source_filter(self.flavor.gtid_format, self.config.get(myc.GTID_INCLUDES),
                             self.config.get(myc.GTID_EXCLUDES))
        if keep is not None:
            gtids = gtids.retain(keep)
        return str(gtids)

    def _gtids_available(self, gtids: str) -> bool:
        """True if the server knows every transaction of ``gtids`` and purged none it has not (Debezium's check)."""
        assert self._conn is not None
        catalog = Catalog(self._conn)
        known = catalog.binlog_position()[2]
        if not gtids:
            return True
        have, want = gtid_set(self.flavor.gtid_format, known), gtid_set(self.flavor.gtid_format, gtids)
        if not known or not have.includes(want):
            if known and set(want.sources()) <= set(have.sources()):
                raise offsets_ahead(
                    self.config, f"GTID set {gtids}", f"GTID set {known}", f"{self.flavor.name} at {self.address}",
                    "Restore the right offsets file, or delete it and the schema history to start over "
                    "(snapshot.mode decides whether a new snapshot is taken).")
            self.log.info("the offset's GTID set %s is not contained in the server's %s", gtids, known or "(none)")
            return False
        if self.flavor.gtid_format == "mysql":
            purged = str(catalog.variable("gtid_purged") or "").replace("\n", "")
        else:  # MariaDB: the GTID position at the start of the oldest binlog it still has (its Gtid_list event)
            purged = self._oldest_binlog_gtids(catalog)
        lost = gtid_set(self.flavor.gtid_format, purged)
        keep = source_filter(self.flavor.gtid_format, self.config.get(myc.GTID_INCLUDES),
                             self.config.get(myc.GTID_EXCLUDES))
        if keep is not None:  # as Debezium, only the sources the connector follows matter
            lost = lost.retain(keep)
        if purged and not want.includes(lost):
            self.log.info("the server purged GTIDs %s the offset's set %s does not contain", purged, gtids)
            return False
        return True

    @staticmethod
    def _oldest_binlog_gtids(catalog: Catalog) -> str:
        """MariaDB: the GTIDs logged before the oldest binlog file still there (``[0-1-5]`` of its Gtid_list)."""
        logs = catalog.binary_logs()
        if not logs:
            return ""
        for row in catalog.query("SHOW BINLOG EVENTS IN %s LIMIT 4", (logs[0],)):
            if str(row[2]) == "Gtid_list":
                return str(row[5] or "").strip("[]").replace(" ", "")
        return ""

    def _stream(self, start: dict[str, Any]) -> Iterator[list[Any]]:
        log = self.log.with_context("streaming")
        gtids = self._start_gtids if start is self._offset else self._gtid_start(start)
        begin = BinlogStartPosition(start["file"], int(start["pos"]), gtids or None)
        replica_id = myc.server_id(self.config)  # one id for every reconnection (a random one stays the same)
        keepalive = KeepAlive(self.config, lambda at: self._binlog_reader(at, replica_id, keepalive), self._stop,
                              log, self._disconnected)
        self._reader = self._binlog_reader(begin, replica_id, keepalive)
        log.info("streaming the binlog from %s (skipping %s events, %s rows of the first transaction)", begin,
                 start.get("event") or 0, start.get("row") or 0)
        streamer = BinlogStreamer(
            self._reader, self.model, self.versions, connector=self.flavor.name, server=self.server,
            gtid_format=self.flavor.gtid_format, offset=start, captured=self.streamed, ddl=self,
            include_query=self.config.get(myc.INCLUDE_QUERY),
            inconsistent_mode=self.config.get(myc.INCONSISTENT_SCHEMA_MODE),
            max_batch=self.config.get(common.MAX_BATCH_SIZE), log=log,
            heartbeat=self.config.get(common.HEARTBEAT_INTERVAL_MS) > 0,
            on_connected=self._connected, stop_requested=self._stop.is_set,
            gtid_source_filter=source_filter(self.flavor.gtid_format, self.config.get(myc.GTID_INCLUDES),
                                             self.config.get(myc.GTID_EXCLUDES)),
            reconnect=(lambda at, error: self._reconnect(keepalive, at, error)) if keepalive.enabled else None,
            undecodable_mode=myc.deserialization_failure_mode(self.config), metrics=self.binlog_metrics,
            buffer_size=self.config.get(myc.BINLOG_BUFFER_SIZE),
            rewind=lambda at: self._rewind(keepalive, replica_id, at),
            on_filtered=self._filtered if self.metrics is not None else None,
        )
        processes = self.config.get(myc.STREAMING_WORKER_PROCESSES)
        if processes:
            why_not = stream_workers.unusable(self.config, self.worker_pipeline)
            if why_not is None:
                streamer.workers = stream_workers.RowsWorkers(streamer, self.worker_pipeline, processes)
            else:
                log.info("streaming.worker.processes=%d: decoding in this process instead (%s)", processes, why_not)
        self._streamer = streamer
        if self.binlog_metrics is not None:
            self.binlog_metrics.streamer = streamer
            self.binlog_metrics.gtid_mode = self._gtid_mode()
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

    def _binlog_reader(self, begin: BinlogStartPosition, replica_id: int, keepalive: KeepAlive) -> CdcBinLogStreamReader:
        """A (not yet connected) binlog reader at ``begin`` with the keep-alive's heartbeat and read timeout."""
        return CdcBinLogStreamReader(
            myc.connect_args(self.config, read_timeout=keepalive.read_timeout), replica_id, begin,
            mariadb=self.flavor.mariadb_protocol, annotate_rows=self.config.get(myc.INCLUDE_QUERY),
            heartbeat_seconds=keepalive.heartbeat_seconds, keepalive=keepalive.enabled,
            nongraceful=self.config.get(myc.NONGRACEFUL_DISCONNECT),
            freeze_table_maps=self.config.get(myc.BINLOG_BUFFER_SIZE) == 0,
        )

    def _reconnect(self, keepalive: KeepAlive, at: BinlogStartPosition, error: BaseException) -> CdcBinLogStreamReader:
        """``connect.keep.alive``: reopen the binlog at ``at`` (the streamer's last delivered position)."""
        old = self._streamer.reader if self._streamer is not None else self._reader
        self._reader = None
        reader = keepalive.reconnect(at, error, old)
        self._reader = reader
        if self._stop.is_set():  # stop() may have missed the new socket
            reader.close()
        return reader

    def _rewind(self, keepalive: KeepAlive, replica_id: int, at: BinlogStartPosition) -> CdcBinLogStreamReader:
        """``binlog.buffer.size``: a new reader at ``at`` to reread a transaction larger than the buffer."""
        old = self._streamer.reader if self._streamer is not None else self._reader
        if old is not None:
            old.close()
        reader = self._reader = self._binlog_reader(at, replica_id, keepalive)
        if self._stop.is_set():  # stop() may have missed the new socket
            reader.close()
        return reader

    def _filtered(self) -> None:
        """A rows event of a table not captured: Debezium's ``onFilteredEvent`` (filtered, and seen)."""
        streaming = self.metrics.streaming
        streaming.filtered += 1
        streaming.total_events += 1

    def _disconnected(self) -> None:
        if self.binlog_metrics is not None:
            self.binlog_metrics.disconnects += 1

    def _gtid_mode(self) -> bool:
        """``IsGtidModeEnabled``: MariaDB always writes GTIDs; MySQL when ``gtid_mode`` is ON."""
        if self.flavor.mariadb_protocol:
            return True
        try:
            return str(Catalog(self._conn).variable("gtid_mode") or "").upper() == "ON"
        except pymysql.err.MySQLError:
            return False

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


#: PyMySQL/MariaDB error codes of a connection that went away (worth a retry).
_CONNECTION_LOST = frozenset({2003, 2006, 2013, 2055})


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
