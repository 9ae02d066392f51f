"""TIME and DATETIME2 values from Microsoft's ODBC driver with SQL Server's 100 ns kept (pyodbc keeps microseconds).

pyodbc turns the driver's SQL_SS_TIME2_STRUCT and SQL_TIMESTAMP_STRUCT into ``datetime.time``/``datetime``,
dropping the seventh fractional digit of TIME(7)/DATETIME2(7) (mkleehammer/pyodbc#235). Debezium 2.7.4 reads
them through the JDBC driver with all of it: AbstractSqlServerDatatypesTest expects NanoTime
37_425_678_901_200 for TIME(7) '10:23:45.6789012'. So the connection's output converters (cdc_sqlserver.odbc)
take the driver's raw bytes (SQL_C_BINARY) and build a ``time``/``datetime`` that also carries the
nanoseconds below the microsecond (``sub_micro_nanos``): every other use (parameters, comparisons, the
source's ts_ms) sees the same value pyodbc gives, and the NanoTime/NanoTimestamp converters add the rest
(cdc_sqlserver.types).

SQL_C_BINARY layouts (Microsoft's "Data Type Support for ODBC Date/Time Improvements"; pyodbc#235, #448):
TIME: SQL_SS_TIME2_STRUCT (12 bytes); DATETIME2: SQL_TIMESTAMP_STRUCT (16 bytes); DATETIME: its TDS
form, days since 1900-01-01 and 1/300 s ticks (8 bytes); SMALLDATETIME: days since 1900-01-01 and
minutes (4 bytes).
"""

from __future__ import annotations

import struct
from datetime import datetime, time, timedelta
from typing import Any

#: SQL_SS_TIME2_STRUCT: hour, minute, second (SQLUSMALLINT), 2 bytes of alignment, fraction (ns, SQLUINTEGER).
TIME2 = struct.Struct("<3H2xI")
#: SQL_TIMESTAMP_STRUCT: year (SQLSMALLINT), month, day, hour, minute, second (SQLUSMALLINT), fraction (ns).
TIMESTAMP = struct.Struct("<h5HI")
#: DATETIME as TDS sends it: days since 1900-01-01 (signed), 1/300 s ticks since midnight.
DATETIME = struct.Struct("<iI")
#: SMALLDATETIME as TDS sends it: days since 1900-01-01, minutes since midnight.
SMALLDATETIME = struct.Struct("<HH")
_1900 = datetime(1900, 1, 1)


class NanoTime(time):
    """A ``time`` that also keeps the nanoseconds below its microsecond (0..999)."""

    sub_micro_nanos = 0

    def __reduce_ex__(self, protocol):  # datetime's own (which drops sub_micro_nanos) comes first
        return _nano_time, (self.hour, self.minute, self.second, self.microsecond * 1000 + self.sub_micro_nanos)


class NanoDatetime(datetime):
    """A ``datetime`` that also keeps the nanoseconds below its microsecond (0..999)."""

    sub_micro_nanos = 0

    def __reduce_ex__(self, protocol):  # datetime's own (which drops sub_micro_nanos) comes first
        return _nano_datetime, (self.year, self.month, self.day, self.hour, self.minute, self.second,
                                self.microsecond * 1000 + self.sub_micro_nanos)


def _nano_time(hour: int, minute: int, second: int, nanos: int) -> time:
    value = NanoTime(hour, minute, second, nanos // 1000)
    value.sub_micro_nanos = nanos % 1000
    return value


def _nano_datetime(year: int, month: int, day: int, hour: int, minute: int, second: int, nanos: int) -> datetime:
    value = NanoDatetime(year, month, day, hour, minute, second, nanos // 1000)
    value.sub_micro_nanos = nanos % 1000
    return value


def time2(raw: bytes | None) -> time | None:
    """A TIME column's SQL_SS_TIME2_STRUCT as a ``time`` keeping its nanoseconds (None for NULL)."""
    if raw is None:
        return None
    hour, minute, second, nanos = TIME2.unpack(raw)
    return _nano_time(hour, minute, second, nanos)


def timestamp(raw: bytes | None) -> datetime | None:
    """A DATETIME2, DATETIME or SMALLDATETIME value's raw bytes (by their length) as a ``datetime`` (None for NULL).

    DATETIME's ticks become milliseconds rounded to the nearest, as the drivers do (ODBC: .123 for 37 ticks;
    mssql-jdbc: ``(ticks * 10 + 1) / 3``); SMALLDATETIME's minutes are exact.
    """
    if raw is None:
        return None
    if len(raw) == TIMESTAMP.size:
        year, month, day, hour, minute, second, nanos = TIMESTAMP.unpack(raw)
        return _nano_datetime(year, month, day, hour, minute, second, nanos)
    if len(raw) == DATETIME.size:
        days, ticks = DATETIME.unpack(raw)
        return _1900 + timedelta(days=days, milliseconds=(ticks * 10 + 1) // 3)
    if len(raw) == SMALLDATETIME.size:
        days, minutes = SMALLDATETIME.unpack(raw)
        return _1900 + timedelta(days=days, minutes=minutes)
    raise ValueError(f"not a SQL_TIMESTAMP_STRUCT, DATETIME or SMALLDATETIME value ({len(raw)} bytes): {raw!r}")


def sub_micro_nanos(value: Any) -> int:
    """The nanoseconds below the microsecond a driver value carries (0 for plain ``time``/``datetime``)."""
    return getattr(value, "sub_micro_nanos", 0)
