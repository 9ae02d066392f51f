"""MariaDB benchmark: end-to-end events/s into the file sink vs bare mysql-replication over the same binlog.

A throwaway MariaDB gets 200k mixed row changes (inserts, updates, deletes in transactions of
500 rows) into a 6-column table while nothing reads. Then, in the same run:

- the bare library rate: ``BinLogStreamReader`` over exactly that binlog range, touching every
  row of every rows event (``event.rows``: what a user of the library gets);
- the end-to-end rate: the MariaDB connector from the same position (``snapshot.mode=recovery``
  with a stored offset), converted, enveloped, serialized to JSON (schemas on) and written by the
  file sink (fsync per batch), plus the same pipeline stopping before the sink (``records``: the
  library API's handler) and before the serializer, to show where the time goes;
- the snapshot rate: an initial snapshot of the table's remaining rows into the file sink.

The machine may be shared: each rate is the best of ``--repeat`` runs (default 3).

Usage: ``uv run python benchmarks/mariadb_streaming.py [--changes N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_mysql.embedded import EmbeddedMariaDB

TABLE = ("CREATE TABLE bench (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2), qty BIGINT, "
         "created DATETIME(6), flag TINYINT(1))")


def generate(server: EmbeddedMariaDB, changes: int) -> tuple[str, int, str, int]:
    """Write ``changes`` row changes (60% inserts, 25% updates, 15% deletes); return the binlog range."""
    start = server.execute("SHOW MASTER STATUS")[0][:2]
    inserts = int(changes * 0.6)
    updates = int(changes * 0.25)
    deletes = changes - inserts - updates
    with server.connect("bench") as conn, conn.cursor() as cur:
        conn.autocommit(False)
        for lo in range(1, inserts + 1, 500):
            hi = min(lo + 499, inserts)
            cur.execute(f"INSERT INTO bench SELECT seq, CONCAT('name-', seq), seq * 1.25, seq * 7, "
                        f"'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq % 2 FROM seq_{lo}_to_{hi}")
            conn.commit()
        for lo in range(1, updates + 1, 500):
            cur.execute(f"UPDATE bench SET qty = qty + 1, name = CONCAT(name, 'x') WHERE id BETWEEN {lo} AND {min(lo + 499, updates)}")
            conn.commit()
        for lo in range(inserts - deletes + 1, inserts + 1, 500):
            cur.execute(f"DELETE FROM bench WHERE id BETWEEN {lo} AND {min(lo + 499, inserts)}")
            conn.commit()
    end = server.execute("SHOW MASTER STATUS")[0][:2]
    return start[0], int(start[1]), end[0], int(end[1])


def bare_rate(server: EmbeddedMariaDB, file: str, pos: int, end_pos: int, changes: int) -> float:
    """Row changes/s of a bare BinLogStreamReader loop that reads every row of every rows event."""
    reader = BinLogStreamReader(server.conninfo(), server_id=9001, log_file=file, log_pos=pos, resume_stream=True,
                                blocking=False, end_log_pos=end_pos, only_events=[WriteRowsEvent, UpdateRowsEvent,
                                                                                  DeleteRowsEvent], enable_logging=False)
    seen = 0
    started = time.perf_counter()
    for event in reader:
        for row in event.rows:
            seen += 1
    elapsed = time.perf_counter() - started
    reader.close()
    if seen != changes:
        raise SystemExit(f"the bare loop saw {seen} row changes, expected {changes}")
    return seen / elapsed


#: CPU microseconds per event of each stage (best run): steadier than rates on a shared machine.
CPU_US: dict[str, float] = {}


def engine_rate(server: EmbeddedMariaDB, file: str, pos: int, changes: int, out_dir: Path, stage: str = "sink") -> float:
    """Events/s through the engine: decode, convert, envelope, then (``stage``) JSON and the file sink."""
    config = Config({
        "connector.class": "mariadb", "database.hostname": server.host, "database.port": server.port,
        "database.user": server.user, "database.server.id": 9002, "topic.prefix": "bench",
        "database.include.list": "bench", "snapshot.mode": "recovery", "tombstones.on.delete": "false",
        "poll.interval.ms": 50,
    })
    store = MemoryOffsetStore()
    store.commit([({"server": "bench"}, {"file": file, "pos": pos, "event": 0, "row": 0})])
    sink = FileSink(Config({"dir": str(out_dir)}))
    serializer = JsonSerializer()
    engine = Engine(config, offset_store=store, history_store=MemorySchemaHistoryStore())
    count = 0
    done = threading.Event()

    def handler(records):
        nonlocal count
        if stage == "sink":
            sink.write(serializer.serialize(records))
        elif stage == "json":
            serializer.serialize(records)
        count += sum(1 for r in records if r.topic == "bench.bench.bench")
        if count >= changes:
            done.set()
            engine.stop()

    started, cpu = time.perf_counter(), time.process_time()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    done.wait(600)
    elapsed = time.perf_counter() - started
    CPU_US[stage] = min(CPU_US.get(stage, 1e9), (time.process_time() - cpu) / count * 1e6)
    runner.join()
    sink.close()
    return count / elapsed


def snapshot_rate(server: EmbeddedMariaDB, rows: int, out_dir: Path) -> float:
    """Rows/s of an initial snapshot (initial_only) into the file sink."""
    config = Config({
        "connector.class": "mariadb", "database.hostname": server.host, "database.port": server.port,
        "database.user": server.user, "database.server.id": 9003, "topic.prefix": "snap",
        "database.include.list": "bench", "snapshot.mode": "initial_only",
    })
    sink = FileSink(Config({"dir": str(out_dir)}))
    serializer = JsonSerializer()
    engine = Engine(config, offset_store=MemoryOffsetStore(), history_store=MemorySchemaHistoryStore())
    count = 0

    def handler(records):
        nonlocal count
        sink.write(serializer.serialize(records))
        count += sum(1 for r in records if r.topic == "snap.bench.bench")

    started = time.perf_counter()
    engine.run(handler)
    elapsed = time.perf_counter() - started
    sink.close()
    if count != rows:
        raise SystemExit(f"the snapshot wrote {count} rows, expected {rows}")
    return count / elapsed


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sink-dir", help="where the file sink writes (default: a temporary directory)")
    args = parser.parse_args()
    best: dict[str, float] = {}
    with EmbeddedMariaDB() as server, tempfile.TemporaryDirectory(dir=args.sink_dir) as tmp:
        print(f"file sink directory: {tmp} (the server's data: {server.base_dir})")
        server.create_database("bench")
        server.execute(TABLE, database="bench")
        t = time.perf_counter()
        file, pos, _, end_pos = generate(server, args.changes)
        print(f"wrote {args.changes} row changes in {time.perf_counter() - t:.2f}s")
        remaining = server.execute("SELECT COUNT(*) FROM bench", database="bench")[0][0]
        for i in range(args.repeat):
            rates = {
                "bare": bare_rate(server, file, pos, end_pos, args.changes),
                "records": engine_rate(server, file, pos, args.changes, Path(tmp) / f"r{i}", "records"),
                "json": engine_rate(server, file, pos, args.changes, Path(tmp) / f"j{i}", "json"),
                "sink": engine_rate(server, file, pos, args.changes, Path(tmp) / f"s{i}", "sink"),
                "snapshot": snapshot_rate(server, remaining, Path(tmp) / f"snapshot{i}"),
            }
            for k, v in rates.items():
                best[k] = max(best.get(k, 0.0), v)
    print(f"bare mysql-replication loop          : {best['bare']:>10,.0f} row changes/s")
    print(f"end to end, records to a handler     : {best['records']:>10,.0f} events/s  ({CPU_US['records']:.1f} us CPU/event)")
    print(f"end to end, + JSON with schemas      : {best['json']:>10,.0f} events/s  ({CPU_US['json']:.1f} us CPU/event)")
    print(f"end to end, + file sink (fsync)      : {best['sink']:>10,.0f} events/s  ({CPU_US['sink']:.1f} us CPU/event)")
    print(f"ratio end-to-end (file sink) / bare  : {best['sink'] / best['bare']:>10.2f}")
    print(f"snapshot (file sink)                 : {best['snapshot']:>10,.0f} rows/s ({remaining} rows)")
    print("targets: end to end >= 0.8 x the bare library rate (issue 4); project goal >= 60,000 events/s")


if __name__ == "__main__":
    main()
