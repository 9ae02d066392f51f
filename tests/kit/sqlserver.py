"""The kit's SQL Server fixture: the SQL Server connector on its stand-in (a CDC-enabled database on the session's
throwaway PostgreSQL, filled by the stand-in's capture agent), one database per test.

Tables are created in T-SQL (translated by the stand-in) and put in capture mode
(``sys.sp_cdc_enable_table``). A column added while streaming gets a second capture instance, as the
chapter's online schema evolution says (the connector switches to it at its start LSN).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.change_tables import SCENARIOS, ChangeTableFixture
from kit.contract import Column, Table, sanitize_topic

from cdc_sqlserver.odbc import STANDIN_DRIVER
from cdc_sqlserver.standin.server import StandIn


class SqlServerFixture(ChangeTableFixture):
    """``ConnectorFixture`` for the SQL Server connector on ``cdc_sqlserver.standin``."""

    name: ClassVar[str] = "sqlserver"
    #: No data-driven scenario files of its own (its chapter's examples are tests/test_sqlserver_examples.py).
    scenario_files: ClassVar[str] = "scenarios/sqlserver_*.yaml"
    #: The kit modules this fixture joins (``kit.plugin`` reads it from the class itself, not its bases).
    scenarios: ClassVar[tuple[str, ...]] = SCENARIOS
    TYPES = {"int32": "INT", "int64": "BIGINT", "float64": "FLOAT", "text": "NVARCHAR(MAX)",
             "decimal": "DECIMAL(38,10)"}
    LAST_LSN = "ffffffff:ffffffff:ffff"
    #: The chapter's topic names: ``<topic.prefix>.<databaseName>.<schemaName>.<tableName>``.
    topic_names_database: ClassVar[bool] = True
    OFFSET_FIELDS = ("commit_lsn", "change_lsn", "event_serial_no")
    #: The reader fetches a capture instance read alone in a window in parts (``streaming.fetch.size``, 2,048 rows
    #: when 0), so a real pyodbc cursor streams; the stand-in's psycopg cursor still holds the whole result.
    read_ahead_unbounded = (
        "the stand-in's psycopg cursor holds a window's whole result (the connector fetches it in parts, which a real "
        "pyodbc cursor streams; several capture instances in one window are fetched whole, one ODBC connection "
        "holding one open result set): a stalled sink with 1 MB values grows RSS by 20-35 MiB")
    default_schema = "dbo"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database
        self.standin = StandIn(server, database)
        self.standin.enable_db()
        self.standin.agent.start()
        self._instances: dict[str, int] = {}


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

    def source_properties(self) -> dict[str, Any]:
        """The SQL Server connector on the stand-in's database."""
        return {"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
                "database.names": self.database, "database.encrypt": "false", "driver.Driver": STANDIN_DRIVER}

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """``<prefix>.<database>.<schema>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{self.database}.{table.schema or self.default_schema}.{table.name}")
