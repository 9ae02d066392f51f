"""The chapter's Db2 type mapping through snapshot and streaming on the stand-in, under each handling mode.

What this proves: the schemas and value conversions of the connector for the values ibm_db_dbi
returns (int, Decimal, float, str, bytes, date, time, datetime). What it cannot: Db2's own storage
and the real driver's value types (DECFLOAT's special values, GRAPHIC/DBCLOB encodings, TIMESTAMP(12)
digits beyond the microseconds PostgreSQL keeps, XML serialization), nor that SQL Replication refuses
tables with BOOLEAN columns (the stand-in's ADDTABLE accepts them; the chapter: snapshot only).
"""

from __future__ import annotations

import pytest
from kit.engine import run_until

from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

D, T, TS = "io.debezium.time.Date", "io.debezium.time.Time", "io.debezium.time.Timestamp"
DEC = "org.apache.kafka.connect.data.Decimal"
CD, CT, CTS = "org.apache.kafka.connect.data.Date", "org.apache.kafka.connect.data.Time", "org.apache.kafka.connect.data.Timestamp"

#: column, Db2 type, PostgreSQL literal, then per mode (default | decimal string, time connect, binary hex):
#: (Connect type, schema name, value).
TYPES = [
    ("SI", "SMALLINT", "-5", ("int16", None, -5), None),
    ("I", "INTEGER", "7", ("int32", None, 7), None),
    ("BI", "BIGINT", "9007199254740993", ("int64", None, 9007199254740993), None),
    ("R", "REAL", "1.5", ("float", None, 1.5), None),
    ("DB", "DOUBLE", "2.25", ("double", None, 2.25), None),
    ("DC", "DECIMAL(10,2)", "12.34", ("bytes", DEC, "BNI="), ("string", None, "12.34")),
    ("DF", "DECFLOAT", "1.5", ("struct", "io.debezium.data.VariableScaleDecimal", {"scale": 1, "value": "Dw=="}),
     ("string", None, "1.5")),
    ("C", "CHAR(3)", "'ab'", ("string", None, "ab "), None),
    ("V", "VARCHAR(20)", "'x''y'", ("string", None, "x'y"), None),
    ("G", "GRAPHIC(3)", "'ab'", ("string", None, "ab "), None),
    ("VG", "VARGRAPHIC(10)", "'ünï'", ("string", None, "ünï"), None),
    ("CL", "CLOB", "'a clob'", ("string", None, "a clob"), None),
    ("DBC", "DBCLOB", "'a dbclob'", ("string", None, "a dbclob"), None),
    ("BN", "BINARY(3)", "'\\x0102ff'", ("bytes", None, "AQL/"), ("string", None, "0102ff")),
    ("VB", "VARBINARY(10)", "'\\x0102ff'", ("bytes", None, "AQL/"), ("string", None, "0102ff")),
    ("BL", "BLOB", "'\\x0102ff'", ("bytes", None, "AQL/"), ("string", None, "0102ff")),
    ("FB", "VARCHAR(4) FOR BIT DATA", "'\\x0a0b'", ("bytes", None, "Cgs="), ("string", None, "0a0b")),
    ("DA", "DATE", "'2018-06-20'", ("int32", D, 17702), ("int32", CD, 17702)),
    ("TI", "TIME", "'15:13:16'", ("int32", T, 54796000), ("int32", CT, 54796000)),
    ("TS", "TIMESTAMP", "'2018-06-20 15:13:16.945104'", ("int64", "io.debezium.time.MicroTimestamp", 1529507596945104),
     ("int64", CTS, 1529507596945)),
    ("TS3", "TIMESTAMP(3)", "'2018-06-20 15:13:16.945'", ("int64", TS, 1529507596945), ("int64", CTS, 1529507596945)),
    ("TS9", "TIMESTAMP(9)", "'2018-06-20 15:13:16.945104'",
     ("int64", "io.debezium.time.NanoTimestamp", 1529507596945104000), ("int64", CTS, 1529507596945)),
    ("X", "XML", "'<a>1</a>'", ("string", "io.debezium.data.Xml", "<a>1</a>"), None),
    ("BO", "BOOLEAN", "true", ("boolean", None, True), None),
]
OTHER_MODES = {"decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex"}


def _two_events(standin, **extra):
    standin.create_table("MYSCHEMA", "TYPES", [("ID", "INTEGER NOT NULL")] + [(c, t) for c, t, *_ in TYPES],
                         key=["ID"])
    row = ", ".join(lit for _, _, lit, *_ in TYPES)
    standin.execute(f'INSERT INTO "MYSCHEMA"."TYPES" VALUES (1, {row})')
    standin.add_table("MYSCHEMA", "TYPES")
    standin.agent.start()
    records = run_until(standin.properties(**extra), lambda rs: len([r for r in rs if r.topic.endswith(".TYPES")]) >= 2,
                        "the snapshot and the streamed row",
                        action=lambda: standin.execute(f'INSERT INTO "MYSCHEMA"."TYPES" VALUES (2, {row})')).records
    return [r for r in records if r.topic.endswith(".TYPES")]


@pytest.mark.parametrize("modes", [{}, OTHER_MODES], ids=["default-modes", "string-connect-hex"])
def test_the_chapters_type_mapping_in_snapshot_and_stream(standin, modes):
    snap, streamed = _two_events(standin, **modes)
    assert (snap.value["op"], streamed.value["op"]) == ("r", "c")
    fields = {f["field"]: f for f in snap.value_schema.to_json()["fields"][1]["fields"]}
    for column, _, _, default, other in TYPES:
        connect_type, name, value = (other or default) if modes else default
        assert (fields[column]["type"], fields[column].get("name")) == (connect_type, name), column
        for record in (snap, streamed):
            assert record.value["after"][column] == value, column
    if not modes:
        assert fields["DC"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
