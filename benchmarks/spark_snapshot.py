"""Spark benchmark: parallel snapshot rows/s with local[1] vs local[2], and streaming events/s through
Spark vs the standalone engine, against a throwaway PostgreSQL.

    uv run python benchmarks/spark_snapshot.py [--rows 2000000] [--stream-rows 200000]

Each Spark measurement runs in its own process (a SparkSession's master is fixed for its life);
times exclude Spark's start-up. Targets: local[2] >= 1.6x local[1]; Spark >= 0.5x the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _props(args) -> dict[str, str]:
    return {"connector": "postgres", "database.hostname": args.host, "database.port": str(args.port),
            "database.user": args.user, "database.dbname": args.db, "topic.prefix": "bench"}


def _session(master: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import cdc_spark

    spark = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    cdc_spark.register(spark)
    return spark


def child_snapshot(args) -> dict:
    """Read the whole table as a batch snapshot into Spark's no-op sink."""
    spark = _session(args.master)
    props = {**_props(args), "table.include.list": "public.big", "snapshotChunkRows": str(args.chunk_rows)}
    started = time.perf_counter()
    spark.read.format("cdc").options(**props).load().write.format("noop").mode("overwrite").save()
    return {"seconds": time.perf_counter() - started}


def child_stream(args) -> dict:
    """Stream ``stream_rows`` inserted rows through a Spark query into the no-op sink."""
    import psycopg

    spark = _session(args.master)
    props = {**_props(args), "table.include.list": "public.events", "snapshot.mode": "no_data",
             "slot.name": "spark_bench", "maxBufferedEvents": "400000"}
    query = (spark.readStream.format("cdc").options(**props).load().writeStream.format("noop")
             .option("checkpointLocation", args.checkpoint).trigger(processingTime="0 seconds").start())
    _wait_slot(args, "spark_bench")
    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        conn.execute("INSERT INTO events SELECT g, 'payload ' || g, g * 1.5 FROM generate_series(1, %s) g",
                     (args.stream_rows,))
    started = time.perf_counter()
    seen = 0
    while seen < args.stream_rows:
        time.sleep(0.05)
        seen = sum(p["numInputRows"] for p in query.recentProgress)
    elapsed = time.perf_counter() - started
    query.stop()
    return {"seconds": elapsed, "events": seen}


def _wait_slot(args, slot: str) -> None:
    import psycopg

    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        while not conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active", (slot,)).fetchone():
            time.sleep(0.1)


def engine_stream(args) -> float:
    """The standalone engine on the same insert: events/s into a serializing handler."""
    from cdc_core.engine import Engine
    from cdc_core.serializers.json import JsonSerializer
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    config = {**_props(args), "table.include.list": "public.events2", "snapshot.mode": "no_data",
              "slot.name": "engine_bench"}
    config["connector.class"] = config.pop("connector")
    serializer = JsonSerializer()
    seen = [0]
    done = threading.Event()

    def handler(records):
        serializer.serialize(records)
        seen[0] += sum(1 for r in records if r.value is not None)
        if seen[0] >= args.stream_rows:
            done.set()

    engine = Engine(config, offset_store=MemoryOffsetStore())
    runner = threading.Thread(target=engine.run, args=(handler,), daemon=True)
    runner.start()
    _wait_slot(args, "engine_bench")
    import psycopg

    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        conn.execute("INSERT INTO events2 SELECT g, 'payload ' || g, g * 1.5 FROM generate_series(1, %s) g",
                     (args.stream_rows,))
    started = time.perf_counter()
    done.wait(600)
    elapsed = time.perf_counter() - started
    engine.stop()
    runner.join(30)
    return args.stream_rows / elapsed


def _child(args, kind: str, master: str, **extra) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--master", master, "--host", args.host,
           "--port", str(args.port), "--user", args.user, "--db", args.db, "--rows", str(args.rows),
           "--stream-rows", str(args.stream_rows), "--chunk-rows", str(args.chunk_rows)]
    for k, v in extra.items():
        cmd += [f"--{k}", str(v)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Run every measurement and print the numbers and ratios."""
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--stream-rows", type=int, default=200_000)
    p.add_argument("--chunk-rows", type=int, default=100_000)
    p.add_argument("--child")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--user")
    p.add_argument("--db", default="bench")
    p.add_argument("--checkpoint")
    args = p.parse_args()
    if args.child:
        result = child_snapshot(args) if args.child == "snapshot" else child_stream(args)
        print(json.dumps(result))
        return

    import tempfile

    from cdc_postgres.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres()
    pg.start()
    try:
        pg.create_database(args.db)
        args.host, args.port, args.user = pg.host, pg.port, pg.user
        pg.execute("CREATE TABLE big (id int PRIMARY KEY, name text, qty numeric(12,2), at timestamp)", dbname=args.db)
        pg.execute("INSERT INTO big SELECT g, 'name ' || g, g / 3.0, timestamp '2024-01-01' + g * interval '1 second' "
                   "FROM generate_series(1, %s) g", params=(args.rows,), dbname=args.db)
        for t in ("events", "events2"):
            pg.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, body text, amount numeric(12,2))", dbname=args.db)
        pg.execute("VACUUM ANALYZE", dbname=args.db)
        print(f"snapshot of {args.rows:,} rows ({args.chunk_rows:,} rows per chunk), into Spark's noop sink:")
        rates = {}
        for master in ("local[1]", "local[2]"):
            seconds = _child(args, "snapshot", master)["seconds"]
            rates[master] = args.rows / seconds
            print(f"  {master}: {rates[master]:,.0f} rows/s ({seconds:.1f}s)")
        print(f"  ratio local[2]/local[1]: {rates['local[2]'] / rates['local[1]']:.2f}x (target >= 1.6x)")
        print(f"streaming {args.stream_rows:,} inserted rows (JSON with schemas):")
        engine = engine_stream(args)
        print(f"  standalone engine: {engine:,.0f} events/s")
        with tempfile.TemporaryDirectory() as ck:
            result = _child(args, "stream", "local[2]", checkpoint=ck)
        spark_rate = result["events"] / result["seconds"]
        print(f"  Spark (local[2], noop sink): {spark_rate:,.0f} events/s")
        print(f"  ratio Spark/engine: {spark_rate / engine:.2f}x (target >= 0.5x)")
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
