"""The initial snapshot's notifications (aggregate type ``Initial Snapshot``), compared with the real Debezium.

With ``notification.enabled.channels=sink`` both engines write their notifications to one topic: STARTED,
IN_PROGRESS for every table to read, TABLE_SCAN_COMPLETED for each (with its rows), then COMPLETED; a start
that takes no snapshot says SKIPPED (PostgreSQL under ``no_data``), a schema-only one STARTED and COMPLETED
(MySQL/MariaDB under ``no_data``). Ids and timestamps are random and the clock's; the ping table's row count
depends on how many pings each engine's snapshot saw; everything else must be equal.
"""

from __future__ import annotations

import pytest

from conformance.check import require_real_debezium
from conformance.harness import PING_TABLE, capture

import test_conformance_mariadb as mariadb
import test_conformance_postgres as postgres

TOPIC = "notes"
PROPERTIES = {"notification.enabled.channels": "sink", "notification.sink.topic.name": TOPIC}


def _comparable(record: dict) -> tuple:
    payload = record["value"]["payload"]
    data = dict(payload["additional_data"] or {})
    if str(data.get("scanned_collection", "")).endswith(PING_TABLE):
        data.pop("total_rows_scanned", None)
    return payload["aggregate_type"], payload["type"], data


def _check(run) -> list[tuple]:
    debezium, cdc = run.debezium.get(TOPIC, []), run.cdc.get(TOPIC, [])
    assert debezium, "Debezium wrote no notification (the test's premise)"
    assert [_comparable(r) for r in cdc] == [_comparable(r) for r in debezium]
    for d, c in zip(debezium, cdc):
        assert c["key"]["schema"] == d["key"]["schema"] and c["value"]["schema"] == d["value"]["schema"]
        assert c["key"]["payload"] == {"id": c["value"]["payload"]["id"]}
    return [_comparable(r)[1] for r in cdc]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode, types", [
    ("initial", ["STARTED"] + ["IN_PROGRESS"] * 4 + ["TABLE_SCAN_COMPLETED"] * 4 + ["COMPLETED"]),
    ("no_data", ["SKIPPED"]),
])
def test_postgres_initial_snapshot_notifications(pg_server, pg_db, tmp_path, mode, types):
    require_real_debezium()
    run = capture(postgres._side(pg_server, pg_db), "CREATE TABLE hb (id int PRIMARY KEY); CREATE TABLE hc (id int "
                  "PRIMARY KEY); INSERT INTO hb VALUES (1), (2)", ["INSERT INTO hb VALUES (3)"],
                  {**PROPERTIES, "snapshot.mode": mode}, tmp_path)
    assert _check(run) == types


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode, types", [
    ("initial", ["STARTED"] + ["IN_PROGRESS"] * 4 + ["TABLE_SCAN_COMPLETED"] * 4 + ["COMPLETED"]),
    ("no_data", ["STARTED", "COMPLETED"]),
])
def test_mariadb_initial_snapshot_notifications(mariadb_server, mariadb_db, tmp_path, mode, types):
    require_real_debezium()
    run = capture(mariadb._side(mariadb_server, mariadb_db), "CREATE TABLE hb (id int PRIMARY KEY);\nCREATE TABLE hc "
                  "(id int PRIMARY KEY);\nINSERT INTO hb VALUES (1), (2)", ["INSERT INTO hb VALUES (3)"],
                  {**PROPERTIES, "snapshot.mode": mode}, tmp_path)
    assert _check(run) == types


@pytest.mark.timeout(300)
def test_postgres_notifications_follow_the_include_list_order(pg_server, pg_db, tmp_path):
    # The tables are read (and IN_PROGRESS) in table.include.list order, and TABLE_SCAN_COMPLETED's
    # data_collections list them in that order too (not sorted).
    require_real_debezium()
    run = capture(postgres._side(pg_server, pg_db), "CREATE TABLE hb (id int PRIMARY KEY); CREATE TABLE hc (id int "
                  "PRIMARY KEY); INSERT INTO hb VALUES (1), (2)", ["INSERT INTO hb VALUES (3)"],
                  {**PROPERTIES, "table.include.list": "public.hc,public.hb"}, tmp_path)
    _check(run)
    started = [_comparable(r)[2]["current_collection_in_progress"] for r in run.cdc[TOPIC]
               if r["value"]["payload"]["type"] == "IN_PROGRESS"]
    assert started[:2] == ["public.hc", "public.hb"]
