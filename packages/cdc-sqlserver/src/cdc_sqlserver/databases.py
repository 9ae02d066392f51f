"""Several databases in one connector (``database.names=db1,db2``): one reader per database, one offset partition each.

Debezium's SQL Server connector gives each database its own partition ``{"server": <topic.prefix>,
"database": <name>}`` with its own offsets, topics ``<prefix>.<database>.<schema>.<table>``, and
processes the databases of a task in turn: each snapshot, then one streaming iteration per
database per round (SqlServerStreamingChangeEventSource over its partitions), the pause for a
blocking snapshot checked after each round. cdc does the same in one task: a SqlServerConnector per
database (its own connections, snapshot, capture instances and schema history records, tagged with
the database), their batches taken round-robin (a snapshot batch, or once streaming a whole poll,
per turn; a ``RoundEnd`` after each round, where a blocking snapshot runs), each handed
to the engine as a ``PartitionBatch`` so the engine stores each database's offset under its own
partition (``Connector.partitions``/``start_partitions``, cdc_core.engine). Databases are not merged
by commit time: as in Debezium, events of different databases have no order between them.

Signals and ad hoc snapshots: as in Debezium, ``signal.data.collection`` names one table
(``<database>.<schema>.<table>``, of one of the databases); its database's stream carries the
signals and the watermarks, and the batches the signal controller makes keep the partition of the
batch they came from (cdc_core.signals.controller), so an incremental snapshot's READs and progress
are stored under the signal table's database, whose offset the signal controller resumes from
(``signal_partition``). ``MultiDatabaseIncrementalSource`` reads each table's
chunks on a connection to the table's own database and writes the watermarks in the signal table's.

Limits: a table of another database than the signal table's is snapshotted in windows of the signal
table's stream, so a change to a row of it is set against the chunk only if the round-robin hands it
over while the window is open (Debezium 2.7.4 sets none against it: its window lives in the signal
database's offset context); a blocking snapshot of tables of several databases reads them one
database after the other, each with its own first/last markers and its own stream's position at the
round's end (Debezium 2.7.4 runs no signal with several databases in one task).

``tasks.max`` > 1 spreads the databases over tasks as Debezium does (``cdc_sqlserver.tasks``: task ``i``
gets the databases at ``i, i+n, ...``), each task a thread streaming its databases in turn, so a
database whose task is busy does not hold back another task's; with one task the databases are taken
in turn on the engine's connector thread, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from cdc_core.config import Config, common
from cdc_core.events import ChangeRecord, PartitionBatch, RawChange, RoundEnd
from cdc_core.incremental.spi import ChunkRows, Key
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.signals.names import parse_quoted_name
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_core.spi.connector import ConnectorContext
from cdc_sqlserver import config as msc
from cdc_sqlserver.connector import SqlServerConnector
from cdc_sqlserver.incremental import SqlServerChunkReader, SqlServerIncrementalSource, signal_table_key
from cdc_core.stores.configured_history import history_store
from cdc_sqlserver.source import SOURCE_SCHEMA
from cdc_sqlserver.tasks import Tasks, round_robin, task_databases


class SqlServerDatabases:
    """The SQL Server connector over several databases: one SqlServerConnector each, one partition each.

    SqlServerConnector(config) returns one of these when ``database.names`` lists several databases;
    the engine reads the class attributes (name, fields, offset shape, metrics names) from
    SqlServerConnector, the instance's ``source_schema`` from here.
    """

    source_schema = SOURCE_SCHEMA
    #: The signal table's rows are events, as with one database (SqlServerConnector.signal_table_captured).
    signal_table_captured = SqlServerConnector.signal_table_captured

    def __init__(self, config: Config, context: ConnectorContext):
        """One reader per database of ``database.names``; no I/O."""
        self.config = config
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.names = list(config.get(msc.NAMES) or [])
        self.db = self.names[0]
        self.metrics = context.metrics
        self.context = context
        self._own_history = context.history is None
        self._store: Any = None
        #: One reader per database, made at start (the schema history store is opened then, not before).
        self.readers: list[SqlServerConnector] = []
        self._stopped = False
        #: The databases of each task (Debezium's split of database.names over min(tasks.max, databases) tasks).
        self.task_names = task_databases(self.names, config.get(common.TASKS_MAX))
        #: The task threads when there are several tasks (made at start).
        self._tasks: Tasks | None = None
        #: Each database's ``(change_lsn, commit_lsn, event_serial_no)`` at the last round's end that reached the
        #: engine (SqlServerConnector.round_position): a blocking snapshot's events of its tables carry it.
        self._positions: dict[str, tuple[str | None, str | None, int | None]] = {}
        #: The engine's NotificationService (``attach_notifier``), handed to every database's reader.
        self.notifier: Any = None

    def attach_notifier(self, notifier: Any) -> None:
        """Send every database's notifications (initial snapshot, capture instances) through ``notifier``."""
        self.notifier = notifier
        for reader in self.readers:
            reader.attach_notifier(notifier)

    def _reader(self, name: str, history: Any) -> SqlServerConnector:
        """The one-database connector of ``name``."""
        context = self.context
        reader = SqlServerConnector(self.config.with_values(**{msc.NAMES.name: name}),
                                    ConnectorContext(log=context.log.with_context(name), history=history,
                                                     plugins=context.plugins, metrics=context.metrics,
                                                     extras=context.extras))
        reader.attach_notifier(self.notifier)
        return reader

    def validate(self) -> list[str]:
        """The checks of one database's connector, plus what several databases cannot do yet."""
        problems = self._reader(self.names[0], self.context.history).validate()
        signal = self.config.get(SIGNAL_DATA_COLLECTION)
        if signal and signal_database(self.config, self.names) is None:
            problems.append(f"signal.data.collection={signal} does not name a table of one of database.names "
                            f"({', '.join(self.names)}): with several databases it is <database>.<schema>.<table>, "
                            "the database whose stream carries the signals and watermarks")
        if len(set(self.names)) != len(self.names):
            problems.append(f"database.names lists a database twice: {', '.join(self.names)}")
        return problems

    def partition(self) -> dict[str, Any]:
        """The first database's partition (what the engine names when it reports about the connector)."""
        return self.partitions()[0]

    def partitions(self) -> list[dict[str, Any]]:
        """``{"server": <topic.prefix>, "database": <name>}`` per database, in ``database.names`` order."""
        return [{"server": self.server, "database": name} for name in self.names]

    def signal_partition(self) -> dict[str, Any]:
        """The signal table's database's partition: its offsets hold an ad hoc snapshot's progress that counts
        (the progress rides in every database's offsets, but only its stream position matches it)."""
        db = signal_database(self.config, self.names) or self.db
        return {"server": self.server, "database": db}

    def start_partitions(self, offsets: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """Start each database's reader with its own stored offset."""
        stored = {p["database"]: o for p, o in offsets}
        # One store for every database (records carry the database), kept per engine configuration.
        self._store = history_store(self.config, self.context.history)
        if len(self.task_names) > 1:
            # Several task threads append to it: one at a time.
            self._store = LockedStore(self._store)
        self.readers = [self._reader(name, self._store) for name in self.names]
        for reader in self.readers:
            reader.start(stored.get(reader.db))
        if len(self.task_names) > 1:
            by_name = {r.db: r for r in self.readers}
            self._tasks = Tasks([(str(i), [by_name[n] for n in names]) for i, names in enumerate(self.task_names)],
                                self.log, self.metrics)
            self.log.info("%d tasks: %s", len(self.task_names),
                          "; ".join(f"task {i}: {', '.join(names)}" for i, names in enumerate(self.task_names)))

    def start(self, offset: dict[str, Any] | None) -> None:
        """Only through ``start_partitions``: one offset cannot start several databases."""
        raise TypeError("SqlServerDatabases starts through start_partitions (one offset per database)")

    #: As Debezium's SqlServerChangeEventSourceCoordinator (one streaming iteration per database, then the pause
    #: check): a blocking snapshot runs at the end of the round the signal came in (cdc_sqlserver.tasks.round_robin).
    pauses_at_round_end = SqlServerConnector.pauses_at_round_end

    def stream(self) -> Iterator[PartitionBatch | RoundEnd]:
        """Each database's batches in turn (a snapshot batch, or, once streaming, a whole poll, each per round, then
        a ``RoundEnd``); with several tasks, each task's so on its own thread, merged as they come."""
        batches = self._tasks.stream() if self._tasks is not None else round_robin(self.readers, lambda: self._stopped)
        for batch in batches:
            if batch.__class__ is RoundEnd and batch.positions:
                # Where each database's stream stood at its round's end: a blocking snapshot paused there (as the
                # engine thread sees it: a task thread may be further already) carries it.
                self._positions.update(batch.positions)
            yield batch

    def incremental_snapshot_source(self) -> MultiDatabaseIncrementalSource:
        """Ad hoc snapshots over the tables every database captures (``cdc_core.incremental.spi``)."""
        readers = self.readers or [self._reader(name, self.context.history) for name in self.names]
        return MultiDatabaseIncrementalSource({r.db: r.incremental_snapshot_source() for r in readers},
                                              signal_database(self.config, self.names) or self.db, self._positions)

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """A committed offset, handed to the database's reader (one database: the engine's offset names none)."""
        if len(self.readers) == 1:
            self.readers[0].acknowledge(offset)

    def stop(self) -> None:
        """Ask every reader to end."""
        self._stopped = True
        if self._tasks is not None:
            self._tasks.stop()
        for reader in self.readers:
            reader.stop()

    def close(self) -> None:
        """Close every reader's connections, and the schema history store if this connector opened it."""
        if self._tasks is not None:
            self._tasks.stop()
            self._tasks.join()  # a task still in a query finishes before its connection closes
        for reader in self.readers:
            reader.close()
        if self._own_history and self._store is not None:
            try:
                self._store.close()
            except Exception as e:  # a store that cannot close has nothing left to write
                self.log.warning("closing the schema history store failed: %s", e)


class LockedStore:
    """A schema history store shared by task threads: ``append`` and ``records`` one call at a time."""

    def __init__(self, store: Any):
        self.store = store
        self._lock = threading.Lock()

    def append(self, record: Any) -> Any:
        """The store's ``append``, under the lock."""
        with self._lock:
            return self.store.append(record)

    def records(self) -> list[Any]:
        """The store's records, read whole under the lock."""
        with self._lock:
            return list(self.store.records())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def signal_database(config: Config, names: list[str]) -> str | None:
    """The database of ``signal.data.collection`` (``<database>.<schema>.<table>``) if it is one of ``names``."""
    signal = config.get(SIGNAL_DATA_COLLECTION)
    if not signal or len(_parts(signal)) != 3:
        return None
    return next((name for name in names if signal_table_key(config, name) is not None), None)


def _parts(name: str) -> list[str]:
    """A dotted name's parts (quoted parts allowed)."""
    return parse_quoted_name(name) or name.split(".")


class MultiDatabaseIncrementalSource:
    """Ad hoc snapshot capabilities over several databases: each table's own database's, watermarks in the signal's."""

    def __init__(self, sources: dict[str, SqlServerIncrementalSource], signal_db: str,
                 positions: dict[str, tuple[str | None, str | None, int | None]] | None = None):
        """``sources`` by database name; ``signal_db`` holds the signal table; ``positions``: each database's stream
        position at the last round's end (SqlServerDatabases keeps it up to date)."""
        self.sources = sources
        self.signal_db = signal_db
        self.positions = positions if positions is not None else {}

    def captured_tables(self) -> list[Table]:
        """Every database's captured tables (their ids carry the database)."""
        return [t for source in self.sources.values() for t in source.captured_tables()]

    def reader(self) -> MultiDatabaseChunkReader:
        """A chunk reader with a connection per database, opened on first use."""
        return MultiDatabaseChunkReader(self)

    def transaction_of(self, change: RawChange) -> Any:
        """Unknown, as for one database."""
        return None

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool]) -> Iterator[list[Any]]:
        """Each database's tables in its own transaction (after their CREATEs), one database after the other."""
        by_db: dict[str, list[tuple[Table, Node | None]]] = {}
        for table, condition in tables:
            by_db.setdefault(table.id.catalog or self.signal_db, []).append((table, condition))
        for db, group in by_db.items():
            if stopped():
                return
            # Each database's CREATEs and rows carry its own stream's position at the pause (the round's end), as
            # Debezium's snapshot of a partition runs on that partition's SqlServerOffsetContext. (Debezium 2.7.4
            # runs no signal at all with several databases in one task: SignalProcessor asks for the only
            # partition and the action fails; with a task per database, a blocking snapshot reads its own
            # database's tables only. cdc reads several databases' tables, each with its own position; a database
            # with none yet, still in its initial snapshot, gets the max LSN of its snapshot transaction.)
            batches = self.sources[db].blocking_snapshot(group, offset_for, stopped, self.positions.get(db),
                                                         paused_here=db == self.signal_db)
            if db == self.signal_db:
                yield from batches
                continue
            signal_partition = {"server": self.sources[self.signal_db].server, "database": self.signal_db}
            for batch in batches:
                if batch and batch[0].__class__ is ChangeRecord:
                    # Its CREATEs carry the snapshot's offset, the signal database's: stored under that partition
                    # (under their own database's, a crash would resume it from another database's LSNs).
                    batch = [replace(r, partition=signal_partition) for r in batch]
                yield batch

    def close(self) -> None:
        """Nothing held between calls."""


