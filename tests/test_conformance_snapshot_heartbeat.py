"""The heartbeat Debezium always sends at a snapshot's end, compared with the real Debezium.

Debezium 2.7.4's RelationalSnapshotChangeEventSource.doExecute ends every snapshot it runs (schema only
too) with ``dispatcher.alwaysDispatchHeartbeatEvent``: with heartbeats on, one heartbeat follows the
snapshot whatever ``heartbeat.interval.ms`` says. PostgreSQL runs no snapshot under ``no_data`` (its
snapshotting task drops the schema with the data); MySQL/MariaDB take a schema-only one. With an
interval of ten minutes no timed heartbeat can come in between: both engines write exactly that one.
"""

from __future__ import annotations

import pytest

from conformance.check import require_real_debezium
from conformance.harness import capture

import test_conformance_mariadb as mariadb
import test_conformance_postgres as postgres

HEARTBEAT_TOPIC = "__debezium-heartbeat.conformance"


def _heartbeats(run) -> tuple[list, list]:
    return run.debezium.get(HEARTBEAT_TOPIC, []), run.cdc.get(HEARTBEAT_TOPIC, [])


def _check(run, expected: int) -> None:
    debezium, cdc = _heartbeats(run)
    assert len(debezium) == expected, f"Debezium wrote {len(debezium)} heartbeats (the test's premise)"
    assert len(cdc) == len(debezium), f"cdc wrote {len(cdc)} heartbeats, Debezium {len(debezium)}"
    for d, c in zip(debezium, cdc):
        assert c["key"] == d["key"]
        assert c["value"]["schema"] == d["value"]["schema"]


PROPERTIES = {"heartbeat.interval.ms": "600000"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode, expected", [("initial", 1), ("no_data", 0)])
def test_postgres_snapshot_ends_with_a_heartbeat(pg_server, pg_db, tmp_path, mode, expected):
    require_real_debezium()
    run = capture(postgres._side(pg_server, pg_db), "CREATE TABLE hb (id int PRIMARY KEY, v text); "
                  "INSERT INTO hb VALUES (1, 'a'), (2, 'b')", ["INSERT INTO hb VALUES (3, 'c')"],
                  {**PROPERTIES, "snapshot.mode": mode}, tmp_path)
    _check(run, expected)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["initial", "no_data"])
def test_mariadb_snapshot_ends_with_a_heartbeat(mariadb_server, mariadb_db, tmp_path, mode):
    require_real_debezium()
    run = capture(mariadb._side(mariadb_server, mariadb_db), "CREATE TABLE hb (id int PRIMARY KEY, v text);\n"
                  "INSERT INTO hb VALUES (1, 'a'), (2, 'b')", ["INSERT INTO hb VALUES (3, 'c')"],
                  {**PROPERTIES, "snapshot.mode": mode}, tmp_path)
    _check(run, 1)


def _engine_records(pg_server, db: str, **extra) -> list:
    """A PostgreSQL engine's records (topic, op) from the start to a row inserted once the snapshot is read."""
    import threading
    import time

    from cdc_core.engine import Engine
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    pg_server.execute("CREATE TABLE hb (id int PRIMARY KEY); INSERT INTO hb VALUES (1), (2)", dbname=db)
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": db, "topic.prefix": "lib", "poll.interval.ms": 50,
              **extra}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    seen: list = []
    runner = threading.Thread(target=engine.run, args=(lambda records: seen.extend(records),))
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        pg_server.execute("INSERT INTO hb VALUES (3)", dbname=db)
        while not any(r.value and r.value.get("op") == "c" for r in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        engine.stop()
        runner.join(30)
    return [(r.topic, r.value.get("op") if r.value else None) for r in seen]


def test_the_snapshot_heartbeat_comes_between_the_snapshot_and_the_stream(pg_server, pg_db):
    got = _engine_records(pg_server, pg_db, **{"heartbeat.interval.ms": 600000})
    assert got == [("lib.public.hb", "r"), ("lib.public.hb", "r"), ("__debezium-heartbeat.lib", None),
                   ("lib.public.hb", "c")]


def test_postgres_default_heartbeats_send_none_at_the_snapshot_end(pg_server, pg_db):
    # cdc's PostgreSQL default (a heartbeat a minute, to keep the slot moving) is not Debezium's (off): Debezium
    # writes no heartbeat there, and neither does cdc unless heartbeat.interval.ms is set.
    got = _engine_records(pg_server, pg_db)
    assert got == [("lib.public.hb", "r"), ("lib.public.hb", "r"), ("lib.public.hb", "c")]


def _blocking_steps(table: str, rows: int, signal: str) -> list:
    return [signal, {"wait": {"table": table, "records": 2 * rows}}, f"INSERT INTO {table} VALUES (1000, 'after')"]


@pytest.mark.timeout(300)
def test_postgres_blocking_snapshot_ends_with_a_heartbeat(pg_server, pg_db, tmp_path):
    """A blocking snapshot runs the same snapshot code as the initial one: a heartbeat after it too (two in all)."""
    require_real_debezium()
    setup = ("CREATE TABLE debezium_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)); "
             "CREATE TABLE hb (id int PRIMARY KEY, v text); INSERT INTO hb SELECT g, 'v' || g FROM generate_series(1, 5) g")
    signal = ("INSERT INTO debezium_signal VALUES ('blocking-1', 'execute-snapshot', "
              "'{\"data-collections\": [\"public.hb\"], \"type\": \"blocking\"}')")
    run = capture(postgres._side(pg_server, pg_db), setup, _blocking_steps("hb", 5, signal),
                  {**PROPERTIES, "table.include.list": "public.hb,public.debezium_signal",
                   "signal.data.collection": "public.debezium_signal"}, tmp_path)
    _check(run, 2)


@pytest.mark.timeout(300)
def test_mariadb_blocking_snapshot_ends_with_a_heartbeat(mariadb_server, mariadb_db, tmp_path):
    """The PostgreSQL case above on MariaDB (Debezium's MySQL connector)."""
    require_real_debezium()
    db = mariadb_db
    setup = ("CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048));\n"
             "CREATE TABLE hb (id INT PRIMARY KEY, v TEXT);\n"
             "INSERT INTO hb SELECT seq, CONCAT('v', seq) FROM seq_1_to_5")
    signal = ("INSERT INTO debezium_signal VALUES ('blocking-1', 'execute-snapshot', "
              f"'{{\"data-collections\": [\"{db}.hb\"], \"type\": \"blocking\"}}')")
    run = capture(mariadb._side(mariadb_server, db), setup, _blocking_steps("hb", 5, signal),
                  {**PROPERTIES, "table.include.list": f"{db}.hb,{db}.debezium_signal",
                   "signal.data.collection": f"{db}.debezium_signal"}, tmp_path)
    _check(run, 2)
