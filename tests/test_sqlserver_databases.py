"""Several databases in one SQL Server connector (database.names=db1,db2) on two stand-in databases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from change_table_tests import run as _run
from kit.engine import EngineThread, streaming_with_notifications
from psycopg import sql

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS, inventory, standin  # noqa: F401  (fixtures)

OTHER = "inventory_eu"


@pytest.fixture
def second(pg_server, inventory) -> Iterator[StandIn]:
    """A second CDC-enabled database on the same server, with ``dbo.customers`` holding two rows."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(OTHER)))
    pg_server.create_database(OTHER)
    server = StandIn(pg_server, OTHER)
    try:
        server.create_table(CUSTOMERS)
        server.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES "
                       "('Jean', 'Dupont', 'jean@example.fr'), ('Ana', 'Silva', 'ana@example.pt')")
        server.enable_db()
        server.enable_table("dbo", "customers")
        server.agent.start()
        yield server
    finally:
        server.agent.stop()
        server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                       (server.slot,))


def _data(records, db):
    return [r for r in records if r.topic == f"server1.{db}.dbo.customers"]


def test_two_databases_snapshot_stream_and_keep_an_offset_each(inventory, second):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{OTHER}"})
    first = _run(config, store, lambda rs: len(_data(rs, inventory.dbname)) >= 4 and len(_data(rs, OTHER)) >= 2)
    assert [r.value["after"]["id"] for r in _data(first, OTHER)] == [1001, 1002]
    assert {r.value["source"]["db"] for r in _data(first, OTHER)} == {OTHER}
    creates = [r for r in first if r.topic == "server1"]
    assert sorted(r.key["databaseName"] for r in creates) == sorted([inventory.dbname, OTHER])
    a = store.get({"server": "server1", "database": inventory.dbname})
    b = store.get({"server": "server1", "database": OTHER})
    assert a["snapshot_completed"] and b["snapshot_completed"]

    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('x', 'x', 'x@x')")
    second.execute("UPDATE dbo.customers SET email = 'ana@example.br' WHERE id = 1002")
    second.execute("DELETE FROM dbo.customers WHERE id = 1001")
    inventory.wait_captured()
    second.wait_captured()
    more = _run(config, store, lambda rs: len(_data(rs, inventory.dbname)) >= 1 and len(_data(rs, OTHER)) >= 3)
    assert [r.value["op"] for r in _data(more, inventory.dbname)] == ["c"]
    assert [r.value["op"] if r.value else None for r in _data(more, OTHER)] == ["u", "d", None]
    # Each database's offset is its own change table position.
    b2 = store.get({"server": "server1", "database": OTHER})
    assert b2["commit_lsn"] == _data(more, OTHER)[1].value["source"]["commit_lsn"] and b2["event_serial_no"] == 1
    a2 = store.get({"server": "server1", "database": inventory.dbname})
    assert a2["commit_lsn"] == _data(more, inventory.dbname)[0].value["source"]["commit_lsn"]
    # A restart delivers nothing again.
    second.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('y', 'y', 'y@x')")
    second.wait_captured()
    last = _run(config, store, lambda rs: len(_data(rs, OTHER)) >= 1)
    assert [(r.value["op"], r.value["after"]["id"]) for r in _data(last, OTHER)] == [("c", 1003)]
    assert _data(last, inventory.dbname) == []


def test_metrics_per_database_under_the_chapters_mbean_names(inventory, second):
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{OTHER}"})
    runner = EngineThread(config).start()
    try:
        runner.wait(lambda rs: len(_data(rs, inventory.dbname)) >= 4 and len(_data(rs, OTHER)) >= 2,
                    "both databases' snapshots")
        second.execute("DELETE FROM dbo.customers WHERE id = 1001")
        runner.wait(lambda rs: len(_data(rs, OTHER)) >= 4, "the delete and its tombstone")
        values = runner.engine.metrics.values()
    finally:
        runner.stop()
    metrics = runner.engine.metrics
    assert metrics.mbean_name("streaming") == "debezium.sql_server:type=connector-metrics,server=server1,task=0,context=streaming"
    assert metrics.mbean_name(f"snapshot,database={OTHER}") == (
        f"debezium.sql_server:type=connector-metrics,server=server1,task=0,context=snapshot,database={OTHER}")
    assert metrics.mbean_name("schema-history") == "debezium.sql_server:type=connector-metrics,context=schema-history,server=server1"
    assert values[f"snapshot,database={inventory.dbname}"]["TotalNumberOfEventsSeen"] == 4
    assert values[f"snapshot,database={OTHER}"]["TotalNumberOfEventsSeen"] == 2
    other = values[f"streaming,database={OTHER}"]
    assert (other["TotalNumberOfEventsSeen"], other["TotalNumberOfDeleteEventsSeen"]) == (1, 1)
    assert other["LastEvent"] == "dbo.customers:d" and other["CapturedTables"] == ["dbo.customers"]
    assert values[f"streaming,database={inventory.dbname}"]["TotalNumberOfEventsSeen"] == 0