class MultiDatabaseChunkReader:
    """``cdc_core.incremental.spi.ChunkReader`` over several databases: a SqlServerChunkReader each."""

    def __init__(self, source: MultiDatabaseIncrementalSource):
        """No connection until a database is used."""
        self.source = source
        self.readers: dict[str, SqlServerChunkReader] = {}

    def _of(self, db: str) -> SqlServerChunkReader:
        reader = self.readers.get(db)
        if reader is None:
            reader = self.readers[db] = self.source.sources[db].reader()
        return reader

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The table's database's ``max_key``."""
        return self._of(table.id.catalog or self.source.signal_db).max_key(table, key, condition)

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """The table's database's ``read_chunk`` (its source block names that database)."""
        return self._of(table.id.catalog or self.source.signal_db).read_chunk(table, key, after, upto, limit,
                                                                              condition)

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """In the signal table's database."""
        self._of(self.source.signal_db).insert_watermark(row_id, kind, data)

    def delete_watermark(self, row_id: str) -> None:
        """In the signal table's database."""
        self._of(self.source.signal_db).delete_watermark(row_id)

    def current_position(self) -> Any:
        """Not offered: SQL Server's watermarks are signal table rows."""
        raise NotImplementedError("SQL Server incremental snapshots use signal table watermarks")

    def close(self) -> None:
        """Close every database's connection."""
        for reader in self.readers.values():
            reader.close()
