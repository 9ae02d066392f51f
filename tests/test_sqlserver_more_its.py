"""More of Debezium 2.7.4's SQL Server integration tests on the stand-in.

SnapshotIT, SnapshotWithSelectOverridesIT, TablesWithoutPrimaryKeyIT, CaseSensitivenessIT, the rest of
SqlServerChangeTableSetIT, SqlServerConnectorMultiPartitionModeIT and SqlServerConnectorIT.shouldAllowForCustomSnapshot
(CustomTestSnapshot). The cases that form a table are data (tests/data/sqlserver_more_its.yaml, run by
``test_sqlserver_more_its``); the rest are functions below, each naming the Debezium test it ports.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from kit.engine import EngineThread
from psycopg import sql

from cdc_core.config import Config
from cdc_core.plugins import PluginRegistry
from cdc_core.relational import TableId
from cdc_sqlserver.standin.ddl import quote
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_more_its.yaml").read_text())


# -- checking one event ----------------------------------------------------------------------------------------


def _data(records, db=None):
    """The data change events and tombstones (``<prefix>.<db>.<schema>.<table>`` topics), of ``db`` if given."""
    return [r for r in records if r.topic.count(".") == 3 and not r.topic.startswith("__")
            and (db is None or r.topic.split(".")[1] == db)]


def _table(topic: str) -> str:
    """The data's key for a topic: the table's name, ``schema.table`` outside dbo."""
    _, _, schema, table = topic.split(".", 3)
    return table if schema == "dbo" else f"{schema}.{table}"


def _field_json(schema, column):
    field = schema.field(column)
    assert field is not None, (column, [f.name for f in schema.fields])
    return field.schema.to_json()


def check_event(record, expected: dict[str, Any], where: Any) -> None:
    """``record`` against ``expected``: op, key, before/after (the given fields, exactly), tombstone, source and
    offset (the given entries), offset_keys (exactly), after_fields/after_name/after_types (the value's after
    schema: field names in order, name, {column: {type, optional, default, name}}), key_fields ({column: type},
    null: no key schema)."""
    if "key" in expected:
        assert record.key == expected["key"], (where, "key", record.key)
    if "key_fields" in expected:
        if expected["key_fields"] is None:
            assert record.key_schema is None, (where, "key schema", record.key_schema)
        else:
            got = {f.name: f.schema.type for f in record.key_schema.fields}
            assert got == expected["key_fields"], (where, "key fields", got)
    if "key_name" in expected:
        assert record.key_schema.name == expected["key_name"], (where, "key name", record.key_schema.name)
    if expected.get("tombstone"):
        assert record.value is None, (where, "tombstone", record.value)
        return
    value = record.value
    assert value is not None, (where, "a tombstone where an event was expected")
    if "op" in expected:
        assert value["op"] == expected["op"], (where, "op", value["op"])
    for part in ("before", "after"):
        if part not in expected:
            continue
        if expected[part] is None:
            assert value[part] is None, (where, part, value[part])
        else:
            assert value[part] is not None, (where, part, None)
            got = {k: value[part].get(k, "<absent>") for k in expected[part]}
            assert got == expected[part], (where, part, value[part])
    for k, v in (expected.get("source") or {}).items():
        assert value["source"][k] == v, (where, "source", k, value["source"][k])
    for k, v in (expected.get("offset") or {}).items():
        assert record.offset.get(k, "<absent>") == v, (where, "offset", k, record.offset)
    if "offset_keys" in expected:
        assert sorted(record.offset) == sorted(expected["offset_keys"]), (where, "offset keys", record.offset)
    after = record.value_schema.field("after").schema
    if "after_fields" in expected:
        assert [f.name for f in after.fields] == expected["after_fields"], (where, "after fields",
                                                                             [f.name for f in after.fields])
    if "after_name" in expected:
        assert after.name == expected["after_name"], (where, "after name", after.name)
    for column, want in (expected.get("after_types") or {}).items():
        rendered = _field_json(after, column)
        for prop, v in want.items():
            got = rendered.get(prop, False if prop == "optional" else None)
            assert got == v, (where, column, prop, rendered)


# -- the data-driven cases ---------------------------------------------------------------------------------------


def _fill(value, db):
    if isinstance(value, str):
        return value.replace("{db}", db)
    if isinstance(value, dict):
        return {_fill(k, db): _fill(v, db) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, db) for v in value]
    return value


def _qualified(name: str) -> tuple[str, str]:
    """``schema.table`` (dbo when no schema) of a name the data gives."""
    schema, _, table = name.rpartition(".")
    return schema or "dbo", table


def _created(ddl: str) -> str:
    """The table a T-SQL CREATE TABLE names, as ``schema.table`` without brackets."""
    from cdc_sqlserver.standin.ddl import translate_create_table

    schema, table, _, _ = translate_create_table(ddl)
    return f"{schema}.{table}"


def _enable(server: StandIn, spec: Any) -> None:
    """Enable CDC on a table: ``name`` or ``{table: name, instance: capture instance, columns: captured columns}``."""
    if isinstance(spec, dict):
        server.enable_table(*_qualified(spec["table"]), spec.get("instance"), spec.get("columns"))
    else:
        server.enable_table(*_qualified(spec))


def _expected(expect: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``{table: [events]}`` from a step's expect, where ``{count: n, each: {...}}`` stands for n alike events."""
    out = {}
    for table, events in expect.items():
        if isinstance(events, dict):
            out[table] = [events.get("each") or {}] * events["count"]
        else:
            out[table] = events
    return out


