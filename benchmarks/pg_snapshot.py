"""PostgreSQL snapshot benchmark: rows/s of the connector's snapshot vs a bare COPY read, same table, same run.

A 1M-row, 5-column table; the engine runs ``snapshot.mode=initial_only`` into a handler that
serializes every record to JSON (schemas on) and drops it, so the number is the pipeline's, not
the disk's. ``--file-sink`` writes to the file sink instead.
Usage: ``uv run python benchmarks/pg_snapshot.py [--rows N] [--file-sink]``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

TABLE = "CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12,2), qty bigint, created timestamptz)"
INSERT = ("INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, g * 7, "
          "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %s) g")


def bare_copy_rate(pg: EmbeddedPostgres, rows: int) -> float:
    """Rows/s of ``COPY (SELECT ...) TO STDOUT`` read through psycopg, doing nothing with the rows."""
    with pg.connect("bench") as conn, conn.cursor() as cur:
        started = time.perf_counter()
        n = 0
        with cur.copy("COPY (SELECT id, name, amount, qty, created FROM bench) TO STDOUT") as copy:
            for _ in copy:
                n += 1
        elapsed = time.perf_counter() - started
    assert n == rows, n
    return rows / elapsed


def engine_rate(pg: EmbeddedPostgres, rows: int, out_dir: Path | None) -> float:
    """Rows/s of the whole snapshot: COPY, parse, convert, envelope, JSON (and the file sink if asked)."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": "bench",
        "snapshot.mode": "initial_only", "slot.name": f"snap_{time.monotonic_ns()}",
    })
    serializer = JsonSerializer()
    sink = FileSink(Config({"dir": str(out_dir)})) if out_dir is not None else None
    count = 0

    def handler(records):
        nonlocal count
        serialized = serializer.serialize(records)
        if sink is not None:
            sink.write(serialized)
        count += len(records)

    engine = Engine(config, offset_store=MemoryOffsetStore())
    started = time.perf_counter()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    runner.join()
    elapsed = time.perf_counter() - started
    assert count == rows, count
    return rows / elapsed


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--file-sink", action="store_true")
    args = parser.parse_args()
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute(INSERT % args.rows, dbname="bench")
        pg.execute("VACUUM ANALYZE bench", dbname="bench")
        bare = bare_copy_rate(pg, args.rows)
        full = engine_rate(pg, args.rows, Path(tmp) if args.file_sink else None)
    print(f"bare COPY read             : {bare:>10,.0f} rows/s")
    print(f"snapshot end to end{' (file)' if args.file_sink else ' (JSON)'}: {full:>10,.0f} rows/s")
    print(f"ratio snapshot / bare COPY : {full / bare:>10.2f}")
    print("target: snapshot >= 100,000 rows/s (issue 3)")


if __name__ == "__main__":
    main()
