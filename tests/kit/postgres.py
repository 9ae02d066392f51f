"""The kit's PostgreSQL fixture: the session's throwaway server, one database per test."""

from __future__ import annotations

from typing import Any, ClassVar

from kit.contract import Column, Table, Workdir, column_definition, sanitize_topic

_TYPES = {"int32": "integer", "int64": "bigint", "float64": "double precision", "text": "text",
          "decimal": "numeric(38,10)"}


class PostgresFixture:
    """``ConnectorFixture`` for the PostgreSQL connector (pgoutput) on ``EmbeddedPostgres``."""

    name: ClassVar[str] = "postgres"
    unavailable_value: ClassVar[str | None] = "__debezium_unavailable_value"  # unchanged TOASTed values
    has_history: ClassVar[bool] = False
    text_allows_nul: ClassVar[bool] = False  # text cannot hold U+0000
    decimal_max: ClassVar[str] = "9999999999999999999999999999.9999999999"
    text_defaults: ClassVar[bool] = True
    topic_names_database: ClassVar[bool] = False
    refuses_offsets_ahead: ClassVar[bool] = True
    read_ahead_unbounded: ClassVar[str | None] = None
    #: The data-driven scenarios (``kit.scenarios``): their files (a glob under tests/) and the run class.
    scenario_files: ClassVar[str] = "scenarios/postgres_*.yaml"
    scenario_run: ClassVar[str] = "kit.scenarios_postgres:PostgresScenarioRun"
    default_schema = "public"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database

    def connect(self) -> Any:
        """A psycopg connection, autocommit off (psycopg uses ``%s`` placeholders)."""
        return self.server.connect(self.database, autocommit=False, application_name="kit-writer")

    def quote(self, identifier: str) -> str:
        """A double-quoted identifier."""
        return '"' + identifier.replace('"', '""') + '"'

    def sql_type(self, neutral: str) -> str:
        """The PostgreSQL type of a neutral type."""
        return _TYPES[neutral]

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """PostgreSQL takes any identifier without NUL of at most 63 bytes."""
        return "\x00" not in name and len(name.encode()) <= 63

    def execute(self, statement: str) -> None:
        """Run one statement on the test database in autocommit mode."""
        self.server.execute(statement, dbname=self.database)

    def _qualified(self, table: Table) -> str:
        return f"{self.quote(table.schema or self.default_schema)}.{self.quote(table.name)}"

    def create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA``."""
        self.execute(f"CREATE SCHEMA {self.quote(schema)}")

    def create_table(self, table: Table) -> None:
        """``CREATE TABLE`` with REPLICA IDENTITY FULL (full before images, as MariaDB's binlog has)."""
        columns = [column_definition(self, c) for c in table.columns]
        key = ", ".join(self.quote(k) for k in table.key)
        self.execute(f"CREATE TABLE {self._qualified(table)} ({', '.join(columns)}, PRIMARY KEY ({key}))")
        self.execute(f"ALTER TABLE {self._qualified(table)} REPLICA IDENTITY FULL")

    def add_column(self, table: Table, column: Column) -> Table:
        """``ALTER TABLE ... ADD COLUMN``."""
        self.execute(f"ALTER TABLE {self._qualified(table)} ADD COLUMN {column_definition(self, column)}")
        return Table(table.name, table.columns + (column,), table.key, table.schema)

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """The PostgreSQL connector on the test database, the file sink, file offsets."""
        props: dict[str, Any] = {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": str(workdir.events),
            "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "debezium.source.database.hostname": self.server.host,
            "debezium.source.database.port": self.server.port,
            "debezium.source.database.user": self.server.user,
            "debezium.source.database.dbname": self.database,
            "debezium.source.topic.prefix": "dbserver1",
            "debezium.source.offset.storage.file.filename": str(workdir.offsets),
            "debezium.source.offset.flush.interval.ms": 0,
            "debezium.source.poll.interval.ms": 100,
        }
        props.update({f"debezium.source.{k}": v for k, v in source.items()})
        return props

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """``<prefix>.<schema>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{table.schema or self.default_schema}.{table.name}")

    def schema_of(self, table: Table) -> str:
        """``source.schema``."""
        return table.schema or self.default_schema

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """``source.lsn``."""
        return (source["lsn"],)

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A PostgreSQL offset: the last commit's LSN, then the last processed LSN."""
        return (offset.get("lsn_commit") or 0, offset.get("lsn_proc") or offset.get("lsn") or 0)

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """The offset's last processed LSN (or, at a transaction's end, its commit LSN) lies below the event's LSN."""
        return self.position(offset)[1] < source["lsn"]

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """All three LSNs 64 GiB ahead of anything the server has written (an LSN shows as ``X/Y``)."""
        future = offset["lsn"] + (64 << 30)
        return {"lsn": ({**offset, "lsn": future, "lsn_commit": future, "lsn_proc": future},
                        f"{future >> 32:X}/{future & 0xFFFFFFFF:X}")}

    def confirmed_position(self) -> Any:
        """The test database's slot's ``confirmed_flush_lsn``, and the server's current WAL position."""
        rows = self.server.execute(
            "SELECT (confirmed_flush_lsn - '0/0')::bigint, (pg_current_wal_lsn() - '0/0')::bigint"
            " FROM pg_replication_slots WHERE database = %s", params=(self.database,))
        assert len(rows) == 1, f"expected one slot on {self.database}: {rows}"
        return rows[0]

    def cut_connections(self) -> None:
        """Terminate every session on the test database but the kit's own writers."""
        self.server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND application_name <> 'kit-writer'", params=(self.database,))
