"""MariaDB snapshot benchmark: rows/s of one table's snapshot into the file sink, one process vs worker processes, vs Debezium.

A 1M-row, 5-column InnoDB table; ``cdc`` runs ``snapshot.mode=initial_only`` into the file sink
(JsonConverter JSON with schemas, fsync per batch) with ``snapshot.max.threads=1`` (one process) and
``--threads N`` (chunks read, converted and serialized by N worker processes), each alone in a fresh
Python process; the process's own CPU and its workers' are reported per row. The same run snapshots
the table with Debezium's embedded engine (MySqlConnector, the same output) unless ``--no-debezium``.
``--check`` also compares the two cdc files (times and nothing else may differ).
Usage: ``uv run python benchmarks/mariadb_snapshot.py [--rows N] [--threads N] [--no-debezium] [--check]``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_mysql.embedded import EmbeddedMariaDB

import debezium_baseline
import isolated
from debezium_baseline import Figures

TABLE = ("CREATE TABLE bench (id int PRIMARY KEY, name varchar(64), amount decimal(12,2), qty bigint, "
         "created timestamp(6) NULL) ENGINE=InnoDB")
INSERT = ("INSERT INTO bench SELECT seq, CONCAT('name-', seq), seq * 1.25, seq * 7, "
          "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_{n}")


def engine_rate(server: Any, rows: int, out_dir: Path, threads: int) -> tuple[float, float, float]:
    """(rows/s, CPU µs/row of this process, CPU µs/row of its worker processes) of the snapshot into the file sink."""
    config = Config({
        "connector.class": "mariadb", "database.hostname": server["host"], "database.port": server["port"],
        "database.user": server["user"], "database.password": server["password"], "database.server.id": 9100 + threads,
        "topic.prefix": "bench", "database.include.list": "bench", "snapshot.mode": "initial_only",
        "snapshot.max.threads": threads, **debezium_baseline.converter_properties(),
    })
    engine = Engine(config, sink=FileSink(Config({"dir": str(out_dir)})), offset_store=MemoryOffsetStore(),
                    history_store=MemorySchemaHistoryStore())
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    engine.run()
    elapsed = time.perf_counter() - started
    own2, children2 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own2.ru_utime + own2.ru_stime - own.ru_utime - own.ru_stime
    worker_cpu = children2.ru_utime + children2.ru_stime - children.ru_utime - children.ru_stime
    return rows / elapsed, cpu / rows * 1e6, worker_cpu / rows * 1e6


def _address(server: EmbeddedMariaDB) -> dict[str, Any]:
    return {"host": server.host, "port": server.port, "user": server.user, "password": server.password}


_RUN_FIELDS = re.compile(rb'"ts_(ms|us|ns)":\d+|"ts_sec":\d+')


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-debezium", action="store_true", help="do not run Debezium's engine beside cdc")
    parser.add_argument("--check", action="store_true", help="compare the one-process and worker-process files")
    args = parser.parse_args()
    why_not = "--no-debezium" if args.no_debezium else debezium_baseline.missing()
    load_before = os.getloadavg()[0]
    results = {}
    dbz: Figures | None = None
    with EmbeddedMariaDB() as server, tempfile.TemporaryDirectory() as tmp:
        server.create_database("bench")
        server.execute(TABLE, database="bench")
        server.execute(INSERT.format(n=args.rows), database="bench")
        server.execute("ANALYZE TABLE bench", database="bench")
        for threads in (1, args.threads):
            out = Path(tmp) / f"cdc{threads}"
            (rate, cpu, workers), cpu_s, rss, wall = isolated.run(engine_rate, _address(server), args.rows, out, threads)
            # The process's CPU and its worker processes' (which its own rusage leaves out).
            figures = Figures(args.rows, args.rows / rate, wall, cpu_s + workers * args.rows / 1e6, rss)
            results[threads] = (rate, cpu, workers, figures, out)
        if args.check:
            files = [b"".join(f.read_bytes() for f in sorted(results[t][4].glob("*.jsonl"))) for t in (1, args.threads)]
            same = _RUN_FIELDS.sub(b"", files[0]) == _RUN_FIELDS.sub(b"", files[1])
            lines = [f.count(b"\n") for f in files]
            print(f"files equal apart from times: {same} ({lines[0]:,} and {lines[1]:,} lines)")
        if why_not is None:
            props = debezium_baseline.engine_properties(debezium_baseline.mysql(
                server, 9200, "bench", "initial_only", **{"database.include.list": "bench"}))
            dbz = debezium_baseline.run(props, Path(tmp) / "debezium", "bench.bench.bench", args.rows)
    load_after = os.getloadavg()[0]
    for threads, (rate, cpu, workers, _, _) in results.items():
        print(f"cdc snapshot.max.threads={threads}: {rate:>10,.0f} rows/s  {cpu:6.2f} us CPU/row in the main process"
              f"  + {workers:6.2f} in worker processes")
    print(f"load average (1 min)       : {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")
    print()
    print(debezium_baseline.table(f"snapshot of one {args.rows:,}-row table (MariaDB)",
                                  [("snapshot, 1 process", results[1][3], dbz),
                                   (f"snapshot, {args.threads} workers", results[args.threads][3], dbz)], why_not))
    print("target: cdc >= 3x Debezium's rate (issue 20)")


if __name__ == "__main__":
    main()
