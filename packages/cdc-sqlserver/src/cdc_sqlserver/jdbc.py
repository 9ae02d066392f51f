"""A column as Microsoft's JDBC driver describes it (``DatabaseMetaData.getColumns``): what Debezium records.

Debezium's SQL Server connector builds its table model from the JDBC metadata: ``jdbcType`` is
``DATA_TYPE``, ``length`` is ``COLUMN_SIZE`` (precision for numbers, characters for strings, the
text width for temporal types), ``scale`` is ``DECIMAL_DIGITS`` (null where the driver gives none),
``typeName`` is ``TYPE_NAME`` (``int identity`` for an identity column). These feed the schema
history, the schema change events and ``column.propagate.source.type``'s parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdc_sqlserver.types import ColumnInfo

_MAX = 2147483647
_NMAX = 1073741823

#: ``java.sql.Types`` (and ``microsoft.sql.Types``) codes by SQL Server type, as getColumns' ``DATA_TYPE`` gives them.
#:
#: mssql-jdbc 12.4.2 (Debezium 2.7.4's driver, ``version.sqlserver.driver`` in its pom) runs ``sp_columns_100``
#: with ODBC version 3 and passes ``DATA_TYPE`` through its DataTypeFilter (SQLServerDatabaseMetaData.java):
#: ODBC's SQL_SS_UDT (-151) becomes ``SSType.UDT``'s JDBC type, VARBINARY (-3, DataTypes.java), SQL_SS_XML
#: (-152) LONGNVARCHAR (-16), SQL_GUID (-11) CHAR, SQL_FLOAT (6) DOUBLE, the SQL_W* codes the N types,
#: SQL_SS_TIME2 (-154) TIME; anything else passes unchanged. Confirmed: sp_columns_100 reports geometry as -151
#: (mssql-jdbc issue #2645, SQL Server 2022), so geometry is -3, not the -157 (microsoft.sql.Types.GEOMETRY)
#: that only ResultSetMetaData gives. Assumed: geography and hierarchyid, CLR types like geometry, are -151
#: too (-3 here), and sql_variant is ODBC's SQL_SS_VARIANT (-150), which no filter maps and JdbcValueConverters
#: has no schema for (the column is left out of events with "Unexpected JDBC type", as cdc does).
JDBC_TYPES = {
    "bit": -7, "tinyint": -6, "smallint": 5, "int": 4, "bigint": -5, "real": 7, "float": 8, "decimal": 3,
    "numeric": 2, "money": 3, "smallmoney": 3, "char": 1, "varchar": 12, "text": -1, "nchar": -15, "nvarchar": -9,
    "ntext": -16, "date": 91, "time": 92, "datetime": 93, "smalldatetime": 93, "datetime2": 93,
    "datetimeoffset": -155, "uniqueidentifier": 1, "binary": -2, "varbinary": -3, "image": -4, "xml": -16,
    "timestamp": -2, "rowversion": -2, "sql_variant": -150, "geometry": -3, "geography": -3,
    "hierarchyid": -3,
}
_PRECISION = {"bit": 1, "tinyint": 3, "smallint": 5, "int": 10, "bigint": 19, "real": 24, "float": 53,
              "money": 19, "smallmoney": 10, "date": 10, "datetime": 23, "smalldatetime": 16,
              "uniqueidentifier": 36, "timestamp": 8, "rowversion": 8, "text": _MAX, "ntext": _NMAX, "image": _MAX,
              "xml": _NMAX, "geometry": _MAX, "geography": _MAX, "hierarchyid": 892, "sql_variant": 8000}
_ZERO_SCALE = {"bit", "tinyint", "smallint", "int", "bigint", "smalldatetime"}


#: The system type a recorded alias column stands on, by its jdbcType (cdc_sqlserver.schema_history.column_info);
#: DECIMAL covers money/smallmoney (the same Decimal at the recorded precision and scale), CHAR uniqueidentifier.
_BASE_OF_JDBC = {v: k for k, v in reversed(list(JDBC_TYPES.items()))}
_BASE_OF_JDBC.update({1: "char", 3: "decimal", -16: "ntext", -2: "binary", -3: "varbinary", -150: "sql_variant"})


def base_of(jdbc: int | None, length: int | None, scale: int | None) -> str | None:
    """The system type behind an alias column recorded with ``jdbc``/``length``/``scale`` (None: not known)."""
    if jdbc == 93:  # TIMESTAMP: smalldatetime is 16 wide, datetime (as datetime2(3)) 23 with 3 digits
        return "smalldatetime" if length == 16 else "datetime" if (length, scale) == (23, 3) else "datetime2"
    return _BASE_OF_JDBC.get(jdbc) if jdbc is not None else None


def jdbc_type(info: ColumnInfo) -> int:
    """``DATA_TYPE`` (1111, OTHER, for a type the driver does not know)."""
    return JDBC_TYPES.get(info.base, 1111)


def column_size(info: ColumnInfo) -> int | None:
    """``COLUMN_SIZE`` (an alias type's is its base type's)."""
    t = info.base
    if t in ("decimal", "numeric"):
        return info.precision
    if t in ("char", "varchar", "binary", "varbinary"):
        return _MAX if info.max_length == -1 else info.max_length
    if t in ("nchar", "nvarchar"):
        return _NMAX if info.max_length == -1 else info.max_length // 2
    if t == "time":
        return 8 + (info.scale + 1 if info.scale else 0)
    if t == "datetime2":
        return 19 + (info.scale + 1 if info.scale else 0)
    if t == "datetimeoffset":
        return 26 + (info.scale + 1 if info.scale else 0)
    return _PRECISION.get(t)


def decimal_digits(info: ColumnInfo) -> int | None:
    """``DECIMAL_DIGITS``: the scale of numbers and fractional seconds; None for the rest."""
    t = info.base
    if t in ("decimal", "numeric", "time", "datetime2", "datetimeoffset"):
        return info.scale
    if t in ("money", "smallmoney"):
        return 4
    if t == "datetime":
        return 3
    return 0 if t in _ZERO_SCALE else None


def type_name(info: ColumnInfo) -> str:
    """``TYPE_NAME``: the type, ``identity`` added for an identity column (``int identity``)."""
    return f"{info.type_name} identity" if info.identity else info.type_name
