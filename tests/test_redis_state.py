"""Offsets and schema history in Redis, in Debezium's own formats (``RedisOffsetBackingStore``, ``RedisSchemaHistory``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from brokers.redis import EmbeddedRedis  # noqa: E402
from cdc_process import CdcProcess, run_cli, server_properties, write_properties  # noqa: E402

pytest.importorskip("redis", reason="the Redis store tests need redis-py (uv sync --all-extras)")

TOPIC = "dbserver1.public.t"
OFFSETS_KEY = b"metadata:debezium:offsets"
PARTITION_FIELD = b'["redis",{"server":"dbserver1"}]'


@pytest.fixture(scope="module")
def redis_server():
    """One throwaway Redis for the module."""
    with EmbeddedRedis() as server:
        yield server


def ids(cdc: CdcProcess, topic: str = TOPIC) -> list[int]:
    """The ``id`` of every event the file sink wrote to ``topic`` (tombstones skipped)."""
    return [e["key"]["payload"]["id"] for e in cdc.events(topic) if e["value"] is not None]


def test_offsets_in_a_redis_hash_and_a_restart_resumes_from_them(pg_server, pg_db, tmp_path, redis_server):
    """Offsets go to Debezium's hash (field ``["redis",{partition}]``); a restart resumes from them: no new snapshot, no gap."""
    redis_server.client().flushall()
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO t SELECT generate_series(1, 10)", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "slot.name": "slot_offsets", "offset.storage": "io.debezium.storage.redis.offset.RedisOffsetBackingStore",
        "offset.storage.redis.address": redis_server.address})
    del props["debezium.source.offset.storage.file.filename"]
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    try:
        cdc.wait_events(TOPIC, 10)
        pg_server.execute("INSERT INTO t SELECT generate_series(11, 15)", dbname=pg_db)
        cdc.wait_events(TOPIC, 15)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    stored = redis_server.client().hgetall(OFFSETS_KEY)
    assert list(stored) == [PARTITION_FIELD], stored
    offset = orjson.loads(stored[PARTITION_FIELD])
    assert isinstance(offset["lsn"], int) and "snapshot" not in offset, offset
    assert not (tmp_path / "offsets.json").exists()
    shown = run_cli("offsets", "show", str(config))
    assert shown.returncode == 0 and str(offset["lsn"]) in shown.stdout, shown.stdout + shown.stderr

    pg_server.execute("INSERT INTO t SELECT generate_series(16, 20)", dbname=pg_db)
    cdc = CdcProcess(config, tmp_path).start()
    try:
        cdc.wait_events(TOPIC, 20)
        time.sleep(1.0)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert ids(cdc) == list(range(1, 21))
    assert orjson.loads(redis_server.client().hget(OFFSETS_KEY, PARTITION_FIELD))["lsn"] > offset["lsn"]
    pg_server.execute("SELECT pg_drop_replication_slot('slot_offsets')", dbname=pg_db)


