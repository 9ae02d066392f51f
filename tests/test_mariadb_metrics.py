"""MariaDB's binlog streaming metrics and the schema history metrics, from the library API and in Prometheus format."""

from __future__ import annotations

import json
import socket
import time
import urllib.request

from mariadb_cdc import EngineThread, connector_config


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ids(records) -> list[int]:
    return [r.value["after"]["id"] for r in records if r.value is not None and r.value.get("op") == "c"]


def _streaming(engine: EngineThread) -> None:
    deadline = time.monotonic() + 30
    while not engine.engine.metrics.streaming.connected:
        assert engine.alive and time.monotonic() < deadline, engine.error
        time.sleep(0.02)


def test_binlog_and_schema_history_metrics(mariadb_server, mariadb_db):
    mariadb_server.execute(["CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY)"], mariadb_db)
    port = _port()
    config = connector_config(mariadb_server, mariadb_db, **{"metrics.port": port})
    first = EngineThread(config).start()
    try:
        _streaming(first)
        mariadb_server.execute("INSERT INTO a VALUES (1)", mariadb_db)
        first.wait(lambda rs: _ids(rs) == [1], "the insert")
        file, pos = mariadb_server.execute("SHOW MASTER STATUS")[0][:2]
        gtids = mariadb_server.execute("SELECT @@gtid_binlog_pos")[0][0]
        deadline = time.monotonic() + 10
        while first.engine.metrics.streaming.values()["BinlogPosition"] < pos and time.monotonic() < deadline:
            time.sleep(0.05)
        stream = first.engine.metrics.streaming.values()
        history = first.engine.metrics.values()["schema-history"]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        first.stop()
    assert stream["BinlogFilename"] == file
    assert stream["BinlogPosition"] == pos
    assert stream["IsGtidModeEnabled"] is True
    assert stream["GtidSet"] == gtids
    for counter in ("NumberOfSkippedEvents", "NumberOfDisconnects", "NumberOfRolledBackTransactions",
                    "NumberOfNotWellFormedTransactions", "NumberOfLargeTransactions"):
        assert stream[counter] == 0, counter
    assert stream["MilliSecondsBehindSource"] >= 0
    # The snapshot recorded Debezium's statements (SET, two DROP TABLE IF EXISTS, DROP/CREATE DATABASE,
    # USE, both CREATE TABLE); nothing was recovered.
    assert history["Status"] == "RUNNING"
    assert history["ChangesApplied"] == 8 and history["ChangesRecovered"] == 0
    assert history["RecoveryStartTime"] == -1 and history["MilliSecondsSinceLastRecoveredChange"] == -1
    assert history["MilliSecondsSinceLastAppliedChange"] >= 0
    assert "CREATE TABLE `b`" in json.loads(history["LastAppliedChange"])["ddl"]
    assert first.engine.metrics.values()["schema-history"]["Status"] == "STOPPED"
    labels = 'name="dbserver1",plugin="mariadb"'
    # Prometheus writes values of 7+ integer digits in Go's exponent form (3.739126e+06): compare numbers.
    line = f'debezium_metrics_BinlogPosition{{context="streaming",{labels}}} '
    assert [float(x[len(line):]) for x in text.splitlines() if x.startswith(line)] == [float(pos)]
    assert f'debezium_metrics_IsGtidModeEnabled{{context="streaming",{labels}}} 1.0' in text
    assert f'debezium_metrics_NumberOfDisconnects{{context="streaming",{labels}}} 0.0' in text
    assert f'debezium_metrics_Status{{context="schema-history",{labels}}} 2.0' in text  # RUNNING, as the MXBean
    assert f'debezium_metrics_ChangesApplied{{context="schema-history",{labels}}} 8.0' in text

    # A restart recovers the history from the store, then applies the ALTER read from the binlog.
    mariadb_server.execute("ALTER TABLE a ADD COLUMN v INT", mariadb_db)
    started = int(time.time())
    second = EngineThread(config, offsets=first.offsets, history=first.history).start()
    try:
        _streaming(second)
        mariadb_server.execute("INSERT INTO a VALUES (2, 20)", mariadb_db)
        second.wait(lambda rs: _ids(rs) == [2], "the insert after the restart")
        history = second.engine.metrics.values()["schema-history"]
        mariadb_server.execute(f"KILL {_dump_thread(mariadb_server)}")
        deadline = time.monotonic() + 30
        while second.engine.metrics.streaming.values()["NumberOfDisconnects"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        second.stop()
    assert history["Status"] == "RUNNING"
    assert history["ChangesRecovered"] == 8
    assert history["ChangesApplied"] == 9  # the eight recovered, then the ALTER
    assert abs(history["RecoveryStartTime"] - started) <= 5
    assert "CREATE TABLE `b`" in json.loads(history["LastRecoveredChange"])["ddl"]
    assert "ALTER TABLE a ADD COLUMN v INT" in json.loads(history["LastAppliedChange"])["ddl"]


def _dump_thread(server) -> int:
    rows = server.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
    return int(rows[0][0])


def test_holding_global_lock_while_the_snapshot_locks_and_filtered_events(mariadb_server, mariadb_db):
    """``HoldingGlobalLock`` is true while the snapshot holds its lock (``extended``: until the rows are read), false
    after; ``NumberOfEventsFiltered`` counts the rows events of tables not captured (and they count as seen)."""
    import threading

    mariadb_server.execute(["CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(100))",
                            "INSERT INTO big SELECT seq, REPEAT('x', 100) FROM seq_1_to_60000",
                            "CREATE TABLE other (id INT PRIMARY KEY)"], mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "snapshot.locking.mode": "extended", "table.include.list": f"{mariadb_db}.big"})
    engine = EngineThread(config)
    seen: list[bool] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            seen.append(engine.engine.metrics.snapshot.values().get("HoldingGlobalLock"))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    engine.start()
    try:
        _streaming(engine)
        done.set()
        sampler.join()
        snapshot = engine.engine.metrics.snapshot.values()
        before = engine.engine.metrics.streaming.values()
        mariadb_server.execute(["INSERT INTO other VALUES (1), (2)", "INSERT INTO other VALUES (3)",
                                "INSERT INTO big VALUES (60001, 'y')"], mariadb_db)
        engine.wait(lambda rs: any(r.value and r.value.get("op") == "c" for r in rs), "the insert into big")
        after = engine.engine.metrics.streaming.values()
    finally:
        done.set()
        engine.stop()
    assert True in seen, "HoldingGlobalLock was never true during the extended-lock snapshot"
    assert seen.index(True) > 0 and seen[-1] is False and snapshot["HoldingGlobalLock"] is False
    assert before["NumberOfEventsFiltered"] == 0
    assert after["NumberOfEventsFiltered"] == 2  # two rows events of `other`
    assert after["TotalNumberOfEventsSeen"] == before["TotalNumberOfEventsSeen"] + 3


