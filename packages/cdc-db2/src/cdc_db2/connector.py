"""The Db2 connector: start-up checks, the snapshot, then the change-data tables."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from cdc_core.config import Config, Fields, common
from cdc_core.errors import ConnectorError, RetriableError
from cdc_core.events import Checkpoint, RawChange, RoundEnd
from cdc_core.filters import snapshot_order
from cdc_core.notifications.initial import InitialSnapshotNotifications
from cdc_core.plugins import registry
from cdc_core.relational import Table
from cdc_core.snapshot import snapshot_lock, snapshot_query, snapshotter
from cdc_core.snapshot.phases import snapshot_then_stream
from cdc_core.spi.connector import ConnectorContext
from cdc_core.spi.offsets import OffsetShape
from cdc_core.stores.configured_history import history_store
from cdc_core.stores.history_required import require_history
from cdc_db2 import config as dbc
from cdc_db2 import driver
from cdc_db2.dialects import dialect
from cdc_db2.catalog import (SYSTEM_SCHEMAS, CaptureTable, Registration, max_lsn_query, quote, read_registrations,
                             read_schemas, read_tables, service_status_query, system_table)
from cdc_db2.errors import first_line, is_connection_error, sqlstate
from cdc_db2.blocking import Position, position_of
from cdc_db2.incremental import signal_table
from cdc_db2.lsn import Lsn, from_value
from cdc_db2.plugin import CONNECTOR
from cdc_db2.snapshot import ExclusiveSnapshotLock, SnapshotReader, quote_table_id, select_for
from cdc_db2.history import replay
from cdc_db2.schema_changes import infos_from_json, schema_change_record, table_json
from cdc_db2.source import SOURCE_SCHEMA, source_block
from cdc_db2.streaming import ResumePoint, StreamReader
from cdc_db2.timestamps import select_items, select_list
from cdc_db2.types import TypeModes, column

#: How often streaming re-checks the capture service while no change arrives (seconds).
SERVICE_CHECK_INTERVAL = 10.0


class Db2Connector:
    """Debezium's Db2 connector: snapshot at the highest synchpoint, then the CD tables in commit order."""

    name: ClassVar[str] = CONNECTOR.name
    class_names: ClassVar[tuple[str, ...]] = CONNECTOR.class_names
    fields: ClassVar[Fields] = dbc.FIELDS
    source_schema = SOURCE_SCHEMA
    offset_shape: ClassVar[OffsetShape] = OffsetShape(
        required={"commit_lsn": "str"},
        optional={"change_lsn": "str", "event_serial_no": "uint", "snapshot": "bool", "snapshot_completed": "bool"})
    #: As Debezium 2.7.4's Db2StreamingChangeEventSource.execute, which checks ``context.isPaused()`` only at the end
    #: of a poll iteration, after the whole window's changes: a blocking snapshot runs at the ``RoundEnd`` that
    #: follows each window read (``_stream``), not at the signal's row (cdc_core.signals.controller).
    pauses_at_round_end: ClassVar[bool] = True
    #: Debezium's RelationalTableFilters add ``signal.data.collection`` to the data collection filter: the signal
    #: table's streamed rows (signals, watermarks) are change events on its topic whatever the include list says,
    #: and it gets its CREATE at the snapshot, but its rows are never snapshotted (determineSnapshotSelect gives it
    #: no SELECT; ``_snapshot``). cdc_core.signals.controller reads this.
    signal_table_captured: ClassVar[bool] = True

    def __init__(self, config: Config, context: ConnectorContext):
        """Read the configuration; no I/O."""
        self.config = config
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.db = config.get(dbc.DBNAME) or ""
        self.control = config.get(dbc.CONTROL_SCHEMA)
        self.address = dbc.server_address(config)
        self.zos = config.get(dbc.PLATFORM) == "zos"
        #: The platform's catalog and control-table SQL (cdc_db2.dialects).
        self.dialect = dialect(config.get(dbc.PLATFORM))
        plugins = context.plugins if context.plugins is not None else registry()
        self.snapshotter = snapshotter(config, config.get(dbc.SNAPSHOT_MODE), plugins)
        #: ``snapshot.query.mode=custom``'s SnapshotQuery (select_all: the overrides or every column, below).
        self.snapshot_query = (snapshot_query(config, "custom", plugins)
                               if config.get(common.SNAPSHOT_QUERY_MODE) == "custom" else None)
        locking = config.get(dbc.SNAPSHOT_LOCKING_MODE)
        self.snapshot_lock = (ExclusiveSnapshotLock() if locking == "exclusive"
                              else snapshot_lock(config, locking, plugins))
        self.modes = TypeModes.from_config(config)
        self.metrics = context.metrics
        self._stop = threading.Event()
        self._conn: Any = None
        self._offset: dict[str, Any] | None = None
        self._snapshot_reader: SnapshotReader | None = None
        self._tables: list[CaptureTable] = []
        #: The captured tables as the catalog describes them at start (a snapshot reads these).
        self._live_tables: list[CaptureTable] = []
        #: Included tables not in capture mode: a snapshot reads them too, streaming never does.
        self._uncaptured: list[CaptureTable] = []
        #: ``no_data``'s schema snapshot events, sent when streaming starts.
        self._pending: list[Any] = []
        self._registrations: list[Registration] = []
        self._cd_columns: list[tuple[Any, ...]] = []
        #: What the schema change events announced last of every registered table: ``schema.table`` to
        #: ``(schema, table, definition)``; None until the snapshot or the schema history sets it.
        self._known: dict[str, tuple[str, str, dict[str, Any]]] | None = None
        #: The schema history (``cdc run``: ``schema.history.internal``'s file; cdc_core.stores.configured_history).
        self.history = history_store(config, context.history)
        #: The streaming side's reader, once streaming started (a blocking snapshot hands it the tables it read).
        self._stream_reader: StreamReader | None = None
        #: Where the stream stood at its last window's end: ``(change_lsn, commit_lsn, event_serial_no)``.
        self._round_position: Position | None = None
        #: ``CURRENT SERVER`` (read at start): the snapshot's schema change events' ``databaseName``.
        self.server_name = self.db
        #: The initial snapshot's notifications (the signal controller hands over the engine's notifier).
        self._notices = InitialSnapshotNotifications(None)

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Cross-property problems (no I/O)."""
        # time.precision.mode=adaptive_time_microseconds is accepted, as Debezium 2.7.4's Db2 connector does (the
        # common TemporalPrecisionMode field; JdbcValueConverters makes TIME a MicroTime), though the chapter
        # names only adaptive and connect.
        return []

    def incremental_snapshot_source(self) -> Any:
        """Ad hoc snapshots (incremental and blocking) over the captured tables (cdc_db2.incremental)."""
        from cdc_db2.incremental import Db2IncrementalSource

        return Db2IncrementalSource(self)

    def attach_notifier(self, notifier: Any) -> None:
        """Send the initial snapshot's notifications through ``notifier`` (cdc_core.notifications.initial)."""
        self._notices = InitialSnapshotNotifications(notifier)

    def partition(self) -> dict[str, Any]:
        """``{"server": topic.prefix}``, as Db2Partition."""
        return {"server": self.server}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect and check the capture service, the captured tables' registration and the user's access."""
        self._offset = offset
        require_history(self.history, offset, self.snapshotter)  # as Debezium's validateAndLoadSchemaHistory
        if offset is not None and self.history is not None and self.history.exists() and not self._recovers(offset):
            self._known = replay(self.history, offset)
        self._conn = self._connect()
        try:
            self._check()
            self.server_name = self._current_server()
        except (ConnectorError, RetriableError):
            raise
        except Exception as e:
            if is_connection_error(e):
                raise RetriableError(f"lost the connection to Db2 at {self.address}: {first_line(e)}") from None
            raise ConnectorError(f"Db2 at {self.address} refused a start-up query as user "
                                 f"{self.config.get(dbc.USER)!r}: {first_line(e)}; check the user's privileges (it "
                                 f"needs SELECT on {self.dialect.columns}, {self.dialect.tables}, the {self.control} "
                                 "control tables and the CD tables)") from None

    def stream(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Snapshot if the mode and offsets ask for it, then poll the CD tables."""
        try:
            yield from self._run()
        except Exception as e:
            if is_connection_error(e):
                if self._stop.is_set():
                    return
                raise RetriableError(f"lost the connection to Db2 at {self.address}: {first_line(e)}") from None
            raise

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the capture program prunes CD rows by its own schedule."""

    def stop(self) -> None:
        """Ask ``stream`` to end."""
        self._stop.set()
        if self._snapshot_reader is not None:
            self._snapshot_reader.stopped = True

    def close(self) -> None:
        """Close the connection."""
        if self.metrics is not None:
            self.metrics.streaming.connected = False
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception as e:  # closing a broken connection: nothing left to release
                self.log.debug("closing the connection: %s", first_line(e))
            self._conn = None

    # -- connection and checks ---------------------------------------------------------------

    def _connect(self) -> Any:
        """A connection; a login refusal or unknown database is a ConnectorError, the rest retriable."""
        password = self.config.get(dbc.PASSWORD)
        try:
            return driver.connect(self.config)
        except ConnectorError:
            raise
        except Exception as e:
            message = first_line(e)
            if password:
                message = message.replace(password, "****")
            if "SQL30082N" in message or "SQL1013N" in message or sqlstate(e) in ("28000", "08004"):
                raise ConnectorError(f"Db2 at {self.address} refused the connection of user "
                                     f"{self.config.get(dbc.USER)!r}: {message}; check database.user, "
                                     "database.password and database.dbname") from None
            raise RetriableError(f"cannot connect to Db2 at {self.address}: {message}") from None

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement on the main connection; every row."""
        cur = self._conn.cursor()
        cur.execute(sql, params) if params else cur.execute(sql)
        return cur.fetchall()

    def _included(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` passes the table include/exclude lists."""
        ident = f"{schema}.{table}"
        inc, exc = self.config.get(common.TABLE_INCLUDE), self.config.get(common.TABLE_EXCLUDE)
        if inc:
            return any(p.fullmatch(ident) for p in inc)
        return not (exc and any(p.fullmatch(ident) for p in exc))

    def _check(self) -> None:
        """The capture service, the register, the captured tables and the user's access to their CD tables."""
        registrations = self._read_registrations()
        self._check_service()
        if self.zos:
            self._check_lsn_format()
        self._tables = self._capture_tables(registrations, warn=True)
        if not any(t.registration.active for t in self._tables):
            # A warning, not a refusal: Debezium 2.7.4 runs on (getCdcTablesToQuery warns, Db2ConnectorIT.
            # testEmptySchemaWarningAfterApplyingFilters) and streams the tables registered later.
            candidates = [f"{r.schema}.{r.table}" for r in registrations if self._included(r.schema, r.table)]
            self.log.warning(
                "After applying the include/exclude list filters, no changes will be captured: no table of database "
                "%r at %s is in capture mode and ACTIVE in %s.IBMSNAP_REGISTER (registered tables matching the "
                "filters: %s); run CALL %s.ADDTABLE('<SCHEMA>', '<TABLE>') for each table, then VALUES "
                "%s.ASNCDCSERVICES('reinit','%s'), or fix table.include.list", self.db, self.address, self.control,
                ", ".join(candidates) or "none", self.control, self.control, self.control.lower())
        for t in self._tables:
            self._check_access(t)
        order = snapshot_order(self._tables, self.config.get(common.TABLE_INCLUDE), lambda t: t.table.id.identifier)
        self._tables = self._live_tables = list(order)
        self._uncaptured = self._uncaptured_tables()
        if self._uncaptured:
            self.log.info("tables not in capture mode, read by a snapshot only (as Debezium): %s",
                          ", ".join(t.table.id.identifier for t in self._uncaptured))
        if self._known:
            self._tables = [self._from_history(t) for t in self._tables]
        self.log.info("capturing %d tables of database %s: %s", len(self._tables), self.db, ", ".join(
            f"{t.table.id.identifier} (CD table {t.registration.cd_schema}.{t.registration.cd_table})"
            for t in self._tables))

    def _current_server(self) -> str:
        """``CURRENT SERVER``: the database's real name (upper case), as Db2Connection.retrieveRealDatabaseName."""
        rows = self._query("SELECT CURRENT SERVER FROM SYSIBM.SYSDUMMY1")
        return str(rows[0][0]).strip() if rows and rows[0][0] is not None else self.db

    def _read_registrations(self) -> list[Registration]:
        """``IBMSNAP_REGISTER``; a missing control table is a clear refusal."""
        try:
            registrations = read_registrations(self._conn, self.control, self.dialect)
        except Exception as e:
            if sqlstate(e) in ("42704", "42P01"):
                raise ConnectorError(
                    f"the ASN control table {self.control}.IBMSNAP_REGISTER does not exist in database {self.db!r} at "
                    f"{self.address}: set up SQL Replication's capture control tables (asncdctables.sql) or set "
                    "cdc.control.schema to their schema") from None
            if sqlstate(e) == "42501":
                raise ConnectorError(f"user {self.config.get(dbc.USER)!r} may not read {self.control}.IBMSNAP_REGISTER "
                                     f"at {self.address}: {first_line(e)}; GRANT SELECT ON {self.control}.IBMSNAP_REGISTER "
                                     "(and the other IBMSNAP_ tables and the CD tables) to it") from None
            raise
        self._registrations = registrations
        self._cd_columns = self._cd_signature(registrations)
        return registrations

    def _check_lsn_format(self) -> None:
        """z/OS: refuse 6-byte log sequence numbers (10-byte synchpoints), which the chapter says cannot be used."""
        rows = self._query(max_lsn_query(self.control, self.dialect))
        raw = rows[0][0] if rows else None
        if raw is not None and len(bytes(raw)) < 16:
            raise ConnectorError(
                f"Db2 for z/OS at {self.address} uses {len(bytes(raw))}-byte synchpoints in {self.control}.IBMSNAP_REGISTER "
                "(6-byte RBA/LRSN log sequence numbers): Debezium's Db2 connector, and cdc's, cannot be used with them "
                "(the Db2 chapter); convert the subsystem to the extended 10-byte RBA/LRSN format (16-byte synchpoints)")

    def _check_service(self) -> None:
        """The ASN capture service must run: without it no change reaches the CD tables."""
        status = self._service_status()
        if status is not None and "not running" in status.lower():
            raise RetriableError(
                f"the ASN capture service of {self.db!r} at {self.address} is not running ({status.strip()}): no change "
                f"reaches the CD tables until it runs; start it with VALUES {self.control}.ASNCDCSERVICES('start',"
                f"'{self.control.lower()}') (or asncap capture_schema={self.control.lower()} capture_server={self.db})")

    def _service_status(self) -> str | None:
        """The status text of ``ASNCDCSERVICES('status', ...)``; None (with a warning) where the UDF is missing."""
        try:
            rows = self._query(service_status_query(self.control))
        except Exception as e:
            if is_connection_error(e):
                raise
            self.log.warning("cannot ask the ASN capture service for its status (%s): %s.ASNCDCSERVICES is missing or "
                             "not executable by this user; the connector cannot tell whether asncap runs",
                             first_line(e), self.control)
            return None
        return str(rows[0][0]) if rows and rows[0][0] is not None else ""

    def _capture_tables(self, registrations: list[Registration], warn: bool = False,
                        conn: Any = None) -> list[CaptureTable]:
        """The included tables in capture mode, ACTIVE or not, with their definitions (read on ``conn``).

        As Debezium 2.7.4's Db2Connection.listOfChangeTables, whose query has no STATE condition: an INACTIVE
        table's CD table is still read. asncap writes nothing for it while it is INACTIVE, but the rows it wrote
        before stay to be read; leaving the table out let the stream's position move past those (the online
        schema procedure sets a table INACTIVE for a moment, and a lagging stream lost its last changes).
        """
        signal = signal_table(self.config)
        # The signal table is read whatever the filters say (its rows are signals and watermarks).
        wanted = [r for r in registrations if (self._included(r.schema, r.table) or (r.schema, r.table) == signal)
                  and r.schema not in SYSTEM_SCHEMAS]
        if warn:
            for r in wanted:
                if not r.active:
                    self.log.warning("table %s.%s is registered in %s.IBMSNAP_REGISTER but INACTIVE: its changes are not "
                                     "captured until it is ACTIVE again (UPDATE %s.IBMSNAP_REGISTER SET STATE = 'A' ..., "
                                     "then reinit)", r.schema, r.table, self.control, self.control)
        schemas = {r.schema for r in wanted} | {r.cd_schema for r in wanted}
        tables = read_tables(conn if conn is not None else self._conn, self.db, sorted(schemas), self.modes,
                             self.dialect)
        out = []
        for r in wanted:
            table = tables.get((r.schema, r.table))
            cd = tables.get((r.cd_schema, r.cd_table))
            if table is None or cd is None:
                self.log.warning("table %s.%s is registered for capture but %s does not exist", r.schema, r.table,
                                 "it" if table is None else f"its CD table {r.cd_schema}.{r.cd_table}")
                continue
            # The CD table's columns are what is captured (its schema is static: a column added to the source
            # table appears in events once the CD table has it too, as the chapter's evolution procedure does).
            captured = {c.name for c in cd.columns}
            view = Table(table.id, [c for c in table.columns if c.name in captured], table.primary_key)
            out.append(CaptureTable(view, r, frozenset(captured)))
        return out

    def _uncaptured_tables(self, conn: Any = None) -> list[CaptureTable]:
        """The included base tables that are not in capture mode.

        Debezium 2.7.4 snapshots every table its filters include, in capture mode or not
        (RelationalSnapshotChangeEventSource.determineCapturedTables over Db2SnapshotChangeEventSource's
        getAllTableIds, minus Db2ConnectorConfig's SystemTablesPredicate): SchemaHistoryTopicIT's snapshot
        has a CREATE for TABLEC, which is not in capture mode. The control and change-data schemas are left
        out here too (Debezium leaves out schemas starting with ASNCDC, its default).
        """
        conn = conn if conn is not None else self._conn
        captured = {(t.table.id.schema, t.table.id.table) for t in self._tables}
        skip = {self.control.upper(), self.config.get(dbc.CHANGE_TABLES_SCHEMA).upper()} | {
            r.cd_schema.upper() for r in self._registrations}
        schemas = [s for s in read_schemas(conn, self.dialect) if s.upper() not in skip]
        tables = read_tables(conn, self.db, schemas, self.modes, self.dialect)
        return [CaptureTable(t, Registration(s, n, "", "", False)) for (s, n), t in sorted(tables.items())
                if (s, n) not in captured and not system_table(s, n) and self._included(s, n)]

    def _from_history(self, t: CaptureTable) -> CaptureTable:
        """``t`` with the definition the schema history last announced (as Debezium recovers its schema on restart).

        The live catalog is only used for a table the history does not know. Columns the history has
        but the CD table lacks cannot be read and are left out.
        """
        known = (self._known or {}).get(t.table.id.identifier)
        if known is None:
            return t
        definition = known[2]
        columns = [column(info, self.modes) for info in infos_from_json(definition) if info.name in t.cd_columns]
        if table_json(t.table) != definition:
            self.log.info("table %s: the definition recovered from the schema history differs from the catalog's; "
                          "events keep the recovered one until the table's next changes (as Debezium's migrateTable)",
                          t.table.id.identifier)
        return CaptureTable(Table(t.table.id, columns, list(definition.get("primaryKeyColumnNames") or [])),
                            t.registration, t.cd_columns)

    def _check_access(self, t: CaptureTable) -> None:
        """The user must read the table and its CD table."""
        for name in (t.registration.change_table, f"{quote(t.table.id.schema or '')}.{quote(t.table.id.table)}"):
            try:
                self._query(f"SELECT 1 FROM {name} FETCH FIRST 1 ROWS ONLY")
            except Exception as e:
                if is_connection_error(e):
                    raise
                raise ConnectorError(f"user {self.config.get(dbc.USER)!r} cannot read {name} (table "
                                     f"{t.table.id.identifier}) at {self.address}: {first_line(e)}; GRANT SELECT ON "
                                     f"{name} TO USER {self.config.get(dbc.USER)}") from None

    # -- the run -----------------------------------------------------------------------------

    def _recovers(self, offset: dict[str, Any] | None) -> bool:
        """Whether a start with ``offset`` rebuilds the schema without reading rows (``recovery``)."""
        in_progress = bool(offset and offset.get("snapshot") and not offset.get("snapshot_completed"))
        return (offset is not None and self.snapshotter.should_snapshot_schema(True, in_progress)
                and not self.snapshotter.should_snapshot_data(True, in_progress))

    def _run(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Snapshot if due, then stream."""
        offset = self._offset
        in_progress = bool(offset and offset.get("snapshot") and not offset.get("snapshot_completed"))
        if self._recovers(offset):
            # snapshot.mode=recovery: the schema snapshot again, from the catalog, at the stored offset (Debezium's
            # determineSnapshotOffset keeps the previous offset), then streaming from it.
            self._notices.started()
            self._schema_snapshot(dict(offset or {}), str(offset.get("commit_lsn") if offset else None))
            self._notices.completed()
        elif offset is not None and not self.snapshotter.should_snapshot_data(True, in_progress):
            # Debezium's SnapshottingTask with neither schema nor data: the snapshot is skipped, and says so.
            self._notices.skipped()
        yield from snapshot_then_stream(self.snapshotter, offset, self.config, self._stop, self.log, self._snapshot,
                                        self._no_data_offset, lambda at: self._stream(ResumePoint(at)))

    def _no_data_offset(self) -> dict[str, Any]:
        """``no_data``: streaming starts at the highest synchpoint now, after the schema snapshot's events.

        As Debezium 2.7.4's schema-only snapshot (RelationalSnapshotChangeEventSource with snapshotData false):
        a CREATE per table the snapshot would read, recorded in the schema history, the last one's
        ``source.snapshot`` ``last``; ``_stream`` sends them first.
        """
        schema = self.snapshotter.should_snapshot_schema(False, False)
        if schema:
            self._notices.started()  # a schema-only snapshot: STARTED, then COMPLETED with no table notifications
        row = self._query(max_lsn_query(self.control, self.dialect))
        lsn = str(from_value(row[0][0] if row else None))
        # Every event carries the completed offset: they follow the checkpoint streaming starts from.
        offset = {"snapshot": True, "snapshot_completed": True, "commit_lsn": lsn}
        self._schema_snapshot(offset, lsn)
        if schema:
            self._notices.completed()
        else:
            self._notices.skipped()
        return offset

    def _schema_snapshot(self, offset: dict[str, Any], lsn: str) -> None:
        """The schema snapshot's CREATE events (``_stream`` sends them), ``offset`` on each, the last one ``last``."""
        tables = snapshot_order(self._tables + self._uncaptured, self.config.get(common.TABLE_INCLUDE),
                                lambda t: t.table.id.identifier)
        self._known = {}
        self._pending = [self._schema_change("CREATE", t.table.id.schema or "", t.table.id.table, table_json(t.table),
                                             "last" if i == len(tables) - 1 else "true", None, lsn, offset)
                         for i, t in enumerate(tables)]

    def _snapshot(self) -> Iterator[list[RawChange | Checkpoint]]:
        """The snapshot on its own connection and transaction (of the catalog's definitions, not the history's)."""
        self._tables = self._live_tables
        notices = self._notices
        notices.started()
        completed = False
        try:
            yield from self._snapshot_tables(notices)
            completed = not self._stop.is_set()
        finally:
            if completed:
                notices.completed()
            else:
                notices.aborted()

    def _snapshot_tables(self, notices: InitialSnapshotNotifications) -> Iterator[list[RawChange | Checkpoint]]:
        """The snapshot's connection, transaction and reads, each table's notifications sent as it is read."""
        conn = self._connect()
        try:
            reader = self._snapshot_reader = SnapshotReader(
                conn, self.server, self.db, self.control, self.config.get(dbc.SNAPSHOT_ISOLATION_MODE),
                self.config.get(dbc.SNAPSHOT_FETCH_SIZE), self.log.with_context("snapshot"), self.dialect)
            reader.lock = self.snapshot_lock
            reader.lock_timeout_ms = self.config.get(dbc.SNAPSHOT_LOCK_TIMEOUT_MS)
            reader.connect = self._connect  # an exclusive snapshot's handoff signal (cdc_db2.signal_lsn)
            include = self.config.get(common.SNAPSHOT_INCLUDE_COLLECTIONS)
            order = self.config.get(common.TABLE_INCLUDE)

            def everything() -> list[CaptureTable]:
                """The tables in capture mode and the others the filters include, in snapshot order."""
                return snapshot_order(self._tables + self._uncaptured, order, lambda t: t.table.id.identifier)

            tables = [t for t in everything() if not include or any(p.fullmatch(t.table.id.identifier) for p in include)]

            def structure() -> None:
                """The table definitions read again under the snapshot's locks (as Debezium's readTableStructure)."""
                fresh = {t.table.id.identifier: t for t in self._capture_tables(self._registrations, conn=conn)}
                self._tables = self._live_tables = [fresh.get(t.table.id.identifier, t) for t in self._tables]
                self._uncaptured = self._uncaptured_tables(conn)

            lsn = reader.begin(tables, structure)
            tables = [t for t in everything() if not include or any(p.fullmatch(t.table.id.identifier) for p in include)]
            self.log.info("snapshot of %d tables at LSN %s (snapshot.isolation.mode=%s)", len(tables), lsn,
                          reader.isolation)
            offset = {"snapshot": True, "snapshot_completed": False, "commit_lsn": lsn}
            self._known = {}
            events = [self._schema_change("CREATE", t.table.id.schema or "", t.table.id.table, table_json(t.table),
                                          "true", None, lsn, offset) for t in everything()]
            if events and self.config.get(dbc.INCLUDE_SCHEMA_CHANGES):
                yield events
            signal = signal_table(self.config)
            pairs = [(t, select) for t in tables if (t.table.id.schema, t.table.id.table) != signal
                     and (select := self._select(t)) is not None]
            # Debezium's notifyTableInProgress names the tables it reads, notifyCompletedTableSuccessfully the
            # captured ones (the signal table among them).
            yield from notices.tables(reader.read(pairs), [t.table for t, _ in pairs], [t.table for t in tables],
                                      self._stop.is_set, lambda: reader.reading)
            reader.end()
        finally:
            self._snapshot_reader = None
            try:
                conn.close()
            except Exception as e:  # the snapshot's own connection; closing it cannot lose data
                self.log.debug("closing the snapshot connection: %s", first_line(e))

    # -- blocking snapshots (cdc_db2.blocking) ----------------------------------------------

    def round_position(self) -> Position | None:
        """Debezium's Db2OffsetContext where a blocking snapshot pauses the stream: ``(change_lsn, commit_lsn,
        event_serial_no)`` after the last window's last change (None before streaming read a window)."""
        return self._round_position

    def blocking_tables(self, conn: Any) -> dict[str, CaptureTable]:
        """The captured tables as the catalog describes them now (read on ``conn``, the blocking snapshot's
        transaction, as Debezium's readTableStructure), by ``schema.table``; the included ones not in capture mode
        too."""
        tables = self._uncaptured_tables(conn) + self._capture_tables(self._registrations, conn=conn)
        return {t.table.id.identifier: t for t in tables}

    def blocking_created(self, tables: list[CaptureTable], lsns: tuple[str | None, str | None],
                         position: dict[str, Any], offset: dict[str, Any] | None) -> list[Any]:
        """A CREATE for each of a blocking snapshot's tables, recorded in the schema history at ``position``; the
        tables' structures become the ones streaming converts with. The events (``include.schema.changes``)
        carry ``lsns`` (``change_lsn``, ``commit_lsn``) and the snapshot's ``offset``.

        As Debezium 2.7.4: the blocking task has ``snapshotSchema`` true, so createSchemaChangeEventsForTables
        dispatches a CREATE (Db2SnapshotChangeEventSource.getCreateTableEvent: SchemaChangeEvent.ofSnapshotCreate,
        source ``snapshot: true``) for each table read, which the history records and the schema applies.
        """
        self._known_now()  # what the stream announced so far (the other tables keep theirs)
        fresh = {t.table.id.identifier: t for t in tables}
        self._tables = [fresh.get(t.table.id.identifier, t) for t in self._tables]
        self._uncaptured = [fresh.get(t.table.id.identifier, t) for t in self._uncaptured]
        if self._stream_reader is not None:  # between two windows: the next one converts with these
            self._stream_reader.set_tables(self._tables)
        events = [self._schema_change("CREATE", t.table.id.schema or "", t.table.id.table, table_json(t.table), "true",
                                      lsns[0], lsns[1], offset, position) for t in tables]
        return events if self.config.get(dbc.INCLUDE_SCHEMA_CHANGES) else []

    def _select(self, t: CaptureTable) -> str | None:
        """The table's snapshot SELECT: a custom SnapshotQuery's (None: no rows), an override if configured, else its columns."""
        if self.snapshot_query is not None:
            return self.snapshot_query.snapshot_query(t.table.id, select_items(t.table.columns),
                                                      quote_table_id)
        override = self.config.get(f"snapshot.select.statement.overrides.{t.table.id.identifier}")
        if override:
            return f"SELECT {select_list(t.table.columns)} FROM ({override}) AS cdc_snapshot_select"
        return select_for(t)

    def _schema_change(self, change: str, schema: str, name: str, definition: dict[str, Any], snapshot: str,
                       change_lsn: str | None, commit_lsn: str | None, offset: dict[str, Any] | None,
                       position: dict[str, Any] | None = None) -> Any:
        """A schema change event of ``schema.name`` on the ``<topic.prefix>`` topic, recorded in the schema history
        at ``position`` (the event's ``offset`` unless given)."""
        assert self._known is not None
        if change == "DROP":
            self._known.pop(f"{schema}.{name}", None)
        else:
            self._known[f"{schema}.{name}"] = (schema, name, definition)
        source = source_block(self.server, self.db, time.time_ns() // 1000, snapshot, schema, name, change_lsn,
                              commit_lsn)
        # Debezium 2.7.4: the snapshot's events name the database as CURRENT SERVER gives it (Db2Snapshot-
        # ChangeEventSource's catalogName, SchemaHistoryTopicIT: "TESTDB" for database.dbname=testdb), ddl null;
        # those of streaming take the catalog of the change table's TableId, which Db2Connection.listOfChangeTables
        # builds as "" (new TableId("", schema, table)), and Db2SchemaChangeEventEmitter's ddl "N/A".
        database, ddl = (self.server_name, None) if snapshot == "true" else ("", "N/A")
        record = schema_change_record(self.server, database, SOURCE_SCHEMA, change, schema, name, definition, source,
                                      offset, self.partition(), ddl)
        if self.history is not None:
            self.history.append({"source": {"server": self.server}, "position": dict(position or offset or {}),
                                 "databaseName": database, "schemaName": schema, "ddl": ddl,
                                 "tableChanges": record.value["tableChanges"], "version": 1})
        return record

    def _known_now(self) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """``_known``, first set to the definitions the captured tables have now when nothing announced any yet."""
        if self._known is None:
            self._known = {t.table.id.identifier: (t.table.id.schema or "", t.table.id.table, table_json(t.table))
                           for t in self._tables}
        return self._known

    def _diff(self, offset: dict[str, Any]) -> list[Any]:
        """Schema change events for what changed since the last announced definitions (``_known``)."""
        if self._known is None:
            self._known_now()
            return []
        known = self._known
        changed = []
        for t in self._tables:
            definition = table_json(t.table)
            before = known.get(t.table.id.identifier)
            if before is None or before[2] != definition:
                changed.append(("CREATE" if before is None else "ALTER", t.table.id.schema or "", t.table.id.table,
                                definition))
        # A table taken out of capture mode gets no event and stays known (re-registered with the same columns: no
        # event either): Debezium 2.7.4's Db2StreamingChangeEventSource only emits CREATE for a table its schema does
        # not know (getCdcTablesToQuery) and ALTER when it migrates a table with new changes (migrateTable, see
        # _refresh; cdc only when the definition changed), never DROP, though its documentation (and spec DB2-07)
        # say an event comes when a table leaves capture mode.
        events = [self._schema_change(kind, schema, name, definition, "false", offset.get("change_lsn"),
                                      offset.get("commit_lsn"), offset) for kind, schema, name, definition in changed]
        return events if self.config.get(dbc.INCLUDE_SCHEMA_CHANGES) else []

    def _cd_signature(self, registrations: list[Registration]) -> list[tuple[Any, ...]]:
        """The column count of every CD table: a column added to one (the evolution procedure) changes it.

        The register alone may look the same before and after the procedure (INACTIVE, then ACTIVE again
        between two polls).
        """
        schemas = sorted({r.cd_schema for r in registrations})
        if not schemas:
            return []
        return sorted(tuple(r) for r in self._query(self.dialect.column_counts_query(schemas), tuple(schemas)))

    def _refresh(self, reader: StreamReader, log: Any) -> list[Any]:
        """Follow tables put into or taken out of capture mode (ADDTABLE/REMOVETABLE, STATE) since the last window,
        and read again the definition of every table with changes the stream has not read yet.

        As Debezium 2.7.4's Db2StreamingChangeEventSource: each iteration, when a registration's
        ``CD_NEW_SYNCHPOINT`` lies above the last position (listOfNewChangeTables), the tables whose
        ``CD_NEW_SYNCHPOINT`` (Db2ChangeTable's startLsn, Db2Connection.listOfChangeTables' column 5) falls in the
        window are queued and migrated before the window's first change is dispatched (migrateTable: the
        definition read from the catalog, an ALTER schema change event). With ``CD_OLD_SYNCHPOINT`` null, as
        Debezium's ADDTABLE leaves it and nothing sets it without Apply's CAPSTART signal, that is every table with
        new changes, in every window: a default changed by ALTER ... SET DEFAULT, or a column added, while
        streaming or while the connector was down, reaches the events of the table's next changes
        (AbstractDb2DefaultValueIT's offline and online rounds). Debezium's Db2 migrateTable sends an ALTER for
        every such migration, the definition changed or not; cdc only when it changed (_diff), as Debezium's SQL
        Server migrateTable does since DBZ-3306 ("Migration skipped, no table schema changes detected"): else the
        schema change topic and history would grow by one event per table per window with changes.
        """
        registrations = read_registrations(self._conn, self.control, self.dialect)
        signature = self._cd_signature(registrations)
        streamed = reader.last[0]
        read = {(t.table.id.schema, t.table.id.table) for t in self._tables}
        moved = {(r.schema, r.table) for r in registrations
                 if r.active and r.changed_at is not None and r.changed_at > streamed and (r.schema, r.table) in read}
        captured = registrations != self._registrations or signature != self._cd_columns
        if not captured and not moved:
            return []
        self._registrations, self._cd_columns = registrations, signature
        before = {t.table.id.identifier for t in self._tables}
        if captured:
            self._tables = self._capture_tables(registrations)
        else:  # only the tables with new changes: their schemas' catalog rows
            fresh = {(t.table.id.schema, t.table.id.table): t for t in self._capture_tables(
                [r for r in registrations if (r.schema, r.table) in moved])}
            self._tables = [fresh.get((t.table.id.schema, t.table.id.table), t) for t in self._tables]
        events = self._diff(reader.offset())
        reader.set_tables(self._tables)
        if captured:
            after = {t.table.id.identifier for t in self._tables}
            log.info("tables in capture mode changed: now %s (added: %s; removed: %s)",
                     ", ".join(sorted(after)) or "none", ", ".join(sorted(after - before)) or "none",
                     ", ".join(sorted(before - after)) or "none")
            if self.metrics is not None:
                self.metrics.streaming.captured_tables = after
        return events

    def _warn_if_ahead(self, reader: StreamReader, resume: ResumePoint, log: Any) -> None:
        """Warn when the stored commit LSN lies above the highest synchpoint (offsets from elsewhere, or edited).

        Not refused, as Debezium 2.7.4 (Db2Connection.validateLogPosition checks only the lower bound). Its
        streaming loop then reads one empty window and goes on from the highest synchpoint; cdc's waits until
        the synchpoint passes the stored position, as SQL Server's does: an exclusive snapshot's handoff may lie
        above a lagging synchpoint, and going back to it would repeat the snapshot's changes.
        """
        top = reader.max_lsn()
        stored = resume.offset.get("commit_lsn")
        if top is None or not Lsn.parse(stored).available or top >= Lsn.parse(stored).key():
            return
        log.warning("the stored offset (commit LSN %s) is ahead of the highest synchpoint %s of database %s on %s: "
                    "these offsets are not this database's (copied from elsewhere, or edited?), or the capture "
                    "program lags. Nothing is streamed until the synchpoint passes that LSN; put back the right "
                    "offsets, or delete them to take a new snapshot", stored, from_value(top), self.db, self.address)

    def _stream(self, resume: ResumePoint) -> Iterator[list[RawChange | Checkpoint]]:
        """Poll the CD tables until stopped."""
        log = self.log.with_context("streaming")
        skipped = {s.strip() for s in self.config.get(common.SKIPPED_OPERATIONS) or [] if s.strip() != "none"}
        reader = self._stream_reader = StreamReader(self._conn, self.server, self.db, self.control, self._tables,
                                                    resume, skipped, log, self.dialect)
        log.info("streaming from commit LSN %s (change LSN %s)", resume.offset.get("commit_lsn"),
                 resume.offset.get("change_lsn"))
        if self._offset is not None and resume.offset == dict(self._offset):
            self._warn_if_ahead(reader, resume, log)
        if self.metrics is not None:
            self.metrics.streaming.connected = True
            self.metrics.streaming.captured_tables = {t.table.id.identifier for t in self._tables}
        # Changes while the connector was down (against the schema history, or the snapshot's definitions).
        pending, self._pending = self._pending, []
        if pending and self.config.get(dbc.INCLUDE_SCHEMA_CHANGES):
            yield pending
        changes = self._diff(reader.offset())
        if changes:
            yield changes
        interval = self.config.get(common.POLL_INTERVAL_MS) / 1000.0
        last_service_check = time.monotonic()
        service_stopped = False
        while not self._stop.is_set():
            # The window's end first, then the registrations (Db2StreamingChangeEventSource's order: currentMaxLsn,
            # then the change tables whose start lies below it): a table changed after that read is seen by the next
            # iteration, before any of its rows; read the other way round, a row captured in between was read
            # with the table's old definition (a column added online missing from its event).
            top = reader.max_lsn()
            changes = self._refresh(reader, log)
            if changes:
                yield changes
            window = reader.window(top)
            got = False
            if window is not None:
                for batch in window:
                    got = True
                    yield batch
                    if self._stop.is_set():
                        return
                # The iteration's end, as Db2StreamingChangeEventSource's: a blocking snapshot signalled in this
                # window runs here (pauses_at_round_end), on the stream's position after the window's last change.
                # Debezium's loop skips the check when the max LSN has not moved (``continue`` before reading):
                # so does this one (no RoundEnd without a window: a signal from another channel waits for the
                # synchpoint to move; the stand-in's agent moves it at every poll).
                self._round_position = position_of(reader.offset())
                yield RoundEnd(None, {self.db: self._round_position})
            if not got:
                if time.monotonic() - last_service_check >= SERVICE_CHECK_INTERVAL:
                    last_service_check = time.monotonic()
                    status = self._service_status()
                    stopped = status is not None and "not running" in status.lower()
                    if stopped and not service_stopped:
                        log.warning("the ASN capture service stopped (%s): no change is streamed until it runs again",
                                    status.strip() if status else "")
                    elif service_stopped and not stopped:
                        log.info("the ASN capture service runs again")
                    service_stopped = stopped
                yield [Checkpoint(reader.offset())]  # an idle position: the core sends a heartbeat when one is due
                self._stop.wait(interval)
