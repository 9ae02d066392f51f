"""The kit's SQL Server fixture: the SQL Server connector on its stand-in (a CDC-enabled database on the session's
throwaway PostgreSQL, filled by the stand-in's capture agent), one database per test.

``cdc run`` reaches the stand-in through ``driver.Driver=cdc stand-in`` (``cdc_sqlserver.odbc``); the tables
are created in T-SQL (translated by the stand-in) and put in capture mode (``sys.sp_cdc_enable_table``);
the kit's writers write the source tables as an application does, in the stand-in's own SQL. A column
added while streaming gets a second capture instance, as the chapter's online schema evolution says (the
connector switches to it at its start LSN). What the stand-in cannot vouch for is in the README.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.contract import Column, Table, Workdir, sanitize_topic

from cdc_sqlserver.odbc import STANDIN_DRIVER
from cdc_sqlserver.standin.server import StandIn

_TYPES = {"int32": "INT", "int64": "BIGINT", "float64": "FLOAT", "text": "NVARCHAR(MAX)",
          "decimal": "DECIMAL(38,10)"}
#: Above every LSN the stand-in writes.
_LAST_LSN = "ffffffff:ffffffff:ffff"


def _lsn(text: str | None) -> str:
    """An LSN's text as a sort key (fixed-width hex: text order is LSN order), NULL first."""
    return "" if text in (None, "NULL") else text  # type: ignore[return-value]


class SqlServerFixture:
    """``ConnectorFixture`` for the SQL Server connector on ``cdc_sqlserver.standin``."""

    name: ClassVar[str] = "sqlserver"
    unavailable_value: ClassVar[str | None] = None
    has_history: ClassVar[bool] = True
    text_allows_nul: ClassVar[bool] = False
    #: No data-driven scenario files of its own (its chapter's examples are tests/test_sqlserver_examples.py).
    scenario_files: ClassVar[str] = "scenarios/sqlserver_*.yaml"
    scenario_run: ClassVar[str] = "kit.scenarios:ScenarioRun"
    #: The kit modules this fixture joins (``kit.plugin`` deselects it elsewhere): see the README's SQL Server part.
    scenarios: ClassVar[tuple[str, ...]] = ("test_kit_stream", "test_kit_storms")
    default_schema = "dbo"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database
        self.standin = StandIn(server, database)
        self.standin.enable_db()
        self.standin.agent.start()
        self._instances: dict[str, int] = {}

    def close(self) -> None:
        """Stop the capture agent."""
        self.standin.agent.stop()

    def connect(self) -> Any:
        """A psycopg connection to the stand-in's database, autocommit off (the source tables' writer)."""
        return self.server.connect(self.database, autocommit=False, application_name="kit-writer")

    def quote(self, identifier: str) -> str:
        """An identifier quoted for the writers' SQL (the stand-in's PostgreSQL)."""
        return '"' + identifier.replace('"', '""') + '"'

    def sql_type(self, neutral: str) -> str:
        """The T-SQL type of a neutral type."""
        return _TYPES[neutral]

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """Plain names only: letters, digits and underscores (the stand-in translates the connector's T-SQL)."""
        return name.replace("_", "a").isalnum() and name.isascii() and len(name) <= 63

    def execute(self, statement: str) -> None:
        """Run one statement of the stand-in's SQL on the test database in autocommit mode."""
        self.standin.execute(statement)

    def create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA``."""
        self.execute(f"CREATE SCHEMA {self.quote(schema)}")

    def _tsql_column(self, column: Column) -> str:
        return (f"[{column.name}] {self.sql_type(column.type)}{'' if column.nullable else ' NOT NULL'}"
                + ("" if column.default is None else f" DEFAULT {column.default}"))

    def create_table(self, table: Table) -> None:
        """``CREATE TABLE`` in T-SQL, then ``sys.sp_cdc_enable_table`` (change rows hold both update images)."""
        schema = table.schema or self.default_schema
        columns = ", ".join(self._tsql_column(c) for c in table.columns)
        key = ", ".join(f"[{k}]" for k in table.key)
        self.standin.create_table(f"CREATE TABLE [{schema}].[{table.name}] ({columns}, PRIMARY KEY ({key}))")
        self.standin.enable_table(schema, table.name)
        self._instances[table.name] = 1

    def add_column(self, table: Table, column: Column) -> Table:
        """``ALTER TABLE ... ADD``, then a second capture instance with the new column (the chapter's online schema
        evolution: the connector reads the old instance up to the new one's start LSN)."""
        schema = table.schema or self.default_schema
        self.standin.add_column(schema, table.name, column.name, self.sql_type(column.type))
        n = self._instances.get(table.name, 1) + 1
        self.standin.enable_table(schema, table.name, f"{schema}_{table.name}_v{n}")
        self._instances[table.name] = n
        return Table(table.name, table.columns + (column,), table.key, table.schema)

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """The SQL Server connector on the stand-in's database, the file sink, file offsets and history."""
        props: dict[str, Any] = {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": str(workdir.events),
            "debezium.source.connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
            "debezium.source.database.hostname": self.server.host,
            "debezium.source.database.port": self.server.port,
            "debezium.source.database.user": self.server.user,
            "debezium.source.database.password": "",
            "debezium.source.database.names": self.database,
            "debezium.source.database.encrypt": "false",
            "debezium.source.driver.Driver": STANDIN_DRIVER,
            "debezium.source.topic.prefix": "dbserver1",
            "debezium.source.offset.storage.file.filename": str(workdir.offsets),
            "debezium.source.offset.flush.interval.ms": 0,
            "debezium.source.schema.history.internal.file.filename": str(workdir.history),
            "debezium.source.poll.interval.ms": 100,
            # The chapter's consistent mode: the others may repeat a change at the handoff, as Debezium's docs say.
            "debezium.source.snapshot.isolation.mode": "exclusive",
        }
        props.update({f"debezium.source.{k}": v for k, v in source.items()})
        return props

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """``<prefix>.<database>.<schema>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{self.database}.{table.schema or self.default_schema}.{table.name}")

    def schema_of(self, table: Table) -> str:
        """``source.schema``."""
        return table.schema or self.default_schema

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """``source.commit_lsn`` and ``change_lsn`` (a snapshot's reads: its max LSN, no change LSN)."""
        return (_lsn(source.get("commit_lsn")), _lsn(source.get("change_lsn")))

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A SQL Server offset: commit LSN, change LSN, event_serial_no."""
        return (_lsn(offset.get("commit_lsn")), _lsn(offset.get("change_lsn")), int(offset.get("event_serial_no") or 0))

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """The offset lies before the event's position (a restart reads it again)."""
        event = (_lsn(source.get("commit_lsn")), _lsn(source.get("change_lsn")), int(source.get("event_serial_no") or 0))
        return self.position(offset) < event

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """The commit LSN above anything the stand-in writes."""
        return {"commit_lsn": ({**offset, "commit_lsn": _LAST_LSN, "change_lsn": _LAST_LSN}, _LAST_LSN)}

    def confirmed_position(self) -> Any:
        """SQL Server keeps nothing confirmed by the connector."""
        return None

    def cut_connections(self) -> None:
        """Terminate the connector's sessions on the test database (not the writers', not the capture agent's)."""
        self.server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND application_name <> 'kit-writer' AND backend_type = 'client backend' AND query NOT LIKE "
            "'%%pg_logical_slot%%'", params=(self.database,))
