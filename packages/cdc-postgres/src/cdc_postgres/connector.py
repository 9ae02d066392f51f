"""The PostgreSQL connector: checks, slot and publication, exported-snapshot handoff, streaming."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import psycopg
from psycopg import sql

from cdc_core.config import Config, Fields
from cdc_core.config import common
from cdc_core.delays import wait_before
from cdc_core.errors import ConnectorError, RetriableError, UnknownHostError, offsets_ahead
from cdc_core.events import Checkpoint, RawChange
from cdc_core.filters import snapshot_order
from cdc_core.notifications.initial import InitialSnapshotNotifications
from cdc_core.plugins import registry
from cdc_core.relational import Table, TableId
from cdc_core.signals.config import MAX_THREADS
from cdc_core.snapshot import snapshot_lock, snapshot_query, snapshotter
from cdc_core.snapshot.spi import streams_from_snapshot
from cdc_core.spi.connector import ConnectorContext
from cdc_core.spi.offsets import OffsetShape
from cdc_postgres import config as pgc
from cdc_postgres import stream_workers
from cdc_postgres.catalog import Catalog, table_filter
from cdc_postgres.driver_options import libpq_params, unmapped_warning
from cdc_postgres.incremental import signal_table_id, signal_tables
from cdc_postgres.plugin import CONNECTOR
from cdc_postgres.replica_identity import apply_autoset, parse_autoset
from cdc_postgres.readonly import IDLE_POSITION_S, MOVED_POSITION_S, check_read_only
from cdc_postgres.messages import MessageFilter
from cdc_postgres.metrics import postgres_metrics
from cdc_postgres.position import PostgresLogPosition
from cdc_postgres.replication import ReplicationConnection, ReplicationError, format_lsn, parse_lsn
from cdc_postgres.snapshot import SnapshotReader
from cdc_postgres.source import SOURCE_SCHEMA
from cdc_postgres.query_timeout import is_statement_timeout, statement_timeouts, timeout_error
from cdc_postgres.stream_params import parse_stream_params
from cdc_postgres.streaming import ResumePoint, StreamReader
from cdc_postgres.modes import type_modes

_REGEX_CHARS = set("[](){}*+?|^$\\")


class PostgresConnector:
    """Debezium's PostgreSQL connector on pgoutput: snapshot in the slot's exported snapshot, then the WAL."""

    name: ClassVar[str] = CONNECTOR.name
    class_names: ClassVar[tuple[str, ...]] = CONNECTOR.class_names
    fields: ClassVar[Fields] = pgc.FIELDS
    source_schema = SOURCE_SCHEMA
    log_position: ClassVar[type] = PostgresLogPosition  # cdc_core.spi.position, for Trigger.AvailableNow
    #: The class that turns the slot's messages into RawChanges (a subclass hook, e.g. cdc_yugabyte's).
    stream_reader: ClassVar[type] = StreamReader
    #: Beyond Debezium (whose default is 0): heartbeats are on, once a minute, so a quiet slot's
    #: offset keeps moving and its position is visible downstream.
    defaults: ClassVar[dict[str, Any]] = {"heartbeat.interval.ms": 60000}
    #: Set by the engine when it writes into a sink: snapshot chunks may be serialized in worker processes.
    worker_pipeline: Any = None
    #: As Debezium 2.7.4, whose RelationalTableFilters add ``signal.data.collection`` to the table filter whatever
    #: ``table.include.list``/``table.exclude.list`` say: the signal table's rows (signals and watermarks) are streamed
    #: as change events on its topic (EventDispatcher.dispatchDataChangeEvent emits them after handing them to the
    #: source channel), and never read by a snapshot (determineSnapshotSelect skips the signal data collection; cdc's
    #: snapshot reads only the captured tables). Its publication holds the table (``signal_tables`` adds it to a
    #: ``filtered`` one, as Debezium's filtered publication names it). cdc_core.signals.controller reads this.
    signal_table_captured: ClassVar[bool] = True
    #: What a stored offset looks like (checked by the engine before ``start``).
    offset_shape: ClassVar[OffsetShape] = OffsetShape(
        required={"lsn": "uint"},
        optional={"lsn_proc": "uint", "lsn_commit": "uint", "txId": "uint", "ts_usec": "uint", "snapshot": "snapshot",
                  "last_snapshot_record": "bool", "xmin": "uint"})

    def __init__(self, config: Config, context: ConnectorContext):
        self.config = config
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.db = config.get(pgc.DBNAME)
        self.slot = config.get(pgc.SLOT_NAME)
        self.publication = config.get(pgc.PUBLICATION_NAME)
        self.address = pgc.server_address(config)
        self.modes = type_modes(config)
        self.filter = table_filter(config)
        plugins = context.plugins if context.plugins is not None else registry()
        self.snapshotter = snapshotter(config, config.get(pgc.SNAPSHOT_MODE), plugins)
        self.snapshot_query = snapshot_query(config, config.get(common.SNAPSHOT_QUERY_MODE), plugins)
        #: The initial snapshot's notifications (the signal controller hands over the engine's notifier).
        self._notices = InitialSnapshotNotifications(None)
        self.snapshot_lock = snapshot_lock(config, config.get(pgc.SNAPSHOT_LOCKING_MODE), plugins)
        self._stop = threading.Event()
        self._ack_lsn = 0
        self._conn: psycopg.Connection | None = None
        self._repl: ReplicationConnection | None = None
        self._offset: dict[str, Any] | None = None
        self._snapshot_reader: SnapshotReader | None = None
        self.metrics = context.metrics
        self._pg_metrics = postgres_metrics(self.metrics)
        self.flush_lsn = config.get(pgc.FLUSH_LSN_SOURCE)

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Cross-property problems: TLS files that cannot be read."""
        return pgc.tls_file_problems(self.config)

    def partition(self) -> dict[str, Any]:
        """Offsets are stored under ``{"server": topic.prefix}``, as Debezium does."""
        return {"server": self.server}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect, check the server's prerequisites and prepare the publication."""
        with statement_timeouts(self.config.get(pgc.QUERY_TIMEOUT_MS), self.address):
            self._start(offset)

    def _start(self, offset: dict[str, Any] | None) -> None:
        self._offset = offset
        if self.config.get(pgc.SSLFACTORY):
            self.log.warning("database.sslfactory=%s is ignored: cdc connects through libpq, whose certificate "
                             "checks follow database.sslmode (require: none; verify-ca, verify-full: against "
                             "database.sslrootcert)", self.config.get(pgc.SSLFACTORY))
        _, unmapped = libpq_params(self.config.subset("driver"))
        if unmapped:
            self.log.warning("%s", unmapped_warning(unmapped))
        self._conn = self._connect()
        self._check_server()
        check_read_only(self._conn, self.config, self.address)  # read.only=true needs PostgreSQL 13
        self._catalog = Catalog(self._conn, self.modes, self.filter, log=self.log)
        self._tables = self._catalog.captured_tables()
        self._check_include_list()
        autoset = self.config.get(pgc.REPLICA_IDENTITY_AUTOSET)
        if autoset:
            apply_autoset(self._conn, {oid: t.id for oid, t in self._tables.items()}, self._catalog.replica_identity,
                          parse_autoset(autoset), self.log)
        self._warn_about_replica_identity()
        self._prepare_publication()
        # Signals and incremental snapshot watermarks: the signal table is streamed even if not captured.
        self._signal_tables = signal_tables(self.config, self._conn, self._catalog, self._tables, self.log)

    def stream(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Snapshot if the mode and offsets ask for it, then stream from the slot."""
        try:
            with statement_timeouts(self.config.get(pgc.QUERY_TIMEOUT_MS), self.address):
                yield from self._run()
        except (psycopg.OperationalError, ReplicationError) as e:
            if self._stop.is_set():
                return
            if self.metrics is not None and self.metrics.streaming.connected:
                self.metrics.streaming.connected = False
                self._pg_metrics.disconnects += 1
            raise RetriableError(f"lost the connection to PostgreSQL at {self.address}: {_first_line(e)}") from None

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Record the sink-acknowledged position; the streaming thread confirms it to the slot."""
        if not self.flush_lsn:
            return  # flush.lsn.source=false: another process confirms the slot's position
        lsn = offset.get("lsn_commit")
        if lsn and "snapshot" not in offset and lsn > self._ack_lsn:
            self._ack_lsn = lsn

    def stop(self) -> None:
        """Ask ``stream`` to end."""
        self._stop.set()
        if self._snapshot_reader is not None:
            self._snapshot_reader.stopped = True

    def close(self) -> None:
        """Close the connections; drop the slot if ``slot.drop.on.stop`` is set."""
        if self.metrics is not None:
            self.metrics.streaming.connected = False
        if self._repl is not None:
            self._repl.close()
            self._repl = None
        if self._conn is not None:
            try:
                if self.config.get(pgc.SLOT_DROP_ON_STOP) and not self._conn.closed:
                    self._drop_slot()
            except psycopg.Error as e:
                self.log.warning("could not drop slot %s: %s", self.slot, _first_line(e))
            self._conn.close()
            self._conn = None

    def _drop_slot(self, wait_s: float = 10.0) -> None:
        """Drop the slot once the server has let it go: its walsender outlives our closed connection a moment."""
        assert self._conn is not None
        deadline = time.monotonic() + wait_s
        while True:
            row = self._conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                     (self.slot,)).fetchone()
            if row is None:
                return
            if not row[0]:
                self._conn.execute("SELECT pg_drop_replication_slot(%s)", (self.slot,))
                self.log.info("dropped slot %s (slot.drop.on.stop)", self.slot)
                return
            if time.monotonic() > deadline:
                self.log.warning("slot %s not dropped (slot.drop.on.stop): still in use by another connection "
                                 "after %gs", self.slot, wait_s)
                return
            time.sleep(0.05)

    def _replication_connection(self) -> ReplicationConnection:
        """The replication connection; a refusal retrying cannot fix (TLS, login) is a ConnectorError."""
        try:
            return ReplicationConnection(
                pgc.conninfo(self.config), status_interval=self.config.get(pgc.STATUS_UPDATE_INTERVAL_MS) / 1000.0
            )
        except ReplicationError as e:
            reason = _server_reason(e)
            for pattern, properties in _PERMANENT_CONNECT_ERRORS:
                if pattern.search(reason):
                    raise ConnectorError(f"cannot open a replication connection to PostgreSQL at {self.address} as "
                                         f"user {self.config.get(pgc.USER)!r}: {reason}; check {properties}") from None
            raise

    def _connect(self) -> psycopg.Connection:
        """A regular connection, with ``database.initial.statements`` run on it (``;`` separated, ``;;`` escaped)."""
        try:
            conn = psycopg.connect(pgc.conninfo(self.config, options=pgc.query_options(self.config)), autocommit=True)
        except psycopg.OperationalError as e:
            reason = _server_reason(e)
            for pattern, properties in _PERMANENT_CONNECT_ERRORS:
                if pattern.search(reason):
                    # Retrying cannot help: the configuration does not fit the server.
                    raise ConnectorError(f"cannot connect to PostgreSQL at {self.address} as user "
                                         f"{self.config.get(pgc.USER)!r} to database {self.db!r}: {reason}; check "
                                         f"{properties}") from None
            if "Name or service not known" in str(e):  # EAI_NONAME: no such name (EAI_AGAIN stays retried)
                raise UnknownHostError(f"cannot connect to PostgreSQL at {self.address}: the host name "
                                       f"{self.config.get(pgc.HOSTNAME)!r} does not resolve; check "
                                       "database.hostname") from None
            raise RetriableError(f"cannot connect to PostgreSQL at {self.address}: {_first_line(e)}") from None
        for n, statement in enumerate(pgc.initial_statements(self.config), 1):
            try:
                conn.execute(statement)
            except psycopg.Error as e:
                lost = conn.closed
                conn.close()
                if is_statement_timeout(e):
                    raise timeout_error(self.config.get(pgc.QUERY_TIMEOUT_MS), self.address,
                                        f"database.initial.statements statement {n} ({_excerpt(statement)})") from None
                if lost:
                    raise RetriableError(f"lost the connection to PostgreSQL at {self.address} while running "
                                         f"database.initial.statements: {_first_line(e)}") from None
                raise ConnectorError(f"database.initial.statements: PostgreSQL at {self.address} refused statement "
                                     f"{n} ({_excerpt(statement)}): {_first_line(e)}") from None
        return conn

    # -- checks ------------------------------------------------------------------------------

    def _check_server(self) -> None:
        assert self._conn is not None
        wal_level = self._conn.execute("SHOW wal_level").fetchone()[0]
        if wal_level != "logical":
            raise ConnectorError(
                f"PostgreSQL at {self.address} has wal_level={wal_level}; logical decoding needs "
                "wal_level=logical. Run ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf) "
                "and restart the server."
            )
        user, can_replicate = self._conn.execute(
            "SELECT current_user, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if not can_replicate:
            raise ConnectorError(
                f"user {user!r} on {self.address} lacks the REPLICATION privilege; grant it with "
                f'ALTER ROLE "{user}" WITH REPLICATION (or connect as a superuser).'
            )

    def _check_include_list(self) -> None:
        """A literal table name in ``table.include.list`` that matches no table is an error."""
        names = {t.id.identifier for t in self._tables.values()}
        for pattern in self.filter.table_include:
            if not _REGEX_CHARS & set(pattern.pattern.replace(".", "")) and not any(pattern.fullmatch(n) for n in names):
                raise ConnectorError(
                    f"table.include.list names {pattern.pattern!r}, but database {self.db!r} on {self.address} "
                    "has no such table: create the table, or fix the list (entries are schema.table regexes)."
                )

    def _warn_about_replica_identity(self) -> None:
        """Warn, as Debezium does, where a table's replica identity cannot give ``before`` or breaks writes."""
        for oid, table in self._tables.items():
            identity = self._catalog.replica_identity.get(oid)
            if identity == "n":
                self.log.warning(
                    "table %s has REPLICA IDENTITY NOTHING: UPDATE and DELETE on it fail while it is published; "
                    "set REPLICA IDENTITY DEFAULT (with a primary key) or FULL", table.id)
            elif identity == "d" and (not table.primary_key or oid in self._catalog.unique_keyed):
                self.log.warning(
                    "table %s has no primary key and REPLICA IDENTITY DEFAULT: UPDATE and DELETE on it fail while "
                    "it is published%s; add a primary key or set REPLICA IDENTITY FULL (or USING INDEX)", table.id,
                    "" if table.primary_key else ", and its events have no key")

    def _prepare_publication(self) -> None:
        assert self._conn is not None
        mode = self.config.get(pgc.PUBLICATION_AUTOCREATE)
        exists = self._conn.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s",
                                    (self.publication,)).fetchone()
        pub = sql.Identifier(self.publication)
        if mode == "disabled":
            if not exists:
                raise ConnectorError(
                    f"publication {self.publication!r} does not exist in database {self.db!r} and "
                    "publication.autocreate.mode=disabled: create it (CREATE PUBLICATION ... FOR TABLE ...) "
                    "or choose another publication.autocreate.mode."
                )
            return
        try:
            if mode == "all_tables":
                if not exists:
                    self.log.info("creating publication %s for all tables", self.publication)
                    try:
                        self._conn.execute(sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES").format(pub))
                    except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                        # Another connector with the same publication.name created it between the check and here
                        # (two started at once on one database): it is the same publication.
                        self.log.info("publication %s was created meanwhile by another client", self.publication)
            elif mode == "filtered":
                tables = sql.SQL(", ").join(sql.Identifier(t.id.schema, t.id.table) for t in self._tables.values())
                if not self._tables:
                    raise ConnectorError("publication.autocreate.mode=filtered but no table matches the filters")
                alter = sql.SQL("ALTER PUBLICATION {} SET TABLE {}").format(pub, tables)
                if exists:
                    if exists[0]:
                        raise self._all_tables_publication()
                    self._conn.execute(alter)
                else:
                    try:
                        self._conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(pub, tables))
                    except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                        try:
                            self._conn.execute(alter)  # created meanwhile by another client: set its tables
                        except psycopg.errors.ObjectNotInPrerequisiteState:  # ... FOR ALL TABLES
                            raise self._all_tables_publication() from None
        except psycopg.errors.InsufficientPrivilege as e:
            raise ConnectorError(
                f"cannot create publication {self.publication!r}: {_first_line(e)}. Create it as a superuser "
                "or set publication.autocreate.mode=disabled with an existing publication."
            ) from None

    def _all_tables_publication(self) -> ConnectorError:
        """publication.autocreate.mode=filtered meeting a FOR ALL TABLES publication of that name (Debezium 2.7.4's
        PostgresReplicationConnection.initPublication refuses it too: such a publication cannot be altered)."""
        return ConnectorError(
            f"publication {self.publication!r} in database {self.db!r} is FOR ALL TABLES and cannot be altered to "
            "the tables of publication.autocreate.mode=filtered: drop it (the connector then creates it for its "
            "tables), recreate it FOR TABLE the tables to capture, set publication.autocreate.mode=all_tables, or "
            "choose another publication.name")

    # -- the run -----------------------------------------------------------------------------

    def _slot_state(self) -> tuple[bool, bool]:
        """``(exists, active)``; an invalidated slot (its WAL is gone) is dropped or refused here."""
        assert self._conn is not None
        row = self._conn.execute(
            "SELECT active, database, wal_status FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)
        ).fetchone()
        if row is None:
            return False, False
        if row[1] != self.db:
            raise ConnectorError(f"replication slot {self.slot!r} belongs to database {row[1]!r}, not {self.db!r}; "
                                 "use another slot.name")
        if row[2] == "lost":
            if not self.snapshotter.should_snapshot_on_data_error():
                raise ConnectorError(
                    f"replication slot {self.slot!r} on {self.address} was invalidated: the server removed WAL it "
                    "still needed (max_slot_wal_keep_size), so changes since the stored offset are gone. Set "
                    "snapshot.mode=when_needed to take a new snapshot, or drop the slot and delete the offsets.")
            self.log.warning("replication slot %s was invalidated (its WAL is gone); dropping it for a new snapshot "
                             "(snapshot.mode=%s)", self.slot, self.snapshotter.name)
            self._conn.execute("SELECT pg_drop_replication_slot(%s)", (self.slot,))
            return False, False
        return True, bool(row[0])

    def _needs_snapshot(self, slot_exists: bool) -> bool:
        """Ask the Snapshotter; a lost slot with a stored position is its ``snapshot_on_data_error`` call."""
        offset = self._offset
        offset_exists = offset is not None
        in_progress = bool(offset and offset.get("snapshot"))
        if self.snapshotter.should_snapshot_data(offset_exists, in_progress):
            return True
        if offset_exists and not slot_exists:
            if self.snapshotter.should_snapshot_on_data_error():
                self.log.warning("slot %s is gone; taking a new snapshot (snapshot.mode=%s)", self.slot,
                                 self.snapshotter.name)
                return True
            raise ConnectorError(
                f"replication slot {self.slot!r} does not exist on {self.address}, but offsets say streaming "
                f"stopped at LSN {offset.get('lsn')}: changes since then cannot be read. Set snapshot.mode="
                "when_needed to take a new snapshot, or delete the offsets to start over."
            )
        return False

    def _check_offset_not_ahead(self, offset: dict[str, Any]) -> None:
        """Refuse a stored position the server has not written yet (an offsets file from elsewhere, or edited).

        Streaming from it would confirm the slot up to that future position, and every change
        before it would be skipped for good.
        """
        assert self._conn is not None
        stored = max((v for k in ("lsn", "lsn_commit", "lsn_proc") if isinstance(v := offset.get(k), int)), default=0)
        current = parse_lsn(self._conn.execute(
            "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
            "ELSE pg_current_wal_insert_lsn() END::text").fetchone()[0])
        if stored > current:
            raise offsets_ahead(
                self.config, f"LSN {format_lsn(stored)}", f"WAL position {format_lsn(current)}",
                f"PostgreSQL at {self.address}", "Nothing was confirmed to the slot; restore the right offsets "
                "file, or delete it to start over (snapshot.mode decides whether a new snapshot is taken).")

    def attach_notifier(self, notifier: Any) -> None:
        """Send the initial snapshot's notifications through ``notifier`` (cdc_core.notifications.initial)."""
        self._notices = InitialSnapshotNotifications(notifier)

    def _run(self) -> Iterator[list[RawChange | Checkpoint]]:
        assert self._conn is not None
        slot_exists, active = self._slot_state()
        retries, delay = self.config.get(pgc.SLOT_MAX_RETRIES), self.config.get(pgc.SLOT_RETRY_DELAY_MS) / 1000.0
        attempt = 0
        while active:
            if attempt >= retries:
                raise ConnectorError(
                    f"replication slot {self.slot!r} is still in use by another connection after {retries} retries "
                    f"{delay:g}s apart (slot.max.retries, slot.retry.delay.ms); stop the other client or use another "
                    "slot.name")
            attempt += 1
            self.log.warning("replication slot %s is in use; retry %d of %d in %gs", self.slot, attempt, retries, delay)
            if self._stop.wait(delay):
                return
            slot_exists, active = self._slot_state()
        snapshot = self._needs_snapshot(slot_exists)
        if slot_exists and not snapshot and self._offset:
            self._check_offset_not_ahead(self._offset)
        stream = self.snapshotter.should_stream()
        if not snapshot:
            # Debezium's snapshot source runs at every start: a snapshot that is not due says SKIPPED (no_data too:
            # PostgreSQL's snapshotting task takes no schema without the data).
            self._notices.skipped()
        if not snapshot and not stream:
            self.log.info("no snapshot is due and snapshot.mode=%s does not stream: nothing to do", self.snapshotter.name)
            return
        if snapshot and wait_before("snapshot", self.config, self._stop, self.log):
            return
        self._repl = self._replication_connection()
        resume = ResumePoint(self._offset)
        start_lsn = resume.commit
        if snapshot and slot_exists and self._offset and not streams_from_snapshot(self.snapshotter):
            # should_stream_events_starting_from_snapshot() false: catch up from the stored position, snapshot,
            # then stream on from where the catch-up stopped (the slot is kept).
            start_lsn = yield from self._catch_up_then_snapshot(resume, stream)
            if start_lsn is None:
                return
            resume = ResumePoint({"lsn_commit": start_lsn, "lsn_proc": None}, last_commit=start_lsn)
            snapshot = False
            if stream:
                self._repl = self._replication_connection()
        elif snapshot or not slot_exists:
            if slot_exists:
                self.log.info("dropping slot %s to export a fresh snapshot from a new one", self.slot)
                self._repl.drop_slot(self.slot)
            created = self._create_slot(snapshot)
            self.log.info("created slot %s at %s", self.slot, created.consistent_point)
            start_lsn = created.consistent_point
            # As PostgresSnapshotChangeEventSource: a new offset context keeps the last commit LSN of a stored
            # offset, and has none without one (the first transaction's events have sequence [null, ...]).
            resume = ResumePoint({"lsn_commit": start_lsn, "lsn_proc": None},
                                 last_commit=(self._offset or {}).get("lsn_commit"))
            if snapshot:
                yield from self._snapshot(created.snapshot_name, created.consistent_point)
                if self._stop.is_set():
                    self.snapshotter.snapshot_aborted()
                    return
                self.snapshotter.snapshot_completed()
                if stream and wait_before("streaming", self.config, self._stop, self.log):
                    return
            else:
                yield [Checkpoint({"lsn_proc": None, "lsn_commit": start_lsn, "lsn": start_lsn,
                                   "txId": None, "ts_usec": None})]
        if not stream:
            return
        yield from self._stream(start_lsn, resume)

    def _catch_up_then_snapshot(self, resume: ResumePoint, stream: bool) -> Iterator[list[RawChange | Checkpoint]]:
        """As Debezium's PostgresChangeEventSourceCoordinator.executeCatchUpStreaming: stream from the stored
        position up to the log's current end, then snapshot (a REPEATABLE READ transaction opened after the
        catch-up; rows changed since are streamed again afterwards); return where streaming goes on (None: stopped)."""
        assert self._conn is not None and self._repl is not None
        stop_at = parse_lsn(self._conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        self.log.info("previous connector state exists: streaming up to LSN %s, then the snapshot "
                      "(should_stream_events_starting_from_snapshot is false)", format_lsn(stop_at))
        position = yield from self._stream(resume.commit, resume, stop_at=stop_at)
        self._repl.close()
        self._repl = None
        if position is None or self._stop.is_set():
            return None
        yield from self._snapshot(None, position)
        if self._stop.is_set():
            self.snapshotter.snapshot_aborted()
            return None
        self.snapshotter.snapshot_completed()
        if stream and wait_before("streaming", self.config, self._stop, self.log):
            return None
        return position

    def _create_slot(self, export_snapshot: bool) -> Any:
        """Create the slot on the replication connection (pgoutput; exporting a snapshot if one is due)."""
        assert self._repl is not None
        return self._repl.create_slot(self.slot, "pgoutput", export_snapshot=export_snapshot)

    def _stream_options(self) -> dict[str, str]:
        """START_REPLICATION's plugin options: pgoutput protocol 1, or 2 with in-progress streaming on 14+."""
        assert self._repl is not None
        options = {"proto_version": "1", "publication_names": f'"{self.publication}"', "messages": "true"}
        if self._repl.server_version >= 140000:
            # Beyond Debezium: large transactions arrive while still in progress (protocol v2) and
            # are spilled to disk until they commit, so memory stays bounded whatever their size.
            options.update(proto_version="2", streaming="on")
        return options

    def _heartbeat_action(self, query: str, log) -> None:
        """Run ``heartbeat.action.query`` (e.g. an update of a heartbeat table) so the slot sees WAL."""
        assert self._conn is not None
        try:
            self._conn.execute(query)
        except psycopg.errors.QueryCanceled as e:
            log.warning("heartbeat.action.query failed: %s (database.query.timeout.ms=%d)", _first_line(e),
                        self.config.get(pgc.QUERY_TIMEOUT_MS))
        except psycopg.OperationalError:
            raise
        except psycopg.Error as e:
            log.warning("heartbeat.action.query failed: %s", _first_line(e))

    def _count(self, reader: StreamReader) -> None:
        """Move the reader's filtered and skipped counts to the metrics (on the thread that records batches).

        A filtered event counts as seen too, as Debezium's ``onFilteredEvent``.
        """
        streaming = self.metrics.streaming
        streaming.filtered += reader.filtered
        streaming.total_events += reader.filtered
        self._pg_metrics.skipped_events += reader.skipped
        reader.filtered = reader.skipped = 0

    def _slot_xmin(self) -> int | None:
        """The slot's ``catalog_xmin`` (as PostgresConnection.getReplicationSlotState reads it)."""
        assert self._conn is not None
        row = self._conn.execute("SELECT catalog_xmin::text::bigint FROM pg_replication_slots WHERE slot_name = %s",
                                 (self.slot,)).fetchone()
        return row[0] if row else None

    def _snapshot(self, snapshot_name: str | None, lsn: int) -> Iterator[list[RawChange | Checkpoint]]:
        """The snapshot, between its STARTED and its COMPLETED (or ABORTED) notification."""
        self._notices.started()
        completed = False
        try:
            yield from self._snapshot_tables_at(snapshot_name, lsn)
            completed = not self._stop.is_set()
        finally:
            if completed:
                self._notices.completed()
            else:
                self._notices.aborted()

    def _snapshot_tables_at(self, snapshot_name: str | None, lsn: int) -> Iterator[list[RawChange | Checkpoint]]:
        snap_conn = self._connect()
        try:
            # snapshot.fetch.size: the rows of one block handed over (pgjdbc's fetch size in Debezium: the rows
            # read per round trip). COPY streams under TCP flow control, so the rows held stay bounded by it.
            reader = self._snapshot_reader = SnapshotReader(
                snap_conn, self.server, self.db, lsn, self.config.get(pgc.SNAPSHOT_FETCH_SIZE),
                self.log.with_context("snapshot"), self.config.get(MAX_THREADS), self._connect,
            )
            reader.query_timeout_ms = self.config.get(pgc.QUERY_TIMEOUT_MS)
            reader.pipeline = self.worker_pipeline
            reader.begin(snapshot_name)
            tables = self._snapshot_tables()
            names = [t.id.identifier for t, _ in tables]
            # TABLE_SCAN_COMPLETED names the captured tables: those read, then the signal table (Debezium's table
            # filter takes it in; addSignalingCollectionAndSort puts it after the include list's tables).
            reader.table_done = self._notices.announce(names, names + list(self._unread_signal_table()))
            reader.lock([st for t, _ in tables if (st := self.snapshot_lock.table_lock_statement(
                self.config.get(common.SNAPSHOT_LOCK_TIMEOUT_MS), t.id, _quote_table)) is not None],
                self.config.get(common.SNAPSHOT_LOCK_TIMEOUT_MS))
            self.log.info("snapshot of %d tables at LSN %d", len(tables), lsn)
            metrics = self.metrics.snapshot if self.metrics is not None else None
            if metrics is not None:
                metrics.snapshot_started(self._estimated_rows([t for t, _ in tables]), self._unread_signal_table())
                reader.metrics = metrics
            completed = False
            yield from reader.read(tables)
            reader.end()
            completed = not self._stop.is_set()
        finally:
            if self.metrics is not None and self.metrics.snapshot.running:
                self.metrics.snapshot.snapshot_ended(completed)
            self._snapshot_reader = None
            snap_conn.close()

    def _estimated_rows(self, tables: list[Table]) -> dict[str, int]:
        """Each table's row estimate from the planner statistics (for progress and ETA)."""
        assert self._conn is not None
        out = {}
        for t in tables:
            row = self._conn.execute("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass",
                                     (_quote_table(t.id),)).fetchone()
            out[t.id.identifier] = int(row[0]) if row else 0
        return out

    def _unread_signal_table(self) -> tuple[str, ...]:
        """The signal table, if the snapshot takes it in but never reads its rows (``_snapshot_tables``): Debezium
        counts it in the snapshot metrics, captured (its table filter adds it) and completed with 0 rows."""
        signal = signal_table_id(self.config)
        if signal is None:
            return ()
        include = self.config.get(common.SNAPSHOT_INCLUDE_COLLECTIONS)
        for table in (*self._tables.values(), *self._signal_tables.values()):
            if (table.id.schema, table.id.table) == (signal.schema, signal.table) and (
                    not include or any(p.fullmatch(table.id.identifier) for p in include)):
                return (table.id.identifier,)
        return ()

    def _snapshot_tables(self) -> list[tuple[Table, str]]:
        """Each table to snapshot with its SELECT (``snapshot.include.collection.list``, the SnapshotQuery)."""
        include = self.config.get(common.SNAPSHOT_INCLUDE_COLLECTIONS)
        out = []
        tables = snapshot_order(self._tables.values(), self.config.get(common.TABLE_INCLUDE), lambda t: t.id.identifier)
        signal = signal_table_id(self.config)
        for table in tables:
            if include and not any(p.fullmatch(table.id.identifier) for p in include):
                continue
            if signal is not None and (table.id.schema, table.id.table) == (signal.schema, signal.table):
                continue  # never read, even when included (Debezium's determineSnapshotSelect; signal_table_captured)
            columns = [sql.Identifier(c.name).as_string(self._conn) for c in table.columns]
            select = self.snapshot_query.snapshot_query(table.id, columns, _quote_table)
            if select is None:
                continue
            default = f"SELECT {', '.join(columns)} FROM {_quote_table(table.id)}"
            if select != default:
                # An override may filter or order rows; selecting the columns from it keeps their order.
                select = f"SELECT {', '.join(columns)} FROM ({select}) AS cdc_snapshot_select"
            out.append((table, select))
        return out

    def _stream(self, start_lsn: int, resume: ResumePoint,
                stop_at: int | None = None) -> Iterator[list[RawChange | Checkpoint]]:
        """Stream from the slot; with ``stop_at``, only until everything up to that LSN is read, returning where
        the reading stopped (between transactions)."""
        assert self._repl is not None
        params = parse_stream_params(self.config.get(pgc.SLOT_STREAM_PARAMS))
        try:
            self._repl.start(self.slot, start_lsn, {**params, **self._stream_options()})
        except ReplicationError as e:
            # pgoutput's refusal: "unrecognized pgoutput option" (XX000 before 16), invalid values (22023).
            if params and (e.sqlstate in ("22023", "42601", "0A000") or "option" in str(e)):
                raise ConnectorError(f"slot.stream.params={self.config.get(pgc.SLOT_STREAM_PARAMS)!r}: PostgreSQL "
                                     f"at {self.address} refused the options passed to pgoutput: {_first_line(e)}; "
                                     "remove or fix them") from None
            raise
        log = self.log.with_context("streaming")
        log.info("streaming from slot %s at LSN %d", self.slot, start_lsn)
        if self.metrics is not None:
            self.metrics.streaming.connected = True
            self.metrics.streaming.captured_tables = {t.id.identifier for t in self._tables.values()}
        reader = self.stream_reader(self._repl, self._catalog, self._tables, self.server, self.db, resume, log)
        reader.tables = {**self._tables, **self._signal_tables}  # the signal table too (cdc_postgres.incremental)
        reader.messages = MessageFilter(self.config.get(pgc.MESSAGE_PREFIX_INCLUDE), self.config.get(pgc.MESSAGE_PREFIX_EXCLUDE))
        reader.message_topic = f"{self.server}{self.config.get(common.TOPIC_DELIMITER)}message"
        reader.binary_mode = self.config.get(common.BINARY_MODE)
        reader.transaction_metadata = bool(self.config.get(common.PROVIDE_TRANSACTION_METADATA))
        processes = self.config.get(pgc.STREAMING_WORKER_PROCESSES)
        if processes:
            why_not = stream_workers.unusable(self.config, self.worker_pipeline, reader)
            if why_not is None:
                reader.workers = stream_workers.StreamWorkers(reader, self.worker_pipeline, processes)
            else:
                log.info("streaming.worker.processes=%d: decoding in this process instead (%s)", processes, why_not)
        heartbeat = self.config.get(common.HEARTBEAT_INTERVAL_MS) / 1000.0
        action = self.config.get(common.HEARTBEAT_ACTION_QUERY)
        if heartbeat:
            reader.idle_interval = heartbeat
        if self.config.get(pgc.READ_ONLY):
            # Read-only snapshot windows close at idle positions too (heartbeat records stay at their interval).
            reader.idle_interval = min(reader.idle_interval, IDLE_POSITION_S)
            reader.moved_interval = MOVED_POSITION_S
        last_action = time.monotonic()
        timeout = min(self.config.get(common.POLL_INTERVAL_MS) / 1000.0, 0.5)
        xmin_interval = self.config.get(pgc.XMIN_FETCH_INTERVAL_MS) / 1000.0
        xmin_read = -float("inf")
        repl = self._repl
        asked = -float("inf")
        reached = None
        try:
            while not self._stop.is_set():
                if self._ack_lsn > repl.confirmed_lsn:
                    repl.confirm(self._ack_lsn)
                if xmin_interval and time.monotonic() - xmin_read >= xmin_interval:
                    xmin_read = time.monotonic()
                    reader.xmin = self._slot_xmin()
                if action and heartbeat and time.monotonic() - last_action >= heartbeat:
                    last_action = time.monotonic()
                    self._heartbeat_action(action, log)
                batch = reader.read(timeout)
                if (reader.filtered or reader.skipped) and self.metrics is not None:
                    self._count(reader)
                yield batch
                if stop_at is not None and (position := reader.idle_position()) is not None:
                    if position >= stop_at:
                        yield [Checkpoint({"lsn_proc": None, "lsn_commit": position, "lsn": position,
                                           "txId": None, "ts_usec": None})]
                        reached = position
                        break
                    if not batch and time.monotonic() - asked >= 0.2:
                        asked = time.monotonic()
                        repl.send_status(reply_requested=True)  # the walsender answers with its sent position
        finally:
            reader.close()
        if self._ack_lsn > repl.confirmed_lsn:
            repl.confirm(self._ack_lsn)
            repl.send_status()
        return reached


def _quote_table(table: TableId) -> str:
    """``"schema"."table"``, quoted as PostgreSQL identifiers."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in (table.schema, table.table) if part is not None)


#: Connection refusals that no retry can mend (only the server's message tells them apart here), and what to check.
_PERMANENT_CONNECT_ERRORS = (
    *pgc.TLS_ERRORS,  # first: "certificate authentication failed for user" is about the certificate
    (re.compile(r'database ".*" does not exist|permission denied for database'), "database.dbname and database.user"),
    (re.compile(r'role ".*" does not exist|password authentication failed|authentication failed for user|'
                r"no password supplied|no pg_hba\.conf entry|is not permitted to log in"),
     "database.user and database.password"),
)


def _server_reason(e: BaseException) -> str:
    """The server's reason in a libpq connection error: the text after ``FATAL:``, else the first line."""
    text = str(e)
    marker = text.find("FATAL:")
    return " ".join(text[marker + 6:].split()) if marker >= 0 else _first_line(e)


def _excerpt(statement: str, limit: int = 80) -> str:
    """A statement in one line, cut at ``limit`` characters, for an error message."""
    line = " ".join(statement.split())
    return repr(line if len(line) <= limit else line[: limit - 3] + "...")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
