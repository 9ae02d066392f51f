"""Transaction metadata and heartbeats of the SQL Server connector on the stand-in."""

from __future__ import annotations

import time

from change_table_tests import run as _run

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)


def test_begin_and_end_per_commit_lsn_with_the_commit_lsn_as_id(inventory):
    """As Debezium's TransactionMonitor with SQL Server's commit LSN as the id: BEGIN before a transaction's first
    event, END (counts per table) when the next one begins; every event's transaction block numbers it."""
    config = inventory.properties(**{"snapshot.mode": "no_data", "provide.transaction.metadata": "true"})

    def write():
        time.sleep(0.2)  # as before: a moment after streaming connected
        inventory.execute("BEGIN; INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'a', 'a@x'), "
                          "('b', 'b', 'b@x'); UPDATE dbo.customers SET email = 'c@x' WHERE id = 1001; COMMIT")
        inventory.execute("DELETE FROM dbo.customers WHERE id = 1005")

    records = _run(config, MemoryOffsetStore(), lambda rs: sum(1 for r in rs if r.topic == "server1.transaction") >= 3,
                   action=write)
    tx = [r for r in records if r.topic == "server1.transaction"]
    data = [r for r in records if r.topic.endswith(".customers") and r.value is not None]
    first_commit = data[0].value["source"]["commit_lsn"]
    second_commit = data[3].value["source"]["commit_lsn"]
    assert [(r.value["status"], r.value["id"]) for r in tx[:3]] == [
        ("BEGIN", first_commit), ("END", first_commit), ("BEGIN", second_commit)]
    assert tx[0].key == {"id": first_commit}
    end = tx[1].value
    assert end["event_count"] == 3
    # Debezium's TableId.identifier() of a SQL Server table: <database>.<schema>.<table>.
    assert end["data_collections"] == [{"data_collection": f"{inventory.dbname}.dbo.customers", "event_count": 3}]
    assert [r.value["transaction"] for r in data[:3]] == [
        {"id": first_commit, "total_order": n, "data_collection_order": n} for n in (1, 2, 3)]
    assert data[3].value["transaction"]["id"] == second_commit
    order = [r.topic for r in records if r.topic in ("server1.transaction",) or r.topic.endswith(".customers")]
    assert order.index("server1.transaction") < order.index(data[0].topic)


def test_heartbeats_carry_the_offset_while_idle(inventory):
    config = inventory.properties(**{"snapshot.mode": "no_data", "heartbeat.interval.ms": 100})
    records = _run(config, MemoryOffsetStore(), lambda rs: sum(1 for r in rs if r.topic.startswith("__debezium-heartbeat")) >= 2)
    beats = [r for r in records if r.topic.startswith("__debezium-heartbeat")]
    assert beats[0].topic == "__debezium-heartbeat.server1"
    assert beats[0].key == {"serverName": "server1"}
    assert "commit_lsn" in beats[-1].offset
