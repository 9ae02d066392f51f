"""Temporal column defaults PARSEd by the server (2.7.4's SqlServerDefaultValueConverter), on the stand-in.

The values per type are in tests/data/sqlserver_types.yaml (test_sqlserver_types_data.py). Here: what the
server cannot parse gives Debezium's warning and no default, each (type, text) is asked once, a lost
connection is not taken for a refusal, and a restart that rebuilds a table from the schema history PARSEs
the recorded default texts again, keeping the defaults.
"""

from __future__ import annotations

import logging

import pyodbc
import pytest

from change_table_tests import run as _run
from cdc_core.config import Config
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import read_tables
from cdc_sqlserver.server_parse import ServerParse
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)
from cdc_sqlserver.types import TypeModes

EVENTS = """CREATE TABLE dbo.events (
  id INT NOT NULL PRIMARY KEY,
  at DATETIME DEFAULT '2019-01-01 12:34:56.789',
  again DATETIME DEFAULT '2019-01-01 12:34:56.789',
  local_time TIME(3) DEFAULT '12:34:56.123',
  zoned DATETIMEOFFSET(7) DEFAULT '2019-01-01 12:34:56.1234567+04:00',
  made DATETIME DEFAULT GETDATE()
)"""
#: Debezium's schema defaults for EVENTS (time.precision.mode adaptive); ``made`` has none.
DEFAULTS = {"at": 1546346096790, "again": 1546346096790, "local_time": 45296123,
            "zoned": "2019-01-01T12:34:56.1234567+04:00"}


class _Counting:
    """A connection that counts the PARSE statements it is sent."""

    def __init__(self, conn):
        self.conn, self.parses = conn, []

    def execute(self, sql, *params):
        if sql.startswith("SELECT PARSE("):
            self.parses.append((sql, *params))
        return self.conn.execute(sql, *params)


def _defaults(table):
    return {c.name: c.schema.default for c in table.columns if c.schema is not None and c.schema.default is not None}


def test_an_unparseable_default_warns_and_has_none_and_each_text_is_asked_once(standin, caplog):
    standin.create_table(EVENTS)
    conn = odbc.connect(Config(standin.properties()), standin.dbname)
    try:
        counting = _Counting(conn)
        parse = ServerParse(lambda: counting)
        with caplog.at_level(logging.WARNING, logger="cdc_sqlserver.defaults"):
            tables = read_tables(counting, standin.dbname, TypeModes(), parse)
            read_tables(counting, standin.dbname, TypeModes(), parse)  # streaming reads the catalog again
    finally:
        conn.close()
    assert _defaults(tables[("dbo", "events")]) == DEFAULTS
    # Debezium's text for "(getdate())": the server refuses it, a warning, no default.
    assert ("SELECT PARSE(? AS datetime)", "etdate(") in counting.parses
    assert [r.getMessage() for r in caplog.records] == [
        "Cannot parse column default value '(getdate())' to type 'datetime'. Expression evaluation is not supported.",
        "Cannot parse column default value '(getdate())' to type 'datetime'. Expression evaluation is not supported."]
    # Four distinct (type, text) pairs, each asked once over both reads (the two DATETIME columns share one).
    assert sorted(p[1:] for p in counting.parses) == sorted([
        ("2019-01-01 12:34:56.789",), ("12:34:56.123",), ("2019-01-01 12:34:56.1234567+04:00",), ("etdate(",)])


def test_a_lost_connection_while_parsing_is_raised_and_not_remembered(standin):
    standin.create_table(EVENTS)
    conn = odbc.connect(Config(standin.properties()), standin.dbname)
    try:
        rows = conn.execute(
            "SELECT s.name, t.name, c.name, c.column_id, ty.name, c.max_length, c.precision, c.scale, c.is_nullable, "
            "c.is_identity, dc.definition FROM sys.columns c JOIN sys.tables t ON t.object_id = c.object_id "
            "LEFT JOIN sys.default_constraints dc ON dc.parent_object_id = c.object_id "
            "AND dc.parent_column_id = c.column_id JOIN sys.schemas s ON s.schema_id = t.schema_id "
            "JOIN sys.types ty ON ty.user_type_id = c.user_type_id WHERE t.is_ms_shipped = 0").fetchall()
        assert rows
        lost = [True]

        class _Dropping:
            def execute(self, sql, *params):
                if sql.startswith("SELECT PARSE(") and lost[0]:
                    raise pyodbc.OperationalError("08S01", "[08S01] Communication link failure")
                return conn.execute(sql, *params)

        parse = ServerParse(lambda: _Dropping())
        with pytest.raises(pyodbc.OperationalError):
            read_tables(_Dropping(), standin.dbname, TypeModes(), parse)
        lost[0] = False  # reconnected: the same cache asks again and gets the answers
        assert _defaults(read_tables(_Dropping(), standin.dbname, TypeModes(), parse)[("dbo", "events")]) == DEFAULTS
    finally:
        conn.close()


