"""Commit-to-acknowledgement latency: single-row transactions through ``cdc``'s engine into the file sink.

For PostgreSQL and MariaDB, a throwaway server; the engine runs as ``cdc run`` runs it (the
connector's defaults, JsonConverter JSON with schemas, the file sink fsynced per batch, in this
process); a writer in its own process (spawned: its own interpreter and GIL) commits single-row
transactions on an autocommit connection, (a) paced at ``--rate`` per second and (b) flat out,
each for ``--seconds``. The writer keeps ``time.time_ns()`` taken when each COMMIT returned; a
wrapper around the file sink takes ``time.time_ns()`` when ``write`` (fsync included) returned for
the batch that held the row. Latency = acknowledgement - commit return, per transaction; prints
p50/p95/p99/max, the tx/s the writer achieved, the batches the sink wrote, and the load average.
Target (issue 20): p99 < 10 ms with the writer flat out, both connectors.

``--set NAME=VALUE`` (repeatable) adds an engine property to every run, to try settings; ``--no-fsync``
turns the file sink's fsync off (the disk's share of the latency);
``--connectors postgres,mariadb`` picks the servers; ``--modes rate,flat`` the writers.
Usage: ``uv run python benchmarks/latency.py [--rate N] [--seconds S] [--connectors ...] [--modes ...] [--set NAME=VALUE]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.sinks.file import FileSink
from cdc_core.spi.sink import SinkRecord
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore

#: Rows of the latency runs: a key, the writer's clock before the statement (for a look at the row), a payload.
PG_TABLE = "CREATE TABLE lat (id bigint PRIMARY KEY, t_ns bigint, pad text)"
MARIADB_TABLE = "CREATE TABLE lat (id BIGINT PRIMARY KEY, t_ns BIGINT, pad VARCHAR(64))"
TARGET_P99_MS = 10.0


@dataclass
class Result:
    """One latency run: the per-transaction latencies (ms), the writer's rate, the sink's batches, the load."""

    connector: str
    mode: str
    latencies: list[float]
    tx_per_s: float
    batches: int
    load_before: float
    load_after: float
    lost: int
    #: CPU time of this process (the engine's threads; the writer runs elsewhere) per transaction, µs.
    cpu_us: float = 0.0

    def percentile(self, q: float) -> float:
        values = sorted(self.latencies)
        return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")

    def line(self) -> str:
        v = self.latencies
        per_batch = len(v) / self.batches if self.batches else 0.0
        return (f"{self.connector:<9} {self.mode:<13} {self.tx_per_s:>7,.0f} tx/s  p50 {self.percentile(0.5):6.2f}"
                f"  p95 {self.percentile(0.95):6.2f}  p99 {self.percentile(0.99):6.2f}  max {max(v) if v else 0:7.2f} ms"
                f"  cdc CPU {self.cpu_us:5.0f} us/tx ({len(v):,} tx, {per_batch:.1f} tx/batch{', ' + str(self.lost) + ' not acked' if self.lost else ''})"
                f"  load {self.load_before:.2f}->{self.load_after:.2f}")


class TimedSink:
    """The file sink, noting the wall clock when each batch's ``write`` returned (acknowledged) and its keys."""

    name = "file"

    def __init__(self, inner: FileSink, topic: str):
        self.inner = inner
        self.topic = topic
        #: (acknowledged at, the keys of the measured topic's records in the batch), parsed later by ``acked``.
        self.acks: list[tuple[int, list[bytes]]] = []
        self.first = threading.Event()
        #: ``acked``'s result so far and how many of ``acks`` it has parsed: each call parses only the new ones
        #: (the wait for the last row calls it every 0.2 s in the engine's process; parsing every key again
        #: each time took a growing share of the GIL from the engine and inflated the latencies it measures).
        self._acked: dict[int, int] = {}
        self._parsed = 0

    def write(self, batch: list[SinkRecord]) -> None:
        self.inner.write(batch)
        now = time.time_ns()
        topic = self.topic
        self.acks.append((now, [r.key for r in batch if r.topic == topic]))
        self.first.set()

    def close(self) -> None:
        self.inner.close()

    def acked(self) -> dict[int, int]:
        """Row id -> when its batch was acknowledged (ns)."""
        out = self._acked
        end = len(self.acks)
        for at, keys in self.acks[self._parsed:end]:
            for key in keys:
                out.setdefault(orjson.loads(key)["payload"]["id"], at)
        self._parsed = end
        return out


