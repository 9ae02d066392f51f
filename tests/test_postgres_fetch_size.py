"""``snapshot.fetch.size``: the snapshot hands rows over in blocks of up to that many rows (Debezium's JDBC
fetch size, default 10240), never more, so the rows a snapshot holds in memory stay bounded by it."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore

ROWS = 40_000


def _snapshot_blocks(pg, db, **extra) -> list[int]:
    """Run an ``initial_only`` snapshot of ``public.t`` and return the sizes of the batches it handed over.

    The handler waits at first, so the server's rows pile up in the socket while the queue is full.
    """
    config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
              "database.user": pg.user, "database.dbname": db, "topic.prefix": "fs", "table.include.list": "public.t",
              "snapshot.mode": "initial_only", "max.queue.size": 20000, **extra}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    sizes: list[int] = []
    put = engine.queue.put

    def recording_put(items, *args):  # put(items, should_stop, weight), as the engine calls it
        sizes.append(sum(1 for r in items if getattr(r, "value", None) and r.value.get("op") == "r"))
        return put(items, *args)

    engine.queue.put = recording_put  # type: ignore[method-assign]
    first = threading.Event()

    def handler(records) -> None:
        if not first.is_set():
            first.set()
            time.sleep(1.0)

    runner = threading.Thread(target=engine.run, args=(handler,), daemon=True)
    runner.start()
    runner.join(120)
    assert not runner.is_alive(), "the initial_only snapshot did not end"
    assert sum(sizes) == ROWS
    return [s for s in sizes if s]


@pytest.fixture
def table(pg_server, pg_db):
    pg_server.execute(f"CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, {ROWS})",
                      dbname=pg_db)


def test_the_default_fetch_size_is_the_block_size(pg_server, pg_db, table):
    """Blocks beyond 2048 rows (the old cap) and up to Debezium's default 10240."""
    sizes = _snapshot_blocks(pg_server, pg_db)
    assert max(sizes) <= 10240
    assert max(sizes) > 2048, sizes


def test_a_small_fetch_size_bounds_every_block(pg_server, pg_db, table):
    sizes = _snapshot_blocks(pg_server, pg_db, **{"snapshot.fetch.size": 300})
    assert max(sizes) == 300 and len(sizes) >= ROWS // 300
