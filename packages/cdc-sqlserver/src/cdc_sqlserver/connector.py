"""The SQL Server connector: start-up checks, the snapshot, then the change tables."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from cdc_core.config import Config, Fields, common
from cdc_core.errors import ConnectorError, RetriableError
from cdc_core.events import Checkpoint, RawChange, RoundEnd
from cdc_core.filters import snapshot_order
from cdc_core.plugins import registry
from cdc_core.notifications.initial import InitialSnapshotNotifications
from cdc_core.relational import Table, TableId
from cdc_core.snapshot import snapshot_lock, snapshot_query, snapshotter
from cdc_core.snapshot.phases import snapshot_then_stream
from cdc_core.spi.connector import ConnectorContext
from cdc_core.spi.offsets import OffsetShape
from cdc_core.stores.configured_history import history_store
from cdc_core.stores.history_required import require_history
from cdc_core.topics import topic_naming_strategy
from cdc_sqlserver import config as msc
from cdc_sqlserver import odbc
from cdc_sqlserver.agent import AgentCheck
from cdc_sqlserver.catalog import (CDC_ENABLED, HELP_CHANGE_DATA_CAPTURE, MIN_LSN_OF_ALL_CHANGE_TABLES,
                                   TRACKED_TABLES, CaptureInstance,
                                   instance_names, read_all_capture_instances, read_capture_instances, read_tables)
from cdc_sqlserver.driver_errors import first_line as _first_line
from cdc_sqlserver.driver_errors import is_connection_error as _is_connection_error
from cdc_sqlserver.incremental import SqlServerIncrementalSource, signal_table_key
from cdc_sqlserver.instance_notes import InstanceCompletion
from cdc_sqlserver.lsn import Lsn, from_value
from cdc_sqlserver.metrics import counted, database_groups, metered_snapshot
from cdc_sqlserver.plugin import CONNECTOR
from cdc_sqlserver.schema_history import SchemaHistory, TableCheck
from cdc_sqlserver.schema_tables import schema_tables
from cdc_sqlserver.server_parse import ServerParse
from cdc_sqlserver.snapshot import ExclusiveSnapshotLock, SnapshotReader, UncapturedTable
from cdc_sqlserver.snapshot_select import SnapshotSelect
from cdc_sqlserver.source import SOURCE_SCHEMA
from cdc_sqlserver.streaming import ResumePoint, StreamReader, lsn_text
from cdc_sqlserver.types import TypeModes


class SqlServerConnector:
    """Debezium's SQL Server connector: snapshot at the max LSN, then the CDC change tables in commit order."""

    name: ClassVar[str] = CONNECTOR.name
    class_names: ClassVar[tuple[str, ...]] = CONNECTOR.class_names
    fields: ClassVar[Fields] = msc.FIELDS
    source_schema = SOURCE_SCHEMA
    #: Debezium's SQL Server TableIds carry the database: transaction metadata counts ``<db>.<schema>.<table>``.
    catalog_in_data_collection: ClassVar[bool] = True
    #: ``<prefix>.<database>.<schema>.<table>`` topics (cdc_sqlserver.topics), as Debezium's SQL Server connector.
    defaults: ClassVar[dict[str, Any]] = {"topic.naming.strategy": "sqlserver-schema"}
    #: As Debezium 2.7.4, whose RelationalTableFilters add ``signal.data.collection`` to the table filter whatever
    #: ``table.include.list``/``table.exclude.list`` say: the signal table's rows (signals and watermarks) are streamed
    #: as change events on its topic (EventDispatcher.dispatchDataChangeEvent emits them after handing them to the
    #: source channel), and never read by a snapshot (RelationalSnapshotChangeEventSource.determineSnapshotSelect
    #: skips the signal data collection). cdc_core.signals.controller reads this.
    signal_table_captured: ClassVar[bool] = True
    #: As Debezium 2.7.4's SqlServerChangeEventSourceCoordinator, whose streaming loop runs one iteration (a poll
    #: window) per database and only then checks ``context.isPaused()``: a blocking snapshot runs at the end of
    #: the round the signal came in (the ``RoundEnd`` each poll ends with), after the rest of that window's
    #: changes, not at the signal's row (cdc_core.signals.controller).
    pauses_at_round_end: ClassVar[bool] = True
    #: MBeans ``debezium.sql_server:type=connector-metrics,server=<prefix>,task=0,context=<context>[,database=<db>]``.
    metrics_plugin: ClassVar[str] = "sql_server"
    metrics_task: ClassVar[str] = "0"
    offset_shape: ClassVar[OffsetShape] = OffsetShape(
        required={"commit_lsn": "str"},
        optional={"change_lsn": "str", "event_serial_no": "uint", "snapshot": "bool", "snapshot_completed": "bool",
                  "caught_up_lsn": "str"})

    def __new__(cls, config: Config, context: ConnectorContext) -> SqlServerConnector:
        """Several databases in ``database.names``: cdc_sqlserver.databases.SqlServerDatabases (a reader per database)."""
        if cls is SqlServerConnector and len(config.get(msc.NAMES) or []) > 1:
            from cdc_sqlserver.databases import SqlServerDatabases

            # Not a SqlServerConnector: Python then skips __init__, and nothing of one database's reader
            # (incremental snapshot hooks, ...) is inherited where it would not hold.
            return SqlServerDatabases(config, context)  # type: ignore[return-value]
        return super().__new__(cls)

    def __init__(self, config: Config, context: ConnectorContext):
        """Read the configuration; no I/O."""
        self.config = config
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        names = config.get(msc.NAMES) or []
        self.db = names[0] if names else ""
        self.address = msc.server_address(config)
        plugins = context.plugins if context.plugins is not None else registry()
        self.snapshotter = snapshotter(config, config.get(msc.SNAPSHOT_MODE), plugins)
        #: Each table's snapshot SELECT: its snapshot.select.statement.overrides, else snapshot.query.mode's.
        self._selects = SnapshotSelect(config, self.db, snapshot_query(config, config.get(common.SNAPSHOT_QUERY_MODE),
                                                                       plugins), context.log)
        locking = config.get(msc.SNAPSHOT_LOCKING_MODE)
        self._snapshot_lock = ExclusiveSnapshotLock() if locking == "exclusive" else snapshot_lock(config, locking, plugins)
        self.modes = TypeModes.from_config(config)
        self.metrics = context.metrics
        self._stop = threading.Event()
        self._conn: Any = None
        #: Temporal defaults PARSEd by the server on ``_conn``, each (type, text) once (cdc_sqlserver.server_parse);
        #: the schema history's structures are rebuilt with it too, as Debezium's recovered tables.
        self._parse = ServerParse(lambda: self._conn)
        self._offset: dict[str, Any] | None = None
        self._snapshot_reader: SnapshotReader | None = None
        #: The engine's NotificationService (``attach_notifier``, before start): the capture instances' notifications.
        self.notifier: Any = None
        #: The initial snapshot's notifications (cdc_core.notifications.initial), through the same service.
        self._notices = InitialSnapshotNotifications(None)
        self._instance_completion = InstanceCompletion(self.server, self.db)
        self._instances: list[CaptureInstance] = []
        #: Included tables without a capture instance: snapshotted, not streamed.
        self._without_cdc: list[UncapturedTable] = []
        self._signal_table: str | None = None
        #: Set when a blocking snapshot recorded structures: streaming reads its capture instances again.
        self._reload_instances = False
        #: The streaming side's reader, once streaming started.
        self._stream_reader: StreamReader | None = None
        #: Where the stream stood at its last poll's end (``StreamReader.source_position``), None before one.
        self._round_position: tuple[str | None, str | None, int | None] | None = None
        self._context = context
        self._history: SchemaHistory | None = None
        #: Set when a snapshot starts (its CREATE events go first: cdc_sqlserver.schema_history).
        self._snapshotting = False
        #: Whether the snapshot due captures the schema too (SnapshotReader.schema: its isolation level and locks).
        self._schema_snapshot = True
        #: ``database.sqlserver.agent.status.query``: at start, and at a poll without a maximum LSN.
        self._agent = AgentCheck(config.get(msc.AGENT_STATUS_QUERY), self.db, self.log)

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Cross-property problems (no I/O)."""
        # time.precision.mode=adaptive_time_microseconds is accepted, as 2.7.4's SQL Server connector does (its
        # RelationalDatabaseConnectorConfig field; JdbcValueConverters makes TIME MicroTime): cdc_sqlserver.types.
        return []

    def partition(self) -> dict[str, Any]:
        """``{"server": topic.prefix, "database": <name>}``, as SqlServerPartition."""
        return {"server": self.server, "database": self.db}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect and check that CDC is enabled and readable for the captured tables."""
        self._offset = offset
        store = history_store(self.config, self._context.history)
        require_history(store, offset, self.snapshotter)  # as Debezium's validateAndLoadSchemaHistory
        self._history = SchemaHistory(
            store, self.server, self.db, SOURCE_SCHEMA,
            topic_naming_strategy(self.config, self._context.plugins).schema_change_topic(), self.partition(),
            self.config.get(msc.INCLUDE_SCHEMA_CHANGES), self.log.with_context("schema"))
        self._history.recover(offset)
        self._conn = self._connect()
        try:
            self._check()
        except (ConnectorError, RetriableError):
            raise
        except Exception as e:
            if _is_connection_error(e):
                raise RetriableError(f"lost the connection to SQL Server at {self.address}: {_first_line(e)}") from None
            raise ConnectorError(f"SQL Server at {self.address} refused a start-up query on database {self.db!r} as "
                                 f"user {self.config.get(msc.USER)!r}: {_first_line(e)}; check the user's "
                                 "permissions (it needs to read the sys catalog views and the cdc schema)") from None

    def _check(self) -> None:
        """Read the catalog and the capture instances, checking CDC is enabled and readable."""
        self._check_cdc_enabled()
        tables = read_tables(self._conn, self.db, self.modes, self._parse)
        included = {k: t for k, t in tables.items() if self._included(t.id.schema or "", t.id.table)}
        instances = read_capture_instances(self._conn, included)
        self._check_access(included, instances)
        self._agent.at_start(self._conn, self.address)
        order = snapshot_order(instances.values(), self.config.get(common.TABLE_INCLUDE),
                               lambda i: i.table.id.identifier)
        self._instances = list(order)
        # As Debezium 2.7.4, an included table without CDC is snapshotted (with all its columns), not streamed until
        # sys.sp_cdc_enable_table gives it a capture instance (streaming then picks it up).
        self._without_cdc = [UncapturedTable(t) for k, t in included.items() if k not in instances]
        signal = signal_table_key(self.config, self.db)
        #: The signal table, if it exists: in the snapshot's table count, never read (see signal_table_captured).
        self._signal_table = tables[signal].id.identifier if signal in tables else None
        groups = database_groups(self.metrics, self.db)
        if groups is not None:
            for group in groups:
                group.captured = [i.table.id.identifier for i in self._instances]
        self.log.info("capturing %d tables of database %s: %s", len(self._instances), self.db,
                      ", ".join(f"{i.table.id.identifier} (capture instance {i.name})" for i in self._instances))

    def stream(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Snapshot if the mode and offsets ask for it, then poll the change tables."""
        try:
            assert self._history is not None
            # Schema change events (CREATE at the snapshot, ALTER on a new capture instance): cdc_sqlserver.schema_history.
            # Per-database metrics (the database=<name> MBeans): cdc_sqlserver.metrics.
            yield from counted(self._history.watch(self._run(), self._schema_tables,
                                                   self._offset, lambda: self._snapshotting), self.metrics, self.db)
        except Exception as e:
            if _is_connection_error(e):
                if self._stop.is_set():
                    return
                raise RetriableError(f"lost the connection to SQL Server at {self.address}: {_first_line(e)}") from None
            raise

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """A committed offset: a Capture Instance notification for each replaced instance it is past
        (cdc_sqlserver.instance_notes); nothing to release, SQL Server keeps change rows until its cleanup job."""
        reader = self._stream_reader
        if reader is not None:
            self._instance_completion.committed(offset, list(reader.instances), self.notifier)

    def attach_notifier(self, notifier: Any) -> None:
        """Send the initial snapshot's and capture instances' notifications through ``notifier``."""
        self.notifier = notifier
        self._notices = InitialSnapshotNotifications(notifier)

    def stop(self) -> None:
        """Ask ``stream`` to end."""
        self._stop.set()
        if self._snapshot_reader is not None:
            self._snapshot_reader.stopped = True

    def close(self) -> None:
        """Close the connection."""
        if self.metrics is not None:
            self.metrics.streaming.connected = False
        if self._history is not None and self._context.history is None:
            try:
                self._history.store.close()
            except Exception as e:  # a store that cannot close has nothing left to write
                self.log.warning("closing the schema history store failed: %s", e)
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception as e:  # closing a broken connection: nothing left to release
                self.log.debug("closing the connection: %s", _first_line(e))
            self._conn = None

    # -- connection and checks ---------------------------------------------------------------

    def _connect(self) -> Any:
        """A connection to the database; a login refusal is a ConnectorError, the rest retriable."""
        try:
            return odbc.connect(self.config, self.db)
        except ConnectorError:
            raise
        except Exception as e:
            state = e.args[0] if getattr(e, "args", None) else ""
            message = _first_line(e).replace(self.config.get(msc.PASSWORD) or "\0", "****")
            if state in ("28000", "42000") or "Login failed" in message:
                raise ConnectorError(f"SQL Server at {self.address} refused the login of user "
                                     f"{self.config.get(msc.USER)!r} to database {self.db!r}: {message}; check "
                                     "database.user, database.password and database.names") from None
            raise RetriableError(f"cannot connect to SQL Server at {self.address}: {message}") from None

    def _schema_included(self, schema: str) -> bool:
        """Whether ``schema`` passes the schema include/exclude lists."""
        sinc, sexc = self.config.get(common.SCHEMA_INCLUDE), self.config.get(common.SCHEMA_EXCLUDE)
        if sinc and not any(p.fullmatch(schema) for p in sinc):
            return False
        return not (sexc and any(p.fullmatch(schema) for p in sexc))

    def _included(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` passes the schema and table include/exclude lists."""
        ident = f"{schema}.{table}"
        inc, exc = self.config.get(common.TABLE_INCLUDE), self.config.get(common.TABLE_EXCLUDE)
        if not self._schema_included(schema):
            return False
        if inc:
            return any(p.fullmatch(ident) for p in inc)
        return not (exc and any(p.fullmatch(ident) for p in exc))

    def _check_cdc_enabled(self) -> None:
        """Refuse a database that does not exist or has CDC off, naming the fix."""
        row = self._conn.execute(CDC_ENABLED, self.db).fetchone()
        if row is None:
            raise ConnectorError(f"database {self.db!r} does not exist on SQL Server at {self.address}; check "
                                 "database.names")
        if not row[0]:
            raise ConnectorError(f"CDC is not enabled on database {self.db!r} at {self.address}: run "
                                 f"USE [{self.db}]; EXEC sys.sp_cdc_enable_db (as a member of sysadmin), then "
                                 "sys.sp_cdc_enable_table for each table to capture")

    def _check_access(self, included: dict, instances: dict[tuple[str, str], CaptureInstance]) -> None:
        """Refuse capture instances the user cannot read; warn about included tables without CDC.

        As Debezium 2.7.4, no capture instance at all is no refusal: the snapshot reads the included
        tables and streaming warns (``_streaming_instances``), picking up a table enabled later.
        """
        visible = {r[2] for r in self._conn.execute(HELP_CHANGE_DATA_CAPTURE).fetchall()}
        tracked = {(s, t) for s, t in self._conn.execute(TRACKED_TABLES).fetchall()}
        user = self.config.get(msc.USER)
        for key, inst in list(instances.items()):
            if inst.name not in visible:
                raise ConnectorError(
                    f"user {user!r} cannot read capture instance {inst.name!r} of table {inst.table.id} in database "
                    f"{self.db!r} (sys.sp_cdc_help_change_data_capture does not list it): grant SELECT on the "
                    "captured columns and membership of the instance's gating role (or db_owner)")
        for key in included:
            if key not in instances:
                self.log.warning("table %s.%s is not enabled for CDC (%s): a snapshot reads it, but its changes are not streamed; run "
                                 "EXEC sys.sp_cdc_enable_table @source_schema = N'%s', @source_name = N'%s', "
                                 "@role_name = NULL", key[0], key[1],
                                 "tracked, but no capture instance" if key in tracked else "no capture instance",
                                 key[0], key[1])

    # -- the run -----------------------------------------------------------------------------

    def _position_available(self, offset: dict[str, Any]) -> bool:
        """Debezium's validateLogPosition: the stored commit LSN is above the oldest start LSN of every change table.

        A stored NULL commit LSN (a snapshot of a database with no change yet) counts as available:
        streaming then starts at each instance's first change.
        """
        stored = Lsn.parse(offset.get("commit_lsn"))
        if not stored.available:
            return True
        oldest = self._conn.execute(MIN_LSN_OF_ALL_CHANGE_TABLES).fetchone()
        if oldest is None or oldest[0] is None:
            return False
        return from_value(oldest[0]).key() < stored.key()

    def _warn_if_ahead(self, offset: dict[str, Any]) -> None:
        """Warn when the stored commit LSN lies above the database's highest one (offsets from elsewhere, or edited).

        Not refused, as Debezium 2.7.4 (validateLogPosition checks only the lower bound): its streaming loop
        finds "no change in the database" until the database's max LSN passes the stored one, and so does cdc's.
        """
        stored = Lsn.parse(offset.get("commit_lsn"))
        if not stored.available:
            return
        row = self._conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
        if row is None or row[0] is None or from_value(row[0]).key() >= stored.key():
            return
        self.log.warning("the stored offset (commit LSN %s) is ahead of the highest LSN %s of database %s on %s: "
                         "these offsets are not this database's (copied from elsewhere, or edited?). Nothing is "
                         "streamed until the database's changes pass that LSN; put back the right offsets, or delete "
                         "them to take a new snapshot", offset.get("commit_lsn"), from_value(row[0]), self.db,
                         self.address)

    def _run(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Check the stored position, snapshot if due, then stream."""
        offset = self._offset
        if offset is not None and not (offset.get("snapshot") and not offset.get("snapshot_completed")) \
                and not self._position_available(offset):
            if self.snapshotter.should_snapshot_on_data_error():
                self.log.warning("the stored offset (commit LSN %s) is no longer available on %s: the cleanup job "
                                 "removed changes after it; taking a new snapshot (snapshot.mode=%s)",
                                 offset.get("commit_lsn"), self.address, self.snapshotter.name)
                offset = None
            else:
                self.log.warning("the stored offset (commit LSN %s) is no longer available on %s: the cleanup job "
                                 "removed changes after it, which are lost; streaming goes on from the oldest change "
                                 "left. Set snapshot.mode=when_needed to take a new snapshot instead",
                                 offset.get("commit_lsn"), self.address)
        in_progress = bool(offset and offset.get("snapshot") and not offset.get("snapshot_completed"))
        if offset is not None and not in_progress:
            self._warn_if_ahead(offset)
        self._schema_snapshot = bool(self.snapshotter.should_snapshot_schema(offset is not None, in_progress))
        snapshotted: list[bool] = []

        def snapshot() -> Iterator[list[RawChange | Checkpoint]]:
            snapshotted.append(True)
            return self._snapshot()

        def no_data() -> dict[str, Any]:
            snapshotted.append(True)
            return self._no_data_offset()

        def stream(at: dict[str, Any] | None) -> Iterator[list[RawChange | Checkpoint]]:
            if not snapshotted:
                # Debezium 2.7.4's AbstractSnapshotChangeEventSource.execute: a snapshot that is not due
                # (shouldSkipSnapshot, e.g. a restart after a completed one) is an Initial Snapshot SKIPPED.
                self._notices.skipped()
            return self._stream(ResumePoint(at))

        yield from snapshot_then_stream(self.snapshotter, offset, self.config, self._stop, self.log, snapshot,
                                        no_data, stream)

    def _no_data_offset(self) -> dict[str, Any]:
        """``no_data``: streaming starts at the current max LSN (as the snapshot offset Debezium records then)."""
        row = self._conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
        # Debezium's no_data snapshot reads the schema: an Initial Snapshot STARTED and COMPLETED, no tables.
        self._notices.started()
        self._notices.completed()
        return {"snapshot": True, "snapshot_completed": True, "commit_lsn": str(from_value(row[0]))}

    def _snapshot(self) -> Iterator[list[RawChange | Checkpoint]]:
        """The snapshot on its own connection and transaction."""
        self._snapshotting = True
        notices = self._notices
        notices.started()
        completed = False
        conn = self._connect()
        try:
            reader = self._snapshot_reader = SnapshotReader(
                conn, self.server, self.db, self.config.get(msc.SNAPSHOT_ISOLATION_MODE),
                self.config.get(msc.SNAPSHOT_FETCH_SIZE), self.log.with_context("snapshot"))
            reader.lock = self._snapshot_lock
            reader.lock_timeout_ms = self.config.get(common.SNAPSHOT_LOCK_TIMEOUT_MS)
            reader.schema = self._schema_snapshot
            include = self.config.get(common.SNAPSHOT_INCLUDE_COLLECTIONS)
            tables = snapshot_order([*self._instances, *self._without_cdc], self.config.get(common.TABLE_INCLUDE),
                                    lambda i: i.table.id.identifier)
            signal = self._signal_table
            counted = [i.table.id.identifier for i in tables if _snapshot_included(include, self.db, i.table.id.identifier)]
            if signal is not None and signal not in counted and _snapshot_included(include, self.db, signal):
                # Debezium's captured tables hold the signal table (its filter includes it), after the tables the
                # include list names (addSignalingCollectionAndSort): counted in TotalTableCount, with no rows.
                counted = snapshot_order([*counted, signal], self.config.get(common.TABLE_INCLUDE))
            # As Debezium's determineSnapshotSelect: the signal table's rows are never snapshotted, included or not.
            instances = [i for i in tables if i.table.id.identifier in counted and i.table.id.identifier != signal]
            lsn = reader.begin(instances)
            self.log.info("snapshot of %d tables at LSN %s (snapshot.isolation.mode=%s)", len(instances), lsn,
                          reader.isolation)
            # A table a custom SnapshotQuery gives no SELECT for is not read (Debezium: "the select statement was not
            # provided, skipping table"), nor counted among the tables whose first and last rows are marked.
            reads = [(i, select) for i in instances if (select := self._select(i)) is not None]
            # TABLE_SCAN_COMPLETED names the captured tables, the signal table among them (addSignalingCollectionAndSort:
            # in include-list order, the signal table where its pattern comes).
            captured = [Table(TableId(self.db, *name.split(".", 1)), [], []) for name in counted]
            yield from notices.tables(metered_snapshot(reader.read(reads), self.metrics, self.db, counted),
                                      [i.table for i, _ in reads], captured, self._stop.is_set)
            reader.end()
            completed = not self._stop.is_set()
        finally:
            if completed:
                notices.completed()
            else:
                notices.aborted()
            self._snapshot_reader = None
            try:
                conn.close()
            except Exception as e:  # the snapshot's own connection; closing it cannot lose data
                self.log.debug("closing the snapshot connection: %s", _first_line(e))

    def _streaming_instances(self, streamed_to: Lsn | None = None) -> list[CaptureInstance]:
        """Every capture instance of the captured tables, older ones stopping where their successor starts.

        ``streamed_to``: the commit LSN streaming has processed; a table's only instance that started at or
        before it converts with the schema history's structure (below).
        """
        tables = read_tables(self._conn, self.db, self.modes, self._parse)
        signal = signal_table_key(self.config, self.db)  # streamed for signals and watermarks, captured or not
        included = {k: t for k, t in tables.items() if self._included(t.id.schema or "", t.id.table) or k == signal}
        found = read_all_capture_instances(self._conn, included)
        if signal is not None and signal not in found:
            self.log.warning("signal.data.collection %s.%s.%s %s: create it as (id VARCHAR(42) PRIMARY KEY, type "
                             "VARCHAR(32) NOT NULL, data VARCHAR(2048)) and enable it for CDC to use the source signal "
                             "channel and incremental snapshots", self.db, *signal,
                             "has no capture instance" if signal in included else "does not exist")
        if not found:
            # Debezium 2.7.4's getChangeTablesToQuery: its two warnings, at the start of streaming and whenever
            # the change tables are read again (a capture instance appeared or went).
            if not instance_names(self._conn):
                self.log.warning("No table has enabled CDC or security constraints prevents getting the list of "
                                 "change tables")
            self.log.warning("No table on connector's include list has enabled CDC, tables on include list do not "
                             "contain any table with CDC enabled or no table match the include/exclude filter(s)")
        if self._history is not None:
            for instances in found.values():
                # The instance a newer one replaces converts with the history's structure (Debezium: the
                # schema's table until migrateTable), not the catalog's, which already has the new one's.
                for inst in instances[:-1]:
                    recorded = self._history.table_from_history(inst.table, inst.columns, self.modes, self._parse)
                    if recorded is not None and recorded is not inst.table:
                        self.log.info("capture instance %s of %s converts with the schema history's structure "
                                      "until capture instance %s starts at %s", inst.name, inst.table.id,
                                      instances[-1].name, inst.stop_lsn)
                        inst.table = recorded
                # So does a table's only instance once streaming has passed its start (or never streamed: a NULL
                # position): a column whose type changed with no new capture instance keeps the recorded type, and
                # no ALTER is due (Debezium 2.7.4's getChangeTablesToQuery gives the current change table the
                # schema's table; a replacing instance, or one starting after the last processed LSN, is migrated
                # from the catalog when reached).
                current = instances[-1]
                if len(instances) == 1 and streamed_to is not None and \
                        (not streamed_to.available or current.start_lsn.key() <= streamed_to.key()):
                    recorded = self._history.table_from_history(current.table, current.columns, self.modes,
                                                                      self._parse)
                    if recorded is not None and recorded is not current.table:
                        self.log.warning("%s differs in the catalog from the schema history (a column changed with "
                                         "no new capture instance): capture instance %s converts with the history's "
                                         "structure until a new capture instance starts", current.table.id,
                                         current.name)
                        current.table = recorded
        return [i for instances in found.values() for i in instances]

    def _schema_tables(self) -> list[Table]:
        """The tables a snapshot records a CREATE for (cdc_sqlserver.schema_tables, as Debezium 2.7.4)."""
        return schema_tables(self._conn, self.db, self.modes, [i.table for i in self._instances],
                             self.config.get(msc.STORE_ONLY_CAPTURED_TABLES),
                             self.config.get(msc.STORE_ONLY_CAPTURED_DATABASES), self._included,
                             self._schema_included, signal_table_key(self.config, self.db), self._parse)

    def _recorded(self, table: Table, captured: list[str], parse: ServerParse | None = None) -> Table | None:
        """``table`` as the schema history last recorded it (None without a history or a usable record).

        ``parse``: the server's PARSE of temporal defaults on the caller's own connection (another thread's),
        else on this connector's."""
        history = self._history
        return None if history is None else history.table_from_history(table, captured, self.modes,
                                                                        parse or self._parse)

    @property
    def streaming(self) -> bool:
        """True once the snapshot (if any) is over and the change tables are polled."""
        return self._stream_reader is not None

    def round_position(self) -> tuple[str | None, str | None, int | None] | None:
        """Debezium's offset context of this database where a blocking snapshot pauses it: ``(change_lsn,
        commit_lsn, event_serial_no)`` as the stream stood at its last poll's end, or, before streaming started
        (a blocking snapshot resumed at start), the stored offset's; None without either."""
        if self._round_position is not None:
            return self._round_position
        offset = self._offset
        if not offset or (offset.get("snapshot") and not offset.get("snapshot_completed")):
            return None
        serial = offset.get("event_serial_no")
        return (lsn_text(offset.get("change_lsn")), lsn_text(offset.get("commit_lsn")),
                None if serial is None else int(serial))

    def incremental_snapshot_source(self) -> SqlServerIncrementalSource:
        """Ad hoc snapshots (``cdc_core.incremental.spi``) over the tables this connector captures."""
        source = SqlServerIncrementalSource(self.config, self.log)
        source.included = self._included
        source.recorded = self._recorded
        source.parse = self._parse
        source.created = self._blocking_created
        source.position = self.round_position
        source.metrics = self.metrics
        return source

    def _blocking_created(self, tables: list[Table], position: dict[str, Any], event_offset: dict[str, Any] | None,
                          lsns: tuple[str | None, str | None, int | None]) -> list[Any]:
        """A blocking snapshot's CREATE events, recorded in the schema history (cdc_sqlserver.schema_history);
        streaming converts with the recorded structures from its next window on."""
        if self._history is None:
            return []
        events = self._history.blocking_snapshot_events(tables, position, event_offset, lsns)
        if self._stream_reader is not None:
            names = {t.id.identifier for t in tables}
            self._history.superseded([i.table for i in self._stream_reader.instances if i.table.id.identifier in names])
        self._reload_instances = True
        return events

    def _heartbeat_action(self, query: str, log: Any) -> None:
        """Run ``heartbeat.action.query`` (e.g. an insert into a captured heartbeat table) so a quiet database moves."""
        try:
            self._conn.execute(query)
        except Exception as e:
            if _is_connection_error(e):
                raise
            log.warning("heartbeat.action.query failed: %s", _first_line(e))

    def _select(self, inst: CaptureInstance | UncapturedTable) -> str | None:
        """The table's snapshot SELECT (cdc_sqlserver.snapshot_select); None: its rows are not read."""
        return self._selects.select(inst.table)

    def _stream(self, resume: ResumePoint) -> Iterator[list[RawChange | Checkpoint]]:
        """Poll the change tables until stopped."""
        log = self.log.with_context("streaming")
        # The core drops skipped operations; leaving them out of the query as well saves the round trips.
        skipped = {s.strip() for s in self.config.get(common.SKIPPED_OPERATIONS) or [] if s.strip() != "none"}
        reader = StreamReader(self._conn, self.server, self.db, self._streaming_instances(resume.position.commit),
                              resume, self.config.get(msc.DATA_QUERY_MODE), skipped, log,
                              self.config.get(msc.MAX_ITERATION_TRANSACTIONS),
                              lambda: self._streaming_instances(reader.last_commit),
                              self.config.get(msc.STREAMING_FETCH_SIZE), self._agent)
        self._stream_reader = reader
        log.info("streaming from commit LSN %s (change LSN %s, event %d)", resume.position.commit,
                 resume.position.change, resume.serial)
        if self.metrics is not None:
            self.metrics.streaming.connected = True
            self.metrics.streaming.captured_tables = {i.table.id.identifier for i in self._instances}
        interval = self.config.get(common.POLL_INTERVAL_MS) / 1000.0
        heartbeat = self.config.get(common.HEARTBEAT_INTERVAL_MS) / 1000.0
        action = self.config.get(common.HEARTBEAT_ACTION_QUERY)
        last_action = time.monotonic()
        while not self._stop.is_set():
            if action and heartbeat and time.monotonic() - last_action >= heartbeat:
                last_action = time.monotonic()
                self._heartbeat_action(action, log)
            if self._reload_instances:
                # A blocking snapshot recorded the catalog's structures (Debezium's schema then holds them, and
                # its stream converts with them): the instances take the history's structures again.
                self._reload_instances = False
                reader.reload(self._streaming_instances(reader.last_commit))
            window = reader.window()
            got = False
            if window is not None:
                for batch in window:
                    got = True
                    yield batch
                    if self._stop.is_set():
                        return
            if self._reload_instances:
                self._reload_instances = False  # the checks below take the structures a blocking snapshot recorded
                reader.reload(self._streaming_instances(reader.last_commit))
            # Capture instances this poll reached: cdc_sqlserver.schema_history turns each into its ALTER/CREATE if due.
            checks: list[Any] = [TableCheck(inst.table) for inst in reader.reached()]
            if not got:
                # An idle position: the core sends a heartbeat when one is due.
                yield [*checks, Checkpoint(reader.idle_offset())]
                self._stop.wait(interval)
            elif checks:
                yield [*checks, Checkpoint(reader.offset())]
            # The poll's end (with several databases, cdc_sqlserver.tasks.round_robin ends the round after each one's):
            # a blocking snapshot signalled in it runs here (pauses_at_round_end), on the stream's position.
            self._round_position = reader.source_position()
            yield RoundEnd(None, {self.db: self._round_position})


def _snapshot_included(patterns: list[Any] | None, db: str, identifier: str) -> bool:
    """Whether ``snapshot.include.collection.list`` takes table ``identifier`` (``schema.table``) of database ``db``.

    As Debezium 2.7.4's AbstractSnapshotChangeEventSource.determineDataCollectionsToBeSnapshotted: a pattern matches
    the whole of the TableId's identifier, which for SQL Server holds the database (``testDB1.dbo.table_a``), or its
    double-quoted form (``"testDB1"."dbo"."table_a"``); ``dbo.table_a`` alone matches nothing. No list: every table.
    """
    if not patterns:
        return True
    schema, _, table = identifier.partition(".")
    names = (f"{db}.{identifier}", f'"{db}"."{schema}"."{table}"')
    return any(p.fullmatch(name) for p in patterns for name in names)
