"""The kafka sink (``debezium.sink.type=kafka``): PostgreSQL -> ``cdc run`` -> a Kafka-protocol broker -> a consumer.

Runs on Tansu (memory storage) unless ``CDC_TEST_KAFKA_BOOTSTRAP`` names a real Apache Kafka.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest

from brokers.kafka import EmbeddedKafka, consume, external_bootstrap, kafka, unique_topic  # noqa: F401 - fixture
from cdc_process import CdcProcess, server_properties, write_properties
from secrets_check import SECRET, assert_no_secret

pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (uv sync --all-extras)")

VOLATILE = ("ts_ms", "ts_us", "ts_ns")


def kafka_properties(pg, db: str, workdir: Path, bootstrap: str, prefix: str, slot: str, **extra) -> dict:
    """``cdc run`` from PostgreSQL into the kafka sink, file offsets in ``workdir``."""
    props = server_properties(pg, db, workdir, **{"topic.prefix": prefix, "slot.name": slot})
    del props["debezium.sink.file.dir"]
    props["debezium.sink.type"] = "kafka"
    props["debezium.sink.kafka.producer.bootstrap.servers"] = bootstrap
    props["debezium.sink.kafka.producer.key.serializer"] = "org.apache.kafka.common.serialization.StringSerializer"
    props["debezium.sink.kafka.producer.value.serializer"] = "org.apache.kafka.common.serialization.StringSerializer"
    props.update(extra)
    return props


def start(props: dict, workdir: Path) -> CdcProcess:
    """Write the configuration and start ``cdc run``."""
    workdir.mkdir(parents=True, exist_ok=True)
    return CdcProcess(write_properties(workdir / "app.properties", props), workdir).start()


def comparable(doc: dict) -> dict:
    """A file-sink line or a Kafka message without the processing-time fields."""
    value = doc["value"]
    if isinstance(value, dict) and isinstance(value.get("payload"), dict):
        value = {**value, "payload": {k: v for k, v in value["payload"].items() if k not in VOLATILE}}
    return {"topic": doc["topic"], "key": doc["key"], "value": value, "headers": doc["headers"]}


def as_line(m) -> dict:
    """A Kafka message as the file sink's line."""
    return {"topic": m.topic(), "key": None if m.key() is None else orjson.loads(m.key()),
            "value": None if m.value() is None else orjson.loads(m.value()),
            "headers": {k: orjson.loads(v) for k, v in (m.headers() or [])}}


def ids(messages) -> list[int]:
    """The ``id`` of each message's key."""
    return [orjson.loads(m.key())["payload"]["id"] for m in messages]


