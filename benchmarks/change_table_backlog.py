"""What the change-table benchmarks share (SQL Server's and Db2's): drain a backlog through the engine, print the ratio."""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

#: ``BENCH_NO_SERIALIZE=1``: records are built but not serialized (the reader and the envelope alone).
SERIALIZE = not os.environ.get("BENCH_NO_SERIALIZE")


def changes_argument() -> int:
    """``--changes N`` (default 200,000): the backlog's size."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=200_000)
    return parser.parse_args().changes


@contextmanager
def throwaway_database() -> Iterator[tuple[Any, str]]:
    """A throwaway PostgreSQL (the stand-in's host) and a fresh database in it; stopped afterwards."""
    pg = EmbeddedPostgres()
    pg.start()
    try:
        db = "bench_" + uuid.uuid4().hex[:8]
        pg.create_database(db)
        yield pg, db
    finally:
        pg.stop()


def fill_backlog(standin: Any, table: str, changes: int) -> None:
    """Start the stand-in's capture agent and insert ``changes`` rows into ``table`` (id, name, amount, qty,
    created), 1,000 per statement; return once every change is in the change tables."""
    standin.agent.batch = 200_000
    standin.agent.start()
    started = time.monotonic()
    for lo in range(0, changes, 1000):
        standin.execute(f"INSERT INTO {table} SELECT g, 'name-' || g, g * 1.25, g * 7, "
                        f"timestamp '2024-01-01' + g * interval '1 second' "
                        f"FROM generate_series({lo + 1}, {min(lo + 1000, changes)}) g")
    standin.wait_captured(600)
    print(f"backlog of {changes} changes captured in {time.monotonic() - started:.1f}s")


def drain(config: dict[str, Any], store: MemoryOffsetStore, changes: int, serialize: bool = True) -> tuple[int, float]:
    """Run the engine from ``store``'s offsets until ``changes`` change events arrived; (events, seconds)."""
    serializer = JsonSerializer.from_config(Config(config))
    count = [0]
    first: list[float] = []
    done = threading.Event()

    def handler(records):
        if not first:
            first.append(time.monotonic())
        if serialize:
            serializer.serialize(records)
        count[0] += sum(1 for r in records if r.value is not None)
        if count[0] >= changes:
            done.set()

    engine = Engine(config, offset_store=store)
    runner = threading.Thread(target=engine.run, args=(handler,))
    started = time.monotonic()
    runner.start()
    done.wait(1200)
    seconds = time.monotonic() - started
    if first:
        print(f"engine start to first batch: {first[0] - started:.2f}s")
    engine.stop()
    runner.join(60)
    return count[0], seconds


def read_all(cursor: Any) -> int:
    """Fetch every row of an executed cursor in blocks of 10,000; how many there were."""
    n = 0
    while rows := cursor.fetchmany(10_000):
        n += len(rows)
    return n


def report(events: int, connector_s: float, bare: int, bare_s: float, serialize: bool = True) -> None:
    """Print both rates, their ratio against the issue's 0.5x target, and the load average."""
    print(f"connector: {events} changes in {connector_s:.2f}s = {events / connector_s:,.0f}/s "
          + ("(JSON with schemas)" if serialize else "(records built, not serialized)"))
    print(f"bare read: {bare} rows in {bare_s:.2f}s = {bare / bare_s:,.0f}/s")
    print(f"ratio connector/bare: {(events / connector_s) / (bare / bare_s):.2f} (target >= 0.5)")
    print(f"load average: {os.getloadavg()}")
