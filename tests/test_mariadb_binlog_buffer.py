"""binlog.buffer.size (AS-39): rolled-back transactions in MariaDB's binlog are dropped; large ones still stream.

MariaDB writes a transaction that ends in ROLLBACK to the binlog when it cannot be undone
completely: here a MyISAM temporary table is created inside it. Its InnoDB rows never happened,
yet they are in the binlog (checked with SHOW BINLOG EVENTS): without the buffer they stream.
"""

from __future__ import annotations

import time

import orjson
import pytest

from cdc_process import CdcProcess, write_properties
from mariadb_cdc import EngineThread, connector_config, mariadb_properties


def _ids(records, op: str = "c") -> list[int]:
    image = "before" if op == "d" else "after"
    return [r.value[image]["id"] for r in records if r.value is not None and r.value.get("op") == op]


def _streaming(engine: EngineThread) -> None:
    deadline = time.monotonic() + 30
    while not engine.engine.metrics.streaming.connected:
        assert engine.alive and time.monotonic() < deadline, engine.error
        time.sleep(0.02)


def _position(server) -> tuple[str, int]:
    file, pos = server.execute("SHOW MASTER STATUS")[0][:2]
    return file, int(pos)


def _binlog_statements(server, since: tuple[str, int]) -> list[str]:
    return [row[5] for row in server.execute(f"SHOW BINLOG EVENTS IN '{since[0]}' FROM {since[1]}")]


