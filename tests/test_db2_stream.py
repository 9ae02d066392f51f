"""The Db2 connector end to end on the stand-in: snapshot, handoff, streaming, restarts, capture-mode changes."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from change_table_tests import run as _run
from kit.engine import EngineThread, run_until

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2 import streaming
from cdc_db2.connector import Db2Connector
from cdc_db2.standin.testing import CUSTOMERS, inventory, standin, zos_standin  # noqa: F401  (fixtures)

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


def _data(records, table="CUSTOMERS"):
    return [r for r in records if r.topic.endswith("." + table)]


def _replay(records) -> dict:
    """The table's rows, by ID, that replaying the events in order gives."""
    state: dict = {}
    for r in _data(records):
        if r.value is None:
            continue
        if r.value["op"] == "d":
            state.pop(r.value["before"]["ID"], None)
        else:
            a = r.value["after"]
            state[a["ID"]] = (a["ID"], a["FIRST_NAME"], a["LAST_NAME"], a["EMAIL"])
    return state


def _ops(records):
    return [(r.value["op"], (r.value["after"] or r.value["before"])["ID"]) if r.value else ("tombstone", r.key["ID"])
            for r in records]


@pytest.mark.parametrize("window", [5000, 1])
def test_snapshot_then_streaming_in_commit_order_and_restarts_at_the_exact_change(inventory, window, monkeypatch):
    monkeypatch.setattr(streaming, "WINDOW_TRANSACTIONS", window)  # 1: one transaction per window
    store = MemoryOffsetStore()
    config = inventory.properties()
    snap = _data(_run(config, store, lambda rs: len(_data(rs)) >= 4))
    assert [r.value["op"] for r in snap] == ["r"] * 4
    assert [r.value["after"]["ID"] for r in snap] == [1001, 1002, 1003, 1004]
    assert snap[0].topic == "mydatabase.MYSCHEMA.CUSTOMERS"
    assert [r.value["source"]["snapshot"] for r in snap] == ["first", "true", "true", "last"]
    assert all(r.value["source"]["change_lsn"] is None for r in snap)
    # Written while no connector runs: an insert, an update (a D+I pair), a key change, a delete in one transaction.
    inventory.execute(INSERT + "('john', 'doe', 'john.doe@example.org')")
    inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'noreply@example.org\' WHERE "ID" = 1005')
    inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "ID" = 2001 WHERE "ID" = 1001')
    inventory.execute('BEGIN; DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = 1005; '
                      'UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'W\' WHERE "ID" = 1003; COMMIT')
    second = _run(config, store, lambda rs: len(rs) >= 8)
    assert _ops(second) == [("c", 1005), ("u", 1005), ("d", 1001), ("tombstone", 1001), ("c", 2001), ("d", 1005),
                            ("tombstone", 1005), ("u", 1003)]
    update = second[1].value
    assert update["before"]["EMAIL"] == "john.doe@example.org" and update["after"]["EMAIL"] == "noreply@example.org"
    # One transaction: one commit LSN, change LSNs in log order.
    last_tx = [second[5].value["source"], second[7].value["source"]]
    assert last_tx[0]["commit_lsn"] == last_tx[1]["commit_lsn"] and last_tx[0]["change_lsn"] < last_tx[1]["change_lsn"]
    stored = store.get({"server": "mydatabase"})
    assert stored == {"commit_lsn": last_tx[1]["commit_lsn"], "change_lsn": last_tx[1]["change_lsn"],
                      "event_serial_no": 1}
    # A third run delivers only what came after the stored offset.
    inventory.execute(INSERT + "('x', 'y', 'z@x')")
    third = _run(config, store, lambda rs: len(rs) >= 1)
    time.sleep(0.3)
    assert _ops(third) == [("c", 1006)]


