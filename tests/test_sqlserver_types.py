"""The common SQL Server types through snapshot and streaming on the stand-in, under the default modes and others.

What this proves: the schemas and value conversions of the connector for the values pyodbc
returns. What it cannot: SQL Server's own storage (DATETIME's 1/300 s rounding, TIME(7)/DATETIME2(7)
100 ns digits, which PostgreSQL cuts to microseconds) and the real driver's value types.
"""

from __future__ import annotations

from kit.engine import EngineThread

from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

TABLE = """CREATE TABLE dbo.types (id INT NOT NULL PRIMARY KEY, b BIT, ti TINYINT, si SMALLINT, bi BIGINT,
  d DECIMAL(10,2), n NUMERIC(5,0), m MONEY, sm SMALLMONEY, c CHAR(3), v VARCHAR(20), nv NVARCHAR(MAX),
  dt DATETIME, dt2 DATETIME2(7), dt23 DATETIME2(3), dt26 DATETIME2(6), da DATE, t7 TIME(7), t3 TIME(3),
  u UNIQUEIDENTIFIER, vb VARBINARY(MAX), r REAL, f FLOAT)"""
ROW = ("true, 255, -5, 9007199254740993, 12.34, 5, 12.3456, -1.5, 'ab', 'x''y', 'ünï', "
       "'2018-06-20 15:13:16.945', '2018-06-20 15:13:16.945104', '2018-06-20 15:13:16.945', "
       "'2018-06-20 15:13:16.945104', '2018-06-20', '15:13:16.945104', '15:13:16.945', "
       "'3f2504e0-4f89-11d3-9a0c-0305e82c3301', '\\x0102ff', 1.5, 2.25")
#: The values JsonConverter writes, under the default modes (decimal precise, time adaptive, binary bytes).
EXPECTED = {
    "b": True, "ti": 255, "si": -5, "bi": 9007199254740993, "d": "BNI=", "n": "BQ==", "m": "AeJA", "sm": "xWg=",
    "c": "ab ", "v": "x'y", "nv": "ünï", "dt": 1529507596945, "dt2": 1529507596945104000, "dt23": 1529507596945,
    "dt26": 1529507596945104, "da": 17702, "t7": 54796945104000, "t3": 54796945,
    "u": "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "vb": "AQL/", "r": 1.5, "f": 2.25,
}
NAMES = {"d": "org.apache.kafka.connect.data.Decimal", "dt": "io.debezium.time.Timestamp",
         "dt2": "io.debezium.time.NanoTimestamp", "dt23": "io.debezium.time.Timestamp",
         "dt26": "io.debezium.time.MicroTimestamp", "da": "io.debezium.time.Date", "t7": "io.debezium.time.NanoTime",
         "t3": "io.debezium.time.Time", "u": None, "vb": None}


def _two_events(standin, **extra):
    standin.create_table(TABLE)
    standin.execute(f"INSERT INTO dbo.types VALUES (1, {ROW})")
    standin.enable_db()
    standin.enable_table("dbo", "types")
    standin.agent.start()
    runner = EngineThread(standin.properties(**extra)).start()
    try:
        runner.wait(lambda rs: bool(_data(rs)), "the snapshot's row")
        standin.execute(f"INSERT INTO dbo.types VALUES (2, {ROW})")
        runner.wait(lambda rs: len(_data(rs)) >= 2, "the streamed row")
    finally:
        runner.stop()
    records = runner.records
    return _data(records)


def _data(records):
    """The data change events (not the schema change events on the ``<topic.prefix>`` topic)."""
    return [r for r in records if r.topic.endswith(".types")]


def test_common_types_in_snapshot_and_stream(standin):
    snap, streamed = _two_events(standin)
    assert (snap.value["op"], streamed.value["op"]) == ("r", "c")
    for record in (snap, streamed):
        after = dict(record.value["after"])
        after.pop("id")
        assert after == EXPECTED
    fields = {f.name: f.schema for f in snap.value_schema.field("after").schema.fields}
    for column, name in NAMES.items():
        assert fields[column].name == name, column
    assert fields["d"].parameters == {"scale": "2", "connect.decimal.precision": "10"}
    assert fields["m"].parameters == {"scale": "4", "connect.decimal.precision": "19"}
    assert (fields["ti"].type, fields["si"].type, fields["bi"].type, fields["r"].type, fields["f"].type) == (
        "int16", "int16", "int64", "float32", "float64")
    assert fields["vb"].type == "bytes" and fields["u"].type == "string"


def test_string_decimals_connect_times_and_hex_binary(standin):
    snap, streamed = _two_events(standin, **{"decimal.handling.mode": "string", "time.precision.mode": "connect",
                                             "binary.handling.mode": "hex"})
    for record in (snap, streamed):
        after = record.value["after"]
        assert (after["d"], after["m"], after["sm"]) == ("12.34", "12.3456", "-1.5000")
        assert (after["dt2"], after["t7"], after["da"]) == (1529507596945, 54796945, 17702)
        assert after["vb"] == "0102ff"
    fields = {f.name: f.schema for f in snap.value_schema.field("after").schema.fields}
    assert fields["dt2"].name == "org.apache.kafka.connect.data.Timestamp"
    assert fields["t7"].name == "org.apache.kafka.connect.data.Time" and fields["t7"].type == "int32"
