"""PostgreSQL incremental snapshot benchmark: rows/s of an ad hoc snapshot, with and without concurrent writes.

The same 1M-row, 5-column table as ``pg_snapshot.py``. The engine streams (``snapshot.mode=no_data``),
an ``execute-snapshot`` signal starts the incremental snapshot, and the clock runs from the signal
to the last READ the handler gets (COMPLETED is notified while the last window's READs are still
on their way); the handler serializes every record to JSON (schemas on) and drops it. "With
writes" runs a separate writer process doing single-row UPDATE/INSERT/DELETE transactions (at
the given rates, or as fast as it can) the whole time, so the stream carries its changes too and
the window buffer has real work; their events are serialized as well but not counted as rows.
"Writes elsewhere" runs the writer on a table the connector does not capture: the stream then
carries no commit of its own, and read-only windows close at the positions it reports (the case
``cdc_postgres.readonly.MOVED_POSITION_S`` is for). Each run is made with watermarks written to the signal table and with ``read.only=true`` (the
read's snapshot and WAL positions as watermarks, nothing written; ``cdc_postgres.readonly``).
Usage: ``uv run python benchmarks/pg_incremental_snapshot.py [--rows N] [--chunk-size N ...]
[--write-rates R ...] [--other-write-rates R ...] [--modes signal_table read_only]``.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import threading
import time

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

TABLE = "CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12,2), qty bigint, created timestamptz)"
INSERT = ("INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, g * 7, "
          "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %s) g")
SIGNAL = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def writer(conninfo: str, rows: int, rate: float, target: str = "bench") -> None:
    """The writer process: random single-row transactions (``rate`` a second, 0: flat out) until SIGTERM; with
    ``target`` ``other``, updates of the uncaptured table ``other``."""
    import signal

    import psycopg

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    rnd = random.Random(7)
    n = 0
    started = time.monotonic()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        next_id = conn.execute("SELECT max(id) + 1 FROM bench").fetchone()[0]
        while not stop:
            if rate and n >= rate * (time.monotonic() - started):
                time.sleep(0.001)
                continue
            op = rnd.random()
            if target == "other":
                conn.execute("UPDATE other SET n = n + 1 WHERE id = %s", (rnd.randint(1, 1000),))
            elif op < 0.7:
                conn.execute("UPDATE bench SET qty = qty + 1 WHERE id = %s", (rnd.randint(1, rows),))
            elif op < 0.85:
                conn.execute("INSERT INTO bench VALUES (%s, 'new', 1.00, 1, now())", (next_id,))
                next_id += 1
            else:
                conn.execute("DELETE FROM bench WHERE id = %s", (rnd.randint(1, rows),))
            n += 1
    print(n, flush=True)


def snapshot_rate(pg: EmbeddedPostgres, rows: int, chunk_size: int, writes: float | None,
                  read_only: bool = False, target: str = "bench") -> tuple[float, int, float]:
    """(READ rows/s, READ rows, writer transactions/s) of one incremental snapshot of the table."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": "bench",
        "snapshot.mode": "no_data", "slot.name": f"inc_{time.monotonic_ns()}", "slot.drop.on.stop": "true",
        "signal.data.collection": "public.debezium_signal", "incremental.snapshot.chunk.size": chunk_size,
        "poll.interval.ms": 20, "read.only": str(read_only).lower(), "table.include.list": "public.bench",
    })
    serializer = JsonSerializer()
    reads = 0
    last_read = 0.0
    done = threading.Event()

    def handler(records):
        nonlocal reads, last_read
        serializer.serialize(records)
        n = 0
        for r in records:
            if r.value is not None and r.value.get("op") == "r":
                n += 1
        if n:
            reads += n
            last_read = time.perf_counter()

    engine = Engine(config, offset_store=MemoryOffsetStore())
    engine.add_notification_listener(lambda n: done.set() if n.type == "COMPLETED" else None)
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    while not engine.metrics.streaming.connected:
        time.sleep(0.01)
    proc = None
    if writes is not None:
        conninfo = f"host={pg.host} port={pg.port} user={pg.user} dbname=bench"
        proc = subprocess.Popen([sys.executable, __file__, "--writer", conninfo, str(rows), str(writes), target],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
    started = time.perf_counter()
    engine.signal("execute-snapshot", {"data-collections": ["public.bench"]})
    done.wait(3600)
    time.sleep(0.5)  # the last window's READs follow the notification
    elapsed = max(last_read, started + 1e-6) - started
    tps = 0.0
    if proc is not None:
        proc.terminate()
        out, _ = proc.communicate(30)
        tps = int(out.strip() or 0) / (elapsed + 1.0)
    engine.stop()
    runner.join()
    return reads / elapsed, reads, tps


def main() -> None:
    """Run the benchmark and print the numbers."""
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-size", type=int, nargs="+", default=[1024, 8192])
    parser.add_argument("--write-rates", type=float, nargs="+", default=[1000, 3000, 0],
                        help="writer transactions a second in the runs with writes (0: as fast as it can)")
    parser.add_argument("--other-write-rates", type=float, nargs="*", default=[1000],
                        help="writer transactions a second on a table the connector does not capture")
    parser.add_argument("--modes", nargs="+", default=["signal_table", "read_only"],
                        choices=["signal_table", "read_only"], help="watermarks: signal table rows, read.only=true")
    args = parser.parse_args()
    results = []
    with EmbeddedPostgres() as pg:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute(SIGNAL, dbname="bench")
        pg.execute(INSERT % args.rows, dbname="bench")
        pg.execute("VACUUM ANALYZE bench", dbname="bench")
        pg.execute("CREATE TABLE other (id int PRIMARY KEY, n int)", dbname="bench")
        pg.execute("INSERT INTO other SELECT g, 0 FROM generate_series(1, 1000) g", dbname="bench")
        runs = [(None, "bench"), *((r, "bench") for r in args.write_rates), *((r, "other") for r in args.other_write_rates)]
        for chunk in args.chunk_size:
            for writes, target in runs:
                for mode in args.modes:
                    pg.execute("VACUUM ANALYZE bench", dbname="bench")  # the previous run's writes leave dead rows
                    rate, n, tps = snapshot_rate(pg, args.rows, chunk, writes, mode == "read_only", target)
                    results.append((chunk, writes, target, mode, rate, n, tps))
                    print(f"chunk {chunk}, writes {writes} on {target}, {mode}: {rate:,.0f} rows/s", file=sys.stderr,
                          flush=True)
    for chunk, writes, target, mode, rate, n, tps in results:
        what = "no writes" if writes is None else f"writer at {tps:,.0f} tx/s" + (" (flat out)" if not writes else "")
        if target != "bench":
            what += " elsewhere"
        print(f"chunk {chunk:>5}, {what:<42}, {mode:<12}: {rate:>9,.0f} rows/s  ({n:,} READs)")
    print("target: >= 50,000 rows/s on 2 cores (issue 5)")


if __name__ == "__main__":
    main()
