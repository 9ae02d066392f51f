"""The YugabyteDB connector against the throwaway PostgreSQL stand-in (YugabyteDB speaks PostgreSQL's replication protocol).

Everything here runs with ``plugin.name=pgoutput`` (PostgreSQL has no yboutput plug-in), except the
test that shapes real pgoutput data as yboutput cells: yboutput is pgoutput's protocol (see
``cdc_yugabyte.yboutput``), so its wrapping can be checked over real pgoutput messages too.
"""

from __future__ import annotations

import pytest

from cdc_core.errors import ConnectorError
from cdc_yugabyte.connector import YugabyteDBConnector

from yb_run import Running, yb_config

EMPLOYEE = "CREATE TABLE employee (employee_id INT PRIMARY KEY, employee_name VARCHAR, employee_dept TEXT)"
TOPIC = "dbserver.public.employee"


def _config(pg, db, **extra):
    """The YugabyteDB connector on the stand-in with pgoutput."""
    return yb_config(pg.host, pg.port, pg.user, db, **{"plugin.name": "pgoutput", **extra})


def test_snapshot_and_stream_carry_yugabytedb_names(pg_server, pg_db):
    """READs, then c/u/d, all saying connector YugabyteDB under the chapter's source schema name."""
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("INSERT INTO employee VALUES (1000, 'Zed', 'Shipping')", dbname=pg_db)
    run = Running(_config(pg_server, pg_db))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        pg_server.execute("UPDATE employee SET employee_name = 'Bob' WHERE employee_id = 1001", dbname=pg_db)
        pg_server.execute("DELETE FROM employee WHERE employee_id = 1001", dbname=pg_db)
        read, create, update, delete, tombstone = run.wait_data(TOPIC, 5)
    finally:
        run.stop()
    assert [e["value"]["payload"]["op"] for e in (read, create, update, delete)] == ["r", "c", "u", "d"]
    assert tombstone["value"] is None
    for e in (read, create, update, delete):
        schema = e["value"]["schema"]
        source = next(f for f in schema["fields"] if f["field"] == "source")
        assert source["name"] == "io.debezium.connector.YugabyteDB.Source"
        assert schema["name"] == "dbserver.public.employee.Envelope"
        assert e["value"]["payload"]["source"]["connector"] == "YugabyteDB"
        assert e["value"]["payload"]["source"]["db"] == pg_db
    assert read["value"]["payload"]["source"]["snapshot"] == "last"  # the only row
    # AS-36: DEFAULT with pgoutput, plain values; the update has no before (the key did not change).
    assert create["value"]["payload"]["after"] == {"employee_id": 1001, "employee_name": "Alice",
                                                   "employee_dept": "Packaging"}
    assert update["value"]["payload"]["before"] is None
    assert update["value"]["payload"]["after"] == {"employee_id": 1001, "employee_name": "Bob",
                                                   "employee_dept": "Packaging"}
    assert delete["value"]["payload"]["before"] == {"employee_id": 1001, "employee_name": None,
                                                    "employee_dept": None}
    assert delete["key"]["payload"] == {"employee_id": 1001}


def test_replica_identity_full_gives_old_values(pg_server, pg_db):
    """AS-37 with pgoutput: a full before for the update ("Alice") and the delete ("Bob")."""
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("ALTER TABLE employee REPLICA IDENTITY FULL", dbname=pg_db)
    run = Running(_config(pg_server, pg_db))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        pg_server.execute("UPDATE employee SET employee_name = 'Bob' WHERE employee_id = 1001", dbname=pg_db)
        pg_server.execute("DELETE FROM employee WHERE employee_id = 1001", dbname=pg_db)
        _, update, delete, _ = run.wait_data(TOPIC, 4)
    finally:
        run.stop()
    alice = {"employee_id": 1001, "employee_name": "Alice", "employee_dept": "Packaging"}
    bob = {**alice, "employee_name": "Bob"}
    assert update["value"]["payload"]["before"] == alice and update["value"]["payload"]["after"] == bob
    assert delete["value"]["payload"]["before"] == bob and delete["value"]["payload"]["after"] is None


