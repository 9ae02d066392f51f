"""connect.keep.alive against a real MariaDB: a dropped binlog connection is reopened where streaming left off."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from mariadb_cdc import EngineThread, connector_config


def _dump_threads(server) -> list[tuple[int, str]]:
    """(id, client host:port) of the server's binlog dump threads."""
    rows = server.execute("SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
    return [(int(r[0]), str(r[1])) for r in rows or []]


def _wait_dump_thread(server, other_than: set[int] = frozenset(), timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [i for i, _ in _dump_threads(server) if i not in other_than]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("no binlog dump thread appeared")


def _ids(records, table: str = "t") -> list[int]:
    return [r.value["after"]["id"] for r in records
            if r.value is not None and r.value.get("op") == "c" and r.topic.endswith("." + table)]


def _start(server, db, **extra) -> EngineThread:
    server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", db)
    engine = EngineThread(connector_config(server, db, **extra)).start()
    deadline = time.monotonic() + 30
    while not engine.engine.metrics.streaming.connected:
        assert engine.alive and time.monotonic() < deadline, f"not streaming: {engine.error!r}"
        time.sleep(0.02)
    return engine


def test_killed_binlog_connection_resumes_exactly_once_in_order(mariadb_server, mariadb_db):
    # errors.max.retries=0: were the connector restarted by the engine instead, the run would fail.
    engine = _start(mariadb_server, mariadb_db, **{"errors.max.retries": 0})
    total, per_tx = 6000, 30
    done = threading.Event()

    def write():
        conn = mariadb_server.connect(mariadb_db)
        try:
            with conn.cursor() as cur:
                for first in range(1, total + 1, per_tx):
                    cur.execute("BEGIN")
                    for i in range(first, first + per_tx):  # one rows event per statement: kills land mid-transaction
                        cur.execute("INSERT INTO t VALUES (%s, 'x')", (i,))
                    cur.execute("COMMIT")
        finally:
            conn.close()
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    kills = 0
    seen: set[int] = set()
    try:
        while not done.is_set() or kills < 3:
            thread = _wait_dump_thread(mariadb_server, seen)
            seen.add(thread)
            time.sleep(0.1)
            mariadb_server.execute(f"KILL {thread}")
            kills += 1
        writer.join()
        engine.wait(lambda rs: len(_ids(rs)) >= total, f"{total} inserts")
        time.sleep(0.3)  # a duplicate would arrive right behind
        ids = _ids(engine.snapshot())
        binlog = engine.engine.metrics.streaming.values()
    finally:
        engine.stop()
    assert engine.error is None
    assert ids == list(range(1, total + 1))
    assert binlog["NumberOfDisconnects"] == kills


def test_killed_in_the_middle_of_a_large_transaction(mariadb_server, mariadb_db, caplog):
    """The drop lands inside one transaction larger than the socket buffers: the reconnect replays it from its
    start and skips the rows events already delivered."""
    engine = _start(mariadb_server, mariadb_db, **{"errors.max.retries": 0, "max.queue.size": 200,
                                                   "max.batch.size": 100})
    statements, per_statement = 400, 50  # 20,000 rows of 1 kB: more than the sockets' buffers hold
    mariadb_server.execute("ALTER TABLE t MODIFY v TEXT", mariadb_db)
    try:
        engine.slow = 0.01  # the consumer lags, so the transaction waits in the server's send buffer
        conn = mariadb_server.connect(mariadb_db)
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for k in range(statements):
                values = ", ".join(f"({k * per_statement + i + 1}, REPEAT('v', 1000))" for i in range(per_statement))
                cur.execute(f"INSERT INTO t VALUES {values}")
            cur.execute("COMMIT")
        conn.close()
        engine.wait(lambda rs: len(_ids(rs)) >= 500, "the first rows of the transaction")
        caplog.set_level("INFO", logger="cdc.mariadb")
        mariadb_server.execute(f"KILL {_wait_dump_thread(mariadb_server)}")
        engine.slow = 0.0
        total = statements * per_statement
        engine.wait(lambda rs: len(_ids(rs)) >= total, "the whole transaction", timeout=60)
        time.sleep(0.3)
        ids = _ids(engine.snapshot())
    finally:
        engine.stop()
    assert ids == list(range(1, total + 1))
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("resuming the binlog")]
    assert len(resumed) == 1 and " 0 handled" not in resumed[0], resumed


def test_server_restart_resumes(mariadb_server, mariadb_db):
    engine = _start(mariadb_server, mariadb_db, **{"errors.max.retries": 0, "connect.keep.alive.interval.ms": 2000})
    try:
        mariadb_server.execute("INSERT INTO t VALUES (1, 'before')", mariadb_db)
        engine.wait(lambda rs: _ids(rs) == [1], "the row before the restart")
        mariadb_server.restart()
        mariadb_server.execute("INSERT INTO t VALUES (2, 'after')", mariadb_db)
        engine.wait(lambda rs: len(_ids(rs)) >= 2, "the row after the restart")
        time.sleep(0.3)
        ids = _ids(engine.snapshot())
        disconnects = engine.engine.metrics.streaming.values()["NumberOfDisconnects"]
    finally:
        engine.stop()
    assert ids == [1, 2]
    assert disconnects >= 1


def test_without_keep_alive_a_dropped_connection_is_the_engines_error(mariadb_server, mariadb_db):
    engine = _start(mariadb_server, mariadb_db, **{"connect.keep.alive": "false", "errors.max.retries": 0})
    mariadb_server.execute(f"KILL {_wait_dump_thread(mariadb_server)}")
    error = engine.join()
    assert error is not None and "lost the connection" in str(error)
    assert engine.engine.metrics.streaming.values()["NumberOfDisconnects"] == 1


def test_without_keep_alive_the_engine_retry_resumes(mariadb_server, mariadb_db):
    engine = _start(mariadb_server, mariadb_db, **{"connect.keep.alive": "false", "errors.retry.delay.initial.ms": 50})
    try:
        mariadb_server.execute("INSERT INTO t VALUES (1, 'a')", mariadb_db)
        engine.wait(lambda rs: _ids(rs) == [1], "the first row")
        first = _wait_dump_thread(mariadb_server)
        mariadb_server.execute(f"KILL {first}")
        mariadb_server.execute("INSERT INTO t VALUES (2, 'b')", mariadb_db)
        _wait_dump_thread(mariadb_server, {first})
        mariadb_server.execute("INSERT INTO t VALUES (3, 'c')", mariadb_db)
        engine.wait(lambda rs: len(_ids(rs)) >= 3, "the rows after the retry")
        time.sleep(0.3)
        ids = _ids(engine.snapshot())
    finally:
        engine.stop()
    assert ids == [1, 2, 3]


def _client_socket_states(port: int, server_port: int) -> set[str]:
    """TCP states (hex, /proc/net/tcp) of sockets from local port ``port`` to ``server_port``.

    Both ports: one ephemeral port may also be the local end of a connection to another server (a
    PostgreSQL or broker of another test lingering in TIME_WAIT), which is not the binlog connection.
    """
    states = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and int(fields[2].split(":")[1], 16) == server_port:
                states.add(fields[3])
    return states


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux's /proc/net/tcp to see socket states")
@pytest.mark.parametrize("nongraceful", [False, True])
def test_silent_server_is_noticed_and_stale_socket_closed(mariadb_server, mariadb_db, nongraceful):
    """A server that stops answering (SIGSTOP) is noticed within connect.keep.alive.interval.ms; with
    use.nongraceful.disconnect the stale socket is reset at once instead of waiting in FIN_WAIT2."""
    engine = _start(mariadb_server, mariadb_db, **{
        "errors.max.retries": 0, "connect.keep.alive.interval.ms": 1000, "connect.timeout.ms": 1000,
        "use.nongraceful.disconnect": str(nongraceful).lower()})
    pid = mariadb_server.pid
    try:
        mariadb_server.execute("INSERT INTO t VALUES (1, 'a')", mariadb_db)
        engine.wait(lambda rs: _ids(rs) == [1], "the first row")
        (_, host), = _dump_threads(mariadb_server)
        port = int(host.rsplit(":", 1)[1])
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 20
            while engine.engine.metrics.streaming.values()["NumberOfDisconnects"] < 1:
                assert time.monotonic() < deadline, "the silent connection was not noticed"
                time.sleep(0.05)
            time.sleep(0.2)
            states = _client_socket_states(port, mariadb_server.port)
        finally:
            os.kill(pid, signal.SIGCONT)
        mariadb_server.execute("INSERT INTO t VALUES (2, 'b')", mariadb_db)
        engine.wait(lambda rs: len(_ids(rs)) >= 2, "the row after the server answered again")
        ids = _ids(engine.snapshot())
    finally:
        engine.stop()
    assert ids == [1, 2]
    if nongraceful:
        assert states == set()  # reset: gone at once
    else:
        assert states == {"05"}  # FIN_WAIT2: closed politely, waiting for the silent server
