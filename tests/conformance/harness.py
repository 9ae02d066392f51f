"""One workload through the real Debezium and through cdc, on the same throwaway server, side by side.

Both read the same database, each with its own replication slot (PostgreSQL) or server id
(MariaDB), and the same ``topic.prefix``. Debezium runs its embedded engine with Kafka's
JsonConverter (``debezium.DebeziumProcess``); cdc runs as a Debezium Server user runs it
(``cdc_core.app.Application`` with the file sink), so both sides are what a consumer reads. The
sequence: ``setup`` SQL (the snapshot's data), both engines started, a ping row inserted until
both have streamed one (both are past their snapshots and streaming), the ``stream`` steps, an end
row, then both stop and their records are compared per topic (``compare``).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from conformance.debezium import DebeziumProcess, wait_for

PING_TABLE = "conformance_ping"
END_TABLE = "conformance_end"


@dataclass
class Side:
    """How the harness reaches one connector's server: properties for both engines, SQL, table names."""

    #: Debezium's connector class (both engines are given it).
    connector_class: str
    #: Connection and identity properties common to both engines.
    common: dict[str, Any]
    #: Properties only Debezium's engine gets (its slot, its server id, in-memory history).
    debezium_only: dict[str, Any]
    #: Properties only cdc gets (its slot, its server id).
    cdc_only: dict[str, Any]
    #: Run SQL (several statements allowed) on the workload's database.
    execute: Callable[[str], None]
    #: A table's fully qualified name as topics carry it (``public.t`` or ``db.t``).
    qualified: Callable[[str], str]
    #: DDL for the ping and end tables.
    control_ddl: str


@dataclass
class Capture:
    """The records of both engines, each a mapping of topic to records in order."""

    debezium: dict[str, list[dict[str, Any]]]
    cdc: dict[str, list[dict[str, Any]]]


