"""``cdc run`` into Redis Streams (Debezium Server's ``redis`` sink): a real PostgreSQL, a real redis-server."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from brokers.redis import EmbeddedRedis  # noqa: E402
from brokers.reference import file_sink_records, stable  # noqa: E402
from cdc_process import CdcProcess, run_cli, server_properties, write_properties  # noqa: E402
from secrets_check import SECRET, assert_no_secret  # noqa: E402

pytest.importorskip("redis", reason="the Redis sink tests need redis-py (uv sync --all-extras)")

TOPIC = "dbserver1.public.t"
ROWS = ["plain", 'a "quoted" \\ back', "ünï 日本 😀", "line\nbreak\ttab", "", "x" * 3000]


@pytest.fixture(scope="module")
def redis_server():
    """One throwaway Redis for the module (each test uses its own stream names or flushes)."""
    with EmbeddedRedis() as server:
        yield server


def redis_properties(pg: Any, db: str, workdir: Path, redis: EmbeddedRedis, slot: str, **sink: Any) -> dict[str, Any]:
    """The kit's PostgreSQL source with the redis sink instead of the file sink.

    A killed run's slot stays active until PostgreSQL notices; the next run retries it every 300 ms.
    """
    props = server_properties(pg, db, workdir, **{"slot.name": slot, "slot.retry.delay.ms": 300})
    del props["debezium.sink.file.dir"]
    props["debezium.sink.type"] = "redis"
    props["debezium.sink.redis.address"] = redis.address
    props.update({f"debezium.sink.redis.{k}": v for k, v in sink.items()})
    return props


def stream(redis: EmbeddedRedis, name: str = TOPIC) -> list[dict[bytes, bytes]]:
    """Every entry of a stream, its fields."""
    return [fields for _, fields in redis.client().xrange(name)]


def wait_for(condition: Any, cdc: CdcProcess, timeout: float = 40.0, what: str = "condition") -> None:
    """``cdc.wait_until`` for conditions on Redis."""
    cdc.wait_until(condition, timeout, what)


def test_every_change_once_in_order_with_the_file_sinks_bytes(pg_server, pg_db, tmp_path, redis_server):
    """Snapshot and stream into Redis (compact): one entry per record, in order, key and value bytes as the file sink writes them."""
    redis_server.client().flushall()
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
    for i, text in enumerate(ROWS, 1):
        pg_server.execute(f"INSERT INTO t VALUES ({i}, $q${text}$q$)", dbname=pg_db)
    file_dir, redis_dir = tmp_path / "file", tmp_path / "redis"
    file_dir.mkdir()
    redis_dir.mkdir()
    reference = CdcProcess(write_properties(file_dir / "app.properties", server_properties(
        pg_server, pg_db, file_dir, **{"slot.name": "slot_file"})), file_dir).start()
    cdc = CdcProcess(write_properties(redis_dir / "app.properties", redis_properties(
        pg_server, pg_db, redis_dir, redis_server, "slot_redis")), redis_dir).start()
    try:
        reference.wait_events(TOPIC, len(ROWS))
        wait_for(lambda: len(stream(redis_server)) >= len(ROWS), cdc, what="the snapshot in Redis")
        pg_server.execute("INSERT INTO t VALUES (100, 'new'), (101, 'newer')", dbname=pg_db)
        pg_server.execute("UPDATE t SET txt = 'changed \"x\"' WHERE id = 2", dbname=pg_db)
        pg_server.execute("DELETE FROM t WHERE id = 3", dbname=pg_db)  # a delete and its tombstone
        pg_server.execute("UPDATE t SET id = 200 WHERE id = 4", dbname=pg_db)  # key change: delete, tombstone, create
        total = len(ROWS) + 2 + 1 + 2 + 3
        reference.wait_events(TOPIC, total)
        wait_for(lambda: len(stream(redis_server)) >= total, cdc, what=f"{total} entries in Redis")
        time.sleep(0.5)
    finally:
        assert cdc.terminate() == 0, cdc.log()
        assert reference.terminate() == 0, reference.log()
    expected = file_sink_records(file_dir / "events", TOPIC)
    entries = stream(redis_server)
    assert len(entries) == len(expected) == total
    for n, (fields, (key, value, _headers)) in enumerate(zip(entries, expected)):
        assert len(fields) == 1, fields  # compact: {key: value}
        (got_key, got_value), = fields.items()
        assert got_key == key, f"entry {n}: key {got_key!r} != file sink's {key!r}"
        if value is None:
            assert got_value == b"default", f"entry {n}: a tombstone is null.value's 'default'"
        else:
            assert stable(got_value) == stable(value), f"entry {n}: value differs from the file sink's"
    pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                      "WHERE slot_name IN ('slot_file', 'slot_redis')", dbname=pg_db)


def test_extended_format_carries_key_value_and_headers(pg_server, pg_db, tmp_path, redis_server):
    """``message.format=extended``: fields key, value and the record's headers upper-cased; null.key/null.value used."""
    redis_server.client().flushall()
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
    pg_server.execute("CREATE TABLE nokey (txt text)", dbname=pg_db)
    pg_server.execute("INSERT INTO t VALUES (1, 'a')", dbname=pg_db)
    props = redis_properties(pg_server, pg_db, tmp_path, redis_server, "slot_ext", **{
        "message.format": "extended", "null.key": "NOKEY", "null.value": "GONE"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    try:
        wait_for(lambda: len(stream(redis_server)) >= 1, cdc, what="the snapshot")
        pg_server.execute("UPDATE t SET id = 2 WHERE id = 1", dbname=pg_db)
        pg_server.execute("INSERT INTO nokey VALUES ('k')", dbname=pg_db)
        wait_for(lambda: len(stream(redis_server)) >= 4 and stream(redis_server, "dbserver1.public.nokey"), cdc,
                 what="the key change and the keyless insert")
    finally:
        assert cdc.terminate() == 0, cdc.log()
    snapshot, delete, tombstone, create = stream(redis_server)
    assert list(snapshot) == [b"key", b"value"]
    assert snapshot[b"key"] == b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],' \
                               b'"optional":false,"name":"dbserver1.public.t.Key"},"payload":{"id":1}}'
    assert b'"op":"r"' in snapshot[b"value"]
    # The header as Debezium Server's default header converter writes it: the key schema with the new key.
    assert delete[b"__DEBEZIUM.NEWKEY"] == snapshot[b"key"].replace(b'"payload":{"id":1}', b'"payload":{"id":2}')
    assert tombstone[b"value"] == b"GONE" and b"__DEBEZIUM.NEWKEY" in tombstone
    assert b"__DEBEZIUM.OLDKEY" in create and b'"op":"c"' in create[b"value"]
    (keyless,) = stream(redis_server, "dbserver1.public.nokey")
    assert keyless[b"key"] == b"NOKEY" and b'"txt":"k"' in keyless[b"value"]
    pg_server.execute("SELECT pg_drop_replication_slot('slot_ext')", dbname=pg_db)


