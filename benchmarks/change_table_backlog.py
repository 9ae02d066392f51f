"""What the change-table benchmarks share (SQL Server's and Db2's): drain a backlog through the engine, print the ratio."""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

#: ``BENCH_NO_SERIALIZE=1``: records are built but not serialized (the reader and the envelope alone).
SERIALIZE = not os.environ.get("BENCH_NO_SERIALIZE")


def arguments() -> argparse.Namespace:
    """``--changes N`` (default 200,000): the backlog's size; ``--rounds N`` (default 3): connector and bare read
    alternated that many times on the same backlog, medians reported."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


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
    # The agent's own change-table writes come back through its slot (test_decoding decodes every table) and are
    # dropped there; wait for that echo too, or it runs beside the first measurement and slows it.
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


def rounds(count: int, connector: Callable[[], tuple[int, float]], bare: Callable[[], tuple[int, float]],
           serialize: bool = True) -> None:
    """Alternate ``connector()`` and ``bare()`` (each: (changes or rows, seconds)) ``count`` times; print each
    round and the medians: rates, their ratio against the issue's 0.5x target, this process's CPU per change
    (PostgreSQL's own work is in neither; steadier than rates on a loaded machine) and the load average."""
    ratios, connector_rates, bare_rates, connector_cpu, bare_cpu = [], [], [], [], []
    for i in range(count):
        cpu = time.process_time()
        events, connector_s = connector()
        connector_cpu.append((time.process_time() - cpu) / events * 1e6)
        cpu = time.process_time()
        rows, bare_s = bare()
        bare_cpu.append((time.process_time() - cpu) / rows * 1e6)
        connector_rates.append(events / connector_s)
        bare_rates.append(rows / bare_s)
        ratios.append(connector_rates[-1] / bare_rates[-1])
        print(f"round {i + 1}: connector {events} changes in {connector_s:.2f}s = {connector_rates[-1]:,.0f}/s "
              f"({connector_cpu[-1]:.2f} us CPU each, its start included); bare read {rows} rows in {bare_s:.2f}s = "
              f"{bare_rates[-1]:,.0f}/s ({bare_cpu[-1]:.2f} us); ratio {ratios[-1]:.2f}; load {os.getloadavg()[0]:.1f}",
              flush=True)
    what = "JSON with schemas" if serialize else "records built, not serialized"
    print(f"median of {count}: connector {median(connector_rates):,.0f} changes/s ({what}), "
          f"{median(connector_cpu):.2f} us CPU per change; bare read {median(bare_rates):,.0f} rows/s, "
          f"{median(bare_cpu):.2f} us; ratio connector/bare {median(ratios):.2f} (target >= 0.5)")