def _by_topic(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault(r["topic"], []).append(r)
    return out


def _cdc_records(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return out


def _streamed(records: list[dict[str, Any]], topic: str) -> int:
    """How many rows of ``topic`` were streamed (``op: c``), not snapshotted."""
    n = 0
    for r in records:
        if r["topic"] == topic and r.get("value"):
            payload = r["value"].get("payload", r["value"]) if "schema" in r["value"] else r["value"]
            # A change event, or a CloudEvent of one (the op is its iodebeziumop attribute).
            n += isinstance(payload, dict) and (payload.get("op") or payload.get("iodebeziumop")) == "c"
    return n


def capture(side: Side, setup: str, steps: list[str | Callable[[], None] | dict[str, Any]], properties: dict[str, Any],
            workdir: Path, prefix: str = "conformance", timeout: float = 120.0) -> Capture:
    """Run ``setup``, both engines, ``steps``; return both captures (the ping topic left out).

    A step is SQL, a callable, or ``{"wait": {"table": <name>, "records": <n>}}``: wait until both engines have
    written ``n`` records on that table's topic (an ad hoc snapshot's READs, before the next step's changes).
    """
    from cdc_core.app import Application
    from cdc_core.config.server import server_config
    from cdc_core.plugins import registry

    side.execute(side.control_ddl)
    # One ping before either engine starts: the ping table is never empty in a snapshot, so a ping that only one
    # engine's snapshot reads cannot turn that side's last workload row into last_in_data_collection.
    side.execute(f"INSERT INTO {PING_TABLE} VALUES (DEFAULT)")
    if setup.strip():
        side.execute(setup)
    connector = {"connector.class": side.connector_class, "topic.prefix": prefix, **side.common, **properties}
    if "table.include.list" in connector:  # the control tables are captured whatever the group lists
        connector["table.include.list"] = ",".join(
            [connector["table.include.list"], side.qualified(PING_TABLE), side.qualified(END_TABLE)])
    engine_props = {
        "name": "conformance",
        "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
        "offset.flush.interval.ms": "0",
        **connector, **side.debezium_only,
    }
    for key, value in properties.items():  # converter options: Kafka's names on the engine side
        if key.startswith("converter."):
            engine_props.pop(key)
            engine_props[f"key.{key}"] = engine_props[f"value.{key}"] = value
    # A value converter other than JsonConverter (value.converter=<class>, value.converter.<option>): the runner's
    # runner.value.converter on Debezium's side, debezium.format.value(.<option>) on cdc's.
    formats: dict[str, Any] = {}
    for key, value in properties.items():
        if key == "value.converter" or key.startswith("value.converter."):
            engine_props.pop(key)
            engine_props["runner.value.converter" if key == "value.converter" else key] = value
            formats["debezium.format.value" + key[len("value.converter"):]] = (
                _format_name(value) if key == "value.converter" else value)
    cdc_dir = workdir / "cdc"
    server = {f"debezium.source.{k}": v for k, v in {**connector, **side.cdc_only}.items()
              if not k.startswith(("converter.", "value.converter"))}
    server.update(formats)
    server.update({"debezium.sink.type": "file", "debezium.sink.file.dir": str(cdc_dir), "debezium.sink.file.fsync": "false",
                   "debezium.source.offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore"})
    for key, value in properties.items():
        if key.startswith("converter."):
            server[f"debezium.format.key.{key[len('converter.'):]}"] = value
            server[f"debezium.format.value.{key[len('converter.'):]}"] = value
    engine = Application(server_config(server), registry()).engine()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            engine.run()
        except BaseException as e:  # reported by the waits below
            failure.append(e)

    debezium = DebeziumProcess(engine_props, workdir / "debezium")
    thread = threading.Thread(target=run, name="cdc-conformance", daemon=True)
    thread.start()
    ping, end = f"{prefix}.{side.qualified(PING_TABLE)}", f"{prefix}.{side.qualified(END_TABLE)}"
    try:
        def streaming() -> bool:
            if failure:
                raise AssertionError(f"cdc stopped: {failure[0]!r}")
            if _streamed(debezium.records(), ping) and _streamed(_cdc_records(cdc_dir), ping):
                return True
            side.execute(f"INSERT INTO {PING_TABLE} VALUES (DEFAULT)")
            time.sleep(0.3)
            return False

        wait_for(streaming, timeout, "both engines to stream", debezium)
        for step in steps:
            if isinstance(step, dict):
                _wait_records(step["wait"], f"{prefix}.{side.qualified(step['wait']['table'])}", debezium, cdc_dir,
                              failure, timeout)
            elif callable(step):
                step()
            else:
                side.execute(step)
        side.execute(f"INSERT INTO {END_TABLE} VALUES (1)")

        def ended() -> bool:
            if failure:
                raise AssertionError(f"cdc stopped: {failure[0]!r}")
            return bool(_streamed(debezium.records(), end) and _streamed(_cdc_records(cdc_dir), end))

        wait_for(ended, timeout, "both engines to stream the end row", debezium)
    finally:
        engine.stop()
        thread.join(60)
        debezium.stop()
    if failure:
        raise AssertionError(f"cdc stopped: {failure[0]!r}") from failure[0]
    control = {side.qualified(PING_TABLE)}
    return Capture(debezium=_without_pings(debezium.records(), control, ping),
                   cdc=_without_pings(_cdc_records(cdc_dir), control, ping))


def _wait_records(wait: dict[str, Any], topic: str, debezium: DebeziumProcess, cdc_dir: Path,
                  failure: list[BaseException], timeout: float) -> None:
    """Wait until both engines wrote ``wait["records"]`` records on ``topic``."""
    def count(records: list[dict[str, Any]]) -> int:
        return sum(r["topic"] == topic for r in records)

    def done() -> bool:
        if failure:
            raise AssertionError(f"cdc stopped: {failure[0]!r}")
        return count(debezium.records()) >= wait["records"] and count(_cdc_records(cdc_dir)) >= wait["records"]

    wait_for(done, timeout, f"both engines to write {wait['records']} records on {topic}", debezium)


def _format_name(converter_class: str) -> str:
    """cdc's format name for a Kafka Connect converter class."""
    from cdc_core.serializers.formats import CONVERTER_CLASSES

    return CONVERTER_CLASSES.get(converter_class, converter_class)


def _payload(record: dict[str, Any]) -> Any:
    value = record.get("value")
    return value.get("payload") if isinstance(value, dict) and "schema" in value else value


def _without_pings(records: list[dict[str, Any]], control: set[str], ping_topic: str) -> dict[str, list[dict[str, Any]]]:
    """The records by topic without the ping rows and their transactions' BEGIN/END events.

    How many pings each engine sees depends on when it began to stream, so neither the ping topic
    nor the pings' transaction events can be compared (the end row's are: both see it).
    """
    # A BEGIN goes with the next END (PostgreSQL writes different ids on them: <txId>:<LSN> of each).
    dropped: set[int] = set()
    begin: int | None = None
    for i, r in enumerate(records):
        payload = _payload(r)
        status = payload.get("status") if isinstance(payload, dict) else None
        if status == "BEGIN":
            begin = i
        elif status == "END":
            tables = {c.get("data_collection") for c in payload.get("data_collections") or []}
            if tables and tables <= control:
                dropped.add(i)
                if begin is not None:
                    dropped.add(begin)
            begin = None
    return _by_topic(r for i, r in enumerate(records) if r["topic"] != ping_topic and i not in dropped)
