"""End to end through ``cdc run``: a real PostgreSQL, the Debezium Server layout, the file sink."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import orjson

from cdc_postgres.demo import CUSTOMERS_TABLE as CUSTOMERS

from cdc_process import CdcProcess, matches, server_properties, write_properties

DATA = Path(__file__).parent / "data" / "postgres_customers"



def _expected(name: str, db: str) -> dict:
    doc = json.loads((DATA / name).read_text())
    if "payload" in doc and isinstance(doc["payload"], dict) and "source" in doc["payload"]:
        doc["payload"]["source"]["db"] = db
    return doc


def test_documented_customer_events_field_for_field(pg_server, pg_db, tmp_path):
    """The chapter's key, create, update, delete and tombstone for `customers`, reproduced exactly."""
    pg_server.execute(CUSTOMERS, dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{"topic.prefix": "PostgreSQL_server"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
        pg_server.execute(
            "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')",
            dbname=pg_db,
        )
        pg_server.execute("UPDATE customers SET first_name = 'Anne Marie' WHERE id = 1", dbname=pg_db)
        pg_server.execute("DELETE FROM customers WHERE id = 1", dbname=pg_db)
        events = cdc.wait_events("PostgreSQL_server.public.customers", 4)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    create, update, delete, tombstone = events
    assert [e["topic"] for e in events] == ["PostgreSQL_server.public.customers"] * 4
    for e in events:
        assert e["key"] == _expected("key.json", pg_db), e
        assert e["headers"] == {}
    assert matches(_expected("create.json", pg_db), create["value"]) == []
    assert matches(_expected("update.json", pg_db), update["value"]) == []
    assert matches(_expected("delete.json", pg_db), delete["value"]) == []
    assert tombstone["value"] is None
    # One transaction per statement: three transaction ids, LSNs increasing.
    sources = [e["value"]["payload"]["source"] for e in (create, update, delete)]
    assert len({s["txId"] for s in sources}) == 3
    assert sources[0]["lsn"] < sources[1]["lsn"] < sources[2]["lsn"]
    assert json.loads(sources[1]["sequence"])[1] == str(sources[1]["lsn"])


def test_snapshot_then_stream_loses_and_duplicates_nothing(pg_server, pg_db, tmp_path):
    """Rows written while the snapshot runs land in the snapshot or the stream, exactly once."""
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v text)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 20000) g", dbname=pg_db)
    stop = threading.Event()
    written = []

    def writer():
        i = 20001
        with pg_server.connect(pg_db) as conn:
            while not stop.is_set():
                conn.execute("INSERT INTO items VALUES (%s, 'w')", (i,))
                written.append(i)
                i += 1

    t = threading.Thread(target=writer)
    t.start()
    props = server_properties(pg_server, pg_db, tmp_path, **{"max.batch.size": 512})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    try:
        cdc.wait_until(lambda: len(cdc.events("dbserver1.public.items")) > 20000, 60, "the snapshot")
        time.sleep(0.5)
        stop.set()
        t.join()
        total = 20000 + len(written)
        events = cdc.wait_events("dbserver1.public.items", total, 60)
    finally:
        stop.set()
        assert cdc.terminate() == 0, cdc.log()
    ids = [e["key"]["payload"]["id"] for e in events]
    assert len(ids) == len(set(ids)), "duplicate events at the snapshot/stream handoff"
    assert set(ids) == set(range(1, total + 1))
    ops = [e["value"]["payload"]["op"] for e in events]
    snapshot_count = ops.count("r")
    assert snapshot_count >= 20000 and ops[:snapshot_count] == ["r"] * snapshot_count
    assert set(ops[snapshot_count:]) <= {"c"}
    marks = [e["value"]["payload"]["source"]["snapshot"] for e in events[:snapshot_count]]
    assert marks[0] == "first" and marks[-1] == "last" and set(marks[1:-1]) == {"true"}


def test_kill_9_then_restart_keeps_every_committed_change(pg_server, pg_db, tmp_path):
    """kill -9 mid-stream, restart: every committed change is present; duplicates only from the unacknowledged batch."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v int)", dbname=pg_db)
    batch = 256
    props = server_properties(pg_server, pg_db, tmp_path, **{"max.batch.size": batch})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the (empty) snapshot")
    with pg_server.connect(pg_db) as conn:
        for i in range(1, 3001):
            conn.execute("INSERT INTO t VALUES (%s, 0)", (i,))
            if i == 1500:
                cdc.wait_until(lambda: len(cdc.events("dbserver1.public.t")) >= 1000, what="1000 events")
                cdc.kill()
                before_restart = len(cdc.events("dbserver1.public.t"))
        conn.execute("UPDATE t SET v = 1 WHERE id <= 10")
        conn.execute("DELETE FROM t WHERE id = 3000")
    cdc2 = CdcProcess(config, tmp_path).start()
    try:
        events = cdc2.wait_events("dbserver1.public.t", 3000 + 10 + 2, 60)
        cdc2.wait_until(lambda: any(e["value"] is None for e in cdc2.events("dbserver1.public.t")), what="the tombstone")
    finally:
        assert cdc2.terminate() == 0, cdc2.log()
    events = cdc2.events("dbserver1.public.t")
    creates = [e["key"]["payload"]["id"] for e in events if e["value"] and e["value"]["payload"]["op"] == "c"]
    assert set(creates) == set(range(1, 3001)), "a committed insert is missing after kill -9"
    duplicates = len(creates) - len(set(creates))
    assert duplicates <= batch, f"{duplicates} duplicates: more than one unacknowledged batch was replayed"
    updates = [e for e in events if e["value"] and e["value"]["payload"]["op"] == "u"]
    assert sorted(e["key"]["payload"]["id"] for e in updates) == list(range(1, 11))
    assert before_restart >= 1000


def test_sigterm_drains_commits_and_resumes_without_duplicates(pg_server, pg_db, tmp_path):
    """A clean stop commits everything written; the next run starts after it, with no snapshot again."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO t SELECT generate_series(1, 100)", dbname=pg_db)
    config = write_properties(tmp_path / "app.properties", server_properties(pg_server, pg_db, tmp_path))
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events("dbserver1.public.t", 100)
    pg_server.execute("INSERT INTO t SELECT generate_series(101, 150)", dbname=pg_db)
    cdc.wait_events("dbserver1.public.t", 150)
    assert cdc.terminate() == 0
    pg_server.execute("INSERT INTO t SELECT generate_series(151, 160)", dbname=pg_db)
    cdc = CdcProcess(config, tmp_path).start()
    try:
        events = cdc.wait_events("dbserver1.public.t", 160)
        time.sleep(1.0)
        events = cdc.events("dbserver1.public.t")
    finally:
        assert cdc.terminate() == 0
    ids = [e["key"]["payload"]["id"] for e in events]
    assert ids == list(range(1, 161))
    offsets = orjson.loads((tmp_path / "offsets.json").read_bytes())
    assert offsets["version"] == 1
    assert offsets["offsets"][0]["partition"] == {"server": "dbserver1"}
