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


def test_debeziums_transaction_metadata_it(standin):
    """TransactionMetadataIT.transactionMetadata: tablea and tableb written alternately in one transaction (5 rows
    each), then one row of tableb on its own: BEGIN, the 10 events (total_order 1..10, data_collection_order
    (n + 1) / 2), END (event_count 10, testDB1.dbo.tablea: 5, testDB1.dbo.tableb: 5), BEGIN, the last event."""
    standin.create_table("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))")
    standin.create_table("CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))")
    standin.execute("INSERT INTO dbo.tablea VALUES (1, 'a')")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    standin.agent.start()
    config = standin.properties(**{"snapshot.mode": "initial", "provide.transaction.metadata": "true"})
    inserts = "; ".join(f"INSERT INTO dbo.tablea VALUES ({i}, 'a'); INSERT INTO dbo.tableb VALUES ({i}, 'b')"
                        for i in range(10, 15))

    def write():
        standin.execute(f"BEGIN; {inserts}; COMMIT")
        standin.execute("INSERT INTO dbo.tableb VALUES (1000, 'b')")

    records = _run(config, MemoryOffsetStore(), lambda rs: sum(1 for r in rs if r.topic == "server1.transaction") >= 3
                   and any(r.value and r.value.get("after", {}) and r.value["after"].get("id") == 1000
                           for r in rs if r.topic.endswith(".tableb")), action=write)
    streamed = [r for r in records if r.topic == "server1.transaction"
                or (r.topic.endswith((".tablea", ".tableb")) and r.value and r.value["op"] == "c")]
    assert [r.topic.rpartition(".")[2] for r in streamed] == (
        ["transaction"] + ["tablea", "tableb"] * 5 + ["transaction", "transaction", "tableb"])
    begin, end = streamed[0].value, streamed[11].value
    assert begin["status"] == "BEGIN" and begin["event_count"] is None and begin["data_collections"] is None
    tx_id = begin["id"]
    assert [r.value["transaction"] for r in streamed[1:11]] == [
        {"id": tx_id, "total_order": n, "data_collection_order": (n + 1) // 2} for n in range(1, 11)]
    assert (end["status"], end["id"], end["event_count"]) == ("END", tx_id, 10)
    assert end["data_collections"] == [{"data_collection": f"{standin.dbname}.dbo.tablea", "event_count": 5},
                                       {"data_collection": f"{standin.dbname}.dbo.tableb", "event_count": 5}]
    assert streamed[12].value["status"] == "BEGIN" and streamed[12].value["id"] != tx_id
    assert streamed[13].value["transaction"] == {"id": streamed[12].value["id"], "total_order": 1,
                                                 "data_collection_order": 1}
