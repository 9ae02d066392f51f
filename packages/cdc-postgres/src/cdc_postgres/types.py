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
* NUMERIC ``NaN``/``Infinity`` under ``decimal.handling.mode=precise`` fail to convert, as
  ``SpecialValueDecimal.fromLogical`` throws; the core then writes null with a warning
  (``event.converting.failure.handling.mode``), as Debezium's TableSchemaBuilder does.
  ``double`` gives "NaN"/"Infinity"/"-Infinity" (Jackson's quoted non-finite numbers),
  ``string`` gives ``NAN``/``POSITIVE_INFINITY``/``NEGATIVE_INFINITY``.
* ``string`` mode renders ``BigDecimal.toPlainString()`` (``SpecialValueDecimal.fromLogical``):
  PostgreSQL's own text, ``0.00000000``, never an exponent.
* TIMESTAMP ``infinity``/``-infinity`` are µs ``9223372036825200000``/``-9223372036832400000``
  (PGStatement's millisecond constants read as microseconds); millisecond schemas get those
  floored to ms. TIMESTAMPTZ infinities are the strings ``infinity``/``-infinity``.
* DATE ``infinity``/``-infinity`` become Debezium's sentinel dates ``-5877611-06-21`` and
  ``-5877611-06-22`` (yes, positive infinity is negative: a Debezium bug kept for fidelity).
* ZonedTimestamp pads the fraction to the column's precision (6 without one, none at 0):
  ``2018-06-20T15:13:16.900Z`` for timestamptz(3), also in arrays (Debezium's
  ``ZonedTimestamp.toIsoString(..., fractionalWidth)``). ZonedTime uses ``ISO_OFFSET_TIME``:
  seconds always printed, fraction only when non-zero, trailing zeros stripped.
* time[] elements are MicroTime in every mode (Debezium's TIME_ARRAY schema).
* REAL values come out as the shortest decimal that round-trips the float32 (``3.14``).
* Enum ``allowed`` lists the labels as Debezium's TypeRegistry reads them: an unordered
  ``array_agg`` over pg_enum, i.e. creation order (labels added with ``BEFORE``/``AFTER`` last).
* Domains map as their base type, with the typmod of the nearest domain that has one, also
  through nested domains (Debezium's TypeRegistry walks the hierarchy; the doc's warning that
  nested domains lose length/scale describes the JDBC metadata, not what Debezium emits).
* Arrays are Connect arrays of the element's mapping; arrays Debezium never maps (money, name,
  interval, varbit, xml, point, refcursor elements) and arrays of domains or unknown
  types (without include.unknown.datatypes) are left out; bit(n)[] gets bit(n)'s scalar schema
  and null values, as in Debezium. An array holding NULL where the element schema is required
  (enums, unknown types) fails to convert, as Debezium's Connect validation does. A multi-dimensional value is an
  error: Debezium would emit garbage (a list of ``Object[].toString()`` strings or nulls).
* hstore pairs come out in ``java.util.HashMap`` order (pgjdbc's HStoreConverter), not
  PostgreSQL's; json mode is Jackson's compact text.
* include.unknown.datatypes carries the UTF-8 bytes of the value's text output: with pgoutput
  that text is all Debezium receives ("an opaque binary representation" in the doc); the
  geometric types carry pgjdbc's text instead (Java doubles: ``<(10.0,20.0),10.0>``).
* MONEY is parsed exactly from its text (Debezium's streaming path), in snapshots too.
* Column defaults: see ``_schema_default`` (function defaults give the type's zero, as the doc
  says; Debezium's literal-extraction quirks are kept).
"""

from __future__ import annotations

import binascii
import hashlib
import re
import uuid as uuid_module
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from struct import Struct, unpack, unpack_from
from typing import Any, NamedTuple

from cdc_core.relational import Column, ValueConverter
from cdc_core.schema import Field, Schema
from cdc_core import semantic as sem
from cdc_core.semantic import ValueConversionError
from cdc_postgres.source_metadata import source_length_scale, source_type_name

__all__ = [
    "BUILTIN_TYPES",
    "BUILTIN_ARRAY_TYPES",
    "TypeInfo",
    "TypeModes",
    "ValueConversionError",
    "column_for",
    "convert_value",
    "parse_array",
    "supported_type_names",
]

# --------------------------------------------------------------------------- modes

DECIMAL_HANDLING_MODES = ("precise", "double", "string")
BINARY_HANDLING_MODES = tuple(sem.BINARY_HANDLING)
TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
INTERVAL_HANDLING_MODES = ("numeric", "string")
HSTORE_HANDLING_MODES = ("json", "map")


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The connector properties that change how values map: the handling modes, money digits, unknown types."""

    decimal_handling: str = "precise"
    binary_handling: str = "bytes"
    time_precision: str = "adaptive"
    interval_handling: str = "numeric"
    money_fraction_digits: int = 2
    hstore_handling: str = "json"
    include_unknown_datatypes: bool = False
    #: ``unavailable.value.placeholder`` as bytes (its ``hex:`` form decoded).
    unavailable_placeholder: bytes = b"__debezium_unavailable_value"

    def __post_init__(self) -> None:
        for prop, value, allowed in (
            ("decimal.handling.mode", self.decimal_handling, DECIMAL_HANDLING_MODES),
            ("binary.handling.mode", self.binary_handling, BINARY_HANDLING_MODES),
            ("time.precision.mode", self.time_precision, TIME_PRECISION_MODES),
            ("interval.handling.mode", self.interval_handling, INTERVAL_HANDLING_MODES),
            ("hstore.handling.mode", self.hstore_handling, HSTORE_HANDLING_MODES),
        ):
            if value not in allowed:
                raise ValueError(f"invalid {prop} {value!r}; expected one of {', '.join(allowed)}")
        if self.money_fraction_digits < 0:
            raise ValueError(f"invalid money.fraction.digits {self.money_fraction_digits!r}; must be >= 0")


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """What pg_catalog says of a column's type beyond its OID: its kind, the base under its domains, enum labels, array element.

    ``kind``/``base_kind``/``element_kind`` are ``pg_type.typtype`` letters (b base, d domain,
    e enum, c composite, r range, m multirange, p pseudo). ``base_*`` describe the type under
    every domain (the type itself when it is not a domain); ``domain_typmod`` is the typmod of
    the nearest domain that has one (-1 if none). ``labels`` are the enum labels, in their
    declared order, of the base type or, for an array, of its element type. ``delimiter`` is
    the element type's array delimiter (``pg_type.typdelim``).
    """

    name: str
    kind: str = "b"
    base_oid: int | None = None
    base_name: str | None = None
    base_kind: str | None = None
    domain_typmod: int = -1
    labels: tuple[str, ...] = ()
    element_oid: int | None = None
    element_name: str | None = None
    element_kind: str = "b"
    delimiter: str = ","


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
    600: "point",
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

#: Built-in array type OIDs: ``pg_type.typname`` and the element type's OID.
BUILTIN_ARRAY_TYPES: dict[int, tuple[str, int]] = {
    143: ("_xml", 142),
    199: ("_json", 114),
    651: ("_cidr", 650),
    775: ("_macaddr8", 774),
    791: ("_money", 790),
    1000: ("_bool", 16),
    1001: ("_bytea", 17),
    1002: ("_char", 18),
    1003: ("_name", 19),
    1005: ("_int2", 21),
    1007: ("_int4", 23),
    1009: ("_text", 25),
    1014: ("_bpchar", 1042),
    1015: ("_varchar", 1043),
    1016: ("_int8", 20),
    1017: ("_point", 600),
    1021: ("_float4", 700),
    1022: ("_float8", 701),
    1028: ("_oid", 26),
    1040: ("_macaddr", 829),
    1041: ("_inet", 869),
    1115: ("_timestamp", 1114),
    1182: ("_date", 1082),
    1183: ("_time", 1083),
    1185: ("_timestamptz", 1184),
    1187: ("_interval", 1186),
    1231: ("_numeric", 1700),
    1270: ("_timetz", 1266),
    1561: ("_bit", 1560),
    1563: ("_varbit", 1562),
    2201: ("_refcursor", 1790),
    2951: ("_uuid", 2950),
    3807: ("_jsonb", 3802),
    3905: ("_int4range", 3904),
    3907: ("_numrange", 3906),
    3909: ("_tsrange", 3908),
    3911: ("_tstzrange", 3910),
    3913: ("_daterange", 3912),
    3927: ("_int8range", 3926),
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


#: Python refuses int() of longer digit strings (sys.int_info.default_max_str_digits); NUMERIC has up to 147455 digits.
_INT_STR_LIMIT = 4000


def _digits_int(digits: str) -> int:
    """``int(digits)`` of a decimal digit string, also beyond Python's digit limit for int() of a str."""
    if len(digits) < _INT_STR_LIMIT:
        return int(digits)
    try:
        return int(Decimal(digits))
    except InvalidOperation:
        raise ValueError(f"not a decimal integer: {digits[:40]}...") from None


def _unscaled(text: str, scale: int) -> int:
    """The unscaled integer of a plain decimal text at ``scale`` (ValueError if rounding would be needed)."""
    whole, _, frac = text.partition(".")
    if scale >= 0 and len(frac) <= scale:
        return _digits_int(whole + frac + "0" * (scale - len(frac)))
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
        # BigDecimal.doubleValue(): beyond the double range it is Infinity, written as Jackson does.
        return Schema("float64", optional=ctx.optional), _float_converter(ctx, sem.json_float)
    if mode == "string":
        # SpecialValueDecimal.fromLogical: BigDecimal.toPlainString(), which is PostgreSQL's own
        # text ("0.0000001000", never "1.000E-7").
        specials = _NUMERIC_SPECIAL_STRINGS.get

        def to_string(text: str) -> str:
            special = specials(text)
            return text if special is None else special

        return Schema("string", optional=ctx.optional), to_string
    if ps is None:
        # Unconstrained NUMERIC: VariableScaleDecimal with trailing zeros stripped.
        def to_variable(text: str) -> dict[str, Any]:
            whole, _, frac = text.partition(".")
            frac = frac.rstrip("0")
            try:
                return {"scale": len(frac), "value": sem.unscaled_to_base64(_digits_int(whole + frac))}
            except ValueError:
                if text in _NUMERIC_SPECIAL_STRINGS:
                    raise _precise_special(ctx, text) from None
                raise ctx.fail(text, "not a decimal number") from None

        return sem.variable_scale_decimal_schema(optional=ctx.optional), to_variable
    precision, scale = ps
    encode = sem.unscaled_to_base64
    b2a = binascii.b2a_base64
    fast, dot = scale > 0, -scale - 1

    def to_decimal(text: str) -> str:
        # Fast path: PostgreSQL prints numeric(p,s) with exactly s fractional digits, so the
        # unscaled integer is the text without its point; then BigInteger.toByteArray() in base64.
        try:
            if fast and len(text) > scale and text[dot] == ".":
                digits = text.replace(".", "", 1)
                n = int(digits) if len(digits) < _INT_STR_LIMIT else _digits_int(digits)
                length = (n if n >= 0 else ~n).bit_length() // 8 + 1
                return b2a(n.to_bytes(length, "big", signed=True), newline=False).decode("ascii")
            return encode(_unscaled(text, scale))
        except (ValueError, InvalidOperation):
            if text in _NUMERIC_SPECIAL_STRINGS:
                raise _precise_special(ctx, text) from None
            raise ctx.fail(text, f"not a decimal number of scale {scale}") from None

    return sem.decimal_schema(scale, precision, optional=ctx.optional), to_decimal


_MONEY_RE = re.compile(r"[^0-9.]")


def _build_money(ctx: _Ctx) -> _Built:
    # Debezium 2.7 streaming (AbstractColumnValue.asMoney): the locale text without its currency
    # symbol and grouping commas, parsed exactly as a BigDecimal; then setScale(money.fraction.digits,
    # HALF_UP) (precise), doubleValue() (double) or toPlainString() (string). Only '.'-decimal
    # locales (C, en_US, ...) are understood: "$1,234.56", "-$1,234.56", "($1.00)".
    # Its snapshot reads money through pgjdbc's PGmoney as a double instead, which loses digits
    # past 2**53 and prints String.valueOf(double) in string mode ("12.5", "1.2345678E7"): a bug
    # cdc does not copy; snapshot and streaming both give the exact value (DIFFERENCES.md).
    digits = ctx.modes.money_fraction_digits
    mode = ctx.modes.decimal_handling
    strip = _MONEY_RE.sub

    def plain(text: str) -> str:
        digits_text = strip("", text)
        if not digits_text or digits_text.count(".") > 1 or digits_text == ".":
            raise ctx.fail(text, "not a money amount with '.' as the decimal point")
        return "-" + digits_text if text[:1] in "-(" else digits_text

    if mode == "double":
        return Schema("float64", optional=ctx.optional), lambda text: float(plain(text))
    if mode == "string":
        return Schema("string", optional=ctx.optional), plain

    def to_decimal(text: str) -> str:
        return sem.encode_decimal(sem.round_half_up(Decimal(plain(text)), digits), digits)

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
        # An empty bit varying has no bits: no bytes, as Debezium's empty BitSet.
        try:
            value = int(text, 2) if text else 0
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


_LONG_MAX, _LONG_MIN = 2**63 - 1, -(2**63)


def _java_epoch_micros(seconds: int, micros: int) -> int:
    """Debezium's ``Conversions.toEpochMicros``: ``TimeUnit.SECONDS.toMicros`` saturates at the long range,
    then the fraction is added with Java's wrap-around (so 294276 AD is a large negative number)."""
    whole = min(max(seconds * 1_000_000, _LONG_MIN), _LONG_MAX)
    return (whole + micros + 2**63) % 2**64 - 2**63


def _timestamp_micros_slow(ctx: _Ctx, text: str, java_long: bool = True) -> int:
    """µs since the epoch for what ``datetime.fromisoformat`` rejects: BC, years > 9999, infinities.

    ``java_long``: as Debezium's MicroTimestamp computes it in a Java long (past 292277 AD it
    saturates and wraps); else exact (millisecond schemas, whose ``toEpochMilli`` does not overflow).
    """
    special = _TIMESTAMP_INFINITY_MICROS.get(text)
    if special is not None:
        return special
    m = _TIMESTAMP_RE.fullmatch(text)
    if m is None:
        raise ctx.fail(text, "expected an ISO timestamp (DateStyle ISO)")
    year = int(m[1])
    days = sem.days_from_civil(1 - year if m[8] else year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    if java_long:
        return _java_epoch_micros(seconds, _fraction_micros(m[7]))
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
            return _timestamp_micros_slow(ctx, text, java_long=False) // 1000

    return schema, to_millis


def _zoned_timestamp_slow(ctx: _Ctx, text: str, width: int) -> str:
    if text in _TIMESTAMP_INFINITY_MICROS:
        return text  # Debezium emits "infinity" / "-infinity" as they are
    m = _TIMESTAMPTZ_RE.fullmatch(text)
    if m is None:
        raise ctx.fail(text, "expected an ISO timestamp with offset (DateStyle ISO)")
    year = int(m[1])
    days = sem.days_from_civil(1 - year if m[12] else year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    seconds -= _offset_seconds(m[8], m[9], m[10], m[11])
    iso = sem.format_zoned_timestamp(seconds)  # "...THH:MM:SSZ"
    fraction = (m[7] or "").ljust(width, "0")
    return f"{iso[:-1]}.{fraction}Z" if width else iso


def _build_timestamptz(ctx: _Ctx) -> _Built:
    # Debezium 2.7's convertTimestampWithZone formats with ZonedTimestamp.toIsoString(..., fraction)
    # where fraction is the column's scale (its precision; 6 when declared without one): the
    # fraction always has exactly that many digits ("...16.900Z" for timestamptz(3),
    # "...00.000000Z"), and none at precision 0. Arrays' elements get the column's precision too.
    width = _time_precision(ctx.typmod)
    zeros = "." + "0" * width if width else ""

    def convert(text: str) -> str:
        # Fast path, TimeZone=UTC output "YYYY-MM-DD HH:MM:SS[.f]+00": only re-punctuate and pad
        # (PostgreSQL prints at most the column's precision, trailing zeros dropped).
        if text[-3:] == "+00" and text[4:5] == "-" and text[10:11] == " ":
            if len(text) == 22:
                return f"{text[:10]}T{text[11:19]}{zeros}Z"
            if text[19:20] == ".":
                return f"{text[:10]}T{text[11:19]}.{text[20:-3].ljust(width, '0')}Z"
        try:
            dt = _fromiso_datetime(text)
            if dt.tzinfo is None:
                return _zoned_timestamp_slow(ctx, text, width)
            if dt.utcoffset():
                dt = dt.astimezone(_UTC)
            head = dt.isoformat(timespec="seconds")[:-6]  # drop "+00:00"
            return f"{head}.{dt.microsecond:06d}"[: len(head) + 1 + width] + "Z" if width else head + "Z"
        except (ValueError, OverflowError):
            return _zoned_timestamp_slow(ctx, text, width)

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
        if hours > 24:
            raise ctx.fail(text, "expected HH:MM:SS[.ffffff]+HH[:MM]")
        # 24:00:00 (PostgreSQL allows it) is midnight: java.time's SMART resolver reads it as
        # 00:00 of the next day, so Debezium writes "24:00:00+01" as "23:00:00Z".
        micros = ((hours % 24 * 60 + int(m[2])) * 60 + int(m[3])) * 1_000_000 + _fraction_micros(m[4])
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


# --------------------------------------------------------------------------- enum, point, PostGIS


def _enum_builder(labels: tuple[str, ...]) -> Callable[[_Ctx], _Built]:
    """A builder for an enum type: Debezium's Enum string with ``allowed`` = the labels, value as-is."""

    def build(ctx: _Ctx) -> _Built:
        return sem.enum_schema(labels, optional=ctx.optional), str

    return build


# Debezium's geometry semantic types (io.debezium.data.geometry.*), built as their builders do.
POINT = "io.debezium.data.geometry.Point"
GEOMETRY = "io.debezium.data.geometry.Geometry"
GEOGRAPHY = "io.debezium.data.geometry.Geography"
_GEOMETRY_FIELDS: dict[str, tuple[str, tuple[Field, ...]]] = {
    POINT: ("Geometry (POINT)", (
        Field("x", Schema("float64")),
        Field("y", Schema("float64")),
        Field("wkb", Schema("bytes", optional=True)),
        Field("srid", Schema("int32", optional=True)),
    )),
    GEOMETRY: ("Geometry", (Field("wkb", Schema("bytes")), Field("srid", Schema("int32", optional=True)))),
    GEOGRAPHY: ("Geography", (Field("wkb", Schema("bytes")), Field("srid", Schema("int32", optional=True)))),
}


@lru_cache(maxsize=None)
def _geometry_schema(name: str, optional: bool) -> Schema:
    doc, fields = _GEOMETRY_FIELDS[name]
    return Schema("struct", optional=optional, name=name, version=1, doc=doc, fields=fields)


#: Point.createValue's WKB: byte-order mark 1, then little-endian type 1 (POINT), x and y.
_WKB_POINT = Struct("<BIdd")


def _build_point(ctx: _Ctx) -> _Built:
    # pgjdbc's PGpoint: "(x,y)", both parsed with Double.parseDouble. The value's srid is null.
    b64 = sem.base64_str
    pack = _WKB_POINT.pack

    def convert(text: str) -> dict[str, Any]:
        inner = text.strip()
        if inner[:1] == "(" and inner[-1:] == ")":
            inner = inner[1:-1]
        xs, comma, ys = inner.partition(",")
        try:
            if not comma:
                raise ValueError
            x, y = float(xs), float(ys)
        except ValueError:
            raise ctx.fail(text, "expected a point (x,y)") from None
        return {"x": sem.json_float(x), "y": sem.json_float(y), "wkb": b64(pack(1, 1, x, y)), "srid": None}

    return _geometry_schema(POINT, ctx.optional), convert


_EWKB_SRID_FLAG = 0x20000000


def _build_postgis(name: str) -> Callable[[_Ctx], _Built]:
    """A builder for PostGIS geometry/geography: the text output is hex EWKB; wkb = those bytes, srid from them (or null)."""

    def build(ctx: _Ctx) -> _Built:
        b64 = sem.base64_str

        def convert(text: str) -> dict[str, Any]:
            # PostgisGeometry.fromHexEwkb: the EWKB bytes are passed on whole (SRID included);
            # the SRID is read after the type word when its flag is set, else it is null.
            try:
                data = bytes.fromhex(text)
            except ValueError:
                raise ctx.fail(text, "expected hex EWKB (PostGIS text output)") from None
            if len(data) < 9:
                raise ctx.fail(text, "EWKB shorter than 9 bytes")
            order = "<" if data[0] else ">"
            (kind,) = unpack_from(order + "I", data, 1)
            srid = unpack_from(order + "i", data, 5)[0] if kind & _EWKB_SRID_FLAG else None
            return {"wkb": b64(data), "srid": srid}

        return _geometry_schema(name, ctx.optional), convert

    return build


# --------------------------------------------------------------------------- hstore

_HSTORE_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"=>(?:"((?:[^"\\]|\\.)*)"|NULL)(?:, |$)', re.S)
_BACKSLASH_ESCAPE = re.compile(r"\\(.)", re.S)
_HSTORE_MAP_SCHEMAS = {
    optional: Schema("map", optional=optional, keys=Schema("string"), values=Schema("string", optional=True))
    for optional in (False, True)
}
#: Jackson's escapes in a JSON string: the two-character forms, else \u00XX (upper-case hex) below 0x20.
_JACKSON_ESCAPES = {c: f"\\u{c:04X}" for c in range(0x20)} | {
    0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\",
}


def _unescape(text: str) -> str:
    return _BACKSLASH_ESCAPE.sub(r"\1", text) if "\\" in text else text


def _hstore_pairs(ctx: _Ctx, text: str) -> list[tuple[str, str | None]]:
    """The (key, value) pairs of hstore text output (``"k"=>"v", "n"=>NULL``), in output order."""
    pairs = []
    pos = 0
    for m in _HSTORE_PAIR.finditer(text):
        if m.start() != pos:
            break
        value = m[2]
        pairs.append((_unescape(m[1]), None if value is None else _unescape(value)))
        pos = m.end()
    if pos != len(text):
        raise ctx.fail(text, "not hstore text output")
    return pairs


def _java_string_hash(s: str) -> int:
    """``String.hashCode()`` over UTF-16 code units, as an unsigned 32-bit int."""
    if s.isascii():
        units: Any = s.encode("ascii")
    else:
        data = s.encode("utf-16-be")
        units = unpack(f">{len(data) // 2}H", data)
    h = 0
    for u in units:
        h = (31 * h + u) & 0xFFFFFFFF
    return h


def java_hashmap_order(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The pairs in the iteration order of a ``java.util.HashMap`` they were put into in this order.

    pgjdbc's ``HStoreConverter.fromString`` returns a HashMap, and Debezium writes hstore values in
    its iteration order (in both hstore handling modes): buckets in index order (the spread hash
    ``h ^ h >>> 16`` masked by the table size: 16, doubled whenever size exceeds 3/4 of it), and
    insertion order within a bucket. (A bucket of 9+ colliding keys makes Java treeify or resize
    early; that is not modelled.)
    """
    capacity = 16
    while len(pairs) > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1

    def bucket(pair: tuple[str, Any]) -> int:
        h = _java_string_hash(pair[0])
        return (h ^ (h >> 16)) & mask

    return sorted(pairs, key=bucket)


def _jackson_string(value: str) -> str:
    return '"' + value.translate(_JACKSON_ESCAPES) + '"'


def _build_hstore(ctx: _Ctx) -> _Built:
    if ctx.modes.hstore_handling == "map":
        # A Connect map string -> optional string; JsonConverter writes it as a JSON object.
        return _HSTORE_MAP_SCHEMAS[ctx.optional], lambda text: dict(java_hashmap_order(_hstore_pairs(ctx, text)))

    def to_json(text: str) -> str:
        # Jackson's compact generator: {"k":"v","n":null}, no spaces.
        items = java_hashmap_order(_hstore_pairs(ctx, text))
        return "{" + ",".join(
            f"{_jackson_string(k)}:{'null' if v is None else _jackson_string(v)}" for k, v in items
        ) + "}"

    return sem.semantic_schema(sem.JSON, optional=ctx.optional), to_json


# --------------------------------------------------------------------------- unknown types


#: Geometric types pgjdbc reads into its ``PGbox``/``PGcircle``/... classes: Debezium writes
#: their ``getValue()``, the server's text with every number re-printed as a Java double.
_JDBC_GEOMETRIC = frozenset({"box", "circle", "line", "lseg", "path", "polygon"})
_FLOAT_TOKEN = re.compile(r"-?(?:Infinity|NaN|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)")


def _jdbc_geometric_text(text: str) -> str:
    """pgjdbc's text of a geometric value: ``<(10,20),10>`` becomes ``<(10.0,20.0),10.0>``."""
    java = sem.java_double_string
    return _FLOAT_TOKEN.sub(lambda m: java(float(m[0])), text)


def _build_unknown_bytes(ctx: _Ctx, type_key: str | None = None) -> _Built:
    """``include.unknown.datatypes=true``: the bytes of the value's text, encoded per ``binary.handling.mode``.

    The doc calls this "an opaque binary representation". With pgoutput Debezium receives the
    type's text output and ``convertBinary`` turns that string into its bytes (UTF-8, the
    connection's encoding), so that is what cdc emits too. For the geometric types (``type_key``
    box, circle, line, lseg, path, polygon) that text is pgjdbc's: Debezium hands ``convertBinary``
    the driver's ``PGobject`` (streaming and snapshot alike), whose ``getValue()`` prints Java doubles.
    """
    mode = ctx.modes.binary_handling
    encode = sem.bytes_encoder(mode)
    if type_key in _JDBC_GEOMETRIC:
        geometric = _jdbc_geometric_text
        return sem.binary_schema(mode, optional=ctx.optional), lambda text: encode(geometric(text).encode("utf-8"))
    return sem.binary_schema(mode, optional=ctx.optional), lambda text: encode(text.encode("utf-8"))


def _omitted(raw: Any) -> Any:
    raise AssertionError("the value of a column left out of events was converted")


# --------------------------------------------------------------------------- arrays

_ARRAY_DIMENSIONS = re.compile(r"\[-?\d+:-?\d+\]=")


@lru_cache(maxsize=None)
def _array_token(delimiter: str) -> re.Pattern[str]:
    d = re.escape(delimiter)
    return re.compile(rf'"((?:[^"\\]|\\.)*)"|([^"\\{{}}{d}]*)', re.S)


def parse_array(text: str, delimiter: str = ",") -> list[str | None]:
    """The elements of a one-dimensional array's text output (``{a,"b c",NULL}``), unquoted; NULL gives None.

    A dimension decoration (``[0:2]={...}``) is ignored. Raises ValueError for anything else,
    multi-dimensional arrays included.
    """
    start = 0
    if text[:1] == "[":
        m = _ARRAY_DIMENSIONS.match(text)
        if m is None:
            raise ValueError("malformed array dimensions")
        if text.count("[") > 1:
            raise ValueError("multi-dimensional arrays are not supported: Connect arrays have one dimension")
        start = m.end()
    if text[start:start + 1] != "{" or text[-1:] != "}":
        raise ValueError("not an array literal")
    body = text[start + 1:-1]
    if not body:
        return []
    if body[0] == "{":
        raise ValueError("multi-dimensional arrays are not supported: Connect arrays have one dimension")
    if '"' not in body and "\\" not in body and "{" not in body:
        return [None if len(item) == 4 and item.upper() == "NULL" else item for item in body.split(delimiter)]
    token = _array_token(delimiter).match
    out: list[str | None] = []
    pos, end = 0, len(body)
    while True:
        m = token(body, pos)
        quoted, plain = m[1], m[2]
        if quoted is not None:
            out.append(_unescape(quoted))
        else:
            out.append(None if len(plain) == 4 and plain.upper() == "NULL" else plain)
        pos = m.end()
        if pos == end:
            return out
        if body[pos] != delimiter:
            raise ValueError(f"unexpected {body[pos]!r} in array")
        pos += 1


@lru_cache(maxsize=None)
def _array_schema(items: Schema, optional: bool) -> Schema:
    return Schema("array", optional=optional, items=items)


def _build_time_array_element(ctx: _Ctx) -> _Built:
    """An element of ``time[]``: MicroTime in every mode (Debezium's schema for TIME_ARRAY, whatever the precision).

    Debezium converts the elements with the column's own time converter, so where that gives
    milliseconds (precision <= 3 in adaptive mode, connect mode) the value does not fit the
    MicroTime schema and Debezium writes null; cdc writes the microseconds (DIFFERENCES.md).
    """
    return sem.semantic_schema(sem.MICRO_TIME, optional=ctx.optional), lambda text: _time_micros(ctx, text)


def _build_bit_array(ctx: _Ctx) -> _Built:
    """``bit(n)[]``: Debezium gives it the scalar schema of ``bit(n)`` (Bits, or boolean for n = 1), and null values.

    PostgresValueConverter lists BIT_ARRAY beside BIT for the schema, and its bits converter
    cannot read an array, so every value is null. cdc writes the same: an array value cannot
    stand in a scalar schema.
    """
    length = ctx.typmod if ctx.typmod >= 0 else 1
    schema = sem.bits_schema(length, optional=ctx.optional) if length > 1 else Schema("boolean", optional=ctx.optional)

    def convert(text: str) -> None:
        if not ctx.optional:  # Debezium's null fails the required field's validation too
            raise ctx.fail(text, "a bit array has no value in Debezium's scalar bit schema")
        return None

    return schema, convert


def _build_array(ctx: _Ctx, element: _Built, delimiter: str) -> _Built:
    element_schema, element_convert = element
    parse = parse_array
    required = not element_schema.optional

    def convert(text: str) -> list[Any]:
        try:
            items = parse(text, delimiter)
            values = [None if item is None else element_convert(item) for item in items]
        except ValueConversionError as e:
            raise ctx.fail(text, f"element {e.value!r}: {e.reason}") from None
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise ctx.fail(text, str(e)) from None
        if required and None in items:
            # Debezium's Struct validation rejects the null element; the field becomes null.
            raise ctx.fail(text, "a NULL element where the array's element schema is required")
        return values

    return _array_schema(element_schema, ctx.optional), convert


# --------------------------------------------------------------------------- default values

# Debezium's PostgresDefaultValueConverter (2.x): a default of a supported type is parsed from
# pg_get_expr's text; a function default stands for the type's "zero" (the placeholders below).
# Known Debezium quirks kept for fidelity: the literal is the first '...' run, so 'it''s' gives
# "it" and a literal spanning a newline gives no default; '(1 + 2)' gives none (not a literal).
# Debezium picks the parser by the JDBC type name, so columns of domain and array types get no
# default. Unlike the doc says, bare CURRENT_TIMESTAMP (and CURRENT_DATE, LOCALTIME, ...) does
# count as a function: Debezium 2.x matches those names explicitly.
_FUNCTION_DEFAULT = re.compile(r"[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT_DATE_TIMES = frozenset({"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"})
_LITERAL_DEFAULT = re.compile(r"'(.*?)'")
#: Type → the text a function default stands for. Types outside this table never get a default.
_DEFAULT_PLACEHOLDERS: dict[str, str] = {
    "bool": "false", "int2": "0", "int4": "0", "int8": "0",
    "float4": "0.0", "float8": "0.0", "numeric": "0.0",
    "bpchar": "", "varchar": "", "text": "", "json": "{}", "jsonb": "{}", "xml": "",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00", "timestamp": "1970-01-01",
    "timestamptz": "1970-01-01 00:00:00+00",  # Debezium: "1970-01-01" at UTC
    "interval": "00:00:00",  # Debezium: PGInterval("epoch"), which parses to zero
    "bit": "00", "varbit": "0",
}  # fmt: skip
#: Types whose expression Debezium trims before parsing.
_TRIMMED_DEFAULTS = frozenset({"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "int8",
                               "uuid", "date", "time", "timestamp", "timestamptz", "interval"})
_INT_RANGES = {"int2": 2**15, "int4": 2**31, "int8": 2**63}


def _default_text(key: str, text: str, typmod: int, modes: TypeModes) -> str | None:
    """The default's literal as the column converter's input, parsed as Debezium's mapper does; None if it has none."""
    if key == "bool":
        return "t" if text.lower() == "true" else "f"  # Boolean.parseBoolean
    if key in _INT_RANGES:
        value = int(text)
        limit = _INT_RANGES[key]
        return str(value) if -limit <= value < limit else None
    if key in ("float4", "float8"):
        float(text)
        return text
    if key == "numeric":
        value = Decimal(text)
        if not value.is_finite():
            return None  # new BigDecimal("NaN") throws
        ps = _numeric_precision_scale(typmod)
        if ps is None:
            # VariableScaleDecimal is a struct, and Debezium gives structs no default.
            return None if modes.decimal_handling == "precise" else text
        scale = ps[1]
        quantized = value.quantize(Decimal(1).scaleb(-scale))
        if quantized != value:
            return None  # setScale without rounding throws
        return format(quantized, "f")
    if key == "uuid":
        return str(uuid_module.UUID(text))
    return text


def _schema_default(key: str, type_info: TypeInfo | None, expression: str | None, typmod: int,
                    modes: TypeModes, convert: ValueConverter) -> Any:
    """The JSON value of a column's DEFAULT in its schema, as Debezium derives it; None for no default."""
    if expression is None:
        return None
    if type_info is not None and type_info.kind == "e":
        # An enum default counts only as '<label>'::<enum type name>.
        suffix = f"::{type_info.name}"
        if expression.endswith(suffix):
            literal = expression[: -len(suffix)]
            if len(literal) >= 2 and literal[0] == literal[-1] == "'":
                return literal[1:-1]
        return None
    placeholder = _DEFAULT_PLACEHOLDERS.get(key)
    if placeholder is None or (type_info is not None and type_info.kind == "d"):
        return None
    if key in _TRIMMED_DEFAULTS:
        expression = expression.strip()
    if expression.startswith("NULL::"):
        return None
    if _FUNCTION_DEFAULT.match(expression) or expression.lower() in _CURRENT_DATE_TIMES:
        text = placeholder
    elif "'" not in expression:
        text = expression
    else:
        m = _LITERAL_DEFAULT.search(expression)
        if m is None:
            return None
        text = m[1]
    try:
        parsed = _default_text(key, text, typmod, modes)
        return None if parsed is None else convert(parsed)
    except (ValueError, ArithmeticError, TypeError, KeyError, OverflowError):
        return None  # Debezium: "Cannot parse column default value ..."; the schema has no default


def _with_default(schema: Schema, default: Any) -> Schema:
    return Schema(
        type=schema.type, optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
        parameters=schema.parameters, default=default, fields=schema.fields, items=schema.items,
        keys=schema.keys, values=schema.values,
    )


# --------------------------------------------------------------------------- unchanged TOAST placeholders

#: Array types with their own placeholder in Debezium 2.7.4 (UnchangedToastedReplicationMessageColumn):
#: the placeholder's text, its bytes, or its bytes as numbers, as a one-element (or per-byte) list.
_TEXT_ARRAYS = frozenset({"_text", "_varchar", "_json", "_jsonb"})
_INT_ARRAYS = frozenset({"_int4", "_date", "_int8"})


def _jackson_map(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f"{_jackson_string(k)}:{_jackson_string(v)}" for k, v in pairs.items()) + "}"


def _unavailable_value(key: str, type_info: TypeInfo | None, schema: Schema, modes: TypeModes, unknown: bool) -> Any:
    """What Debezium writes for an unchanged TOASTed value of this column (UnchangedToastedPlaceholder).

    The placeholder's text for string schemas, its bytes for bytea and (``unknown``) the types
    include.unknown.datatypes carries as bytes, in bytes mode (its text in hex mode, null in base64),
    ``{"<ph>":"<ph>"}`` for hstore (JSON text or map), ``["<ph>"]`` for text/varchar/json[b]
    arrays, ``[<ph bytes>]`` for bytea[] (bytes mode), the bytes as numbers for int4/int8/date
    arrays, ``UUID.nameUUIDFromBytes`` for uuid[]. Other types get the placeholder text, which
    their schema rejects, so Debezium writes null; so does cdc.
    """
    raw = modes.unavailable_placeholder
    text = raw.decode("utf-8", errors="replace")  # new String(bytes)
    if type_info is not None and type_info.kind == "d":
        key = ""  # Debezium picks the special placeholders by the column's own type name
    if key == "hstore":
        return {text: text} if schema.type == "map" else _jackson_map({text: text})
    items = schema.items
    if key in _TEXT_ARRAYS:
        return [text]
    if key == "_bytea":
        return [sem.base64_str(raw)] if items is not None and items.type == "bytes" else None
    if key in _INT_ARRAYS:
        if items is None or items.type not in ("int32", "int64") or items.name == sem.CONNECT_DATE:
            return None  # date[] in connect mode: its logical Date rejects an integer
        return [b - 256 if b > 127 else b for b in raw]  # Java's signed bytes
    if key == "_uuid":
        return [str(uuid_module.UUID(bytes=hashlib.md5(raw).digest(), version=3))]
    if key == "bytea" or unknown:
        # bytea and unknown types (include.unknown.datatypes): convertBinary per binary.handling.mode;
        # base64 modes see the marker object, not bytes, and give null.
        mode = modes.binary_handling
        return sem.base64_str(raw) if mode == "bytes" else text if mode == "hex" else None
    if schema.type == "string":
        return text
    return None


# --------------------------------------------------------------------------- registry

_Builder = Callable[[_Ctx], _Built]

#: Type name → schema/converter builder. Types outside this table (and the extension types
#: below) are unknown: left out of events, or bytes under include.unknown.datatypes.
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
    "bytea": _build_bytea,
    "bit": _build_bits,
    "varbit": _build_bits,
    "date": _build_date,
    "time": _build_time,
    "timetz": _build_timetz,
    "timestamp": _build_timestamp,
    "timestamptz": _build_timestamptz,
    "interval": _build_interval,
    "point": _build_point,
}

#: Extension types, which have no fixed OID: recognised by ``pg_type.typname`` in any schema.
_EXTENSION_BUILDERS: dict[str, _Builder] = {
    "citext": _plain("string"),
    "isbn": _plain("string"),  # the isn extension's isbn (TypeRegistry.isbn(); its siblings are unknown)
    "ltree": _named_string(sem.LTREE),
    "hstore": _build_hstore,
    "geometry": _build_postgis(GEOMETRY),
    "geography": _build_postgis(GEOGRAPHY),
}

#: Element types whose arrays Debezium 2.7 never maps (its schema builder returns null for
#: money[], name[], interval[], varbit[], xml[], point[], refcursor[]), whatever
#: include.unknown.datatypes says. (bit[] gets bit's scalar schema and null values: _build_bit_array.)
_UNMAPPED_ARRAY_ELEMENTS = frozenset({"money", "name", "interval", "varbit", "xml", "point", "refcursor"})


#: Mapped element types whose arrays have a required element schema in Debezium (besides enums).
_REQUIRED_ARRAY_ELEMENTS = frozenset({"isbn"})


def supported_type_names() -> frozenset[str]:
    """The type names ``column_for`` maps (built-in and extension types; enums, domains and arrays of these too)."""
    return frozenset(_BUILDERS) | frozenset(_EXTENSION_BUILDERS)


def _bare_type_name(type_name: str | None) -> str | None:
    """``pg_type.typname`` from a ``format_type`` text: no schema, no modifier, no quotes (``public.geometry(Point)``)."""
    if type_name is None:
        return None
    return type_name.partition("(")[0].rsplit(".", 1)[-1].strip('"')


def _scalar_builder(oid: int | None, name: str | None, kind: str | None, labels: tuple[str, ...]) -> _Builder | None:
    """The builder of a non-array type: built-in by OID, enum by kind, extension by name; None if unknown."""
    builtin = BUILTIN_TYPES.get(oid) if oid is not None else None
    if builtin is not None:
        return _BUILDERS[builtin]
    if kind == "e":
        return _enum_builder(labels)
    if kind in (None, "b") and name in _EXTENSION_BUILDERS:
        return _EXTENSION_BUILDERS[name]
    return None


def _resolve(
    ctx: _Ctx, type_oid: int, type_name: str | None, info: TypeInfo | None
) -> tuple[str, _Built | None, bool]:
    """(mapping key, built schema and converter or None if unknown, whether include.unknown.datatypes may apply)."""
    if info is not None:
        root_oid = info.base_oid if info.base_oid is not None else type_oid
        root_name = info.base_name or info.name
        root_kind = info.base_kind or info.kind
        element_oid, element_name, element_kind = info.element_oid, info.element_name, info.element_kind
        delimiter, labels = info.delimiter, info.labels
    else:
        root_oid, root_name, root_kind = type_oid, BUILTIN_TYPES.get(type_oid) or _bare_type_name(type_name), None
        element_oid = element_name = None
        element_kind, delimiter, labels = "b", ",", ()
        if type_oid in BUILTIN_ARRAY_TYPES:
            root_name, element_oid = BUILTIN_ARRAY_TYPES[type_oid]
            element_name = BUILTIN_TYPES.get(element_oid)
        elif root_name and root_name.startswith("_") and root_name[1:] in _EXTENSION_BUILDERS:
            element_name = root_name[1:]
    key = BUILTIN_TYPES.get(root_oid) or (BUILTIN_ARRAY_TYPES.get(root_oid, (None,))[0]) or root_name or str(type_oid)
    if element_oid is None and element_name is None:
        builder = _scalar_builder(root_oid, root_name, root_kind, labels)
        return key, (None if builder is None else builder(ctx)), True
    # An array: Connect array of the element's mapping (element schemas are optional, except
    # Debezium's enum element schema, which is not).
    element_key = (BUILTIN_TYPES.get(element_oid) if element_oid is not None else None) or element_name
    if element_key in _UNMAPPED_ARRAY_ELEMENTS:
        return key, None, False
    if element_key == "bit":
        return key, _build_bit_array(ctx), False
    # Debezium's element schemas are optional for the array types it lists one by one; enum and
    # isbn arrays take the element's own (required) schema builder (arrayElementSchema).
    element_ctx = ctx._replace(optional=element_kind != "e" and element_key not in _REQUIRED_ARRAY_ELEMENTS)
    builder = _scalar_builder(element_oid, element_name, element_kind, labels)
    if element_key == "time":
        builder = _build_time_array_element
    if builder is None:
        # Unknown element types (domains too, as in Debezium): an array of the elements' text
        # bytes under include.unknown.datatypes, with Debezium's non-optional element schema.
        if not ctx.modes.include_unknown_datatypes:
            return key, None, False
        element = _build_unknown_bytes(ctx._replace(optional=False), element_key)
    else:
        element = builder(element_ctx)
    return key, _build_array(ctx, element, delimiter), False


def column_for(
    name: str,
    type_oid: int,
    type_modifier: int,
    optional: bool,
    modes: TypeModes,
    position: int = 0,
    type_name: str | None = None,
    type_info: TypeInfo | None = None,
    default_expression: str | None = None,
    relation: bool = False,
) -> Column:
    """The Column for a PostgreSQL column: its Debezium schema (optional as nullable) and its text converter.

    ``type_oid`` (``atttypid``) selects the mapping of built-in types and their arrays;
    ``type_info`` (from the catalog) resolves domains, enums, arrays and extension types; without
    it, extension types are recognised by ``type_name`` alone. A domain maps as its base type,
    with the nearest domain's length/scale when the column has none. ``default_expression``
    (``pg_get_expr`` of the column default) becomes the schema's ``default`` where Debezium
    derives one.

    A column of an unknown type gets ``schema=None``: it is left out of events (Debezium logs a
    warning and skips it), unless ``include.unknown.datatypes`` asks for its bytes.

    ``type_name``, ``length`` and ``scale`` are what Debezium reports (``cdc_postgres.source_metadata``),
    read from the catalog, or (``relation``) from a pgoutput Relation message.
    """
    typmod = type_modifier
    if typmod < 0 and type_info is not None:
        typmod = type_info.domain_typmod
    ctx = _Ctx(name, type_name or (type_info.name if type_info else None) or str(type_oid), typmod, optional, modes)
    key, built, unknown_allowed = _resolve(ctx, type_oid, type_name, type_info)
    schema: Schema | None
    unknown = built is None
    if built is not None:
        schema, convert = built
        default = _schema_default(key, type_info, default_expression, typmod, modes, convert)
        if default is not None:
            schema = _with_default(schema, default)
    elif unknown_allowed and modes.include_unknown_datatypes:
        schema, convert = _build_unknown_bytes(ctx, key)
    else:
        schema, convert = None, _omitted
    length, scale = _source_length_scale(type_oid, type_modifier, type_name, type_info, relation)
    # For the core's row functions (cdc_core.rows): the value of an unchanged TOASTed column, kept
    # with the schema it was made for (a custom converter may change the schema).
    extra = {} if schema is None else {
        "unavailable": (schema.type, schema.name, _unavailable_value(key, type_info, schema, modes, unknown))}
    return Column(
        name=name,
        type_name=source_type_name(type_name or key, default_expression, relation),
        schema=schema,  # type: ignore[arg-type]  # None: left out of events
        convert=convert,
        position=position,
        optional=optional,
        length=length,
        scale=scale,
        default_expression=default_expression,
        type_oid=type_oid,
        type_modifier=type_modifier,
        extra=extra,
    )


def _source_length_scale(type_oid: int, typmod: int, type_name: str | None, info: TypeInfo | None,
                         relation: bool) -> tuple[int, int | None]:
    """The column's length and scale as Debezium reports them: pgjdbc sizes arrays by their element, domains by their base."""
    domain_typmod = None
    if info is not None:
        root = info.base_name or info.name
        element = info.element_name
        if info.kind == "d":
            domain_typmod = info.domain_typmod
    else:
        root = BUILTIN_TYPES.get(type_oid) or _bare_type_name(type_name) or ""
        element = None
        if type_oid in BUILTIN_ARRAY_TYPES:
            root, element_oid = BUILTIN_ARRAY_TYPES[type_oid]
            element = BUILTIN_TYPES.get(element_oid, root[1:])
    return source_length_scale(element or root, typmod, domain_typmod, element is not None, relation)


def convert_value(column: Column, raw: Any) -> Any:
    """``column.convert(raw)``, with any failure re-raised as a ValueConversionError naming the column."""
    try:
        return column.convert(raw)
    except ValueConversionError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise ValueConversionError(column.name, column.type_name, raw, str(e)) from e
