"""A blocking snapshot longer than the server's wal_sender_timeout: the replication connection survives it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from psycopg import sql

from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.stores.memory_offsets import MemoryOffsetStore

SIGNAL_TABLE = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def test_blocking_snapshot_outlasting_wal_sender_timeout_keeps_the_stream(pg_server, pg_db):
    """While streaming is paused for a slow blocking snapshot, the walsender is not timed out and nothing repeats."""
    log_start = Path(pg_server.log_path).stat().st_size
    pg_server.execute(sql.SQL("ALTER DATABASE {} SET wal_sender_timeout = '1s'").format(sql.Identifier(pg_db)))
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, 300) g", dbname=pg_db)
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "blk",
              "poll.interval.ms": 50, "snapshot.mode": "no_data", "signal.data.collection": "public.debezium_signal",
              "table.include.list": "public.items", "max.queue.size": 20, "max.batch.size": 10}
    records: list[ChangeRecord] = []
    lock = threading.Lock()

    def handle(batch: list[ChangeRecord]) -> None:
        # A slow sink: the snapshot takes ~3 s, three times the server's wal_sender_timeout.
        if any(r.value and r.value["op"] == "r" for r in batch):
            time.sleep(0.1)
        with lock:
            records.extend(batch)

    engine = Engine(config, offset_store=MemoryOffsetStore())
    thread = threading.Thread(target=engine.run, args=(handle,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not engine.metrics.streaming.connected:
            assert thread.is_alive() and time.monotonic() < deadline, "streaming never started"
            time.sleep(0.02)
        pg_server.execute("INSERT INTO debezium_signal VALUES ('b1', 'execute-snapshot', "
                          "'{\"type\": \"blocking\", \"data-collections\": [\"public.items\"]}')", dbname=pg_db)
        pg_server.execute("UPDATE items SET v = 1 WHERE id = 1", dbname=pg_db)
        while True:
            with lock:
                done = any(r.value and r.value["op"] == "u" for r in records)
            if done:
                break
            assert thread.is_alive(), "the engine stopped"
            assert time.monotonic() < deadline, "the update after the blocking snapshot never arrived"
            time.sleep(0.05)
    finally:
        engine.stop()
        thread.join(30)
    reads = [r for r in records if r.value and r.value["op"] == "r"]
    assert sorted(r.value["after"]["id"] for r in reads) == list(range(1, 301))
    updates = [r for r in records if r.value and r.value["op"] == "u"]
    assert len(updates) == 1, f"the update was streamed {len(updates)} times (a reconnect replayed it)"
    with open(pg_server.log_path, encoding="utf-8", errors="replace") as fh:
        fh.seek(log_start)
        log = fh.read()
    assert "replication timeout" not in log, log
