"""Schema change events: Debezium's SchemaChangeKey/SchemaChangeValue and the ``tableChanges`` Connect schemas.

The shapes of 2.7.4's ``SchemaFactory`` (``schemaHistoryColumnSchema``, ``schemaHistoryTableSchema``,
``schemaHistoryChangeSchema``, ``schemaChangeKeySchema``/``ValueSchema``), for connectors that build
``tableChanges`` from a catalog (SQL Server, Db2) and for the MySQL/MariaDB DDL parser's changes
(cdc_mysql.schema_changes).
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema, struct

_STR, _OSTR = Schema("string"), Schema("string", optional=True)
_I32, _OI32 = Schema("int32"), Schema("int32", optional=True)
_OBOOL, _I64 = Schema("boolean", optional=True), Schema("int64")
_OSTR_ARRAY = Schema("array", optional=True, items=_STR)

COLUMN_SCHEMA = struct("io.debezium.connector.schema.Column", [
    ("name", _STR), ("jdbcType", _I32), ("nativeType", _OI32), ("typeName", _STR), ("typeExpression", _OSTR),
    ("charsetName", _OSTR), ("length", _OI32), ("scale", _OI32), ("position", _I32), ("optional", _OBOOL),
    ("autoIncremented", _OBOOL), ("generated", _OBOOL), ("comment", _OSTR), ("defaultValueExpression", _OSTR),
    ("enumValues", _OSTR_ARRAY),
], version=1)
#: Without the ``attributes`` the 2.7 docs show: ConnectTableChangeSerializer (2.7.4) never writes them.
TABLE_SCHEMA = struct("io.debezium.connector.schema.Table", [
    ("defaultCharsetName", _OSTR), ("primaryKeyColumnNames", _OSTR_ARRAY),
    ("columns", Schema("array", items=COLUMN_SCHEMA)), ("comment", _OSTR),
], version=1, optional=True)
CHANGE_SCHEMA = struct("io.debezium.connector.schema.Change", [("type", _STR), ("id", _STR), ("table", TABLE_SCHEMA)],
                       version=1)
_COLUMN_KEYS = [f.name for f in COLUMN_SCHEMA.fields]


@lru_cache(maxsize=None)
def key_schema(connector: str) -> Schema:
    """``io.debezium.connector.<connector>.SchemaChangeKey``: the database name."""
    return struct(f"io.debezium.connector.{connector}.SchemaChangeKey", [("databaseName", _STR)], version=1)


@lru_cache(maxsize=None)
def value_schema(connector: str, source: Schema) -> Schema:
    """``io.debezium.connector.<connector>.SchemaChangeValue``."""
    return struct(f"io.debezium.connector.{connector}.SchemaChangeValue", [
        ("source", source), ("ts_ms", _I64), ("databaseName", _OSTR), ("schemaName", _OSTR), ("ddl", _OSTR),
        ("tableChanges", Schema("array", items=CHANGE_SCHEMA)),
    ], version=1)


def change_payload(change: dict[str, Any]) -> dict[str, Any]:
    """One history ``tableChanges`` entry as the event's Connect struct: every field, absent ones null."""
    table = change.get("table")
    if table is None:
        return {"type": change["type"], "id": change["id"], "table": None}
    columns = []
    for c in table["columns"]:
        full = {k: c.get(k) for k in _COLUMN_KEYS}
        if not c.get("hasDefaultValue"):
            full["defaultValueExpression"] = None
        if not c.get("enumValues"):
            full["enumValues"] = None  # ConnectTableChangeSerializer leaves an empty list out
        columns.append(full)
    return {"type": change["type"], "id": change["id"], "table": {
        "defaultCharsetName": table.get("defaultCharsetName"),
        "primaryKeyColumnNames": table.get("primaryKeyColumnNames"),
        "columns": columns, "comment": table.get("comment"),
    }}


def schema_change_record(connector: str, source_schema: Schema, topic: str, database: str, schema: str | None,
                         ddl: str | None, changes: list[dict[str, Any]], source: dict[str, Any],
                         offset: dict[str, Any] | None, partition: dict[str, Any] | None) -> ChangeRecord:
    """One schema change event (key ``{"databaseName"}``) for the ``<topic.prefix>`` topic."""
    value = {"source": source, "ts_ms": time.time_ns() // 1_000_000, "databaseName": database, "schemaName": schema,
             "ddl": ddl, "tableChanges": [change_payload(c) for c in changes]}
    return ChangeRecord(topic, {"databaseName": database}, value, key_schema(connector),
                        value_schema(connector, source_schema), offset, {}, partition)
