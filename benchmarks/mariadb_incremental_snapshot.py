"""MariaDB incremental snapshot benchmark: rows/s, read-only (GTID watermarks) against signal-table watermarks.

A 5-column table (``--rows``, 250k by default) on a throwaway MariaDB. The engine streams
(``snapshot.mode=no_data``), ``engine.signal("execute-snapshot")`` starts the incremental snapshot,
and the clock runs from the signal to the last READ the handler gets (after COMPLETED); the handler
serializes every record to JSON (schemas on) and drops it. Each chunk size runs with ``read.only=true`` (executed
GTID sets as watermarks, nothing written) and with the default watermarks (rows inserted into the
signal table), on an idle server and with a writer process doing single-row UPDATE/INSERT/DELETE
transactions at ``--write-rates`` a second (0: flat out); writer events are serialized but not counted.
Usage: ``uv run python benchmarks/mariadb_incremental_snapshot.py [--rows N] [--chunk-size N ...]``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_mysql.embedded import EmbeddedMariaDB

TABLE = ("CREATE TABLE bench (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), qty BIGINT, "
         "created DATETIME(3))")
INSERT = ("INSERT INTO bench SELECT seq, CONCAT('name-', seq), seq * 1.25, seq * 7, "
          "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_{rows}")
SIGNAL = "CREATE TABLE debezium_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"
TARGET = 50_000


def writer(port: int, rows: int, rate: float) -> None:
    """The writer process: random single-row transactions (``rate`` a second, 0: flat out) until SIGTERM."""
    import signal

    import pymysql

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    rnd = random.Random(7)
    n = 0
    started = time.monotonic()
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database="bench", autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SELECT MAX(id) + 1 FROM bench")
        next_id = cur.fetchone()[0]
        while not stop:
            if rate and n >= rate * (time.monotonic() - started):
                time.sleep(0.001)
                continue
            op = rnd.random()
            if op < 0.7:
                cur.execute("UPDATE bench SET qty = qty + 1 WHERE id = %s", (rnd.randint(1, rows),))
            elif op < 0.85:
                cur.execute("INSERT INTO bench VALUES (%s, 'new', 1.00, 1, NOW(3))", (next_id,))
                next_id += 1
            else:
                cur.execute("DELETE FROM bench WHERE id = %s", (rnd.randint(1, rows),))
            n += 1
    print(n, flush=True)


def snapshot_rate(server: EmbeddedMariaDB, rows: int, chunk_size: int, read_only: bool,
                  writes: float | None) -> tuple[float, int, float, float]:
    """(READ rows/s, READ rows, writer transactions/s, CPU seconds of this process per 100k READs) of one run."""
    config = Config({
        "connector.class": "mariadb", "database.hostname": server.host, "database.port": server.port,
        "database.user": server.user, "database.password": server.password, "database.server.id": 5901,
        "database.include.list": "bench", "table.include.list": "bench.bench,bench.debezium_signal",
        "topic.prefix": "bench", "snapshot.mode": "no_data", "read.only": str(read_only).lower(),
        "signal.data.collection": "bench.debezium_signal", "incremental.snapshot.chunk.size": chunk_size,
        "poll.interval.ms": 20,
    })
    serializer = JsonSerializer()
    reads = 0
    last_read = 0.0
    done = threading.Event()

    def handler(records):
        nonlocal reads, last_read
        serializer.serialize(records)
        n = sum(1 for r in records if r.value is not None and r.value.get("op") == "r")
        if n:
            reads += n
            last_read = time.perf_counter()

    engine = Engine(config, offset_store=MemoryOffsetStore(), history_store=MemorySchemaHistoryStore())
    engine.add_notification_listener(lambda n: done.set() if n.type == "COMPLETED" else None)
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    while not engine.metrics.streaming.connected:
        time.sleep(0.01)
    proc = None
    if writes is not None:
        proc = subprocess.Popen([sys.executable, __file__, "--writer", str(server.port), str(rows), str(writes)],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
    cpu = os.times()
    started = time.perf_counter()
    engine.signal("execute-snapshot", {"data-collections": ["bench.bench"]})
    done.wait(3600)
    # COMPLETED is notified as the last window closes: its READs are still on their way to the handler.
    seen = -1
    while seen != reads:
        seen = reads
        time.sleep(0.5)
    elapsed = last_read - started
    cpu_end = os.times()
    tps = 0.0
    if proc is not None:
        proc.terminate()
        out, _ = proc.communicate(30)
        tps = int(out.strip() or 0) / (elapsed + 1.0)
    engine.stop()
    runner.join()
    used = (cpu_end.user - cpu.user) + (cpu_end.system - cpu.system)
    return reads / elapsed, reads, tps, used / max(reads, 1) * 100_000


def main() -> None:
    """Run the benchmark and print the numbers."""
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--chunk-size", type=int, nargs="+", default=[1024, 8192])
    parser.add_argument("--write-rates", type=float, nargs="+", default=[1000],
                        help="writer transactions a second in the runs with writes (0: as fast as it can)")
    args = parser.parse_args()
    results = []
    with EmbeddedMariaDB() as server:
        server.create_database("bench")
        server.execute([TABLE, SIGNAL, INSERT.format(rows=args.rows)], database="bench")
        for chunk in args.chunk_size:
            for writes in (None, *args.write_rates):
                for read_only in (True, False):
                    results.append((chunk, writes, read_only, *snapshot_rate(server, args.rows, chunk, read_only,
                                                                             writes)))
    print(f"MariaDB incremental snapshot, {args.rows:,} rows, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for chunk, writes, read_only, rate, n, tps, cpu in results:
        what = "no writes" if writes is None else f"writer at {tps:,.0f} tx/s" + (" (flat out)" if not writes else "")
        mode = "read.only (GTIDs)" if read_only else "signal table"
        print(f"chunk {chunk:>5}, {mode:<17}, {what:<26}: {rate:>9,.0f} rows/s  ({n:,} READs, "
              f"{cpu:.1f} CPU s / 100k)")
    print(f"target: >= {TARGET:,} rows/s on 2 cores (issue 5); the signal-table runs are the baseline")


if __name__ == "__main__":
    main()
