"""The SQL Server connector end to end on the stand-in: snapshot, handoff, streaming, restarts at the exact change."""

from __future__ import annotations

import threading

import pytest
from change_table_tests import run as _run

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin import dbapi as standin_dbapi
from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)
from cdc_sqlserver.streaming import StreamReader


def _data(records):
    return [r for r in records if r.topic.endswith(".customers")]


@pytest.mark.parametrize("mode,transactions,fetch", [("function", 500, 0), ("direct", 0, 2), ("function", 1, 0)])
def test_snapshot_then_streaming_in_commit_order(inventory, mode, transactions, fetch):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"data.query.mode": mode, "max.iteration.transactions": transactions,
                                     "streaming.fetch.size": fetch})
    first = _run(config, store, lambda rs: len(_data(rs)) >= 4)
    snap = _data(first)
    assert [r.value["op"] for r in snap] == ["r"] * 4
    assert [r.value["after"]["id"] for r in snap] == [1001, 1002, 1003, 1004]
    assert snap[0].topic == "server1." + inventory.dbname + ".dbo.customers"
    assert [r.value["source"]["snapshot"] for r in snap] == ["first", "true", "true", "last"]
    assert all(r.value["source"]["change_lsn"] is None for r in snap)

    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('john', 'doe', 'john.doe@example.org')")
    inventory.execute("UPDATE dbo.customers SET email = 'noreply@example.org' WHERE id = 1005")
    inventory.execute("UPDATE dbo.customers SET id = 2001 WHERE id = 1001")
    inventory.execute("DELETE FROM dbo.customers WHERE id = 1005")
    second = _run(config, store, lambda rs: len(rs) >= 7)
    ops = [(r.value["op"], (r.value["after"] or r.value["before"])["id"]) if r.value else ("tombstone", r.key["id"])
           for r in second]
    assert ops == [("c", 1005), ("u", 1005), ("d", 1001), ("tombstone", 1001), ("c", 2001), ("d", 1005),
                   ("tombstone", 1005)]
    update = second[1].value
    assert update["before"]["email"] == "john.doe@example.org" and update["after"]["email"] == "noreply@example.org"
    assert update["source"]["event_serial_no"] == 2
    key_delete, key_create = second[2].value["source"], second[4].value["source"]
    assert (key_delete["commit_lsn"], key_delete["change_lsn"]) == (key_create["commit_lsn"], key_create["change_lsn"])
    assert (key_delete["event_serial_no"], key_create["event_serial_no"]) == (1, 2)
    assert second[-1].offset == {"commit_lsn": second[-2].value["source"]["commit_lsn"],
                                 "change_lsn": second[-2].value["source"]["change_lsn"], "event_serial_no": 1}


def test_a_stored_offset_inside_a_transaction_resumes_at_the_next_change(inventory):
    """An offset at the 2nd change of a 4-row transaction (and inside an update pair's transaction): exactly the rest."""
    store = MemoryOffsetStore()
    config = inventory.properties(**{"snapshot.mode": "no_data"})
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES "
                      "('a', 'a', 'a@x'), ('b', 'b', 'b@x'), ('c', 'c', 'c@x'), ('d', 'd', 'd@x')")
    inventory.execute("UPDATE dbo.customers SET last_name = 'z' WHERE id IN (1001, 1002)")
    inventory.wait_captured()
    # Read every change once from the start of the capture instance (a stored offset at its start LSN).
    start = inventory.execute("SELECT start_lsn FROM cdc.change_tables")[0][0]
    from cdc_sqlserver.lsn import from_value

    origin = {"commit_lsn": str(from_value(bytes(start))), "change_lsn": "NULL", "event_serial_no": 0}
    partition = {"server": "server1", "database": inventory.dbname}
    full_store = MemoryOffsetStore()
    full_store.commit([(partition, origin)])
    everything = _run(config, full_store, lambda rs: len(_data(rs)) >= 6)
    assert [(r.value["op"], r.value["after"]["id"]) for r in everything] == [
        ("c", 1005), ("c", 1006), ("c", 1007), ("c", 1008), ("u", 1001), ("u", 1002)]
    # Resume after the second insert: the third and fourth, then the updates; nothing before, nothing twice.
    store.commit([(partition, everything[1].offset)])
    rest = _run(config, store, lambda rs: len(_data(rs)) >= 4)
    assert [(r.value["op"], r.value["after"]["id"]) for r in rest] == [("c", 1007), ("c", 1008), ("u", 1001),
                                                                       ("u", 1002)]
    # The rest of the resumed transaction carries its commit time, as before the restart (it was 0).
    assert [r.value["source"] for r in rest] == [r.value["source"] for r in everything[2:]]
    assert rest[0].value["source"]["ts_ms"] > 0
    # Resume after the first update (its offset has event_serial_no 2): the second update only.
    store.commit([(partition, everything[4].offset)])
    assert everything[4].offset["event_serial_no"] == 2
    last = _run(config, store, lambda rs: len(_data(rs)) >= 1)
    assert [(r.value["op"], r.value["after"]["id"]) for r in last] == [("u", 1002)]
    assert last[0].value["source"] == everything[5].value["source"]


