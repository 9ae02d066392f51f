"""Schema change events on the ``<topic.prefix>`` topic: Debezium's SchemaChangeKey/SchemaChangeValue."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema, struct

from cdc_mysql.flavor import Flavor
from cdc_mysql.model import TableChange

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
# SchemaFactory.schemaHistoryTableSchema (2.7.4 and 3.0.7): optional, and without the ``attributes`` the
# 2.7 docs show (ConnectTableChangeSerializer never writes them).
TABLE_SCHEMA = struct("io.debezium.connector.schema.Table", [
    ("defaultCharsetName", _OSTR), ("primaryKeyColumnNames", _OSTR_ARRAY),
    ("columns", Schema("array", items=COLUMN_SCHEMA)), ("comment", _OSTR),
], version=1, optional=True)
CHANGE_SCHEMA = struct("io.debezium.connector.schema.Change", [("type", _STR), ("id", _STR), ("table", TABLE_SCHEMA)],
                       version=1)
_COLUMN_KEYS = [f.name for f in COLUMN_SCHEMA.fields]


@lru_cache(maxsize=None)
def key_schema(flavor: Flavor) -> Schema:
    """``io.debezium.connector.<name>.SchemaChangeKey``: the database name."""
    return struct(flavor.schema_change_key_name, [("databaseName", _STR)], version=1)


@lru_cache(maxsize=None)
def value_schema(flavor: Flavor, source: Schema) -> Schema:
    """``io.debezium.connector.<name>.SchemaChangeValue``."""
    return struct(flavor.schema_change_value_name, [
        ("source", source), ("ts_ms", _I64), ("databaseName", _OSTR), ("schemaName", _OSTR), ("ddl", _OSTR),
        ("tableChanges", Schema("array", items=CHANGE_SCHEMA)),
    ], version=1)


def change_payload(change: TableChange) -> dict[str, Any]:
    """One ``tableChanges`` entry with every field of the Connect schema (absent ones null)."""
    data = change.to_json()
    table = data["table"]
    if table is None:
        return {"type": data["type"], "id": data["id"], "table": None}
    columns = []
    for c in table["columns"]:
        full = {k: c.get(k) for k in _COLUMN_KEYS}
        if not c.get("hasDefaultValue"):
            full["defaultValueExpression"] = None
        columns.append(full)
    return {"type": data["type"], "id": data["id"], "table": {
        "defaultCharsetName": table.get("defaultCharsetName"),
        "primaryKeyColumnNames": table.get("primaryKeyColumnNames"),
        "columns": columns, "comment": table.get("comment"),
    }}


def schema_change_record(flavor: Flavor, source_schema: Schema, topic: str, database: str, ddl: str,
                         changes: list[TableChange], source: dict[str, Any], offset: dict[str, Any] | None,
                         partition: dict[str, Any]) -> ChangeRecord:
    """The schema change event of one statement."""
    value = {
        "source": source, "ts_ms": time.time_ns() // 1_000_000, "databaseName": database, "schemaName": None,
        "ddl": ddl, "tableChanges": [change_payload(c) for c in changes],
    }
    return ChangeRecord(topic, {"databaseName": database}, value, key_schema(flavor),
                        value_schema(flavor, source_schema), offset, {}, partition)