# -- the writer (a spawned process) ------------------------------------------------------------------

def write_postgres(conninfo: str, first: int, rate: float, seconds: float) -> list[int]:
    """Commit single-row inserts from id ``first`` on (``rate`` per second, 0: flat out); commit-return times (ns)."""
    import psycopg

    out: list[int] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        cur = conn.cursor()
        statement = "INSERT INTO lat (id, t_ns, pad) VALUES (%s, %s, 'x')"
        _loop(lambda i: cur.execute(statement, (i, time.time_ns()), prepare=True), first, rate, seconds, out)
    return out


def write_mariadb(conninfo: dict[str, Any], first: int, rate: float, seconds: float) -> list[int]:
    """As ``write_postgres``, through PyMySQL with autocommit on."""
    import pymysql

    out: list[int] = []
    with pymysql.connect(**conninfo) as conn, conn.cursor() as cur:
        _loop(lambda i: cur.execute(f"INSERT INTO lat (id, t_ns, pad) VALUES ({i}, {time.time_ns()}, 'x')"),
              first, rate, seconds, out)
    return out


def _loop(commit: Any, first: int, rate: float, seconds: float, out: list[int]) -> None:
    started = time.perf_counter()
    end = started + seconds
    i = first
    append = out.append
    while True:
        commit(i)
        append(time.time_ns())
        i += 1
        now = time.perf_counter()
        if now >= end:
            return
        if rate:
            pause = started + (i - first) / rate - now
            if pause > 0:
                time.sleep(pause)


