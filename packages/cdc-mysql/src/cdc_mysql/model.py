"""The table model DDL builds: column and table definitions, and their Debezium ``tableChanges`` JSON.

This is the connector's memory of the schema: every binlog row event is decoded with the table
definition in effect at its position. Definitions are plain data; the Connect schemas and value
converters are derived from them (``cdc_mysql.types``) once per table version.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

#: Debezium 2.7's DataTypeResolver entries (MySqlAntlrDdlParser): declared name -> java.sql.Types code.
JDBC_TYPES: dict[str, int] = {
    "CHAR": 1, "CHAR VARYING": 12, "VARCHAR": 12, "TINYTEXT": 12, "TEXT": 12, "MEDIUMTEXT": 12, "LONGTEXT": 12,
    "LONG": 12, "NCHAR": -15, "NCHAR VARYING": -9, "NVARCHAR": -9, "CHAR BINARY": 1, "VARCHAR BINARY": 12,
    "TINYTEXT BINARY": 12, "TEXT BINARY": 12, "MEDIUMTEXT BINARY": 12, "LONGTEXT BINARY": 12, "NCHAR BINARY": -15,
    "NVARCHAR BINARY": -9, "CHARACTER": 1, "CHARACTER VARYING": 12,
    "NATIONAL VARCHAR": -9, "NATIONAL CHARACTER": -15, "NATIONAL CHAR": -15, "NCHAR VARCHAR": -9,
    "NATIONAL CHAR VARYING": -9, "NATIONAL CHARACTER VARYING": -9,
    "TINYINT": 5, "INT1": 5, "SMALLINT": 5, "INT2": 5, "MEDIUMINT": 4, "INT3": 4, "MIDDLEINT": 4, "INT": 4,
    "INTEGER": 4, "INT4": 4, "BIGINT": -5, "INT8": -5, "REAL": 7, "DOUBLE": 8, "DOUBLE PRECISION": 8, "FLOAT8": 8,
    "FLOAT": 6, "FLOAT4": 6, "DECIMAL": 3, "DEC": 3, "FIXED": 3, "NUMERIC": 2, "BIT": -7,
    "TIME": 92, "TIMESTAMP": 2014, "DATETIME": 93, "BINARY": -2, "VARBINARY": -3, "BLOB": 2004, "YEAR": 4,
    "DATE": 91, "TINYBLOB": 2004, "MEDIUMBLOB": 2004, "LONGBLOB": 2004, "BOOL": 16, "BOOLEAN": 16, "SERIAL": -5,
    "ENUM": 1, "SET": 1, "BIGINT UNSIGNED": -5,
    "GEOMETRYCOLLECTION": 1111, "GEOMCOLLECTION": 1111, "LINESTRING": 1111, "MULTILINESTRING": 1111,
    "MULTIPOINT": 1111, "MULTIPOLYGON": 1111, "POINT": 1111, "POLYGON": 1111, "JSON": 1111, "GEOMETRY": 1111,
    "LONG VARBINARY": 2004, "LONG VARCHAR": 12,
}

#: Declared names that are synonyms of another type (what the value converters and row decoders know).
CANONICAL_OF_DECLARED: dict[str, str] = {
    "CHAR VARYING": "VARCHAR", "LONG": "MEDIUMTEXT", "NCHAR": "CHAR", "NCHAR VARYING": "VARCHAR",
    "NVARCHAR": "VARCHAR", "CHARACTER": "CHAR", "CHARACTER VARYING": "VARCHAR", "NATIONAL VARCHAR": "VARCHAR",
    "NATIONAL CHARACTER": "CHAR", "NATIONAL CHAR": "CHAR", "NCHAR VARCHAR": "VARCHAR", "NATIONAL CHAR VARYING": "VARCHAR",
    "NATIONAL CHARACTER VARYING": "VARCHAR", "INT1": "TINYINT", "INT2": "SMALLINT", "INT3": "MEDIUMINT",
    "MIDDLEINT": "MEDIUMINT", "INTEGER": "INT", "INT4": "INT", "INT8": "BIGINT", "DOUBLE PRECISION": "DOUBLE",
    "FLOAT8": "DOUBLE", "FLOAT4": "FLOAT", "DEC": "DECIMAL", "FIXED": "DECIMAL", "NUMERIC": "DECIMAL",
    "BOOL": "BOOLEAN", "SERIAL": "BIGINT", "LONG VARBINARY": "MEDIUMBLOB", "LONG VARCHAR": "MEDIUMTEXT", "GEOMCOLLECTION": "GEOMETRYCOLLECTION",
}
for _name in ("CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "NCHAR", "NVARCHAR"):
    CANONICAL_OF_DECLARED[_name + " BINARY"] = CANONICAL_OF_DECLARED.get(_name, _name)

#: Column types that hold character data (a charset applies).
CHARACTER_TYPES = frozenset({"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON"})
SPATIAL_TYPES = frozenset({"GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING",
                           "MULTIPOLYGON", "GEOMETRYCOLLECTION", "GEOMCOLLECTION"})


class TableId(NamedTuple):
    """A MySQL table's identity: database and table name."""

    database: str
    table: str

    def quoted(self) -> str:
        """Debezium's table id in ``tableChanges``: ``"db"."table"``."""
        return f'"{self.database}"."{self.table}"'

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class ColumnDef:
    """One column as DDL defines it."""

    name: str
    type_name: str  # canonical upper-case type: INT, VARCHAR, DECIMAL, ENUM, POINT, ...
    position: int = 1
    length: int | None = None
    scale: int | None = None
    unsigned: bool = False
    zerofill: bool = False
    optional: bool = True
    auto_increment: bool = False
    generated: bool = False
    charset: str | None = None
    collation: str | None = None
    has_default: bool = False
    default: str | None = None  # the default's SQL expression, unquoted for string literals
    enum_values: tuple[str, ...] | None = None
    comment: str | None = None
    #: The type as the DDL declared it, where that differs from ``type_name`` (``INTEGER``, ``NUMERIC``, ``BOOL``).
    declared: str | None = None

    @property
    def jdbc_type(self) -> int:
        """The java.sql.Types code Debezium's DDL parser gives the declared type."""
        return JDBC_TYPES.get(self.declared or self.type_name, 1111)

    @property
    def full_type_name(self) -> str:
        """The type name as Debezium writes it: the declared name and ``UNSIGNED``/``ZEROFILL``: ``INTEGER UNSIGNED``."""
        name = self.declared or self.type_name
        if self.unsigned:
            name += " UNSIGNED"
        if self.zerofill:
            name += " ZEROFILL"
        return name

    def to_change_json(self) -> dict[str, Any]:
        """This column in Debezium's ``tableChanges`` form (JsonTableChangeSerializer's keys and order)."""
        out: dict[str, Any] = {
            "name": self.name,
            "jdbcType": self.jdbc_type,
            "nativeType": None,
            "typeName": self.full_type_name,
            "typeExpression": self.full_type_name,
            "charsetName": self.charset,
            "length": self.length,
            "scale": self.scale,
            "position": self.position,
            "optional": self.optional,
            "autoIncremented": self.auto_increment,
            "generated": self.auto_increment or self.generated,
        }
        if self.comment is not None:
            out["comment"] = self.comment
        if self.has_default:
            out["hasDefaultValue"] = True
            out["defaultValueExpression"] = self.default
        if self.enum_values:
            # As the statement wrote them, quotes included (Debezium: AntlrDdlParser.getText of each option).
            out["enumValues"] = ["'" + v.replace("'", "''") + "'" for v in self.enum_values]
        return out

    @classmethod
    def from_change_json(cls, data: dict[str, Any]) -> ColumnDef:
        """Rebuild a column from its ``tableChanges`` form."""
        words = data["typeName"].upper().split()
        declared = " ".join(w for w in words if w not in ("UNSIGNED", "ZEROFILL", "SIGNED"))
        canonical = CANONICAL_OF_DECLARED.get(declared, declared)
        enum_values = data.get("enumValues")
        return cls(
            name=data["name"], type_name=canonical, declared=declared if declared != canonical else None,
            position=data.get("position", 1), length=data.get("length"),
            scale=data.get("scale"), unsigned="UNSIGNED" in words[1:], zerofill="ZEROFILL" in words[1:],
            optional=bool(data.get("optional", True)), auto_increment=bool(data.get("autoIncremented")),
            generated=bool(data.get("generated")) and not data.get("autoIncremented"),
            charset=data.get("charsetName"), has_default=bool(data.get("hasDefaultValue")),
            default=data.get("defaultValueExpression"), comment=data.get("comment"),
            enum_values=tuple(_unquoted(v) for v in enum_values) if enum_values is not None else None,
        )


