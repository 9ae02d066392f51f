"""A column's DEFAULT as a value: Debezium's BinlogDefaultValueConverter, on the model's default expression.

The expression is what the DDL parser recorded (``cdc_mysql.ddl.columns.default_of``). The result
is the column's *intermediate* value (what its converter takes, see ``cdc_mysql.types``), or None
where Debezium's schema has no default: zero dates and the epoch stand-in of CURRENT_TIMESTAMP in
a nullable TIMESTAMP column, unparseable values.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_mysql.model import SPATIAL_TYPES, ColumnDef

_INTRODUCER = re.compile(r"^_[A-Za-z0-9]+'(.*)'$", re.S)
_ZERO_DATE = re.compile(r"\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}")
_ZERO_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}) (00:00:00(\.\d{1,6})?)")
_TIME = re.compile(r"(-?[0-9]*):([0-9]*)(:([0-9]*))?(\.([0-9]*))?")
_EPOCH_TIMESTAMP = "1970-01-01 00:00:00"
_NUMBERS = frozenset({"BIT", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR", "FLOAT", "REAL", "DOUBLE",
                      "DECIMAL"})
_INTEGERS = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"})
_TRIMMED = _NUMBERS | {"DATE", "DATETIME", "TIMESTAMP", "TIME", "BOOLEAN"}
_BINARY = frozenset({"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"})


def default_raw(col: ColumnDef) -> Any:
    """The intermediate value of ``col``'s DEFAULT, or None if Debezium's schema gets no default."""
    if not col.has_default or col.default is None:
        return None
    try:
        return _convert(col, col.default)
    except (ValueError, InvalidOperation, ArithmeticError, IndexError):
        return None


def _convert(col: ColumnDef, value: str) -> Any:
    from cdc_mysql.types import UnpaddedMicros, parse_date, parse_datetime

    t = col.type_name
    if t in _TRIMMED:
        value = value.strip()
    m = _INTRODUCER.match(value)
    if m:
        value = m.group(1)
    if t in _NUMBERS and value.lower() in ("true", "false"):
        return (Decimal(1) if value.lower() == "true" else Decimal(0)) if t == "DECIMAL" else int(value.lower() == "true")
    if t == "DATE":
        if _ZERO_DATE.fullmatch(value) or _ZERO_TIMESTAMP.fullmatch(value) or value == "0":
            return None if col.optional else 0
        return parse_date(value[:10], col.optional)
    if t == "DATETIME":
        if _ZERO_TIMESTAMP.fullmatch(value) or value == "0":
            return None if col.optional else 0
        return parse_datetime(value, col.optional)
    if t == "TIMESTAMP":
        if _ZERO_TIMESTAMP.fullmatch(value) or value in ("0", _EPOCH_TIMESTAMP):
            return None if col.optional else UnpaddedMicros(0)  # Timestamp.from(Instant.EPOCH)
        return parse_datetime(value, col.optional)
    if t == "TIME":
        return _time_micros(value)
    if t == "BOOLEAN":
        try:
            return int(int(value) != 0)
        except ValueError:
            return int(value.lower() == "true")
    if t == "BIT":
        return _bits(col, value)
    if t == "DECIMAL":
        return Decimal(value)
    if t in ("FLOAT", "REAL", "DOUBLE"):
        return float(value)
    if t == "YEAR":
        return int(Decimal(value))
    if t in _INTEGERS:
        return _java_round(float(value))
    if t in _BINARY or t in SPATIAL_TYPES:
        return value.encode("utf-8")
    return value


def _java_round(x: float) -> int:
    """``Math.round(Double.parseDouble(text))``: how BinlogValueConverters reads an integer column's DEFAULT.

    Through a double, so digits past 2**53 are lost and values beyond a long clamp to its range
    (a BIGINT UNSIGNED DEFAULT 18446744073709551615 is 9223372036854775807).
    """
    if x != x:
        return 0
    if x >= 2.0 ** 63:
        return 2 ** 63 - 1
    if x <= -(2.0 ** 63):
        return -(2 ** 63)
    return math.floor(x + 0.5)


def _time_micros(value: str) -> int:
    """BinlogValueConverters.stringToDuration: ``[-]H:MM[:SS[.ffffff]]`` in microseconds."""
    m = _TIME.fullmatch(value)
    if m is None:
        raise ValueError(f"unexpected format for TIME: {value!r}")
    hours, minutes = int(m.group(1)), int(m.group(2))
    seconds = int(m.group(4)) if m.group(4) is not None else 0
    micros = int((m.group(6) or "").ljust(6, "0")[:6] or "0") if m.group(4) is not None else 0
    magnitude = ((abs(hours) * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    return -magnitude if value.startswith("-") else magnitude


def _bits(col: ColumnDef, value: str) -> bytes:
    """A BIT default (binary digits, as ``b'...'`` loses its quotes) as big-endian bytes."""
    nbytes = max(1, ((col.length or 1) + 7) // 8)
    if (col.length or 1) <= 1:
        return (1 if int(value) != 0 else 0).to_bytes(nbytes, "big")
    n = int(value, 2)
    return n.to_bytes(max(nbytes, (n.bit_length() + 7) // 8), "big")[-nbytes:]