def run_writer(fn: Any, *args: Any) -> tuple[list[int], float]:
    """``fn(*args)`` in a spawned process; (commit times, tx/s)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(time.sleep, 0).result()  # the interpreter is up before the clock starts
        started = time.perf_counter()
        commits = pool.submit(fn, *args).result()
        elapsed = time.perf_counter() - started
    return commits, len(commits) / elapsed


# -- one run -------------------------------------------------------------------------------------------

#: ``--no-fsync``: the file sink without its fsync per batch (to see the disk's share of the latency).
FSYNC = True


def measure(connector: str, server: Any, config: dict[str, Any], topic: str, writer: Any, writer_conn: Any,
            insert_marker: Any, mode: str, rate: float, seconds: float, first: int, out_dir: Path) -> Result:
    """Start the engine, wait for its stream (marker rows), run the writer, wait for every row's acknowledgement."""
    sink = TimedSink(FileSink(Config({"dir": str(out_dir), "fsync": FSYNC})), topic)
    engine = Engine(config, sink=sink, offset_store=MemoryOffsetStore(),
                    history_store=MemorySchemaHistoryStore() if connector == "mariadb" else None)
    error: list[BaseException] = []

    def run() -> None:
        try:
            engine.run()
        except BaseException as e:  # noqa: BLE001 - reported below
            error.append(e)

    runner = threading.Thread(target=run, name="engine")
    runner.start()
    try:
        marker = first - 1000
        deadline = time.monotonic() + 120
        while not sink.first.wait(0.5):  # streaming once a marker row is acknowledged
            if error or time.monotonic() > deadline:
                raise SystemExit(f"{connector}: the engine did not stream a marker row: {error}")
            insert_marker(marker)
            marker += 1
        time.sleep(0.5)
        load_before = os.getloadavg()[0]
        cpu = time.process_time()
        commits, tx_per_s = run_writer(writer, writer_conn, first, rate, seconds)
        wanted = set(range(first, first + len(commits)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not error:
            if wanted <= sink.acked().keys():
                break
            time.sleep(0.2)
        load_after = os.getloadavg()[0]
        cpu = time.process_time() - cpu
    finally:
        engine.stop()
        runner.join()
    if error:
        raise SystemExit(f"{connector}: the engine failed: {error[0]!r}")
    acked = sink.acked()
    latencies = [(acked[first + i] - t) / 1e6 for i, t in enumerate(commits) if first + i in acked]
    batches = sum(1 for _, keys in sink.acks if any(orjson.loads(k)["payload"]["id"] >= first for k in keys))
    return Result(connector, mode, latencies, tx_per_s, batches, load_before, load_after,
                  len(commits) - len(latencies), cpu / max(len(commits), 1) * 1e6)


def postgres_runs(modes: list[tuple[str, float]], seconds: float, extra: dict[str, Any]) -> list[Result]:
    """Every mode against one throwaway PostgreSQL (a new slot and engine per run)."""
    from cdc_postgres.embedded import EmbeddedPostgres

    out = []
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        pg.create_database("lat")
        pg.execute(PG_TABLE, dbname="lat")
        for n, (mode, rate) in enumerate(modes):
            config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
                      "database.user": pg.user, "database.dbname": "lat", "topic.prefix": "lat",
                      "slot.name": f"lat_{n}", "publication.autocreate.mode": "filtered",
                      "table.include.list": "public.lat", "snapshot.mode": "no_data", **extra}

            def marker(i: int) -> None:
                pg.execute(f"INSERT INTO lat (id, pad) VALUES ({i}, 'marker')", dbname="lat")

            first = (n + 1) * 10_000_000
            out.append(measure("postgres", pg, config, "lat.public.lat", write_postgres, pg.conninfo("lat"), marker,
                               mode, rate, seconds, first, Path(tmp) / f"run{n}"))
            print("  " + out[-1].line(), flush=True)
            pg.execute(f"SELECT pg_drop_replication_slot('lat_{n}')", dbname="lat")
    return out


def mariadb_runs(modes: list[tuple[str, float]], seconds: float, extra: dict[str, Any]) -> list[Result]:
    """Every mode against one throwaway MariaDB (a new engine per run, streaming from the binlog's end)."""
    from cdc_mysql.embedded import EmbeddedMariaDB

    out = []
    with EmbeddedMariaDB() as server, tempfile.TemporaryDirectory() as tmp:
        server.create_database("lat")
        server.execute(MARIADB_TABLE, database="lat")
        for n, (mode, rate) in enumerate(modes):
            config = {"connector.class": "mariadb", "database.hostname": server.host, "database.port": server.port,
                      "database.user": server.user, "database.password": server.password,
                      "database.server.id": 9300 + n, "topic.prefix": "lat", "database.include.list": "lat",
                      "snapshot.mode": "no_data", **extra}

            def marker(i: int) -> None:
                server.execute(f"INSERT INTO lat (id, pad) VALUES ({i}, 'marker')", database="lat")

            first = (n + 1) * 10_000_000
            out.append(measure("mariadb", server, config, "lat.lat.lat", write_mariadb, server.conninfo("lat"), marker,
                               mode, rate, seconds, first, Path(tmp) / f"run{n}"))
            print("  " + out[-1].line(), flush=True)
    return out


RUNNERS = {"postgres": postgres_runs, "mariadb": mariadb_runs}


def run_all(connectors: list[str], rate: float, seconds: float, modes: list[str] = ("rate", "flat"),
            extra: dict[str, Any] | None = None) -> list[Result]:
    """Every connector in every mode; prints each run's line as it ends."""
    wanted = [(f"{rate:,.0f} tx/s" if m == "rate" else "flat out", rate if m == "rate" else 0.0) for m in modes]
    out: list[Result] = []
    for name in connectors:
        out += RUNNERS[name](wanted, seconds, extra or {})
    return out


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=1000, help="transactions per second of the paced writer")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each writer runs")
    parser.add_argument("--connectors", default="postgres,mariadb")
    parser.add_argument("--modes", default="rate,flat", help="rate (paced at --rate), flat (flat out), or both")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an engine property for every run (repeatable), to try settings")
    parser.add_argument("--no-fsync", action="store_true", help="the file sink without fsync (the disk's share)")
    args = parser.parse_args()
    global FSYNC
    FSYNC = not args.no_fsync
    extra = dict(item.split("=", 1) for item in args.set)
    print(f"commit-to-acknowledgement latency, file sink ({'fsync per batch' if FSYNC else 'NO fsync'}), JSON with schemas; "
          f"{os.cpu_count()} CPUs{'; set ' + ', '.join(args.set) if args.set else ''}")
    results = run_all(args.connectors.split(","), args.rate, args.seconds, args.modes.split(","), extra)
    print("summary:")
    for r in results:
        print("  " + r.line())
    print(f"target: p99 < {TARGET_P99_MS:.0f} ms with the writer flat out, PostgreSQL and MariaDB (issue 20)")


if __name__ == "__main__":
    main()