def test_heartbeat_action_query_runs_at_each_heartbeat_and_its_changes_stream(inventory):
    inventory.create_table("CREATE TABLE dbo.heartbeat (id INT IDENTITY(1,1) NOT NULL PRIMARY KEY, ts DATETIME2(3))")
    inventory.enable_table("dbo", "heartbeat")
    config = inventory.properties(**{"heartbeat.interval.ms": 200,
                                     "heartbeat.action.query": "INSERT INTO dbo.heartbeat (ts) VALUES (SYSDATETIME())"})
    records = _run(config, MemoryOffsetStore(), lambda rs: len([r for r in rs if r.topic.endswith(".heartbeat")]) >= 2)
    beats = [r for r in records if r.topic.endswith(".heartbeat")]
    assert [r.value["op"] for r in beats[:2]] == ["c", "c"]
    assert any(r.topic == "__debezium-heartbeat.server1" for r in records)


def test_a_new_capture_instance_after_alter_takes_over_at_its_start_lsn(inventory):
    """The chapter's online schema evolution: ALTER, a second instance, changes go on; the old one retires."""
    store = MemoryOffsetStore()
    config = inventory.properties()
    _run(config, store, lambda rs: len(_data(rs)) >= 4)
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'a', 'a@x')")
    inventory.add_column("dbo", "customers", "phone_number", "VARCHAR(32)")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email, phone_number) "
                      "VALUES ('b', 'b', 'b@x', '+1-555-0100')")  # before the new instance: the old one has it
    inventory.wait_captured()
    inventory.enable_table("dbo", "customers", "dbo_customers_v2")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email, phone_number) "
                      "VALUES ('c', 'c', 'c@x', '+1-555-0101')")
    inventory.execute("UPDATE dbo.customers SET phone_number = '+1-555-0199' WHERE id = 1005")
    inventory.wait_captured()
    records = _data(_run(config, store, lambda rs: len(_data(rs)) >= 4))
    assert [(r.value["op"], r.value["after"]["id"]) for r in records] == [("c", 1005), ("c", 1006), ("c", 1007),
                                                                          ("u", 1005)]
    assert "phone_number" not in records[0].value["after"] and "phone_number" not in records[1].value["after"]
    assert records[2].value["after"]["phone_number"] == "+1-555-0101"
    assert records[3].value["before"]["phone_number"] is None and records[3].value["after"]["phone_number"] == "+1-555-0199"
    # Dropping the old instance changes nothing for what comes next.
    inventory.disable_table("dbo", "customers", "dbo_customers")
    inventory.execute("DELETE FROM dbo.customers WHERE id = 1007")
    inventory.wait_captured()
    more = _data(_run(config, store, lambda rs: len(_data(rs)) >= 1))
    assert [(r.value["op"], r.value["before"]["id"]) for r in more[:1]] == [("d", 1007)]


