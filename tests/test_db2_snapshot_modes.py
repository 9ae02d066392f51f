"""Db2 snapshot modes and isolation levels on the stand-in: what is read, and where streaming starts."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


def _records(config, store, wait_streaming=True, action=None, until=None):
    engine = Engine(config, offset_store=store)
    records: list = []
    runner = threading.Thread(target=engine.run, args=(records.extend,))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        if wait_streaming:
            while not engine.metrics.streaming.connected:
                assert runner.is_alive() and time.monotonic() < deadline
                time.sleep(0.05)
        if action:
            action()
        while until is not None and not until(records):
            assert runner.is_alive() and time.monotonic() < deadline, records
            time.sleep(0.05)
    finally:
        if wait_streaming:
            engine.stop()
        runner.join(30)
    assert not runner.is_alive()
    return [(r.value["op"], r.value["after"]["ID"]) for r in records if r.topic.endswith(".CUSTOMERS") and r.value]


def test_initial_only_snapshots_then_stops(inventory):
    store = MemoryOffsetStore()
    ops = _records(inventory.properties(**{"snapshot.mode": "initial_only"}), store, wait_streaming=False)
    assert ops == [("r", i) for i in range(1001, 1005)]
    assert store.get({"server": "mydatabase"})["snapshot_completed"] is True


def test_no_data_streams_from_now(inventory):
    ops = _records(inventory.properties(**{"snapshot.mode": "no_data"}), MemoryOffsetStore(),
                   action=lambda: inventory.execute(INSERT + "('n', 'd', 'n@d')"), until=lambda rs: len(rs) >= 1)
    assert ops == [("c", 1005)]


@pytest.mark.parametrize("isolation", ["read_uncommitted", "repeatable_read"])
def test_always_snapshots_again_at_each_start(inventory, isolation):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"snapshot.mode": "always", "snapshot.isolation.mode": isolation})
    assert _records(config, store) == [("r", i) for i in range(1001, 1005)]
    inventory.execute(INSERT + "('n', 'd', 'n@d')")
    inventory.wait_captured()
    # The second start reads the table again, 1005 included, and streams after that snapshot.
    assert _records(config, store) == [("r", i) for i in range(1001, 1006)]