def test_yboutput_cells_over_real_pgoutput_data(pg_server, pg_db, monkeypatch):
    """yboutput's shaping over a real slot: cells in snapshot and stream, key tuples carrying the key only."""
    monkeypatch.setattr(YugabyteDBConnector, "slot_plugin", lambda self: "pgoutput")  # the stand-in's plug-in
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("INSERT INTO employee VALUES (1000, 'Zed', NULL)", dbname=pg_db)
    run = Running(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        pg_server.execute("UPDATE employee SET employee_name = 'Bob' WHERE employee_id = 1001", dbname=pg_db)
        pg_server.execute("DELETE FROM employee WHERE employee_id = 1001", dbname=pg_db)
        read, create, update, delete, _ = run.wait_data(TOPIC, 5)
    finally:
        run.stop()

    def cell(v):
        return {"value": v, "set": True}

    assert read["value"]["payload"]["after"] == {"employee_id": cell(1000), "employee_name": cell("Zed"),
                                                 "employee_dept": cell(None)}
    assert create["value"]["payload"]["after"] == {"employee_id": cell(1001), "employee_name": cell("Alice"),
                                                   "employee_dept": cell("Packaging")}
    # DEFAULT on this server: the whole new row (the chapter's DEFAULT text), no before.
    assert update["value"]["payload"]["before"] is None
    assert update["value"]["payload"]["after"]["employee_dept"] == cell("Packaging")
    assert delete["value"]["payload"]["before"] == {"employee_id": cell(1001), "employee_name": None,
                                                    "employee_dept": None}
    assert delete["key"]["payload"] == {"employee_id": cell(1001)}
    value = next(f for f in create["value"]["schema"]["fields"] if f["field"] == "after")
    assert value["fields"][0] == {"type": "struct", "optional": False, "name": "employee_id", "field": "employee_id",
                                  "fields": [{"type": "int32", "optional": False, "field": "value"},
                                             {"type": "boolean", "optional": False, "field": "set"}]}
    assert value["fields"][1]["optional"] is True


def test_yboutput_on_postgresql_is_refused(pg_server, pg_db):
    """plugin.name=yboutput (the default) on a server without the plug-in: a clear error, not a slot error."""
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    run = Running(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db))
    run.wait(lambda: run.error is not None, "the refusal")
    assert isinstance(run.error, ConnectorError)
    assert "plugin.name=yboutput needs a YugabyteDB server" in str(run.error)


def test_tables_without_primary_key_are_refused_by_name(pg_server, pg_db):
    """YB-11: CDC needs a primary key; the keyless tables are named, nothing is streamed with a null key."""
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("CREATE TABLE audit_log (msg text); CREATE TABLE notes (id int UNIQUE NOT NULL, t text)",
                      dbname=pg_db)
    run = Running(_config(pg_server, pg_db))
    run.wait(lambda: run.error is not None, "the refusal")
    assert isinstance(run.error, ConnectorError)
    assert "public.audit_log, public.notes have none" in str(run.error)
    assert "table.exclude.list" in str(run.error)
    assert not run.records
    ok = Running(_config(pg_server, pg_db, **{"table.exclude.list": "public.audit_log,public.notes"}))
    try:
        ok.wait_streaming()
    finally:
        ok.stop()


@pytest.mark.parametrize("mode", ["no_data", "when_needed", "configuration_based"])
def test_postgresql_only_snapshot_modes_are_refused(pg_server, pg_db, mode):
    """YB-13: the chapter's modes are initial, always, never, initial_only and custom."""
    from cdc_core.config import Config
    from cdc_core.engine import connector_problems

    problems = connector_problems(Config(_config(pg_server, pg_db, **{"snapshot.mode": mode})))
    assert problems == [f"snapshot.mode: {mode!r} is not one of: initial, always, never, initial_only, custom"]


def test_never_streams_without_snapshot(pg_server, pg_db):
    """snapshot.mode=never (PostgreSQL's no_data): no READs, changes from the slot's creation on."""
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("INSERT INTO employee VALUES (1000, 'Zed', 'Shipping')", dbname=pg_db)
    run = Running(_config(pg_server, pg_db, **{"snapshot.mode": "never"}))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        [create] = run.wait_data(TOPIC, 1)
    finally:
        run.stop()
    assert create["value"]["payload"]["op"] == "c"


def test_replica_identity_nothing_refuses_updates_and_streaming_goes_on(pg_server, pg_db):
    """AS-38: the INSERT is captured; UPDATE and DELETE fail in the database; no event; the connector carries on.

    Also YB-17: a logical decoding message (pg_logical_emit_message) gives no event on YugabyteDB's connector.
    """
    import psycopg

    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("ALTER TABLE employee REPLICA IDENTITY NOTHING", dbname=pg_db)
    run = Running(_config(pg_server, pg_db))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
            pg_server.execute("UPDATE employee SET employee_name = 'Bob' WHERE employee_id = 1001", dbname=pg_db)
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
            pg_server.execute("DELETE FROM employee WHERE employee_id = 1001", dbname=pg_db)
        pg_server.execute("SELECT pg_logical_emit_message(true, 'prefix', 'content')", dbname=pg_db)
        pg_server.execute("INSERT INTO employee VALUES (1002, 'Carol', 'Packaging')", dbname=pg_db)
        first, second = run.wait_data(TOPIC, 2)
        assert run.error is None
    finally:
        run.stop()
    assert [e["value"]["payload"]["after"]["employee_id"] for e in (first, second)] == [1001, 1002]
    assert not [r for r in run.records if r.topic.endswith(".message")]