def test_a_hash_written_in_debeziums_format_is_the_position(pg_server, pg_db, tmp_path, redis_server):
    """An offset Debezium Server left in Redis is where cdc starts: no snapshot, only the changes after it.

    The redis sink's address is also the offset store's (Debezium Server passes ``debezium.sink.redis.*`` on).
    """
    redis_server.client().flushall()
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES", dbname=pg_db)
    pg_server.execute("SELECT pg_create_logical_replication_slot('slot_moved', 'pgoutput')", dbname=pg_db)
    pg_server.execute("INSERT INTO t SELECT generate_series(1, 5)", dbname=pg_db)
    with pg_server.connect(pg_db, autocommit=True) as conn:
        lsn = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
    pg_server.execute("INSERT INTO t SELECT generate_series(6, 10)", dbname=pg_db)
    # What Debezium Server 2.7 (redis sink, RedisOffsetBackingStore) writes after streaming up to ``lsn``.
    debezium_offset = orjson.dumps({"lsn_proc": lsn, "messageType": "INSERT", "lsn_commit": lsn, "lsn": lsn,
                                    "txId": 1000, "ts_usec": 1_700_000_000_000_000})
    redis_server.client().hset(OFFSETS_KEY, PARTITION_FIELD, debezium_offset)

    props = server_properties(pg_server, pg_db, tmp_path, **{
        "slot.name": "slot_moved", "offset.storage": "io.debezium.storage.redis.offset.RedisOffsetBackingStore"})
    del props["debezium.source.offset.storage.file.filename"]
    del props["debezium.sink.file.dir"]
    props.update({"debezium.sink.type": "redis", "debezium.sink.redis.address": redis_server.address})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    client = redis_server.client()
    try:
        cdc.wait_until(lambda: client.xlen(TOPIC) >= 5, 30, "the changes after the stored position")
        time.sleep(1.0)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    entries = [fields for _, fields in client.xrange(TOPIC)]
    got = [orjson.loads(next(iter(f)))["payload"]["id"] for f in entries]
    assert got == [6, 7, 8, 9, 10], got
    assert all(b'"op":"c"' in next(iter(f.values())) for f in entries)
    assert orjson.loads(client.hget(OFFSETS_KEY, PARTITION_FIELD))["lsn"] > lsn
    pg_server.execute("SELECT pg_drop_replication_slot('slot_moved')", dbname=pg_db)


def _mariadb_properties(server: Any, db: str, tmp_path: Path, redis: EmbeddedRedis) -> dict[str, Any]:
    from kit.contract import Workdir
    from kit.mariadb import MariaDBFixture

    props = MariaDBFixture(server, db).properties(Workdir(tmp_path))
    del props["debezium.source.schema.history.internal.file.filename"]
    props.update({
        "debezium.source.schema.history.internal": "io.debezium.storage.redis.history.RedisSchemaHistory",
        "debezium.source.schema.history.internal.redis.address": redis.address,
        "debezium.source.schema.history.internal.redis.key": "test:schema_history",
    })
    return props


def test_schema_history_in_a_redis_stream_is_replayed_on_restart(mariadb_server, mariadb_db, tmp_path, redis_server):
    """MariaDB's schema history goes to a Redis stream (one ``schema`` field per record); a restart recovers from it."""
    redis_server.client().flushall()
    mariadb_server.execute(f"CREATE TABLE `{mariadb_db}`.t (id int PRIMARY KEY, a int)")
    mariadb_server.execute(f"INSERT INTO `{mariadb_db}`.t VALUES (1, 1)")
    config = write_properties(tmp_path / "app.properties",
                              _mariadb_properties(mariadb_server, mariadb_db, tmp_path, redis_server))
    topic = f"dbserver1.{mariadb_db}.t"
    cdc = CdcProcess(config, tmp_path).start()
    try:
        cdc.wait_events(topic, 1)
        mariadb_server.execute(f"ALTER TABLE `{mariadb_db}`.t ADD COLUMN b varchar(10)")
        mariadb_server.execute(f"INSERT INTO `{mariadb_db}`.t VALUES (2, 2, 'two')")
        cdc.wait_events(topic, 2)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    client = redis_server.client()
    entries = client.xrange("test:schema_history")
    assert entries, "no schema history in Redis"
    records = [orjson.loads(fields[b"schema"]) for _, fields in entries]
    assert all(list(fields) == [b"schema"] for _, fields in entries)
    assert any("ADD COLUMN" in r["ddl"] for r in records), [r["ddl"] for r in records]
    assert all({"source", "position", "ddl", "tableChanges"} <= set(r) for r in records)
    before = len(entries)

    mariadb_server.execute(f"INSERT INTO `{mariadb_db}`.t VALUES (3, 3, 'three')")
    cdc = CdcProcess(config, tmp_path).start()
    try:
        events = cdc.wait_events(topic, 3)
        time.sleep(1.0)
        events = cdc.events(topic)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert [e["value"]["payload"]["op"] for e in events] == ["r", "c", "c"]
    assert events[-1]["value"]["payload"]["after"] == {"id": 3, "a": 3, "b": "three"}
    assert client.xlen("test:schema_history") == before  # recovered, not rebuilt
