"""Debezium semantic types and Kafka Connect logical types: their schemas and JSON-ready value encoders.

Everything here is database-independent and shared by every connector. Schemas are built
exactly as Debezium's and Kafka's ``SchemaBuilder`` calls build them (Connect type, ``name``,
``version``, ``doc``, ``parameters`` in insertion order), so ``Schema.to_json()`` renders them
byte for byte like Kafka's JsonConverter.

Value encoders return the JSON value JsonConverter writes for the logical value: ints for the
epoch-based temporal types, base64 strings for ``bytes`` (Jackson's default base64 variant,
with padding), ISO-8601 strings for the zoned types, and the strings ``"NaN"``, ``"Infinity"``
and ``"-Infinity"`` for non-finite floats (Jackson quotes non-numeric numbers by default).
"""

from __future__ import annotations

import binascii
import math
import struct
from collections.abc import Callable, Iterable
from datetime import date, datetime, time, timedelta, timezone
from decimal import MAX_PREC, ROUND_DOWN, ROUND_HALF_UP, Context, Decimal
from functools import lru_cache
from typing import Any

from cdc_core.errors import CdcError
from cdc_core.schema import Field, Schema, primitive

# --------------------------------------------------------------------------- names

DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
NANO_TIME = "io.debezium.time.NanoTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
MICRO_DURATION = "io.debezium.time.MicroDuration"
INTERVAL = "io.debezium.time.Interval"
YEAR = "io.debezium.time.Year"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
JSON = "io.debezium.data.Json"
UUID = "io.debezium.data.Uuid"
XML = "io.debezium.data.Xml"
BITS = "io.debezium.data.Bits"
ENUM = "io.debezium.data.Enum"
ENUM_SET = "io.debezium.data.EnumSet"
LTREE = "io.debezium.data.Ltree"

#: Connect type and schema version of every primitive semantic/logical type. Every Debezium
#: ``io.debezium.*`` builder and every Kafka logical-type builder sets ``version(1)``.
#: (Kafka's ``Time`` is INT32 milliseconds; the Debezium PostgreSQL doc's "INT64" is wrong.)
SEMANTIC_TYPES: dict[str, tuple[str, int]] = {
    DATE: ("int32", 1),
    TIME: ("int32", 1),
    MICRO_TIME: ("int64", 1),
    NANO_TIME: ("int64", 1),
    TIMESTAMP: ("int64", 1),
    MICRO_TIMESTAMP: ("int64", 1),
    NANO_TIMESTAMP: ("int64", 1),
    ZONED_TIMESTAMP: ("string", 1),
    ZONED_TIME: ("string", 1),
    MICRO_DURATION: ("int64", 1),
    INTERVAL: ("string", 1),
    YEAR: ("int32", 1),
    CONNECT_DATE: ("int32", 1),
    CONNECT_TIME: ("int32", 1),
    CONNECT_TIMESTAMP: ("int64", 1),
    CONNECT_DECIMAL: ("bytes", 1),
    JSON: ("string", 1),
    UUID: ("string", 1),
    XML: ("string", 1),
    BITS: ("bytes", 1),
    ENUM: ("string", 1),
    ENUM_SET: ("string", 1),
    LTREE: ("string", 1),
}

#: Kafka's Decimal scale parameter, and the precision parameter Debezium adds for Avro.
SCALE_PARAMETER = "scale"
PRECISION_PARAMETER = "connect.decimal.precision"


