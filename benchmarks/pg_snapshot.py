"""PostgreSQL snapshot benchmark: rows/s of the connector's snapshot vs a bare COPY read, same table, same run.

A 1M-row, 5-column table; the engine runs ``snapshot.mode=initial_only`` into a handler that
serializes every record to JSON (schemas on) and drops it, so the number is the pipeline's, not
the disk's. ``--file-sink`` writes to the file sink instead. Each measurement also reports this
process's CPU time (user + sys) per row, which other processes' load disturbs less than the
wall clock (PostgreSQL's own CPU is not in it). ``--repeat N`` runs each measurement N times and
reports the best.
The same run snapshots the same table with Debezium's embedded engine (PostgresConnector,
``snapshot.mode=initial_only``, JsonConverter with schemas into a file fsynced per batch; the JVM
ends with the snapshot) and prints its rate, CPU per record and peak RSS beside a cdc file-sink
snapshot run alone in a fresh Python process (``debezium_baseline``). ``--no-debezium`` leaves it out.
``--threads N`` (default 2) adds cdc with ``snapshot.max.threads=N`` into the file sink (worker processes).
Usage: ``uv run python benchmarks/pg_snapshot.py [--rows N] [--repeat N] [--file-sink] [--no-debezium] [--threads N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

import debezium_baseline
import isolated
from debezium_baseline import Figures

TABLE = "CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12,2), qty bigint, created timestamptz)"
INSERT = ("INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, g * 7, "
          "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %s) g")
#: Issue 3's target for the snapshot, end to end.
TARGET_ROWS_PER_S = 100_000


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bare_copy_rate(pg: EmbeddedPostgres, rows: int) -> tuple[float, float]:
    """(rows/s, CPU µs/row) of ``COPY (SELECT ...) TO STDOUT`` read through psycopg, doing nothing with the rows."""
    with pg.connect("bench") as conn, conn.cursor() as cur:
        started, cpu = time.perf_counter(), _cpu_seconds()
        n = 0
        with cur.copy("COPY (SELECT id, name, amount, qty, created FROM bench) TO STDOUT") as copy:
            for _ in copy:
                n += 1
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    assert n == rows, n
    return rows / elapsed, cpu / rows * 1e6


def engine_rate(pg: Any, rows: int, out_dir: Path | None) -> tuple[float, float]:
    """(rows/s, CPU µs/row) of the whole snapshot: COPY, parse, convert, envelope, JSON (and the file sink if asked)."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": "bench",
        "snapshot.mode": "initial_only", "slot.name": f"snap_{time.monotonic_ns()}",
        **debezium_baseline.converter_properties(),
    })
    serializer = JsonSerializer.from_config(config)
    sink = FileSink(Config({"dir": str(out_dir)})) if out_dir is not None else None
    count = 0

    def handler(records):
        nonlocal count
        serialized = serializer.serialize(records)
        if sink is not None:
            sink.write(serialized)
        # The table's rows only: a snapshot slower than heartbeat.interval.ms (PostgreSQL's default here
        # 60 s, on a loaded machine) also hands over a heartbeat record.
        count += sum(r.topic == "bench.public.bench" for r in records)

    engine = Engine(config, offset_store=MemoryOffsetStore())
    started, cpu = time.perf_counter(), _cpu_seconds()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    runner.join()
    elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    assert count == rows, count
    return rows / elapsed, cpu / rows * 1e6


