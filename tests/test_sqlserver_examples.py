"""The SQL Server chapter's example events, reproduced field for field on the stand-in (database ``testDB``).

Derived from the chapter's create/update/delete examples (``sqlserver-db2.md`` §2.1) with its printing
errors fixed as the spec's errata say: schema names are ``<topic>.Value``/``.Envelope`` with the
topic ``server1.testDB.dbo.customers`` (errata 1), ``source.snapshot`` is Debezium's string enum
(errata 3), ``event_serial_no`` an int64 (errata 4), ``ts_us``/``ts_ns`` named as such (errata 5);
Debezium 2.7's source block also has the common ``sequence`` field and the envelope the optional
``transaction`` struct (after ``source``, as 2.7 builds it), which the chapter's printout leaves out.
LSNs and times differ per run.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
from psycopg import sql

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS
from cdc_sqlserver import odbc
from cdc_sqlserver.standin import dbapi

LSN = re.compile(r"[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{4}")


def _data_only(records):
    """A handler that keeps every record but the schema change events (tested in test_sqlserver_schema_history)."""
    return lambda batch: records.extend(r for r in batch if not str(getattr(r.value_schema, "name", "") or "")
                                        .endswith(".SchemaChangeValue"))


@pytest.fixture
def test_db(pg_server) -> Iterator[StandIn]:
    """The chapter's database ``testDB`` with ``dbo.customers``, CDC enabled, the agent running."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("testDB")))
    pg_server.create_database("testDB")
    saved = odbc.CONNECT, odbc.DRIVERS
    dbapi.install()
    server = StandIn(pg_server, "testDB")
    try:
        server.create_table(CUSTOMERS)
        server.enable_db()
        server.enable_table("dbo", "customers")
        server.agent.start()
        yield server
    finally:
        server.agent.stop()
        odbc.install(*saved)
        pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = 'testDB'")
        pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("testDB")))


def _field(type_, name, optional=False, **extra):
    return {"type": type_, "optional": optional, **extra, "field": name}


VALUE = {"type": "struct", "fields": [_field("int32", "id"), _field("string", "first_name"),
                                      _field("string", "last_name"), _field("string", "email")],
         "optional": True, "name": "server1.testDB.dbo.customers.Value"}
SOURCE = {"type": "struct", "fields": [
    _field("string", "version"), _field("string", "connector"), _field("string", "name"), _field("int64", "ts_ms"),
    {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
     "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
     "default": "false", "field": "snapshot"},
    _field("string", "db"), _field("string", "sequence", True), _field("int64", "ts_us", True),
    _field("int64", "ts_ns", True), _field("string", "schema"), _field("string", "table"),
    _field("string", "change_lsn", True), _field("string", "commit_lsn", True),
    _field("int64", "event_serial_no", True)],
    "optional": False, "name": "io.debezium.connector.sqlserver.Source", "field": "source"}


def _events(config, n, action) -> list:
    engine = Engine(config, offset_store=MemoryOffsetStore())
    records: list = []
    runner = threading.Thread(target=engine.run, args=(_data_only(records),))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while not engine.metrics.streaming.connected:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        action()
        while len(records) < n:
            assert runner.is_alive() and time.monotonic() < deadline, records
            time.sleep(0.05)
    finally:
        engine.stop()
        runner.join(30)
    return records


def test_the_chapters_create_update_and_delete_events(test_db):
    def writes():
        test_db.execute("INSERT INTO dbo.customers (id, first_name, last_name, email) "
                        "OVERRIDING SYSTEM VALUE VALUES (1005, 'john', 'doe', 'john.doe@example.org')")
        test_db.execute("UPDATE dbo.customers SET email = 'noreply@example.org' WHERE id = 1005")
        test_db.execute("DELETE FROM dbo.customers WHERE id = 1005")

    records = _events(test_db.properties("server1"), 4, writes)
    create, update, delete, tombstone = records[:4]
    assert create.topic == "server1.testDB.dbo.customers"
    # The key (§2.1.2).
    assert create.key_schema.to_json() == {"type": "struct", "fields": [_field("int32", "id")], "optional": False,
                                           "name": "server1.testDB.dbo.customers.Key"}
    assert create.key == {"id": 1005}
    # The value schema (§2.1.3), the same for every operation.
    envelope = create.value_schema.to_json()
    assert envelope["name"] == "server1.testDB.dbo.customers.Envelope" and envelope["optional"] is False
    fields = {f["field"]: f for f in envelope["fields"]}
    assert [f["field"] for f in envelope["fields"]] == ["before", "after", "source", "transaction", "op", "ts_ms",
                                                        "ts_us", "ts_ns"]
    assert fields["before"] == {**VALUE, "field": "before"} and fields["after"] == {**VALUE, "field": "after"}
    assert fields["source"] == SOURCE
    assert fields["op"] == _field("string", "op")
    assert [fields[k] for k in ("ts_ms", "ts_us", "ts_ns")] == [_field("int64", k, True) for k in ("ts_ms", "ts_us", "ts_ns")]
    assert update.value_schema.to_json() == envelope == delete.value_schema.to_json()
    # The payloads (§2.1.3-2.1.5).
    john = {"id": 1005, "first_name": "john", "last_name": "doe", "email": "john.doe@example.org"}
    assert (create.value["before"], create.value["after"], create.value["op"]) == (None, john, "c")
    assert (update.value["before"], update.value["after"], update.value["op"]) == (
        john, {**john, "email": "noreply@example.org"}, "u")
    assert (delete.value["before"], delete.value["after"], delete.value["op"]) == (
        {**john, "email": "noreply@example.org"}, None, "d")
    assert tombstone.key == {"id": 1005} and tombstone.value is None
    for record, serial in ((create, 1), (update, 2), (delete, 1)):
        source = record.value["source"]
        assert list(source) == [f["field"] for f in SOURCE["fields"]]
        assert {k: source[k] for k in ("connector", "name", "snapshot", "db", "schema", "table", "sequence",
                                       "event_serial_no")} == {
            "connector": "sqlserver", "name": "server1", "snapshot": "false", "db": "testDB", "schema": "dbo",
            "table": "customers", "sequence": None, "event_serial_no": serial}
        assert source["version"] == "2.7.0.Final"
        assert LSN.fullmatch(source["change_lsn"]) and LSN.fullmatch(source["commit_lsn"])
        assert source["change_lsn"] < source["commit_lsn"]
        assert source["ts_us"] == source["ts_ms"] * 1000 + source["ts_us"] % 1000
        assert source["ts_ns"] == source["ts_us"] * 1000
        # The commit time (cdc.lsn_time_mapping) is before the connector saw the change.
        assert source["ts_ms"] <= record.value["ts_ms"] <= source["ts_ms"] + 30000
    assert create.value["source"]["commit_lsn"] < update.value["source"]["commit_lsn"] < delete.value["source"]["commit_lsn"]
