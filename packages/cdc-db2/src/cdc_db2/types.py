"""Db2 column types to Connect schemas and value converters (the chapter's mapping table, per handling mode).

Values arrive as ibm_db_dbi gives them: int, bool, Decimal, float, str, bytes, date, time, datetime; a
TIMESTAMP(7..12) as Db2's string, read by ``VARCHAR(col)`` (cdc_db2.timestamps).
Decisions where the chapter is silent or self-contradictory (spec errata 12, DB2-50):
``TIMESTAMP(p)`` maps like SQL Server's ``DATETIME2(p)`` (p <= 3 Timestamp, 4-6 MicroTimestamp,
7-12 NanoTimestamp); ``DECFLOAT`` under ``decimal.handling.mode=precise`` is
``io.debezium.data.VariableScaleDecimal`` (a decimal floating point value has no fixed scale, so
a fixed-scale Connect Decimal would round it); ``GRAPHIC``/``LONG VARCHAR``/``LONG VARGRAPHIC``
are strings; ``CHAR``/``VARCHAR``/``LONG VARCHAR ... FOR BIT DATA`` (code page 0) are bytes (JDBC
BINARY/VARBINARY/LONGVARBINARY, as Debezium maps them).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, time
from decimal import Decimal
from typing import Any, NamedTuple

from cdc_core import semantic as sem
from cdc_core.relational import Column
from cdc_core.schema import Schema, primitive
from cdc_core.type_modes import TypeModes
from cdc_db2.jdbc import is_bit_data
from cdc_db2.timestamps import epoch_encoder


class ColumnInfo(NamedTuple):
    """One column as ``SYSCAT.COLUMNS`` describes it."""

    name: str
    position: int
    type_name: str
    length: int
    scale: int
    nullable: bool
    #: 0 for ``FOR BIT DATA`` character columns (binary), else the column's code page.
    codepage: int = 1208
    #: ``SYSCAT.COLUMNS.DEFAULT`` as Db2 stores it (``5``, ``'abc'``, ``CURRENT DATE``, ``NULL``); None without one.
    default: str | None = None


_INTS = {"SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64"}
_STRINGS = {"CHARACTER", "CHAR", "VARCHAR", "LONG VARCHAR", "CLOB", "GRAPHIC", "VARGRAPHIC", "LONG VARGRAPHIC",
            "DBCLOB"}
_BINARY = {"BINARY", "VARBINARY", "BLOB"}


def _decimal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]]:
    """DECIMAL/NUMERIC/DECFLOAT under decimal.handling.mode."""
    if modes.decimal_handling == "double":
        return primitive("float64", optional), lambda v: sem.json_float(float(v))
    if modes.decimal_handling == "string":
        return primitive("string", optional), lambda v: sem.java_plain_string(Decimal(v))
    if info.type_name == "DECFLOAT":
        return sem.variable_scale_decimal_schema(optional=optional), lambda v: sem.variable_scale_decimal(Decimal(v))
    return sem.decimal_schema(info.scale, info.length, optional=optional), sem.decimal_encoder(info.scale)


def _temporal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]] | None:
    """DATE/TIME/TIMESTAMP(p) under time.precision.mode (None for other types)."""
    t, p = info.type_name, info.scale
    connect = modes.time_precision == "connect"
    if t == "DATE":
        return sem.semantic_schema(sem.CONNECT_DATE if connect else sem.DATE, optional=optional), \
            lambda v: sem.epoch_day(v if isinstance(v, date) else date.fromisoformat(str(v)))
    if t == "TIME" and modes.time_precision == "adaptive_time_microseconds":  # JdbcValueConverters: MicroTime
        return sem.semantic_schema(sem.MICRO_TIME, optional=optional), \
            lambda v: sem.micros_of_day(v if isinstance(v, time) else time.fromisoformat(str(v)))
    if t == "TIME":  # Db2's TIME has whole seconds
        return sem.semantic_schema(sem.CONNECT_TIME if connect else sem.TIME, optional=optional), \
            lambda v: sem.millis_of_day(v if isinstance(v, time) else time.fromisoformat(str(v)))
    if t == "TIMESTAMP":
        if connect or p <= 3:
            name, per_second = (sem.CONNECT_TIMESTAMP if connect else sem.TIMESTAMP), 1000
        elif p <= 6:
            name, per_second = sem.MICRO_TIMESTAMP, 1_000_000
        else:
            name, per_second = sem.NANO_TIMESTAMP, 1_000_000_000
        # p > 6 arrives as Db2's text (cdc_db2.timestamps: VARCHAR(col) keeps the nanoseconds ibm_db drops).
        return sem.semantic_schema(name, optional=optional), epoch_encoder(per_second)
    return None


def mapping(info: ColumnInfo, modes: TypeModes) -> tuple[Schema | None, Callable[[Any], Any]]:
    """The Connect schema and converter of a column; ``(None, ...)`` for a type cdc does not map yet."""
    optional = info.nullable
    t = info.type_name
    if t == "BOOLEAN":
        return primitive("boolean", optional), bool
    if t in _INTS:
        return primitive(_INTS[t], optional), int
    if t == "REAL":
        return primitive("float32", optional), lambda v: sem.json_float32(float(v))
    if t in ("DOUBLE", "FLOAT"):
        return primitive("float64", optional), lambda v: sem.json_float(float(v))
    if t in ("DECIMAL", "NUMERIC", "DECFLOAT"):
        return _decimal(info, modes, optional)
    if t in _BINARY or is_bit_data(t, info.codepage):
        encode = sem.bytes_encoder(modes.binary_handling)
        return sem.binary_schema(modes.binary_handling, optional=optional), lambda v: encode(bytes(v))
    if t in _STRINGS:
        return primitive("string", optional), str
    if t == "XML":
        return sem.semantic_schema(sem.XML, optional=optional), str
    temporal = _temporal(info, modes, optional)
    if temporal is not None:
        return temporal
    return None, str


def column(info: ColumnInfo, modes: TypeModes) -> Column:
    """The relational Column for ``info``."""
    from cdc_db2.defaults import default_value, with_default
    from cdc_db2.jdbc import column_size, decimal_digits, jdbc_type, type_name

    schema, convert = mapping(info, modes)
    if schema is not None and info.default is not None:
        schema = with_default(schema, default_value(jdbc_type(info.type_name, info.codepage), info.type_name,
                                                    info.length, info.nullable, info.default, convert))
    # Type name, length and scale as IBM's JDBC driver reports them, which is what Debezium records
    # (cdc_db2.jdbc): the schema history, tableChanges and column.propagate.source.type's parameters.
    return Column(name=info.name, type_name=type_name(info.type_name, info.codepage), schema=schema,
                  convert=convert, position=info.position, optional=info.nullable,
                  length=column_size(info.type_name, info.length, info.scale),
                  scale=decimal_digits(info.type_name, info.scale), default_expression=info.default,
                  extra={"codepage": info.codepage, "jdbc_type": jdbc_type(info.type_name, info.codepage)})