def test_every_change_once_in_order_and_as_the_file_sink_writes_it(pg_server, pg_db, kafka, tmp_path):
    """Inserts, updates, deletes and tombstones arrive once each, in order per key, byte-equal to the file sink's."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=pg_db)
    prefix = unique_topic("pgk")
    topic = f"{prefix}.public.t"
    via_kafka = start(kafka_properties(pg_server, pg_db, tmp_path / "k", kafka.bootstrap, prefix, "kslot"), tmp_path / "k")
    via_file = start(server_properties(pg_server, pg_db, tmp_path / "f", **{"topic.prefix": prefix, "slot.name": "fslot"}),
                     tmp_path / "f")
    try:
        for cdc in (via_kafka, via_file):
            cdc.wait_until(lambda c=cdc: (c.workdir / "offsets.json").exists(), what="the (empty) snapshot to complete")
        for statement in ("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g",
                          "INSERT INTO t SELECT g, 'v' || g FROM generate_series(101, 200) g",
                          "UPDATE t SET v = v || '!' WHERE id % 10 = 0", "DELETE FROM t WHERE id % 50 = 0"):
            pg_server.execute(statement, dbname=pg_db)
        expected = 200 + 20 + 4 * 2
        lines = via_file.wait_events(topic, expected)
        messages = consume(kafka.bootstrap, topic, expected, timeout=60)
    finally:
        assert via_kafka.terminate() == 0, via_kafka.log()
        assert via_file.terminate() == 0, via_file.log()
    assert len(messages) == expected, f"{len(messages)} messages, {expected} changes"
    # Once each, in order per key: the per-key sequence equals the file sink's.
    by_key: dict[int, list[dict]] = {}
    for m in sorted(messages, key=lambda m: (m.partition(), m.offset())):
        by_key.setdefault(orjson.loads(m.key())["payload"]["id"], []).append(comparable(as_line(m)))
    file_by_key: dict[int, list[dict]] = {}
    for line in lines:
        file_by_key.setdefault(line["key"]["payload"]["id"], []).append(comparable(line))
    assert by_key == file_by_key
    tombstones = [m for m in messages if m.value() is None]
    assert len(tombstones) == 4
    # One key always lands in one partition.
    assert all(len({m.partition() for m in messages if m.key() == k}) == 1 for k in {m.key() for m in messages})


def kill_and_restart_under_writes(pg_server, pg_db, table: str, written: int, cdc: CdcProcess, props: dict,
                                  tmp_path: Path) -> tuple[CdcProcess, int, int]:
    """Rows ``written + 1``... inserted 50 at a time into ``table`` while ``cdc`` is killed (kill -9) after 2 s
    and started again; returns the restarted process, the last id written, and the last one before the kill."""
    stop = threading.Event()
    last = [written]

    def writer() -> None:
        while not stop.is_set():
            pg_server.execute(f"INSERT INTO {table} SELECT generate_series({last[0] + 1}, {last[0] + 50})",
                              dbname=pg_db)
            last[0] += 50
            time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(2.0)
        cdc.kill()
        killed_at = last[0]
        cdc = start(props, tmp_path)
        time.sleep(2.0)
    finally:
        stop.set()
        thread.join()
    return cdc, last[0], killed_at


def test_kill_9_under_writes_loses_nothing(pg_server, pg_db, kafka, tmp_path):
    """kill -9 of ``cdc run`` while rows are written: after a restart every row is in Kafka; duplicates are bounded."""
    pg_server.execute("CREATE TABLE w (id int PRIMARY KEY)", dbname=pg_db)
    prefix = unique_topic("pgw")
    topic = f"{prefix}.public.w"
    props = kafka_properties(pg_server, pg_db, tmp_path, kafka.bootstrap, prefix, "wslot",
                             **{"debezium.source.max.batch.size": 256})
    cdc = start(props, tmp_path)
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
    cdc, written, _ = kill_and_restart_under_writes(pg_server, pg_db, "w", 0, cdc, props, tmp_path)
    try:
        messages = consume(kafka.bootstrap, topic, written, timeout=60)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    got = ids(messages)
    assert set(got) == set(range(1, written + 1)), f"missing: {sorted(set(range(1, written + 1)) - set(got))[:20]}"
    duplicates = len(got) - written
    # At least once: only what was produced but not yet committed when killed comes again.
    assert duplicates <= 20_000, duplicates
    print(f"{written} rows, {duplicates} duplicates after kill -9")


def test_broker_restart_mid_stream_waits_and_resumes(pg_server, pg_db, tmp_path):
    """The broker stops under the stream and comes back (empty: Tansu keeps memory only): cdc retries and goes on."""
    if external_bootstrap():
        pytest.skip("needs a broker the test may kill (the embedded Tansu)")
    broker = EmbeddedKafka().start()
    try:
        pg_server.execute("CREATE TABLE r (id int PRIMARY KEY)", dbname=pg_db)
        prefix = unique_topic("pgr")
        topic = f"{prefix}.public.r"
        props = kafka_properties(pg_server, pg_db, tmp_path, broker.bootstrap, prefix, "rslot",
                                 **{"debezium.sink.kafka.wait.message.delivery.timeout.ms": 3000})
        cdc = start(props, tmp_path)
        try:
            cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
            pg_server.execute("INSERT INTO r SELECT generate_series(1, 100)", dbname=pg_db)
            assert len(consume(broker.bootstrap, topic, 100, timeout=30)) == 100
            broker.kill()
            pg_server.execute("INSERT INTO r SELECT generate_series(101, 200)", dbname=pg_db)
            cdc.wait_until(lambda: "retrying" in cdc.log(), timeout=30, what="a retry")
            assert cdc.proc.poll() is None, cdc.log()
            broker.start()
            pg_server.execute("INSERT INTO r SELECT generate_series(201, 300)", dbname=pg_db)
            messages = consume(broker.bootstrap, topic, 200, timeout=60)
            got = set(ids(messages))
            # Tansu restarted empty: rows 101..300 (sent again after the outage, then new) are what it can hold.
            assert set(range(101, 301)) <= got, f"missing: {sorted(set(range(101, 301)) - got)[:20]}"
        finally:
            code = cdc.terminate()
        assert code == 0, cdc.log()
    finally:
        broker.stop()


@pytest.mark.parametrize("bootstrap, code, says", [
    ("no-such-host.invalid:9092", 2, "is unknown"),
    ("127.0.0.1:1", 1, "no Kafka broker answered"),
])
def test_bad_bootstrap_is_one_clear_line(pg_server, pg_db, tmp_path, bootstrap, code, says):
    """An unknown host is a configuration error (exit 2), an unreachable one a runtime error (exit 1): one line, no secret."""
    props = kafka_properties(pg_server, pg_db, tmp_path, bootstrap, "pgbad", "badslot", **{
        "debezium.sink.kafka.wait.message.delivery.timeout.ms": 3000,  # also the start's wait for a broker
        "debezium.source.database.password": SECRET,
        "debezium.sink.kafka.producer.sasl.jaas.config":
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{SECRET}";',
        "debezium.sink.kafka.producer.security.protocol": "SASL_PLAINTEXT",
        "debezium.sink.kafka.producer.sasl.mechanism": "PLAIN",
    })
    cdc = start(props, tmp_path)
    assert cdc.wait_exit(60) == code, cdc.log()
    out = cdc.log()
    assert "debezium.sink.kafka.producer.bootstrap.servers" in out and says in out, out
    assert "Traceback" not in out, out
    assert_no_secret("the output of cdc run", out)
    assert not [line for line in out.splitlines() if line.startswith("%")], out  # librdkafka's own stderr lines


def test_unknown_producer_property_is_refused_naming_it(pg_server, pg_db, tmp_path, kafka):
    """A producer property librdkafka does not know stops the start with its full name (exit 2)."""
    props = kafka_properties(pg_server, pg_db, tmp_path, kafka.bootstrap, "pgprop", "propslot",
                             **{"debezium.sink.kafka.producer.no.such.thing": "1"})
    cdc = start(props, tmp_path)
    assert cdc.wait_exit(60) == 2, cdc.log()
    assert "debezium.sink.kafka.producer.no.such.thing" in cdc.log(), cdc.log()
    assert "Traceback" not in cdc.log()


def _murmur2(data: bytes) -> int:
    """Kafka's Java murmur2 (Utils.murmur2)."""
    m, r, length = 0x5BD1E995, 24, len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = data[length - rest:]
    if rest == 3:
        h ^= tail[2] << 16
    if rest >= 2:
        h ^= tail[1] << 8
    if rest >= 1:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