@pytest.mark.parametrize("isolation", ["read_committed", "exclusive"])
def test_concurrent_writers_during_the_snapshot_lose_nothing(standin, isolation):
    standin.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
    standin.execute(INSERT + ", ".join(f"('f{i}', 'l', 'e{i}@x')" for i in range(1500)))
    standin.add_table("MYSCHEMA", "CUSTOMERS")
    standin.agent.start()
    stop = threading.Event()
    written = []

    def writer():
        n = 0
        while not stop.is_set() and n < 100:
            standin.execute(INSERT + f"('w{n}', 'l', 'w{n}@x')")
            standin.execute(f'UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'u{n}\' WHERE "ID" = {1001 + n * 7}')
            standin.execute(f'DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = {1002 + n * 7}')
            written.append(n)
            n += 1
            time.sleep(0.002)

    thread = threading.Thread(target=writer)
    config = standin.properties(**{"snapshot.isolation.mode": isolation, "snapshot.fetch.size": 100})
    runner = EngineThread(config).start()
    thread.start()
    try:
        thread.join(60)
        stop.set()
        standin.wait_captured()
        final = {r[0]: r for r in standin.execute('SELECT "ID", "FIRST_NAME", "LAST_NAME", "EMAIL" '
                                                  'FROM "MYSCHEMA"."CUSTOMERS"')}
        # Replaying the events in order gives the table's contents: nothing lost.
        runner.wait(lambda rs: _replay(rs) == final, "the events to replay to the table's contents")
    finally:
        stop.set()
        runner.stop()
    assert len(written) == 100


def test_tables_put_into_and_taken_out_of_capture_mode_while_streaming(inventory, caplog):
    store = MemoryOffsetStore()

    def actions():
        # Created after the snapshot (one there would be snapshotted and known, as Debezium: no CREATE on ADDTABLE).
        inventory.create_table("MYSCHEMA", "ORDERS", [("ID", "INTEGER NOT NULL"), ("QTY", "INTEGER")], key=["ID"])
        inventory.execute('INSERT INTO "MYSCHEMA"."ORDERS" VALUES (1, 10)')  # not in capture mode yet: not streamed
        inventory.add_table("MYSCHEMA", "ORDERS")
        time.sleep(0.5)
        inventory.execute('INSERT INTO "MYSCHEMA"."ORDERS" VALUES (2, 20)')
        inventory.wait_captured()
        time.sleep(0.5)
        inventory.remove_table("MYSCHEMA", "CUSTOMERS")
        time.sleep(0.5)
        inventory.execute(INSERT + "('gone', 'x', 'gone@x')")  # out of capture mode: not streamed
        inventory.execute('INSERT INTO "MYSCHEMA"."ORDERS" VALUES (3, 30)')

    with caplog.at_level(logging.INFO):
        records = _run(inventory.properties(), store, lambda rs: len(_data(rs, "ORDERS")) >= 2, action=actions)
    time.sleep(0.3)
    orders = _data(records, "ORDERS")
    assert [(r.value["op"], r.value["after"]["ID"]) for r in orders] == [("c", 2), ("c", 3)]
    assert orders[0].topic == "mydatabase.MYSCHEMA.ORDERS"
    assert [r.value["op"] for r in _data(records)] == ["r"] * 4  # nothing streamed after REMOVETABLE
    # Schema change events: the snapshot's CREATE of CUSTOMERS, then ORDERS entering; none for CUSTOMERS leaving:
    # Debezium 2.7.4's Db2StreamingChangeEventSource emits no DROP (only CREATE for a table new to its schema and
    # ALTER for a re-registered one), though its documentation says an event comes when a table leaves.
    changes = [(r.value["tableChanges"][0]["type"], r.value["tableChanges"][0]["id"]) for r in records
               if r.topic == "mydatabase"]
    assert changes == [("CREATE", '"MYSCHEMA"."CUSTOMERS"'), ("CREATE", '"MYSCHEMA"."ORDERS"')]
    # Debezium 2.7.4 names the database of the snapshot's events by CURRENT SERVER (SchemaHistoryTopicIT:
    # "TESTDB"), ddl null; those of streaming carry the change table's TableId catalog, "" (Db2Connection.
    # listOfChangeTables: new TableId("", schema, table)), and ddl "N/A" (Db2SchemaChangeEventEmitter).
    names = [(r.key["databaseName"], r.value["databaseName"], r.value["ddl"]) for r in records if r.topic == "mydatabase"]
    real = inventory.execute("SELECT upper(current_database())")[0][0]  # the stand-in's CURRENT SERVER
    assert names == [(real, real, None), ("", "", "N/A")]
    messages = [r.getMessage() for r in caplog.records]
    assert any("added: MYSCHEMA.ORDERS" in m for m in messages), messages
    assert any("removed: MYSCHEMA.CUSTOMERS" in m for m in messages), messages


