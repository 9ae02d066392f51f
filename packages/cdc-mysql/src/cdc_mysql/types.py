"""MySQL/MariaDB column types to Connect schemas and value converters, under each handling mode.

Both read paths (the snapshot's text protocol and the binlog's row images) hand converters the
same *intermediate* values, so one converter serves both:

============================  =================================================================
type                          intermediate value
============================  =================================================================
integers, YEAR, BOOLEAN       ``int`` (unsigned values as read, never negative)
FLOAT, DOUBLE, REAL           ``float``
DECIMAL, NUMERIC              the unscaled ``int`` at the column's scale (or a ``decimal.Decimal``)
BIT                           ``bytes``, big-endian (as MySQL sends it)
CHAR ... LONGTEXT, ENUM, SET  ``str`` (SET as ``"a,b"``)
JSON                          ``str``
BINARY ... LONGBLOB           ``bytes``
DATE                          ``int`` days since 1970-01-01
TIME                          ``int`` microseconds (may be negative or above a day)
DATETIME, TIMESTAMP           ``int`` microseconds since 1970-01-01T00:00 (TIMESTAMP in UTC)
spatial types                 ``bytes``: MySQL's internal form, 4-byte little-endian SRID + WKB
============================  =================================================================

Zero dates are None for nullable columns and 0 (the epoch) otherwise; readers decide that, as
they know the column.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal, localcontext
from typing import Any

from cdc_core import semantic as sem
from cdc_core.relational import Column
from cdc_core.schema import Field, Schema

from cdc_mysql.defaults import default_raw
from cdc_mysql.model import SPATIAL_TYPES, ColumnDef

GEOMETRY = "io.debezium.data.geometry.Geometry"
POINT = "io.debezium.data.geometry.Point"
#: Days since the epoch of 0100-01-01: dates before it have a year Debezium's time adjuster moves.
_DAY_100 = sem.days_from_civil(100, 1, 1)
_MICROS_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class TypeModes:
    """The type-handling modes that shape schemas and values."""

    decimal_handling: str = "precise"
    time_precision: str = "adaptive_time_microseconds"
    bigint_unsigned_handling: str = "long"
    binary_handling: str = "bytes"
    tinyint_one_as_boolean: bool = False
    #: ``enable.time.adjuster``: years 0-69 of DATE/DATETIME values become 2000-2069, 70-99 become 1970-1999.
    adjust_years: bool = True


def type_modes(config: Any) -> TypeModes:
    """The type-handling modes a connector configuration sets."""
    from cdc_core.config import common

    from cdc_mysql import config as myc

    return TypeModes(
        decimal_handling=config.get(common.DECIMAL_MODE),
        time_precision=config.get(myc.TIME_PRECISION_MODE),
        bigint_unsigned_handling=config.get(myc.BIGINT_UNSIGNED_MODE),
        binary_handling=config.get(common.BINARY_MODE),
        adjust_years=config.get(myc.ENABLE_TIME_ADJUSTER),
    )


def _schema(type_: str, optional: bool, default: Any = None, **kw: Any) -> Schema:
    return Schema(type_, optional=optional, default=default, **kw)


def geometry_schema(optional: bool) -> Schema:
    """Debezium's Geometry struct: ``wkb`` bytes and optional ``srid`` int32 (version 1, with its doc)."""
    return Schema("struct", optional=optional, name=GEOMETRY, version=1, doc="Geometry",
                  fields=(Field("wkb", Schema("bytes")), Field("srid", Schema("int32", optional=True))))


def point_schema(optional: bool) -> Schema:
    """Debezium's Point struct: ``x``, ``y`` float64, optional ``wkb`` and ``srid`` (version 1, with its doc)."""
    return Schema("struct", optional=optional, name=POINT, version=1, doc="Geometry (POINT)",
                  fields=(Field("x", Schema("float64")), Field("y", Schema("float64")),
                          Field("wkb", Schema("bytes", optional=True)), Field("srid", Schema("int32", optional=True))))


# --------------------------------------------------------------------------------- values