class ValueConversionError(CdcError, ValueError):
    """A column value cannot be converted; names the column, its type and the offending value."""

    def __init__(self, column: str, type_name: str, value: Any, reason: str = "") -> None:
        self.column = column
        self.type_name = type_name
        self.value = value
        self.reason = reason
        detail = f": {reason}" if reason else ""
        super().__init__(f"cannot convert value {value!r} of column {column!r} (type {type_name}){detail}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its parts (a snapshot worker's conversion error reaches the engine so)."""
        return type(self), (self.column, self.type_name, self.value, self.reason)


# --------------------------------------------------------------------------- schemas


@lru_cache(maxsize=None)
def _cached_schema(name: str, optional: bool, params: tuple[tuple[str, str], ...] | None) -> Schema:
    type_, version = SEMANTIC_TYPES[name]
    return primitive(type_, optional, name=name, version=version, parameters=dict(params) if params is not None else None)


def semantic_schema(name: str, *, optional: bool = False, parameters: dict[str, str] | None = None) -> Schema:
    """The schema of the primitive semantic type ``name`` (see ``SEMANTIC_TYPES``); shared per arguments."""
    if name == VARIABLE_SCALE_DECIMAL:
        return variable_scale_decimal_schema(optional=optional)
    if name not in SEMANTIC_TYPES:
        raise KeyError(f"unknown semantic type {name!r}")
    params = tuple(parameters.items()) if parameters is not None else None
    return _cached_schema(name, optional, params)


def decimal_schema(scale: int, precision: int | None = None, *, optional: bool = False) -> Schema:
    """Kafka's Decimal: bytes, ``scale`` parameter, plus Debezium's ``connect.decimal.precision`` if given."""
    params = {SCALE_PARAMETER: str(scale)}
    if precision is not None:
        params[PRECISION_PARAMETER] = str(precision)
    return semantic_schema(CONNECT_DECIMAL, optional=optional, parameters=params)


def variable_scale_decimal_schema(*, optional: bool = False) -> Schema:
    """Debezium's VariableScaleDecimal: struct {scale: int32, value: bytes}, version 1, with its doc."""
    return _variable_scale_decimal_schema(optional)


@lru_cache(maxsize=None)
def _variable_scale_decimal_schema(optional: bool) -> Schema:
    return Schema(
        "struct",
        optional=optional,
        name=VARIABLE_SCALE_DECIMAL,
        version=1,
        doc="Variable scaled decimal",
        fields=(Field("scale", Schema("int32")), Field("value", Schema("bytes"))),
    )


def bits_schema(length: int, *, optional: bool = False) -> Schema:
    """Debezium's Bits: bytes with parameter ``length`` (the number of bits)."""
    return semantic_schema(BITS, optional=optional, parameters={"length": str(length)})


def enum_schema(allowed: Iterable[str], *, optional: bool = False) -> Schema:
    """Debezium's Enum: string with parameter ``allowed`` (the labels joined by commas)."""
    return semantic_schema(ENUM, optional=optional, parameters={"allowed": ",".join(allowed)})


def enum_set_schema(allowed: Iterable[str], *, optional: bool = False) -> Schema:
    """Debezium's EnumSet: string with parameter ``allowed`` (the labels joined by commas)."""
    return semantic_schema(ENUM_SET, optional=optional, parameters={"allowed": ",".join(allowed)})


# --------------------------------------------------------------------------- binary

_b2a_base64 = binascii.b2a_base64


def base64_str(data: bytes) -> str:
    """Standard base64 with padding: how JsonConverter writes Connect ``bytes``."""
    return _b2a_base64(data, newline=False).decode("ascii")


def _base64_url(data: bytes) -> str:
    # java.util.Base64.getUrlEncoder(): URL-safe alphabet, with padding.
    return _b2a_base64(data, newline=False).decode("ascii").replace("+", "-").replace("/", "_")


def _hex(data: bytes) -> str:
    # io.debezium.util.HexConverter: lower-case digits.
    return data.hex()


#: ``binary.handling.mode`` → (Connect schema type, encoder from raw bytes to the JSON value).
BINARY_HANDLING: dict[str, tuple[str, Callable[[bytes], str]]] = {
    "bytes": ("bytes", base64_str),
    "base64": ("string", base64_str),
    "base64-url-safe": ("string", _base64_url),
    "hex": ("string", _hex),
}


def _binary_mode(mode: str) -> tuple[str, Callable[[bytes], str]]:
    try:
        return BINARY_HANDLING[mode]
    except KeyError:
        raise ValueError(f"unknown binary.handling.mode {mode!r}; expected one of {', '.join(BINARY_HANDLING)}") from None


def binary_schema(mode: str, *, optional: bool = False) -> Schema:
    """The schema of a binary column under ``binary.handling.mode`` (``bytes`` or ``string``)."""
    return Schema(_binary_mode(mode)[0], optional=optional)


def bytes_encoder(mode: str) -> Callable[[bytes], str]:
    """The encoder for ``binary.handling.mode``; pick it once per column."""
    return _binary_mode(mode)[1]


def encode_bytes(data: bytes, mode: str) -> str:
    """Encode raw bytes as ``binary.handling.mode`` says (bytes and base64 give the same JSON string)."""
    return _binary_mode(mode)[1](data)


# --------------------------------------------------------------------------- decimals


def unscaled_to_base64(unscaled: int) -> str:
    """Base64 of ``BigInteger.toByteArray()``: minimal big-endian two's complement (0 → "AA==", -1 → "/w==")."""
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return _b2a_base64(unscaled.to_bytes(length, "big", signed=True), newline=False).decode("ascii")


def unscaled_value(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (like ``setScale`` without rounding; ValueError if inexact)."""
    if not value.is_finite():
        raise ValueError(f"special value {value} has no unscaled representation")
    if scale >= 0:
        # The exact fraction n/d (d a divisor of a power of ten): 4x faster than the digit tuple.
        n, d = value.as_integer_ratio()
        unscaled, rest = divmod(n * 10**scale, d)
        if rest:
            raise ValueError(f"{value} does not fit scale {scale} without rounding")
        return unscaled
    sign, digits, exponent = value.as_tuple()
    # int() of a str refuses more than 4300 digits; Decimal -> int has no such limit.
    n = (int("".join(map(str, digits))) if len(digits) < 4000 else int(Decimal((0, digits, 0)))) if digits else 0
    shift = exponent + scale  # type: ignore[operator]
    if shift >= 0:
        n *= 10**shift
    else:
        n, rest = divmod(n, 10**-shift)
        if rest:
            raise ValueError(f"{value} does not fit scale {scale} without rounding")
    return -n if sign else n


def encode_decimal(value: Decimal, scale: int) -> str:
    """Kafka Decimal's JSON value: base64 of the unscaled value at ``scale`` (two's complement, big-endian)."""
    return unscaled_to_base64(unscaled_value(value, scale))


def decimal_encoder(scale: int) -> Callable[[Any], str]:
    """``encode_decimal(Decimal(v), scale)`` in one call, for a column's ``scale`` >= 0: a hot column's converter."""
    factor = 10**scale

    def encode(value: Any) -> str:
        if value.__class__ is not Decimal:
            value = Decimal(value)
        try:
            n, d = value.as_integer_ratio()
        except (ValueError, OverflowError):
            raise ValueError(f"special value {value} has no unscaled representation") from None
        # Floor division and a product instead of divmod (no tuple), bit_length on the sign's branch: ~10% less.
        n *= factor
        unscaled = n // d
        if unscaled * d != n:
            raise ValueError(f"{value} does not fit scale {scale} without rounding")
        length = (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
        return _b2a_base64(unscaled.to_bytes(length, "big", signed=True), newline=False).decode()

    return encode


#: A context that never rounds (Decimal.normalize rounds to the context's precision, 28 digits by default).
_EXACT = Context(prec=MAX_PREC)


def variable_scale_decimal(value: Decimal) -> dict[str, Any]:
    """VariableScaleDecimal's JSON value: trailing zeros stripped, scale never negative (as Debezium does)."""
    if not value.is_finite():
        raise ValueError(f"special value {value} cannot be a VariableScaleDecimal")
    sign, digits, exponent = value.normalize(_EXACT).as_tuple()  # no rounding to the 28-digit default context
    # int() of a str refuses more than 4300 digits; Decimal -> int has no such limit.
    n = (int("".join(map(str, digits))) if len(digits) < 4000 else int(Decimal((0, digits, 0)))) if digits else 0
    if exponent > 0:  # type: ignore[operator]
        n *= 10**exponent  # type: ignore[operator]
        exponent = 0
    scale = -exponent  # type: ignore[operator]
    if n == 0:
        scale = 0
    return {"scale": scale, "value": unscaled_to_base64(-n if sign else n)}


def java_decimal_string(value: Decimal) -> str:
    """``BigDecimal.toString()``: plain unless the adjusted exponent is below -6 (``0E-8``, ``1.0E-7``)."""
    if not value.is_finite():
        raise ValueError(f"special value {value} has no BigDecimal form")
    sign, digits, exponent = value.as_tuple()
    coeff = "".join(map(str, digits)) or "0"
    coeff = coeff.lstrip("0") or "0"
    scale = -exponent  # type: ignore[operator]
    adjusted = -scale + len(coeff) - 1
    neg = "-" if sign and coeff != "0" else ""
    if scale == 0:
        return neg + coeff
    if scale > 0 and adjusted >= -6:
        if len(coeff) > scale:
            return f"{neg}{coeff[:-scale]}.{coeff[-scale:]}"
        return f"{neg}0.{'0' * (scale - len(coeff))}{coeff}"
    out = neg + coeff[0]
    if len(coeff) > 1:
        out += "." + coeff[1:]
    if adjusted != 0:
        out += "E" + ("+" if adjusted > 0 else "") + str(adjusted)
    return out


def java_plain_string(value: Decimal) -> str:
    """``BigDecimal.toPlainString()``: never an exponent."""
    return format(value, "f")


# --------------------------------------------------------------------------- floats

#: Jackson writes non-finite doubles/floats as these quoted strings (QUOTE_NON_NUMERIC_NUMBERS).
FLOAT_SPECIALS: dict[str, str] = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}

