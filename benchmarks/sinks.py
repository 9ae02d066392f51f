"""Sink benchmark: events/s draining a PostgreSQL backlog into each sink, beside the file sink in the same run.

Every target reads the same WAL (200k single-row inserts into a 5-column table, one transaction,
written while nothing reads) through its own slot made beforehand (the file sink before the first
sink and again after each, each sink compared with the file runs on either side), serialized by the same
JsonSerializer, written by the sink's own ``write`` (which returns only once the batch is
acknowledged). Beside events/s it prints the CPU time per event of every process taking part (cdc,
PostgreSQL, the broker), which another load on the machine changes far less than the rate. A second measurement streams single-row transactions at about ``--tx-rate`` per
second and reports p50/p99 of commit-to-acknowledgement latency (the writer's clock after COMMIT
to the sink's ``write`` returning). A sink is one entry of ``TARGETS``: a function that starts
its broker (or takes one from the environment) and returns the sink's ``debezium.sink.<name>.*``
properties. Kafka runs on Tansu (memory storage) unless ``CDC_TEST_KAFKA_BOOTSTRAP`` names a Kafka.
``--set NAME=VALUE`` (repeatable) adds a sink property to every sink but the file sink, to try settings
(``--set producer.linger.ms=50``).
Usage: ``uv run python benchmarks/sinks.py [--rows N] [--sinks kafka,...] [--tx-rate N] [--seconds S] [--set NAME=VALUE]``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.plugins import registry
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

TABLE = "CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12,2), qty bigint, created timestamptz)"
INSERT = ("INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, g * 7, "
          "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %s) g")


def _file(stack: contextlib.ExitStack, tmp: Path) -> dict[str, Any]:
    return {"dir": str(tmp / "file-sink")}


def _kafka(stack: contextlib.ExitStack, tmp: Path) -> dict[str, Any]:
    bootstrap = os.environ.get("CDC_TEST_KAFKA_BOOTSTRAP")
    if not bootstrap:
        from brokers.kafka import EmbeddedKafka

        bootstrap = stack.enter_context(EmbeddedKafka()).bootstrap
    return {"producer.bootstrap.servers": bootstrap}


def _redis(stack: contextlib.ExitStack, tmp: Path) -> dict[str, Any]:
    from brokers.redis import EmbeddedRedis

    return {"address": stack.enter_context(EmbeddedRedis()).address}


def _nats(stack: contextlib.ExitStack, tmp: Path, storage: str = "memory") -> dict[str, Any]:
    from brokers.nats import EmbeddedNats

    # Debezium Server's default stream storage is memory (nats-jetstream-file: a stream that survives a
    # broker restart; JetStream still does not fsync each message, it syncs every 2 minutes by default).
    name = "nats-jetstream" if storage == "memory" else "nats-jetstream-file"
    return {"url": stack.enter_context(EmbeddedNats()).url, "create-stream": "true", "stream-name": "BENCH",
            "subjects": f"bench_{name}.>,lat_{name}.>", "storage": storage}


def _nats_file(stack: contextlib.ExitStack, tmp: Path) -> dict[str, Any]:
    return _nats(stack, tmp, "file")


def _rabbitmq(stack: contextlib.ExitStack, tmp: Path) -> dict[str, Any]:
    from brokers.rabbitmq import EmbeddedRabbitMQ

    server = stack.enter_context(EmbeddedRabbitMQ())
    # Persistent messages into a durable queue per topic (declared by the sink), through the default direct exchange.
    return {"connection.host": server.host, "connection.port": str(server.port), "exchange": "amq.direct",
            "routingKey.source": "topic", "autoCreateRoutingKey": "true"}


#: Sink name -> a function starting what it needs (registered on the ExitStack) and returning its properties.
#: (The HTTP sink posts one request per record, as Debezium Server's does; it is left out of this benchmark.)
TARGETS: dict[str, Callable[[contextlib.ExitStack, Path], dict[str, Any]]] = {
    "file": _file,
    "kafka": _kafka,
    "redis": _redis,
    "nats-jetstream": _nats,
    "nats-jetstream-file": _nats_file,
    "rabbitmq": _rabbitmq,
}


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE``: a sink property (without ``debezium.sink.<type>.``) for every sink but the file sink."""
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a sink property for every sink but the file sink (repeatable), to try settings")


