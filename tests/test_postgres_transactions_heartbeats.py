"""Transaction metadata, heartbeats and the slot advancing while captured tables are idle."""

from __future__ import annotations

import json
import time

from cdc_process import CdcProcess, server_properties, write_properties


def _start(pg, db, tmp_path, **source):
    config = write_properties(tmp_path / "app.properties", server_properties(pg, db, tmp_path, **source))
    return CdcProcess(config, tmp_path).start()


def test_transaction_metadata_begin_end_and_blocks(pg_server, pg_db, tmp_path):
    """Debezium's PostgresTransactionMonitor writes ``<txId>:<LSN>``: of the BEGIN message, of each change, of the
    commit (its end LSN, which the next transaction's source.sequence starts with)."""
    pg_server.execute("CREATE SCHEMA s1; CREATE SCHEMA s2; CREATE TABLE s1.a (pk int PRIMARY KEY, aa int);"
                      "CREATE TABLE s2.a (pk int PRIMARY KEY, aa int)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"provide.transaction.metadata": "true"})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
        pg_server.execute("BEGIN; INSERT INTO s1.a VALUES (1, 1); INSERT INTO s2.a VALUES (2, 1); "
                          "INSERT INTO s1.a VALUES (3, 1); COMMIT", dbname=pg_db)
        pg_server.execute("INSERT INTO s2.a VALUES (4, 1)", dbname=pg_db)
        tx = cdc.wait_events("dbserver1.transaction", 4)
        s1 = cdc.wait_events("dbserver1.s1.a", 2)
        s2 = cdc.wait_events("dbserver1.s2.a", 2)
    finally:
        assert cdc.terminate() == 0
    begin, end = tx[:2]
    txid = s1[0]["value"]["payload"]["source"]["txId"]
    events = (s1[0], s2[0], s1[1])
    lsns = [e["value"]["payload"]["source"]["lsn"] for e in events]
    # The next transaction's events carry the commit's end LSN as the last commit position.
    end_lsn = int(json.loads(s2[1]["value"]["payload"]["source"]["sequence"])[0])
    assert begin["key"]["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataKey"
    assert begin["value"]["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataValue"
    assert [f["field"] for f in begin["value"]["schema"]["fields"]] == [
        "status", "id", "event_count", "data_collections", "ts_ms"]
    assert begin["key"]["payload"] == {"id": f"{txid}:{lsns[0]}"}
    assert begin["value"]["payload"] == {"status": "BEGIN", "id": f"{txid}:{lsns[0]}", "event_count": None,
                                         "data_collections": None, "ts_ms": begin["value"]["payload"]["ts_ms"]}
    assert end_lsn > lsns[-1]
    assert end["key"]["payload"] == {"id": f"{txid}:{end_lsn}"}
    assert end["value"]["payload"] == {
        "status": "END", "id": f"{txid}:{end_lsn}", "event_count": 3,
        "data_collections": [{"data_collection": "s1.a", "event_count": 2}, {"data_collection": "s2.a", "event_count": 1}],
        "ts_ms": begin["value"]["payload"]["ts_ms"],
    }
    blocks = [e["value"]["payload"]["transaction"] for e in events]
    assert blocks == [
        {"id": f"{txid}:{lsns[0]}", "total_order": 1, "data_collection_order": 1},
        {"id": f"{txid}:{lsns[1]}", "total_order": 2, "data_collection_order": 1},
        {"id": f"{txid}:{lsns[2]}", "total_order": 3, "data_collection_order": 2},
    ]


def test_transactions_without_data_events_and_key_changes(pg_server, pg_db, tmp_path):
    """BEGIN/END also for a transaction with only a transactional message or a (skipped) TRUNCATE (event_count 0),
    and a primary-key change counts as two events (its delete and its create), as Debezium's TransactionMonitor
    sees each record the change emits."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 1)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"provide.transaction.metadata": "true"})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
        pg_server.execute("BEGIN; SELECT pg_logical_emit_message(true, 'p', 'c'); COMMIT", dbname=pg_db)
        pg_server.execute("TRUNCATE t", dbname=pg_db)
        pg_server.execute("INSERT INTO t VALUES (1, 1)", dbname=pg_db)
        pg_server.execute("BEGIN; UPDATE t SET id = 2 WHERE id = 1; INSERT INTO t VALUES (5, 5); COMMIT", dbname=pg_db)
        tx = cdc.wait_events("dbserver1.transaction", 8)
        t = cdc.wait_events("dbserver1.public.t", 6)
    finally:
        assert cdc.terminate() == 0
    payloads = [r["value"]["payload"] for r in tx]
    assert [(p["status"], p["event_count"]) for p in payloads] == [
        ("BEGIN", None), ("END", 0), ("BEGIN", None), ("END", 0),
        ("BEGIN", None), ("END", 1), ("BEGIN", None), ("END", 3)]
    assert payloads[1]["data_collections"] == [] and payloads[3]["data_collections"] == []
    assert payloads[7]["data_collections"] == [{"data_collection": "public.t", "event_count": 3}]
    ops = [(r["value"]["payload"]["op"], r["value"]["payload"]["transaction"]) if r["value"] else None for r in t]
    delete, tombstone, create, insert = ops[2:]
    assert delete[0] == "d" and tombstone is None and create[0] == "c" and insert[0] == "c"
    assert [(b["total_order"], b["data_collection_order"]) for b in (delete[1], create[1], insert[1])] == [
        (1, 1), (2, 2), (3, 3)]
    assert delete[1]["id"] == create[1]["id"]


def test_heartbeats_and_the_slot_advance_while_captured_tables_are_idle(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE captured (id int PRIMARY KEY); CREATE TABLE other (id int PRIMARY KEY);"
                      "CREATE TABLE hb (id int PRIMARY KEY, ts timestamptz); INSERT INTO hb VALUES (1, now())", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{
        "table.include.list": "public.captured", "heartbeat.interval.ms": 300,
        "heartbeat.action.query": "UPDATE hb SET ts = now() WHERE id = 1"})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
        slot_lsn = lambda: int(pg_server.execute(  # noqa: E731
            "SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'debezium'", dbname=pg_db)[0][0])
        start = slot_lsn()
        for i in range(20):
            pg_server.execute(f"INSERT INTO other VALUES ({i})", dbname=pg_db)
            time.sleep(0.1)
        heartbeats = cdc.wait_events("__debezium-heartbeat.dbserver1", 3)
        written = int(pg_server.execute("SELECT pg_current_wal_lsn() - '0/0'", dbname=pg_db)[0][0])
        cdc.wait_until(lambda: slot_lsn() > start + 1000, what="the slot to advance")
    finally:
        assert cdc.terminate() == 0
    hb = heartbeats[0]
    assert hb["key"] == {"schema": {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "serverName"}],
                                    "optional": False, "name": "io.debezium.connector.common.ServerNameKey", "version": 1},
                         "payload": {"serverName": "dbserver1"}}
    assert isinstance(hb["value"]["payload"]["ts_ms"], int)
    assert not (tmp_path / "events" / "dbserver1.public.other.jsonl").exists()
    assert written > start
    # The heartbeat query ran through the connector's own connection.
    assert pg_server.execute("SELECT ts > now() - interval '1 minute' FROM hb", dbname=pg_db)[0][0]


def test_skipped_operations_default_skips_truncate_and_none_keeps_updates(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v int)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"skipped.operations": "u"})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
        pg_server.execute("INSERT INTO t VALUES (1, 1); UPDATE t SET v = 2; DELETE FROM t", dbname=pg_db)
        events = cdc.wait_events("dbserver1.public.t", 3)
        time.sleep(0.5)
        events = cdc.events("dbserver1.public.t")
    finally:
        assert cdc.terminate() == 0
    assert [e["value"]["payload"]["op"] if e["value"] else None for e in events] == ["c", "d", None]
