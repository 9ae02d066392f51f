"""PostgreSQL streaming benchmark: end-to-end events/s into the file sink vs a bare replication loop.

Both read the same WAL: 200k single-row inserts into a 5-column table (one transaction),
written while nothing reads, through slots created beforehand. Prints both rates and their
ratio. The same run drains the same WAL with Debezium's embedded engine (PostgresConnector,
``snapshot.mode=no_data``, its own slot made before the backlog, the same publication, offsets in
memory, JsonConverter with schemas into a file fsynced per batch) and prints its rate, CPU per
record and peak RSS beside cdc's file-sink run, which runs alone in a fresh Python process for
its CPU and memory figures (``debezium_baseline``). ``--no-debezium`` leaves Debezium out.
The same run drains it once more with ``streaming.worker.processes=1`` (long runs of row changes decoded
and serialized in a forked worker; its CPU counted apart). ``--transforms`` instead runs only JSON-serialized runs without and with a transform chain
(ExtractNewRecordState + RegexRouter, issue 13; and RegexRouter behind a TopicNameMatches predicate,
which leaves the value as it is), alternating, each on its own slot, and prints the ratios.
Usage: ``uv run python benchmarks/pg_streaming.py [--rows N] [--no-debezium] [--transforms]``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres
from cdc_postgres.replication import ReplicationConnection

import debezium_baseline
import drain_run
import isolated
from debezium_baseline import Figures

TABLE = "CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12,2), qty bigint, created timestamptz)"
INSERT = ("INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, g * 7, "
          "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %s) g")


def bare_receive_rate(pg: EmbeddedPostgres, db: str, slot: str, rows: int) -> float:
    """Messages/s of a loop that only receives XLogData and looks at the message kind."""
    repl = ReplicationConnection(pg.conninfo(db))
    repl.start(slot, 0, {"proto_version": "1", "publication_names": '"bench_pub"'})
    seen = 0
    started = time.perf_counter()
    while seen < rows:
        for x in repl.read(1.0):
            if x.payload[0] == 0x49:  # 'I'nsert
                seen += 1
    elapsed = time.perf_counter() - started
    repl.close()
    return rows / elapsed


#: The chain of ``--transforms``: flatten, then rename the topic.
TRANSFORMS = {
    "transforms": "unwrap,route",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": r"bench\.public\.(.*)",
    "transforms.route.replacement": "flat.$1",
}


#: A chain that leaves the value as it is (only the topic changes): the chain's own cost, with no smaller output.
ROUTE_ONLY = {
    "transforms": "route", "predicates": "data",
    "predicates.data.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.data.pattern": r"bench\..*",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter", "transforms.route.predicate": "data",
    "transforms.route.regex": r"bench\.public\.(.*)", "transforms.route.replacement": "flat.$1",
}


def engine_rate(pg: Any, db: str, slot: str, rows: int, out_dir: Path | None,
                extra: dict | None = None, topic: str = "bench.public.bench") -> float:
    """Events/s through the whole engine: decode, convert, envelope, JSON, file sink, offsets."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": db, "topic.prefix": "bench", "slot.name": slot,
        "publication.name": "bench_pub", "snapshot.mode": "no_data", "poll.interval.ms": 50,
        **debezium_baseline.converter_properties(), **(extra or {}),
    })
    store = MemoryOffsetStore()
    # The slot already exists; the offset says streaming starts at its beginning.
    store.commit([({"server": "bench"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
    sink = FileSink(Config({"dir": str(out_dir)})) if out_dir is not None else None
    serializer = JsonSerializer.from_config(config)
    engine = Engine(config, offset_store=store)
    count = 0
    done = threading.Event()
    started = 0.0

    def handler(records):
        nonlocal count
        serialized = serializer.serialize(records)
        if sink is not None:
            sink.write(serialized)
        count += sum(1 for r in records if r.topic == topic)
        if count >= rows:
            done.set()
            engine.stop()

    started = time.perf_counter()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    done.wait(600)
    elapsed = time.perf_counter() - started
    runner.join()
    if sink is not None:
        sink.close()
    return count / elapsed


def worker_rate(pg: Any, db: str, slot: str, rows: int, out_dir: Path, processes: int) -> tuple[float, float, float]:
    """(events/s, CPU us per event of this process, of its worker processes) of the drain into the file sink with
    ``streaming.worker.processes=processes``: long runs of row changes decoded and serialized by workers."""
    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": db, "topic.prefix": "bench", "slot.name": slot,
        "publication.name": "bench_pub", "snapshot.mode": "no_data", "poll.interval.ms": 50,
        "streaming.worker.processes": processes, **debezium_baseline.converter_properties(),
    })
    store = MemoryOffsetStore()
    store.commit([({"server": "bench"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
    return drain_run.run(config, out_dir, "bench.public.bench", rows, offset_store=store)


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--no-debezium", action="store_true", help="do not run Debezium's engine beside cdc")
    parser.add_argument("--transforms", action="store_true",
                        help="only the paired runs without / with ExtractNewRecordState + RegexRouter")
    parser.add_argument("--pairs", type=int, default=3, help="paired runs of --transforms (the best of each side counts)")
    args = parser.parse_args()
    if args.transforms:
        transforms_ratio(args.rows, args.pairs)
        return
    why_not = "--no-debezium" if args.no_debezium else debezium_baseline.missing()
    dbz: Figures | None = None
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute("CREATE PUBLICATION bench_pub FOR TABLE bench", dbname="bench")
        slots = ("bench_bare", "bench_file", "bench_json", "bench_tx", "bench_dbz", "bench_workers")
        for slot in slots:
            pg.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')", dbname="bench")
        t = time.perf_counter()
        pg.execute(INSERT % args.rows, dbname="bench")
        print(f"inserted {args.rows} rows in {time.perf_counter() - t:.2f}s")
        bare = bare_receive_rate(pg, "bench", "bench_bare", args.rows)
        # cdc's file-sink run alone in a fresh process: its CPU and peak RSS, as the JVM's are taken.
        full, cpu_s, rss, wall = isolated.run(engine_rate, isolated.address(pg), "bench", "bench_file", args.rows,
                                              Path(tmp) / "cdc")
        cdc = Figures(args.rows, args.rows / full, wall, cpu_s, rss)
        if why_not is None:
            props = debezium_baseline.engine_properties(debezium_baseline.postgres(
                pg, "bench", "bench_dbz", "no_data", **{"publication.name": "bench_pub",
                                                        "publication.autocreate.mode": "disabled"}))
            dbz = debezium_baseline.run(props, Path(tmp) / "debezium", "bench.public.bench", args.rows)
        (workers, main_us, workers_us), _, _, _ = isolated.run(
            worker_rate, isolated.address(pg), "bench", "bench_workers", args.rows, Path(tmp) / "workers", 1)
        json_only = engine_rate(pg, "bench", "bench_json", args.rows, None)
        with_tx = engine_rate(pg, "bench", "bench_tx", args.rows, None, {"provide.transaction.metadata": "true"})
    print(f"bare pgoutput receive loop          : {bare:>10,.0f} messages/s")
    print(f"end to end, file sink (fsync)       : {full:>10,.0f} events/s   ratio to bare {full / bare:.2f}")
    print(f"  same, streaming.worker.processes=1: {workers:>10,.0f} events/s   ratio to bare {workers / bare:.2f}   "
          f"CPU {main_us:.1f} us/event here + {workers_us:.1f} in the worker")
    print(f"end to end, JSON serialized, no sink: {json_only:>10,.0f} events/s   ratio to bare {json_only / bare:.2f}")
    print(f"  same, transaction metadata on     : {with_tx:>10,.0f} events/s")
    print("targets: file sink >= 30,000 events/s (issue 2); with transaction metadata >= 60,000 (issue 3); "
          "project goal >= 100,000")
    print()
    print(debezium_baseline.table(f"drain a {args.rows:,}-row backlog (PostgreSQL, pgoutput)",
                                  [("stream, file sink", cdc, dbz)], why_not))
    print("target: cdc >= 3x Debezium's rate, CPU per record <= 0.15x, peak RSS <= 150 MB (issue 20)")


def transforms_ratio(rows: int, pairs: int) -> None:
    """The rate without and with the transform chain on one backlog, in alternating runs; prints the ratio."""
    with EmbeddedPostgres() as pg:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute("CREATE PUBLICATION bench_pub FOR TABLE bench", dbname="bench")
        for i in range(pairs):
            for side in ("plain", "smt", "route"):
                pg.execute(f"SELECT pg_create_logical_replication_slot('bench_{side}_{i}', 'pgoutput')", dbname="bench")
        pg.execute(INSERT % rows, dbname="bench")
        plain, smt, route = [], [], []
        for i in range(pairs):
            plain.append(engine_rate(pg, "bench", f"bench_plain_{i}", rows, None))
            smt.append(engine_rate(pg, "bench", f"bench_smt_{i}", rows, None, TRANSFORMS, topic="flat.bench"))
            route.append(engine_rate(pg, "bench", f"bench_route_{i}", rows, None, ROUTE_ONLY, topic="flat.bench"))
            print(f"round {i + 1}: without {plain[-1]:>10,.0f} events/s, unwrap+route {smt[-1]:>10,.0f} "
                  f"({smt[-1] / plain[-1]:.3f}), predicate+route {route[-1]:>10,.0f} ({route[-1] / plain[-1]:.3f})")
    print(f"end to end, JSON serialized, no sink, {rows:,} rows, best of {pairs}:")
    print(f"  without transforms                 : {max(plain):>10,.0f} events/s")
    print(f"  ExtractNewRecordState + RegexRouter: {max(smt):>10,.0f} events/s   ratio {max(smt) / max(plain):.3f}")
    print(f"  TopicNameMatches + RegexRouter     : {max(route):>10,.0f} events/s   ratio {max(route) / max(plain):.3f}"
          "  (value unchanged: the chain's own cost)")
    print("target: ExtractNewRecordState + RegexRouter ratio >= 0.85 (issue 13)")


if __name__ == "__main__":
    main()