def test_snapshot_metrics_per_database_count_each_databases_tables_and_rows(inventory, second):
    """Each database's snapshot MBean has its own SnapshotMeter: tables, rows scanned, completion."""
    inventory.create_table("CREATE TABLE dbo.empty_notes (id INT NOT NULL PRIMARY KEY, note VARCHAR(20))")
    inventory.create_table("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, qty INT NOT NULL)")
    inventory.execute("INSERT INTO dbo.orders SELECT g, g FROM generate_series(1, 7) g")
    inventory.enable_table("dbo", "empty_notes")
    inventory.enable_table("dbo", "orders")
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{OTHER}"})
    runner = EngineThread(config).start()
    try:
        runner.wait(lambda rs: len(_data(rs, inventory.dbname)) >= 4 and len(_data(rs, OTHER)) >= 2,
                    "both databases' snapshots")
        runner.wait(lambda rs: all(runner.engine.metrics.values()[f"snapshot,database={db}"]["SnapshotCompleted"]
                                   for db in (inventory.dbname, OTHER)), "both snapshots' completion")
        values = runner.engine.metrics.values()
    finally:
        runner.stop()
    first, other = values[f"snapshot,database={inventory.dbname}"], values[f"snapshot,database={OTHER}"]
    assert (first["TotalTableCount"], first["RemainingTableCount"]) == (3, 0)
    assert first["RowsScanned"] == {"dbo.customers": 4, "dbo.empty_notes": 0, "dbo.orders": 7}
    assert (other["TotalTableCount"], other["RemainingTableCount"]) == (1, 0)
    assert other["RowsScanned"] == {"dbo.customers": 2}
    for group in (first, other):
        assert group["SnapshotCompleted"] is True and group["SnapshotRunning"] is False
        assert group["SnapshotAborted"] is False
    assert "TotalTableCount" not in values[f"streaming,database={OTHER}"]
    # The task-level group (Debezium's has only the queue attributes) shows both snapshots together.
    task = values["snapshot"]
    assert (task["TotalTableCount"], task["RemainingTableCount"]) == (4, 0)
    assert (task["SnapshotCompleted"], task["SnapshotRunning"], task["SnapshotAborted"]) == (True, False, False)
    # (The engine counts the task's RowsScanned by schema.table: both databases' dbo.customers are one entry.)
    assert task["RowsScanned"] == {"dbo.customers": 6, "dbo.empty_notes": 0, "dbo.orders": 7}


SIGNAL = "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


def _signal_table_and_rows(inventory, second, rows: int, names: list[str], chunk: int) -> dict:
    """The signal table in the first database, ``rows`` more rows in the second; the connector's properties."""
    inventory.create_table(SIGNAL)
    inventory.enable_table("dbo", "debezium_signal")
    second.execute("INSERT INTO dbo.customers (first_name, last_name, email) "
                   f"SELECT 'n' || g, 'n', 'n' || g || '@x' FROM generate_series(1, {rows}) g")
    return inventory.properties(**{"database.names": ",".join(names), "snapshot.mode": "no_data",
                                   "table.include.list": "dbo.customers", "poll.interval.ms": 50,
                                   "signal.data.collection": f"{inventory.dbname}.dbo.debezium_signal",
                                   "incremental.snapshot.chunk.size": chunk})


def _streaming_with_notifications(config: dict, store: MemoryOffsetStore) -> tuple[EngineThread, list]:
    """The engine started on ``store``, streaming, and the notifications it sends."""
    return streaming_with_notifications(config, store)


