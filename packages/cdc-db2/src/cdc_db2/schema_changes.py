"""Schema change events on the ``<topic.prefix>`` topic, as the Db2 chapter shows them (SchemaChangeKey/Value).

Emitted for each captured table at the snapshot (``CREATE``), and while streaming when a table
enters capture mode (``CREATE``) or comes back ``ACTIVE`` with other columns (``ALTER``), none when it
leaves it (as Debezium 2.7.4); ``ddl`` is null at the snapshot and ``N/A`` while
streaming (Debezium's Db2SchemaChangeEventEmitter), ``id`` is ``"<schema>"."<table>"``. Column ``jdbcType`` values are java.sql.Types codes of the Db2 types.
"""

from __future__ import annotations

import time
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.relational import Table
from cdc_core.schema import Schema, struct
from cdc_db2.jdbc import catalog_form
from cdc_db2.types import ColumnInfo

_STR, _OSTR = Schema("string"), Schema("string", optional=True)
_I32, _OI32 = Schema("int32"), Schema("int32", optional=True)
_OBOOL, _I64 = Schema("boolean", optional=True), Schema("int64")

COLUMN_SCHEMA = struct("io.debezium.connector.schema.Column", [
    ("name", _STR), ("jdbcType", _I32), ("nativeType", _OI32), ("typeName", _STR), ("typeExpression", _OSTR),
    ("charsetName", _OSTR), ("length", _OI32), ("scale", _OI32), ("position", _I32), ("optional", _OBOOL),
    ("autoIncremented", _OBOOL), ("generated", _OBOOL), ("comment", _OSTR), ("defaultValueExpression", _OSTR),
    ("enumValues", Schema("array", optional=True, items=_STR)),
], version=1)
TABLE_SCHEMA = struct("io.debezium.connector.schema.Table", [
    ("defaultCharsetName", _OSTR), ("primaryKeyColumnNames", Schema("array", optional=True, items=_STR)),
    ("columns", Schema("array", items=COLUMN_SCHEMA)), ("comment", _OSTR),
], version=1, optional=True)
CHANGE_SCHEMA = struct("io.debezium.connector.schema.Change", [("type", _STR), ("id", _STR), ("table", TABLE_SCHEMA)],
                       version=1)
KEY_SCHEMA = struct("io.debezium.connector.db2.SchemaChangeKey", [("databaseName", _STR)], version=1)


def value_schema(source: Schema) -> Schema:
    """``io.debezium.connector.db2.SchemaChangeValue``."""
    return struct("io.debezium.connector.db2.SchemaChangeValue", [
        ("source", source), ("ts_ms", _I64), ("databaseName", _OSTR), ("schemaName", _OSTR), ("ddl", _OSTR),
        ("tableChanges", Schema("array", items=CHANGE_SCHEMA)),
    ], version=1)


def infos_from_json(definition: dict[str, Any]) -> list[ColumnInfo]:
    """The columns of a ``tableChanges`` table (as ``table_json`` wrote it) as the catalog would describe them."""
    out = []
    for c in definition["columns"]:
        type_name, length, scale, codepage = catalog_form(c)
        out.append(ColumnInfo(c["name"], int(c["position"]), type_name, length, scale, bool(c.get("optional")),
                              codepage, c.get("defaultValueExpression")))
    return out


def table_json(table: Table) -> dict[str, Any]:
    """The ``table`` of a ``tableChanges`` entry."""
    columns = []
    for i, c in enumerate(table.columns, 1):
        # JCC's TYPE_NAME, COLUMN_SIZE and DECIMAL_DIGITS, as Debezium's readTableColumn records them (cdc_db2.jdbc).
        name = c.type_name
        columns.append({"name": c.name, "jdbcType": c.extra["jdbc_type"],
                        "nativeType": None,
                        "typeName": name, "typeExpression": name, "charsetName": None, "length": c.length,
                        "scale": c.scale, "position": i, "optional": c.optional, "autoIncremented": False,
                        "generated": False, "comment": None, "defaultValueExpression": c.default_expression,
                        "enumValues": None})
    return {"defaultCharsetName": None, "primaryKeyColumnNames": list(table.primary_key), "columns": columns,
            "comment": None}


def table_id(schema: str, table: str) -> str:
    """A ``tableChanges`` id: ``"<schema>"."<table>"``."""
    return f'"{schema}"."{table}"'


def schema_change_record(server: str, db: str, source_schema: Schema, change: str, schema: str, name: str,
                         definition: dict[str, Any], source: dict[str, Any], offset: dict[str, Any] | None,
                         partition: dict[str, Any], ddl: str | None = None) -> ChangeRecord:
    """The schema change event of table ``schema.name`` (``change``: CREATE or ALTER) on topic ``server``.

    ``definition`` is the table as ``table_json`` describes it; ``db`` the key's and value's ``databaseName``.
    """
    value = {"source": source, "ts_ms": time.time_ns() // 1_000_000, "databaseName": db, "schemaName": schema,
             "ddl": ddl, "tableChanges": [{"type": change, "id": table_id(schema, name), "table": definition}]}
    return ChangeRecord(server, {"databaseName": db}, value, KEY_SCHEMA, value_schema(source_schema), offset, {},
                        partition)
