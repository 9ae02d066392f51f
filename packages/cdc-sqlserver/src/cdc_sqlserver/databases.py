"""Several databases in one connector (``database.names=db1,db2``): one reader per database, one offset partition each.

Debezium's SQL Server connector gives each database its own partition ``{"server": <topic.prefix>,
"database": <name>}`` with its own offsets, topics ``<prefix>.<database>.<schema>.<table>``, and
processes the databases of a task in turn: each snapshot, then one streaming iteration per
database per round (SqlServerStreamingChangeEventSource over its partitions). cdc does the same in
one task: a SqlServerConnector per database (its own connections, snapshot, capture instances and
schema history records, tagged with the database), their batches taken round-robin, each handed
to the engine as a ``PartitionBatch`` so the engine stores each database's offset under its own
partition (``Connector.partitions``/``start_partitions``, cdc_core.engine). Databases are not merged
by commit time: as in Debezium, events of different databases have no order between them.

Limits: signals and incremental snapshots (``signal.data.collection``) are refused with several
databases (the signal controller does not keep a batch's partition yet); Debezium's ``tasks.max``
spreading of databases over tasks does not apply (one task).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdc_core.config import Config, common
from cdc_core.events import PartitionBatch
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_core.spi.connector import ConnectorContext
from cdc_sqlserver import config as msc
from cdc_sqlserver.connector import SqlServerConnector
from cdc_sqlserver.schema_history import history_store
from cdc_sqlserver.source import SOURCE_SCHEMA


class SqlServerDatabases:
    """The SQL Server connector over several databases: one SqlServerConnector each, one partition each.

    SqlServerConnector(config) returns one of these when ``database.names`` lists several databases;
    the engine reads the class attributes (name, fields, offset shape, metrics names) from
    SqlServerConnector, the instance's ``source_schema`` from here.
    """

    source_schema = SOURCE_SCHEMA

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

    def _reader(self, name: str, history: Any) -> SqlServerConnector:
        """The one-database connector of ``name``."""
        context = self.context
        return SqlServerConnector(self.config.with_values(**{msc.NAMES.name: name}),
                                  ConnectorContext(log=context.log.with_context(name), history=history,
                                                   plugins=context.plugins, metrics=context.metrics,
                                                   extras=context.extras))

    def validate(self) -> list[str]:
        """The checks of one database's connector, plus what several databases cannot do yet."""
        problems = self._reader(self.names[0], self.context.history).validate()
        if self.config.get(SIGNAL_DATA_COLLECTION):
            problems.append(f"signal.data.collection is set and database.names lists {len(self.names)} databases: "
                            "cdc's SQL Server connector takes signals (and incremental snapshots) with one database "
                            "per connector so far; run one connector per database to use them")
        if len(set(self.names)) != len(self.names):
            problems.append(f"database.names lists a database twice: {', '.join(self.names)}")
        return problems

    def partition(self) -> dict[str, Any]:
        """The first database's partition (what the engine names when it reports about the connector)."""
        return self.partitions()[0]

    def partitions(self) -> list[dict[str, Any]]:
        """``{"server": <topic.prefix>, "database": <name>}`` per database, in ``database.names`` order."""
        return [{"server": self.server, "database": name} for name in self.names]

    def start_partitions(self, offsets: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """Start each database's reader with its own stored offset."""
        stored = {p["database"]: o for p, o in offsets}
        # One store for every database (records carry the database), kept per engine configuration.
        self._store = history_store(self.config, self.context.history)
        self.readers = [self._reader(name, self._store) for name in self.names]
        for reader in self.readers:
            reader.start(stored.get(reader.db))

    def start(self, offset: dict[str, Any] | None) -> None:
        """Only through ``start_partitions``: one offset cannot start several databases."""
        raise TypeError("SqlServerDatabases starts through start_partitions (one offset per database)")

    def stream(self) -> Iterator[PartitionBatch]:
        """Each database's batches in turn (a snapshot, then one streaming poll each per round)."""
        running = [(r.partition(), r.stream()) for r in self.readers]
        try:
            while running and not self._stopped:
                for entry in list(running):
                    partition, batches = entry
                    try:
                        batch = next(batches)
                    except StopIteration:
                        running.remove(entry)
                        continue
                    yield PartitionBatch(batch, partition)
                    if self._stopped:
                        return
        finally:
            for _, batches in running:
                batches.close()

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release (as one database)."""

    def stop(self) -> None:
        """Ask every reader to end."""
        self._stopped = True
        for reader in self.readers:
            reader.stop()

    def close(self) -> None:
        """Close every reader's connections, and the schema history store if this connector opened it."""
        for reader in self.readers:
            reader.close()
        if self._own_history and self._store is not None:
            try:
                self._store.close()
            except Exception as e:  # a store that cannot close has nothing left to write
                self.log.warning("closing the schema history store failed: %s", e)
