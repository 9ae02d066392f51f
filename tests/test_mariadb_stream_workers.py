"""``streaming.worker.processes`` on MariaDB: the rows events of large transactions decoded and serialized in workers.

Two engines stream the same binlog, one decoding every rows event in its own process, one with worker
processes: the file sink must hold the same lines (apart from the processing times), the metrics the
same counts; a stop in the middle of a large transaction resumes after exactly the last record
written; a worker that dies stops the engine with an error naming it.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import orjson
import pytest

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.errors import ConnectorError
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from kit.worker_processes import FailingSink, SlowSink, StoppingSink, forked_children, kill_a_worker
from cdc_mysql import stream_workers
from mariadb_cdc import connector_config

#: What differs between two runs over the same binlog: the envelope's processing time.
_PROCESSING_TIME = re.compile(rb'"op":"(.)","ts_ms":\d+(,"ts_us":\d+,"ts_ns":\d+)?')
_END = b'"id":99999'


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    """Chunks of one or two rows events (8 KB each at most), so a transaction of thousands of rows makes many."""
    monkeypatch.setattr(stream_workers, "MIN_BYTES", 512)
    monkeypatch.setattr(stream_workers, "CHUNK_BYTES", 8192)


def _lines(directory: Path) -> list[bytes]:
    """The change events of the captured tables (the schema changes of the start differ by when each side started)."""
    return [_PROCESSING_TIME.sub(rb'"op":"\1"', line) for f in sorted(directory.glob("dbserver1.*.jsonl"))
            for line in f.read_bytes().split(b"\n") if line]


class _Side:
    """One engine streaming into its own directory, with its own stores (kept for a restart)."""

    def __init__(self, server, db, directory: Path, server_id: int, sink_class=FileSink, **more):
        self.offsets, self.history = MemoryOffsetStore(), MemorySchemaHistoryStore()
        self.config = connector_config(server, db, **{"database.server.id": server_id, "snapshot.mode": "no_data",
                                                      "table.include.list": f"{db}.t,{db}.u", **more})
        self.directory, self.sink_class = directory, sink_class
        self.errors: list = []
        self.engine: Engine | None = None
        self.thread: threading.Thread | None = None

    def start(self, **more) -> _Side:
        self.engine = Engine({**self.config, **more}, sink=self.sink_class(Config({"dir": str(self.directory)})),
                             offset_store=self.offsets, history_store=self.history)
        self.thread = threading.Thread(target=self._run, args=(self.engine,))
        self.thread.start()
        return self

    def _run(self, engine: Engine) -> None:
        try:
            engine.run()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def wait_for(self, marker: bytes, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(marker in line for line in _lines(self.directory)):
            assert not self.errors, self.errors
            assert self.thread.is_alive() and time.monotonic() < deadline, f"{marker!r} never written"
            time.sleep(0.05)

    def stop(self) -> None:
        self.engine.stop()
        self.thread.join(60)
        assert not self.errors, self.errors


def _streaming(sides: list[_Side], server, db) -> None:
    """Start every side and wait until each streams (a first row of u written)."""
    for side in sides:
        side.start()
    server.execute("INSERT INTO u VALUES (0, 'start')", database=db)
    for side in sides:
        side.wait_for(b'"note":"start"')


def _tables(server, db) -> None:
    server.execute(["CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), at DATETIME(6))",
                    "CREATE TABLE u (id INT PRIMARY KEY, note VARCHAR(40))", "CREATE TABLE skipped (id INT PRIMARY KEY)"],
                   database=db)


def _backlog(server, db) -> None:
    server.execute(["INSERT INTO t SELECT seq, IF(seq % 5 = 0, NULL, CONCAT('n-', seq)), seq * 1.25, "
                    "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_3000"], database=db)
    # One transaction alternating captured tables with one outside table.include.list.
    server.execute(["START TRANSACTION",
                    "BEGIN NOT ATOMIC FOR i IN 1..1500 DO INSERT INTO u VALUES (i, CONCAT('u', i)); "
                    "INSERT INTO skipped VALUES (i); IF i % 3 = 0 THEN INSERT INTO t VALUES (10000 + i, 'mixed', i, "
                    "NULL); END IF; END FOR; END", "COMMIT"], database=db)
    server.execute(["UPDATE t SET name = CONCAT('renamed-', id) WHERE id <= 2000",
                    "DELETE FROM u WHERE id BETWEEN 1 AND 1000",  # deletes and their tombstones
                    # A small transaction (decoded in the main process) between a worker's and a DDL: the DDL
                    # event's source.row is this one's last row, not the worker's.
                    "INSERT INTO u VALUES (5000, 'small')",
                    # A new column: the workers are forked again with the new table's decoder.
                    "ALTER TABLE t ADD COLUMN extra INT DEFAULT 7",
                    "INSERT INTO t (id, name) SELECT 20000 + seq, 'after-alter' FROM seq_1_to_1000",
                    "UPDATE t SET id = id + 100000 WHERE id > 20500",  # key changes: delete, tombstone, create
                    "INSERT INTO u VALUES (99999, 'end')"], database=db)


def _both_drain_the_backlog(server, db, tmp_path: Path, processes: int, **more) -> tuple[_Side, _Side]:
    """One process and ``processes`` workers stream the backlog; both wrote the same lines. Returns both sides."""
    _tables(server, db)
    one = _Side(server, db, tmp_path / "one", 5601, **more)
    workers = _Side(server, db, tmp_path / "workers", 5602, **{"streaming.worker.processes": processes, **more})
    _streaming([one, workers], server, db)
    _backlog(server, db)
    for side in (one, workers):
        side.wait_for(_END)
        side.stop()
    assert _lines(workers.directory) == _lines(one.directory)
    return one, workers


def test_same_lines_and_metrics_as_one_process(mariadb_server, mariadb_db, tmp_path):
    one, workers = _both_drain_the_backlog(mariadb_server, mariadb_db, tmp_path, 1)
    assert len(_lines(one.directory)) == 1 + 3000 + 2000 + 2000 + 2000 + 1 + 1000 + 500 * 3 + 1
    metrics = [(s.engine.metrics.streaming.total_events, dict(s.engine.metrics.streaming.by_op)) for s in (one, workers)]
    assert metrics[1] == metrics[0]
    assert metrics[0][1] == {"c": 1 + 3000 + 2000 + 1 + 1000 + 500 + 1, "u": 2000, "d": 1000 + 500}
    alters = [_alter_source(side.directory) for side in (one, workers)]
    assert alters[1] == alters[0] and alters[0]["row"] == 0


def _alter_source(directory: Path) -> dict:
    """The source block of the ALTER TABLE's schema change event."""
    for line in (directory / "dbserver1.jsonl").read_bytes().split(b"\n"):
        if b"ADD COLUMN extra" in line:
            return orjson.loads(line)["value"]["payload"]["source"]
    raise AssertionError("no schema change event for the ALTER TABLE")