def test_column_masks_are_refused_with_yboutput_cells(pg_server, pg_db):
    """A mask would meet the cell, not the value (the core skips masks on non-string fields): refused, not leaked."""
    from cdc_core.config import Config
    from cdc_core.engine import connector_problems

    masked = {"column.mask.with.5.chars": "public.employee.employee_name"}
    problems = connector_problems(Config(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db, **masked)))
    assert problems == ["column.mask.with.5.chars: not supported with plugin.name=yboutput (it would act on the "
                        "{value, set} cell, not the value); use plugin.name=pgoutput"]
    assert connector_problems(Config(_config(pg_server, pg_db, **masked))) == []


def test_properties_the_chapter_lacks_start_with_a_warning(pg_server, pg_db, caplog):
    """heartbeat.interval.ms is not in the chapter: accepted, applied as on PostgreSQL, and said so at start."""
    import logging

    pg_server.execute(EMPLOYEE, dbname=pg_db)
    caplog.set_level(logging.WARNING)
    run = Running(_config(pg_server, pg_db, **{"heartbeat.interval.ms": 500}))
    try:
        run.wait_streaming()
        run.wait(lambda: any(r.topic == "__debezium-heartbeat.dbserver" for r in list(run.records)), "a heartbeat")
    finally:
        run.stop()
    assert ("heartbeat.interval.ms is not a property of the YugabyteDB connector; cdc applies it as the PostgreSQL "
            "connector does") in caplog.text


def test_incremental_snapshot_reads_are_cells_and_say_yugabytedb(pg_server, pg_db, monkeypatch):
    """An execute-snapshot signal through the signal table: incremental READs in yboutput's cells, source YugabyteDB."""
    monkeypatch.setattr(YugabyteDBConnector, "slot_plugin", lambda self: "pgoutput")  # the stand-in's plug-in
    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("CREATE TABLE debezium_signal (id varchar PRIMARY KEY, type varchar, data varchar)",
                      dbname=pg_db)
    pg_server.execute("INSERT INTO employee SELECT g, 'e' || g, 'Packaging' FROM generate_series(1, 5) g", dbname=pg_db)
    run = Running(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db, **{
        "snapshot.mode": "never", "signal.data.collection": "public.debezium_signal",
        "incremental.snapshot.chunk.size": 2, "table.include.list": "public.employee"}))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"public.employee\"], \"type\": \"incremental\"}')", dbname=pg_db)
        reads = run.wait_data(TOPIC, 5)
    finally:
        run.stop()
    assert {e["value"]["payload"]["source"]["snapshot"] for e in reads} == {"incremental"}
    assert {e["value"]["payload"]["source"]["connector"] for e in reads} == {"YugabyteDB"}
    assert sorted(e["value"]["payload"]["after"]["employee_id"]["value"] for e in reads) == [1, 2, 3, 4, 5]
    assert reads[0]["value"]["payload"]["after"]["employee_dept"] == {"value": "Packaging", "set": True}


def test_blocking_snapshot_signal_is_ignored_and_streaming_goes_on(pg_server, pg_db, caplog):
    """YB-15: only incremental snapshots; a blocking one is logged and ignored, no READ, no stop."""
    import logging

    pg_server.execute(EMPLOYEE, dbname=pg_db)
    pg_server.execute("CREATE TABLE debezium_signal (id varchar PRIMARY KEY, type varchar, data varchar)",
                      dbname=pg_db)
    pg_server.execute("INSERT INTO employee VALUES (1000, 'Zed', 'Shipping')", dbname=pg_db)
    caplog.set_level(logging.WARNING)
    run = Running(_config(pg_server, pg_db, **{"snapshot.mode": "never",
                                               "signal.data.collection": "public.debezium_signal",
                                               "table.include.list": "public.employee"}))
    try:
        run.wait_streaming()
        pg_server.execute("INSERT INTO debezium_signal VALUES ('b-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"public.employee\"], \"type\": \"blocking\"}')", dbname=pg_db)
        run.wait(lambda: "blocking snapshots are not part of the YugabyteDB connector" in caplog.text, "the warning")
        pg_server.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", dbname=pg_db)
        [create] = run.wait_data(TOPIC, 1)
        assert run.error is None
    finally:
        run.stop()
    assert create["value"]["payload"]["op"] == "c"


def test_metrics_are_under_the_chapters_postgres_mbeans(pg_server, pg_db):
    """The chapter's MBeans: ``debezium.postgres:type=connector-metrics,context=streaming,server=<topic.prefix>``."""
    from cdc_core.engine import Engine
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    engine = Engine(_config(pg_server, pg_db), offset_store=MemoryOffsetStore())
    prefix = engine.config.get("topic.prefix")
    assert engine.metrics.mbean_name("streaming") == \
        f"debezium.postgres:type=connector-metrics,context=streaming,server={prefix}"
