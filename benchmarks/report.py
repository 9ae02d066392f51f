"""Every issue-20 figure in one run, and the README's benchmark table rewritten from it.

In one session, against throwaway servers: draining a backlog and snapshotting a table, PostgreSQL
and MariaDB, ``cdc`` (file sink, JsonConverter JSON with schemas, fsync per batch, alone in a fresh
Python process) against Debezium 3.0.7's embedded engine on the same server and data
(``debezium_baseline``), beside the bare limits measured in the same run (pgoutput receive loop,
COPY read, mysql-replication loop); commit-to-acknowledgement latency with a writer flat out
(``latency``); peak RSS while a large transaction streams (``pg_big_transaction``,
``mariadb_big_transaction``). The work is the one each benchmark does (their functions are called).
Each figure is printed with the 1-minute load average before and after it: the machine is shared.
``--rounds N`` interleaves N rounds of cdc and Debezium and keeps the median rate (default 1);
``--quick`` uses smaller data (a smoke run: its ratios are not issue 20's figures);
``--threads N`` (default 2) adds each snapshot with ``snapshot.max.threads=N`` worker processes (their
CPU counted with the main process's); ``--schemas on|off|both`` (default on) runs the drains and
snapshots with JsonConverter's schemas on, off (``schemas.enable=false`` on both engines: issue 20 asks
for both), or both in turn. Each snapshot also prints the bytes per second cdc wrote against the disk's
own rate (``disk_rate``: sequential writes fsynced every 64 MB, measured in the same run): with schemas
a line is ~3 KB, and a snapshot with worker processes can be bound by the disk, not by cdc.
``--write-readme`` replaces the README's table between the ``benchmarks:report`` markers.
Usage: ``uv run python benchmarks/report.py [--quick] [--rounds N] [--threads N] [--schemas on|off|both]
[--write-readme] [--no-debezium]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import debezium_baseline
import isolated
from debezium_baseline import Figures

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN, END = "<!-- benchmarks:report begin -->", "<!-- benchmarks:report end -->"


@dataclass
class Row:
    """One line of the table: a figure, cdc's value, what it is compared with, the target and whether it is met."""

    figure: str
    cdc: str
    other: str
    ratio: str
    target: str
    met: bool | None
    load: str


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        mark = {True: "met", False: "NOT met", None: "-"}[row.met]
        print(f"  {row.figure}: cdc {row.cdc} | {row.other} | {row.ratio} | target {row.target}: {mark} "
              f"| load {row.load}", flush=True)


def _load() -> float:
    return os.getloadavg()[0]


def _loads(before: float) -> str:
    return f"{before:.1f}-{_load():.1f}"


def _schemas_label() -> str:
    """What the figure's label says of the JSON: nothing with schemas (the default), else that they are off."""
    return "" if debezium_baseline.schemas_enabled() else ", JSON without schemas"


#: The disk's sequential write rate (MB/s), measured once per run by ``disk_rate``.
_DISK_MB_S: dict[str, float] = {}


