"""What the connector reads from SQL Server's catalog and CDC metadata, in T-SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.relational import Table, TableId
from cdc_sqlserver.lsn import NULL, Lsn, from_value
from cdc_sqlserver.server_parse import ServerParse
from cdc_sqlserver.types import ColumnInfo, TypeModes, column

#: Schemas SQL Server keeps for itself; never captured (Debezium's system schema list).
SYSTEM_SCHEMAS = frozenset({"cdc", "sys", "INFORMATION_SCHEMA", "guest", "db_owner", "db_accessadmin",
                            "db_securityadmin", "db_ddladmin", "db_backupoperator", "db_datareader",
                            "db_datawriter", "db_denydatareader", "db_denydatawriter"})

#: Each column with its type's name and the system type its values follow: for an alias type (``CREATE TYPE Name
#: FROM nvarchar(50)``, ``sysname``) the type it is made from (``bt``: sys.types' row for its system_type_id);
#: for a CLR type (system_type_id 240: geometry, geography, hierarchyid, a user's assembly type) varbinary, as
#: mssql-jdbc's getColumns reports SQL_SS_UDT (VARBINARY, cdc_sqlserver.jdbc).
COLUMNS = (
    "SELECT s.name, t.name, c.name, c.column_id, ty.name, c.max_length, c.precision, c.scale, c.is_nullable, "
    "c.is_identity, dc.definition, COALESCE(bt.name, CASE WHEN ty.system_type_id = 240 THEN 'varbinary' END, ty.name) "
    "FROM sys.columns c JOIN sys.tables t ON t.object_id = c.object_id "
    "LEFT JOIN sys.default_constraints dc ON dc.parent_object_id = c.object_id AND dc.parent_column_id = c.column_id "
    "JOIN sys.schemas s ON s.schema_id = t.schema_id JOIN sys.types ty ON ty.user_type_id = c.user_type_id "
    "LEFT JOIN sys.types bt ON bt.user_type_id = ty.system_type_id "
    "WHERE t.is_ms_shipped = 0 ORDER BY s.name, t.name, c.column_id")
PRIMARY_KEYS = (
    "SELECT s.name, t.name, c.name FROM sys.indexes i "
    "JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id "
    "JOIN sys.columns c ON c.object_id = ic.object_id AND c.column_id = ic.column_id "
    "JOIN sys.tables t ON t.object_id = i.object_id JOIN sys.schemas s ON s.schema_id = t.schema_id "
    "WHERE i.is_primary_key = 1 ORDER BY s.name, t.name, ic.key_ordinal")
#: The unique indexes' key columns, in the order the driver's getIndexInfo(unique=true) (sp_statistics) lists them:
#: clustered first, then by index name; a table without a primary key takes the first one's (below).
UNIQUE_INDEXES = (
    "SELECT s.name, t.name, i.name, c.name FROM sys.indexes i "
    "JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id "
    "JOIN sys.columns c ON c.object_id = ic.object_id AND c.column_id = ic.column_id "
    "JOIN sys.tables t ON t.object_id = i.object_id JOIN sys.schemas s ON s.schema_id = t.schema_id "
    "WHERE i.is_unique = 1 AND i.is_primary_key = 0 AND i.name IS NOT NULL AND ic.key_ordinal > 0 "
    "ORDER BY s.name, t.name, CASE WHEN i.type = 1 THEN 0 ELSE 1 END, i.name, ic.key_ordinal")
CHANGE_TABLES = (
    "SELECT OBJECT_SCHEMA_NAME(ct.source_object_id), OBJECT_NAME(ct.source_object_id), ct.capture_instance, "
    "ct.object_id, ct.start_lsn, ct.create_date FROM cdc.change_tables AS ct ORDER BY ct.start_lsn, ct.create_date")
CAPTURED_COLUMNS = "SELECT cc.object_id, cc.column_name FROM cdc.captured_columns AS cc ORDER BY cc.object_id, cc.column_ordinal"
HELP_CHANGE_DATA_CAPTURE = "EXEC sys.sp_cdc_help_change_data_capture"
CDC_ENABLED = "SELECT is_cdc_enabled FROM sys.databases WHERE name = ?"
#: The oldest change any change table still holds (Debezium's log position check).
MIN_LSN_OF_ALL_CHANGE_TABLES = "SELECT MIN(start_lsn) FROM cdc.change_tables"
TRACKED_TABLES = ("SELECT s.name, t.name FROM sys.tables t JOIN sys.schemas s ON s.schema_id = t.schema_id "
                  "WHERE t.is_tracked_by_cdc = 1")


@dataclass
class CaptureInstance:
    """A capture instance: its source table, change table and the columns it captures."""

    name: str
    table: Table
    object_id: int
    start_lsn: Lsn
    columns: list[str]
    #: The start LSN of the instance that replaces this one (its changes from there on are the new one's).
    stop_lsn: Lsn = NULL

    @property
    def change_table(self) -> str:
        """``cdc.[<instance>_CT]``."""
        return f"cdc.{quote(self.name + '_CT')}"


def quote(name: str) -> str:
    """A T-SQL bracketed identifier."""
    return "[" + name.replace("]", "]]") + "]"


def read_tables(conn: Any, db: str, modes: TypeModes, parse: ServerParse | None = None) -> dict[tuple[str, str], Table]:
    """Every user table of the database, by ``(schema, table)``.

    Temporal defaults are PARSEd by the server on ``conn`` (``parse``'s cache when given, else a new one).
    """
    parse = ServerParse(lambda: conn) if parse is None else parse.on(conn)
    infos: dict[tuple[str, str], list[ColumnInfo]] = {}
    for schema, table, name, cid, tname, max_length, precision, scale, nullable, identity, default, base in \
            conn.execute(COLUMNS).fetchall():
        if schema in SYSTEM_SCHEMAS:
            continue
        base = str(base).lower()
        # An alias keeps its name as created (getColumns' TYPE_NAME, Debezium's typeName); system types are lower case.
        tname = base if str(tname).lower() == base else str(tname)
        infos.setdefault((schema, table), []).append(
            ColumnInfo(name, int(cid), tname, int(max_length or 0), int(precision or 0), int(scale or 0),
                       bool(nullable), bool(identity), default, None if tname == base else base))
    keys: dict[tuple[str, str], list[str]] = {}
    for schema, table, name in conn.execute(PRIMARY_KEYS).fetchall():
        keys.setdefault((schema, table), []).append(name)
    # As Debezium 2.7.4's JdbcConnection.readPrimaryKeyOrUniqueIndexNames: no primary key, the first unique index
    # (readTableUniqueIndices; SqlServerConnection takes every named one) gives the key (TablesWithoutPrimaryKeyIT).
    first: dict[tuple[str, str], str] = {}
    for schema, table, index, name in conn.execute(UNIQUE_INDEXES).fetchall():
        if (schema, table) in keys and (schema, table) not in first:
            continue
        if first.setdefault((schema, table), index) == index:
            keys.setdefault((schema, table), []).append(name)
    return {k: Table(TableId(db, k[0], k[1]), [column(i, modes, parse) for i in cols], keys.get(k, []))
            for k, cols in infos.items()}


def read_capture_instances(conn: Any, tables: dict[tuple[str, str], Table]) -> dict[tuple[str, str], CaptureInstance]:
    """The capture instance each captured table streams from: the newest (highest start LSN, then creation)."""
    return {k: v[-1] for k, v in read_all_capture_instances(conn, tables).items()}


def read_all_capture_instances(conn: Any, tables: dict[tuple[str, str], Table]
                               ) -> dict[tuple[str, str], list[CaptureInstance]]:
    """Every table's capture instances, oldest first, each stopping where the next one starts.

    As Debezium: a table has at most two; when both start at the same LSN the newer (by
    ``create_date``) wins, since the query orders by ``start_lsn, create_date``.
    """
    captured: dict[int, list[str]] = {}
    for object_id, name in conn.execute(CAPTURED_COLUMNS).fetchall():
        captured.setdefault(int(object_id), []).append(name)
    out: dict[tuple[str, str], list[CaptureInstance]] = {}
    for schema, table, name, object_id, start_lsn, _created in conn.execute(CHANGE_TABLES).fetchall():
        source = tables.get((schema, table))
        if source is None:
            continue
        columns = captured.get(int(object_id), [])
        # The event schema holds the captured columns only, in the table's order; the key the captured key columns
        # only (Debezium 2.7.4's readTableStructure cdcEnabledPkColumns, getTableSchemaFromTable).
        view = Table(source.id, [c for c in source.columns if c.name in columns],
                     [k for k in source.primary_key if k in columns])
        instance = CaptureInstance(name, view, int(object_id), from_value(start_lsn), columns)
        previous = out.setdefault((schema, table), [])
        if previous and previous[-1].start_lsn == instance.start_lsn:
            previous.pop()  # the same start: the newer instance wins
        if previous:
            previous[-1].stop_lsn = instance.start_lsn
        previous.append(instance)
    return out


def instance_names(conn: Any) -> frozenset[str]:
    """The names of every capture instance now (a change means a new or a dropped instance)."""
    return frozenset(r[0] for r in conn.execute("SELECT capture_instance FROM cdc.change_tables").fetchall())
