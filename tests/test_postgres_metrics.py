"""Metrics with Debezium's names, from the library API and over HTTP in Prometheus format."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_snapshot_and_streaming_metrics(pg_server, pg_db):
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a SELECT generate_series(1, 50);"
                      "CREATE TABLE b (id int PRIMARY KEY); ANALYZE a", dbname=pg_db)
    port = _port()
    engine = Engine({"connector.class": "postgres", "database.hostname": pg_server.host,
                     "database.port": pg_server.port, "database.user": pg_server.user, "database.dbname": pg_db,
                     "topic.prefix": "m", "metrics.port": port, "poll.interval.ms": 50,
                     "provide.transaction.metadata": "true"},
                    offset_store=MemoryOffsetStore())
    seen = []
    runner = threading.Thread(target=engine.run, args=(seen.extend,))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while not engine.metrics.streaming.connected and time.monotonic() < deadline:
            time.sleep(0.05)
        pg_server.execute("INSERT INTO a VALUES (100); UPDATE a SET id = 101 WHERE id = 1; DELETE FROM b", dbname=pg_db)
        pg_server.execute("INSERT INTO b VALUES (1)", dbname=pg_db)
        while engine.metrics.streaming.values()["NumberOfCommittedTransactions"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        snap = engine.metrics.snapshot.values()
        stream = engine.metrics.streaming.values()
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        engine.stop()
        runner.join(30)
    assert snap["TotalTableCount"] == 2 and snap["RemainingTableCount"] == 0
    assert snap["SnapshotCompleted"] is True and snap["SnapshotRunning"] is False
    assert snap["RowsScanned"] == {"public.a": 50, "public.b": 0}
    assert snap["TotalNumberOfEventsSeen"] == 50
    assert stream["Connected"] is True
    assert stream["TotalNumberOfCreateEventsSeen"] == 3  # the insert, the key change's create, the insert into b
    assert stream["TotalNumberOfDeleteEventsSeen"] == 1
    assert stream["NumberOfCommittedTransactions"] == 2
    assert stream["LastTransactionId"].count(":") == 1
    assert stream["MilliSecondsBehindSource"] >= 0
    assert stream["QueueTotalCapacity"] == 8192
    assert 'debezium_metrics_TotalNumberOfEventsSeen{context="snapshot",name="m",plugin="postgres"} 50.0' in text
    assert 'debezium_metrics_RowsScanned{context="snapshot",name="m",plugin="postgres",table="public.a"} 50.0' in text
    assert 'debezium_metrics_Connected{context="streaming",name="m",plugin="postgres"} 1.0' in text
