"""Snapshot modes and the handoff to streaming on the stand-in, with writers running during the snapshot."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import CUSTOMERS, inventory, standin  # noqa: F401  (fixtures)

ROWS = 600


def _data_only(records):
    """A handler that keeps every record but the schema change events (tested in test_sqlserver_schema_history)."""
    return lambda batch: records.extend(r for r in batch if not str(getattr(r.value_schema, "name", "") or "")
                                        .endswith(".SchemaChangeValue"))


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

    engine = Engine(standin.properties(**{"snapshot.isolation.mode": isolation, "snapshot.fetch.size": 50}),
                    offset_store=MemoryOffsetStore())
    records: list = []
    runner = threading.Thread(target=engine.run, args=(_data_only(records),))
    w = threading.Thread(target=writer)
    w.start()
    runner.start()
    try:
        deadline = time.monotonic() + 90
        while not engine.metrics.streaming.connected or writes[0] < 50:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        stop.set()
        w.join(30)
        standin.wait_captured()
        table = dict(standin.execute("SELECT id, v FROM dbo.counters"))
        while _fold(records) != table:
            assert runner.is_alive() and time.monotonic() < deadline, "the events never matched the table"
            time.sleep(0.1)
    finally:
        stop.set()
        engine.stop()
        runner.join(30)
    snapshot = [r for r in records if r.value and r.value["op"] == "r"]
    assert len({r.value["after"]["id"] for r in snapshot}) == len(snapshot) >= ROWS
    assert len({r.value["source"]["commit_lsn"] for r in snapshot}) == 1


def test_no_data_streams_only_changes_made_after_the_start(inventory):
    engine = Engine(inventory.properties(**{"snapshot.mode": "no_data"}), offset_store=MemoryOffsetStore())
    records: list = []
    runner = threading.Thread(target=engine.run, args=(_data_only(records),))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while not engine.metrics.streaming.connected:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('n', 'd', 'nd@x')")
        while not records:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        engine.stop()
        runner.join(30)
    assert [(r.value["op"], r.value["after"]["id"]) for r in records] == [("c", 1005)]


def test_initial_only_stops_after_the_snapshot(inventory):
    records: list = []
    engine = Engine(inventory.properties(**{"snapshot.mode": "initial_only"}), offset_store=MemoryOffsetStore())
    runner = threading.Thread(target=engine.run, args=(_data_only(records),))
    runner.start()
    runner.join(30)
    assert not runner.is_alive(), "initial_only kept running after the snapshot"
    assert [r.value["op"] for r in records] == ["r"] * 4
