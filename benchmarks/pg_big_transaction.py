"""Peak memory while one large PostgreSQL transaction (default 1 GB of row data) streams through.

The transaction is written before the engine starts reading, so it arrives streamed (protocol v2)
and is spilled to disk until its commit; the engine serializes every event to JSON and drops it.
Prints the peak RSS of this process (ru_maxrss) and the events/s. Target: RSS <= 300 MB.
Usage: ``uv run python benchmarks/pg_big_transaction.py [--megabytes N]``.
"""

from __future__ import annotations

import argparse
import resource
import threading
import time

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

ROW_BYTES = 1000


def main() -> None:
    """Write the transaction, stream it, print peak RSS and throughput."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=1024)
    args = parser.parse_args()
    rows = args.megabytes * 1_000_000 // ROW_BYTES
    with EmbeddedPostgres(settings={"max_wal_size": "4GB"}) as pg:
        pg.create_database("big")
        pg.execute("CREATE TABLE big (id int PRIMARY KEY, pad text)", dbname="big")
        pg.execute("CREATE PUBLICATION big_pub FOR TABLE big", dbname="big")
        pg.execute("SELECT pg_create_logical_replication_slot('big', 'pgoutput')", dbname="big")
        started = time.perf_counter()
        pg.execute(f"INSERT INTO big SELECT g, repeat(md5(g::text), {ROW_BYTES // 32}) FROM generate_series(1, {rows}) g",
                   dbname="big")
        print(f"wrote {rows:,} rows (~{args.megabytes} MB) in one transaction in {time.perf_counter() - started:.1f}s")
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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

        def handler(records):
            nonlocal count
            serializer.serialize(records)
            count += len(records)
            if count >= rows:
                done.set()
                engine.stop()

        started = time.perf_counter()
        runner = threading.Thread(target=engine.run, args=(handler,))
        runner.start()
        done.wait(3600)
        elapsed = time.perf_counter() - started
        runner.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"events                    : {count:,} in {elapsed:.1f}s ({count / elapsed:,.0f} events/s)")
    print(f"peak RSS before streaming : {rss_before:,.0f} MB")
    print(f"peak RSS                  : {peak:,.0f} MB   (target <= 300 MB)")


if __name__ == "__main__":
    main()
