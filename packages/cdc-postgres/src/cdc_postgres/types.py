"""PostgreSQL type mapping: a column's type OID, modifier and the connector's modes → Debezium schema and converter.

``column_for`` builds a ``cdc_core.relational.Column`` whose ``schema`` is the Connect schema
Debezium 2.7's PostgreSQL connector gives the column, and whose ``convert`` turns PostgreSQL's
text output of a value (pgoutput 't' tuples, or ``COPY ... TO STDOUT`` after unescaping; the
session must use ``DateStyle=ISO``, ``TimeZone=UTC``, ``IntervalStyle=postgres`` and
``bytea_output=hex``) into the JSON value Kafka's JsonConverter writes.

Converters are built once per column and do no per-call branching on modes. Converters for
the integer and plain-text types are the builtins ``int`` and ``str`` (PostgreSQL's output for
them is always valid); every other converter raises ``ValueConversionError`` naming the column,
its type and the value. ``convert_value`` attaches that context to any failure.

Choices where the Debezium documentation is silent or contradicts itself (each follows what
the Debezium 2.x code does):

* ``org.apache.kafka.connect.data.Time`` is Kafka's INT32 milliseconds (the doc says INT64).
* NUMERIC ``NaN``/``Infinity`` under ``decimal.handling.mode=precise`` is an error, as
  ``SpecialValueDecimal.fromLogical`` throws ("...set decimal handling mode to 'string'").
  ``double`` gives "NaN"/"Infinity"/"-Infinity" (Jackson's quoted non-finite numbers),
  ``string`` gives ``NAN``/``POSITIVE_INFINITY``/``NEGATIVE_INFINITY``.
* ``string`` mode renders ``BigDecimal.toString()``, so tiny values use an exponent (``0E-8``).
* TIMESTAMP ``infinity``/``-infinity`` are µs ``9223372036825200000``/``-9223372036832400000``
  (PGStatement's millisecond constants read as microseconds); millisecond schemas get those
  floored to ms. TIMESTAMPTZ infinities are the strings ``infinity``/``-infinity``.
* DATE ``infinity``/``-infinity`` become Debezium's sentinel dates ``-5877611-06-21`` and
  ``-5877611-06-22`` (yes, positive infinity is negative: a Debezium bug kept for fidelity).
* ZonedTimestamp/ZonedTime use ``ISO_OFFSET_DATE_TIME``: UTC ``Z``, seconds always printed,
  fraction only when non-zero with trailing zeros stripped (Debezium 2.7's PostgreSQL
  converter formats an ``OffsetDateTime``, which ignores the column's fractional width).
* REAL values come out as the shortest decimal that round-trips the float32 (``3.14``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from cdc_core.errors import CdcError
from cdc_core.relational import Column, ValueConverter
from cdc_core.schema import Schema
from cdc_core import semantic as sem
from cdc_core.semantic import ValueConversionError

__all__ = [
    "BUILTIN_TYPES",
    "TypeModes",
    "UnsupportedTypeError",
    "ValueConversionError",
    "column_for",
    "convert_value",
    "supported_type_names",
]

# --------------------------------------------------------------------------- modes

DECIMAL_HANDLING_MODES = ("precise", "double", "string")
BINARY_HANDLING_MODES = tuple(sem.BINARY_HANDLING)
TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
INTERVAL_HANDLING_MODES = ("numeric", "string")


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The connector properties that change how values map: decimal/binary/time/interval modes and money digits."""

    decimal_handling: str = "precise"
    binary_handling: str = "bytes"
    time_precision: str = "adaptive"
    interval_handling: str = "numeric"
    money_fraction_digits: int = 2

    def __post_init__(self) -> None:
        for prop, value, allowed in (
            ("decimal.handling.mode", self.decimal_handling, DECIMAL_HANDLING_MODES),
            ("binary.handling.mode", self.binary_handling, BINARY_HANDLING_MODES),
            ("time.precision.mode", self.time_precision, TIME_PRECISION_MODES),
            ("interval.handling.mode", self.interval_handling, INTERVAL_HANDLING_MODES),
        ):
            if value not in allowed:
                raise ValueError(f"invalid {prop} {value!r}; expected one of {', '.join(allowed)}")
        if self.money_fraction_digits < 0:
            raise ValueError(f"invalid money.fraction.digits {self.money_fraction_digits!r}; must be >= 0")