def with_set(name: str, props: dict[str, Any], settings: list[str]) -> dict[str, Any]:
    """``props`` of the sink ``name`` with the ``--set`` properties (the file sink's unchanged)."""
    if name == "file":
        return props
    for item in settings:
        if "=" not in item:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
    return {**props, **dict(item.split("=", 1) for item in settings)}


def _config(pg: Any, slot: str, prefix: str) -> Config:
    return Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": prefix, "slot.name": slot,
        "publication.name": "bench_pub", "snapshot.mode": "no_data", "poll.interval.ms": 10,
    })


def _sink_type(name: str) -> str:
    """The sink type of a target (``nats-jetstream-file`` is the nats-jetstream sink on a file-storage stream)."""
    return "nats-jetstream" if name.startswith("nats-jetstream") else name


def drain_rate(pg: Any, sink_name: str, sink_props: dict[str, Any], slot: str, rows: int,
               profile: int = 0) -> tuple[float, float]:
    """Events/s of the whole engine into ``sink_name`` until ``rows`` events were acknowledged, and the CPU
    microseconds per event of every process taking part (cdc, PostgreSQL, the broker): a machine busy with
    other work changes the first much more than the second.

    ``profile`` > 0: cProfile the thread that serializes and writes (the sink's side of the engine)
    and print that many of its top functions by own time.
    """
    sink = registry().get("sink", _sink_type(sink_name))(Config(sink_props))
    serializer = JsonSerializer()
    store = MemoryOffsetStore()
    store.commit([({"server": f"bench_{sink_name}"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
    engine = Engine(_config(pg, slot, f"bench_{sink_name}"), offset_store=store)
    count = 0
    done = threading.Event()

    profiler = cProfile.Profile() if profile else None

    def handler(records: list[Any]) -> None:
        nonlocal count
        if profiler is not None:
            profiler.enable()
        sink.write(serializer.serialize(records))
        if profiler is not None:
            profiler.disable()
        count += len(records)
        if count >= rows:
            done.set()
            engine.stop()

    started, cpu = time.perf_counter(), tree_cpu()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    done.wait(900)
    elapsed = time.perf_counter() - started
    runner.join()
    sink.close()
    cpu = tree_cpu() - cpu
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(profile)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        start = next((i for i, line in enumerate(lines) if "function calls" in line), 0)
        print(f"profile of the {sink_name} sink's thread ({count:,} events, {elapsed:.2f}s):")
        print("\n".join("    " + line for line in lines[start:]))
    return count / elapsed, cpu / max(count, 1) * 1e6


def latency(pg: Any, sink_name: str, sink_props: dict[str, Any], slot: str, tx_rate: int, seconds: float) -> list[float]:
    """Commit-to-acknowledgement latencies (ms) of single-row transactions written at ``tx_rate`` per second."""
    sink = registry().get("sink", _sink_type(sink_name))(Config(sink_props))
    serializer = JsonSerializer()
    store = MemoryOffsetStore()
    prefix = f"lat_{sink_name}"
    committed: dict[int, float] = {}
    acked: dict[int, float] = {}
    engine = Engine(_config(pg, slot, prefix), offset_store=store)
    streaming = threading.Event()

    def handler(records: list[Any]) -> None:
        sink.write(serializer.serialize(records))
        now = time.perf_counter()
        for r in records:
            if r.value is not None and r.value.get("after"):
                acked[r.value["after"]["id"]] = now
        streaming.set()

    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    try:
        with pg.connect("bench") as conn:
            conn.autocommit = True
            # Keys above every earlier run's (each sink's latency run adds its own rows).
            base = conn.execute("SELECT coalesce(max(id), 0) + 1000000 FROM bench").fetchone()[0]
            conn.execute(f"INSERT INTO bench (id) VALUES ({base})")  # the stream is up once this arrives
            streaming.wait(60)
            n = int(tx_rate * seconds)
            start = time.perf_counter()
            for i in range(1, n + 1):
                conn.execute(f"INSERT INTO bench (id, name) VALUES ({base + i}, 'x')")
                committed[base + i] = time.perf_counter()
                pause = start + i / tx_rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            achieved = n / (time.perf_counter() - start)
        deadline = time.monotonic() + 60
        while len([k for k in committed if k in acked]) < len(committed) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        engine.stop()
        runner.join()
        sink.close()
    print(f"  {sink_name}: wrote {achieved:,.0f} tx/s for {seconds:.0f}s")
    return [(acked[k] - t) * 1000 for k, t in committed.items() if k in acked]


def _slot(sink_name: str) -> str:
    """A replication slot name for a sink (slot names take lower-case letters, digits and underscores)."""
    return sink_name.replace("-", "_").replace("#", "_")


def processes() -> dict[int, tuple[int, float, float]]:
    """Every process' parent, own CPU seconds (utime + stime) and its waited-for children's, from /proc ({} elsewhere)."""
    out: dict[int, tuple[int, float, float]] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick,
                                      (int(fields[13]) + int(fields[14])) / tick)
    return out


def tree_cpu() -> float:
    """CPU seconds so far of this process and every process under it (PostgreSQL, the brokers), ended ones included
    (a parent counts the children it waited for)."""
    procs = processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in procs:
            total += procs[pid][1] + procs[pid][2]
        todo += children.get(pid, [])
    return total


def _load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--sinks", default=",".join(n for n in TARGETS if n not in ("file", "nats-jetstream-file")),
                        help=f"sinks to measure beside the file sink (available: {', '.join(TARGETS)})")
    parser.add_argument("--tx-rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the top N functions (own time) of each sink's serialize+write thread")
    parser.add_argument("--no-latency", action="store_true", help="measure the drain rate only")
    add_set_option(parser)
    args = parser.parse_args()
    names = ["file"] + [n for n in args.sinks.split(",") if n and n != "file"]
    rates: dict[str, float] = {}
    cpus: dict[str, float] = {}
    lat: dict[str, list[float]] = {}
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        pg.create_database("bench")
        pg.execute(TABLE, dbname="bench")
        pg.execute("CREATE PUBLICATION bench_pub FOR TABLE bench", dbname="bench")
        props = {n: with_set(n, TARGETS[n](stack, Path(tmp)), args.set) for n in names}
        if args.set:
            print(f"sink properties set: {', '.join(args.set)}")
        # The file sink runs before the first sink and after each one: a sink's ratio is to the mean of
        # the file runs on either side of it, so that a change of the machine's load hits both alike.
        others = names[1:]
        order = ["file#0"] + [x for i, n in enumerate(others) for x in (n, f"file#{i + 1}")]
        for run in order:
            pg.execute(f"SELECT pg_create_logical_replication_slot('bench_{_slot(run)}', 'pgoutput')", dbname="bench")
        t = time.perf_counter()
        pg.execute(INSERT % args.rows, dbname="bench")
        print(f"inserted {args.rows} rows in {time.perf_counter() - t:.2f}s; load average {_load()}")
        for run in order:
            n = run.split("#")[0]
            rates[run], cpus[run] = drain_rate(pg, n, props[n], f"bench_{_slot(run)}", args.rows, args.profile)
        for n in names:
            if n == "file" or args.no_latency:
                continue
            pg.execute(f"SELECT pg_create_logical_replication_slot('lat_{_slot(n)}', 'pgoutput')", dbname="bench")
            lat[n] = latency(pg, n, props[n], f"lat_{_slot(n)}", args.tx_rate, args.seconds)
    print(f"drain a {args.rows:,}-row backlog (PostgreSQL, pgoutput), JSON with schemas; load average {_load()}:")
    for i, run in enumerate(order):
        cpu = f"CPU per event (cdc, PostgreSQL, broker): {cpus[run]:5.1f} us"
        if run.startswith("file#"):
            print(f"  {'file':<14} sink: {rates[run]:>10,.0f} events/s   {cpu}")
            continue
        baseline = (rates[order[i - 1]] + rates[order[i + 1]]) / 2
        cpu_base = (cpus[order[i - 1]] + cpus[order[i + 1]]) / 2
        print(f"  {run:<14} sink: {rates[run]:>10,.0f} events/s   {cpu}   ratio to the file sink around it "
              f"{rates[run] / baseline:.2f} (CPU {cpus[run] / cpu_base:.2f}x)")
    print(f"commit-to-acknowledgement latency at ~{args.tx_rate:,} tx/s:")
    for n, values in lat.items():
        if not values:
            print(f"  {n:<14} sink: no transaction was acknowledged (see the error above)")
            continue
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"  {n:<14} sink: p50 {statistics.median(values):6.1f} ms   p99 {p99:6.1f} ms   ({len(values)} tx)")
    print("targets (issue 12): Kafka >= 0.8x the file sink's rate, Redis and NATS >= 0.6x; Kafka p99 commit-to-ack < 50 ms")


if __name__ == "__main__":
    main()
