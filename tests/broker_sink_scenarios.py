"""End-to-end scenarios every message-broker sink passes: PostgreSQL -> ``cdc run`` -> broker -> a consumer.

A ``Broker`` (one per sink test module) says how to configure the sink and how to read back what
arrived; the scenarios are the same for NATS JetStream and RabbitMQ.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
import psycopg

from cdc_process import CdcProcess, server_properties, write_properties
from secrets_check import PIECES, SECRET, assert_no_secret

TOPIC = "dbserver1.public.t"


@dataclass
class Message:
    """One message as a consumer of the broker sees it."""

    topic: str
    value: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The change event's payload (schemas on)."""
        return orjson.loads(self.value)["payload"]

    def row_id(self) -> int:
        """The ``id`` of the row the event is about."""
        p = self.payload()
        return (p["after"] or p["before"])["id"]


class Broker(Protocol):
    """What a scenario needs from a broker under test."""

    #: True if the sink publishes tombstones (RabbitMQ: as ``null.value``), False if it skips them (NATS).
    publishes_tombstones: bool

    def sink_properties(self) -> dict[str, Any]:
        """``debezium.sink.*`` for this broker, ``debezium.sink.type`` included."""

    def prepare(self, topics: list[str]) -> None:
        """Create what a consumer needs before cdc publishes (a queue bound to the exchange, ...)."""

    def messages(self) -> list[Message]:
        """Every message that arrived so far, in the order the broker holds them."""

    def stop(self) -> None:
        """Stop the broker (its data kept)."""

    def start(self) -> None:
        """Start it again on the same port and data."""

    def bad_credentials(self) -> tuple[dict[str, Any], str]:
        """Sink properties with a wrong password (``SECRET``), and the property the error must name."""


def _normalized(value: dict[str, Any]) -> dict[str, Any]:
    """An event without what differs between two runs: processing times (and a snapshot's read time)."""
    payload = value["payload"]
    for k in ("ts_ms", "ts_us", "ts_ns"):
        payload.pop(k, None)
    if payload["op"] == "r":  # each run takes its own snapshot: its own time and position
        for k in ("ts_ms", "ts_us", "ts_ns", "lsn", "txId", "sequence"):
            payload["source"].pop(k, None)
    return value


