"""``streaming.worker.processes`` on PostgreSQL: long runs of row changes decoded and serialized in worker processes.

Each scenario streams one backlog twice, through two slots made before it: once with every change
decoded in the engine's process, once with worker processes. The file sink must hold the same
lines (apart from the processing times), the metrics the same counts, and a stop in the middle of a
large transaction must resume after exactly the last record written, neither repeating nor losing one.
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
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from kit.worker_processes import FailingSink, SlowSink, StoppingSink, forked_children, kill_a_worker
from cdc_postgres import stream_workers

#: What differs between two runs over the same WAL: the envelope's processing time.
_PROCESSING_TIME = re.compile(rb'"op":"(.)","ts_ms":\d+(,"ts_us":\d+,"ts_ns":\d+)?')
#: source.sequence's first element.
_LAST_COMMIT = re.compile(rb'"sequence":"\[(null|\\"\d+\\")')


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    """Chunks of a few hundred changes, so a few thousand make many, some ending on a filtered table's change."""
    monkeypatch.setattr(stream_workers, "MIN_RUN", 40)
    monkeypatch.setattr(stream_workers, "CHUNK", 300)


def _engine(pg, db, out: Path, slot: str, offsets: MemoryOffsetStore, sink_class=FileSink, **more) -> Engine:
    config = Config({"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
                     "database.user": pg.user, "database.dbname": db, "topic.prefix": "sw", "slot.name": slot,
                     "publication.name": "sw_pub", "publication.autocreate.mode": "disabled",
                     "snapshot.mode": "no_data", "poll.interval.ms": 20, "offset.flush.interval.ms": 0,
                     "table.include.list": "public.t,public.u,public.full_rows", **more})
    if offsets.get({"server": "sw"}) is None:  # the slot was made before the backlog: stream from its start
        offsets.commit([({"server": "sw"}, {"lsn_commit": 0, "lsn_proc": None, "lsn": 0})])
    return Engine(config, sink=sink_class(Config({"dir": str(out)})), offset_store=offsets)


def _lines(directory: Path) -> list[bytes]:
    return [_PROCESSING_TIME.sub(rb'"op":"\1"', line) for f in sorted(directory.glob("*.jsonl"))
            for line in f.read_bytes().split(b"\n") if line]


def _drain(engine: Engine, directory: Path, until: int) -> None:
    """Run ``engine`` until the file sink holds ``until`` lines in all, then stop it."""
    errors: list = []
    runner = threading.Thread(target=lambda: _run(engine, errors))
    runner.start()
    deadline = time.monotonic() + 120
    while len(_lines(directory)) < until and runner.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    engine.stop()
    runner.join(60)
    assert not errors, errors
    assert len(_lines(directory)) >= until, f"only {len(_lines(directory))} of {until} lines written"