class UnsupportedTypeError(CdcError):
    """No mapping exists for a column's type; names the column, the type OID and type name."""

    def __init__(self, column: str, type_oid: int, type_name: str | None) -> None:
        self.column = column
        self.type_oid = type_oid
        self.type_name = type_name
        shown = f"{type_name!r} " if type_name else ""
        super().__init__(f"column {column!r} has unsupported type {shown}(OID {type_oid})")


# --------------------------------------------------------------------------- the type table

#: Built-in type OIDs and their ``pg_type.typname``.
BUILTIN_TYPES: dict[int, str] = {
    16: "bool",
    17: "bytea",
    18: "char",
    19: "name",
    20: "int8",
    21: "int2",
    23: "int4",
    25: "text",
    26: "oid",
    114: "json",
    142: "xml",
    650: "cidr",
    700: "float4",
    701: "float8",
    774: "macaddr8",
    790: "money",
    829: "macaddr",
    869: "inet",
    1042: "bpchar",
    1043: "varchar",
    1082: "date",
    1083: "time",
    1114: "timestamp",
    1184: "timestamptz",
    1186: "interval",
    1266: "timetz",
    1560: "bit",
    1562: "varbit",
    1700: "numeric",
    2950: "uuid",
    3802: "jsonb",
    3904: "int4range",
    3906: "numrange",
    3908: "tsrange",
    3910: "tstzrange",
    3912: "daterange",
    3926: "int8range",
}

_VARHDRSZ = 4
#: A varbit without a length: Debezium's Bits ``length`` is Integer.MAX_VALUE.
_UNBOUNDED_BITS = 2**31 - 1
#: Fractional-second precision of a time/timestamp column declared without one.
_DEFAULT_TIME_PRECISION = 6


class _Ctx(NamedTuple):
    """What a builder needs: the column's name, type name, modifier, nullability and the modes."""

    column: str
    type_name: str
    typmod: int
    optional: bool
    modes: TypeModes

    def fail(self, value: Any, reason: str = "") -> ValueConversionError:
        """An error naming this column, its type and the value."""
        return ValueConversionError(self.column, self.type_name, value, reason)


_Built = tuple[Schema, ValueConverter]


def _time_precision(typmod: int) -> int:
    return typmod if typmod >= 0 else _DEFAULT_TIME_PRECISION


def _numeric_precision_scale(typmod: int) -> tuple[int, int] | None:
    """(precision, scale) of ``numeric(p,s)``, or None when unconstrained. Scale may be negative (PG 15+)."""
    if typmod < _VARHDRSZ:
        return None
    t = typmod - _VARHDRSZ
    return (t >> 16) & 0xFFFF, ((t & 0x7FF) ^ 1024) - 1024


# --------------------------------------------------------------------------- simple types

_BOOL = {"t": True, "f": False}


def _plain(type_: str) -> Callable[[_Ctx], _Built]:
    """A builder for a type whose JSON value is a builtin conversion of its text."""
    convert: ValueConverter = {"int16": int, "int32": int, "int64": int, "string": str}[type_]

    def build(ctx: _Ctx) -> _Built:
        return Schema(type_, optional=ctx.optional), convert

    return build


def _named_string(name: str) -> Callable[[_Ctx], _Built]:
    """A builder for a string-valued semantic type whose value is the text as-is (Json, Uuid, Xml, Ltree)."""

    def build(ctx: _Ctx) -> _Built:
        return sem.semantic_schema(name, optional=ctx.optional), str

    return build