@pytest.mark.parametrize("compression", [None, "none"], ids=["default-lz4", "none"])
def test_sink_headers_tombstones_partitions_and_too_large(kafka, compression):
    """Headers carried (JSON text), null values as tombstones, the Java client's partition for each key; a too large
    record is refused in one line; the same with cdc's lz4 default and with Debezium Server's no compression."""
    from brokers.kafka import create_topic

    from cdc_core.config import Config
    from cdc_core.errors import SinkError
    from cdc_core.sinks.kafka import KafkaSink
    from cdc_core.spi.sink import SinkRecord

    topic = unique_topic("direct")
    create_topic(kafka.bootstrap, topic, 6)
    props = {"producer.bootstrap.servers": kafka.bootstrap, "producer.max.request.size": 200_000}
    if compression:
        props["producer.compression.type"] = compression
    sink = KafkaSink(Config(props))
    records = [SinkRecord(topic, orjson.dumps({"id": i}), None if i % 7 == 0 else orjson.dumps({"v": i}),
                          {"h": f"x{i}", "n": i} if i % 2 else {}) for i in range(100)]
    sink.write(records)
    messages = consume(kafka.bootstrap, topic, 100)
    assert len(messages) == 100
    by_key = {m.key(): m for m in messages}
    for r in records:
        m = by_key[r.key]
        assert m.value() == r.value
        assert {k: orjson.loads(v) for k, v in (m.headers() or [])} == r.headers
        assert m.partition() == (_murmur2(r.key) & 0x7FFFFFFF) % 6, r.key
    with pytest.raises(SinkError) as e:
        sink.write([SinkRecord(topic, b"1", b"x" * 300_000, {})])
    assert "SIZE_TOO_LARGE" in str(e.value) and "\n" not in str(e.value)
    sink.close()


