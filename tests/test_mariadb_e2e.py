"""End to end through ``cdc run``: a real MariaDB, the Debezium Server layout, the file sink."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import orjson

from cdc_process import CdcProcess, matches, write_properties
from mariadb_cdc import CUSTOMERS, mariadb_properties

DATA = Path(__file__).parent / "data" / "mariadb_customers"


def _expected(name: str, db: str) -> dict:
    """A fixture with the documented database name ``inventory`` replaced by the test's database."""
    return json.loads((DATA / name).read_text().replace("inventory", db))


def test_documented_customer_events_field_for_field(mariadb_server, mariadb_db, tmp_path):
    """The chapter's key, create, update, delete, tombstone and schema change for `customers`, exactly."""
    mariadb_server.execute(CUSTOMERS, database=mariadb_db)
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path,
                               **{"topic.prefix": "mysql-server-1", "include.query": "true"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    topic = f"mysql-server-1.{mariadb_db}.customers"
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
        for sql in ("INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')",
                    "UPDATE customers SET first_name='Anne Marie' WHERE id=1001",
                    "DELETE FROM customers WHERE id=1001",
                    "ALTER TABLE customers ADD middle_name varchar(255) AFTER first_name"):
            mariadb_server.execute(sql, database=mariadb_db)
        events = cdc.wait_events(topic, 4)
        # The snapshot's SET, DROP TABLE IF EXISTS, DROP/CREATE DATABASE, USE and CREATE TABLE, then the ALTER.
        changes = cdc.wait_events("mysql-server-1", 7)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    create, update, delete, tombstone = events
    for e in events:
        assert e["key"] == _expected("key.json", mariadb_db), e
        assert e["headers"] == {}
    assert matches(_expected("create.json", mariadb_db), create["value"]) == []
    assert matches(_expected("update.json", mariadb_db), update["value"]) == []
    assert matches(_expected("delete.json", mariadb_db), delete["value"]) == []
    assert tombstone["value"] is None
    assert [c["value"]["payload"]["ddl"].split(" (")[0] for c in changes[:6]] == [
        changes[0]["value"]["payload"]["ddl"], f"DROP TABLE IF EXISTS `{mariadb_db}`.`customers`",
        f"DROP DATABASE IF EXISTS `{mariadb_db}`", changes[3]["value"]["payload"]["ddl"], f"USE `{mariadb_db}`",
        "CREATE TABLE `customers`"]
    assert changes[0]["value"]["payload"]["ddl"].startswith("SET character_set_server=")
    assert changes[3]["value"]["payload"]["ddl"].startswith(f"CREATE DATABASE `{mariadb_db}` CHARSET ")
    assert all(c["value"]["payload"]["source"]["snapshot"] == "true" for c in changes[:6])
    assert changes[6]["key"] == _expected("schema_change_key.json", mariadb_db)
    assert matches(_expected("schema_change.json", mariadb_db), changes[6]["value"]) == []
    sources = [e["value"]["payload"]["source"] for e in (create, update, delete)]
    assert sources[0]["pos"] < sources[1]["pos"] < sources[2]["pos"]
    assert len({s["gtid"] for s in sources}) == 3
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert history[-1]["ddl"].startswith("ALTER TABLE customers ADD middle_name")


def test_snapshot_then_stream_loses_and_duplicates_nothing(mariadb_server, mariadb_db, tmp_path):
    """Rows written while the snapshot runs land in the snapshot or the stream, exactly once."""
    mariadb_server.execute("CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(10))", database=mariadb_db)
    mariadb_server.execute("INSERT INTO items SELECT seq, CONCAT('v', seq) FROM seq_1_to_8000", database=mariadb_db)
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        i = 8001
        with mariadb_server.connect(mariadb_db) as conn, conn.cursor() as cur:
            while not stop.is_set() and i <= 14000:  # bounded: the point is the handoff, not the volume
                cur.execute("INSERT INTO items VALUES (%s, 'w')", (i,))
                written.append(i)
                i += 1

    t = threading.Thread(target=writer)
    t.start()
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{"max.batch.size": 512})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    topic = f"dbserver1.{mariadb_db}.items"
    try:
        cdc.wait_until(lambda: len(cdc.events(topic)) > 8000, 60, "the snapshot")
        time.sleep(0.5)
        stop.set()
        t.join()
        total = 8000 + len(written)
        events = cdc.wait_events(topic, total, 60)
    finally:
        stop.set()
        assert cdc.terminate() == 0, cdc.log()
    ids = [e["key"]["payload"]["id"] for e in events]
    assert len(ids) == len(set(ids)), "duplicate events at the snapshot/stream handoff"
    assert set(ids) == set(range(1, total + 1))
    ops = [e["value"]["payload"]["op"] for e in events]
    n = ops.count("r")
    assert n >= 8000 and ops[:n] == ["r"] * n and set(ops[n:]) <= {"c"}
    marks = [e["value"]["payload"]["source"]["snapshot"] for e in events[:n]]
    assert marks[0] == "first" and marks[-1] == "last" and set(marks[1:-1]) == {"true"}
    positions = {(e["value"]["payload"]["source"]["file"], e["value"]["payload"]["source"]["pos"]) for e in events[:n]}
    assert len(positions) == 1, "every snapshot event carries the same binlog position"


