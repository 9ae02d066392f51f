"""Kit scenarios 4 and 5, for every connector: the server crashes and restarts, connections are cut.

Scenario 4: the database server is killed (``kill -9``, as a crash or an immediate stop) and started
again on the same data, once while the snapshot runs and once while streaming under a writer.
``cdc run`` must not exit: it reconnects by itself with back-off and, at the end, replaying its
events gives exactly the table. Scenario 5: ``cdc run`` reaches the server through a TCP proxy on
127.0.0.1; at random moments, while a writer runs, either the proxy resets every connection (a
network failure) or the server ends the connector's sessions; same ending. (A black hole -- no
bytes, no close -- is PostgreSQL's ``test_postgres_black_hole.py`` and MariaDB's keepalive tests.) The quick variant (CI)
does each fault a few times; ``CDC_SOAK=1`` many more.
"""

from __future__ import annotations

import random
import time

from kit import ITEMS, SOAK, Workdir, Writer, start_cdc, wait_replayed
from tcp_proxy import TcpProxy

SEED_ROWS = 20_000 if SOAK else 4_000
STREAM_CRASHES = 5 if SOAK else 1
CUTS = 25 if SOAK else 4
BATCH = 64
#: Fast reconnection (back-off from 100 ms, under a second); small fetches and a small queue, so the snapshot's
#: SELECT is still being read when the server dies.
RETRY = {"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 800, "snapshot.fetch.size": BATCH,
         "max.batch.size": BATCH, "max.queue.size": 4 * BATCH}


def _crash_and_start(server) -> None:
    """Kill the server (SIGKILL to it and its children) and start it on the same data and port."""
    server.kill()
    time.sleep(0.5)  # the connector sees the dead connection before the server is back
    server.start()


def test_server_crashes_mid_snapshot_and_mid_stream_lose_nothing(connector, tmp_path):
    """The server dies during the snapshot and while streaming; ``cdc run`` reconnects itself and misses nothing."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=11)
    writer.seed_rows(SEED_ROWS)
    work = Workdir(tmp_path)
    topic = connector.topic(ITEMS)
    cdc = start_cdc(connector, work, **RETRY)
    try:
        cdc.wait_until(lambda: len(cdc.events(topic)) > 0, 60, "the first snapshot batch")
        assert len(cdc.events(topic)) < SEED_ROWS, "the snapshot was delivered before the crash: make SEED_ROWS larger"
        _crash_and_start(connector.server)
        cdc.wait_until(lambda: len(cdc.events(topic)) >= SEED_ROWS, 120, "the snapshot after the server came back")
        for _ in range(STREAM_CRASHES):
            before = len(cdc.events(topic))
            writer.run(60)
            cdc.wait_until(lambda: len(cdc.events(topic)) > before, 60, "streaming after the writer's transactions")
            _crash_and_start(connector.server)
            writer.run(20)  # written while the connector may still be reconnecting
        result = wait_replayed(cdc, connector, ITEMS, 120)
        assert cdc.proc.poll() is None, f"cdc run exited instead of reconnecting:\n{cdc.log()[-3000:]}"
        log = cdc.log()
        assert "Traceback" not in log, log[-3000:]
        assert "retrying" in log or "reconnect" in log, "the reconnection was not logged:\n" + log[-3000:]
    finally:
        writer._stop.set()
        code = cdc.terminate()
    assert code == 0, cdc.log()[-3000:]
    assert result.problems == [], "\n".join(result.problems[:20])
    # At-least-once: a crash repeats the unacknowledged batches, or the interrupted snapshot once.
    assert result.snapshots <= 2, f"{result.snapshots} snapshots for one crash during the snapshot"


def test_connections_cut_at_random_moments_lose_nothing(connector, tmp_path):
    """Connections reset by the network or ended by the server, again and again under a writer: every change arrives."""
    rng = random.Random(5)
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=13)
    writer.seed_rows(500)
    work = Workdir(tmp_path)
    topic = connector.topic(ITEMS)
    proxy = TcpProxy(connector.server.host, connector.server.port)
    cdc = start_cdc(connector, work, **RETRY, **{"database.port": proxy.port})
    resets = 0
    try:
        cdc.wait_until(lambda: len(cdc.events(topic)) >= 500, 60, "the snapshot")
        writer.start(pause=0.01)
        for i in range(CUTS):
            before = len(cdc.events(topic))
            cdc.wait_until(lambda: len(cdc.events(topic)) > before, 60, "progress before the next cut")
            time.sleep(rng.uniform(0, 0.4))
            if i % 2:
                connector.cut_connections()
            else:
                resets += proxy.drop()
        writer.stop()
        assert resets > 0, "the proxy had no connection to reset: cdc run does not go through it"
        result = wait_replayed(cdc, connector, ITEMS, 120)
        assert cdc.proc.poll() is None, f"cdc run exited instead of reconnecting:\n{cdc.log()[-3000:]}"
        assert "Traceback" not in cdc.log(), cdc.log()[-3000:]
    finally:
        writer._stop.set()
        code = cdc.terminate()
        proxy.close()
    assert code == 0, cdc.log()[-3000:]
    assert result.problems == [], "\n".join(result.problems[:20])
    assert result.duplicates <= CUTS * (4 * BATCH + writer.max_transaction), f"{result.duplicates} redelivered"