_F32 = struct.Struct("<f")


def json_float(value: float) -> float | str:
    """A float64's JSON value: the float itself, or "NaN"/"Infinity"/"-Infinity"."""
    if math.isfinite(value):
        return value
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


#: Above this magnitude a double rounds to float32 infinity (FLT_MAX plus half an ulp).
_F32_OVERFLOW = 3.4028235677973366e38
_F32_MAX = 3.4028234663852886e38


def to_float32(value: float) -> float:
    """Round a Python float to the nearest IEEE float32 (as ``Float.valueOf`` does), returned as a Python float."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        # struct refuses values between FLT_MAX and the rounding boundary; they round to FLT_MAX.
        magnitude = _F32_MAX if abs(value) < _F32_OVERFLOW else math.inf
        return math.copysign(magnitude, value)


def json_float32(value: float) -> float | str:
    """A float32's JSON value: the shortest decimal that round-trips the float32, as a Python float.

    JsonConverter writes a FLOAT32 with ``Float.toString``-style digits (e.g. ``3.14``), not the
    float's exact double expansion; returning the shortest round-tripping decimal makes orjson
    print the same number. (JDK 19+ ``Float.toString`` is exactly the shortest; older JDKs
    occasionally print one digit more.)
    """
    f = to_float32(value)
    if not math.isfinite(f):
        return json_float(f)
    if f == 0.0:
        return f
    for digits in range(1, 10):
        candidate = float(f"{f:.{digits}g}")
        if to_float32(candidate) == f:
            return candidate
    return f


def java_double_string(value: float) -> str:
    """``Double.toString(double)``: plain within [1e-3, 1e7), else ``d.dddE±n``; at least one fraction digit."""
    if not math.isfinite(value):
        return json_float(value)  # type: ignore[return-value]
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    coeff = "".join(map(str, digits)).rstrip("0") or "0"
    point = len("".join(map(str, digits))) + exponent  # type: ignore[operator]  # digits before the point
    neg = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{neg}0.{'0' * -point}{coeff}"
        whole = coeff[:point].ljust(point, "0")
        frac = coeff[point:] or "0"
        return f"{neg}{whole}.{frac}"
    return f"{neg}{coeff[0]}.{coeff[1:] or '0'}E{point - 1}"


# --------------------------------------------------------------------------- temporal

EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)
MICROS_PER_DAY = 86_400_000_000


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date; year 0 is 1 BC, -1 is 2 BC (like java.time)."""
    year -= month <= 2
    era = year // 400  # floor division: Hinnant's "(y >= 0 ? y : y - 399) / 400" in C
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) ``days`` after 1970-01-01 (inverse of ``days_from_civil``)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def epoch_day(value: date) -> int:
    """``io.debezium.time.Date`` / Kafka ``Date``: days since the epoch."""
    return value.toordinal() - EPOCH_ORDINAL