def disk_rate(directory: Path, megabytes: int = 1024) -> float:
    """MB/s of writing ``megabytes`` to a new file in ``directory`` in 4 MB writes, fsynced every 64 MB and at the
    end (the file sink's pattern: large batches, fsync per batch); measured once, then remembered."""
    if "rate" not in _DISK_MB_S:
        block, path = b"x" * (4 << 20), directory / "disk-rate.bin"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            started = time.perf_counter()
            for i in range(megabytes // 4):
                os.write(fd, block)
                if i % 16 == 15:
                    os.fsync(fd)
            os.fsync(fd)
            _DISK_MB_S["rate"] = megabytes * (1 << 20) / 1e6 / (time.perf_counter() - started)
        finally:
            os.close(fd)
            path.unlink()
    return _DISK_MB_S["rate"]


def _bytes_written(directory: Path) -> int:
    """Bytes of every file the file sink wrote under ``directory``."""
    return sum(f.stat().st_size for f in directory.rglob("*.jsonl"))


def _disk_row(report: Report, label: str, cdc: Figures, written: int, dbz: Figures | None, disk: float,
              loads: str, target: tuple[float, str] | None = None) -> None:
    """The bytes/s a run wrote against the disk's rate, and what 3x Debezium's rate (or ``target``: a rate and
    its name) would need of it."""
    per_record = written / cdc.records
    if target is not None:
        need = f"{target[1]} needs {target[0] * per_record / 1e6:,.0f} MB/s"
    else:
        need = f"3x Debezium needs {3 * dbz.rate * per_record / 1e6:,.0f} MB/s" if dbz is not None else "(the limit)"
    report.add(Row(f"{label}: bytes written", f"{cdc.rate * per_record / 1e6:,.0f} MB/s ({per_record:,.0f} B/record)",
                   f"disk {disk:,.0f} MB/s", f"{cdc.rate * per_record / 1e6 / disk:.2f}x", need, None, loads))


def _median(runs: list[Figures]) -> Figures:
    """The run of median rate (its own CPU and memory figures with it)."""
    ordered = sorted(runs, key=lambda f: f.rate)
    return ordered[(len(ordered) - 1) // 2]


def _rate_rows(report: Report, label: str, cdc: Figures, dbz: Figures | None, why_not: str | None, load: str,
               rss_target: float | None) -> None:
    """Rate, CPU per record and peak RSS of cdc against Debezium's (issue 20: 3x, 0.15x, and the RSS bound)."""
    if dbz is None:
        report.add(Row(f"{label}: rate", f"{cdc.rate:,.0f}/s", f"Debezium not run ({why_not})", "", ">= 3x", None, load))
        report.add(Row(f"{label}: CPU per record", f"{cdc.cpu_us:.1f} us", "", "", "<= 0.15x", None, load))
    else:
        ratio = cdc.rate / dbz.rate
        report.add(Row(f"{label}: rate", f"{cdc.rate:,.0f}/s", f"Debezium {dbz.rate:,.0f}/s", f"{ratio:.2f}x",
                       ">= 3x Debezium", ratio >= 3, load))
        cpu = cdc.cpu_us / dbz.cpu_us
        report.add(Row(f"{label}: CPU per record", f"{cdc.cpu_us:.1f} us", f"Debezium {dbz.cpu_us:.1f} us",
                       f"{cpu:.2f}x", "<= 0.15x Debezium", cpu <= 0.15, load))
    other = f"Debezium {dbz.max_rss_mb:,.0f} MB" if dbz is not None else ""
    report.add(Row(f"{label}: peak RSS", f"{cdc.max_rss_mb:,.0f} MB", other, "",
                   f"<= {rss_target:.0f} MB" if rss_target else "-", cdc.max_rss_mb <= rss_target if rss_target else None,
                   load))


# -- PostgreSQL ------------------------------------------------------------------------------------

def postgres_drain(report: Report, rows: int, rounds: int, why_not: str | None, processes: int = 0) -> None:
    """pg_streaming.py's drain: bare receive loop, cdc into the file sink, Debezium, the same WAL; with
    ``processes`` also cdc with ``streaming.worker.processes=processes`` (their CPU counted)."""
    import pg_streaming
    from cdc_postgres.embedded import EmbeddedPostgres

    load = _load()
    cdc_runs, dbz_runs, bare, worker_runs = [], [], [], []
    written = 0
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        disk = disk_rate(Path(tmp)) if processes else 0.0
        pg.create_database("bench")
        pg.execute(pg_streaming.TABLE, dbname="bench")
        pg.execute("CREATE PUBLICATION bench_pub FOR TABLE bench", dbname="bench")
        for i in range(rounds):
            for kind in ("bare", "file", "dbz", "workers"):
                pg.execute(f"SELECT pg_create_logical_replication_slot('bench_{kind}_{i}', 'pgoutput')", dbname="bench")
        pg.execute(pg_streaming.INSERT % rows, dbname="bench")
        for i in range(rounds):
            bare.append(pg_streaming.bare_receive_rate(pg, "bench", f"bench_bare_{i}", rows))
            rate, cpu_s, rss, wall = isolated.run(pg_streaming.engine_rate, isolated.address(pg), "bench",
                                                  f"bench_file_{i}", rows, Path(tmp) / f"cdc{i}")
            cdc_runs.append(Figures(rows, rows / rate, wall, cpu_s, rss))
            if processes:
                (rate, _, workers_us), cpu_s, rss, wall = isolated.run(
                    pg_streaming.worker_rate, isolated.address(pg), "bench", f"bench_workers_{i}", rows,
                    Path(tmp) / f"cdc-workers{i}", processes)
                worker_runs.append(Figures(rows, rows / rate, wall, cpu_s + workers_us * rows / 1e6, rss))
                written = _bytes_written(Path(tmp) / f"cdc-workers{i}")
                shutil.rmtree(Path(tmp) / f"cdc-workers{i}", ignore_errors=True)
            if why_not is None:
                props = debezium_baseline.engine_properties(debezium_baseline.postgres(
                    pg, "bench", f"bench_dbz_{i}", "no_data",
                    **{"publication.name": "bench_pub", "publication.autocreate.mode": "disabled"}))
                dbz_runs.append(debezium_baseline.run(props, Path(tmp) / f"debezium{i}", "bench.public.bench", rows))
    loads = _loads(load)
    cdc = _median(cdc_runs)
    label = f"PostgreSQL, drain a {rows // 1000}k-row backlog{_schemas_label()}"
    _rate_rows(report, label, cdc, _median(dbz_runs) if dbz_runs else None, why_not, loads, 150)
    if worker_runs:
        _rate_rows(report, f"{label} with {processes} worker process{'es' if processes > 1 else ''}",
                   _median(worker_runs), _median(dbz_runs) if dbz_runs else None, why_not, loads, 150)
    limit = statistics.median(bare)
    report.add(Row(f"{label}: against the bare pgoutput receive loop", f"{cdc.rate:,.0f}/s",
                   f"bare loop {limit:,.0f}/s", f"{cdc.rate / limit:.2f}x", ">= 0.7x the bare loop",
                   cdc.rate / limit >= 0.7, loads))
    if worker_runs:
        workers = _median(worker_runs)
        label = f"{label} with {processes} worker process{'es' if processes > 1 else ''}"
        report.add(Row(f"{label}: against the bare pgoutput receive loop", f"{workers.rate:,.0f}/s",
                       f"bare loop {limit:,.0f}/s", f"{workers.rate / limit:.2f}x", ">= 0.7x the bare loop",
                       workers.rate / limit >= 0.7, loads))
        # With schemas a drain's lines are large: what 0.7x the bare loop asks of the disk (fsync per batch).
        _disk_row(report, label, workers, written, _median(dbz_runs) if dbz_runs else None, disk, loads,
                  (0.7 * limit, "0.7x the bare loop"))


def _pg_snapshot_rate(pg: Any, rows: int, out_dir: Path) -> float:
    """Rows/s of pg_snapshot.py's snapshot into the file sink, counting the table's records only (a snapshot
    longer than ``heartbeat.interval.ms``, 60 s by default in cdc, also writes a heartbeat record)."""
    import threading

    from cdc_core.config import Config
    from cdc_core.engine import Engine
    from cdc_core.serializers.json import JsonSerializer
    from cdc_core.sinks.file import FileSink
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    config = Config({
        "connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": "bench",
        "snapshot.mode": "initial_only", "slot.name": f"snap_{time.monotonic_ns()}",
        **debezium_baseline.converter_properties(),
    })
    serializer, sink = JsonSerializer.from_config(config), FileSink(Config({"dir": str(out_dir)}))
    count = 0

    def handler(records: list[Any]) -> None:
        nonlocal count
        sink.write(serializer.serialize(records))
        count += sum(1 for r in records if r.topic == "bench.public.bench")

    engine = Engine(config, offset_store=MemoryOffsetStore())
    started = time.perf_counter()
    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    runner.join()
    elapsed = time.perf_counter() - started
    sink.close()
    if count != rows:
        raise SystemExit(f"the PostgreSQL snapshot wrote {count} rows of the table, expected {rows}")
    return rows / elapsed


def postgres_snapshot(report: Report, rows: int, rounds: int, why_not: str | None, threads: int = 1) -> None:
    """pg_snapshot.py's comparison: bare COPY, cdc's snapshot into the file sink, Debezium's, one table; with
    ``threads`` > 1 also cdc with ``snapshot.max.threads=threads`` (worker processes, their CPU counted)."""
    import pg_snapshot
    from cdc_postgres.embedded import EmbeddedPostgres

    load = _load()
    cdc_runs, dbz_runs, bare, worker_runs, written = [], [], [], [], {}
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory() as tmp:
        disk = disk_rate(Path(tmp))
        pg.create_database("bench")
        pg.execute(pg_snapshot.TABLE, dbname="bench")
        pg.execute(pg_snapshot.INSERT % rows, dbname="bench")
        pg.execute("VACUUM ANALYZE bench", dbname="bench")
        for i in range(rounds):
            bare.append(pg_snapshot.bare_copy_rate(pg, rows)[0])
            rate, cpu_s, rss, wall = isolated.run(_pg_snapshot_rate, isolated.address(pg), rows, Path(tmp) / f"cdc{i}")
            cdc_runs.append(Figures(rows, rows / rate, wall, cpu_s, rss))
            written["one"] = _bytes_written(Path(tmp) / f"cdc{i}")
            shutil.rmtree(Path(tmp) / f"cdc{i}")
            if threads > 1:
                (rate, _, workers_us), cpu_s, rss, wall = isolated.run(
                    pg_snapshot.worker_rate, isolated.address(pg), rows, Path(tmp) / f"cdc-workers{i}", threads)
                worker_runs.append(Figures(rows, rows / rate, wall, cpu_s + workers_us * rows / 1e6, rss))
                written["workers"] = _bytes_written(Path(tmp) / f"cdc-workers{i}")
                shutil.rmtree(Path(tmp) / f"cdc-workers{i}")
            if why_not is None:
                props = debezium_baseline.engine_properties(debezium_baseline.postgres(
                    pg, "bench", f"dbz_snapshot_{i}", "initial_only",
                    **{"table.include.list": "public.bench", "publication.autocreate.mode": "filtered"}))
                dbz_runs.append(debezium_baseline.run(props, Path(tmp) / f"debezium{i}", "bench.public.bench", rows))
                pg.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                           f"WHERE slot_name = 'dbz_snapshot_{i}'", dbname="bench")
    loads = _loads(load)
    cdc, dbz = _median(cdc_runs), _median(dbz_runs) if dbz_runs else None
    label = f"PostgreSQL, snapshot a {rows // 1000}k-row table{_schemas_label()}"
    _rate_rows(report, label, cdc, dbz, why_not, loads, None)
    if worker_runs:
        _rate_rows(report, f"{label} with {threads} worker processes", _median(worker_runs), dbz, why_not, loads, None)
        _disk_row(report, f"{label} with {threads} worker processes", _median(worker_runs), written["workers"], dbz,
                  disk, loads)
    else:
        _disk_row(report, label, cdc, written["one"], dbz, disk, loads)
    limit = statistics.median(bare)
    report.add(Row(f"{label}: against a bare COPY read", f"{cdc.rate:,.0f}/s", f"COPY {limit:,.0f}/s",
                   f"{cdc.rate / limit:.2f}x", "(the limit)", None, loads))


# -- MariaDB ---------------------------------------------------------------------------------------

def mariadb_drain(report: Report, changes: int, rounds: int, why_not: str | None, processes: int = 0) -> None:
    """mariadb_streaming.py's drain: bare mysql-replication loop, cdc into the file sink, Debezium from its offset;
    with ``processes`` also cdc with ``streaming.worker.processes=processes`` (their CPU counted)."""
    import mariadb_streaming as ms
    from cdc_mysql.embedded import EmbeddedMariaDB

    load = _load()
    cdc_runs, dbz_runs, bare, worker_runs = [], [], [], []
    written = 0
    with EmbeddedMariaDB() as server, tempfile.TemporaryDirectory() as tmp:
        disk = disk_rate(Path(tmp)) if processes else 0.0
        server.create_database("bench")
        server.execute(ms.TABLE, database="bench")
        server.execute(ms.MARKER, database="bench")
        state = Path(tmp) / "debezium-state"
        if why_not is None:
            ms.debezium_offset_before_backlog(server, state, Path(tmp) / "debezium-first")
        file, pos, _, end_pos = ms.generate(server, changes)
        address = isolated.address(server)
        for i in range(rounds):
            bare.append(ms.bare_rate(server, file, pos, end_pos, changes))
            (rate, _), cpu_s, rss, wall = isolated.run(ms.engine_rate, address, file, pos, changes,
                                                       Path(tmp) / f"s{i}", "sink")
            cdc_runs.append(Figures(changes, changes / rate, wall, cpu_s, rss))
            if processes:
                (rate, _, workers_us), cpu_s, rss, wall = isolated.run(
                    ms.worker_rate, address, file, pos, changes, Path(tmp) / f"w{i}", processes)
                worker_runs.append(Figures(changes, changes / rate, wall, cpu_s + workers_us * changes / 1e6, rss))
                written = _bytes_written(Path(tmp) / f"w{i}")
                shutil.rmtree(Path(tmp) / f"w{i}", ignore_errors=True)
            if why_not is None:
                dbz_runs.append(ms.debezium_drain(server, state, Path(tmp) / f"debezium-drain{i}", changes))
                shutil.rmtree(Path(tmp) / f"debezium-drain{i}")
    loads = _loads(load)
    cdc = _median(cdc_runs)
    label = f"MariaDB, drain {changes // 1000}k row changes{_schemas_label()}"
    _rate_rows(report, label, cdc, _median(dbz_runs) if dbz_runs else None, why_not, loads, 150)
    if worker_runs:
        _rate_rows(report, f"{label} with {processes} worker process{'es' if processes > 1 else ''}",
                   _median(worker_runs), _median(dbz_runs) if dbz_runs else None, why_not, loads, 150)
    limit = statistics.median(bare)
    report.add(Row(f"{label}: against the bare mysql-replication loop", f"{cdc.rate:,.0f}/s",
                   f"bare loop {limit:,.0f}/s", f"{cdc.rate / limit:.2f}x", "(the limit)", None, loads))
    if worker_runs:
        workers = _median(worker_runs)
        label = f"{label} with {processes} worker process{'es' if processes > 1 else ''}"
        report.add(Row(f"{label}: against the bare mysql-replication loop", f"{workers.rate:,.0f}/s",
                       f"bare loop {limit:,.0f}/s", f"{workers.rate / limit:.2f}x", "(the limit)", None, loads))
        _disk_row(report, label, workers, written, _median(dbz_runs) if dbz_runs else None, disk, loads)


def mariadb_snapshot(report: Report, rows: int, rounds: int, why_not: str | None, threads: int = 1) -> None:
    """mariadb_snapshot.py's comparison (one process, as ``cdc run`` by default) against Debezium's snapshot; with
    ``threads`` > 1 also with ``snapshot.max.threads=threads`` (worker processes, their CPU counted)."""
    import mariadb_snapshot as snap
    from cdc_mysql.embedded import EmbeddedMariaDB

    load = _load()
    cdc_runs, dbz_runs, worker_runs, written = [], [], [], {}
    with EmbeddedMariaDB() as server, tempfile.TemporaryDirectory() as tmp:
        disk = disk_rate(Path(tmp))
        server.create_database("bench")
        server.execute(snap.TABLE, database="bench")
        server.execute(snap.INSERT.format(n=rows), database="bench")
        server.execute("ANALYZE TABLE bench", database="bench")
        address = {"host": server.host, "port": server.port, "user": server.user, "password": server.password}
        for i in range(rounds):
            (rate, _, workers), cpu_s, rss, wall = isolated.run(snap.engine_rate, address, rows, Path(tmp) / f"cdc{i}", 1)
            cdc_runs.append(Figures(rows, rows / rate, wall, cpu_s + workers * rows / 1e6, rss))
            written["one"] = _bytes_written(Path(tmp) / f"cdc{i}")
            shutil.rmtree(Path(tmp) / f"cdc{i}")
            if threads > 1:
                (rate, _, workers), cpu_s, rss, wall = isolated.run(snap.engine_rate, address, rows,
                                                                    Path(tmp) / f"cdc-workers{i}", threads)
                worker_runs.append(Figures(rows, rows / rate, wall, cpu_s + workers * rows / 1e6, rss))
                written["workers"] = _bytes_written(Path(tmp) / f"cdc-workers{i}")
                shutil.rmtree(Path(tmp) / f"cdc-workers{i}")
            if why_not is None:
                props = debezium_baseline.engine_properties(debezium_baseline.mysql(
                    server, 9200, "bench", "initial_only", **{"database.include.list": "bench"}))
                dbz_runs.append(debezium_baseline.run(props, Path(tmp) / f"debezium{i}", "bench.bench.bench", rows))
    loads, label = _loads(load), f"MariaDB, snapshot a {rows // 1000}k-row table{_schemas_label()}"
    dbz = _median(dbz_runs) if dbz_runs else None
    _rate_rows(report, label, _median(cdc_runs), dbz, why_not, loads, None)
    if worker_runs:
        _rate_rows(report, f"{label} with {threads} worker processes", _median(worker_runs), dbz, why_not, loads, None)
        _disk_row(report, f"{label} with {threads} worker processes", _median(worker_runs), written["workers"], dbz,
                  disk, loads)
    else:
        _disk_row(report, label, _median(cdc_runs), written["one"], dbz, disk, loads)


# -- latency and memory ----------------------------------------------------------------------------

def latency(report: Report, seconds: float) -> None:
    """latency.py with the writer flat out, both connectors: p99 commit-to-acknowledgement."""
    import latency as lat

    for result in lat.run_all(["postgres", "mariadb"], 1000, seconds, ["flat"]):
        name = {"postgres": "PostgreSQL", "mariadb": "MariaDB"}[result.connector]
        p99 = result.percentile(0.99)
        report.add(Row(f"{name}, commit-to-ack latency p99, writer flat out",
                       f"{p99:,.1f} ms (p50 {result.percentile(0.5):,.1f}, {result.tx_per_s:,.0f} tx/s)", "", "",
                       f"< {lat.TARGET_P99_MS:.0f} ms", p99 < lat.TARGET_P99_MS,
                       f"{result.load_before:.1f}-{result.load_after:.1f}"))


def big_transactions(report: Report, megabytes: int) -> None:
    """pg_big_transaction.py and mariadb_big_transaction.py: peak RSS of the engine's process."""
    import mariadb_big_transaction
    import pg_big_transaction

    for name, module in (("PostgreSQL", pg_big_transaction), ("MariaDB", mariadb_big_transaction)):
        f = module.measure(megabytes)
        report.add(Row(f"{name}, peak RSS while a {megabytes:,} MB transaction streams",
                       f"{f['peak_rss_mb']:,.0f} MB ({f['events'] / f['seconds']:,.0f} events/s)", "", "",
                       f"<= {module.TARGET_MB} MB", f["peak_rss_mb"] <= module.TARGET_MB,
                       f"{f['load_before']:.1f}-{f['load_after']:.1f}"))


# -- the table -------------------------------------------------------------------------------------

def table(report: Report, command: str, started: datetime.datetime, seconds: float, load: tuple[float, float]) -> str:
    """The README's table: what was run, on what, when, and every figure."""
    met = sum(1 for r in report.rows if r.met)
    judged = sum(1 for r in report.rows if r.met is not None)
    lines = [
        f"Generated by `{command}` on {started:%Y-%m-%d %H:%M} UTC in {seconds / 60:.0f} min: "
        f"{os.cpu_count()} CPU cores, 1-minute load average {load[0]:.1f} at the start and {load[1]:.1f} at the end "
        f"(the machine is shared; each figure's own is beside it). {met} of {judged} targets met.",
        "",
        "| figure | cdc | compared with | ratio | target (issue 20) | met | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        mark = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(f"| {r.figure} | {r.cdc} | {r.other} | {r.ratio} | {r.target} | {mark} | {r.load} |")
    for note in report.notes:
        lines += ["", note]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    """Replace what is between the markers (added after the section's heading the first time)."""
    readme = README.read_text()
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        readme = head + block + rest.split(END, 1)[1]
    else:
        heading = "## Benchmarks\n"
        if heading not in readme:
            raise SystemExit(f"{README}: no '## Benchmarks' section to put the table in")
        readme = readme.replace(heading, f"{heading}\n{block}\n", 1)
    README.write_text(readme)
    print(f"rewrote the table in {README}")


def main() -> None:
    """Run every figure, print the table, and write it into the README if asked."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller data: a smoke run, not issue 20's figures")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of cdc and Debezium (median kept)")
    parser.add_argument("--write-readme", action="store_true", help="rewrite the README's table")
    parser.add_argument("--no-debezium", action="store_true", help="do not run Debezium's engine")
    parser.add_argument("--threads", type=int, default=2,
                        help="also snapshot with snapshot.max.threads=N worker processes (1: only one process)")
    parser.add_argument("--stream-workers", type=int, default=2,
                        help="also drain with streaming.worker.processes=N (0: only in one process)")
    parser.add_argument("--schemas", choices=("on", "off", "both"), default="on",
                        help="JsonConverter schemas on, off, or both in turn (drains and snapshots; default on)")
    parser.add_argument("--only", default="", help="comma-separated parts: pg-drain, pg-snapshot, mariadb-drain, "
                                                   "mariadb-snapshot, latency, big-transaction (default: all)")
    args = parser.parse_args()
    why_not = "--no-debezium" if args.no_debezium else debezium_baseline.missing()
    size = {"drain": 50_000, "snapshot": 200_000, "latency_s": 5.0, "big_mb": 100} if args.quick else \
        {"drain": 200_000, "snapshot": 1_000_000, "latency_s": 10.0, "big_mb": 1024}
    parts: dict[str, Callable[[Report], None]] = {
        "pg-drain": lambda r: postgres_drain(r, size["drain"], args.rounds, why_not, args.stream_workers),
        "pg-snapshot": lambda r: postgres_snapshot(r, size["snapshot"], args.rounds, why_not, args.threads),
        "mariadb-drain": lambda r: mariadb_drain(r, size["drain"], args.rounds, why_not, args.stream_workers),
        "mariadb-snapshot": lambda r: mariadb_snapshot(r, size["snapshot"], args.rounds, why_not, args.threads),
        "latency": lambda r: latency(r, size["latency_s"]),
        "big-transaction": lambda r: big_transactions(r, size["big_mb"]),
    }
    chosen = [p for p in args.only.split(",") if p] or list(parts)
    unknown = [p for p in chosen if p not in parts]
    if unknown:
        raise SystemExit(f"--only: unknown parts {unknown}; choose from {', '.join(parts)}")
    started, clock, load = datetime.datetime.now(datetime.timezone.utc), time.perf_counter(), _load()
    report = Report()
    settings = ("on", "off") if args.schemas == "both" else (args.schemas,)
    for name in chosen:
        # Latency and the large transaction: one setting (schemas on, the default); the rates: each asked for.
        for setting in settings if name not in ("latency", "big-transaction") else ("on",):
            os.environ[debezium_baseline.SCHEMAS_VARIABLE] = setting
            print(f"{name}, schemas {setting} (load {_load():.1f}):", flush=True)
            parts[name](report)
    os.environ.pop(debezium_baseline.SCHEMAS_VARIABLE, None)
    report.notes.append(
        "cdc: the engine into the file sink (JsonConverter JSON, with schemas unless the figure says without; "
        "fsync per batch), alone in a fresh "
        "Python process (CPU and peak RSS are that process's, start-up included; with worker processes the CPU "
        "includes theirs, the peak RSS is the main process's); Debezium: its embedded engine "
        f"{debezium_baseline.RELEASE} (JVM {' '.join(debezium_baseline.JAVA_OPTIONS)}) writing the same JSON to a "
        "file fsynced per batch (CPU and RSS: the whole JVM). Rates run from engine start to the last record. "
        f"{'Median of ' + str(args.rounds) + ' interleaved rounds' if args.rounds > 1 else 'One round'}"
        f"{' with --quick (smaller data)' if args.quick else ''}. Latency: benchmarks/latency.py (writer in its "
        "own process committing single-row transactions; the commit's return to the sink's fsynced write). "
        "Peak RSS of a large transaction: benchmarks/pg_big_transaction.py and mariadb_big_transaction.py.")
    if _DISK_MB_S:
        report.notes.append(
            f"Disk: {_DISK_MB_S['rate']:,.0f} MB/s written sequentially, fsynced every 64 MB (report.disk_rate); a "
            "run's 'bytes written' row is its output's MB/s against it.")
    command = "uv run python benchmarks/report.py" + "".join(
        f" {a}" for a in sys.argv[1:] if a != "--write-readme") + " --write-readme"
    text = table(report, command, started, time.perf_counter() - clock, (load, _load()))
    print()
    print(text)
    if args.write_readme:
        write_readme(text)


if __name__ == "__main__":
    main()
