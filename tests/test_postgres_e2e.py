"""End to end through ``cdc run``: a real PostgreSQL, the Debezium Server layout, the file sink.

The snapshot/stream handoff and kill -9 restarts are the kit's scenarios (tests/test_kit_*.py), for every connector.
"""

from __future__ import annotations

import json
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
