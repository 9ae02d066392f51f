"""Spark benchmark: parallel snapshot rows/s with local[1] vs local[2], and streaming events/s through
Spark vs the standalone engine, against a throwaway PostgreSQL.

    uv run python benchmarks/spark_snapshot.py [--rows 2000000] [--stream-rows 200000] [--repeat 3]
                                               [--only snapshot|stream]

Each Spark measurement runs in its own process (a SparkSession's master is fixed for its life);
times exclude Spark's start-up (a snapshot of a small table warms the JVM and the Python workers
first; a first small insert does the same for streaming, on both sides). Every measurement is repeated (alternating the two sides) and
reported with its spread and the load average, as the machine's cores are shared with PostgreSQL
and whatever else runs. Targets: local[2] >= 1.6x local[1]; Spark >= 0.5x the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

#: Rows streamed (and not timed) before the measured insert, on both sides: start-up is not measured.
WARM_UP = 50_000
#: Rows of the table whose snapshot warms up the JVM's JIT and the Python workers before the measured one.
WARM_UP_ROWS = 200_000
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


def _cpu_seconds(pid: int) -> float:
    """User+system CPU of a process and its reaped children, from /proc (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rpartition(")")[2].split()[1])
            except OSError:
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _cpu(jvm: int) -> tuple[float, float]:
    """CPU seconds so far of the JVM alone and of its Python workers (live ones plus reaped ones)."""
    workers = sum(_cpu_seconds(p) for p in _children(jvm))
    with open(f"/proc/{jvm}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    own, reaped = (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick
    return own, workers + reaped


def child_snapshot(args) -> dict:
    """Read the whole table as a batch snapshot into Spark's no-op sink."""
    spark = _session(args.master)
    jvm = spark.sparkContext._gateway.proc.pid
    # Warm up the JVM's JIT and every Python worker on a small table first: steady-state rates.
    warm = {**_props(args), "table.include.list": "public.warm", "snapshotChunkRows": str(WARM_UP_ROWS // 8)}
    spark.read.format("cdc").options(**warm).load().write.format("noop").mode("overwrite").save()
    props = {**_props(args), "table.include.list": "public.big", "snapshotChunkRows": str(args.chunk_rows)}
    jvm0, workers0 = _cpu(jvm)
    started = time.perf_counter()
    spark.read.format("cdc").options(**props).load().write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    jvm1, workers1 = _cpu(jvm)
    return {"seconds": seconds, "jvm_cpu": jvm1 - jvm0, "worker_cpu": workers1 - workers0}


def child_stream(args) -> dict:
    """Stream ``stream_rows`` inserted rows through a Spark query into the no-op sink."""
    import psycopg

    spark = _session(args.master)
    slot = f"spark_bench_{args.run}"
    props = {**_props(args), "table.include.list": f"public.events_{args.run}", "snapshot.mode": "no_data",
             "slot.name": slot, "slot.drop.on.stop": "true", "maxBufferedEvents": "400000"}
    query = (spark.readStream.format("cdc").options(**props).load().writeStream.format("noop")
             .option("checkpointLocation", args.checkpoint).trigger(processingTime="0 seconds").start())
    _wait_slot(args, slot)

    def seen() -> int:
        return sum(p["numInputRows"] for p in query.recentProgress)

    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        conn.execute(f"INSERT INTO events_{args.run} SELECT g, 'warm-up', 0 FROM generate_series(%s::int, %s::int) g",
                     (-WARM_UP, -1))
        while seen() < WARM_UP:
            time.sleep(0.05)
        conn.execute(f"INSERT INTO events_{args.run} SELECT g, 'payload ' || g, g * 1.5 FROM generate_series(1, %s) g",
                     (args.stream_rows,))
    started = time.perf_counter()
    while seen() < WARM_UP + args.stream_rows:
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    query.stop()
    return {"seconds": elapsed, "events": args.stream_rows}


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

    slot = f"engine_bench_{args.run}"
    config = {**_props(args), "table.include.list": f"public.events2_{args.run}", "snapshot.mode": "no_data",
              "slot.name": slot, "slot.drop.on.stop": "true"}
    config["connector.class"] = config.pop("connector")
    serializer = JsonSerializer()
    seen = [0]
    warm, done = threading.Event(), threading.Event()
    table = f"events2_{args.run}"

    def handler(records):
        serializer.serialize(records)
        seen[0] += sum(1 for r in records if r.value is not None and r.topic.endswith(table))
        if seen[0] >= WARM_UP:
            warm.set()
        if seen[0] >= WARM_UP + args.stream_rows:
            done.set()

    engine = Engine(config, offset_store=MemoryOffsetStore())
    runner = threading.Thread(target=engine.run, args=(handler,), daemon=True)
    runner.start()
    _wait_slot(args, slot)
    import psycopg

    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {table} SELECT g, 'warm-up', 0 FROM generate_series(%s::int, %s::int) g", (-WARM_UP, -1))
        warm.wait(120)
        conn.execute(f"INSERT INTO {table} SELECT g, 'payload ' || g, g * 1.5 FROM generate_series(1, %s) g",
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
           "--stream-rows", str(args.stream_rows), "--chunk-rows", str(args.chunk_rows), "--run", str(args.run)]
    for k, v in extra.items():
        cmd += [f"--{k}", str(v)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _spread(values: list[float]) -> str:
    """``median (min-max, n runs)``."""
    ordered = sorted(values)
    return f"{statistics.median(ordered):,.0f} (min {ordered[0]:,.0f}, max {ordered[-1]:,.0f}, {len(ordered)} runs)"


def _execute(args, statement: str) -> None:
    import psycopg

    with psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.db, autocommit=True) as conn:
        conn.execute(statement)


def _load() -> str:
    return "load %.1f" % os.getloadavg()[0]


def measure_snapshot(args) -> None:
    """local[1] and local[2] alternately, ``repeat`` times each; rates, ratios and their spread."""
    print(f"snapshot of {args.rows:,} rows ({args.chunk_rows:,} rows per chunk), into Spark's noop sink:")
    rates: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
    ratios = []
    for run in range(args.repeat):
        pair = {}
        for master in ("local[1]", "local[2]"):
            load = _load()
            result = _child(args, "snapshot", master)
            pair[master] = args.rows / result["seconds"]
            rates[master].append(pair[master])
            print(f"  run {run + 1} {master}: {pair[master]:,.0f} rows/s ({result['seconds']:.1f}s, {load}, "
                  f"CPU: workers {result['worker_cpu']:.1f}s, JVM {result['jvm_cpu']:.1f}s)", flush=True)
        ratios.append(pair["local[2]"] / pair["local[1]"])
    for master, values in rates.items():
        print(f"  {master}: {_spread(values)} rows/s")
    print(f"  ratio local[2]/local[1]: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, "
          f"max {max(ratios):.2f}x) (target >= 1.6x)")


def measure_stream(args) -> None:
    """The engine and Spark alternately on the same kind of insert, ``repeat`` times each."""
    import tempfile

    print(f"streaming {args.stream_rows:,} inserted rows (JSON with schemas):")
    engine_rates, spark_rates, ratios = [], [], []
    for run in range(args.repeat):
        args.run = run
        for t in (f"events_{run}", f"events2_{run}"):
            _execute(args, f"CREATE TABLE {t} (id int PRIMARY KEY, body text, amount numeric(12,2))")
        load = _load()
        engine = engine_stream(args)
        with tempfile.TemporaryDirectory() as ck:
            result = _child(args, "stream", "local[2]", checkpoint=ck)
        spark_rate = result["events"] / result["seconds"]
        engine_rates.append(engine)
        spark_rates.append(spark_rate)
        ratios.append(spark_rate / engine)
        print(f"  run {run + 1}: engine {engine:,.0f} events/s, Spark (local[2], noop sink) {spark_rate:,.0f} events/s "
              f"({load})", flush=True)
    print(f"  standalone engine: {_spread(engine_rates)} events/s")
    print(f"  Spark: {_spread(spark_rates)} events/s")
    print(f"  ratio Spark/engine: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, "
          f"max {max(ratios):.2f}x) (target >= 0.5x)")


def main() -> None:
    """Run every measurement and print the numbers and ratios."""
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--stream-rows", type=int, default=200_000)
    p.add_argument("--chunk-rows", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement (the spread is reported)")
    p.add_argument("--only", choices=("snapshot", "stream"), help="run one of the two measurements")
    p.add_argument("--child")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--user")
    p.add_argument("--db", default="bench")
    p.add_argument("--checkpoint")
    p.add_argument("--run", type=int, default=0)
    args = p.parse_args()
    if args.child:
        result = child_snapshot(args) if args.child == "snapshot" else child_stream(args)
        print(json.dumps(result))
        return

    from cdc_postgres.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres()
    pg.start()
    try:
        pg.create_database(args.db)
        args.host, args.port, args.user = pg.host, pg.port, pg.user
        if args.only != "stream":
            pg.execute("CREATE TABLE big (id int PRIMARY KEY, name text, qty numeric(12,2), at timestamp)", dbname=args.db)
            for table, rows in (("big", args.rows), ("warm", WARM_UP_ROWS)):
                if table == "warm":
                    pg.execute("CREATE TABLE warm (LIKE big INCLUDING ALL)", dbname=args.db)
                pg.execute(f"INSERT INTO {table} SELECT g, 'name ' || g, g / 3.0, timestamp '2024-01-01' + g * "
                           "interval '1 second' FROM generate_series(1, %s) g", params=(rows,), dbname=args.db)
        pg.execute("VACUUM ANALYZE", dbname=args.db)
        print(f"{os.cpu_count()} CPUs, shared with PostgreSQL and anything else running")
        if args.only != "stream":
            measure_snapshot(args)
        if args.only != "snapshot":
            measure_stream(args)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
