"""Sink-only benchmark: the same serialized batches written to each sink's ``write``, no database in the loop.

Records come from the same table as ``benchmarks/sinks.py`` (a PostgreSQL backlog drained once,
serialized by JsonSerializer into ``max.batch.size`` batches, kept in memory), then each sink gets
every batch in turn and ``write`` returns only once the batch is acknowledged, as in the engine.
This isolates what each sink costs per record from the connector's decoding. ``--profile N`` prints
the top N functions (own time) of the writing thread and, for sinks with a thread of their own
(NATS' event loop), of that thread too.
Usage: ``uv run python benchmarks/sink_write.py [--rows N] [--sinks file,redis,...] [--profile N] [--repeat R] [--set NAME=VALUE]``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sinks as bench  # noqa: E402
from cdc_core.config import Config  # noqa: E402
from cdc_core.engine import Engine  # noqa: E402
from cdc_core.plugins import registry  # noqa: E402
from cdc_core.serializers.json import JsonSerializer  # noqa: E402
from cdc_core.stores.memory_offsets import MemoryOffsetStore  # noqa: E402
from cdc_postgres.embedded import EmbeddedPostgres  # noqa: E402


def capture(rows: int) -> list[list[Any]]:
    """``rows`` change events of the benchmark table, serialized, in the engine's batches."""
    batches: list[list[Any]] = []
    count = 0
    with EmbeddedPostgres() as pg:
        pg.create_database("bench")
        pg.execute(bench.TABLE, dbname="bench")
        pg.execute("CREATE PUBLICATION bench_pub FOR TABLE bench", dbname="bench")
        pg.execute("SELECT pg_create_logical_replication_slot('cap', 'pgoutput')", dbname="bench")
        pg.execute(bench.INSERT % rows, dbname="bench")
        serializer = JsonSerializer()
        store = MemoryOffsetStore()
        store.commit([({"server": "bench"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
        engine = Engine(bench._config(pg, "cap", "bench"), offset_store=store)

        def handler(records: list[Any]) -> None:
            nonlocal count
            batches.append(serializer.serialize(records))
            count += len(records)
            if count >= rows:
                engine.stop()

        engine.run(handler)
    # The engine's batches as a busy sink sees them: full (max.batch.size), not as fast as a list appends.
    records = [r for b in batches for r in b][:rows]
    size = Engine(bench._config(pg, "cap", "bench"), offset_store=store).max_batch
    return [records[i:i + size] for i in range(0, len(records), size)]


def _stats(profiler: cProfile.Profile, top: int, title: str) -> None:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "function calls" in line), 0)
    print(title)
    print("\n".join("    " + line.replace(str(Path.cwd()) + "/", "") for line in lines[start:]))


def _children_cpu() -> float:
    """CPU seconds so far of this process' child processes (the brokers), read from /proc (0 elsewhere)."""
    me = os.getpid()
    return sum(cpu + reaped for ppid, cpu, reaped in bench.processes().values() if ppid == me)


def run(name: str, props: dict[str, Any], batches: list[list[Any]], top: int, repeat: int) -> tuple[float, float, float]:
    """Events/s of ``write`` over every batch (``repeat`` times), the sink made and warmed up beforehand,
    and the CPU time per event in microseconds of this process (every thread: the client library's too)
    and of its child processes (the broker, when the benchmark started it)."""
    sink = registry().get("sink", bench._sink_type(name))(Config(props))
    sink.write(batches[0][:10])  # connect, create streams/queues
    loop_profiler = None
    loop = getattr(sink, "_loop", None)
    if top and loop is not None:
        loop_profiler = cProfile.Profile()
        loop.call_soon_threadsafe(loop_profiler.enable)
    profiler = cProfile.Profile() if top else None
    n = 0
    started, cpu, broker = time.perf_counter(), time.process_time(), _children_cpu()
    if profiler is not None:
        profiler.enable()
    for _ in range(repeat):
        for batch in batches:
            sink.write(batch)
            n += len(batch)
    if profiler is not None:
        profiler.disable()
    elapsed, cpu, broker = time.perf_counter() - started, time.process_time() - cpu, _children_cpu() - broker
    if loop_profiler is not None:
        done = threading.Event()
        loop.call_soon_threadsafe(lambda: (loop_profiler.disable(), done.set()))
        done.wait(10)
    sink.close()
    if profiler is not None:
        _stats(profiler, top, f"{name}: the writing thread ({n:,} events, {elapsed:.2f}s)")
    if loop_profiler is not None:
        _stats(loop_profiler, top, f"{name}: the sink's event loop thread")
    return n / elapsed, cpu / n * 1e6, broker / n * 1e6


def main() -> None:
    """Capture, then write to each sink and print events/s beside the file sink's."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--sinks", default=",".join(n for n in bench.TARGETS if n != "nats-jetstream-file"))
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--repeat", type=int, default=1)
    bench.add_set_option(parser)
    args = parser.parse_args()
    names = ["file"] + [n for n in args.sinks.split(",") if n and n != "file"]
    batches = capture(args.rows)
    size = sum(len(r.key or b"") + len(r.value or b"") for r in batches[0]) / len(batches[0])
    print(f"captured {sum(map(len, batches)):,} records in {len(batches)} batches, {size:,.0f} bytes each (key+value); "
          f"load average {os.getloadavg()[0]:.1f}")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        for n in names:
            props = bench.with_set(n, bench.TARGETS[n](stack, Path(tmp)), args.set)
            if n.startswith("nats-jetstream"):
                props["subjects"] = "bench.>"
            rates[n] = run(n, props, batches, args.profile, args.repeat)
    print(f"sink write only (load average {os.getloadavg()[0]:.1f}):")
    for n in names:
        rate, cpu, broker = rates[n]
        ratio = "" if n == "file" else f"   ratio to file sink {rate / rates['file'][0]:.2f}"
        print(f"  {n:<14} sink: {rate:>10,.0f} events/s   CPU per event: {cpu:5.1f} us here, {broker:5.1f} us in the "
              f"broker{ratio}")


if __name__ == "__main__":
    main()
