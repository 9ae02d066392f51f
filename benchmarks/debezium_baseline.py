"""Debezium's embedded engine as the benchmarks' baseline: its properties, one run, its figures, the comparison table.

The engine is the conformance suite's instrument (``tests/conformance/debezium.py`` and
``DebeziumRunner.java``: Debezium 3.0.7, Kafka's JsonConverter with schemas, one JSON line per
record, fsync after every batch), run in its own JVM with the options a user would give it
(``JAVA_OPTIONS``). Its CPU time and peak RSS are the whole JVM's (``wait4``); its rate counts
from the engine's start to the last record of the measured topic, as cdc's does.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from conformance import debezium  # noqa: E402
from conformance.debezium import DebeziumProcess  # noqa: E402

#: What a user would start the engine with: a 2 GB heap cap, the JVM's default collector (G1).
JAVA_OPTIONS = ("-Xmx2g",)
#: ``BENCH_SCHEMAS=off``: JsonConverter without schemas on both engines (``schemas.enable=false``; issue 20
#: asks for both). An environment variable, so that the benchmarks' spawned processes see it too.
SCHEMAS_VARIABLE = "BENCH_SCHEMAS"


def schemas_enabled() -> bool:
    """Whether the JSON carries schemas in this run (``BENCH_SCHEMAS``: on, the default, or off)."""
    value = os.environ.get(SCHEMAS_VARIABLE, "on").lower()
    if value not in ("on", "off"):
        raise SystemExit(f"{SCHEMAS_VARIABLE}={value!r}: say on or off")
    return value == "on"


def converter_properties() -> dict[str, str]:
    """``key/value.converter.schemas.enable`` of this run, for either engine's properties."""
    flag = "true" if schemas_enabled() else "false"
    return {"key.converter.schemas.enable": flag, "value.converter.schemas.enable": flag}


def json_kind() -> str:
    """How this run's JSON is described in tables."""
    return "JsonConverter JSON with schemas" if schemas_enabled() else "JsonConverter JSON without schemas"
RELEASE = debezium.DEBEZIUM_RELEASE


@dataclass
class Figures:
    """One engine's run: records of the measured topic, their rate, CPU per record, peak memory."""

    records: int
    #: Seconds from the engine's start to its last record of the measured topic.
    seconds: float
    #: Seconds from launching the process (JVM or Python) to its end, when known.
    wall: float | None
    #: CPU time (user + system) of the whole process.
    cpu_s: float
    max_rss_mb: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / self.records * 1e6


def missing() -> str | None:
    """Why Debezium cannot run here (no JDK, no jars), or None."""
    return debezium.missing()


def engine_properties(connector: dict[str, Any], offsets: Path | None = None) -> dict[str, Any]:
    """The engine's properties around a connector's: JsonConverter (schemas as ``converter_properties``), offsets
    in memory or in a file."""
    store = ({"offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
              "offset.storage.file.filename": str(offsets)} if offsets is not None else
             {"offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore"})
    return {
        "name": "bench", **store, "offset.flush.interval.ms": "0",
        **converter_properties(),
        **connector,
    }


def postgres(server: Any, dbname: str, slot: str, snapshot_mode: str, **extra: Any) -> dict[str, Any]:
    """PostgresConnector (pgoutput) properties for a throwaway server."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": server.host, "database.port": server.port, "database.user": server.user,
        "database.password": "unused", "database.dbname": dbname, "topic.prefix": "bench",
        "plugin.name": "pgoutput", "slot.name": slot, "snapshot.mode": snapshot_mode, **extra,
    }


def mysql(server: Any, server_id: int, prefix: str, snapshot_mode: str, history: Path | None = None,
          **extra: Any) -> dict[str, Any]:
    """MySqlConnector properties for the MariaDB server (history in memory, or in ``history``)."""
    store = ({"schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
              "schema.history.internal.file.filename": str(history)} if history is not None else
             {"schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory"})
    return {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": server.host, "database.port": server.port, "database.user": server.user,
        "database.password": server.password, "database.server.id": server_id, "topic.prefix": prefix,
        "snapshot.mode": snapshot_mode, "tombstones.on.delete": "false", **store, **extra,
    }


def start(properties: dict[str, Any], workdir: Path) -> DebeziumProcess:
    """Start an engine that runs until ``stop()`` (no fsync, no stop condition)."""
    return DebeziumProcess(properties, workdir, java_options=JAVA_OPTIONS)


def run(properties: dict[str, Any], workdir: Path, topic: str, records: int, timeout: float = 900.0) -> Figures:
    """Run an engine until ``records`` records of ``topic`` are written (fsync per batch); its figures."""
    launched = time.perf_counter()
    process = DebeziumProcess({**properties, "runner.fsync": "true", "runner.stop.topic": topic,
                               "runner.stop.after": records}, workdir, java_options=JAVA_OPTIONS)
    got = process.wait_exit(timeout)
    wall = time.perf_counter() - launched
    if got["records"] < records:
        raise SystemExit(f"Debezium wrote {got['records']} records of {topic}, expected {records}:\n{process.failure()}")
    return Figures(got["records"], got["start_to_last_ms"] / 1000, wall, got["cpu_s"], got["max_rss_mb"])


def best(runs: list[Figures]) -> Figures:
    """The fastest run (its own CPU and memory figures with it)."""
    return max(runs, key=lambda f: f.rate)


def table(title: str, rows: list[tuple[str, Figures | None, Figures | None]], why_not: str | None = None) -> str:
    """The comparison: rate, CPU µs/record, peak RSS of each engine, and cdc's ratios to Debezium."""
    head = (f"{title} -- Debezium {RELEASE} embedded engine (JVM {' '.join(JAVA_OPTIONS)}, default GC) vs cdc; "
            f"both {json_kind()} into a file, fsync per batch")
    lines = [head,
             f"  {'':<26}{'engine':<10}{'records/s':>11}{'CPU us/rec':>12}{'peak RSS MB':>13}{'wall s':>9}"]
    for label, cdc, dbz in rows:
        for name, f in (("Debezium", dbz), ("cdc", cdc)):
            if f is not None:
                wall = f"{f.wall:9.1f}" if f.wall is not None else f"{'':>9}"
                lines.append(f"  {label:<26}{name:<10}{f.rate:>11,.0f}{f.cpu_us:>12.1f}{f.max_rss_mb:>13,.0f}{wall}")
                label = ""
        if cdc is not None and dbz is not None:
            lines.append(f"  {'':<26}{'cdc/Dbz':<10}{cdc.rate / dbz.rate:>10.2f}x{cdc.cpu_us / dbz.cpu_us:>11.2f}x"
                         f"{cdc.max_rss_mb / dbz.max_rss_mb:>12.2f}x")
    if why_not:
        lines.append(f"  Debezium not run: {why_not}")
    lines.append("  rate: records from engine start to the last one; CPU and peak RSS: the whole process "
                 "(JVM, or the Python process that ran only cdc); wall: process launch to exit")
    lines.append(f"  machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    return "\n".join(lines)
