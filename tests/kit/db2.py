"""The kit's Db2 fixture: the Db2 connector on its stand-in (SQL Replication's objects on the session's throwaway
PostgreSQL, filled by the stand-in's asncap-like agent), one database per test.

Tables are created with Db2's types and put in capture mode (``ASNCDC.ADDTABLE`` and ``reinit``). A
column added while streaming follows the chapter's online procedure (INACTIVE, ALTER the source and
CD tables, ACTIVE, each with a ``reinit``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.change_tables import SCENARIOS, ChangeTableFixture
from kit.contract import Column, Table, sanitize_topic

from cdc_db2.driver import STANDIN_DRIVER
from cdc_db2.standin.server import StandIn


class Db2Fixture(ChangeTableFixture):
    """``ConnectorFixture`` for the Db2 connector on ``cdc_db2.standin``."""

    name: ClassVar[str] = "db2"
    #: No data-driven scenario files of its own (its chapter's examples are tests/test_db2_examples.py).
    scenario_files: ClassVar[str] = "scenarios/db2_*.yaml"
    #: The kit modules this fixture joins (``kit.plugin`` reads it from the class itself, not its bases).
    scenarios: ClassVar[tuple[str, ...]] = SCENARIOS
    TYPES = {"int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE", "text": "CLOB(1048576)",
             "decimal": "DECIMAL(31,10)"}
    LAST_LSN = "ffffffff:ffffffff:ffffffffffffffff"
    #: DECIMAL's precision is at most 31 on Db2: DECIMAL(31,10) holds 21 digits before the point.
    decimal_max: ClassVar[str] = "999999999999999999999.9999999999"
    #: The neutral text type is CLOB (the kit writes texts of megabytes), and Debezium 2.7.4's Db2DefaultValueConverter
    #: has no mapper for CLOB: its DEFAULT gives no schema default (cdc_db2.defaults), so a NULL stays null.
    text_defaults: ClassVar[bool] = False
    default_schema = "KIT"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database
        self.standin = StandIn(server, database)
        self.standin.agent.start()

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

    def source_properties(self) -> dict[str, Any]:
        """The Db2 connector on the stand-in's database."""
        return {"connector.class": "io.debezium.connector.db2.Db2Connector", "database.dbname": self.database,
                "driver.Driver": STANDIN_DRIVER}

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """``<prefix>.<schema>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{table.schema or self.default_schema}.{table.name}")
