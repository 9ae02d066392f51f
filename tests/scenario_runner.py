"""Acceptance scenarios as data: setup SQL, configuration, and steps of SQL, restarts and expected records."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import yaml

from cdc_core.engine import Engine
from cdc_core.stores.file_offsets import FileOffsetStore
from cdc_core.config import Config


def load(path: Path) -> list[dict[str, Any]]:
    """The scenarios of one fixture file."""
    return yaml.safe_load(path.read_text())


class Run:
    """One connector, run in-process into a list, restartable with the same offsets file."""

    def __init__(self, config: dict[str, Any], offsets: Path):
        self.config = {**config, "offset.storage.file.filename": str(offsets), "poll.interval.ms": 50}
        self.records: list = []
        self.seen = 0
        self.engine: Engine | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self.error = None
        self.engine = Engine(self.config, offset_store=FileOffsetStore(Config(self.config)))

        def run() -> None:
            try:
                self.engine.run(self.records.extend)
            except BaseException as e:  # reported by the step that waits
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.thread.is_alive() and not self.engine.metrics.streaming.connected:
            time.sleep(0.02)

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()
            self.thread.join(30)
            self.engine = None

    def wait_exit(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the connector did not stop by itself"

    def take(self, n: int, timeout: float = 30.0) -> list:
        deadline = time.monotonic() + timeout
        while len(self.records) - self.seen < n and time.monotonic() < deadline:
            if self.error is not None:
                raise AssertionError(f"the connector failed: {self.error}")
            time.sleep(0.02)
        got = self.records[self.seen:self.seen + n]
        self.seen += len(got)
        assert len(got) == n, f"expected {n} records, got {len(got)}: {[_brief(r) for r in got]}"
        return got

    def nothing_more(self, seconds: float) -> None:
        time.sleep(seconds)
        extra = self.records[self.seen:]
        assert not extra, f"unexpected records: {[_brief(r) for r in extra]}"


def _brief(r) -> str:
    op = None if r.value is None else r.value.get("op", r.value.get("status"))
    return f"{r.topic} {op} key={r.key}"


def check(expected: dict[str, Any], record, prefix: str) -> None:
    """Compare one record with its expectation (topic, key, op, before, after, headers, source subset, tombstone)."""
    where = _brief(record)
    topic = expected.get("topic")
    if topic is not None:
        assert record.topic == topic.replace("P.", f"{prefix}.", 1), where
    if "key" in expected:
        assert record.key == expected["key"], f"{where}: key {record.key} != {expected['key']}"
    if expected.get("tombstone"):
        assert record.value is None, f"{where}: expected a tombstone"
        return
    value = record.value
    assert value is not None, f"{where}: unexpected tombstone"
    for field in ("op", "before", "after", "status", "event_count", "data_collections"):
        if field in expected:
            assert value.get(field) == expected[field], f"{where}: {field} {value.get(field)} != {expected[field]}"
    for field, want in (expected.get("source") or {}).items():
        got = value["source"].get(field)
        if want == "<not null>":
            assert got is not None, f"{where}: source.{field} is null"
        elif isinstance(want, str) and want.startswith("<starts ") and want.endswith(">"):
            assert isinstance(got, str) and got.startswith(want[8:-1]), f"{where}: source.{field} {got!r}"
        else:
            assert got == want, f"{where}: source.{field} {got!r} != {want!r}"
    if "headers" in expected:
        assert record.headers == expected["headers"], f"{where}: headers {record.headers}"
    if "transaction" in expected:
        block = value.get("transaction")
        want = expected["transaction"]
        if want is None:
            assert block is None, where
        else:
            for k, v in want.items():
                assert block[k] == v, f"{where}: transaction.{k} {block[k]} != {v}"
    for which in ("key_schema", "value_schema"):
        for k, v in (expected.get(which) or {}).items():
            got = getattr(getattr(record, which), k)
            assert got == v, f"{where}: {which}.{k} {got!r} != {v!r}"
    for name, want in (expected.get("key_fields") or {}).items():
        field = record.key_schema.field(name).schema
        for k, v in want.items():
            assert getattr(field, k) == v, f"{where}: key schema of {name}.{k} {getattr(field, k)!r} != {v!r}"
    for name, want in (expected.get("after_schema") or {}).items():
        field = record.value_schema.field("after").schema.field(name).schema
        for k, v in want.items():
            assert getattr(field, k) == v, f"{where}: schema of {name}.{k} {getattr(field, k)!r} != {v!r}"


def run_scenario(scenario: dict[str, Any], pg, db: str, tmp_path: Path) -> None:
    """Play one scenario against a real PostgreSQL database."""
    for statement in scenario.get("setup", []):
        pg.execute(statement, dbname=db)
    prefix = scenario.get("prefix", "P")
    config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
              "database.user": pg.user, "database.dbname": db, "topic.prefix": prefix,
              **{k: str(v) for k, v in (scenario.get("config") or {}).items()}}
    run = Run(config, tmp_path / "offsets.json")
    cleanups: list = []
    try:
        for step in scenario["steps"]:
            (kind, arg), = step.items() if isinstance(step, dict) else ((step, None),)
            if kind == "start":
                run.start()
            elif kind == "stop":
                run.stop()
            elif kind == "restart":
                run.stop()
                if arg:
                    run.config.update({k: str(v) for k, v in arg.items()})
                run.start()
            elif kind == "exits":
                run.wait_exit()
            elif kind == "sql":
                for statement in arg if isinstance(arg, list) else [arg]:
                    pg.execute(statement, dbname=db)
            elif kind == "expect":
                records = run.take(len(arg))
                for want, got in zip(arg, records):
                    check(want, got, prefix)
            elif kind == "expect_count":
                records = run.take(arg["count"], timeout=60)
                ops = [r.value.get("op") if r.value else None for r in records]
                if "op" in arg:
                    assert set(ops) == {arg["op"]}, ops
            elif kind == "hold_slot":
                holder = _hold_slot(pg, db, arg)
                cleanups.append(holder.close)
            elif kind == "start_fails":
                run.start()
                run.thread.join(60)
                assert run.error is not None and arg in str(run.error), f"expected a failure with {arg!r}, got {run.error!r}"
            elif kind == "nothing_more":
                run.nothing_more(float(arg or 0.5))
            else:
                raise ValueError(f"unknown step {kind!r} in scenario {scenario['id']}")
    finally:
        run.stop()
        for cleanup in cleanups:
            cleanup()


def _hold_slot(pg, db: str, slot: str, timeout: float = 30.0):
    """A replication client that keeps ``slot`` active, as another connector would.

    The server lets a slot go a moment after its client disconnects (its walsender ends on its own
    time): a just-stopped connector's slot is waited for until it is free, then taken.
    """
    from cdc_postgres.replication import ReplicationConnection, ReplicationError

    deadline = time.monotonic() + timeout
    while True:
        holder = ReplicationConnection(pg.conninfo(db))
        try:
            holder.start(slot, 0, {"proto_version": "1", "publication_names": '"dbz_publication"'})
        except ReplicationError as e:
            holder.close()
            if "is active for PID" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        active = pg.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", dbname=db,
                            params=(slot,))
        assert active and active[0][0] is not None, f"slot {slot} is not active while held: {active}"
        return holder
