"""TIMESTAMP(p), p > 6, read as Db2's text so its digits below the microsecond survive the driver.

ibm_db returns a TIMESTAMP as a Python ``datetime``: microseconds, the rest of Db2's up to 12 fractional
digits dropped (its fetch divides SQL_TIMESTAMP_STRUCT's nanosecond fraction by 1000). Debezium 2.7.4 reads
the column through JCC's ``getTimestamp``, a ``java.sql.Timestamp`` holding nanoseconds, and
JdbcValueConverters makes a TIMESTAMP of precision 7..12 (Db2ValueConverters.getTimePrecision: the
column's scale) an ``io.debezium.time.NanoTimestamp`` under ``time.precision.mode`` adaptive and
adaptive_time_microseconds, and a Connect ``Timestamp`` (milliseconds) under connect. So every SELECT the
connector sends (snapshot, CD tables, incremental and blocking chunks) reads such a column as
``VARCHAR(col)``, and its converter parses that text.

Assumed from IBM's documentation (Db2 LUW and z/OS SQL reference, "String representations of datetime
values" and the datetime assignment rules, which give a TIMESTAMP(0)'s string 19 characters and a
TIMESTAMP(p)'s 20+p): ``VARCHAR`` of a TIMESTAMP(p) is ``yyyy-mm-dd-hh.mm.ss`` followed, for p > 0, by
``.`` and exactly p fractional digits (ISO form, dashes and dots). The parser below also takes the
JDBC/ISO form (``yyyy-mm-dd hh:mm:ss.f...``, or a ``T``) for safety. Digits past the ninth (p 10..12)
are dropped, as a ``java.sql.Timestamp`` (nanoseconds) drops them in Debezium; times before 1970 count
down to the whole second and the fraction up from it (``Instant``'s floor), so a NanoTimestamp of
1969-12-31-23.59.59.999999999 is -1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any

from cdc_core import semantic as sem

#: Above this precision (fractional digits) a TIMESTAMP column is read as text.
DRIVER_DIGITS = 6
_TEXT = re.compile(r"\s*(\d{4})-(\d{2})-(\d{2})(?:[-T ](\d{2})[.:](\d{2})[.:](\d{2})(?:[.,](\d{1,12}))?)?\s*$")
_EPOCH_DAY = date(1970, 1, 1).toordinal()


def _quote(name: str) -> str:
    """A Db2 delimited identifier, as cdc_db2.catalog.quote (not imported: catalog imports types, which imports this)."""
    return '"' + name.replace('"', '""') + '"'


def read_as_text(column: Any) -> bool:
    """Whether a column is a TIMESTAMP(p) with p > 6 (its catalog scale), which the driver would cut."""
    return column.type_name == "TIMESTAMP" and (column.scale or 0) > DRIVER_DIGITS


def select_item(column: Any, qualifier: str = "") -> str:
    """A column in a SELECT list: ``"C"``, or ``VARCHAR("C") AS "C"`` for a TIMESTAMP(7..12)."""
    name = qualifier + _quote(column.name)
    return f"VARCHAR({name}) AS {_quote(column.name)}" if read_as_text(column) else name


def select_list(columns: Iterable[Any], qualifier: str = "") -> str:
    """The SELECT list of ``columns`` (``qualifier``, e.g. ``cd.``, before each name)."""
    return ", ".join(select_item(c, qualifier) for c in columns)


def select_items(columns: Iterable[Any]) -> list[str]:
    """``select_item`` of each column (the list a SnapshotQuery plugin is given)."""
    return [select_item(c) for c in columns]


def parse(text: str) -> tuple[int, int]:
    """A Db2 timestamp string as (seconds since the epoch, floored; nanoseconds within that second)."""
    m = _TEXT.match(text)
    if not m:
        raise ValueError(f"not a Db2 timestamp string: {text!r}")
    year, month, day, hour, minute, second, fraction = m.groups()
    days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_DAY
    # Db2 allows 24.00.00 (the end of the day): the arithmetic carries it into the next day.
    seconds = days * 86400 + int(hour or 0) * 3600 + int(minute or 0) * 60 + int(second or 0)
    return seconds, int(((fraction or "") + "000000000")[:9])


def epoch_encoder(per_second: int) -> Callable[[Any], int]:
    """Milliseconds, microseconds or nanoseconds (``per_second``) since the epoch, floored, of a ``datetime``
    (a TIMESTAMP of precision 0..6, as ibm_db gives it) or of Db2's string (7..12, read by ``VARCHAR``)."""
    from_datetime = sem.epoch_encoder(per_second)
    divisor = 1_000_000_000 // per_second

    def convert(value: Any) -> int:
        if isinstance(value, datetime):
            return from_datetime(value)
        seconds, nanos = parse(str(value))
        return seconds * per_second + nanos // divisor

    return convert
