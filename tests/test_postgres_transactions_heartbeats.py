"""Transaction metadata, heartbeats and the slot advancing while captured tables are idle."""

from __future__ import annotations

import time

from cdc_process import CdcProcess, server_properties, write_properties


def _start(pg, db, tmp_path, **source):
    config = write_properties(tmp_path / "app.properties", server_properties(pg, db, tmp_path, **source))
    return CdcProcess(config, tmp_path).start()


def test_transaction_metadata_begin_end_and_blocks(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE SCHEMA s1; CREATE SCHEMA s2; CREATE TABLE s1.a (pk int PRIMARY KEY, aa int);"
                      "CREATE TABLE s2.a (pk int PRIMARY KEY, aa int)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"provide.transaction.metadata": "true"})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
        pg_server.execute("BEGIN; INSERT INTO s1.a VALUES (1, 1); INSERT INTO s2.a VALUES (2, 1); "
                          "INSERT INTO s1.a VALUES (3, 1); COMMIT", dbname=pg_db)
        tx = cdc.wait_events("dbserver1.transaction", 2)
        s1 = cdc.wait_events("dbserver1.s1.a", 2)
        s2 = cdc.wait_events("dbserver1.s2.a", 1)
    finally:
        assert cdc.terminate() == 0
    begin, end = tx
    tid = begin["key"]["payload"]["id"]
    assert begin["key"]["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataKey"
    assert begin["value"]["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataValue"
    assert begin["value"]["payload"]["status"] == "BEGIN" and begin["value"]["payload"]["event_count"] is None
    assert begin["value"]["payload"]["data_collections"] is None
    txid = s1[0]["value"]["payload"]["source"]["txId"]
    assert tid.startswith(f"{txid}:")
    assert end["value"]["payload"] == {
        "status": "END", "id": tid, "ts_ms": begin["value"]["payload"]["ts_ms"], "event_count": 3,
        "data_collections": [{"data_collection": "s1.a", "event_count": 2}, {"data_collection": "s2.a", "event_count": 1}],
    }
    blocks = [e["value"]["payload"]["transaction"] for e in (s1[0], s2[0], s1[1])]
    assert blocks == [
        {"id": tid, "total_order": 1, "data_collection_order": 1},
        {"id": tid, "total_order": 2, "data_collection_order": 1},
        {"id": tid, "total_order": 3, "data_collection_order": 2},
    ]


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
