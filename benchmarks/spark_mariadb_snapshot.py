"""Spark benchmark: MariaDB parallel snapshot rows/s with local[1] vs local[2], against a throwaway MariaDB.

    uv run python benchmarks/spark_mariadb_snapshot.py [--rows 1000000] [--chunk-rows 100000] [--repeat 3]

Each measurement runs in its own process (a SparkSession's master is fixed for its life) and reads
the whole table with ``spark.read.format("cdc")`` (key-range chunks, each read by an executor in its
own consistent-snapshot transaction) into Spark's no-op sink; a snapshot of a small table warms up
the JVM and the Python workers first. The two sides alternate, ``repeat`` times, reported with
their spread and the load average (the machine's cores are shared with MariaDB and whatever else
runs). Baseline: PostgreSQL's target on the same measurement (benchmarks/spark_snapshot.py) is
local[2] >= 1.6x local[1].
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_snapshot import _cpu, _load, _session, _spread  # noqa: E402

WARM_UP_ROWS = 200_000


def _props(args) -> dict[str, str]:
    return {"connector": "mariadb", "database.hostname": args.host, "database.port": str(args.port),
            "database.user": args.user, "database.password": args.password or "", "database.server.id": "7100",
            "database.include.list": args.db, "topic.prefix": "bench"}


def child_snapshot(args) -> dict:
    """Read the whole table as a batch snapshot into Spark's no-op sink."""
    spark = _session(args.master)
    jvm = spark.sparkContext._gateway.proc.pid
    warm = {**_props(args), "table.include.list": f"{args.db}.warm", "snapshotChunkRows": str(WARM_UP_ROWS // 8)}
    spark.read.format("cdc").options(**warm).load().write.format("noop").mode("overwrite").save()
    props = {**_props(args), "table.include.list": f"{args.db}.big", "snapshotChunkRows": str(args.chunk_rows)}
    jvm0, workers0 = _cpu(jvm)
    started = time.perf_counter()
    spark.read.format("cdc").options(**props).load().write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    jvm1, workers1 = _cpu(jvm)
    return {"seconds": seconds, "jvm_cpu": jvm1 - jvm0, "worker_cpu": workers1 - workers0}


def _child(args, master: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--master", master, "--host", args.host,
           "--port", str(args.port), "--user", args.user, "--db", args.db, "--rows", str(args.rows),
           "--chunk-rows", str(args.chunk_rows)]
    env = {**os.environ, "CDC_BENCH_PASSWORD": args.password or ""}  # not on the command line
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(args) -> None:
    """local[1] and local[2] alternately, ``repeat`` times each; rates, ratios and their spread."""
    print(f"MariaDB snapshot of {args.rows:,} rows ({args.chunk_rows:,} rows per chunk), into Spark's noop sink:")
    rates: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
    ratios = []
    for run in range(args.repeat):
        pair = {}
        for master in ("local[1]", "local[2]"):
            load = _load()
            result = _child(args, master)
            pair[master] = args.rows / result["seconds"]
            rates[master].append(pair[master])
            print(f"  run {run + 1} {master}: {pair[master]:,.0f} rows/s ({result['seconds']:.1f}s, {load}, "
                  f"CPU: workers {result['worker_cpu']:.1f}s, JVM {result['jvm_cpu']:.1f}s)", flush=True)
        ratios.append(pair["local[2]"] / pair["local[1]"])
    for master, values in rates.items():
        print(f"  {master}: {_spread(values)} rows/s")
    print(f"  ratio local[2]/local[1]: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, "
          f"max {max(ratios):.2f}x) (baseline: PostgreSQL's target >= 1.6x)")


def main() -> None:
    """Start MariaDB, load the tables, run the measurements."""
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--chunk-rows", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", action="store_true")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--user")
    p.add_argument("--db", default="bench")
    args = p.parse_args()
    args.password = os.environ.get("CDC_BENCH_PASSWORD")
    if args.child:
        print(json.dumps(child_snapshot(args)))
        return

    from cdc_mysql.embedded import EmbeddedMariaDB

    server = EmbeddedMariaDB()
    server.start()
    try:
        server.create_database(args.db)
        args.host, args.port, args.user, args.password = server.host, server.port, server.user, server.password
        for table, rows in (("big", args.rows), ("warm", WARM_UP_ROWS)):
            server.execute([f"CREATE TABLE {table} (id int PRIMARY KEY, name varchar(40), qty decimal(12,2), "
                            "at datetime)",
                            f"INSERT INTO {table} SELECT seq, concat('name ', seq), seq / 3, "
                            f"'2024-01-01' + INTERVAL seq SECOND FROM seq_1_to_{rows}"], database=args.db)
        server.execute("ANALYZE TABLE big, warm", database=args.db)
        print(f"{os.cpu_count()} CPUs, shared with MariaDB and anything else running")
        measure(args)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