def test_a_restart_rebuilding_the_table_from_the_history_keeps_the_temporal_defaults(standin, tmp_path):
    standin.create_table(EVENTS)
    standin.execute("INSERT INTO dbo.events (id) VALUES (1)")
    standin.enable_db()
    standin.enable_table("dbo", "events")
    standin.agent.start()
    store = MemoryOffsetStore()
    config = standin.properties(**{"schema.history.internal.file.filename": str(tmp_path / "history.dat")})

    def data(records):
        return [r for r in records if r.topic.endswith(".events")]

    first = _run(config, store, lambda rs: len(data(rs)) >= 1)
    assert _field_defaults(data(first)[0]) == DEFAULTS
    # While the connector is down: a change under the old capture instance; then the DEFAULT dropped and the
    # column widened (SQL Server wants the constraint gone before ALTER COLUMN); a new instance, a change under it.
    standin.execute("INSERT INTO dbo.events (id) VALUES (2)")
    standin.wait_captured()
    standin.alter_column("dbo", "events", "local_time", "TIME(6)")
    standin.enable_table("dbo", "events", "dbo_events_v2")
    standin.execute("INSERT INTO dbo.events (id, local_time) VALUES (3, '10:00:00.5')")
    standin.wait_captured()
    records = _run(config, store, lambda rs: len(data(rs)) >= 2)
    old, new = data(records)[:2]
    # Row 2 converts with the history's structure (TIME(3) with its DEFAULT, which the catalog no longer has):
    # rebuilt from the recorded default texts, PARSEd on the server again by the restarted connector, as
    # Debezium's recovered tables go through TableSchemaBuilder's parseDefaultValue.
    assert old.value["after"]["id"] == 2
    assert _field(old, "local_time").name == "io.debezium.time.Time"
    assert _field_defaults(old) == DEFAULTS
    # Row 3: the new instance's structure, from the catalog (TIME(6), no DEFAULT).
    assert (new.value["after"]["id"], new.value["after"]["local_time"]) == (3, 36000500000)
    assert _field(new, "local_time").name == "io.debezium.time.MicroTime"
    assert _field_defaults(new) == {k: v for k, v in DEFAULTS.items() if k != "local_time"}


def _field(record, name):
    return record.value_schema.field("after").schema.field(name).schema


def _field_defaults(record):
    fields = record.value_schema.field("after").schema.fields
    return {f.name: f.schema.default for f in fields if f.schema.default is not None}


def test_a_datetimeoffset_from_the_real_driver_keeps_its_offset():
    """pyodbc's raw SQL_SS_TIMESTAMPOFFSET_STRUCT (the connection's output converter; the stand-in gives text or
    UTC datetimes), a value or a default, formats as Debezium's ISO_OFFSET_DATE_TIME: its own offset, the
    fraction without trailing zeros, ``Z`` for +00:00 (AbstractSqlServerDatatypesTest: ``...45.456+11:00``)."""
    from cdc_sqlserver.types import _DTO
    from cdc_sqlserver.types import zoned as offset_iso

    assert offset_iso(_DTO.pack(2019, 1, 1, 12, 34, 56, 123456700, 4, 0)) == "2019-01-01T12:34:56.1234567+04:00"
    assert offset_iso(_DTO.pack(2019, 1, 1, 12, 34, 56, 120000000, -5, -30)) == "2019-01-01T12:34:56.12-05:30"
    assert offset_iso(_DTO.pack(2019, 1, 1, 0, 0, 0, 0, 0, 0)) == "2019-01-01T00:00:00Z"
    assert offset_iso("2019-01-01 12:34:56.1234567 +04:00") == "2019-01-01T12:34:56.1234567+04:00"
    assert offset_iso(_DTO.pack(2018, 7, 13, 12, 23, 45, 456000000, 11, 0)) == "2018-07-13T12:23:45.456+11:00"