def _wrap_int64(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


def _bits_le(length: int) -> Callable[[bytes], str]:
    nbytes = length // 8 + (1 if length % 8 else 0)

    def convert(v: bytes) -> str:
        n = int.from_bytes(v, "big")
        return sem.base64_str(n.to_bytes(nbytes, "little"))

    return convert


def _bit_bool(v: bytes | int) -> bool:
    return (int.from_bytes(v, "big") if isinstance(v, (bytes, bytearray)) else int(v)) != 0


def _fraction(micros: int, width: int) -> str:
    if width <= 0:
        return ""
    return "." + f"{micros:06d}"[:width].ljust(width, "0")


class UnpaddedMicros(int):
    """TIMESTAMP microseconds Debezium holds as a ``java.sql.Timestamp`` (snapshot reads, the epoch default): no padding.

    Equal to the plain int (keys compare the same); see ``zoned_timestamp_micros``.
    """

    __slots__ = ()


_EPOCH_DATETIME = datetime(1970, 1, 1)
#: The microseconds since the epoch that ``datetime`` holds (years 1 to 9999).
_DATETIME_MIN_US = (datetime.min - _EPOCH_DATETIME) // timedelta(microseconds=1)
_DATETIME_MAX_US = (datetime.max - _EPOCH_DATETIME) // timedelta(microseconds=1) + 1


def zoned_timestamp_micros(width: int) -> Callable[[int], str]:
    """ZonedTimestamp text of UTC microseconds, with ``width`` fraction digits (the column's precision).

    ``UnpaddedMicros`` keep only the fraction digits that are not zero, as Debezium writes the values
    it holds as a ``java.sql.Timestamp`` (a snapshot's JDBC reads; the epoch that stands for a
    NOT NULL column's zero or CURRENT_TIMESTAMP default): ZonedTimestamp formats those with
    ISO_OFFSET_DATE_TIME (``...15.5Z``); the binlog's values and other defaults are padded to the width.
    """

    def convert(us: int) -> str:
        if _DATETIME_MIN_US <= us < _DATETIME_MAX_US:  # years 1-9999: datetime's C formatting (4 us -> 1.3)
            text = (_EPOCH_DATETIME + timedelta(0, 0, us)).isoformat()  # ...THH:MM:SS, and .ffffff unless 0
            if us.__class__ is UnpaddedMicros:
                return (text.rstrip("0") if len(text) > 19 else text) + "Z"
            if width <= 0:
                return text[:19] + "Z"
            return text[:19] + "." + (text[20:20 + width] if len(text) > 19 else "0" * width).ljust(width, "0") + "Z"
        seconds, micros = divmod(us, 1_000_000)
        days, sod = divmod(seconds, 86400)
        y, m, d = sem.civil_from_days(days)
        hh, rest = divmod(sod, 3600)
        mm, ss = divmod(rest, 60)
        if us.__class__ is UnpaddedMicros:
            fraction = ("." + f"{micros:06d}".rstrip("0")) if micros else ""
        else:
            fraction = _fraction(micros, width)
        return f"{sem.iso_year(y)}-{m:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{fraction}Z"

    return convert


def _srid(v: bytes) -> int | None:
    """The SRID of MySQL's internal geometry form (0, "unset", is null as in Debezium)."""
    srid = struct.unpack_from("<I", v, 0)[0] if len(v) >= 4 else 0
    return srid or None


def _geometry(v: bytes) -> dict[str, Any]:
    return {"wkb": sem.base64_str(bytes(v[4:])), "srid": _srid(v)}


def _point(v: bytes) -> dict[str, Any]:
    wkb = bytes(v[4:])
    if len(wkb) != 21:
        raise ValueError(f"a POINT column holds a geometry that is not a 2D point ({len(wkb)} WKB bytes)")
    x, y = struct.unpack("<dd" if wkb[0] else ">dd", wkb[5:21])
    return {"x": x, "y": y, "wkb": sem.base64_str(wkb), "srid": _srid(v)}


def adjust_days(days: int) -> int:
    """Debezium's time adjuster on days since the epoch: years 0-69 move to 2000-2069, 70-99 to 1970-1999."""
    if days >= _DAY_100:
        return days
    y, m, d = sem.civil_from_days(days)
    if 0 <= y <= 69:
        return sem.days_from_civil(y + 2000, m, d)
    if 70 <= y <= 99:
        return sem.days_from_civil(y + 1900, m, d)
    return days


def _adjust_micros(v: int) -> int:
    if v >= _DAY_100 * _MICROS_PER_DAY:
        return v
    days, rest = divmod(v, _MICROS_PER_DAY)
    return adjust_days(days) * _MICROS_PER_DAY + rest


def _adjust_millis(v: int) -> int:
    return _adjust_micros(v) // 1000


def _unscaled_text(n: int, scale: int) -> str:
    """``BigDecimal.toPlainString()`` of the unscaled ``n`` at ``scale``."""
    if not scale:
        return str(n)
    digits = str(abs(n)).rjust(scale + 1, "0")
    return ("-" if n < 0 else "") + digits[:-scale] + "." + digits[-scale:]


def _decimal_converter(mode: str, scale: int | None) -> Callable[[int | Decimal], Any]:
    s = scale or 0
    if mode == "double":
        ten_s = 10 ** s

        def double(v: int | Decimal) -> Any:
            return v / ten_s if v.__class__ is int else sem.json_float(float(v))

        return double
    if mode == "string":
        return lambda v: _unscaled_text(v, s) if v.__class__ is int else sem.java_plain_string(v)
    to_base64 = sem.unscaled_to_base64

    def precise(v: int | Decimal) -> str:
        if v.__class__ is int:
            return to_base64(v)
        try:
            return to_base64(sem.unscaled_value(v, s))
        except ValueError:  # more fraction digits than the scale (a DEFAULT literal): round half up
            with localcontext() as ctx:
                ctx.prec = 100
                return to_base64(sem.unscaled_value(sem.round_half_up(v, s), s))

    return precise


def _binary_converter(mode: str, pad_to: int | None) -> Callable[[bytes], str]:
    encode = sem.bytes_encoder(mode)
    if pad_to:
        return lambda v: encode(bytes(v).ljust(pad_to, b"\0"))
    return lambda v: encode(bytes(v))


def _identity(v: Any) -> Any:
    return v


def _float32(v: float) -> Any:
    return sem.json_float32(v)


def _float64(v: float) -> Any:
    return sem.json_float(v)


def _str(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


def _div1000(v: int) -> int:
    return v // 1000


_ONE_DAY_US = 86_400_000_000


def _time_millis_int32(v: int) -> int:
    """A TIME's milliseconds as Debezium's ``io.debezium.time.Time.toMilliOfDay`` gives them: cast to
    a Java int, so beyond +-596:31:23.647 (TIME reaches 838:59:59) the value wraps around, as it does
    in Debezium's events (its comment calls the cast safe for the range of TIME; it is not). cdc
    writes Debezium's value rather than one JsonConverter could not write as an int32."""
    return ((v // 1000 + 0x8000_0000) & 0xFFFF_FFFF) - 0x8000_0000


def _connect_time_millis(v: int) -> int:
    """A TIME as Kafka Connect's Time (``time.precision.mode=connect``): 00:00:00 to 24:00:00 only.

    Debezium refuses other values (``Time.toMilliOfDay`` without large values: "Time values must be
    between 00:00:00 and 24:00:00 (inclusive)"), and the event carries null for the column; here the
    refusal goes to ``event.converting.failure.handling.mode`` the same way.
    """
    if v < 0 or v > _ONE_DAY_US:
        raise ValueError(f"a TIME of {v} microseconds is outside 00:00:00 to 24:00:00, "
                         "which Kafka Connect's Time (time.precision.mode=connect) cannot hold")
    return v // 1000


# --------------------------------------------------------------------------------- mapping


def column_for(col: ColumnDef, modes: TypeModes) -> Column:
    """The cdc Column (Connect schema and converter) of a column definition under ``modes``."""
    schema, convert = _schema_and_converter(col, modes)
    if col.comment is not None:  # kept only with include.schema.comments (TableSchemaBuilder: the field's doc)
        schema = Schema(schema.type, optional=schema.optional, name=schema.name, version=schema.version,
                        doc=col.comment, parameters=schema.parameters, fields=schema.fields)
    raw_default = default_raw(col)
    if raw_default is not None:
        default = _converted_default(raw_default, convert)
        if default is not None:
            schema = Schema(schema.type, optional=schema.optional, name=schema.name, version=schema.version,
                            doc=schema.doc, parameters=schema.parameters, default=default, fields=schema.fields)
    return Column(name=col.name, type_name=col.full_type_name, schema=schema, convert=convert, position=col.position,
                  optional=col.optional, length=col.length, scale=col.scale,
                  default_expression=col.default if col.has_default else None,
                  extra={"charset": col.charset, "enum_values": col.enum_values, "definition": col,
                         "raw_default": raw_default, "comment": col.comment})


def _schema_and_converter(col: ColumnDef, modes: TypeModes) -> tuple[Schema, Callable[[Any], Any]]:
    t = col.type_name
    opt = col.optional
    length = col.length
    if t == "BOOLEAN" or (t == "TINYINT" and length == 1 and modes.tinyint_one_as_boolean):
        return _schema("boolean", opt), bool
    if t == "TINYINT":
        return _schema("int16", opt), _identity
    if t == "SMALLINT":
        return _schema("int32" if col.unsigned else "int16", opt), _identity
    if t == "MEDIUMINT":
        return _schema("int32", opt), _identity
    if t == "INT":
        return _schema("int64" if col.unsigned else "int32", opt), _identity
    if t == "BIGINT":
        if col.unsigned:
            if modes.bigint_unsigned_handling == "precise":
                return sem.decimal_schema(0, 20, optional=opt), lambda v: sem.unscaled_to_base64(int(v))
            return _schema("int64", opt), _wrap_int64
        return _schema("int64", opt), _identity
    if t == "YEAR":
        return sem.semantic_schema(sem.YEAR, optional=opt), _identity
    if t in ("FLOAT", "REAL"):
        if t == "FLOAT" and ((length is not None and col.scale is not None) or (length is not None and length > 24)):
            return _schema("float64", opt), _float64
        return _schema("float32", opt), _float32
    if t == "DOUBLE":
        return _schema("float64", opt), _float64
    if t in ("DECIMAL", "NUMERIC"):
        mode = modes.decimal_handling
        if mode == "double":
            return _schema("float64", opt), _decimal_converter(mode, col.scale)
        if mode == "string":
            return _schema("string", opt), _decimal_converter(mode, col.scale)
        return sem.decimal_schema(col.scale or 0, length, optional=opt), _decimal_converter(mode, col.scale)
    if t == "BIT":
        n = length or 1
        if n == 1:
            return _schema("boolean", opt), _bit_bool
        return sem.bits_schema(n, optional=opt), _bits_le(n)
    if t in ("CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT"):
        return _schema("string", opt), _str
    if t == "JSON":
        return sem.semantic_schema(sem.JSON, optional=opt), _str
    if t == "ENUM":
        return sem.enum_schema(_escaped_options(col), optional=opt), _str
    if t == "SET":
        return sem.enum_set_schema(_escaped_options(col), optional=opt), _str
    if t in ("BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"):
        schema = sem.binary_schema(modes.binary_handling, optional=opt)
        return schema, _binary_converter(modes.binary_handling, (length or 1) if t == "BINARY" else None)
    if t == "DATE":
        name = sem.CONNECT_DATE if modes.time_precision == "connect" else sem.DATE
        return sem.semantic_schema(name, optional=opt), adjust_days if modes.adjust_years else _identity
    if t == "TIME":
        precision = length or 0
        if modes.time_precision == "connect":
            return sem.semantic_schema(sem.CONNECT_TIME, optional=opt), _connect_time_millis
        if modes.time_precision == "adaptive" and precision <= 3:
            return sem.semantic_schema(sem.TIME, optional=opt), _time_millis_int32
        return sem.semantic_schema(sem.MICRO_TIME, optional=opt), _identity
    if t == "DATETIME":
        precision = length or 0
        millis, micros = (_adjust_millis, _adjust_micros) if modes.adjust_years else (_div1000, _identity)
        if modes.time_precision == "connect":
            return sem.semantic_schema(sem.CONNECT_TIMESTAMP, optional=opt), millis
        if precision <= 3:
            return sem.semantic_schema(sem.TIMESTAMP, optional=opt), millis
        return sem.semantic_schema(sem.MICRO_TIMESTAMP, optional=opt), micros
    if t == "TIMESTAMP":
        return sem.semantic_schema(sem.ZONED_TIMESTAMP, optional=opt), zoned_timestamp_micros(length or 0)
    if t == "POINT":
        return point_schema(opt), _point
    if t in SPATIAL_TYPES:
        return geometry_schema(opt), _geometry
    # Types outside the mapping (INET6, UUID, ...) are read as text.
    return _schema("string", opt), _str


def _escaped_options(col: ColumnDef) -> tuple[str, ...]:
    """ENUM/SET values for the ``allowed`` parameter: a comma inside a value as ``\\,`` (MySqlAntlrDdlParser.escapeOption)."""
    return tuple(v.replace(",", "\\,") for v in col.enum_values or ())


# --------------------------------------------------------------------------------- defaults


def _converted_default(raw: Any, convert: Callable[[Any], Any]) -> Any:
    """The JSON form of a DEFAULT's intermediate value (None if the converter rejects it)."""
    try:
        return convert(raw)
    except (ValueError, TypeError, ArithmeticError, OverflowError):
        return None


def parse_text_value(col: ColumnDef, text: str, default: bool = False) -> Any:
    """The intermediate value of a column value in MySQL's text form (snapshot rows, DEFAULT clauses)."""
    t = col.type_name
    upper = text.upper()
    if default and upper.startswith(("CURRENT_TIMESTAMP", "NOW(", "LOCALTIME")):
        return 0 if t in ("DATETIME", "TIMESTAMP") else None
    if t in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR", "BOOLEAN"):
        if upper in ("TRUE", "FALSE"):
            return int(upper == "TRUE")
        return int(Decimal(text))
    if t in ("FLOAT", "DOUBLE", "REAL"):
        return float(text)
    if t in ("DECIMAL", "NUMERIC"):
        return Decimal(text)
    if t == "BIT":
        if upper.startswith("B'"):
            n = int(text[2:-1] or "0", 2)
        elif upper.startswith("0X"):
            n = int(text[2:], 16)
        else:
            n = int(text)
        return n.to_bytes(max(1, ((col.length or 1) + 7) // 8), "big")
    if t == "DATE":
        return parse_date(text, col.optional)
    if t == "TIME":
        return parse_time(text)
    if t in ("DATETIME", "TIMESTAMP"):
        return parse_datetime(text, col.optional)
    if t in ("BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB") or t in SPATIAL_TYPES:
        if upper.startswith("0X"):
            return bytes.fromhex(text[2:])
        return text.encode("utf-8")
    return text


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_date_from_iso = date.fromisoformat
_datetime_from_iso = datetime.fromisoformat
_time_from_iso = dtime.fromisoformat


def parse_date(text: str, optional: bool) -> int | None:
    """Days since the epoch of ``YYYY-MM-DD``; a zero or invalid date is None if ``optional`` else 0."""
    try:
        return _date_from_iso(text).toordinal() - _EPOCH_ORDINAL
    except ValueError:  # zero dates, year 0: the slow path
        pass
    try:
        y, m, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
    except ValueError:
        return None if optional else 0
    if m == 0 or d == 0:
        return None if optional else 0
    return sem.days_from_civil(y, m, d)


def parse_time(text: str) -> int:
    """Microseconds of ``[-]HHH:MM:SS[.ffffff]``."""
    if len(text) in (8, 15) and text[0] != "-":
        try:
            t = _time_from_iso(text)
            return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond
        except ValueError:  # 24 hours and more: the slow path
            pass
    neg = text.startswith("-")
    body = text[1:] if neg else text
    hms, _, frac = body.partition(".")
    h, m, s = (int(p) for p in hms.split(":"))
    us = ((h * 60 + m) * 60 + s) * 1_000_000 + (int(frac.ljust(6, "0")[:6]) if frac else 0)
    return -us if neg else us


def parse_datetime(text: str, optional: bool) -> int | None:
    """Microseconds since the epoch of ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (taken as UTC); zero dates as in ``parse_date``."""
    try:
        return (_datetime_from_iso(text) - _EPOCH) // _MICROSECOND
    except ValueError:  # zero dates, year 0, fractions of other widths: the slow path
        pass
    days = parse_date(text[:10], True)
    if days is None:
        return None if optional else 0
    rest = text[11:]
    if not rest:
        return days * 86_400_000_000
    return days * 86_400_000_000 + parse_time(rest)


def base64_geometry_wkb(value: dict[str, Any]) -> bytes:
    """The WKB bytes of a converted Geometry value (for tests)."""
    return base64.b64decode(value["wkb"])