def test_metrics_name_the_last_event_a_worker_made(mariadb_server, mariadb_db, tmp_path):
    """A large transaction ends the stream: its events were all made by a worker, and the streaming metrics name
    its last one (table, op, position), as one process would."""
    _tables(mariadb_server, mariadb_db)
    side = _Side(mariadb_server, mariadb_db, tmp_path, 5605, **{"streaming.worker.processes": 1})
    _streaming([side], mariadb_server, mariadb_db)
    mariadb_server.execute(["INSERT INTO t SELECT seq, 'x', seq, NULL FROM seq_1_to_3000"], database=mariadb_db)
    side.wait_for(b'"id":3000}')
    streaming = side.engine.metrics.values()["streaming"]
    side.stop()
    assert streaming["LastEvent"] == f"dbserver1.{mariadb_db}.t:c"
    assert streaming["TotalNumberOfCreateEventsSeen"] == 3001
    assert streaming["SourceEventPosition"]["file"].startswith("mariadb-bin.")
    assert streaming["MilliSecondsBehindSource"] >= 0


def test_two_workers_and_transforms_same_lines(mariadb_server, mariadb_db, tmp_path):
    """A transform chain runs in the workers as in the main process: HeaderFrom gives every record a header (such
    records cross as pickled records, not blocks), RegexRouter renames the topics."""
    chain = {"transforms": "hdr,route",
             "transforms.hdr.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
             "transforms.hdr.fields": "op", "transforms.hdr.headers": "operation", "transforms.hdr.operation": "copy",
             "transforms.hdr.predicate": "tables",  # not the schema changes' records, which have no op
             "predicates": "tables",
             "predicates.tables.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
             "predicates.tables.pattern": r"dbserver1\..+",
             "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
             "transforms.route.regex": r"dbserver1\.[^.]+\.(.*)", "transforms.route.replacement": "dbserver1.routed.$1"}
    _, workers = _both_drain_the_backlog(mariadb_server, mariadb_db, tmp_path, 2, **chain)
    assert (tmp_path / "workers" / "dbserver1.routed.t.jsonl").exists()
    assert sum(b'"headers":{"operation":"u"}' in line for line in _lines(workers.directory)) == 2000


