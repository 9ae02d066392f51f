"""Peak memory while one large PostgreSQL transaction (default 1 GB of row data) streams through.

The transaction is written before the engine starts reading, so it arrives streamed (protocol v2)
and is spilled to disk until its commit; the engine serializes every event to JSON and drops it.
The engine runs in a fresh Python process (its own peak RSS, ru_maxrss, as
mariadb_big_transaction.py measures MariaDB). Prints the peak RSS, the events/s and the load
average. Target (issue 20): RSS <= 300 MB.
Usage: ``uv run python benchmarks/pg_big_transaction.py [--megabytes N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from typing import Any

import isolated

ROW_BYTES = 1000
TARGET_MB = 300


def stream(pg: Any, rows: int) -> tuple[int, float, float, float]:
    """(events, seconds, peak RSS MB before streaming, peak RSS MB after) of the engine draining the transaction."""
    from cdc_core.config import Config
    from cdc_core.engine import Engine
    from cdc_core.serializers.json import JsonSerializer
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "big", "topic.prefix": "big", "slot.name": "big",
        "publication.name": "big_pub", "snapshot.mode": "no_data",
    })
    store = MemoryOffsetStore()
    store.commit([({"server": "big"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
    serializer = JsonSerializer()
    engine = Engine(config, offset_store=store)
    count = 0
    done = threading.Event()

    def handler(records: list[Any]) -> None:
        nonlocal count
        serializer.serialize(records)
        count += len(records)
        if count >= rows:
            done.set()
            engine.stop()

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    done.wait(3600)
    elapsed = time.perf_counter() - started
    engine.stop()
    runner.join()
    return count, elapsed, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(megabytes: int) -> dict[str, float]:
    """Write the transaction into a throwaway PostgreSQL and stream it in a fresh process; its figures."""
    from cdc_postgres.embedded import EmbeddedPostgres

    rows = megabytes * 1_000_000 // ROW_BYTES
    with EmbeddedPostgres(settings={"max_wal_size": "4GB"}) as pg:
        pg.create_database("big")
        pg.execute("CREATE TABLE big (id int PRIMARY KEY, pad text)", dbname="big")
        pg.execute("CREATE PUBLICATION big_pub FOR TABLE big", dbname="big")
        pg.execute("SELECT pg_create_logical_replication_slot('big', 'pgoutput')", dbname="big")
        started = time.perf_counter()
        pg.execute(f"INSERT INTO big SELECT g, repeat(md5(g::text), {ROW_BYTES // 32}) FROM generate_series(1, {rows}) g",
                   dbname="big")
        written = time.perf_counter() - started
        load_before = os.getloadavg()[0]
        (count, elapsed, rss_before, peak), _, _, _ = isolated.run(stream, isolated.address(pg), rows)
    return {"rows": rows, "written_s": written, "events": count, "seconds": elapsed, "rss_before_mb": rss_before,
            "peak_rss_mb": peak, "load_before": load_before, "load_after": os.getloadavg()[0]}


def main() -> None:
    """Write the transaction, stream it, print peak RSS and throughput."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=1024)
    args = parser.parse_args()
    f = measure(args.megabytes)
    print(f"wrote {f['rows']:,} rows (~{args.megabytes} MB) in one transaction in {f['written_s']:.1f}s")
    print(f"events                    : {f['events']:,} in {f['seconds']:.1f}s ({f['events'] / f['seconds']:,.0f} events/s)")
    print(f"peak RSS before streaming : {f['rss_before_mb']:,.0f} MB")
    print(f"peak RSS                  : {f['peak_rss_mb']:,.0f} MB   (target <= {TARGET_MB} MB)")
    print(f"load average (1 min)      : {f['load_before']:.2f} before, {f['load_after']:.2f} after, "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