def _drop_column(server: StandIn, table: str, column: str) -> None:
    """``ALTER TABLE <table> DROP COLUMN <column>`` (the change tables keep theirs, as SQL Server's do)."""
    schema, name = _qualified(table)
    server.execute(f"ALTER TABLE {quote(schema)}.{quote(name)} DROP COLUMN {quote(column)}")
    server.execute("DELETE FROM standin.column_types WHERE object_id = %s::regclass::oid::int AND column_name = %s",
                   (f"{quote(schema)}.{quote(name)}", column))


def _rename_column(server: StandIn, table: str, column: str, new: str) -> None:
    """``sp_rename '<table>.<column>', '<new>'`` (the table must have no capture instance, as SQL Server requires)."""
    schema, name = _qualified(table)
    source = f"{quote(schema)}.{quote(name)}"
    server.execute(f"ALTER TABLE {source} RENAME COLUMN {quote(column)} TO {quote(new)}")
    server.execute("UPDATE standin.column_types SET column_name = %s WHERE object_id = %s::regclass::oid::int "
                   "AND column_name = %s", (new, source, column))


def _instances(server: StandIn, table: str) -> list[str]:
    schema, name = _qualified(table)
    return [r[0] for r in server.execute(
        "SELECT capture_instance FROM cdc.change_tables WHERE source_object_id = %s::regclass::oid::int",
        (f"{quote(schema)}.{quote(name)}",))]


def _act(server: StandIn, step: dict[str, Any]) -> None:
    """A step's actions, in this order: create, drop_column, rename_column, add_column, disable, enable, sql."""
    for ddl in step.get("create", []):
        server.create_table(ddl)
    for table, column in step.get("drop_column", []):
        _drop_column(server, table, column)
    for table in step.get("disable", []):
        for ci in _instances(server, table):
            server.wait_captured()
            server.disable_table(*_qualified(table), ci)
    for table, column, new in step.get("rename_column", []):
        _rename_column(server, table, column, new)
    for table, column, tsql_type in step.get("add_column", []):
        server.add_column(*_qualified(table), column, tsql_type)
    for spec in step.get("enable", []):
        server.wait_captured()
        _enable(server, spec)
    if step.get("sql"):
        server.execute(step["sql"])


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_sqlserver_more_its(standin, case, tmp_path):
    case = _fill(case, standin.dbname)
    history = tmp_path / "history.dat"
    if case.get("history_file"):
        case["config"] = {**case.get("config", {}), "schema.history.internal.file.filename": str(history)}
    for schema in case.get("schemas_created", []):
        standin.execute(f"CREATE SCHEMA {schema}")
    created = [_created(ddl) for ddl in case.get("tables", [])]
    for ddl in case.get("tables", []):
        standin.create_table(ddl)
    if case.get("before"):
        standin.execute(case["before"])
    standin.enable_db()
    for spec in case.get("cdc", created):
        _enable(standin, spec)
    for step in case.get("setup", []):
        _act(standin, step)
    standin.agent.start()
    config = case.get("config", {})
    runner = EngineThread(standin.properties(**config)).start()
    seen = 0
    try:
        for n, step in enumerate(case["steps"]):
            if step.get("restart"):
                runner.stop()
                extra = _data(runner.records)[seen:]
                assert not extra, (case["name"], n, [(r.topic, (r.value or {}).get("op")) for r in extra])
                runner = EngineThread(standin.properties(**config), offsets=runner.offsets,
                                      history=runner.history).start()
                seen = 0
            if any(k in step for k in ("sql", "create", "enable", "disable", "drop_column", "rename_column",
                                         "add_column")):
                runner.wait_streaming()
                if step.get("pause"):  # the DDL, a pause, then the statements
                    _act(standin, {k: v for k, v in step.items() if k != "sql"})
                    time.sleep(step["pause"])
                    _act(standin, {"sql": step.get("sql")})
                else:
                    _act(standin, step)
            expect = _expected(step.get("expect", {}))
            count = sum(len(events) for events in expect.values())
            runner.wait(lambda rs, want=seen + count: len(_data(rs)) >= want, f"step {n}'s {count} events")
            got = _data(runner.snapshot())[seen:seen + count]
            seen += count
            for table, events in expect.items():
                mine = [r for r in got if _table(r.topic) == table]
                assert len(mine) == len(events), (case["name"], n, table, [(r.value or {}).get("op") for r in mine])
                for i, (record, expected) in enumerate(zip(mine, events)):
                    check_event(record, expected, (case["name"], n, table, i))
            assert len(got) == count, (case["name"], n, [r.topic for r in got])
        time.sleep(case.get("settle", 0.5))
    finally:
        runner.stop()
    extra = _data(runner.records)[seen:]
    assert not extra, (case["name"], [(r.topic, (r.value or {}).get("op")) for r in extra])
    if "history" in case:
        changes = [json.loads(line)["tableChanges"] for line in history.read_text().splitlines() if line.strip()]
        assert [len(c) for c in changes] == [1] * len(case["history"]), changes
        for (change,), (kind, table_id) in zip(changes, case["history"]):
            assert change["type"] == kind and (table_id is None or change["id"] == table_id), change


