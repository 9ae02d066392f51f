"""SQL Server column types to Connect schemas and value converters, as SqlServerValueConverters maps them.

Values arrive as pyodbc gives them: int, bool, Decimal, str, bytes, date, time, datetime.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
import re
import struct
from typing import Any, NamedTuple

from cdc_core import semantic as sem
from cdc_core.relational import Column
from cdc_core.schema import Schema, primitive
from cdc_core.type_modes import TypeModes
from cdc_sqlserver.driver_values import sub_micro_nanos


_EPOCH = datetime(1970, 1, 1)


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
    #: ``sys.default_constraints.definition`` (``((0))``, ``('abc')``), None without a DEFAULT.
    default: str | None = None
    #: The system type an alias type (``CREATE TYPE Name FROM nvarchar(50)``, ``sysname``) is made from; None when
    #: ``type_name`` is a system type itself.
    base_type: str | None = None

    @property
    def base(self) -> str:
        """The system type the values and the JDBC type follow: getColumns' DATA_TYPE/COLUMN_SIZE are the base
        type's, its TYPE_NAME (``type_name``, Debezium's typeName: defaults, source type) the alias's."""
        return self.base_type or self.type_name


_INTS = {"tinyint": "int16", "smallint": "int16", "int": "int32", "bigint": "int64"}
_STRINGS = {"char", "varchar", "text", "nchar", "nvarchar", "ntext", "uniqueidentifier"}
#: Bytes under binary.handling.mode. ROWVERSION (``timestamp`` in sys.types) is BINARY(8) to the JDBC driver.
#: geometry, geography and hierarchyid are plain bytes too, SQL Server's own CLR serialization, not WKB and
#: no io.debezium.data.geometry struct (no wkb/srid fields): mssql-jdbc 12.4.2's getColumns reports them as
#: VARBINARY (-3, cdc_sqlserver.jdbc), which 2.7.4's JdbcValueConverters maps to bytes under
#: binary.handling.mode (SqlServerValueConverters adds nothing: "TODO Geometry and geography supported since
#: 6.5.0"), and its ResultSet.getObject returns the UDT's raw bytes (the column's SSType is UDT, whose JDBC
#: type is VARBINARY; only getObject(i, Geometry.class) or a GEOMETRY getter would parse it). pyodbc gives the
#: same bytes (SQL_SS_UDT read as binary). Confirmed for geometry from mssql-jdbc's source and issue #2645;
#: geography and hierarchyid assumed alike. sql_variant has no mapping (JDBC -150): Debezium leaves the
#: column out with a warning, and so does cdc.
_BINARY = {"binary", "varbinary", "image", "timestamp", "rowversion", "geometry", "geography", "hierarchyid"}
#: pyodbc's SQL_SS_TIMESTAMPOFFSET_STRUCT: year, month, day, hour, minute, second, fraction (ns), tz hour, tz minute.
_DTO = struct.Struct("<6hI2h")


def _decimal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]]:
    """decimal/numeric/money under decimal.handling.mode."""
    precision, scale = info.precision, info.scale
    if info.base in ("money", "smallmoney"):
        precision, scale = (19 if info.base == "money" else 10), 4
    if modes.decimal_handling == "double":
        return primitive("float64", optional), lambda v: sem.json_float(float(v))
    if modes.decimal_handling == "string":
        return primitive("string", optional), lambda v: sem.java_plain_string(Decimal(v))
    return sem.decimal_schema(scale, precision, optional=optional), sem.decimal_encoder(scale)


def _temporal(info: ColumnInfo, modes: TypeModes, optional: bool) -> tuple[Schema, Callable[[Any], Any]] | None:
    """date/time/datetime* under time.precision.mode (None for other types)."""
    t, p = info.base, info.scale
    connect = modes.time_precision == "connect"
    if t == "date":
        name = sem.CONNECT_DATE if connect else sem.DATE
        return sem.semantic_schema(name, optional=optional), sem.epoch_day
    if t == "time":
        if modes.time_precision == "adaptive_time_microseconds":
            # JdbcValueConverters: TIME is always MicroTime there (2.7.4 accepts the mode for SQL Server)
            return sem.semantic_schema(sem.MICRO_TIME, optional=optional), sem.micros_of_day
        if connect or p <= 3:
            name = sem.CONNECT_TIME if connect else sem.TIME
            return sem.semantic_schema(name, optional=optional), sem.millis_of_day
        if p <= 6:
            return sem.semantic_schema(sem.MICRO_TIME, optional=optional), sem.micros_of_day
        # + the 100 ns pyodbc drops, where the driver's struct gave them (cdc_sqlserver.driver_values)
        return sem.semantic_schema(sem.NANO_TIME, optional=optional), lambda v: sem.nanos_of_day(v) + sub_micro_nanos(v)
    if t in ("datetime", "smalldatetime", "datetime2"):
        if connect or t != "datetime2" or p <= 3:
            name = sem.CONNECT_TIMESTAMP if connect else sem.TIMESTAMP
            return sem.semantic_schema(name, optional=optional), sem.epoch_millis
        if p <= 6:
            return sem.semantic_schema(sem.MICRO_TIMESTAMP, optional=optional), sem.epoch_micros
        return sem.semantic_schema(sem.NANO_TIMESTAMP, optional=optional), lambda v: sem.epoch_nanos(v) + sub_micro_nanos(v)
    return None


_DTO_TEXT = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? ?(?:([+-])(\d\d):(\d\d)|Z)?")


