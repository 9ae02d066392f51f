"""The library API against a real PostgreSQL: the slot is confirmed only for what the handler acknowledged."""

from __future__ import annotations

import threading
import time

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _confirmed(pg, db) -> int:
    rows = pg.execute("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'debezium'", dbname=db)
    return int(rows[0][0]) if rows else 0


def test_slot_advances_only_past_acknowledged_changes(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "lib",
              "poll.interval.ms": 50, "status.update.interval.ms": 100}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    release = threading.Event()
    acked: list = []

    def handler(records):
        if any(r.value and r.value["after"] and r.value["after"]["id"] == 2 for r in records):
            release.wait(30)  # the sink is slow with the batch holding id 2
        acked.extend(records)

    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while _confirmed(pg_server, pg_db) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        pg_server.execute("INSERT INTO t VALUES (1)", dbname=pg_db)
        while len(acked) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        after_first = _confirmed(pg_server, pg_db)
        pg_server.execute("INSERT INTO t VALUES (2)", dbname=pg_db)
        time.sleep(1.0)  # plenty of status updates while the handler holds the batch
        held = _confirmed(pg_server, pg_db)
        assert held >= after_first
        release.set()
        while len(acked) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        change_lsn = acked[-1].value["source"]["lsn"]
        assert held <= change_lsn, "the slot was confirmed past a change the sink had not acknowledged"
        while _confirmed(pg_server, pg_db) <= change_lsn and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _confirmed(pg_server, pg_db) > change_lsn, "the acknowledged change was never confirmed"
    finally:
        release.set()
        engine.stop()
        runner.join(30)
    assert [r.value["after"]["id"] for r in acked if r.value] == [1, 2]


def test_flush_lsn_source_false_leaves_the_slot_alone(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "lib",
              "poll.interval.ms": 50, "status.update.interval.ms": 100, "flush.lsn.source": "false"}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    acked: list = []
    runner = threading.Thread(target=engine.run, args=(acked.extend,))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while not engine.metrics.streaming.connected and time.monotonic() < deadline:
            time.sleep(0.05)
        start = _confirmed(pg_server, pg_db)
        for i in range(5):
            pg_server.execute(f"INSERT INTO t VALUES ({i})", dbname=pg_db)
        while len(acked) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        assert _confirmed(pg_server, pg_db) == start
    finally:
        engine.stop()
        runner.join(30)


def test_heartbeats_are_on_by_default_for_postgres_and_can_be_turned_off():
    base = {"connector.class": "postgres", "database.dbname": "x", "topic.prefix": "p"}
    assert Engine(base, offset_store=MemoryOffsetStore()).config.get("heartbeat.interval.ms") == 60000
    assert Engine({**base, "heartbeat.interval.ms": "0"}, offset_store=MemoryOffsetStore()).config.get(
        "heartbeat.interval.ms") == "0"