def _unquoted(value: str) -> str:
    """An ENUM/SET value of ``enumValues`` without its quotes (histories before quoting hold it bare)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].replace(value[0] * 2, value[0])
    return value


@dataclass(frozen=True)
class TableDef:
    """One table as DDL defines it: columns in order, primary key, default charset."""

    id: TableId
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    comment: str | None = None
    #: Unique keys (name -> columns); a table without a primary key is keyed by the first all-NOT NULL one.
    unique_keys: tuple[tuple[str, ...], ...] = field(default=())

    def column(self, name: str) -> ColumnDef | None:
        """The column called ``name`` (case-insensitive, as MySQL compares column names), or None."""
        lower = name.lower()
        for c in self.columns:
            if c.name.lower() == lower:
                return c
        return None

    def renumbered(self, columns: list[ColumnDef] | tuple[ColumnDef, ...]) -> TableDef:
        """A copy with ``columns`` whose positions are set to 1..n; keys drop columns that are gone."""
        cols = tuple(c if c.position == i else replace(c, position=i) for i, c in enumerate(columns, 1))
        names = {c.name.lower() for c in cols}
        pk = tuple(k for k in self.primary_key if k.lower() in names)
        uks = tuple(u for u in self.unique_keys if all(k.lower() in names for k in u))
        return replace(self, columns=cols, primary_key=pk, unique_keys=uks)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The primary key, or else the first unique key whose columns are all NOT NULL."""
        if self.primary_key:
            return self.primary_key
        for uk in self.unique_keys:
            cols = [self.column(k) for k in uk]
            if all(c is not None and not c.optional for c in cols):
                return tuple(c.name for c in cols if c is not None)
        return ()

    def to_change_json(self) -> dict[str, Any]:
        """The ``table`` member of a Debezium ``tableChanges`` entry."""
        out: dict[str, Any] = {
            "defaultCharsetName": self.charset,
            "primaryKeyColumnNames": list(self.key_columns),
            "columns": [c.to_change_json() for c in self.columns],
            "attributes": [],
        }
        if self.comment is not None:
            out["comment"] = self.comment
        return out

    @classmethod
    def from_change_json(cls, table_id: TableId, data: dict[str, Any]) -> TableDef:
        """Rebuild a table from a ``tableChanges`` entry's ``table``."""
        columns = tuple(ColumnDef.from_change_json(c) for c in data.get("columns", []))
        return cls(table_id, columns, tuple(data.get("primaryKeyColumnNames") or ()),
                   data.get("defaultCharsetName"), data.get("comment"))


class TableChange(NamedTuple):
    """One table touched by a DDL statement: CREATE, ALTER or DROP, with the definition after it."""

    type: str
    id: TableId
    table: TableDef | None
    previous_id: TableId | None = None  # for renames

    def to_json(self) -> dict[str, Any]:
        """Debezium's ``tableChanges`` entry: the (new) id, a rename's ``previousId`` (the history keeps it; events do not)."""
        table = self.table.to_change_json() if self.table is not None and self.type != "DROP" else None
        out: dict[str, Any] = {"type": self.type, "id": self.id.quoted()}
        if self.previous_id is not None:
            out["previousId"] = self.previous_id.quoted()
        out["table"] = table  # a DROP has no table (TableChanges.drop(id))
        return out


def parse_quoted_id(text: str) -> TableId:
    """Parse Debezium's ``"db"."table"`` id (of a rename ``old,new``, the new name)."""
    parts = [p.replace('""', '"') for p in re.findall(r'"((?:[^"]|"")*)"', text)]
    if len(parts) < 2:
        raise ValueError(f"not a table id: {text!r}")
    return TableId(parts[-2], parts[-1])
