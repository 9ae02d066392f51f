"""The real driver's value shapes, converted as Debezium 2.7.4 converts the JDBC driver's (no SQL Server here).

The stand-in (PostgreSQL) cannot store what these check: TIME(7)/DATETIME2(7)'s 100 ns, DATETIME's 1/300 s
ticks, SMALLDATETIME's minute, DATETIMEOFFSET's own offset. So the converters get the bytes Microsoft's
ODBC driver gives pyodbc's output converters (SQL_C_BINARY structs), packed here, and must give the values
of Debezium's AbstractSqlServerDatatypesTest (EXPECTED_DATE_TIME, EXPECTED_DATE_TIME_AS_CONNECT) and
SqlServerConnectionIT / SqlServerConnectorIT's defaults. tests/data/sqlserver_types.yaml's ``debezium`` and
``debezium_default`` entries are these values.
"""

from __future__ import annotations

import pickle
from datetime import datetime

from cdc_core.config import Config
from cdc_core.type_modes import TypeModes
from cdc_sqlserver import driver_values as dv
from cdc_sqlserver import odbc
from cdc_sqlserver.defaults import default_value
from cdc_sqlserver.types import _DTO, ColumnInfo, mapping

ADAPTIVE, CONNECT = TypeModes(), TypeModes(time_precision="connect")


def _convert(type_name, scale, value, modes=ADAPTIVE):
    info = ColumnInfo("c", 1, type_name, 8, 0, scale, True)
    return mapping(info, modes)[1](value)


def _datetime_tds(when: datetime) -> bytes:
    """DATETIME's TDS bytes: days since 1900-01-01, 1/300 s ticks."""
    delta = when - datetime(1900, 1, 1)
    ticks = round((delta.seconds + delta.microseconds / 1e6) * 300)
    return dv.DATETIME.pack(delta.days, ticks)


def test_time7_keeps_100_ns_as_debeziums_nanotime():
    """AbstractSqlServerDatatypesTest: TIME(7) '10:23:45.6789012' is NanoTime 37_425_678_901_200 (connect: Time
    37_425_678, truncated); pyodbc's own datetime.time would give ...901_000."""
    raw = dv.TIME2.pack(10, 23, 45, 678_901_200)
    assert _convert("time", 7, dv.time2(raw)) == 37_425_678_901_200
    assert _convert("time", 7, dv.time2(raw), CONNECT) == 37_425_678
    assert _convert("time", 4, dv.time2(dv.TIME2.pack(10, 23, 45, 678_900_000))) == 37_425_678_900
    assert _convert("time", 2, dv.time2(dv.TIME2.pack(10, 23, 45, 680_000_000))) == 37_425_680


def test_datetime2_keeps_100_ns_as_debeziums_nanotimestamp():
    """AbstractSqlServerDatatypesTest: DATETIME2 '2018-07-13 11:23:45.34' is NanoTimestamp 1_531_481_025_340_000_000
    (connect: Timestamp 1_531_481_025_340); a 7th digit is kept."""
    raw = dv.TIMESTAMP.pack(2018, 7, 13, 11, 23, 45, 340_000_000)
    assert _convert("datetime2", 7, dv.timestamp(raw)) == 1_531_481_025_340_000_000
    assert _convert("datetime2", 7, dv.timestamp(raw), CONNECT) == 1_531_481_025_340
    seventh = dv.timestamp(dv.TIMESTAMP.pack(2019, 1, 1, 12, 34, 56, 123_456_700))
    assert _convert("datetime2", 7, seventh) == 1_546_346_096_123_456_700
    assert _convert("datetime2", 6, seventh) == 1_546_346_096_123_456  # MicroTimestamp: no 7th digit to lose


def test_datetime_and_smalldatetime_from_their_tds_bytes():
    """AbstractSqlServerDatatypesTest: DATETIME '2018-07-13 13:23:45.78' is 1_531_488_225_780, SMALLDATETIME
    '2018-07-13 14:23:45' is stored as 14:24 and is 1_531_491_840_000; DATETIME's ticks round to milliseconds
    as the drivers do (.997 for 299 ticks, not .996)."""
    assert _convert("datetime", 3, dv.timestamp(_datetime_tds(datetime(2018, 7, 13, 13, 23, 45, 780000)))) == (
        1_531_488_225_780)
    days = (datetime(2018, 7, 13) - datetime(1900, 1, 1)).days
    assert _convert("smalldatetime", 0, dv.timestamp(dv.SMALLDATETIME.pack(days, 14 * 60 + 24))) == 1_531_491_840_000
    assert dv.timestamp(dv.DATETIME.pack(days, 299)) == datetime(2018, 7, 13, 0, 0, 0, 997000)
    assert dv.timestamp(dv.DATETIME.pack(days, 1)) == datetime(2018, 7, 13, 0, 0, 0, 3000)
    assert dv.timestamp(None) is None and dv.time2(None) is None