def test_the_signal_table_counts_in_the_snapshot_metrics_with_no_rows(mariadb_server, mariadb_db):
    """As Debezium's snapshot does: the signal table (captured by its table filter even outside the include list)
    is one of TotalTableCount's tables and in RowsScanned with 0, completed at once; its rows are never read."""
    mariadb_server.execute(["CREATE TABLE a (id INT PRIMARY KEY)", "INSERT INTO a SELECT seq FROM seq_1_to_20",
                            "CREATE TABLE dbz_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32), data TEXT)",
                            "INSERT INTO dbz_signal VALUES ('old', 'log', '{}')"], mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "table.include.list": f"{mariadb_db}.a", "signal.data.collection": f"{mariadb_db}.dbz_signal"})
    engine = EngineThread(config)
    engine.start()
    try:
        _streaming(engine)
        snapshot = engine.engine.metrics.snapshot.values()
        records = engine.snapshot()
    finally:
        engine.stop()
    assert (snapshot["TotalTableCount"], snapshot["RemainingTableCount"]) == (2, 0)
    assert snapshot["RowsScanned"] == {f"{mariadb_db}.a": 20, f"{mariadb_db}.dbz_signal": 0}
    assert not [r for r in records if r.topic.endswith(".dbz_signal") and r.value and r.value.get("op") == "r"]