def test_an_incremental_snapshot_of_the_second_databases_table_with_the_signal_table_in_the_first(inventory, second):
    store = MemoryOffsetStore()
    config = _signal_table_and_rows(inventory, second, 48, [inventory.dbname, OTHER], 10)
    runner, notes = _streaming_with_notifications(config, store)
    try:
        inventory.execute("INSERT INTO dbo.debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"" + OTHER + ".dbo.customers\"]}')")
        second.execute("UPDATE dbo.customers SET email = 'late@x' WHERE id = 1050")  # streamed meanwhile
        runner.wait(lambda rs: any((n.aggregate_type, n.type) == ("Incremental Snapshot", "COMPLETED") for n in notes), "the incremental snapshot", 60)
        second.execute("UPDATE dbo.customers SET email = 'last@x' WHERE id = 1001")
        runner.wait(lambda rs: any(r.value and r.value["op"] == "u" and r.key["id"] == 1001 for r in _data(rs, OTHER)),
                    "the update after the snapshot", 60)
    finally:
        runner.stop()
    records = runner.records
    reads = [r for r in _data(records, OTHER) if r.value and r.value["op"] == "r"]
    assert sorted(r.key["id"] for r in reads) == list(range(1001, 1051))
    assert {(r.value["source"]["db"], r.value["source"]["snapshot"]) for r in reads} == {(OTHER, "incremental")}
    assert _data(records, inventory.dbname) == []  # its customers were not asked for
    # The last event of each row is its latest state (a READ never comes after a newer change of its row).
    latest = {}
    for r in _data(records, OTHER):
        if r.value:
            latest[r.key["id"]] = r.value["after"]["email"]
    assert latest[1050] == "late@x" and latest[1001] == "last@x"
    kinds = [(n.aggregate_type, n.type) for n in notes]
    assert ("Incremental Snapshot", "STARTED") in kinds and ("Incremental Snapshot", "COMPLETED") in kinds
    # The other database's table named with its database (Debezium's TableId.identifier()), not dbo.customers.
    named = {n.type: n.additional_data for n in notes if n.aggregate_type == "Incremental Snapshot"}
    assert named["STARTED"]["data_collections"] == f"{OTHER}.dbo.customers"
    assert named["IN_PROGRESS"]["current_collection_in_progress"] == f"{OTHER}.dbo.customers"
    assert named["TABLE_SCAN_COMPLETED"]["scanned_collection"] == f"{OTHER}.dbo.customers"
    # Each database's offset under its own partition; the snapshot's progress rode in the signal database's.
    first = store.get({"server": "server1", "database": inventory.dbname})
    other = store.get({"server": "server1", "database": OTHER})
    assert first is not None and other is not None
    assert other["commit_lsn"] == _data(records, OTHER)[-1].value["source"]["commit_lsn"]


@pytest.mark.parametrize("signal_first", [True, False], ids=["signal-db-first", "signal-db-second"])
def test_an_incremental_snapshot_of_the_other_database_resumes_after_a_restart(inventory, second, signal_first):
    """Its progress rides in the offsets: a restart in the middle goes on from the last window, not from the start
    (whichever database the engine starts the signal controller with)."""
    from cdc_core.incremental.state import STATE_KEY

    store = MemoryOffsetStore()
    names = [inventory.dbname, OTHER] if signal_first else [OTHER, inventory.dbname]
    config = _signal_table_and_rows(inventory, second, 398, names, 5)

    def run(until, act=lambda: None):
        runner, notes = _streaming_with_notifications(config, store)
        try:
            act()
            runner.wait(lambda rs: until(rs, notes), "the expected records and notifications", 60)
        finally:
            runner.stop()
        return runner.records, notes

    def reads(records):
        return [r.key["id"] for r in _data(records, OTHER) if r.value and r.value["op"] == "r"]

    signal = ("INSERT INTO dbo.debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', "
              "'{\"data-collections\": [\"" + OTHER + ".dbo.customers\"]}')")
    first, _ = run(lambda rs, ns: len(reads(rs)) >= 30, lambda: inventory.execute(signal))
    done = set(reads(first))
    assert len(done) < 400
    assert STATE_KEY in store.get({"server": "server1", "database": inventory.dbname})
    # COMPLETED can come before the last window's records reach the handler: wait for both.
    second_run, notes = run(lambda rs, ns: any((n.aggregate_type, n.type) == ("Incremental Snapshot", "COMPLETED") for n in ns)
                            and set(reads(rs)) | done >= set(range(1001, 1401)))
    again = reads(second_run)
    assert set(again) | done == set(range(1001, 1401))
    assert min(again) > 1001  # resumed, not restarted