def test_an_instance_created_between_the_instance_check_and_the_window_takes_its_changes(inventory, monkeypatch):
    """A new capture instance and a change of it captured just after the reader looked at the instances: the
    window must not reach that change through the old instance (as Debezium reads its max LSN before the change
    tables). Read the other way round, the change was streamed from the old instance, without the new column."""
    armed, done = threading.Event(), threading.Event()
    check = StreamReader._check_instances

    def check_then_capture(self):
        check(self)
        if armed.is_set() and not done.is_set():
            inventory.enable_table("dbo", "customers", "dbo_customers_v2")
            inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email, phone_number) "
                              "VALUES ('c', 'c', 'c@x', '+1-555-0101')")
            inventory.wait_captured()
            done.set()

    monkeypatch.setattr(StreamReader, "_check_instances", check_then_capture)

    def actions():
        inventory.add_column("dbo", "customers", "phone_number", "VARCHAR(32)")
        armed.set()

    records = _data(_run(inventory.properties(**{"snapshot.mode": "no_data"}), MemoryOffsetStore(),
                         lambda rs: len(_data(rs)) >= 1, action=actions))
    assert [(r.value["op"], r.value["after"]["id"]) for r in records] == [("c", 1005)]
    assert records[0].value["after"]["phone_number"] == "+1-555-0101"


def test_a_large_transaction_is_fetched_in_bounded_parts(inventory, monkeypatch):
    """streaming.fetch.size 0 (the default) leaves the fetch size to the driver, as JDBC does with Debezium's 0, and
    mssql-jdbc streams: a 5,000-row transaction must not come from the driver in one piece (pyodbc's fetchall would
    hold every row of the window as Python objects at once)."""
    largest = [0]

    def counted(method):
        def fetch(self, *args):
            rows = method(self, *args)
            largest[0] = max(largest[0], len(rows))
            return rows
        return fetch

    monkeypatch.setattr(standin_dbapi.Cursor, "fetchall", counted(standin_dbapi.Cursor.fetchall))
    monkeypatch.setattr(standin_dbapi.Cursor, "fetchmany", counted(standin_dbapi.Cursor.fetchmany))
    config = inventory.properties(**{"snapshot.mode": "no_data"})

    def actions():
        largest[0] = 0
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) "
                          "SELECT 'f' || g, 'l', 'e' || g || '@x' FROM generate_series(1, 5000) g")

    records = _data(_run(config, MemoryOffsetStore(), lambda rs: len(_data(rs)) >= 5000, action=actions))
    assert [r.value["after"]["id"] for r in records] == list(range(1005, 6005))
    assert 0 < largest[0] <= 2048


@pytest.mark.parametrize("mode", ["when_needed", "initial"])
def test_cleanup_past_the_stored_offset(inventory, mode, caplog):
    """SC-28: the cleanup job removed changes after the offset: a new snapshot under when_needed, else a warning."""
    store = MemoryOffsetStore()
    config = inventory.properties(**{"snapshot.mode": mode})
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('w', 'w', 'w@x')")
    inventory.wait_captured()  # the snapshot's max LSN is this transaction's
    _run(config, store, lambda rs: len(_data(rs)) >= 5)
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('x', 'x', 'x@x')")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('y', 'y', 'y@x')")
    inventory.wait_captured()
    # Cleanup up to the last transaction: the insert of 1006 is gone from the change table.
    newest = inventory.execute("SELECT start_lsn FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC LIMIT 1")[0][0]
    inventory.cleanup(bytes(newest))
    with caplog.at_level("WARNING"):
        records = _data(_run(config, store, lambda rs: len(_data(rs)) >= (7 if mode == "when_needed" else 1)))
    warnings = [r.getMessage() for r in caplog.records if "no longer available" in r.getMessage()]
    assert len(warnings) == 1
    if mode == "when_needed":
        assert [r.value["op"] for r in records[:7]] == ["r"] * 7  # the new snapshot has 1006 and 1007
        assert "taking a new snapshot" in warnings[0]
    else:
        assert [(r.value["op"], r.value["after"]["id"]) for r in records] == [("c", 1007)]
        assert "which are lost" in warnings[0] and "snapshot.mode=when_needed" in warnings[0]