def _build_bool(ctx: _Ctx) -> _Built:
    lookup = _BOOL.__getitem__

    def convert(text: str) -> bool:
        try:
            return lookup(text)
        except KeyError:
            raise ctx.fail(text, "expected 't' or 'f'") from None

    return Schema("boolean", optional=ctx.optional), convert


def _float_converter(ctx: _Ctx, finish: Callable[[float], float | str]) -> ValueConverter:
    specials = sem.FLOAT_SPECIALS.get

    def convert(text: str) -> float | str:
        special = specials(text)
        if special is not None:
            return special
        try:
            return finish(float(text))
        except ValueError:
            raise ctx.fail(text, "not a floating-point number") from None

    return convert


def _build_float4(ctx: _Ctx) -> _Built:
    return Schema("float32", optional=ctx.optional), _float_converter(ctx, sem.json_float32)


def _build_float8(ctx: _Ctx) -> _Built:
    return Schema("float64", optional=ctx.optional), _float_converter(ctx, float)


# --------------------------------------------------------------------------- numeric and money

#: NUMERIC special values in ``decimal.handling.mode=string`` (``SpecialValueDecimal.toString``).
_NUMERIC_SPECIAL_STRINGS = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}
#: Text prefixes whose ``BigDecimal.toString()`` may use an exponent (adjusted exponent < -6).
_TINY_PREFIXES = ("0.000000", "-0.000000")


def _unscaled(text: str, scale: int) -> int:
    """The unscaled integer of a plain decimal text at ``scale`` (ValueError if rounding would be needed)."""
    whole, _, frac = text.partition(".")
    if scale >= 0 and len(frac) <= scale:
        return int(whole + frac + "0" * (scale - len(frac)))
    return sem.unscaled_value(Decimal(text), scale)


def _precise_special(ctx: _Ctx, text: str) -> ValueConversionError:
    # SpecialValueDecimal.fromLogical throws for NaN/Infinity in precise mode; so do we.
    return ctx.fail(
        text,
        "special value (NaN/Infinity) in a decimal column needs decimal.handling.mode=string or double",
    )


def _build_numeric(ctx: _Ctx) -> _Built:
    mode = ctx.modes.decimal_handling
    ps = _numeric_precision_scale(ctx.typmod)
    if mode == "double":
        return Schema("float64", optional=ctx.optional), _float_converter(ctx, float)
    if mode == "string":
        specials = _NUMERIC_SPECIAL_STRINGS.get

        def to_string(text: str) -> str:
            if not text.startswith(_TINY_PREFIXES):
                special = specials(text)
                return text if special is None else special
            try:
                return sem.java_decimal_string(Decimal(text))
            except (InvalidOperation, ValueError):
                raise ctx.fail(text, "not a decimal number") from None

        return Schema("string", optional=ctx.optional), to_string
    if ps is None:
        # Unconstrained NUMERIC: VariableScaleDecimal with trailing zeros stripped.
        def to_variable(text: str) -> dict[str, Any]:
            whole, _, frac = text.partition(".")
            frac = frac.rstrip("0")
            try:
                return {"scale": len(frac), "value": sem.unscaled_to_base64(int(whole + frac))}
            except ValueError:
                if text in _NUMERIC_SPECIAL_STRINGS:
                    raise _precise_special(ctx, text) from None
                raise ctx.fail(text, "not a decimal number") from None

        return sem.variable_scale_decimal_schema(optional=ctx.optional), to_variable
    precision, scale = ps
    encode = sem.unscaled_to_base64

    def to_decimal(text: str) -> str:
        try:
            return encode(_unscaled(text, scale))
        except (ValueError, InvalidOperation):
            if text in _NUMERIC_SPECIAL_STRINGS:
                raise _precise_special(ctx, text) from None
            raise ctx.fail(text, f"not a decimal number of scale {scale}") from None

    return sem.decimal_schema(scale, precision, optional=ctx.optional), to_decimal