@pytest.mark.parametrize(("given", "used"), [
    ({}, "lz4"),
    ({"producer.compression.type": "none"}, "none"),
    ({"producer.compression.type": "zstd"}, "zstd"),
    ({"producer.compression.codec": "snappy"}, "snappy"),  # librdkafka's other name for it
])
def test_compression_is_lz4_unless_the_user_sets_it(kafka, given, used):
    """The producer compresses with lz4 by default; ``producer.compression.type`` (or ``.codec``) set by the user wins."""
    from cdc_core.config import Config
    from cdc_core.sinks.kafka import KafkaSink

    sink = KafkaSink(Config({"producer.bootstrap.servers": kafka.bootstrap, **given}))
    try:
        conf = sink._conf
        assert conf.get("compression.type", conf.get("compression.codec")) == used
        assert not ("compression.type" in conf and "compression.codec" in conf)
    finally:
        sink.close()


def test_sigterm_while_the_broker_is_down_stops_without_moving_offsets(pg_server, pg_db, tmp_path):
    """SIGTERM during the retries: a clean stop (exit 0) within one delivery attempt; the undelivered changes come
    after a restart."""
    if external_bootstrap():
        pytest.skip("needs a broker the test may kill (the embedded Tansu)")
    broker = EmbeddedKafka().start()
    try:
        pg_server.execute("CREATE TABLE s (id int PRIMARY KEY)", dbname=pg_db)
        prefix = unique_topic("pgs")
        props = kafka_properties(pg_server, pg_db, tmp_path, broker.bootstrap, prefix, "sslot",
                                 **{"debezium.sink.kafka.wait.message.delivery.timeout.ms": 2000})
        cdc = start(props, tmp_path)
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
        pg_server.execute("INSERT INTO s SELECT generate_series(1, 10)", dbname=pg_db)
        assert len(consume(broker.bootstrap, f"{prefix}.public.s", 10, timeout=30)) == 10
        broker.kill()
        pg_server.execute("INSERT INTO s SELECT generate_series(11, 20)", dbname=pg_db)
        cdc.wait_until(lambda: "retrying" in cdc.log(), timeout=30, what="a retry")
        started = time.monotonic()
        code = cdc.terminate()
        assert code == 0 and time.monotonic() - started < 15, cdc.log()
        assert "Traceback" not in cdc.log() and "stopped while retrying" in cdc.log(), cdc.log()
        # The undelivered changes were not committed: a restart (the broker back, empty) delivers them.
        broker.start()
        cdc = start(props, tmp_path)
        try:
            got = set(ids(consume(broker.bootstrap, f"{prefix}.public.s", 10, timeout=60)))
        finally:
            assert cdc.terminate() == 0, cdc.log()
        assert set(range(11, 21)) <= got, got
    finally:
        broker.stop()