class InsertWriter:
    """Inserts ids 1, 2, 3, ... one transaction each, until stopped."""

    def __init__(self, pg: Any, db: str):
        self.conn = pg.connect(db, autocommit=True)
        self.next_id = 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        cur = self.conn.cursor()
        while not self._stop.is_set():
            cur.execute("INSERT INTO t VALUES (%s, 'w')", (self.next_id,))
            self.next_id += 1
            time.sleep(0.004)

    def start(self) -> InsertWriter:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop; the number of rows inserted."""
        self._stop.set()
        self._thread.join(10)
        self.conn.close()
        return self.next_id - 1


def ids_in(redis: EmbeddedRedis) -> list[int]:
    """The ``id`` of every entry of the topic's stream (compact format), in stream order."""
    out = []
    for fields in stream(redis):
        (key, _), = fields.items()
        out.append(int(re.search(rb'"payload":\{"id":(\d+)\}', key).group(1)))
    return out


def test_kill_9_under_constant_writes_loses_nothing(pg_server, pg_db, tmp_path, redis_server):
    """kill -9 of ``cdc run`` while rows pour in; after a restart every row is in Redis; duplicates are few and counted."""
    redis_server.client().flushall()
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
    config = write_properties(tmp_path / "app.properties",
                              redis_properties(pg_server, pg_db, tmp_path, redis_server, "slot_kill"))
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: "streaming from slot" in cdc.log(), 30, "the (empty) snapshot to end")
    writer = InsertWriter(pg_server, pg_db).start()
    try:
        wait_for(lambda: redis_server.client().xlen(TOPIC) >= 150, cdc, what="150 streamed entries")
        cdc.kill()
        before = redis_server.client().xlen(TOPIC)
        cdc = CdcProcess(config, tmp_path).start()
        wait_for(lambda: redis_server.client().xlen(TOPIC) >= before + 100, cdc, what="more entries after the restart")
    finally:
        inserted = writer.stop()
    try:
        wait_for(lambda: set(ids_in(redis_server)) >= set(range(1, inserted + 1)), cdc, 60,
                 what=f"all {inserted} rows in Redis")
        time.sleep(0.5)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    ids = ids_in(redis_server)
    duplicates = len(ids) - len(set(ids))
    print(f"kill -9: {inserted} rows, {len(ids)} entries, {duplicates} duplicates")
    assert sorted(set(ids)) == list(range(1, inserted + 1))
    assert duplicates <= 2048, f"{duplicates} duplicates: more than one batch came again"
    # Per key, in order: the first occurrences are increasing (ids were inserted in order).
    first = list(dict.fromkeys(ids))
    assert first == sorted(first)
    pg_server.execute("SELECT pg_drop_replication_slot('slot_kill')", dbname=pg_db)


