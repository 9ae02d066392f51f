"""Snapshot modes and the handoff to streaming on the stand-in, with writers running during the snapshot."""

from __future__ import annotations

import threading

import pytest
from change_table_tests import without_schema_changes
from kit.engine import EngineThread, run_until

from cdc_sqlserver.standin.testing import CUSTOMERS, inventory, standin  # noqa: F401  (fixtures)

ROWS = 600


def _setup(standin):
    standin.create_table("CREATE TABLE dbo.counters (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute(f"INSERT INTO dbo.counters SELECT g, 0 FROM generate_series(1, {ROWS}) g")
    standin.enable_db()
    standin.enable_table("dbo", "counters")
    standin.agent.start()


def _fold(records) -> dict[int, int]:
    state: dict[int, int] = {}
    for r in records:
        if r.value is None:
            continue
        if r.value["op"] == "d":
            state.pop(r.value["before"]["id"], None)
        else:
            state[r.value["after"]["id"]] = r.value["after"]["v"]
    return state


@pytest.mark.parametrize("isolation", ["snapshot", "read_committed", "exclusive"])
def test_handoff_under_concurrent_writes_loses_and_repeats_nothing_that_matters(standin, isolation):
    _setup(standin)
    stop = threading.Event()
    writes = [0]

    def writer():
        n = 0
        while not stop.is_set():
            n += 1
            i = n % ROWS + 1
            standin.execute(f"UPDATE dbo.counters SET v = v + 1 WHERE id = {i}; "
                            f"INSERT INTO dbo.counters VALUES ({ROWS + n}, {n}); "
                            f"DELETE FROM dbo.counters WHERE id = {ROWS + n - 1}")
            writes[0] = n

    runner = EngineThread(standin.properties(**{"snapshot.isolation.mode": isolation, "snapshot.fetch.size": 50}))
    w = threading.Thread(target=writer)
    w.start()
    runner.start()
    try:
        runner.wait_streaming(90)
        runner.wait(lambda rs: writes[0] >= 50, "50 writes", 90)
        stop.set()
        w.join(30)
        standin.wait_captured()
        table = dict(standin.execute("SELECT id, v FROM dbo.counters"))
        runner.wait(lambda rs: _fold(without_schema_changes(rs)) == table, "the events to match the table", 90)
    finally:
        stop.set()
        runner.stop()
    records = without_schema_changes(runner.records)
    snapshot = [r for r in records if r.value and r.value["op"] == "r"]
    assert len({r.value["after"]["id"] for r in snapshot}) == len(snapshot) >= ROWS
    assert len({r.value["source"]["commit_lsn"] for r in snapshot}) == 1


def test_no_data_streams_only_changes_made_after_the_start(inventory):
    records = without_schema_changes(run_until(
        inventory.properties(**{"snapshot.mode": "no_data"}), lambda rs: bool(without_schema_changes(rs)), "the insert",
        action=lambda: inventory.execute(
            "INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('n', 'd', 'nd@x')")).records)
    assert [(r.value["op"], r.value["after"]["id"]) for r in records] == [("c", 1005)]


def test_initial_only_stops_after_the_snapshot(inventory):
    runner = EngineThread(inventory.properties(**{"snapshot.mode": "initial_only"})).start()
    runner.join(30)  # fails if initial_only kept running after the snapshot
    records = without_schema_changes(runner.records)
    assert [r.value["op"] for r in records] == ["r"] * 4



def _of(records, table):
    return [r for r in records if r.topic.endswith("." + table) and r.value is not None]


def test_an_included_table_without_cdc_is_snapshotted_with_all_its_columns_but_not_streamed(inventory, caplog):
    """As Debezium 2.7.4: the snapshot reads every table the filters pass, with a capture instance or not."""
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    inventory.create_table("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, note VARCHAR(20))")
    inventory.execute("INSERT INTO dbo.orders VALUES (1, 'one'), (2, 'two')")
    config = inventory.properties(**{"snapshot.mode": "initial", "table.include.list": "dbo.orders,dbo.customers"})
    store = MemoryOffsetStore()
    with caplog.at_level("WARNING"):
        records = run_until(config, lambda rs: len(_of(rs, "orders")) >= 2 and len(_of(rs, "customers")) >= 4,
                            "the snapshot", offsets=store).records
    orders = _of(records, "orders")
    assert [(r.value["op"], r.value["after"]) for r in orders] == [("r", {"id": 1, "note": "one"}),
                                                                     ("r", {"id": 2, "note": "two"})]
    # table.include.list order: orders first, so the whole snapshot's first record is one of its rows.
    assert orders[0].value["source"]["snapshot"] == "first"
    assert sum("dbo.orders is not enabled for CDC" in r.getMessage() for r in caplog.records) == 1
    inventory.execute("INSERT INTO dbo.orders VALUES (3, 'three')")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('n', 'n', 'n@x')")
    later = run_until(config, lambda rs: len(_of(rs, "customers")) >= 1, "the streamed insert", offsets=store,
                      settle=0.3).records
    assert _of(later, "orders") == []  # no change table: not streamed