# -- SnapshotIT: 500 rows of table1 under each snapshot.isolation.mode, then 500 streamed ------------------------

ROWS = 500
TABLE1 = "CREATE TABLE dbo.table1 (id int, name varchar(30), price decimal(8,2), ts datetime2(0), primary key(id))"
TS_MS = 1_531_920_536_000  # '2018-07-18 13:28:56' as io.debezium.time.Timestamp


def _decimal(unscaled: int) -> str:
    """A Connect Decimal's JSON value: the unscaled value's two's complement bytes, base64."""
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def _table1(server: StandIn, start: int, count: int, one_transaction_each: bool = False) -> None:
    """``count`` rows from id ``start``: (id, 'name<id>', <id>.23, '2018-07-18 13:28:56')."""
    rows = [f"INSERT INTO dbo.table1 VALUES ({i}, 'name{i}', {i}.23, '2018-07-18 13:28:56')"
            for i in range(start, start + count)]
    if not one_transaction_each:
        server.execute("; ".join(rows))
        return
    with server._connect() as conn:  # autocommit: each INSERT its own transaction, as Debezium's connection.execute
        for row in rows:
            conn.execute(row)


def _check_row(record, i: int, where: Any) -> None:
    """SnapshotIT's expected key and after of row ``i`` of table1 (schemas as Debezium's SchemaAndValueField)."""
    check_event(record, {"key": {"id": i}, "before": None,
                         "after": {"id": i, "name": f"name{i}", "price": _decimal(i * 100 + 23), "ts": TS_MS},
                         "after_types": {"id": {"type": "int32", "optional": False},
                                         "name": {"type": "string", "optional": True},
                                         "price": {"type": "bytes", "optional": True,
                                                   "name": "org.apache.kafka.connect.data.Decimal",
                                                   "parameters": {"scale": "2", "connect.decimal.precision": "8"}},
                                         "ts": {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp"}}},
                where)


def _start(server: StandIn, **config: Any) -> EngineThread:
    server.agent.start()
    return EngineThread(server.properties(**{"include.schema.changes": "false", **config})).start()


def _table1_records(records, name="table1"):
    return [r for r in _data(records) if _table(r.topic) == name]


@pytest.mark.parametrize("isolation", ["exclusive", "snapshot", "repeatable_read", "read_committed", "read_uncommitted"])
def test_snapshot_it_take_snapshot(standin, isolation):
    """SnapshotIT.takeSnapshotIn*Mode: every row, its key and values, offsets snapshot=true and snapshot_completed
    on the last only, no before."""
    standin.create_table(TABLE1)
    _table1(standin, 0, ROWS)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin, **{"snapshot.isolation.mode": isolation})
    try:
        runner.wait(lambda rs: len(_table1_records(rs)) >= ROWS, "the snapshot")
    finally:
        runner.stop()
    records = _table1_records(runner.records)
    assert len(records) == ROWS
    for i, record in enumerate(records):
        _check_row(record, i, (isolation, i))
        assert record.value["op"] == "r"
        assert record.offset["snapshot"] is True
        assert record.offset["snapshot_completed"] is (i == ROWS - 1), (i, record.offset)


def _stream_500(standin, runner) -> None:
    """SnapshotIT.testStreaming: 500 inserts (ids 500-999), each its own transaction; each event's key and values,
    its offset exactly change_lsn, commit_lsn and event_serial_no, no before."""
    _table1(standin, ROWS, ROWS, one_transaction_each=True)
    runner.wait(lambda rs: len([r for r in _table1_records(rs) if r.value["op"] == "c"]) >= ROWS, "the inserts", 60)
    streamed = [r for r in _table1_records(runner.snapshot()) if r.value["op"] == "c"]
    assert len(streamed) == ROWS
    for i, record in enumerate(streamed):
        _check_row(record, ROWS + i, ("streamed", i))
        assert sorted(record.offset) == ["change_lsn", "commit_lsn", "event_serial_no"], record.offset


def test_snapshot_it_take_snapshot_and_start_streaming(standin):
    """SnapshotIT.takeSnapshotAndStartStreaming: the source's snapshot field is first, true... and last; then
    streaming (testStreaming)."""
    standin.create_table(TABLE1)
    _table1(standin, 0, ROWS)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin)
    try:
        runner.wait(lambda rs: len(_table1_records(rs)) >= ROWS, "the snapshot")
        markers = [r.value["source"]["snapshot"] for r in _table1_records(runner.snapshot())]
        assert markers == ["first"] + ["true"] * (ROWS - 2) + ["last"]
        runner.wait_streaming()
        _stream_500(standin, runner)
    finally:
        runner.stop()
    assert len(_table1_records(runner.records)) == 2 * ROWS


def test_snapshot_it_take_schema_only_snapshot_and_start_streaming(standin):
    """SnapshotIT.takeSchemaOnlySnapshotAndStartStreaming: no_data, then the 500 inserts (and no snapshot rows)."""
    standin.create_table(TABLE1)
    _table1(standin, 0, ROWS)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin, **{"snapshot.mode": "no_data"})
    try:
        runner.wait_streaming()
        _stream_500(standin, runner)
    finally:
        runner.stop()
    assert len(_table1_records(runner.records)) == ROWS