_MONEY_RE = re.compile(r"[^0-9.]")


def _build_money(ctx: _Ctx) -> _Built:
    # pgjdbc's PGmoney parses the locale text into a double; Debezium then scales that double.
    # Only '.'-decimal locales (C, en_US, ...) are understood: "$1,234.56", "-$1,234.56", "($1.00)".
    digits = ctx.modes.money_fraction_digits
    mode = ctx.modes.decimal_handling

    def parse(text: str) -> float:
        try:
            value = float(_MONEY_RE.sub("", text))
        except ValueError:
            raise ctx.fail(text, "not a money amount with '.' as the decimal point") from None
        return -value if text[:1] in "-(" else value

    if mode == "double":
        return Schema("float64", optional=ctx.optional), parse
    if mode == "string":
        # Debezium 2.x delivers String.valueOf(Double) here (e.g. "1234.56", "1.2345678E7").
        return Schema("string", optional=ctx.optional), lambda text: sem.java_double_string(parse(text))

    def to_decimal(text: str) -> str:
        value = sem.round_half_up(Decimal(repr(parse(text))), digits)  # BigDecimal.valueOf(double).setScale(HALF_UP)
        return sem.encode_decimal(value, digits)

    # moneySchema() uses Decimal.builder(moneyFractionDigits): no precision parameter.
    return sem.decimal_schema(digits, optional=ctx.optional), to_decimal


# --------------------------------------------------------------------------- binary and bits


def _build_bytea(ctx: _Ctx) -> _Built:
    mode = ctx.modes.binary_handling
    schema = sem.binary_schema(mode, optional=ctx.optional)
    if mode == "hex":
        # PostgreSQL's hex output is already the lower-case hex Debezium's HexConverter writes.
        def to_hex(text: str) -> str:
            if text[:2] != "\\x":
                raise ctx.fail(text, "bytea text must be in hex format (bytea_output = hex)")
            return text[2:]

        return schema, to_hex
    encode = sem.bytes_encoder(mode)
    fromhex = bytes.fromhex

    def convert(text: str) -> str:
        if text[:2] != "\\x":
            raise ctx.fail(text, "bytea text must be in hex format (bytea_output = hex)")
        try:
            return encode(fromhex(text[2:]))
        except ValueError:
            raise ctx.fail(text, "invalid hex digits") from None

    return schema, convert


def _build_bits(ctx: _Ctx) -> _Built:
    length = ctx.typmod if ctx.typmod >= 0 else (1 if ctx.type_name == "bit" else _UNBOUNDED_BITS)
    if length <= 1:
        # BIT(1) and VARBIT(1) are booleans.
        def to_bool(text: str) -> bool:
            try:
                return int(text, 2) != 0
            except ValueError:
                raise ctx.fail(text, "not a bit string") from None

        return Schema("boolean", optional=ctx.optional), to_bool
    encode = sem.base64_str

    def to_bits(text: str) -> str:
        # The rightmost character is bit 0; bytes are little-endian and sized by the content
        # (BitSet.toByteArray), so all-zero bits give no bytes at all.
        try:
            value = int(text, 2)
        except ValueError:
            raise ctx.fail(text, "not a bit string") from None
        return encode(value.to_bytes((value.bit_length() + 7) // 8, "little"))

    return sem.bits_schema(length, optional=ctx.optional), to_bits


# --------------------------------------------------------------------------- dates and times

_fromiso_date = date.fromisoformat
_fromiso_time = time.fromisoformat
_fromiso_datetime = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1)
_UTC = timezone.utc
_US = timedelta(microseconds=1)
_MS = timedelta(milliseconds=1)
_EPOCH_ORDINAL = sem.EPOCH_ORDINAL

#: Debezium's DATE infinity sentinels (``PostgresValueConverter.POSITIVE/NEGATIVE_INFINITY_LOCAL_DATE``).
_DATE_INFINITY = {
    "infinity": sem.days_from_civil(-5877611, 6, 21),
    "-infinity": sem.days_from_civil(-5877611, 6, 22),
}
#: TIMESTAMP infinities in µs (``PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY`` read as µs).
_TIMESTAMP_INFINITY_MICROS = {"infinity": 9223372036825200000, "-infinity": -9223372036832400000}

_DATE_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?")
_TIME_RE = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_TIMESTAMP_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?( BC)?")
_TIMESTAMPTZ_RE = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?( BC)?"
)
_TIMETZ_RE = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?")


