"""The kit's Db2 fixture: the Db2 connector on its stand-in (SQL Replication's objects on the session's throwaway
PostgreSQL, filled by the stand-in's asncap-like agent), one database per test.

``cdc run`` reaches the stand-in through ``driver.Driver=cdc stand-in`` (``cdc_db2.driver``); tables are created
with Db2's types and put in capture mode (``ASNCDC.ADDTABLE`` and ``reinit``); the kit's writers write the
source tables as an application does, in the stand-in's own SQL. A column added while streaming follows the
chapter's online procedure (INACTIVE, ALTER the source and CD tables, ACTIVE, each with a ``reinit``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.contract import Column, Table, Workdir, sanitize_topic

from cdc_db2.driver import STANDIN_DRIVER
from cdc_db2.standin.server import StandIn

_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE", "text": "CLOB(1048576)",
          "decimal": "DECIMAL(31,10)"}
#: Above every LSN the stand-in writes (16 bytes).
_LAST_LSN = "ffffffff:ffffffff:ffffffffffffffff"


def _lsn(text: str | None) -> str:
    """An LSN's text as a sort key (fixed-width hex: text order is LSN order), NULL first."""
    return "" if text in (None, "NULL") else text  # type: ignore[return-value]


class Db2Fixture:
    """``ConnectorFixture`` for the Db2 connector on ``cdc_db2.standin``."""

    name: ClassVar[str] = "db2"
    unavailable_value: ClassVar[str | None] = None
    has_history: ClassVar[bool] = True
    text_allows_nul: ClassVar[bool] = False
    #: No data-driven scenario files of its own (its chapter's examples are tests/test_db2_examples.py).
    scenario_files: ClassVar[str] = "scenarios/db2_*.yaml"
    scenario_run: ClassVar[str] = "kit.scenarios:ScenarioRun"
    #: The kit modules this fixture joins (``kit.plugin`` deselects it elsewhere): see the README's Db2 part.
    scenarios: ClassVar[tuple[str, ...]] = ("test_kit_stream", "test_kit_storms")
    #: Scenarios that fail now and then, and why (expected failures that may pass).
    intermittent_failures: ClassVar[dict[str, str]] = {
        "test_snapshot_then_stream_equals_the_table":
            "about one run in ten loses the last changes written before the online ADD COLUMN procedure "
            "(INACTIVE, reinit, ALTER, ACTIVE, reinit) when the connector still has them to read; with "
            "snapshot.isolation.mode repeatable_read too, so not the exclusive handoff; not found yet"}
    default_schema = "KIT"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database
        self.standin = StandIn(server, database)
        self.standin.agent.start()

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
        """The Db2 type of a neutral type."""
        return _TYPES[neutral]

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """Plain names only: letters, digits and underscores."""
        return name.replace("_", "a").isalnum() and name.isascii() and len(name) <= 63

    def execute(self, statement: str) -> None:
        """Run one statement of the stand-in's SQL on the test database in autocommit mode."""
        self.standin.execute(statement)

    def create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA``."""
        self.execute(f"CREATE SCHEMA {self.quote(schema)}")

    def _column(self, column: Column) -> tuple[str, str]:
        return column.name, (f"{self.sql_type(column.type)}{'' if column.nullable else ' NOT NULL'}"
                             + ("" if column.default is None else f" DEFAULT {column.default}"))

    def create_table(self, table: Table) -> None:
        """``CREATE TABLE`` with Db2's types, then ``ADDTABLE`` and ``reinit`` (updates as D+I pairs)."""
        schema = table.schema or self.default_schema
        self.standin.create_table(schema, table.name, [self._column(c) for c in table.columns], key=list(table.key))
        self.standin.add_table(schema, table.name)

    def add_column(self, table: Table, column: Column) -> Table:
        """The chapter's online procedure for a column added at the end, once the capture agent has read every
        change committed so far (the stand-in's agent applies a table's INACTIVE state at its next poll, to
        changes it had not read yet, where asncap applies it at the reinit's place in the log)."""
        self.standin.wait_captured()
        self.standin.add_column(table.schema or self.default_schema, table.name, column.name,
                                self._column(column)[1])
        return Table(table.name, table.columns + (column,), table.key, table.schema)

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """The Db2 connector on the stand-in's database, the file sink, file offsets and history."""
        props: dict[str, Any] = {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": str(workdir.events),
            "debezium.source.connector.class": "io.debezium.connector.db2.Db2Connector",
            "debezium.source.database.hostname": self.server.host,
            "debezium.source.database.port": self.server.port,
            "debezium.source.database.user": self.server.user,
            "debezium.source.database.password": "",
            "debezium.source.database.dbname": self.database,
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
        """``<prefix>.<schema>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{table.schema or self.default_schema}.{table.name}")

    def schema_of(self, table: Table) -> str:
        """``source.schema``."""
        return table.schema or self.default_schema

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """``source.commit_lsn`` and ``change_lsn``."""
        return (_lsn(source.get("commit_lsn")), _lsn(source.get("change_lsn")))

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A Db2 offset: commit LSN, change LSN."""
        return (_lsn(offset.get("commit_lsn")), _lsn(offset.get("change_lsn")))

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """The offset lies before the event's position (a restart reads it again)."""
        return self.position(offset) < self.source_position(source)

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """The commit LSN above anything the stand-in writes."""
        return {"commit_lsn": ({**offset, "commit_lsn": _LAST_LSN, "change_lsn": _LAST_LSN}, _LAST_LSN)}

    def confirmed_position(self) -> Any:
        """Db2 keeps nothing confirmed by the connector."""
        return None

    def cut_connections(self) -> None:
        """Terminate the connector's sessions on the test database (not the writers', not the capture agent's)."""
        self.server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND application_name <> 'kit-writer' AND backend_type = 'client backend' AND query NOT LIKE "
            "'%%pg_logical_slot%%'", params=(self.database,))