def test_snapshot_it_take_snapshot_from_table_with_reserved_name(standin):
    """SnapshotIT.takeSnapshotFromTableWithReservedName (DBZ-1031): table [User], table.include.list=dbo.User."""
    standin.create_table(TABLE1)
    _table1(standin, 0, 3)
    standin.create_table("CREATE TABLE dbo.[User] (id int, name varchar(30), primary key(id))")
    standin.execute(f"INSERT INTO dbo.\"User\" SELECT g, 'name' || g FROM generate_series(0, {ROWS - 1}) g")
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    standin.enable_table("dbo", "User")
    runner = _start(standin, **{"table.include.list": "dbo.User"})
    try:
        runner.wait(lambda rs: len(_table1_records(rs, "User")) >= ROWS, "the snapshot")
    finally:
        runner.stop()
    records = _data(runner.records)
    assert {r.topic for r in records} == {f"server1.{standin.dbname}.dbo.User"}
    assert len(records) == ROWS
    for i, record in enumerate(records):
        check_event(record, {"op": "r", "key": {"id": i}, "before": None, "after": {"id": i, "name": f"name{i}"},
                             "offset": {"snapshot": True, "snapshot_completed": i == ROWS - 1}}, i)


def _heartbeats(records):
    return [r for r in records if r.topic.startswith("__debezium-heartbeat")]


def test_snapshot_it_take_schema_only_snapshot_and_send_heartbeat(standin):
    """SnapshotIT.takeSchemaOnlySnapshotAndSendHeartbeat: with heartbeat.interval.ms=300000 the record after a
    no_data snapshot is a heartbeat (the snapshot's end sends one whatever the interval)."""
    standin.create_table(TABLE1)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin, **{"snapshot.mode": "no_data", "heartbeat.interval.ms": 300000})
    try:
        runner.wait(lambda rs: bool(rs), "a record")
    finally:
        runner.stop()
    assert runner.records[0].topic.startswith("__debezium-heartbeat"), runner.records[0].topic


def test_snapshot_it_should_send_heartbeats_when_no_records_are_sent(standin):
    """SnapshotIT.shouldSendHeartbeatsWhenNoRecordsAreSent (DBZ-6811): heartbeat.interval.ms=100, no changes: more
    than ten heartbeats within ten seconds, on __debezium-heartbeat.server1, keyed by serverName, ts_ms not ahead."""
    standin.create_table(TABLE1)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin, **{"snapshot.mode": "no_data", "heartbeat.interval.ms": 100})
    try:
        runner.wait(lambda rs: len(_heartbeats(rs)) > 10, "eleven heartbeats", 10)
    finally:
        runner.stop()
    now_ms = time.time() * 1000
    for beat in _heartbeats(runner.records):
        assert beat.topic == "__debezium-heartbeat.server1"
        assert beat.key == {"serverName": "server1"}
        assert beat.value["ts_ms"] <= now_ms


