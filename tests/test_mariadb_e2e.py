"""End to end through ``cdc run``: a real MariaDB, the Debezium Server layout, the file sink.

The snapshot/stream handoff and kill -9 restarts are the kit's scenarios (tests/test_kit_*.py), for every connector.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import orjson

from cdc_process import CdcProcess, matches, write_properties
from mariadb_cdc import CUSTOMERS, mariadb_properties

DATA = Path(__file__).parent / "data" / "mariadb_customers"


def _expected(name: str, db: str, binlog: str = "mariadb-bin.000001") -> dict:
    """A fixture with the documented database name ``inventory`` replaced by the test's database, and the
    binlog file by the one the server writes now (earlier tests may have rotated the session's server's log)."""
    return json.loads((DATA / name).read_text().replace("inventory", db).replace("mariadb-bin.000001", binlog))


def test_documented_customer_events_field_for_field(mariadb_server, mariadb_db, tmp_path):
    """The chapter's key, create, update, delete, tombstone and schema change for `customers`, exactly."""
    mariadb_server.execute(CUSTOMERS, database=mariadb_db)
    mariadb_server.execute("FLUSH BINARY LOGS")  # a file other than the first, whatever ran before
    (binlog, *_), = mariadb_server.execute("SHOW MASTER STATUS")
    assert binlog != "mariadb-bin.000001"
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
    assert matches(_expected("create.json", mariadb_db, binlog), create["value"]) == []
    assert matches(_expected("update.json", mariadb_db, binlog), update["value"]) == []
    assert matches(_expected("delete.json", mariadb_db, binlog), delete["value"]) == []
    assert tombstone["value"] is None
    assert [c["value"]["payload"]["ddl"].split(" (")[0] for c in changes[:6]] == [
        changes[0]["value"]["payload"]["ddl"], f"DROP TABLE IF EXISTS `{mariadb_db}`.`customers`",
        f"DROP DATABASE IF EXISTS `{mariadb_db}`", changes[3]["value"]["payload"]["ddl"], f"USE `{mariadb_db}`",
        "CREATE TABLE `customers`"]
    assert changes[0]["value"]["payload"]["ddl"].startswith("SET character_set_server=")
    assert changes[3]["value"]["payload"]["ddl"].startswith(f"CREATE DATABASE `{mariadb_db}` CHARSET ")
    assert all(c["value"]["payload"]["source"]["snapshot"] == "true" for c in changes[:6])
    assert changes[6]["key"] == _expected("schema_change_key.json", mariadb_db)
    assert matches(_expected("schema_change.json", mariadb_db, binlog), changes[6]["value"]) == []
    sources = [e["value"]["payload"]["source"] for e in (create, update, delete)]
    assert sources[0]["pos"] < sources[1]["pos"] < sources[2]["pos"]
    assert len({s["gtid"] for s in sources}) == 3
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert history[-1]["ddl"].startswith("ALTER TABLE customers ADD middle_name")


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