def test_kill_9_then_restart_keeps_every_committed_change(mariadb_server, mariadb_db, tmp_path):
    """kill -9 mid-stream, restart: every committed change is present; duplicates only from the unacknowledged batch."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mariadb_db)
    batch = 256
    config = write_properties(tmp_path / "app.properties",
                              mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{"max.batch.size": batch}))
    cdc = CdcProcess(config, tmp_path).start()
    topic = f"dbserver1.{mariadb_db}.t"
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the (empty) snapshot")
    with mariadb_server.connect(mariadb_db) as conn, conn.cursor() as cur:
        for i in range(1, 3001):
            cur.execute("INSERT INTO t VALUES (%s, 0)", (i,))
            if i == 1500:
                cdc.wait_until(lambda: len(cdc.events(topic)) >= 1000, what="1000 events")
                cdc.kill()
        # A multi-row transaction across the restart boundary exercises event/row skipping.
        cur.execute("UPDATE t SET v = 1 WHERE id <= 10")
        cur.execute("DELETE FROM t WHERE id = 3000")
    cdc2 = CdcProcess(config, tmp_path).start()
    try:
        cdc2.wait_until(lambda: any(e["value"] is None for e in cdc2.events(topic)), 60, what="the tombstone")
    finally:
        assert cdc2.terminate() == 0, cdc2.log()
    events = cdc2.events(topic)
    creates = [e["key"]["payload"]["id"] for e in events if e["value"] and e["value"]["payload"]["op"] == "c"]
    assert set(creates) == set(range(1, 3001)), "a committed insert is missing after kill -9"
    assert len(creates) - len(set(creates)) <= batch
    updates = [e for e in events if e["value"] and e["value"]["payload"]["op"] == "u"]
    assert sorted(e["key"]["payload"]["id"] for e in updates) == list(range(1, 11))
    assert [e["value"]["payload"]["source"]["row"] for e in updates] == list(range(10))


def test_sigterm_resumes_without_snapshot_or_duplicates(mariadb_server, mariadb_db, tmp_path):
    """A clean stop commits everything; the next run starts after it (history recovered, no snapshot)."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO t SELECT seq FROM seq_1_to_100", database=mariadb_db)
    config = write_properties(tmp_path / "app.properties", mariadb_properties(mariadb_server, mariadb_db, tmp_path))
    topic = f"dbserver1.{mariadb_db}.t"
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events(topic, 100)
    mariadb_server.execute("INSERT INTO t SELECT seq FROM seq_101_to_150", database=mariadb_db)
    cdc.wait_events(topic, 150)
    assert cdc.terminate() == 0
    mariadb_server.execute("ALTER TABLE t ADD COLUMN phone VARCHAR(20)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO t VALUES (151, '555')", database=mariadb_db)
    cdc = CdcProcess(config, tmp_path).start()
    try:
        cdc.wait_events(topic, 151)
        time.sleep(0.5)
        events = cdc.events(topic)
    finally:
        assert cdc.terminate() == 0
    assert [e["key"]["payload"]["id"] for e in events] == list(range(1, 152))
    assert events[-1]["value"]["payload"]["after"] == {"id": 151, "phone": "555"}
    offsets = orjson.loads((tmp_path / "offsets.json").read_bytes())
    assert offsets["offsets"][0]["partition"] == {"server": "dbserver1"}