def _run(engine: Engine, errors: list) -> None:
    try:
        engine.run()
    except BaseException as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def _backlog(pg, db, slots: list[str]) -> int:
    """Tables, slots made before any change, then the backlog; returns how many lines it makes."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz); "
               "CREATE TABLE u (id int PRIMARY KEY, note text); CREATE TABLE skipped (id int PRIMARY KEY); "
               "CREATE TABLE full_rows (id int PRIMARY KEY, big text); ALTER TABLE full_rows REPLICA IDENTITY FULL; "
               "CREATE PUBLICATION sw_pub FOR ALL TABLES", dbname=db)
    for slot in slots:
        pg.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')", dbname=db)
    pg.execute("INSERT INTO t SELECT g, CASE WHEN g % 5 = 0 THEN NULL ELSE 'n-' || g END, g * 1.25, "
               "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, 3000) g", dbname=db)
    # One transaction alternating captured tables with one outside table.include.list (in the publication):
    # chunks of several topics, chunks whose last change is not captured.
    pg.execute("DO $$ BEGIN FOR i IN 1..1500 LOOP INSERT INTO u VALUES (i, 'u' || i); INSERT INTO skipped VALUES (i); "
               "IF i % 3 = 0 THEN INSERT INTO t VALUES (10000 + i, 'mixed', i, now()); END IF; END LOOP; END $$", dbname=db)
    pg.execute("UPDATE t SET name = 'renamed-' || id WHERE id <= 2000", dbname=db)
    pg.execute("DELETE FROM u WHERE id <= 1000", dbname=db)  # deletes and their tombstones
    # A new column between transactions: the workers are forked again with the new relation.
    pg.execute("ALTER TABLE t ADD COLUMN extra int DEFAULT 7", dbname=db)
    pg.execute("INSERT INTO t (id, name) SELECT g, 'after-alter' FROM generate_series(20001, 21000) g", dbname=db)
    # REPLICA IDENTITY FULL with TOASTed values left out of the new row (taken from the old one).
    pg.execute("INSERT INTO full_rows SELECT g, repeat(md5(g::text), 400) FROM generate_series(1, 200) g", dbname=db)
    pg.execute("UPDATE full_rows SET id = id + 1000", dbname=db)
    pg.execute("SELECT pg_logical_emit_message(true, 'sw', 'end'); INSERT INTO u VALUES (99999, 'end')", dbname=db)
    # inserts, the mixed transaction, updates, deletes with tombstones, after the ALTER, full_rows' inserts,
    # its key changes (delete, tombstone, create each), the message, the last insert.
    return 3000 + 2000 + 2000 + 1000 * 2 + 1000 + 200 + 200 * 3 + 1 + 1


def test_same_lines_and_metrics_as_one_process(pg_server, pg_db, tmp_path):
    lines = _backlog(pg_server, pg_db, ["one", "workers"])
    out, metrics = {}, {}
    for slot, processes in (("one", 0), ("workers", 1)):
        engine = _engine(pg_server, pg_db, tmp_path / slot, slot, MemoryOffsetStore(),
                         **{"streaming.worker.processes": processes})
        _drain(engine, tmp_path / slot, lines)
        out[slot] = _lines(tmp_path / slot)
        stream = engine.metrics.streaming
        metrics[slot] = (stream.total_events, dict(stream.by_op))
    assert len(out["one"]) == lines
    assert out["workers"] == out["one"]
    assert metrics["workers"] == metrics["one"]
    assert metrics["one"][1] == {"c": 6401, "u": 2000, "d": 1200}


#: A transform chain that runs in the workers as in the main process: HeaderFrom gives every record a header
#: (records with headers cross as pickled records, not blocks), RegexRouter renames the topics.
TRANSFORMS = {"transforms": "hdr,route",
              "transforms.hdr.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
              "transforms.hdr.fields": "op", "transforms.hdr.headers": "operation", "transforms.hdr.operation": "copy",
              "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
              "transforms.route.regex": r"sw\.public\.(.*)", "transforms.route.replacement": "routed.$1"}


@pytest.mark.parametrize("more", [{}, TRANSFORMS], ids=["plain", "transforms"])
def test_two_workers_same_lines(pg_server, pg_db, tmp_path, more):
    lines = _backlog(pg_server, pg_db, ["one", "workers"])
    out = {}
    for slot, processes in (("one", 0), ("workers", 2)):
        _drain(_engine(pg_server, pg_db, tmp_path / slot, slot, MemoryOffsetStore(),
                       **{"streaming.worker.processes": processes, **more}), tmp_path / slot, lines)
        out[slot] = _lines(tmp_path / slot)
    assert out["workers"] == out["one"]
    if more:
        assert (tmp_path / "workers" / "routed.t.jsonl").exists()
        assert sum(b'"headers":{"operation":"u"}' in line for line in out["workers"]) == 2000


@pytest.mark.parametrize("stop_after", [1234, 4100])
def test_stop_mid_transaction_resumes_after_the_last_record(pg_server, pg_db, tmp_path, stop_after):
    lines = _backlog(pg_server, pg_db, ["one", "workers"])
    _drain(_engine(pg_server, pg_db, tmp_path / "one", "one", MemoryOffsetStore()), tmp_path / "one", lines)
    offsets = MemoryOffsetStore()
    StoppingSink.limit = stop_after
    first = _engine(pg_server, pg_db, tmp_path / "workers", "workers", offsets, StoppingSink,
                    **{"streaming.worker.processes": 1, "max.batch.size": 700})
    StoppingSink.engine = first
    first.run()
    written = _lines(tmp_path / "workers")
    assert stop_after <= len(written) < lines
    last = max(v["payload"]["source"]["lsn"] for line in written if (v := orjson.loads(line)["value"]) is not None)
    stored = offsets.get({"server": "sw"})
    assert stored["lsn_proc"] == last, "the stored offset is not the last written record's"
    StoppingSink.engine = None
    _drain(_engine(pg_server, pg_db, tmp_path / "workers", "workers", offsets, **{"streaming.worker.processes": 1}),
           tmp_path / "workers", lines)
    # A restart inside a transaction takes Debezium's lastCommitLsn (source.sequence's first element) from the
    # stored offset's lsn_commit, where the uninterrupted run had the last commit before it: only that differs.
    assert [_LAST_COMMIT.sub(b"", line) for line in _lines(tmp_path / "workers")] == \
        [_LAST_COMMIT.sub(b"", line) for line in _lines(tmp_path / "one")]


def test_a_crash_mid_transaction_loses_nothing(pg_server, pg_db, tmp_path):
    """A failure inside a large transaction: the restart repeats at most the part of one worker's chunk written
    after the last offset acknowledged (at least once, as Debezium), and loses nothing."""
    lines = _backlog(pg_server, pg_db, ["one", "workers"])
    _drain(_engine(pg_server, pg_db, tmp_path / "one", "one", MemoryOffsetStore()), tmp_path / "one", lines)
    offsets = MemoryOffsetStore()
    FailingSink.limit = 1234
    with pytest.raises(RuntimeError, match="the sink is down"):
        _engine(pg_server, pg_db, tmp_path / "workers", "workers", offsets, FailingSink,
                **{"streaming.worker.processes": 1, "max.batch.size": 100}).run()
    _drain(_engine(pg_server, pg_db, tmp_path / "workers", "workers", offsets, **{"streaming.worker.processes": 1}),
           tmp_path / "workers", lines)
    expected = [_LAST_COMMIT.sub(b"", line) for line in _lines(tmp_path / "one")]
    got = [_LAST_COMMIT.sub(b"", line) for line in _lines(tmp_path / "workers")]
    assert list(dict.fromkeys(got)) == expected, "records lost or out of order"
    assert len(got) - len(expected) <= 300, f"{len(got) - len(expected)} records repeated: more than a chunk"


def test_a_killed_worker_stops_the_engine_with_an_error(pg_server, pg_db, tmp_path):
    _backlog(pg_server, pg_db, ["workers"])
    offsets = MemoryOffsetStore()
    engine = _engine(pg_server, pg_db, tmp_path, "workers", offsets, SlowSink,
                     **{"streaming.worker.processes": 1, "max.batch.size": 300})
    errors: list = []
    runner = threading.Thread(target=lambda: _run(engine, errors))
    runner.start()
    kill_a_worker()
    runner.join(60)
    assert not runner.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], ConnectorError), errors
    assert "worker process (cdc-stream-worker) died" in str(errors[0])
    assert not forked_children(), "worker processes left behind"


def test_not_used_with_transaction_metadata(pg_server, pg_db, tmp_path, caplog):
    lines = _backlog(pg_server, pg_db, ["workers"])
    engine = _engine(pg_server, pg_db, tmp_path, "workers", MemoryOffsetStore(),
                     **{"streaming.worker.processes": 1, "provide.transaction.metadata": "true"})
    with caplog.at_level("INFO"):
        _drain(engine, tmp_path, lines)
    assert "streaming.worker.processes=1: decoding in this process instead (provide.transaction.metadata=true" \
        in caplog.text
    assert not forked_children()