def test_redis_down_for_seconds_then_back_loses_nothing(pg_server, pg_db, tmp_path):
    """Redis crashes mid-stream and comes back on the same port: cdc waits, retries, resumes; every row arrives once."""
    with EmbeddedRedis({"appendonly": "yes", "appendfsync": "always"}) as redis:
        pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
        config = write_properties(tmp_path / "app.properties", redis_properties(
            pg_server, pg_db, tmp_path, redis, "slot_down", **{"retry.initial.delay.ms": 100,
                                                               "retry.max.delay.ms": 1000}))
        writer = InsertWriter(pg_server, pg_db).start()
        cdc = CdcProcess(config, tmp_path).start()
        try:
            wait_for(lambda: redis.client().xlen(TOPIC) >= 150, cdc, what="150 entries")
            redis.kill()
            cdc.wait_until(lambda: "retrying" in cdc.log(), 20, "a retry warning while Redis is down")
            time.sleep(2)
            assert cdc.proc.poll() is None, cdc.log()
            redis.start()
            time.sleep(1)
        finally:
            inserted = writer.stop()
        try:
            wait_for(lambda: set(ids_in(redis)) >= set(range(1, inserted + 1)), cdc, 60,
                     what=f"all {inserted} rows after Redis came back")
        finally:
            assert cdc.terminate() == 0, cdc.log()
        ids = ids_in(redis)
        print(f"Redis down: {inserted} rows, {len(ids)} entries, {len(ids) - len(set(ids))} duplicates")
        assert sorted(set(ids)) == list(range(1, inserted + 1))
        assert len(ids) - len(set(ids)) <= 2048
        assert "Traceback" not in cdc.log()
    pg_server.execute("SELECT pg_drop_replication_slot('slot_down')", dbname=pg_db)


def test_wrong_password_stops_with_one_line_naming_the_property(pg_server, pg_db, tmp_path):
    """A refused password: exit code 1, one error line naming debezium.sink.redis.password, no traceback, no password."""
    with EmbeddedRedis({"requirepass": "the-right-one-42"}) as redis:
        pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
        props = redis_properties(pg_server, pg_db, tmp_path, redis, "slot_pw", password=SECRET)
        config = write_properties(tmp_path / "app.properties", props)
        cdc = CdcProcess(config, tmp_path, "--log-level", "DEBUG").start()
        code = cdc.wait_exit(30)
        out = cdc.log()
        for command in (["--log-level", "DEBUG", "validate"],):
            done = run_cli(*command, str(config))
            assert done.returncode == 0, done.stdout + done.stderr
            assert_no_secret(f"`cdc {' '.join(command)}`", done.stdout + done.stderr)
    assert code == 1, out
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "debezium.sink.redis.password" in errors[0], out
    assert_no_secret("the output of cdc run", out)


def test_redis_out_of_memory_waits_until_there_is_room(pg_server, pg_db, tmp_path):
    """Redis at maxmemory answers -OOM: cdc waits and retries (nothing acknowledged), and goes on once there is room."""
    with EmbeddedRedis({"maxmemory-policy": "noeviction"}) as redis:
        client = redis.client()
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", used + 400_000)
        pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
        config = write_properties(tmp_path / "app.properties", redis_properties(
            pg_server, pg_db, tmp_path, redis, "slot_oom", **{"memory.threshold.percentage": 0,
                                                              "retry.initial.delay.ms": 100,
                                                              "retry.max.delay.ms": 500}))
        cdc = CdcProcess(config, tmp_path).start()
        try:
            pg_server.execute("INSERT INTO t SELECT i, repeat('x', 2000) FROM generate_series(1, 400) i", dbname=pg_db)
            cdc.wait_until(lambda: "OOM" in cdc.log() and "retrying" in cdc.log(), 30, "an OOM answer retried")
            stuck = client.xlen(TOPIC)
            assert 0 < stuck < 400 and cdc.proc.poll() is None, cdc.log()
            client.config_set("maxmemory", 0)
            cdc.wait_until(lambda: client.xlen(TOPIC) >= 400, 30, "every row once Redis has room")
            time.sleep(0.5)
        finally:
            assert cdc.terminate() == 0, cdc.log()
        assert ids_in(redis) == list(range(1, 401))
    pg_server.execute("SELECT pg_drop_replication_slot('slot_oom')", dbname=pg_db)


def test_memory_threshold_holds_writes_until_redis_has_room():
    """Redis at 90% of maxmemory with ``memory.threshold.percentage=85``: the batch waits (nothing written) until there is room."""
    from cdc_core.config import Config
    from cdc_core.sinks.redis import RedisStreamSink
    from cdc_core.spi.sink import SinkRecord

    with EmbeddedRedis({"maxmemory-policy": "noeviction"}) as redis:
        client = redis.client()
        client.config_set("maxmemory", int(int(client.info("memory")["used_memory"]) / 0.9))
        sink = RedisStreamSink(Config({"address": redis.address, "retry.initial.delay.ms": 100,
                                       "retry.max.delay.ms": 200}))
        done = threading.Event()
        thread = threading.Thread(target=lambda: (sink.write([SinkRecord("s", b"1", b"v", {})]), done.set()))
        thread.start()
        time.sleep(1.0)
        assert not done.is_set() and client.xlen("s") == 0, "wrote above the memory threshold"
        client.config_set("maxmemory", 0)
        thread.join(10)
        assert done.is_set() and client.xlen("s") == 1
        sink.close()