def test_temporal_defaults_parsed_by_the_server_keep_100_ns():
    """SqlServerConnectorIT's table_schema_test / SqlServerConnectionIT: DATETIME2 DEFAULT
    '2019-01-01 12:34:56.1234567' is 1_546_346_096_123_456_700, TIME DEFAULT '12:34:56.1234567' 45_296_123_456_700:
    the server's PARSE answer reaches cdc through the same converters."""
    def parse(type_name, text):
        if type_name == "time":
            return dv.time2(dv.TIME2.pack(12, 34, 56, 123_456_700))
        return dv.timestamp(dv.TIMESTAMP.pack(2019, 1, 1, 12, 34, 56, 123_456_700))

    info = ColumnInfo("c", 1, "datetime2", 8, 0, 7, True)
    convert = mapping(info, ADAPTIVE)[1]
    assert default_value("datetime2", "('2019-01-01 12:34:56.1234567')", convert, parse) == 1_546_346_096_123_456_700
    convert = mapping(info._replace(type_name="time"), ADAPTIVE)[1]
    assert default_value("time", "('12:34:56.1234567')", convert, parse) == 45_296_123_456_700


def test_datetimeoffset_keeps_its_offset():
    """AbstractSqlServerDatatypesTest: DATETIMEOFFSET '2018-07-13 12:23:45.456+11:00' is "2018-07-13T12:23:45.456+11:00"
    in both time.precision.modes."""
    raw = _DTO.pack(2018, 7, 13, 12, 23, 45, 456_000_000, 11, 0)
    assert _convert("datetimeoffset", 7, raw) == "2018-07-13T12:23:45.456+11:00"
    assert _convert("datetimeoffset", 7, raw, CONNECT) == "2018-07-13T12:23:45.456+11:00"


def test_driver_values_behave_as_pyodbcs_and_survive_pickling():
    """Everything but the Nano converters sees pyodbc's own value (microseconds); a pickled value (Spark's
    workers) keeps its 100 ns."""
    value = dv.timestamp(dv.TIMESTAMP.pack(2019, 1, 1, 12, 34, 56, 123_456_700))
    assert value == datetime(2019, 1, 1, 12, 34, 56, 123456) and isinstance(value, datetime)
    again = pickle.loads(pickle.dumps(value))
    assert again == value and dv.sub_micro_nanos(again) == 700
    t = pickle.loads(pickle.dumps(dv.time2(dv.TIME2.pack(10, 23, 45, 678_901_200))))
    assert dv.sub_micro_nanos(t) == 200


class _Conn:
    def __init__(self):
        self.converters = {}

    def add_output_converter(self, sql_type, func):
        self.converters[sql_type] = func


def test_microsofts_driver_gets_the_struct_converters_freetds_keeps_pyodbcs(monkeypatch):
    made = []

    def connect(text, **_):
        made.append(_Conn())
        return made[-1]

    for driver, expected in (("ODBC Driver 18 for SQL Server", {-155, -151, -150, -154, 93}),
                             ("FreeTDS", {-155, -151, -150}),
                             ("ODBC Driver 17 for SQL Server", {-155, -151, -150, -154, 93})):
        monkeypatch.setattr(odbc, "CONNECT", connect)
        monkeypatch.setattr(odbc, "DRIVERS", lambda d=driver: [d])
        odbc.connect(Config({"database.hostname": "h", "database.port": "1433", "topic.prefix": "p",
                             "database.names": "db"}), "db")
        assert set(made[-1].converters) == expected, driver
    assert made[0].converters[-154] is dv.time2 and made[0].converters[93] is dv.timestamp
    # geometry/geography/hierarchyid (SQL_SS_UDT), which pyodbc itself refuses: their bytes, as mssql-jdbc gives them
    assert made[0].converters[-151](b"\xe6\x10\x00\x00\x01\x0c") == b"\xe6\x10\x00\x00\x01\x0c"