def worker_rate(pg: Any, rows: int, out_dir: Path, threads: int) -> tuple[float, float, float]:
    """(rows/s, CPU µs/row of this process, of its worker processes) of the snapshot into the file sink with
    ``snapshot.max.threads=threads``: chunks read, converted and serialized by worker processes."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": "bench",
        "snapshot.mode": "initial_only", "slot.name": f"snap_{time.monotonic_ns()}", "snapshot.max.threads": threads,
        **debezium_baseline.converter_properties(),
    })
    engine = Engine(config, sink=FileSink(Config({"dir": str(out_dir)})), offset_store=MemoryOffsetStore())
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, cpu = time.perf_counter(), _cpu_seconds()
    engine.run()
    elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return rows / elapsed, cpu / rows * 1e6, workers / rows * 1e6


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="run each measurement N times, report the best")
    parser.add_argument("--file-sink", action="store_true")
    parser.add_argument("--no-debezium", action="store_true", help="do not run Debezium's engine beside cdc")
    parser.add_argument("--threads", type=int, default=2,
                        help="also run cdc with snapshot.max.threads=N into the file sink (worker processes); 1: not")
    args = parser.parse_args()
    why_not = "--no-debezium" if args.no_debezium else debezium_baseline.missing()
    dbz: Figures | None = None
    load_before = os.getloadavg()[0]
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute(INSERT % args.rows, dbname="bench")
        pg.execute("VACUUM ANALYZE bench", dbname="bench")
        bare = [bare_copy_rate(pg, args.rows) for _ in range(args.repeat)]
        full = [engine_rate(pg, args.rows, Path(tmp) if args.file_sink else None) for _ in range(args.repeat)]
        # Against Debezium: cdc into the file sink, alone in a fresh process (its CPU and peak RSS, as the JVM's).
        (rate, _), cpu_s, rss, wall = isolated.run(engine_rate, isolated.address(pg), args.rows, Path(tmp) / "cdc")
        cdc = Figures(args.rows, args.rows / rate, wall, cpu_s, rss)
        workers = None
        if args.threads > 1:
            (w_rate, w_cpu, w_children), w_cpu_s, w_rss, w_wall = isolated.run(
                worker_rate, isolated.address(pg), args.rows, Path(tmp) / "cdc-workers", args.threads)
            # The process's CPU and its worker processes' (which its own rusage leaves out).
            workers = (Figures(args.rows, args.rows / w_rate, w_wall, w_cpu_s + w_children * args.rows / 1e6, w_rss),
                       w_cpu, w_children)
        if why_not is None:
            props = debezium_baseline.engine_properties(debezium_baseline.postgres(
                pg, "bench", "dbz_snapshot", "initial_only", **{"table.include.list": "public.bench",
                                                               "publication.autocreate.mode": "filtered"}))
            dbz = debezium_baseline.run(props, Path(tmp) / "debezium", "bench.public.bench", args.rows)
    load_after = os.getloadavg()[0]
    (bare_rate, bare_cpu), (full_rate, full_cpu) = max(bare), max(full)
    label = " (file)" if args.file_sink else " (JSON)"
    print(f"bare COPY read             : {bare_rate:>10,.0f} rows/s  {bare_cpu:6.2f} us CPU/row")
    print(f"snapshot end to end{label}: {full_rate:>10,.0f} rows/s  {full_cpu:6.2f} us CPU/row"
          f"  (best CPU {min(c for _, c in full):.2f})")
    if args.repeat > 1:
        print(f"  all runs                 : {', '.join(f'{r:,.0f}' for r, _ in full)} rows/s")
    print(f"ratio snapshot / bare COPY : {full_rate / bare_rate:>10.2f}")
    print(f"load average (1 min)       : {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")
    print(f"target: snapshot >= {TARGET_ROWS_PER_S:,} rows/s (issue 3); baseline, the code before issue 3 run "
          "side by side (load 2-5): 61-94k rows/s, 8.5-8.8 us CPU/row (11.2 at load 1.2)")
    print()
    lines = [("snapshot, file sink", cdc, dbz)]
    if workers is not None:
        lines.append((f"snapshot, {args.threads} workers", workers[0], dbz))
        print(f"snapshot.max.threads={args.threads} (file): {workers[1]:.2f} us CPU/row in the main process + "
              f"{workers[2]:.2f} in worker processes")
    print(debezium_baseline.table(f"snapshot of one {args.rows:,}-row table (PostgreSQL)", lines, why_not))
    print("target: cdc >= 3x Debezium's rate, CPU per record <= 0.15x (issue 20)")


if __name__ == "__main__":
    main()
