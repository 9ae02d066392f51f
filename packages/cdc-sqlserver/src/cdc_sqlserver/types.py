"""SQL Server column types to Connect schemas and value converters, as SqlServerValueConverters maps them.

Values arrive as pyodbc gives them: int, bool, Decimal, str, bytes, date, time, datetime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, NamedTuple

from cdc_core import semantic as sem
from cdc_core.relational import Column
from cdc_core.schema import Schema, primitive


class ColumnInfo(NamedTuple):
    """One column as ``sys.columns``/``sys.types`` describe it."""

    name: str
    position: int
    type_name: str
    max_length: int
    precision: int
    scale: int
    nullable: bool
    identity: bool = False


@dataclass(frozen=True)
class TypeModes:
    """The value-shaping properties: decimal.handling.mode, time.precision.mode, binary.handling.mode."""

    decimal_handling: str = "precise"
    time_precision: str = "adaptive"
    binary_handling: str = "bytes"


_INTS = {"tinyint": "int16", "smallint": "int16", "int": "int32", "bigint": "int64"}
_STRINGS = {"char", "varchar", "text", "nchar", "nvarchar", "ntext", "uniqueidentifier"}


def _decimal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]]:
    """decimal/numeric/money under decimal.handling.mode."""
    precision, scale = info.precision, info.scale
    if info.type_name in ("money", "smallmoney"):
        precision, scale = (19 if info.type_name == "money" else 10), 4
    if modes.decimal_handling == "double":
        return primitive("float64", optional), lambda v: sem.json_float(float(v))
    if modes.decimal_handling == "string":
        return primitive("string", optional), lambda v: sem.java_plain_string(Decimal(v))
    return sem.decimal_schema(scale, precision, optional=optional), lambda v: sem.encode_decimal(Decimal(v), scale)


def _temporal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]] | None:
    """date/time/datetime* under time.precision.mode (None for other types)."""
    t, p = info.type_name, info.scale
    connect = modes.time_precision == "connect"
    if t == "date":
        name = sem.CONNECT_DATE if connect else sem.DATE
        return sem.semantic_schema(name, optional=optional), sem.epoch_day
    if t == "time":
        if connect or p <= 3:
            name = sem.CONNECT_TIME if connect else sem.TIME
            return sem.semantic_schema(name, optional=optional), sem.millis_of_day
        if p <= 6:
            return sem.semantic_schema(sem.MICRO_TIME, optional=optional), sem.micros_of_day
        return sem.semantic_schema(sem.NANO_TIME, optional=optional), sem.nanos_of_day
    if t in ("datetime", "smalldatetime", "datetime2"):
        if connect or t != "datetime2" or p <= 3:
            name = sem.CONNECT_TIMESTAMP if connect else sem.TIMESTAMP
            return sem.semantic_schema(name, optional=optional), sem.epoch_millis
        if p <= 6:
            return sem.semantic_schema(sem.MICRO_TIMESTAMP, optional=optional), sem.epoch_micros
        return sem.semantic_schema(sem.NANO_TIMESTAMP, optional=optional), sem.epoch_nanos
    return None


def _as_time(v: Any) -> time:
    """A time value as datetime.time."""
    return v if isinstance(v, time) else time.fromisoformat(str(v))


def mapping(info: ColumnInfo, modes: TypeModes) -> tuple[Schema | None, Callable[[Any], Any]]:
    """The Connect schema and converter of a column; ``(None, ...)`` for a type cdc does not map yet."""
    optional = info.nullable
    t = info.type_name
    if t == "bit":
        return primitive("boolean", optional), bool
    if t in _INTS:
        return primitive(_INTS[t], optional), int
    if t == "real":
        return primitive("float32", optional), lambda v: sem.json_float32(float(v))
    if t == "float":
        return primitive("float64", optional), lambda v: sem.json_float(float(v))
    if t in ("decimal", "numeric", "money", "smallmoney"):
        return _decimal(info, modes, optional)
    if t == "uniqueidentifier":
        return primitive("string", optional), lambda v: str(v).upper()
    if t in _STRINGS:
        return primitive("string", optional), str
    if t == "xml":
        return sem.semantic_schema(sem.XML, optional=optional), str
    if t in ("binary", "varbinary", "image"):
        return sem.binary_schema(modes.binary_handling, optional=optional), sem.bytes_encoder(modes.binary_handling)
    temporal = _temporal(info, modes, optional)
    if temporal is not None:
        schema, convert = temporal
        if t == "time":
            return schema, lambda v, c=convert: c(_as_time(v))
        if t == "date":
            return schema, lambda v, c=convert: c(v if isinstance(v, date) else date.fromisoformat(str(v)))
        return schema, lambda v, c=convert: c(v if isinstance(v, datetime) else datetime.fromisoformat(str(v)))
    return None, str


def column(info: ColumnInfo, modes: TypeModes) -> Column:
    """The relational Column for ``info``."""
    from cdc_sqlserver.jdbc import column_size, decimal_digits

    schema, convert = mapping(info, modes)
    # length and scale as the JDBC driver reports them (column.propagate.source.type, the schema history).
    return Column(name=info.name, type_name=info.type_name.upper(), schema=schema, convert=convert,
                  position=info.position, optional=info.nullable, length=column_size(info),
                  scale=decimal_digits(info), extra={"info": info})