def test_capture_service_stopped_is_a_clear_error_then_streaming_resumes(standin, caplog):
    standin.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
    standin.add_table("MYSCHEMA", "CUSTOMERS")  # asncap not started
    config = standin.properties(**{"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 300})
    runner = EngineThread(config)
    with caplog.at_level(logging.WARNING):
        runner.start()
        try:
            runner.wait(lambda rs: any("is not running" in r.getMessage() for r in caplog.records),
                        "the warning that asncap is not running", 20)
            standin.agent.start()  # VALUES ASNCDC.ASNCDCSERVICES('start','asncdc') and the asncap it names
            runner.wait_streaming(20)
            standin.execute(INSERT + "('john', 'doe', 'john.doe@example.org')")
            runner.wait(lambda rs: bool(_data(rs)), "the insert", 20)
        finally:
            runner.stop()
    records = runner.records
    message = next(r.getMessage() for r in caplog.records if "is not running" in r.getMessage())
    assert "the ASN capture service of" in message and "ASNCDC.ASNCDCSERVICES('start','asncdc')" in message
    assert _ops(_data(records)) == [("c", 1001)]
    assert [r.value["tableChanges"][0]["type"] for r in records if r.topic == "mydatabase"] == ["CREATE"]


def test_a_column_added_online_is_an_alter_event_then_in_the_events(inventory):
    store = MemoryOffsetStore()

    def actions():
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'before\' WHERE "ID" = 1001')
        inventory.wait_captured()
        time.sleep(0.3)
        inventory.add_column("MYSCHEMA", "CUSTOMERS", "PHONE", "VARCHAR(20)")
        time.sleep(0.3)
        inventory.execute(INSERT.replace('"EMAIL")', '"EMAIL", "PHONE")') + "('new', 'n', 'new@x', '555')")

    records = _run(inventory.properties(**{"snapshot.mode": "no_data"}), store,
                   lambda rs: len(_data(rs)) >= 2, action=actions)
    changes = [r.value for r in records if r.topic == "mydatabase"]
    # no_data still snapshots the schema, as Debezium's schema-only snapshot: its CREATE ("last"), then the ALTER.
    assert [(c["tableChanges"][0]["type"], c["source"]["snapshot"]) for c in changes] == [
        ("CREATE", "last"), ("ALTER", "false")]
    assert [col["name"] for col in changes[1]["tableChanges"][0]["table"]["columns"]] == [
        "ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "PHONE"]
    update, insert = _data(records)
    assert "PHONE" not in update.value["after"] and update.value["after"]["LAST_NAME"] == "before"
    assert insert.value["after"] == {"ID": 1005, "FIRST_NAME": "new", "LAST_NAME": "n", "EMAIL": "new@x",
                                     "PHONE": "555"}


def test_a_row_captured_between_the_registrations_and_the_window_has_the_new_definition(inventory, monkeypatch):
    """The online procedure changes a default (no CD column changes), then a row is captured just after the
    connector looked at the registrations: the window must not reach that row before the table is migrated (as
    Debezium reads its max LSN before the change tables). Read the other way round, the row's event carried the old
    default (the ZZZDb2OnlineDefaultValueIT round of tests/test_db2_default_value_it.py failed so, now and then)."""
    armed, done = threading.Event(), threading.Event()
    refresh = Db2Connector._refresh

    def refresh_then_capture(self, reader, log):
        events = refresh(self, reader, log)
        if armed.is_set() and not done.is_set():
            inventory.execute(INSERT + "('late', 'l', 'late@x')")
            inventory.wait_captured()
            done.set()
        return events

    monkeypatch.setattr(Db2Connector, "_refresh", refresh_then_capture)

    def actions():
        inventory.set_default("MYSCHEMA", "CUSTOMERS", "EMAIL", "'none@x'", cd=True)
        inventory.set_state("MYSCHEMA", "CUSTOMERS", "I")
        inventory.set_state("MYSCHEMA", "CUSTOMERS", "A")
        inventory.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")
        armed.set()

    records = _run(inventory.properties(**{"snapshot.mode": "no_data"}), MemoryOffsetStore(),
                   lambda rs: len(_data(rs)) >= 1, action=actions)
    (late,) = _data(records)
    assert late.value["after"]["FIRST_NAME"] == "late"
    email = next(f for f in late.value_schema.to_json()["fields"][1]["fields"] if f["field"] == "EMAIL")
    assert email.get("default") == "none@x"


def test_a_restart_keeps_the_history_definitions_until_the_tables_next_changes(inventory):
    """As Debezium 2.7.4 recovers its schema on restart and migrates a table at its next changes: a column added while
    the connector was down is not announced at the restart; the table's next change brings an ALTER with the
    catalog's definition first (Db2StreamingChangeEventSource: the table's CD_NEW_SYNCHPOINT above the last
    position, migrateTable), then the change with the column."""
    from cdc_core.stores.memory_history import MemorySchemaHistoryStore

    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    config = inventory.properties()

    def run(until, action=lambda: None):
        """A run until ``until(records)``, ``action()`` once streaming, then 0.3 s for records that should not come."""
        return run_until(config, until, action=action, offsets=store, history=history, settle=0.3).records

    first = run(lambda rs: len(_data(rs)) >= 4)
    assert [r.value["tableChanges"][0]["type"] for r in first if r.topic == "mydatabase"] == ["CREATE"]
    assert [rec["tableChanges"][0]["type"] for rec in history.records()] == ["CREATE"]
    # A restart without changes announces nothing again.
    again = run(lambda rs: True)
    assert [r for r in again if r.topic == "mydatabase"] == []
    # While it is down: a column added online (the CD table gets it too).
    inventory.add_column("MYSCHEMA", "CUSTOMERS", "PHONE", "VARCHAR(20)")
    third = run(lambda rs: len(_data(rs)) >= 1,
                lambda: inventory.execute(INSERT.replace('"EMAIL")', '"EMAIL", "PHONE")') + "('p', 'q', 'p@q', '555')"))
    schema = [r for r in third if r.topic == "mydatabase"]
    assert [(r.value["tableChanges"][0]["type"], r.key["databaseName"]) for r in schema] == [("ALTER", "")]
    [created] = _data(third)
    assert third.index(schema[0]) < third.index(created)
    assert created.value["op"] == "c" and created.value["after"]["PHONE"] == "555"
    assert [f["field"] for f in created.value_schema.to_json()["fields"][1]["fields"]] == [
        "ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "PHONE"]
    assert [rec["tableChanges"][0]["type"] for rec in history.records()] == ["CREATE", "ALTER"]


def test_zos_update_rows_are_one_update_each(zos_standin):
    zos_standin.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
    zos_standin.add_table("MYSCHEMA", "CUSTOMERS", delete_insert=False)
    zos_standin.agent.start()

    def actions():
        zos_standin.execute(INSERT + "('john', 'doe', 'john.doe@example.org')")
        zos_standin.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'noreply@example.org\' WHERE "ID" = 1001')
        zos_standin.execute('DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = 1001')

    records = _run(zos_standin.properties(**{"db2.platform": "ZOS", "snapshot.mode": "no_data"}), MemoryOffsetStore(),
                   lambda rs: len(_data(rs)) >= 4, action=actions)
    assert _ops(_data(records)) == [("c", 1001), ("u", 1001), ("d", 1001), ("tombstone", 1001)]
    update = _data(records)[1].value
    assert update["before"] is None and update["after"]["EMAIL"] == "noreply@example.org"  # a U row has no before image


@pytest.mark.parametrize("at", [1, 3, 4])
def test_a_resume_inside_a_transaction_gives_the_rest_of_it_as_before(inventory, at):
    """Stored offsets inside a 4-insert transaction and at its update (a D+I pair): the events that followed,
    each with the same source block and offset as when first read (commit time, LSNs, event_serial_no)."""
    store = MemoryOffsetStore()
    config = inventory.properties()
    _run(config, store, lambda rs: len(_data(rs)) >= 4)  # the snapshot
    inventory.execute("BEGIN; " + "; ".join(INSERT + f"('t{i}', 'l', 't{i}@x')" for i in range(4)) +
                      '; UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'v\' WHERE "ID" = 1001; COMMIT')
    inventory.execute(INSERT + "('after', 'l', 'after@x')")
    first = MemoryOffsetStore()
    first.commit([({"server": "mydatabase"}, store.get({"server": "mydatabase"}))])
    everything = _data(_run(config, first, lambda rs: len(_data(rs)) >= 6))
    assert _ops(everything) == [("c", 1005), ("c", 1006), ("c", 1007), ("c", 1008), ("u", 1001), ("c", 1009)]
    resumed = MemoryOffsetStore()
    resumed.commit([({"server": "mydatabase"}, everything[at].offset)])
    rest = _data(_run(config, resumed, lambda rs: len(_data(rs)) >= len(everything) - at - 1))
    assert [(r.value["source"], r.offset) for r in rest] == [(r.value["source"], r.offset) for r in everything[at + 1:]]