def _fraction_micros(fraction: str | None) -> int:
    return int(fraction.ljust(6, "0")) if fraction else 0


def _date_days_slow(ctx: _Ctx, text: str) -> int:
    """Days since the epoch for what ``date.fromisoformat`` rejects: BC, years > 9999, infinities."""
    special = _DATE_INFINITY.get(text)
    if special is not None:
        return special
    m = _DATE_RE.fullmatch(text)
    if m is None:
        raise ctx.fail(text, "expected an ISO date (DateStyle ISO)")
    year = int(m[1])
    return sem.days_from_civil(1 - year if m[4] else year, int(m[2]), int(m[3]))


def _timestamp_micros_slow(ctx: _Ctx, text: str) -> int:
    """µs since the epoch for what ``datetime.fromisoformat`` rejects: BC, years > 9999, infinities."""
    special = _TIMESTAMP_INFINITY_MICROS.get(text)
    if special is not None:
        return special
    m = _TIMESTAMP_RE.fullmatch(text)
    if m is None:
        raise ctx.fail(text, "expected an ISO timestamp (DateStyle ISO)")
    year = int(m[1])
    days = sem.days_from_civil(1 - year if m[8] else year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    return seconds * 1_000_000 + _fraction_micros(m[7])


def _offset_seconds(sign: str, hh: str, mm: str | None, ss: str | None) -> int:
    offset = int(hh) * 3600 + int(mm or 0) * 60 + int(ss or 0)
    return -offset if sign == "-" else offset


def _build_date(ctx: _Ctx) -> _Built:
    name = sem.CONNECT_DATE if ctx.modes.time_precision == "connect" else sem.DATE

    def convert(text: str) -> int:
        try:
            return _fromiso_date(text).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            return _date_days_slow(ctx, text)

    return sem.semantic_schema(name, optional=ctx.optional), convert


#: TIME schema by (time.precision.mode, precision <= 3), and the µs divisor of its unit.
_TIME_SCHEMAS: dict[tuple[str, bool], str] = {
    ("adaptive", True): sem.TIME,
    ("adaptive", False): sem.MICRO_TIME,
    ("adaptive_time_microseconds", True): sem.MICRO_TIME,
    ("adaptive_time_microseconds", False): sem.MICRO_TIME,
    ("connect", True): sem.CONNECT_TIME,
    ("connect", False): sem.CONNECT_TIME,
}
#: TIMESTAMP schema by (time.precision.mode, precision <= 3).
_TIMESTAMP_SCHEMAS: dict[tuple[str, bool], str] = {
    ("adaptive", True): sem.TIMESTAMP,
    ("adaptive", False): sem.MICRO_TIMESTAMP,
    ("adaptive_time_microseconds", True): sem.TIMESTAMP,
    ("adaptive_time_microseconds", False): sem.MICRO_TIMESTAMP,
    ("connect", True): sem.CONNECT_TIMESTAMP,
    ("connect", False): sem.CONNECT_TIMESTAMP,
}
#: Microseconds per unit of each epoch-based temporal schema.
_MICROS_PER_UNIT: dict[str, int] = {
    sem.TIME: 1000,
    sem.MICRO_TIME: 1,
    sem.CONNECT_TIME: 1000,
    sem.TIMESTAMP: 1000,
    sem.MICRO_TIMESTAMP: 1,
    sem.CONNECT_TIMESTAMP: 1000,
}


def _time_micros(ctx: _Ctx, text: str) -> int:
    try:
        return sem.micros_of_day(_fromiso_time(text))
    except ValueError:
        pass
    m = _TIME_RE.fullmatch(text)  # PostgreSQL allows 24:00:00
    if m is None:
        raise ctx.fail(text, "expected HH:MM:SS[.ffffff]")
    micros = ((int(m[1]) * 60 + int(m[2])) * 60 + int(m[3])) * 1_000_000 + _fraction_micros(m[4])
    if micros > sem.MICROS_PER_DAY:
        raise ctx.fail(text, "time of day beyond 24:00:00")
    return micros


def _build_time(ctx: _Ctx) -> _Built:
    name = _TIME_SCHEMAS[ctx.modes.time_precision, _time_precision(ctx.typmod) <= 3]
    unit = _MICROS_PER_UNIT[name]
    if unit == 1:
        return sem.semantic_schema(name, optional=ctx.optional), lambda text: _time_micros(ctx, text)
    return sem.semantic_schema(name, optional=ctx.optional), lambda text: _time_micros(ctx, text) // unit


def _build_timestamp(ctx: _Ctx) -> _Built:
    name = _TIMESTAMP_SCHEMAS[ctx.modes.time_precision, _time_precision(ctx.typmod) <= 3]
    schema = sem.semantic_schema(name, optional=ctx.optional)
    if _MICROS_PER_UNIT[name] == 1:

        def to_micros(text: str) -> int:
            try:
                return (_fromiso_datetime(text) - _EPOCH) // _US
            except (ValueError, TypeError):
                return _timestamp_micros_slow(ctx, text)

        return schema, to_micros

    def to_millis(text: str) -> int:
        # Floor division, as Instant.toEpochMilli does for instants before 1970.
        try:
            return (_fromiso_datetime(text) - _EPOCH) // _MS
        except (ValueError, TypeError):
            return _timestamp_micros_slow(ctx, text) // 1000

    return schema, to_millis


def _zoned_timestamp_slow(ctx: _Ctx, text: str) -> str:
    if text in _TIMESTAMP_INFINITY_MICROS:
        return text  # Debezium emits "infinity" / "-infinity" as they are
    m = _TIMESTAMPTZ_RE.fullmatch(text)
    if m is None:
        raise ctx.fail(text, "expected an ISO timestamp with offset (DateStyle ISO)")
    year = int(m[1])
    days = sem.days_from_civil(1 - year if m[12] else year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    seconds -= _offset_seconds(m[8], m[9], m[10], m[11])
    return sem.format_zoned_timestamp(seconds, _fraction_micros(m[7]) * 1000)


def _build_timestamptz(ctx: _Ctx) -> _Built:
    def convert(text: str) -> str:
        # Fast path, TimeZone=UTC output "YYYY-MM-DD HH:MM:SS[.f]+00": only re-punctuate
        # (PostgreSQL already drops trailing fractional zeros).
        if text[-3:] == "+00" and text[4:5] == "-" and text[10:11] == " ":
            if len(text) == 22 or (text[19:20] == "." and text[-4] != "0"):
                return f"{text[:10]}T{text[11:-3]}Z"
        try:
            dt = _fromiso_datetime(text)
            if dt.tzinfo is None:
                return _zoned_timestamp_slow(ctx, text)
            if dt.utcoffset():
                dt = dt.astimezone(_UTC)
            iso = dt.isoformat()[:-6]  # drop "+00:00"
            return (iso.rstrip("0") if dt.microsecond else iso) + "Z"
        except (ValueError, OverflowError):
            return _zoned_timestamp_slow(ctx, text)

    return sem.semantic_schema(sem.ZONED_TIMESTAMP, optional=ctx.optional), convert


def _build_timetz(ctx: _Ctx) -> _Built:
    def convert(text: str) -> str:
        try:
            t = _fromiso_time(text)
        except ValueError:
            return slow(text)
        offset = t.utcoffset()
        if offset is None:
            raise ctx.fail(text, "expected HH:MM:SS[.ffffff]+HH[:MM]")
        micros = sem.micros_of_day(t) - offset // _US
        return sem.format_zoned_time((micros % sem.MICROS_PER_DAY) * 1000)

    def slow(text: str) -> str:
        m = _TIMETZ_RE.fullmatch(text)
        if m is None:
            raise ctx.fail(text, "expected HH:MM:SS[.ffffff]+HH[:MM]")
        hours = int(m[1])
        if hours > 23:
            # Debezium's OffsetTime parser rejects 24:00:00 too.
            raise ctx.fail(text, "24:00:00 has no ZonedTime representation")
        micros = ((hours * 60 + int(m[2])) * 60 + int(m[3])) * 1_000_000 + _fraction_micros(m[4])
        micros -= _offset_seconds(m[5], m[6], m[7], m[8]) * 1_000_000
        return sem.format_zoned_time((micros % sem.MICROS_PER_DAY) * 1000)

    return sem.semantic_schema(sem.ZONED_TIME, optional=ctx.optional), convert


# --------------------------------------------------------------------------- interval

_INTERVAL_UNITS = {
    "year": 0, "years": 0, "yr": 0, "yrs": 0,
    "mon": 1, "mons": 1, "month": 1, "months": 1,
    "day": 2, "days": 2,
}  # fmt: skip


def _java_round(value: float) -> int:
    # Math.round(double): floor(x + 0.5)
    return int((value + 0.5) // 1)


def _parse_interval(ctx: _Ctx, text: str) -> tuple[int, int, int, int, int, float]:
    """(years, months, days, hours, minutes, seconds) of an IntervalStyle=postgres text, as pgjdbc's PGInterval reads it."""
    ymd = [0, 0, 0]
    hours = minutes = 0
    seconds = 0.0
    tokens = text.split()
    i = 0
    try:
        while i < len(tokens):
            token = tokens[i]
            if ":" in token:
                negative = token[0] == "-"
                parts = (token[1:] if negative else token).split(":")
                hours, minutes = int(parts[0]), int(parts[1])
                seconds = float(parts[2]) if len(parts) > 2 else 0.0
                if negative:
                    hours, minutes, seconds = -hours, -minutes, -seconds
            else:
                ymd[_INTERVAL_UNITS[tokens[i + 1]]] = int(token)
                i += 1
            i += 1
    except (ValueError, KeyError, IndexError):
        raise ctx.fail(text, "expected an interval in IntervalStyle postgres") from None
    # PGInterval.setSeconds/getSeconds: whole seconds plus rounded microseconds, as a double.
    whole = int(seconds)
    seconds = whole + _java_round((seconds - whole) * 1_000_000) / 1_000_000
    return ymd[0], ymd[1], ymd[2], hours, minutes, seconds


def _build_interval(ctx: _Ctx) -> _Built:
    if ctx.modes.interval_handling == "string":
        return sem.semantic_schema(sem.INTERVAL, optional=ctx.optional), lambda text: sem.interval_string(
            *_parse_interval(ctx, text)
        )
    return sem.semantic_schema(sem.MICRO_DURATION, optional=ctx.optional), lambda text: sem.micro_duration(
        *_parse_interval(ctx, text)
    )


# --------------------------------------------------------------------------- registry

_Builder = Callable[[_Ctx], _Built]

#: Type name → schema/converter builder. Types outside this table are unsupported.
_BUILDERS: dict[str, _Builder] = {
    "bool": _build_bool,
    "int2": _plain("int16"),
    "int4": _plain("int32"),
    "int8": _plain("int64"),
    "oid": _plain("int64"),
    "float4": _build_float4,
    "float8": _build_float8,
    "numeric": _build_numeric,
    "money": _build_money,
    "char": _plain("string"),
    "name": _plain("string"),
    "text": _plain("string"),
    "bpchar": _plain("string"),
    "varchar": _plain("string"),
    "citext": _plain("string"),
    "inet": _plain("string"),
    "cidr": _plain("string"),
    "macaddr": _plain("string"),
    "macaddr8": _plain("string"),
    "int4range": _plain("string"),
    "int8range": _plain("string"),
    "numrange": _plain("string"),
    "tsrange": _plain("string"),
    "tstzrange": _plain("string"),
    "daterange": _plain("string"),
    "json": _named_string(sem.JSON),
    "jsonb": _named_string(sem.JSON),
    "uuid": _named_string(sem.UUID),
    "xml": _named_string(sem.XML),
    "ltree": _named_string(sem.LTREE),
    "bytea": _build_bytea,
    "bit": _build_bits,
    "varbit": _build_bits,
    "date": _build_date,
    "time": _build_time,
    "timetz": _build_timetz,
    "timestamp": _build_timestamp,
    "timestamptz": _build_timestamptz,
    "interval": _build_interval,
}

#: Extension types without a fixed OID, recognised by ``type_name`` alone.
_BY_NAME_ONLY = frozenset({"citext", "ltree"})


def supported_type_names() -> frozenset[str]:
    """The type names ``column_for`` maps."""
    return frozenset(_BUILDERS)


def _length_scale(type_name: str, typmod: int) -> tuple[int | None, int | None]:
    """Column length and scale as Debezium reports them (character length, numeric precision/scale, time precision)."""
    if type_name in ("varchar", "bpchar"):
        return (typmod - _VARHDRSZ, None) if typmod >= _VARHDRSZ else (None, None)
    if type_name == "numeric":
        ps = _numeric_precision_scale(typmod)
        return ps if ps is not None else (None, None)
    if type_name in ("bit", "varbit"):
        return (typmod, None) if typmod >= 0 else (1 if type_name == "bit" else _UNBOUNDED_BITS, None)
    if type_name in ("time", "timetz", "timestamp", "timestamptz"):
        return None, _time_precision(typmod)
    return None, None


def column_for(
    name: str,
    type_oid: int,
    type_modifier: int,
    optional: bool,
    modes: TypeModes,
    position: int = 0,
    type_name: str | None = None,
) -> Column:
    """The Column for a PostgreSQL column: its Debezium schema (optional as nullable) and its text converter.

    ``type_oid`` selects the mapping for built-in types; ``type_name`` (``pg_type.typname``) is
    used for the column's type name and to recognise extension types without a fixed OID
    (``citext``, ``ltree``). Raises ``UnsupportedTypeError`` for anything else.
    """
    builtin = BUILTIN_TYPES.get(type_oid)
    if builtin is not None:
        key = builtin
    elif type_name in _BY_NAME_ONLY:
        key = type_name
    else:
        raise UnsupportedTypeError(name, type_oid, type_name)
    ctx = _Ctx(name, type_name or key, type_modifier, optional, modes)
    schema, convert = _BUILDERS[key](ctx)
    length, scale = _length_scale(key, type_modifier)
    return Column(
        name=name,
        type_name=type_name or key,
        schema=schema,
        convert=convert,
        position=position,
        optional=optional,
        length=length,
        scale=scale,
        type_oid=type_oid,
    )


def convert_value(column: Column, raw: Any) -> Any:
    """``column.convert(raw)``, with any failure re-raised as a ValueConversionError naming the column."""
    try:
        return column.convert(raw)
    except ValueConversionError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise ValueConversionError(column.name, column.type_name, raw, str(e)) from e
