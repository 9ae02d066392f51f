"""YB-21, YB-24: a lost node is passed over and streaming resumes from the stored LSN; all nodes down is an error.

The stand-in: two TCP proxies ("nodes", each its own process) in front of one throwaway PostgreSQL. Every YugabyteDB node
serves the same slot with one LSN sequence, which two proxies to one server model faithfully; two
separate PostgreSQL servers would not (their WAL positions are unrelated, and a slot recreated on
the survivor would start elsewhere, losing or repeating changes). What this does not prove: how a
real tserver failure looks to the client (timeouts rather than resets), YugabyteDB's own slot state
across nodes, or HYBRID_TIME LSNs; those need a real cluster (tests/test_yugabyte_container.py).
"""

from __future__ import annotations

import threading
import time

from cdc_core.errors import RetriableError
from cdc_core.stores.memory_offsets import MemoryOffsetStore

from node_proxy import NodeProxy
from yb_run import Running, yb_config

ROWS = 300


def _config(pg, db, nodes, **extra):
    """The connector over the given nodes, retrying fast."""
    hosts = ",".join(f"127.0.0.1:{n.port}" for n in nodes)
    return yb_config(hosts, 1, pg.user, db, **{"plugin.name": "pgoutput", "errors.retry.delay.initial.ms": 100,
                                                 "errors.retry.delay.max.ms": 200, "connect.timeout.ms": 2000, **extra})


def test_lost_node_is_passed_over_and_nothing_is_lost(pg_server, pg_db, caplog):
    """Node 1 dies while a writer commits 300 inserts: all 300 arrive through node 2 (duplicates allowed, by LSN)."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    node1, node2 = NodeProxy(pg_server.host, pg_server.port), NodeProxy(pg_server.host, pg_server.port)
    store = MemoryOffsetStore()
    run = Running(_config(pg_server, pg_db, [node1, node2]), store)
    try:
        run.wait_streaming()

        def write():
            for i in range(1, ROWS + 1):
                pg_server.execute(f"INSERT INTO t VALUES ({i})", dbname=pg_db)

        writer = threading.Thread(target=write)
        writer.start()
        run.wait(lambda: sum(r.topic == "dbserver.public.t" for r in list(run.records)) >= 50, "the first changes")
        node1.kill()  # the node the connector is connected to (libpq tried it first) goes away
        writer.join(60)
        run.wait(lambda: {r.value["after"]["id"] for r in list(run.records) if r.topic == "dbserver.public.t"}
                 >= set(range(1, ROWS + 1)), "every insert after the failover", timeout=60)
        events = [r for r in list(run.records) if r.topic == "dbserver.public.t"]
    finally:
        run.stop()
        node1.kill()
        node2.kill()
    assert "lost the connection to YugabyteDB at" in caplog.text, "node 1 was never lost: no failover happened"
    by_lsn = {r.value["source"]["lsn"]: r.value["after"]["id"] for r in events}
    assert sorted(by_lsn.values()) == list(range(1, ROWS + 1)), "deduplicated by source.lsn, each row once"
    stored = store.get({"server": "dbserver"})
    assert stored is not None and stored["lsn"] >= max(by_lsn)


def test_all_nodes_down_retries_then_fails_clearly(pg_server, pg_db):
    """With every node gone the connector retries errors.max.retries times, then stops naming every node."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    node1, node2 = NodeProxy(pg_server.host, pg_server.port), NodeProxy(pg_server.host, pg_server.port)
    run = Running(_config(pg_server, pg_db, [node1, node2], **{"errors.max.retries": 2}))
    try:
        run.wait_streaming()
        started = time.monotonic()
        node1.kill()
        node2.kill()
        run.wait(lambda: run.error is not None, "the connector to give up", timeout=60)
    finally:
        run.stop()
    assert isinstance(run.error, RetriableError)
    message = str(run.error)
    assert "YugabyteDB at" in message and f"127.0.0.1:{node1.port},127.0.0.1:{node2.port}" in message
    assert "every node in database.hostname was tried" in message
    assert time.monotonic() - started < 30
