"""What the kit's SQL Server and Db2 fixtures share: a change-table connector on its stand-in, one database per test.

Both stand-ins are a throwaway PostgreSQL database holding the source tables and the capture objects,
filled by a capture agent running beside it; the kit's writers write the source tables as an
application does, in PostgreSQL's SQL, and ``cdc run`` reaches the stand-in through
``driver.Driver=cdc stand-in``. A subclass says how its stand-in is made, how tables enter capture
mode and get a column, its properties and topics, and what its offsets hold (``OFFSET_FIELDS``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.contract import Workdir

#: The kit modules both fixtures join (each declares it: ``kit.plugin`` reads a fixture class's own ``scenarios``).
#: Not joined: ``test_kit_snapshot_threads`` (both accept ``snapshot.max.threads`` but read the tables one after
#: another on the snapshot's one connection and transaction -- parallel reads are missing, so no
#: ``*_in_data_collection`` markers; cdc_core/config/catalogue/decisions.yaml -- and Debezium's pooled connections
#: would wait on the exclusive snapshot's table locks) and ``test_kit_scenarios`` (neither has data-driven scenario
#: files: their chapters' examples are tests/test_sqlserver_examples.py and tests/test_db2_examples.py).
SCENARIOS = ("test_kit_stream", "test_kit_storms", "test_kit_state_files", "test_kit_hostile", "test_kit_null_defaults",
             "test_kit_future_offsets", "test_kit_sink_failures", "test_kit_server_faults")
#: The kit's snapshot isolation for both: the chapters' consistent mode, whose handoff is exact (the others may
#: repeat a change at the handoff, as Debezium's docs say).
ISOLATION = "exclusive"


def lsn_key(text: str | None) -> str:
    """An LSN's text as a sort key (fixed-width hex: text order is LSN order), NULL first."""
    return "" if text in (None, "NULL") else text  # type: ignore[return-value]


class ChangeTableFixture:
    """The shared half of ``ConnectorFixture`` for a change-table connector on its stand-in (``standin``)."""

    unavailable_value: ClassVar[str | None] = None
    has_history: ClassVar[bool] = True
    text_allows_nul: ClassVar[bool] = False
    decimal_max: ClassVar[str] = "9999999999999999999999999999.9999999999"
    text_defaults: ClassVar[bool] = True
    topic_names_database: ClassVar[bool] = False
    #: Not refused: Debezium 2.7.4's validateLogPosition (SqlServerConnection's, Db2Connection's) checks only that the
    #: stored commit LSN is above the oldest change left; both connectors warn, and stream nothing until the
    #: server's highest LSN passes the stored one.
    refuses_offsets_ahead: ClassVar[bool] = False
    #: Not bounded by the queue: Debezium's JDBC result sets stream a window's change rows as the queue takes them;
    #: Db2's reader fetches a whole window first (up to 5000 transactions, fetchall; SQL Server's says its own),
    #: and the stand-ins' psycopg cursors hold whole results either way. With the kit's 1 MB values a stalled sink
    #: grows RSS by 20-35 MiB (limit 12).
    read_ahead_unbounded: ClassVar[str | None] = (
        "the change-table stream reads a whole window of change rows into memory before the queue takes them "
        "(row-by-row window reads, as Debezium's JDBC result sets, are missing): a stalled sink with 1 MB values "
        "grows RSS by 20-35 MiB")
    scenario_run: ClassVar[str] = "kit.scenarios:ScenarioRun"
    #: The connector's SQL type of each neutral type (``sql_type``).
    TYPES: ClassVar[dict[str, str]]
    #: An LSN above any the stand-in writes (``offsets_ahead``).
    LAST_LSN: ClassVar[str]
    #: The ``source``/offset fields of a position, in order: LSN texts first, then counters.
    OFFSET_FIELDS: ClassVar[tuple[str, ...]] = ("commit_lsn", "change_lsn")

    server: Any
    database: str
    standin: Any
    default_schema: str

    def close(self) -> None:
        """Stop the capture agent."""
        self.standin.agent.stop()

    def connect(self) -> Any:
        """A psycopg connection to the stand-in's database, autocommit off (the source tables' writer), unqualified
        names in ``default_schema`` as the real server resolves them (SQL Server's user's default schema, Db2's
        CURRENT SCHEMA)."""
        conn = self.server.connect(self.database, autocommit=False, application_name="kit-writer")
        conn.execute(f"SET search_path TO {self.quote(self.default_schema)}, public")
        conn.commit()
        return conn

    def quote(self, identifier: str) -> str:
        """An identifier quoted for the writers' SQL (the stand-in's PostgreSQL)."""
        return '"' + identifier.replace('"', '""') + '"'

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """Any name without NUL of at most 63 bytes: the stand-ins' PostgreSQL limit (both servers take 128 characters)."""
        return "\x00" not in name and len(name.encode()) <= 63

    def execute(self, statement: str) -> None:
        """Run one statement of the stand-in's SQL on the test database in its own transaction (``connect``)."""
        with self.connect() as conn:
            conn.execute(statement)

    def sql_type(self, neutral: str) -> str:
        """The connector's SQL type of a neutral type."""
        return self.TYPES[neutral]

    def schema_of(self, table: Any) -> str:
        """``source.schema``."""
        return table.schema or self.default_schema

    def create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA``."""
        self.execute(f"CREATE SCHEMA {self.quote(schema)}")

    def source_properties(self) -> dict[str, Any]:
        """The connector's own properties (``debezium.source.`` left out): class, connection, database."""
        raise NotImplementedError

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """The connector on the stand-in's database, the file sink, file offsets and history, ``exclusive`` snapshots."""
        props: dict[str, Any] = {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": str(workdir.events),
            "debezium.source.database.hostname": self.server.host,
            "debezium.source.database.port": self.server.port,
            "debezium.source.database.user": self.server.user,
            "debezium.source.database.password": "",
            "debezium.source.topic.prefix": "dbserver1",
            "debezium.source.offset.storage.file.filename": str(workdir.offsets),
            "debezium.source.offset.flush.interval.ms": 0,
            "debezium.source.schema.history.internal.file.filename": str(workdir.history),
            "debezium.source.poll.interval.ms": 100,
            "debezium.source.snapshot.isolation.mode": ISOLATION,
        }
        props.update({f"debezium.source.{k}": v for k, v in self.source_properties().items()})
        props.update({f"debezium.source.{k}": v for k, v in source.items()})
        return props

    def _position(self, fields: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(lsn_key(fields.get(f)) if f.endswith("_lsn") else int(fields.get(f) or 0)
                     for f in self.OFFSET_FIELDS)

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """``source.commit_lsn`` and ``change_lsn`` (a snapshot's reads: its handoff, no change LSN)."""
        return (lsn_key(source.get("commit_lsn")), lsn_key(source.get("change_lsn")))

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A committed offset's position (``OFFSET_FIELDS``)."""
        return self._position(offset)

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """The offset lies before the event's position (a restart reads it again)."""
        return self._position(offset) < self._position(source)

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """The commit LSN above anything the stand-in writes."""
        return {"commit_lsn": ({**offset, "commit_lsn": self.LAST_LSN, "change_lsn": self.LAST_LSN}, self.LAST_LSN)}

    def confirmed_position(self) -> Any:
        """The server keeps nothing confirmed by the connector."""
        return None

    def cut_connections(self) -> None:
        """Terminate the connector's sessions on the test database (not the writers', not the capture agent's)."""
        self.server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND application_name <> 'kit-writer' AND backend_type = 'client backend' AND query NOT LIKE "
            "'%%pg_logical_slot%%'", params=(self.database,))
