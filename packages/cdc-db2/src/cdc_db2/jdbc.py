"""A Db2 column as IBM's JDBC driver (JCC) describes it (``DatabaseMetaData.getColumns``): what Debezium records.

Debezium 2.7.4's Db2 connector reads its table model through ``JdbcConnection.readSchema``/``readTableColumn``:
``typeName`` is ``TYPE_NAME``, ``length`` is ``COLUMN_SIZE``, ``scale`` is ``DECIMAL_DIGITS`` (absent where the
driver gives NULL). These feed the schema history, the schema change events' ``tableChanges`` and
``column.propagate.source.type``/``datatype.propagate.source.type``'s parameters. cdc reads ``SYSCAT.COLUMNS``
instead, so its ``TYPENAME``/``LENGTH``/``SCALE`` (bytes for numbers and temporal types) are turned into the
driver's terms here.

Sources: Db2ConnectorIT.shouldPropagateSourceTypeByDatatype (NUMERIC(5,2) -> ``DECIMAL``/5/2, VARCHAR(128) ->
``VARCHAR``/128, FLOAT(10) -> ``REAL``/24); the COLUMN_SIZE of every Db2 11.5 type as JCC reports it
(SMALLINT 5, INTEGER 10, BIGINT 19, REAL 24, DOUBLE 53, DECFLOAT 34, DATE 10, TIME 8, TIMESTAMP 26, BOOLEAN 1,
XML 0, strings and LOBs their length: schemaspy/schemaspy#743); JCC's ``CHAR () FOR BIT DATA``,
``VARCHAR () FOR BIT DATA``, ``LONG VARCHAR FOR BIT DATA`` type names. ``DECIMAL_DIGITS`` follows the CLI's
SQLColumns (the scale where one applies: 0 for integers and TIME, the fraction digits of TIMESTAMP, NULL
for the rest): an assumption no Debezium test checks.
"""

from __future__ import annotations

from typing import Any

#: ``java.sql.Types`` of Db2's column types (GRAPHIC types as JCC reports them by default: CHAR/VARCHAR/CLOB).
JDBC_TYPES = {"SMALLINT": 5, "INTEGER": 4, "BIGINT": -5, "REAL": 7, "DOUBLE": 8, "DECIMAL": 3, "NUMERIC": 2,
              "DECFLOAT": 1111, "CHARACTER": 1, "CHAR": 1, "VARCHAR": 12, "LONG VARCHAR": -1, "CLOB": 2005,
              "GRAPHIC": 1, "VARGRAPHIC": 12, "LONG VARGRAPHIC": -1, "DBCLOB": 2005, "BINARY": -2, "VARBINARY": -3,
              "BLOB": 2004, "DATE": 91, "TIME": 92, "TIMESTAMP": 93, "XML": 2009, "BOOLEAN": 16}

#: ``FOR BIT DATA`` (code page 0) character types: JCC's type name and java.sql.Types code.
BIT_DATA = {"CHARACTER": ("CHAR () FOR BIT DATA", -2), "CHAR": ("CHAR () FOR BIT DATA", -2),
            "VARCHAR": ("VARCHAR () FOR BIT DATA", -3), "LONG VARCHAR": ("LONG VARCHAR FOR BIT DATA", -4)}

#: COLUMN_SIZE of the types whose size is not their SYSCAT ``LENGTH``.
_SIZES = {"SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "REAL": 24, "DOUBLE": 53, "DATE": 10, "TIME": 8,
          "BOOLEAN": 1, "XML": 0}
#: SYSCAT ``LENGTH`` (bytes) of the same types: the way back from a recorded definition.
_CATALOG_LENGTHS = {"SMALLINT": 2, "INTEGER": 4, "BIGINT": 8, "REAL": 4, "DOUBLE": 8, "DATE": 4, "TIME": 3,
                    "BOOLEAN": 1, "XML": 0}


def is_bit_data(type_name: str, codepage: int) -> bool:
    """Whether a ``SYSCAT.COLUMNS`` type is a ``FOR BIT DATA`` (binary) character type."""
    return codepage == 0 and type_name in BIT_DATA


def jdbc_type(type_name: str, codepage: int) -> int:
    """``DATA_TYPE``: the java.sql.Types code (1111, OTHER, for DECFLOAT and unknown types)."""
    if is_bit_data(type_name, codepage):
        return BIT_DATA[type_name][1]
    return JDBC_TYPES.get(type_name, 1111)


def type_name(catalog_type: str, codepage: int) -> str:
    """``TYPE_NAME`` of a ``SYSCAT.COLUMNS.TYPENAME`` (``CHARACTER`` is ``CHAR``; FOR BIT DATA spelled out)."""
    if is_bit_data(catalog_type, codepage):
        return BIT_DATA[catalog_type][0]
    return "CHAR" if catalog_type == "CHARACTER" else catalog_type


def column_size(catalog_type: str, length: int, scale: int) -> int:
    """``COLUMN_SIZE`` from ``SYSCAT.COLUMNS`` ``LENGTH``/``SCALE`` (DECFLOAT: 16 or 34 digits, not 8 or 16 bytes)."""
    if catalog_type == "DECFLOAT":
        return 16 if length == 8 else 34
    if catalog_type == "TIMESTAMP":
        return 19 + (scale + 1 if scale else 0)
    return _SIZES.get(catalog_type, length)


def decimal_digits(catalog_type: str, scale: int) -> int | None:
    """``DECIMAL_DIGITS``: the scale of exact numbers, 0 for TIME, the fraction digits of TIMESTAMP, else None."""
    if catalog_type in ("DECIMAL", "NUMERIC", "TIMESTAMP"):
        return scale
    if catalog_type in ("SMALLINT", "INTEGER", "BIGINT", "TIME"):
        return 0
    return None


def catalog_form(column: dict[str, Any]) -> tuple[str, int, int, int]:
    """``(TYPENAME, LENGTH, SCALE, code page)`` of a recorded ``tableChanges`` column (the inverse of the above).

    Histories written before cdc recorded the driver's terms (lower-case SYSCAT type names, SYSCAT
    lengths) are read as they were written.
    """
    recorded = str(column["typeName"])
    name = recorded.upper()
    length, scale = int(column.get("length") or 0), int(column.get("scale") or 0)
    if recorded != name:  # written by an earlier cdc: SYSCAT's own terms
        bits = column["jdbcType"] in (-2, -3, -4) and name in BIT_DATA
        return name, length, scale, 0 if bits else 1208
    for catalog, (jcc, _) in BIT_DATA.items():
        if name == jcc and catalog != "CHAR":
            return catalog, length, scale, 0
    if name == "CHAR":
        return "CHARACTER", length, scale, 1208
    if name == "DECFLOAT":
        return name, 8 if length == 16 else 16, 0, 1208
    if name == "TIMESTAMP":
        return name, 10, scale, 1208
    return name, _CATALOG_LENGTHS.get(name, length), scale, 1208
