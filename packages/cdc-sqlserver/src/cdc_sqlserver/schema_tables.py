"""Which tables a snapshot records a CREATE for: Debezium 2.7.4's ``capturedSchemaTables`` for SQL Server.

RelationalSnapshotChangeEventSource.determineCapturedTables keeps every table of the database that
RelationalTableFilters' schema snapshot filter passes, and SqlServerSnapshotChangeEventSource
(getTablesForSchemaChange) sends a CREATE for each, sorted by ``<db>.<schema>.<table>``. That filter
depends on ``schema.history.internal.store.only.captured.tables.ddl`` (default false: every table
but SQL Server's own, those of the ``cdc`` and ``sys`` schemas and ``systranschemas``; true: the
captured tables, those the table and schema filters pass, with CDC or not, and the signal table)
and ``...store.only.captured.databases.ddl`` (true, with the former false: the tables of the
captured schemas). A table with a capture instance is described with its newest instance's
columns (readTableStructure overwrites it with the change table's captured columns), any other with
all of its columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_core.relational import Table
from cdc_sqlserver.catalog import read_capture_instances, read_tables
from cdc_sqlserver.server_parse import ServerParse
from cdc_sqlserver.types import TypeModes

#: The one user-schema table SqlServerConnectorConfig's SystemTablesPredicate leaves out by name.
_SYSTEM_TABLE = "systranschemas"


def schema_tables(conn: Any, db: str, modes: TypeModes, captured: list[Table], only_captured: bool,
                  only_captured_schemas: bool, table_included: Callable[[str, str], bool],
                  schema_included: Callable[[str], bool], signal: tuple[str, str] | None,
                  parse: ServerParse | None = None) -> list[Table]:
    """The tables to CREATE at a snapshot, sorted by id; ``captured`` (the streamed tables) are used as they are.

    ``parse``: the connector's cache of the server's PARSE of temporal defaults (cdc_sqlserver.server_parse)."""
    tables = {k: t for k, t in read_tables(conn, db, modes, parse).items() if k[1].lower() != _SYSTEM_TABLE}
    if only_captured:
        tables = {k: t for k, t in tables.items() if table_included(*k) or k == signal}
    elif only_captured_schemas:
        tables = {k: t for k, t in tables.items() if schema_included(k[0])}
    own = {(t.id.schema, t.id.table): t for t in captured}
    newest = read_capture_instances(conn, {k: t for k, t in tables.items() if k not in own})
    out = [own.get(k) or (newest[k].table if k in newest else t) for k, t in tables.items()]
    return sorted(out, key=lambda t: f"{db}.{t.id.schema}.{t.id.table}".encode("utf-16-be"))
