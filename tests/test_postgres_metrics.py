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


def _run(pg, db, config: dict, steps, store=None, timeout: float = 30.0):
    """Run an engine; each step is (action, condition on the engine): act once, then wait for the condition."""
    engine = Engine({"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
                     "database.user": pg.user, "database.dbname": db, "topic.prefix": "m", "poll.interval.ms": 50,
                     **config}, offset_store=store if store is not None else MemoryOffsetStore())
    seen: list = []
    runner = threading.Thread(target=engine.run, args=(seen.extend,), daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + timeout
        for action, condition in steps:
            action()
            while not condition(engine, seen) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert condition(engine, seen), f"timed out at step {action}"
        return engine, seen, engine.metrics.streaming.values()
    finally:
        engine.stop()
        runner.join(30)


def _streaming(engine, seen) -> bool:
    return engine.metrics.streaming.connected


def _creates(n: int):
    return lambda engine, seen: len([r for r in seen if r.value and r.value.get("op") == "c"]) >= n


def test_events_of_tables_and_message_prefixes_outside_the_filters_are_counted_as_filtered(pg_server, pg_db):
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE other (id int PRIMARY KEY)", dbname=pg_db)
    sql = ("INSERT INTO other VALUES (1), (2); SELECT pg_logical_emit_message(true, 'noise', 'x');"
           "SELECT pg_logical_emit_message(true, 'kept', 'y'); INSERT INTO a VALUES (1)")
    engine, seen, stream = _run(pg_server, pg_db, {"table.include.list": "public.a",
                                                   "message.prefix.exclude.list": "noise"},
                                [(lambda: None, _streaming), (lambda: pg_server.execute(sql, dbname=pg_db), _creates(1))])
    assert stream["NumberOfEventsFiltered"] == 3  # two rows of public.other, one message with prefix noise
    # As Debezium's CommonEventMeter: a filtered event counts as seen (the create and the kept message too).
    assert stream["TotalNumberOfEventsSeen"] == 3 + 2
    assert [r.value["message"]["prefix"] for r in seen if r.value and r.value.get("op") == "m"] == ["kept"]


def test_changes_the_slot_sends_again_are_counted_as_skipped(pg_server, pg_db):
    """A crash after the sink acknowledged two of a transaction's three changes, before the slot was confirmed
    (here never: flush.lsn.source=false): the slot sends the whole transaction again, and the two delivered
    changes are skipped (and counted), not repeated."""
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY)", dbname=pg_db)
    store = MemoryOffsetStore()
    insert = lambda: pg_server.execute("INSERT INTO a VALUES (1), (2), (3)", dbname=pg_db)  # noqa: E731
    config = {"flush.lsn.source": "false"}
    _, seen, first = _run(pg_server, pg_db, config, [(lambda: None, _streaming), (insert, _creates(3))], store=store)
    assert first["NumberOfSkippedEvents"] == 0
    second_change = [r for r in seen if r.value and r.value.get("op") == "c"][1]
    store.commit([({"server": "m"}, second_change.offset)])  # as if the process died right after it was acknowledged
    _, seen, second = _run(pg_server, pg_db, config, [(lambda: None, _streaming), (lambda: None, _creates(1))],
                           store=store)
    assert [r.value["after"]["id"] for r in seen if r.value and r.value.get("op") == "c"] == [3]
    assert second["NumberOfSkippedEvents"] == 2


def test_a_lost_replication_connection_counts_as_a_disconnect(pg_server, pg_db):
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY)", dbname=pg_db)
    kill = lambda: pg_server.execute(  # noqa: E731
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = %s", params=(pg_db,))
    insert = lambda: pg_server.execute("INSERT INTO a VALUES (1)", dbname=pg_db)  # noqa: E731
    reconnected = lambda engine, seen: (  # noqa: E731
        engine.metrics.streaming.values()["NumberOfDisconnects"] == 1 and engine.metrics.streaming.connected)
    engine, seen, stream = _run(pg_server, pg_db, {"retriable.restart.connector.wait.ms": 100},
                                [(lambda: None, _streaming), (kill, reconnected), (insert, _creates(1))])
    assert stream["NumberOfDisconnects"] == 1 and stream["Connected"] is True
    assert stream["NumberOfSkippedEvents"] == 0


def test_the_signal_table_counts_in_the_snapshot_metrics_with_no_rows(pg_server, pg_db):
    """As Debezium's snapshot does: the signal table (captured by its table filter even outside the include list)
    is one of TotalTableCount's tables and in RowsScanned with 0, completed at once; its rows are never read."""
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a SELECT generate_series(1, 20);"
                      "CREATE TABLE dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32), data text);"
                      "INSERT INTO dbz_signal VALUES ('old', 'log', '{\"message\": \"x\"}')", dbname=pg_db)
    engine, seen, _ = _run(pg_server, pg_db, {"table.include.list": "public.a",
                                              "signal.data.collection": "public.dbz_signal"},
                           [(lambda: None, _streaming)])
    snap = engine.metrics.snapshot.values()
    assert (snap["TotalTableCount"], snap["RemainingTableCount"]) == (2, 0)
    assert snap["RowsScanned"] == {"public.a": 20, "public.dbz_signal": 0}
    assert not [r for r in seen if r.topic == "m.public.dbz_signal"], "the signal table's rows were snapshotted"
