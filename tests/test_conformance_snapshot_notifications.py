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


def _in_announcement_order(rows: list[tuple]) -> list[tuple]:
    """The rows with every table's Initial Snapshot IN_PROGRESS moved before the TABLE_SCAN_COMPLETEDs.

    Debezium announces the tables (IN_PROGRESS) on the snapshot's own thread while its table-reading thread
    reports each TABLE_SCAN_COMPLETED (RelationalSnapshotChangeEventSource.createDataEvents, 2.7.4 and
    3.0.7 alike), so a one-row table can be reported read before the next table is announced; cdc
    announces them all first. Both are legal as long as no table is reported before it is announced,
    which this checks before it puts each snapshot's announcements first.
    """
    out: list[tuple] = []
    section: list[tuple] = []
    for row in rows + [("", "", {})]:
        if row[0] == "Initial Snapshot" and row[1] in ("IN_PROGRESS", "TABLE_SCAN_COMPLETED"):
            section.append(row)
            continue
        announced: set = set()
        for kind, data in ((r[1], r[2]) for r in section):
            if kind == "IN_PROGRESS":
                announced.add(data.get("current_collection_in_progress"))
            else:
                assert data.get("scanned_collection") in announced, f"{data} reported before it was announced"
        out += sorted(section, key=lambda r: r[1] != "IN_PROGRESS") + ([row] if row[1] else [])
        section = []
    return out


def _check(run) -> list[tuple]:
    debezium, cdc = run.debezium.get(TOPIC, []), run.cdc.get(TOPIC, [])
    assert debezium, "Debezium wrote no notification (the test's premise)"
    assert _in_announcement_order([_comparable(r) for r in cdc]) == [_comparable(r) for r in cdc], \
        "cdc announces every table of a snapshot before it reports any read"
    assert [_comparable(r) for r in cdc] == _in_announcement_order([_comparable(r) for r in debezium])
    for d, c in zip(debezium, cdc):
        assert c["key"]["schema"] == d["key"]["schema"] and c["value"]["schema"] == d["value"]["schema"]
        assert c["key"]["payload"] == {"id": c["value"]["payload"]["id"]}
    # Debezium gives every Initial Snapshot notification (a blocking snapshot's too) an id of its own.
    for side in (debezium, cdc):
        ids = [r["value"]["payload"]["id"] for r in side if r["value"]["payload"]["aggregate_type"] == "Initial Snapshot"]
        assert len(set(ids)) == len(ids), f"Initial Snapshot notifications sharing an id: {ids}"
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


SIGNAL_SETUP = ("CREATE TABLE debezium_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, "
                "data varchar(2048)); CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL); "
                "INSERT INTO products SELECT g, 'product ' || g FROM generate_series(1, 300) g; "
                "CREATE TABLE customers (id int PRIMARY KEY, name text); INSERT INTO customers VALUES (1, 'Ann')")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["incremental", "blocking"])
def test_postgres_ad_hoc_snapshot_notifications(pg_server, pg_db, tmp_path, kind):
    """An ad hoc snapshot of two tables, one of them named by a pattern matching no table too: every notification,
    the initial snapshot's first, as Debezium writes them (incremental ids are the signal's in both)."""
    require_real_debezium()
    signal = ("INSERT INTO debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', '{\"data-collections\": "
              f"[\"public.products\", \"public.nothing\", \"public.customers\"], \"type\": \"{kind}\"}}')")
    run = capture(postgres._side(pg_server, pg_db), SIGNAL_SETUP,
                  [signal, {"wait": {"table": "products", "records": 600}}, "INSERT INTO customers VALUES (2, 'Bob')"],
                  {**PROPERTIES, "table.include.list": "public.customers,public.products",
                   "signal.data.collection": "public.debezium_signal", "incremental.snapshot.chunk.size": "64"},
                  tmp_path)
    _check(run)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["incremental", "blocking"])
def test_mariadb_ad_hoc_snapshot_notifications(mariadb_server, mariadb_db, tmp_path, kind):
    """The PostgreSQL case above on MariaDB (Debezium's MySQL connector)."""
    require_real_debezium()
    db = mariadb_db
    setup = ("CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048));\n"
             "CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL);\n"
             "INSERT INTO products SELECT seq, CONCAT('product ', seq) FROM seq_1_to_300;\n"
             "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40));\n"
             "INSERT INTO customers VALUES (1, 'Ann')")
    signal = ("INSERT INTO debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', '{\"data-collections\": "
              f"[\"{db}.products\", \"{db}.nothing\", \"{db}.customers\"], \"type\": \"{kind}\"}}')")
    run = capture(mariadb._side(mariadb_server, db), setup,
                  [signal, {"wait": {"table": "products", "records": 600}}, "INSERT INTO customers VALUES (2, 'Bob')"],
                  {**PROPERTIES, "table.include.list": f"{db}.customers,{db}.products",
                   "signal.data.collection": f"{db}.debezium_signal", "incremental.snapshot.chunk.size": "64"},
                  tmp_path)
    _check(run)