def start_cdc(pg: Any, db: str, workdir: Path, sink: dict[str, Any], **source: Any) -> CdcProcess:
    """``cdc run`` from ``db`` into ``sink`` (its own slot, offsets and log under ``workdir``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    props = server_properties(pg, db, workdir, **{"slot.name": "s_" + re.sub(r"\W", "_", workdir.name), **source})
    for k in [k for k in props if k.startswith("debezium.sink.")]:
        del props[k]
    props.update(sink)
    return CdcProcess(write_properties(workdir / "app.properties", props), workdir).start()


def wait_for(condition: Any, cdc: CdcProcess | None, timeout: float, what: str) -> None:
    """Wait for ``condition()``; fail with the cdc log if it does not come (or cdc died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if cdc is not None and cdc.proc is not None and cdc.proc.poll() is not None and not condition():
            raise AssertionError(f"cdc exited ({cdc.proc.returncode}) before {what}:\n{cdc.log()[-4000:]}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}:\n{cdc.log()[-4000:] if cdc else ''}")


# ---------------------------------------------------------------------- scenario 1
def changes_once_in_order_as_file_sink(broker: Broker, pg: Any, db: str, tmp: Path) -> None:
    """Snapshot, inserts, updates, a primary-key change and deletes: each once, in order, the file sink's bytes."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=db)
    pg.execute("INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 30) g", dbname=db)
    broker.prepare([TOPIC])
    to_broker = start_cdc(pg, db, tmp / "broker", broker.sink_properties())
    to_file = start_cdc(pg, db, tmp / "file", {"debezium.sink.type": "file",
                                              "debezium.sink.file.dir": str(tmp / "file" / "events")})
    try:
        wait_for(lambda: len(broker.messages()) >= 30 and len(to_file.events(TOPIC)) >= 30, to_broker, 60,
                 "the snapshot in both sinks")
        with psycopg.connect(_conninfo(pg, db), autocommit=True) as c:
            for i in range(31, 61):
                c.execute("INSERT INTO t VALUES (%s, %s)", (i, f"new {i}"))
            c.execute("UPDATE t SET v = v || ' changed' WHERE id % 3 = 0")
            c.execute("UPDATE t SET id = 1000 WHERE id = 1")  # delete + tombstone + create, with key headers
            c.execute("DELETE FROM t WHERE id BETWEEN 50 AND 54")
        # 30 snapshot + 30 inserts + 20 updates + (d, tombstone, c) + 5 x (d, tombstone)
        expected = 30 + 30 + 20 + 3 + 10
        wait_for(lambda: len(to_file.events(TOPIC)) >= expected, to_file, 60, "every change in the file sink")
        in_broker = expected if broker.publishes_tombstones else expected - 6
        wait_for(lambda: len(broker.messages()) >= in_broker, to_broker, 60, "every change in the broker")
        time.sleep(1.0)  # nothing more comes
    finally:
        assert to_broker.terminate() == 0, to_broker.log()[-3000:]
        assert to_file.terminate() == 0, to_file.log()[-3000:]
    got = broker.messages()
    lines = to_file.events(TOPIC)
    assert len(lines) == expected
    if not broker.publishes_tombstones:
        lines = [e for e in lines if e["value"] is not None]
    assert len(got) == len(lines), f"{len(got)} messages for {len(lines)} changes"
    for i, (m, line) in enumerate(zip(got, lines)):
        assert m.topic == TOPIC
        if line["value"] is None:
            assert m.value == b"default", (i, m.value)  # Debezium Server's null.value
            continue
        assert _normalized(orjson.loads(m.value)) == _normalized(line["value"]), f"message {i} differs"
        expected_headers = {k: orjson.dumps(v).decode() for k, v in line["headers"].items()}
        assert {k: v for k, v in m.headers.items() if k in expected_headers} == expected_headers, (i, m.headers)
    got = [m for m in got if m.value != b"default"]  # the tombstones, checked above
    moved = [m for m in got if "__debezium.oldkey" in m.headers]
    assert len(moved) == 1 and orjson.loads(moved[0].headers["__debezium.oldkey"])["payload"] == {"id": 1}
    assert [m.row_id() for m in got if m.payload()["op"] in ("r", "c")][:30] == list(range(1, 31))


# ---------------------------------------------------------------------- scenario 2
class Writer(threading.Thread):
    """Inserts rows 1, 2, 3, ... then updates each, one transaction per statement, until stopped."""

    def __init__(self, conninfo: str):
        super().__init__(daemon=True)
        self.conninfo = conninfo
        self.next_id = 1
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as c:
                while not self.halt.is_set():
                    c.execute("INSERT INTO t VALUES (%s, 'x')", (self.next_id,))
                    c.execute("UPDATE t SET v = 'y' WHERE id = %s", (self.next_id,))
                    self.next_id += 1
                    time.sleep(0.004)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def finish(self) -> int:
        """Stop; return how many rows were written."""
        self.halt.set()
        self.join(30)
        assert self.error is None, self.error
        return self.next_id - 1


def check_complete(messages: list[Message], rows: int) -> int:
    """Every row's insert and update arrived, the insert first; return how many messages were duplicates."""
    seen: dict[tuple[int, str], int] = Counter()
    first: dict[int, list[str]] = {}
    for m in messages:
        p = m.payload()
        rid = (p["after"] or p["before"])["id"]
        seen[(rid, p["op"])] += 1
        ops = first.setdefault(rid, [])
        if p["op"] not in ops:
            ops.append(p["op"])
    missing = [(i, op) for i in range(1, rows + 1) for op in ("c", "u") if not seen[(i, op)]]
    assert not missing, f"{len(missing)} changes missing, first {missing[:5]}"
    wrong = [i for i, ops in first.items() if ops != ["c", "u"]]
    assert not wrong, f"rows whose update came before their insert: {wrong[:5]}"
    return sum(n - 1 for n in seen.values())


def _conninfo(pg: Any, db: str) -> str:
    return f"host={pg.host} port={pg.port} user={pg.user} dbname={db}"


def kill_9_under_writes(broker: Broker, pg: Any, db: str, tmp: Path) -> int:
    """``kill -9`` of ``cdc run`` while rows are written; the restart delivers the rest. Returns the duplicates."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=db)
    broker.prepare([TOPIC])
    writer = Writer(_conninfo(pg, db))
    cdc = start_cdc(pg, db, tmp / "run", broker.sink_properties())
    try:
        wait_for(lambda: (tmp / "run" / "offsets.json").exists(), cdc, 60, "the first offsets")
        writer.start()
        wait_for(lambda: len(broker.messages()) >= 300, cdc, 60, "300 messages")
        cdc.kill()
        time.sleep(0.5)
        before = len(broker.messages())
        cdc = start_cdc(pg, db, tmp / "run", broker.sink_properties())
        wait_for(lambda: len(broker.messages()) >= before + 300, cdc, 60, "300 more messages after the restart")
        rows = writer.finish()
        wait_for(lambda: _has_all(broker, rows), cdc, 60, f"all {rows} rows")
    finally:
        writer.halt.set()
        if cdc.proc is not None and cdc.proc.poll() is None:
            assert cdc.terminate() == 0, cdc.log()[-3000:]
    return check_complete(broker.messages(), rows)


def _has_all(broker: Broker, rows: int) -> bool:
    ids = {(m.row_id(), m.payload()["op"]) for m in broker.messages()}
    return all((i, op) in ids for i in range(1, rows + 1) for op in ("c", "u"))


# ---------------------------------------------------------------------- scenario 3
def broker_restart_mid_stream(broker: Broker, pg: Any, db: str, tmp: Path, down_s: float = 3.0) -> int:
    """The broker stops for ``down_s`` seconds under writes and comes back: cdc waits, retries, loses nothing."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=db)
    broker.prepare([TOPIC])
    writer = Writer(_conninfo(pg, db))
    cdc = start_cdc(pg, db, tmp / "run", broker.sink_properties())
    try:
        wait_for(lambda: (tmp / "run" / "offsets.json").exists(), cdc, 60, "the first offsets")
        writer.start()
        wait_for(lambda: len(broker.messages()) >= 200, cdc, 60, "200 messages")
        broker.stop()
        time.sleep(down_s)
        assert cdc.proc.poll() is None, f"cdc gave up while the broker was down:\n{cdc.log()[-3000:]}"
        broker.start()
        rows_before = writer.next_id
        wait_for(lambda: _has_all(broker, rows_before - 1), cdc, 90, "the rows written while the broker was down")
        rows = writer.finish()
        wait_for(lambda: _has_all(broker, rows), cdc, 60, f"all {rows} rows")
        log = cdc.log()
        assert "retrying" in log, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
    finally:
        writer.halt.set()
        if cdc.proc is not None and cdc.proc.poll() is None:
            assert cdc.terminate() == 0, cdc.log()[-3000:]
    return check_complete(broker.messages(), rows)


def stop_while_broker_down(broker: Broker, pg: Any, db: str, tmp: Path) -> int:
    """SIGTERM while the broker is down and the sink retries: ``cdc run`` stops at once, exit 0; after the broker
    and cdc come back, every row arrives (the batch in retry is delivered again). Returns the duplicates."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=db)
    broker.prepare([TOPIC])
    writer = Writer(_conninfo(pg, db))
    cdc = start_cdc(pg, db, tmp / "run", broker.sink_properties())
    try:
        wait_for(lambda: (tmp / "run" / "offsets.json").exists(), cdc, 60, "the first offsets")
        writer.start()
        wait_for(lambda: len(broker.messages()) >= 100, cdc, 60, "100 messages")
        broker.stop()
        try:
            wait_for(lambda: "retrying" in cdc.log(), cdc, 30, "the sink to retry")
            started = time.monotonic()
            assert cdc.terminate(timeout=20) == 0, cdc.log()[-3000:]
            assert time.monotonic() - started < 15, "SIGTERM waited for the broker"
            assert "Traceback" not in cdc.log(), cdc.log()[-3000:]
            rows = writer.finish()
        finally:
            broker.start()  # the module's next tests need it, whatever happened here
        cdc = start_cdc(pg, db, tmp / "run", broker.sink_properties())
        wait_for(lambda: _has_all(broker, rows), cdc, 90, f"all {rows} rows after the restart")
    finally:
        writer.halt.set()
        if cdc.proc is not None and cdc.proc.poll() is None:
            assert cdc.terminate() == 0, cdc.log()[-3000:]
    return check_complete(broker.messages(), rows)


# ---------------------------------------------------------------------- scenario 4
def refused_at_start(pg: Any, db: str, tmp: Path, cases: dict[str, tuple[dict[str, Any], str]]) -> dict[str, str]:
    """Each case (name: sink properties, the property its error must name) makes ``cdc run`` stop with one
    clear line naming that property: non-zero exit, no traceback, no password anywhere. All run at once;
    returns each case's error line."""
    pg.execute("CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, v text)", dbname=db)
    pg.execute("INSERT INTO t VALUES (1, 'a') ON CONFLICT DO NOTHING", dbname=db)
    runs = {name: start_cdc(pg, db, tmp / name, sink) for name, (sink, _) in cases.items()}
    out: dict[str, str] = {}
    for name, cdc in runs.items():
        property_name = cases[name][1]
        code = cdc.wait_exit(90)
        log = cdc.log()
        assert code != 0, log
        assert "Traceback" not in log, log
        errors = [line for line in log.splitlines() if " ERROR " in line or line.startswith("ERROR")]
        assert errors, log
        assert any(property_name in line for line in errors), f"{name}: no error names {property_name}:\n{log}"
        assert_no_secret(f"the output of cdc run ({name})", log)
        for path in (tmp / name).rglob("*"):
            if path.is_file() and path.name != "app.properties":
                assert_no_secret(str(path), path.read_bytes())
        out[name] = errors[-1]
    return out


__all__ = ["Broker", "Message", "PIECES", "SECRET", "TOPIC", "broker_restart_mid_stream",
           "changes_once_in_order_as_file_sink", "kill_9_under_writes", "refused_at_start"]