def zoned(v: Any) -> str:
    """DATETIMEOFFSET as 2.7.4's ZonedTimestamp, values and defaults: ``2019-01-01T12:34:56.1234567+04:00``.

    Its own offset is kept, the fraction is not padded to the column's scale: the spec's type table says
    "where the timezone is GMT", but what 2.7.4 does (and its AbstractSqlServerDatatypesTest expects:
    ``2018-07-13T12:23:45.456+11:00`` for ``'2018-07-13 12:23:45.456+11:00'`` in a DATETIMEOFFSET(7)) is this:

    The driver's DateTimeOffset becomes an OffsetDateTime at its offset (SqlServerValueConverters.
    convertTimestampWithZone), which ZonedTimestamp.toIsoString formats with ISO_OFFSET_DATE_TIME: the
    seconds always, the fraction without trailing zeros (none when zero), ``Z`` for a zero offset.
    SqlServerConnectorIT's table_schema_test expects ``2019-01-01T12:34:56.1234567+04:00`` for the
    default ``('2019-01-01 12:34:56.1234567+04:00')``. Accepts pyodbc's raw SQL_SS_TIMESTAMPOFFSET_STRUCT
    (the connection's output converter), the ``yyyy-mm-dd hh:mm:ss[.f] +hh:mm`` text, or an aware datetime.
    """
    if isinstance(v, datetime):
        offset = v.utcoffset() or timedelta(0)
        local, nanos = v.replace(tzinfo=None, microsecond=0), v.microsecond * 1000
    elif isinstance(v, (bytes, bytearray)):
        y, mo, d, h, mi, sec, nanos, th, tm = _DTO.unpack(bytes(v))
        local, offset = datetime(y, mo, d, h, mi, sec), timedelta(hours=th, minutes=tm)
    else:
        m = _DTO_TEXT.fullmatch(str(v).strip())
        if m is None:
            raise ValueError(f"not a DATETIMEOFFSET value: {v!r}")
        local = datetime(*(int(g) for g in m.groups()[:6]))
        nanos = int((m[7] or "").ljust(9, "0"))
        sign = -1 if m[8] == "-" else 1
        offset = sign * timedelta(hours=int(m[9] or 0), minutes=int(m[10] or 0))
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    minutes = int(offset.total_seconds()) // 60
    zone = "Z" if minutes == 0 else f"{'+' if minutes > 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return f"{local.isoformat(timespec='seconds')}{fraction}{zone}"


def _as_time(v: Any) -> time:
    """A time value as datetime.time."""
    return v if isinstance(v, time) else time.fromisoformat(str(v))


#: The datetime converters of ``_temporal`` as single-call encoders of a datetime or its ISO text.
_EPOCH_ENCODERS = {sem.epoch_millis: sem.epoch_encoder(1000), sem.epoch_micros: sem.epoch_encoder(1_000_000),
                   sem.epoch_nanos: sem.epoch_encoder(1_000_000_000)}


def mapping(info: ColumnInfo, modes: TypeModes) -> tuple[Schema | None, Callable[[Any], Any]]:
    """The Connect schema and converter of a column; ``(None, ...)`` for a type cdc does not map yet."""
    optional = info.nullable
    t = info.base
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
        # A plain string: Microsoft's JDBC driver reports XML as LONGNVARCHAR (-16), not SQLXML, so 2.7.4's
        # JdbcValueConverters never builds io.debezium.data.Xml for it (AbstractSqlServerDatatypesTest expects
        # Schema.OPTIONAL_STRING_SCHEMA for val_xml, compared with its name).
        return primitive("string", optional), str
    if t == "datetimeoffset":
        return sem.semantic_schema(sem.ZONED_TIMESTAMP, optional=optional), zoned
    if t in _BINARY:
        return sem.binary_schema(modes.binary_handling, optional=optional), sem.bytes_encoder(modes.binary_handling)
    temporal = _temporal(info, modes, optional)
    if temporal is not None:
        schema, convert = temporal
        if t == "time":
            return schema, lambda v, c=convert: c(_as_time(v))
        if t == "date":
            return schema, lambda v, c=convert: c(v if isinstance(v, date) else date.fromisoformat(str(v)))
        # One call per value (a hot column): the encoder takes a datetime or its ISO text itself; DATETIME2(7)'s
        # converter adds the 100 ns the driver's struct carries (cdc_sqlserver.driver_values), so it keeps its own.
        encoder = _EPOCH_ENCODERS.get(convert)
        if encoder is not None:
            return schema, encoder
        return schema, lambda v, c=convert: c(v if isinstance(v, datetime) else datetime.fromisoformat(str(v)))
    return None, str


def base_name(column: Column) -> str:
    """The upper-case system type of a column built by ``column`` (an alias type's base; else its type name)."""
    info = (column.extra or {}).get("info")
    return info.base.upper() if info is not None else column.type_name.upper().removesuffix(" IDENTITY")


def column(info: ColumnInfo, modes: TypeModes, parse: Callable[[str, str], Any] | None) -> Column:
    """The relational Column for ``info``; ``parse``: the server's PARSE for temporal defaults (cdc_sqlserver.defaults)."""
    from cdc_sqlserver.jdbc import column_size, decimal_digits, type_name

    from cdc_sqlserver.defaults import with_default

    schema, convert = mapping(info, modes)
    schema = with_default(schema, convert, info, parse)
    # length and scale as the JDBC driver reports them (column.propagate.source.type, the schema history).
    # type_name as the JDBC driver's TYPE_NAME (``INT IDENTITY`` for an identity column), which Debezium's
    # column.propagate.source.type / datatype.propagate.source.type and custom converters see.
    return Column(name=info.name, type_name=type_name(info).upper(), schema=schema, convert=convert,
                  position=info.position, optional=info.nullable, length=column_size(info),
                  scale=decimal_digits(info), default_expression=info.default, extra={"info": info})