def rolled_back(server, db: str, ids: range) -> None:
    """Insert ``ids`` into InnoDB ``t`` in a transaction that also creates a MyISAM temporary table, then ROLLBACK."""
    since = _position(server)
    conn = server.connect(db, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for i in ids:
                cur.execute("INSERT INTO t VALUES (%s, 'gone')", (i,))
            cur.execute("CREATE TEMPORARY TABLE scratch (id INT) ENGINE=MyISAM")
            cur.execute("INSERT INTO scratch VALUES (1)")
            cur.execute("ROLLBACK")
    finally:
        conn.close()
    statements = _binlog_statements(server, since)
    assert statements[-1] == "ROLLBACK" and sum(s.endswith("STMT_END_F") for s in statements) == len(ids), statements
    assert server.execute(f"SELECT COUNT(*) FROM t WHERE id BETWEEN {ids[0]} AND {ids[-1]}", db)[0][0] == 0


def committed(server, db: str, ids: range) -> None:
    """Insert ``ids`` into ``t``, one statement each, in one transaction."""
    conn = server.connect(db, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for i in ids:
                cur.execute("INSERT INTO t VALUES (%s, 'kept')", (i,))
            cur.execute("COMMIT")
    finally:
        conn.close()


def _counters(engine: EngineThread) -> dict[str, int]:
    values = engine.engine.metrics.streaming.values()
    return {k: values[k] for k in ("NumberOfRolledBackTransactions", "NumberOfLargeTransactions",
                                   "NumberOfNotWellFormedTransactions")}


@pytest.mark.parametrize("size, streamed, rolled_back_count", [(100, [], 1), (0, [1, 2], 0)])
def test_rolled_back_transaction(mariadb_server, mariadb_db, size, streamed, rolled_back_count):
    """AS-39: with binlog.buffer.size=100 a rolled-back transaction emits nothing; with 0 its rows stream (as Debezium)."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB", mariadb_db)
    engine = EngineThread(connector_config(mariadb_server, mariadb_db, **{"binlog.buffer.size": size})).start()
    try:
        _streaming(engine)
        rolled_back(mariadb_server, mariadb_db, range(1, 3))
        committed(mariadb_server, mariadb_db, range(10, 12))
        engine.wait(lambda rs: 11 in _ids(rs), "the committed transaction after the rolled-back one")
        counters = _counters(engine)
    finally:
        engine.stop()
    assert _ids(engine.snapshot()) == streamed + [10, 11]
    assert counters == {"NumberOfRolledBackTransactions": rolled_back_count, "NumberOfLargeTransactions": 0,
                        "NumberOfNotWellFormedTransactions": 0}


def _changes(records) -> list:
    return [r for r in records if r.value is not None and r.value.get("op") in ("c", "u", "d")]


def _comparable(record) -> tuple:
    """A record without the time it was processed (the envelope's ts_*), with its offset."""
    value = None if record.value is None else {k: v for k, v in record.value.items() if not k.startswith("ts_")}
    return record.topic, record.key, value, record.offset


def test_large_transactions_and_the_unbuffered_stream(mariadb_server, mariadb_db):
    """AS-39: more than 100 events commit normally (counted large); committed output is identical to size 0."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB", mariadb_db)
    plain = EngineThread(connector_config(mariadb_server, mariadb_db)).start()
    buffered = EngineThread(connector_config(mariadb_server, mariadb_db, **{
        "binlog.buffer.size": 100, "database.server.id": 5601, "max.batch.size": 64})).start()
    try:
        _streaming(plain)
        _streaming(buffered)
        committed(mariadb_server, mariadb_db, range(1, 151))  # 150 x (table map, rows) + GTID + XID
        committed(mariadb_server, mariadb_db, range(200, 250))  # 50 x (table map, rows) + GTID + XID = 102 > 100
        committed(mariadb_server, mariadb_db, range(300, 310))  # fits
        rolled_back(mariadb_server, mariadb_db, range(400, 520))  # large and rolled back: nothing of it streams
        rolled_back(mariadb_server, mariadb_db, range(600, 603))
        mariadb_server.execute(["UPDATE t SET v = 'new' WHERE id < 100", "DELETE FROM t WHERE id >= 300"], mariadb_db)
        plain.wait(lambda rs: len(_ids(rs, "d")) == 10, "the deletes (unbuffered)")
        buffered.wait(lambda rs: len(_ids(rs, "d")) == 10, "the deletes (buffered)")
        counters = _counters(buffered)
    finally:
        plain.stop()
        buffered.stop()
    gone = set(range(400, 520)) | set(range(600, 603))
    assert sorted(set(_ids(plain.snapshot())) & gone) == sorted(gone)  # streamed without the buffer
    expected = [_comparable(r) for r in _changes(plain.snapshot())
                if (r.value["after"] or r.value["before"])["id"] not in gone]
    got = [_comparable(r) for r in _changes(buffered.snapshot())]
    assert _ids(buffered.snapshot()) == list(range(1, 151)) + list(range(200, 250)) + list(range(300, 310))
    assert len(got) == len(expected) == 210 + 99 + 10
    assert got == expected
    assert counters == {"NumberOfRolledBackTransactions": 2, "NumberOfLargeTransactions": 3,
                        "NumberOfNotWellFormedTransactions": 0}


def _stored_position(path) -> tuple[str, int] | None:
    if not path.exists():
        return None
    for entry in orjson.loads(path.read_bytes())["offsets"]:
        return entry["offset"]["file"], int(entry["offset"]["pos"])
    return None


def test_restart_after_a_rolled_back_transaction_does_not_replay_it(mariadb_server, mariadb_db, tmp_path):
    """kill -9 right after a dropped transaction, restart without the buffer: its rows still never appear."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB", mariadb_db)
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{"binlog.buffer.size": 100})
    cdc = CdcProcess(write_properties(tmp_path / "buffered.properties", props), tmp_path).start()
    topic = f"dbserver1.{mariadb_db}.t"
    offsets = tmp_path / "offsets.json"
    cdc.wait_until(offsets.exists, what="the (empty) snapshot")
    committed(mariadb_server, mariadb_db, range(1, 2))
    cdc.wait_until(lambda: _created(cdc.events(topic)) == [1], what="the first insert")
    rolled_back(mariadb_server, mariadb_db, range(5, 8))
    end = _position(mariadb_server)
    cdc.wait_until(lambda: (_stored_position(offsets) or ("", 0)) == end, what=f"the offset at {end}")
    cdc.kill()
    props["debezium.source.binlog.buffer.size"] = 0  # a replay would now stream the rolled-back rows
    cdc = CdcProcess(write_properties(tmp_path / "plain.properties", props), tmp_path).start()
    try:
        committed(mariadb_server, mariadb_db, range(9, 10))
        cdc.wait_until(lambda: 9 in _created(cdc.events(topic)), what="the insert after the restart")
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert _created(cdc.events(topic)) == [1, 9]


def _created(events) -> list[int]:
    return [e["key"]["payload"]["id"] for e in events if e["value"] and e["value"]["payload"]["op"] == "c"]


def test_resuming_inside_a_transaction_counts_it_not_well_formed(mariadb_server, mariadb_db):
    """An offset pointing past a transaction's start (set by hand): its COMMIT comes without BEGIN; rows still stream."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB", mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{"binlog.buffer.size": 100})
    first = EngineThread(config).start()
    try:
        _streaming(first)
        committed(mariadb_server, mariadb_db, range(1, 2))
        first.wait(lambda rs: _ids(rs) == [1], "the first insert")
    finally:
        first.stop()
    since = _position(mariadb_server)
    committed(mariadb_server, mariadb_db, range(2, 4))
    events = mariadb_server.execute(f"SHOW BINLOG EVENTS IN '{since[0]}' FROM {since[1]}")
    assert events[0][2] == "Gtid" and "BEGIN" in events[0][5], events
    partition = {"server": "dbserver1"}
    # After the GTID (BEGIN); without ``gtids``, which would position the restart by GTID instead.
    offset = {k: v for k, v in first.offsets.get(partition).items() if k != "gtids"}
    offset.update(pos=events[1][1], event=0, row=0)
    first.offsets.commit([(partition, offset)])
    second = EngineThread(config, offsets=first.offsets, history=first.history).start()
    try:
        second.wait(lambda rs: _ids(rs) == [2, 3], "the transaction's rows")
        committed(mariadb_server, mariadb_db, range(4, 5))
        second.wait(lambda rs: _ids(rs) == [2, 3, 4], "the next, well-formed, transaction")
        counters = _counters(second)
    finally:
        second.stop()
    assert counters == {"NumberOfRolledBackTransactions": 0, "NumberOfLargeTransactions": 0,
                        "NumberOfNotWellFormedTransactions": 1}