def test_stop_mid_transaction_resumes_after_the_last_record(mariadb_server, mariadb_db, tmp_path):
    _tables(mariadb_server, mariadb_db)
    one = _Side(mariadb_server, mariadb_db, tmp_path / "one", 5601)
    workers = _Side(mariadb_server, mariadb_db, tmp_path / "workers", 5602, StoppingSink,
                    **{"streaming.worker.processes": 1, "max.batch.size": 700})
    StoppingSink.limit = 10 ** 9
    _streaming([one, workers], mariadb_server, mariadb_db)
    StoppingSink.limit, StoppingSink.engine = 1234, workers.engine
    _backlog(mariadb_server, mariadb_db)
    one.wait_for(_END)
    one.stop()
    workers.thread.join(120)
    assert not workers.errors, workers.errors
    written = _lines(workers.directory)
    assert 1234 <= len(written) < len(_lines(one.directory))
    last = max((v["payload"]["source"]["pos"], v["payload"]["source"]["row"])
               for line in written if (v := orjson.loads(line)["value"]) is not None)
    stored = workers.offsets.get(workers.engine.partition)
    StoppingSink.engine = None
    workers.start()
    workers.wait_for(_END)
    workers.stop()
    assert _lines(workers.directory) == _lines(one.directory), f"stopped at {stored}, last written {last}"


def test_a_crash_mid_transaction_loses_nothing(mariadb_server, mariadb_db, tmp_path):
    """A failure inside a large transaction: the restart repeats at most the part of one worker's chunk that was
    written after the last offset it acknowledged (at least once, as Debezium), and loses nothing."""
    _tables(mariadb_server, mariadb_db)
    one = _Side(mariadb_server, mariadb_db, tmp_path / "one", 5601)
    workers = _Side(mariadb_server, mariadb_db, tmp_path / "workers", 5602, FailingSink,
                    **{"streaming.worker.processes": 1, "max.batch.size": 100})
    FailingSink.limit = 10 ** 9
    _streaming([one, workers], mariadb_server, mariadb_db)
    FailingSink.limit = 1234
    _backlog(mariadb_server, mariadb_db)
    one.wait_for(_END)
    one.stop()
    workers.thread.join(120)
    assert len(workers.errors) == 1 and "the sink is down" in str(workers.errors[0]), workers.errors
    workers.errors.clear()
    FailingSink.limit = 10 ** 9
    workers.start()
    workers.wait_for(_END)
    workers.stop()
    expected, got = _lines(one.directory), _lines(workers.directory)
    assert list(dict.fromkeys(got)) == expected, "records lost or out of order"
    # A chunk here is two rows events of up to 8 KB (~540 rows of t); the offset before it is at most one chunk back.
    assert len(got) - len(expected) <= 1000, f"{len(got) - len(expected)} records repeated"


def test_a_killed_worker_stops_the_engine_with_an_error(mariadb_server, mariadb_db, tmp_path):
    _tables(mariadb_server, mariadb_db)
    side = _Side(mariadb_server, mariadb_db, tmp_path, 5603, SlowSink,
                 **{"streaming.worker.processes": 1, "max.batch.size": 300})
    _streaming([side], mariadb_server, mariadb_db)
    _backlog(mariadb_server, mariadb_db)
    kill_a_worker()
    side.thread.join(60)
    assert not side.thread.is_alive()
    assert len(side.errors) == 1 and isinstance(side.errors[0], ConnectorError), side.errors
    assert "worker process (cdc-binlog-worker) died" in str(side.errors[0])
    assert not forked_children(), "worker processes left behind"


def test_not_used_with_transaction_metadata(mariadb_server, mariadb_db, tmp_path, caplog):
    _tables(mariadb_server, mariadb_db)
    side = _Side(mariadb_server, mariadb_db, tmp_path, 5604,
                 **{"streaming.worker.processes": 1, "provide.transaction.metadata": "true"})
    with caplog.at_level("INFO"):
        _streaming([side], mariadb_server, mariadb_db)
        _backlog(mariadb_server, mariadb_db)
        side.wait_for(_END)
        side.stop()
    assert "streaming.worker.processes=1: decoding in this process instead (provide.transaction.metadata=true" \
        in caplog.text
    assert not forked_children()
