"""Peak memory while one large MariaDB transaction (default 1 GB of row data) streams through.

One ``INSERT ... SELECT`` of 1,000-byte rows, committed before the engine starts reading: the
engine resumes from the binlog position before it (``snapshot.mode=recovery`` with a stored offset,
as mariadb_streaming.py drains its backlog), serializes every event to JSON (schemas on) and drops
it. The server cuts the transaction into rows events of at most ``binlog_row_event_max_size``
(8 KB by default) and the engine's queue holds at most ``max.queue.size`` records, so nothing
holds the whole transaction unless the look-ahead buffer is asked for: ``--buffer N`` sets
``binlog.buffer.size=N`` (events held until the COMMIT; a transaction larger than N events is let
go and reread from the binlog, cdc_mysql.lookahead). Runs in a fresh Python process (its own peak
RSS, ru_maxrss). Prints the peak RSS, events/s and the load average. Target (issue 20): RSS <= 300 MB.
Usage: ``uv run python benchmarks/mariadb_big_transaction.py [--megabytes N] [--buffer N]``.
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


def stream(server: Any, file: str, pos: int, rows: int, buffer: int) -> tuple[int, float, float, float]:
    """(events, seconds, peak RSS MB before streaming, peak RSS MB after) of the engine draining the transaction."""
    from cdc_core.config import Config
    from cdc_core.engine import Engine
    from cdc_core.serializers.json import JsonSerializer
    from cdc_core.stores.memory_history import MemorySchemaHistoryStore
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    config = Config({
        "connector.class": "mariadb", "database.hostname": server.host, "database.port": server.port,
        "database.user": server.user, "database.password": server.password, "database.server.id": 9400,
        "topic.prefix": "big", "database.include.list": "big", "snapshot.mode": "recovery",
        "binlog.buffer.size": buffer,
    })
    store = MemoryOffsetStore()
    store.commit([({"server": "big"}, {"file": file, "pos": pos, "event": 0, "row": 0})])
    serializer = JsonSerializer()
    engine = Engine(config, offset_store=store, history_store=MemorySchemaHistoryStore())
    count = 0
    done = threading.Event()

    def handler(records: list[Any]) -> None:
        nonlocal count
        serializer.serialize(records)
        count += sum(1 for r in records if r.topic == "big.big.big")
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


def measure(megabytes: int, buffer: int = 0) -> dict[str, float]:
    """Write the transaction into a throwaway MariaDB and stream it in a fresh process; its figures."""
    from cdc_mysql.embedded import EmbeddedMariaDB

    rows = megabytes * 1_000_000 // ROW_BYTES
    with EmbeddedMariaDB() as server:
        server.create_database("big")
        server.execute("CREATE TABLE big (id INT PRIMARY KEY, pad TEXT) ENGINE=InnoDB", database="big")
        file, pos = server.execute("SHOW MASTER STATUS")[0][:2]
        started = time.perf_counter()
        server.execute(f"INSERT INTO big SELECT seq, REPEAT(MD5(seq), {ROW_BYTES // 32}) FROM seq_1_to_{rows}",
                       database="big")
        written = time.perf_counter() - started
        binlog = server.execute("SHOW MASTER STATUS")[0][1] - int(pos)
        load_before = os.getloadavg()[0]
        (count, elapsed, rss_before, peak), _, _, _ = isolated.run(stream, isolated.address(server), file, int(pos),
                                                                   rows, buffer)
    return {"rows": rows, "written_s": written, "binlog_mb": binlog / 1e6, "events": count, "seconds": elapsed,
            "rss_before_mb": rss_before, "peak_rss_mb": peak, "load_before": load_before,
            "load_after": os.getloadavg()[0]}


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=1024)
    parser.add_argument("--buffer", type=int, default=0, help="binlog.buffer.size (events; 0: no look-ahead buffer)")
    args = parser.parse_args()
    f = measure(args.megabytes, args.buffer)
    print(f"wrote {f['rows']:,} rows (~{args.megabytes} MB) in one transaction in {f['written_s']:.1f}s "
          f"({f['binlog_mb']:,.0f} MB of binlog)")
    print(f"events                    : {f['events']:,} in {f['seconds']:.1f}s ({f['events'] / f['seconds']:,.0f} events/s)"
          f", binlog.buffer.size={args.buffer}")
    print(f"peak RSS before streaming : {f['rss_before_mb']:,.0f} MB")
    print(f"peak RSS                  : {f['peak_rss_mb']:,.0f} MB   (target <= {TARGET_MB} MB)")
    print(f"load average (1 min)      : {f['load_before']:.2f} before, {f['load_after']:.2f} after, "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