def micros_of_day(value: time) -> int:
    """Microseconds past midnight of a ``time`` (its tzinfo is ignored)."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def millis_of_day(value: time) -> int:
    """``io.debezium.time.Time`` / Kafka ``Time``: milliseconds past midnight (truncated)."""
    return micros_of_day(value) // 1000


def nanos_of_day(value: time) -> int:
    """``io.debezium.time.NanoTime``: nanoseconds past midnight."""
    return micros_of_day(value) * 1000


def epoch_micros(value: datetime) -> int:
    """``MicroTimestamp``: microseconds since the epoch; a naive datetime is taken as UTC."""
    return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // _MICRO


def epoch_millis(value: datetime) -> int:
    """``Timestamp`` / Kafka ``Timestamp``: milliseconds since the epoch, floored like ``Instant.toEpochMilli``."""
    return epoch_micros(value) // 1000


def epoch_nanos(value: datetime) -> int:
    """``NanoTimestamp``: nanoseconds since the epoch; a naive datetime is taken as UTC."""
    return epoch_micros(value) * 1000


def epoch_encoder(per_second: int) -> Callable[[Any], int]:
    """``epoch_millis``/``_micros``/``_nanos`` (``per_second`` 1,000, 1,000,000 or 1,000,000,000) in one call, from a
    datetime or the ISO text ``datetime.fromisoformat`` reads: a hot column's converter."""
    times = per_second // 1_000_000
    unit = _MICRO if times else timedelta(microseconds=1_000_000 // per_second)

    def since_epoch(value: Any) -> int:
        if not isinstance(value, datetime):
            value = datetime.fromisoformat(str(value))
        return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // unit

    if times <= 1:
        return since_epoch

    def scaled(value: Any) -> int:
        if not isinstance(value, datetime):
            value = datetime.fromisoformat(str(value))
        return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // unit * times

    return scaled


def iso_year(year: int) -> str:
    """A year as ``ISO_LOCAL_DATE`` prints it: 4 digits zero-padded, ``+`` above 9999, ``-0043`` for 44 BC."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    if year > 9999:
        return f"+{year}"
    return f"-{-year:04d}"


def _iso_time(seconds_of_day: int, nanos: int) -> str:
    hh, rest = divmod(seconds_of_day, 3600)
    mm, ss = divmod(rest, 60)
    if nanos:
        return f"{hh:02d}:{mm:02d}:{ss:02d}." + f"{nanos:09d}".rstrip("0")
    return f"{hh:02d}:{mm:02d}:{ss:02d}"


def format_zoned_timestamp(epoch_seconds: int, nanos: int = 0) -> str:
    """``ZonedTimestamp`` in UTC as ``ISO_OFFSET_DATE_TIME`` prints it.

    Seconds always appear; the fraction is omitted when zero and otherwise has its trailing
    zeros stripped (``2018-06-20T15:13:16.9451Z``, ``2018-06-20T15:13:00Z``); the offset is ``Z``.
    """
    days, sod = divmod(epoch_seconds, 86400)
    y, m, d = civil_from_days(days)
    return f"{iso_year(y)}-{m:02d}-{d:02d}T{_iso_time(sod, nanos)}Z"


def format_zoned_timestamp_micros(epoch_us: int) -> str:
    """``ZonedTimestamp`` in UTC from microseconds since the epoch."""
    seconds, micros = divmod(epoch_us, 1_000_000)
    return format_zoned_timestamp(seconds, micros * 1000)


def zoned_timestamp(value: datetime) -> str:
    """``ZonedTimestamp`` of a datetime (a naive one is taken as UTC), normalised to UTC."""
    return format_zoned_timestamp_micros(epoch_micros(value))


def format_zoned_time(nanos_of_day_utc: int) -> str:
    """``ZonedTime`` in UTC as ``ISO_OFFSET_TIME`` prints it, e.g. ``13:13:16.945104Z``."""
    seconds, nanos = divmod(nanos_of_day_utc, 1_000_000_000)
    return _iso_time(seconds, nanos) + "Z"


def zoned_time(value: time) -> str:
    """``ZonedTime`` of a time (an aware one is shifted to UTC, wrapping around midnight)."""
    micros = micros_of_day(value)
    offset = value.utcoffset()
    if offset:
        micros = (micros - offset // _MICRO) % MICROS_PER_DAY
    return format_zoned_time(micros * 1000)


#: ``io.debezium.time.MicroDuration.DAYS_PER_MONTH_AVG``.
DAYS_PER_MONTH_AVG = 365.25 / 12.0


def micro_duration(years: int, months: int, days: int, hours: int, minutes: int, seconds: float) -> int:
    """``MicroDuration.durationMicros``: approximate µs, 365.25/12 days a month, in Java's double arithmetic."""
    number_of_days = (years * 12 + months) * DAYS_PER_MONTH_AVG + days
    number_of_seconds = ((number_of_days * 24 + hours) * 60 + minutes) * 60 + seconds
    micros = number_of_seconds * 1e6
    # Java's (long) cast truncates toward zero and saturates at the long range (178000000 years).
    if micros >= 9.223372036854775807e18:
        return 2**63 - 1
    if micros <= -9.223372036854775808e18:
        return -(2**63)
    return int(micros)


_NANO_QUANTUM = Decimal("0.000000001")


def interval_string(years: int, months: int, days: int, hours: int, minutes: int, seconds: float) -> str:
    """``io.debezium.time.Interval``: ``P<y>Y<m>M<d>DT<h>H<m>M<s>S``, e.g. ``P1Y2M3DT4H5M6.789S``.

    Debezium 2.7's PostgresValueConverter passes ``BigDecimal.valueOf(double)`` (the double's
    shortest decimal text, so 6.789 stays 6.789), cut to 9 decimals with RoundingMode.DOWN, then
    ``stripTrailingZeros().toPlainString()``.
    """
    sec = Decimal(repr(seconds))
    if sec.as_tuple().exponent < -9:  # type: ignore[operator]
        sec = sec.quantize(_NANO_QUANTUM, rounding=ROUND_DOWN)
    sec_text = "0" if sec.is_zero() else format(sec.normalize(), "f")
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{sec_text}S"


#: Enough digits for any BigDecimal.setScale cdc does (the default context keeps only 28).
_WIDE = Context(prec=1000)


def round_half_up(value: Decimal, scale: int) -> Decimal:
    """``setScale(scale, RoundingMode.HALF_UP)``, exact at any number of digits."""
    return value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_WIDE)