def test_snapshot_it_deadlock_detection(standin, caplog):
    """SnapshotIT.testDeadlockDetection (DBZ-1280): snapshot.lock.timeout.ms=1000 while another transaction holds
    TABLOCKX on table1: the default repeatable_read snapshot's table lock times out ("Lock request time out period
    exceeded.") and the connector restarts (a retriable error, as every SQLException is to Debezium's
    SqlServerErrorHandler); once the other transaction ends, the snapshot completes."""
    standin.create_table(TABLE1)
    _table1(standin, 0, ROWS)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    holder = standin._connect()
    holder.autocommit = False
    holder.execute('LOCK TABLE dbo.table1 IN ACCESS EXCLUSIVE MODE')  # SELECT TOP(0) * FROM table1 WITH (TABLOCKX)
    runner = _start(standin, **{"snapshot.lock.timeout.ms": 1000, "retriable.restart.connector.wait.ms": 300})
    try:
        with caplog.at_level("WARNING"):
            deadline = time.monotonic() + 30
            while not any("Lock request time out period exceeded" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline and runner.alive, [r.getMessage() for r in caplog.records]
                time.sleep(0.05)
        assert not _table1_records(runner.snapshot())
        holder.rollback()
        runner.wait(lambda rs: len(_table1_records(rs)) >= ROWS, "the snapshot after the lock's release")
    finally:
        holder.close()
        runner.stop()
    assert [r.key["id"] for r in _table1_records(runner.records)] == list(range(ROWS))


def test_snapshot_it_should_output_records_in_cloud_events_format(standin):
    """SnapshotIT.shouldOutputRecordsInCloudEventsFormat (DBZ-1292, DBZ-3157), JSON: every snapshot and streamed
    record converts (CloudEventsConverterTest.shouldConvertToCloudEventsInJson: source, specversion, type,
    datacontenttype, iodebeziumop, data's before/after); a streamed record's id holds event_serial_no:1."""
    from cdc_core.serializers.cloudevents import CloudEventsConverter

    standin.create_table(TABLE1)
    _table1(standin, 0, 20)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    runner = _start(standin)
    try:
        runner.wait(lambda rs: len(_table1_records(rs)) >= 20, "the snapshot")
        runner.wait_streaming()
        _table1(standin, 20, 20, one_transaction_each=True)
        runner.wait(lambda rs: len(_table1_records(rs)) >= 40, "the inserts")
    finally:
        runner.stop()
    converter = CloudEventsConverter({}, "server1")
    records = _table1_records(runner.records)
    for n, record in enumerate(records):
        event = json.loads(converter([record])[0])
        assert event["source"] == "/debezium/sqlserver/server1" and event["specversion"] == "1.0"
        assert event["type"] == "io.debezium.connector.sqlserver.DataChangeEvent"
        assert event["datacontenttype"] == "application/json"
        assert event["iodebeziumop"] == ("r" if n < 20 else "c")
        assert event["iodebeziumconnector"] == "sqlserver" and event["iodebeziumname"] == "server1"
        assert event["data"]["payload"]["after"]["id"] == n and event["data"]["payload"]["before"] is None
        assert event["id"].startswith("name:server1;change_lsn:")
        if n >= 20:
            assert "event_serial_no:1" in event["id"], event["id"]
    # CloudEventsConverterTest.shouldConvertToCloudEventsInJsonWithDataAsAvro: data the Confluent-framed Avro of
    # before/after, dataschema its registry id. (shouldConvertToCloudEventsInAvro, an Avro envelope, is
    # serializer.type=avro, which cdc's CloudEvents converter refuses: not ported.)
    import io

    from brokers.schema_registry import TestSchemaRegistry
    from fastavro import parse_schema, schemaless_reader

    reg = TestSchemaRegistry().start()
    try:
        avro = CloudEventsConverter({"data.serializer.type": "avro", "avro.schema.registry.url": reg.url}, "server1")
        for n, record in enumerate(records):
            event = json.loads(avro([record])[0])
            assert event["datacontenttype"] == "application/avro"
            raw = base64.b64decode(event["data"])
            schema_id = int.from_bytes(raw[1:5], "big")
            assert raw[0] == 0 and event["dataschema"] == f"{reg.url}/schemas/ids/{schema_id}"
            data = schemaless_reader(io.BytesIO(raw[5:]), parse_schema(json.loads(reg.schemas[schema_id - 1])))
            assert data["before"] is None and data["after"]["id"] == n and data["after"]["name"] == f"name{n}"
    finally:
        reg.stop()


# -- SqlServerConnectorMultiPartitionModeIT: two databases in one connector -------------------------------------

SECOND = "testdb2_more_its"


@pytest.fixture
def second(pg_server, standin) -> Iterator[StandIn]:
    """A second stand-in database on the same server (Debezium's testDB2), CDC enabled, its agent not started."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(SECOND)))
    pg_server.create_database(SECOND)
    server = StandIn(pg_server, SECOND)
    try:
        yield server
    finally:
        server.agent.stop()
        server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                       (server.slot,))


def test_multi_partition_mode_snapshot_and_streaming(standin, second):
    """SqlServerConnectorMultiPartitionModeIT.snapshotAndStreaming: database.names=testDB1,testDB2, tableA and
    tableB in the first, tableA and tableC in the second: each table's row on its database's topic, then a
    streamed insert into each tableA."""
    for server, tables in ((standin, [("tableA", "colA", 1, "a1"), ("tableB", "colB", 2, "b")]),
                           (second, [("tableA", "colA", 3, "a2"), ("tableC", "colC", 4, "c")])):
        for table, column, key, value in tables:
            server.create_table(f"CREATE TABLE dbo.[{table}] (id int primary key, [{column}] varchar(32))")
            server.execute(f"INSERT INTO dbo.\"{table}\" VALUES ({key}, '{value}')")
        server.enable_db()
        for table, *_ in tables:
            server.enable_table("dbo", table)
        server.agent.start()
    config = standin.properties(**{"database.names": f"{standin.dbname},{SECOND}", "snapshot.mode": "initial",
                                   "include.schema.changes": "false"})
    runner = EngineThread(config).start()

    def topic(db, table):
        return [r.value["after"] for r in runner.snapshot() if r.topic == f"server1.{db}.dbo.{table}"]

    try:
        runner.wait(lambda rs: len(_data(rs)) >= 4, "the four snapshot rows")
        assert topic(standin.dbname, "tableA") == [{"id": 1, "colA": "a1"}]
        assert topic(standin.dbname, "tableB") == [{"id": 2, "colB": "b"}]
        assert topic(SECOND, "tableA") == [{"id": 3, "colA": "a2"}]
        assert topic(SECOND, "tableC") == [{"id": 4, "colC": "c"}]
        runner.wait_streaming()
        standin.execute("INSERT INTO dbo.\"tableA\" VALUES (5, 'a1s')")
        second.execute("INSERT INTO dbo.\"tableA\" VALUES (6, 'a2s')")
        runner.wait(lambda rs: len(_data(rs)) >= 6, "the two inserts")
        time.sleep(0.5)
    finally:
        runner.stop()
    assert topic(standin.dbname, "tableA")[1:] == [{"id": 5, "colA": "a1s"}]
    assert topic(SECOND, "tableA")[1:] == [{"id": 6, "colA": "a2s"}]
    assert len(_data(runner.records)) == 6


# -- SqlServerConnectorIT.shouldAllowForCustomSnapshot with CustomTestSnapshot --------------------------------


class _CustomTestSnapshot:
    """Debezium's CustomTestSnapshot, as a cdc plugin: a Snapshotter that always snapshots data and schema and
    streams, and a SnapshotQuery that reads every table but tableb until an offset exists. (Debezium's looks the
    offsets up in its BeanRegistry; cdc hands them to should_snapshot_data, called before any query.)"""

    name: ClassVar[str] = "io.debezium.connector.sqlserver.CustomTestSnapshot"
    has_state: ClassVar[bool] = False

    def configure(self, config: Config) -> None:
        pass

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        _CustomTestSnapshot.has_state = offset_exists
        return True

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        return True

    def should_stream(self) -> bool:
        return True

    def should_snapshot_on_schema_error(self) -> bool:
        return False

    def should_snapshot_on_data_error(self) -> bool:
        return False

    def snapshot_completed(self) -> None:
        pass

    def snapshot_aborted(self) -> None:
        pass

    def snapshot_query(self, table: TableId, columns: list[str], quote: Any) -> str | None:
        name = quote(table)
        if not _CustomTestSnapshot.has_state and "tableb" in name:
            return None
        return f"SELECT {', '.join(columns)} FROM {name}"


def test_connector_it_should_allow_for_custom_snapshot(standin):
    """SqlServerConnectorIT.shouldAllowForCustomSnapshot: snapshot.mode=custom and snapshot.query.mode=custom, both
    CustomTestSnapshot. First start (no offset): tablea's row read, tableb's not; two inserts streamed. A restart
    (an offset now): both tables read again, two rows each."""
    from cdc_core.hookspecs import hookimpl

    class Plugins:
        @hookimpl
        def register_snapshotters(self):
            return [_CustomTestSnapshot]

        @hookimpl
        def register_snapshot_queries(self):
            return [_CustomTestSnapshot]

    plugins = PluginRegistry()
    plugins.register(Plugins(), name="sqlserver-custom-test-snapshot")
    standin.create_table("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))")
    standin.create_table("CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))")
    standin.execute("INSERT INTO dbo.tablea VALUES (1, 'a')")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    standin.execute("INSERT INTO dbo.tableb VALUES (1, '1')")
    standin.agent.start()
    standin.wait_captured()
    config = standin.properties(**{"snapshot.mode": "custom", "snapshot.mode.custom.name": _CustomTestSnapshot.name,
                                   "snapshot.query.mode": "custom",
                                   "snapshot.query.mode.custom.name": _CustomTestSnapshot.name,
                                   "include.schema.changes": "false"})

    def ops(records, table):
        return [(r.value["op"], r.key["id"]) for r in _data(records) if _table(r.topic) == table]

    runner = EngineThread(config, plugins=plugins).start()
    try:
        runner.wait(lambda rs: ops(rs, "tablea") == [("r", 1)], "tablea's snapshot row")
        runner.wait_streaming()
        standin.execute("INSERT INTO dbo.tablea VALUES (2, '1')")
        standin.execute("INSERT INTO dbo.tableb VALUES (2, '1')")
        runner.wait(lambda rs: len(_data(rs)) >= 3, "the two inserts")
        time.sleep(0.5)
    finally:
        runner.stop()
    assert ops(runner.records, "tablea") == [("r", 1), ("c", 2)]
    assert ops(runner.records, "tableb") == [("c", 2)]  # no snapshot row: the query was None
    again = EngineThread(config, offsets=runner.offsets, history=runner.history, plugins=plugins).start()
    try:
        again.wait(lambda rs: len(_data(rs)) >= 4, "the second snapshot")
        time.sleep(0.5)
    finally:
        again.stop()
    assert ops(again.records, "tablea") == [("r", 1), ("r", 2)]
    assert ops(again.records, "tableb") == [("r", 1), ("r", 2)]


def test_change_table_set_it_add_column_to_table_with_parallel_writes(standin):
    """SqlServerChangeTableSetIT.addColumnToTableWithParallelWrites: while another connection inserts into tablea
    and tableb (Debezium: one row each a second; here every 0.2 s), tableb gets colb2 and a second capture instance:
    tableb's events are first without colb2, then with it (at least one of each, never without after with), and
    later rows have it."""
    for ddl in ("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))",
                "CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))",
                "CREATE TABLE dbo.tablec (id int primary key, colc varchar(30))"):
        standin.create_table(ddl)
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    runner = _start(standin, **{"snapshot.mode": "no_data"})

    def tableb(records):
        return [r for r in _data(records) if _table(r.topic) == "tableb"]

    try:
        runner.wait_streaming()
        standin.execute("INSERT INTO dbo.tablea SELECT g, 'a' FROM generate_series(10, 29) g; "
                        "INSERT INTO dbo.tableb SELECT g, 'b' FROM generate_series(10, 29) g")
        runner.wait(lambda rs: len(_data(rs)) >= 40, "the first 40 rows")
        assert all([f.name for f in r.value_schema.field("after").schema.fields] == ["id", "colb"]
                   for r in tableb(runner.snapshot()))

        def writer():
            with standin._connect() as conn:
                for i in range(100, 120):
                    conn.execute(f"INSERT INTO dbo.tablea VALUES ({i}, 'a2')")
                    conn.execute(f"INSERT INTO dbo.tableb (id, colb) VALUES ({i}, 'b')")
                    time.sleep(0.2)

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(1.0)
        standin.add_column("dbo", "tableb", "colb2", "VARCHAR(32)")
        standin.enable_table("dbo", "tableb", "after_change")
        thread.join(30)
        runner.wait(lambda rs: len(_data(rs)) >= 80, "the parallel 40 rows")
        fields = [[f.name for f in r.value_schema.field("after").schema.fields] for r in tableb(runner.snapshot())[20:]]
        before = [f for f in fields if f == ["id", "colb"]]
        after = [f for f in fields if f == ["id", "colb", "colb2"]]
        assert len(before) + len(after) == 20 and before and after, fields
        assert fields == before + after, fields  # no event without colb2 after one with it
        standin.execute("INSERT INTO dbo.tablea SELECT g, 'a3' FROM generate_series(1000, 1019) g; "
                        "INSERT INTO dbo.tableb SELECT g, 'b1', 'b2' FROM generate_series(1000, 1019) g")
        runner.wait(lambda rs: len(_data(rs)) >= 120, "the last 40 rows")
        time.sleep(0.5)
    finally:
        runner.stop()
    last = tableb(runner.records)[40:]
    assert len(last) == 20 and len(_data(runner.records)) == 120
    for r in last:
        assert [f.name for f in r.value_schema.field("after").schema.fields] == ["id", "colb", "colb2"]
        assert r.value["after"]["colb2"] == "b2"


class _Recorder:
    """A connection recording the statements a snapshot's begin runs."""

    autocommit = True

    def __init__(self):
        self.statements: list[str] = []

    def execute(self, statement):
        self.statements.append("MAX" if "fn_cdc_get_max_lsn" in statement else statement)
        return self

    def fetchall(self):
        return []

    def fetchone(self):
        return (None,)


@pytest.mark.parametrize("isolation,locking,timeout,expected,schema",
                         [(*c[:4], c[4] if len(c) > 4 else True) for c in DATA["lock_statements"]],
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" + ("-data_only" if len(c) > 4 else "") for c in DATA["lock_statements"]])
def test_snapshot_lock_statements(isolation, locking, timeout, expected, schema):
    import logging

    from cdc_core.relational import Table
    from cdc_core.snapshot.modes import NoLock
    from cdc_sqlserver.snapshot import ExclusiveSnapshotLock, SnapshotReader, UncapturedTable

    conn = _Recorder()
    reader = SnapshotReader(conn, "server1", "db", isolation, 10, logging.getLogger("test"))
    reader.lock = ExclusiveSnapshotLock() if locking == "exclusive" else NoLock()
    reader.lock_timeout_ms = timeout
    reader.schema = schema
    reader.begin([UncapturedTable(Table(TableId("db", "dbo", "t"), [], []))])
    assert conn.statements == expected


def test_chunked_snapshot_runs_a_listed_override_as_written(standin):
    """cdc's chunked snapshot (cdc-spark) reads a table with a snapshot.select.statement.overrides statement in one
    chunk, found and run as the connector's snapshot runs it (SnapshotWithSelectOverridesIT's statement: its * the
    columns, its ORDER BY kept); an unlisted table's statement is not used."""
    from cdc_core.spi.chunks import snapshot_chunks_for
    from cdc_sqlserver.connector import SqlServerConnector

    for name in ("table1", "table2"):
        standin.create_table(f"CREATE TABLE dbo.{name} (id int, name varchar(30), soft_deleted bit, primary key(id))")
        standin.execute(f"INSERT INTO dbo.{name} SELECT g, 'name' || g, g % 2 = 1 FROM generate_series(0, 9) g")
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    standin.enable_table("dbo", "table2")
    standin.agent.start()
    cls = snapshot_chunks_for(SqlServerConnector)
    config = Config(standin.properties(**{
        "snapshot.select.statement.overrides": " dbo.table1 ",
        "snapshot.select.statement.overrides.dbo.table1": "SELECT * FROM [dbo].[table1] WHERE soft_deleted = 0 ORDER BY id DESC",
        "snapshot.select.statement.overrides.dbo.table2": "SELECT * FROM [dbo].[table2] WHERE soft_deleted = 0"}))
    plan = cls(config, None).open(for_streaming=False, tables=None, chunk_rows=100)
    rows = {}
    for chunk in plan.chunks:
        for batch in cls.read_chunk(config, chunk):
            for c in batch:
                if hasattr(c, "after"):
                    rows.setdefault(chunk.table, []).append(c.after)
    assert [r[0] for r in rows["dbo.table1"]] == [8, 6, 4, 2, 0]
    assert all(r[1] == f"name{r[0]}" and r[2] is False for r in rows["dbo.table1"])
    assert sorted(r[0] for r in rows["dbo.table2"]) == list(range(10))


class _RecordingLock:
    """A custom SnapshotLock recording what it is asked and locking with TABLOCKX (as Debezium's SnapshotLock SPI)."""

    name: ClassVar[str] = "recording"
    asked: ClassVar[list] = []

    def configure(self, config: Config) -> None:
        pass

    def table_lock_statement(self, lock_timeout_ms: int, table: TableId, quote: Any) -> str | None:
        _RecordingLock.asked.append((quote(table), lock_timeout_ms))
        return f"SELECT TOP(0) * FROM {quote(table)} WITH (TABLOCKX)"


DATA_ONLY = {"snapshot.mode": "configuration_based", "snapshot.mode.configuration.based.snapshot.data": "true",
             "snapshot.mode.configuration.based.snapshot.schema": "false"}


@pytest.mark.parametrize("isolation,asked,mode", [("repeatable_read", True, {"snapshot.mode": "initial_only"}),
                                                  ("read_committed", False, {"snapshot.mode": "initial_only"}),
                                                  ("repeatable_read", False, DATA_ONLY)],
                         ids=["repeatable_read", "read_committed", "repeatable_read-data_only"])
def test_custom_snapshot_lock_is_asked_for_each_table(standin, isolation, asked, mode):
    """snapshot.locking.mode=custom: the SnapshotLock plugin named by snapshot.locking.mode.custom.name gives each
    table's lock statement, with snapshot.lock.timeout.ms and the table as [db].[schema].[table], under
    repeatable_read (and exclusive) only (SqlServerSnapshotChangeEventSource.lockTablesForSchemaSnapshot), and only
    when the schema is snapshotted too (not for configuration_based's data-only snapshot)."""
    from cdc_core.hookspecs import hookimpl

    class Plugins:
        @hookimpl
        def register_snapshot_locks(self):
            return [_RecordingLock]

    plugins = PluginRegistry()
    plugins.register(Plugins(), name="sqlserver-recording-lock")
    _RecordingLock.asked = []
    standin.create_table(TABLE1)
    _table1(standin, 0, 3)
    standin.enable_db()
    standin.enable_table("dbo", "table1")
    standin.agent.start()
    config = standin.properties(**{**mode, "snapshot.isolation.mode": isolation,
                                   "snapshot.locking.mode": "custom", "snapshot.locking.mode.custom.name": "recording",
                                   "snapshot.lock.timeout.ms": 3000, "include.schema.changes": "false"})
    runner = EngineThread(config, plugins=plugins).start()
    assert runner.join(30) is None
    assert [r.key["id"] for r in _table1_records(runner.records)] == [0, 1, 2]
    assert _RecordingLock.asked == ([(f"[{standin.dbname}].[dbo].[table1]", 3000)] if asked else [])
