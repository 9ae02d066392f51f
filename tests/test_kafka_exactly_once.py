"""Exactly-once into Kafka (``exactly.once.support=required``): each batch and its offsets in one transaction.

PostgreSQL -> ``cdc run`` -> the kafka sink with KafkaOffsetBackingStore; read back with a ``read_committed``
consumer. Runs on Tansu (memory storage) unless ``CDC_TEST_KAFKA_BOOTSTRAP`` names a real Apache Kafka.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from brokers.kafka import EmbeddedKafka, consume, kafka, unique_topic  # noqa: F401 - fixture
from cdc_process import CdcProcess, run_cli, write_properties
from test_kafka_sink import ids, kafka_properties, kill_and_restart_under_writes, start

pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (uv sync --all-extras)")

KAFKA_OFFSETS = "org.apache.kafka.connect.storage.KafkaOffsetBackingStore"


def exactly_once_properties(pg, db: str, workdir: Path, bootstrap: str, prefix: str, slot: str, **extra) -> dict:
    """The kafka sink, offsets in Kafka on the same cluster, exactly once."""
    props = kafka_properties(pg, db, workdir, bootstrap, prefix, slot, **{
        "debezium.source.offset.storage": KAFKA_OFFSETS,
        "debezium.source.offset.storage.topic": f"{prefix}-offsets",
        "debezium.source.offset.storage.partitions": 1,
        "debezium.source.offset.storage.replication.factor": 1,
        "debezium.source.bootstrap.servers": bootstrap,
        "debezium.source.exactly.once.support": "required",
    })
    del props["debezium.source.offset.storage.file.filename"]
    props.update(extra)
    return props


def read_committed(bootstrap: str, topic: str, count: int, timeout: float = 60.0) -> list:
    """Every committed message of ``topic`` (librdkafka's consumers read ``read_committed`` by default)."""
    return consume(bootstrap, topic, count, timeout=timeout, quiet=2.0)


def offset_records(bootstrap: str, prefix: str) -> list[tuple[list, dict]]:
    """The committed Kafka Connect offset records of the connector: ``([name, partition], offset)``.

    At least one, then all that come within a second (the watermarks count transaction markers too, so no count).
    """
    return [(orjson.loads(m.key()), orjson.loads(m.value()))
            for m in consume(bootstrap, f"{prefix}-offsets", 1, timeout=30, quiet=1.0)]


def assert_once_in_order(messages: list, expected: int) -> None:
    """Every id 1..expected exactly once, and within each partition in the order the rows were inserted."""
    got = ids(messages)
    assert sorted(got) == list(range(1, expected + 1)), (
        f"{len(got)} messages for {expected} rows; duplicated: {sorted({i for i in got if got.count(i) > 1})[:20]}, "
        f"missing: {sorted(set(range(1, expected + 1)) - set(got))[:20]}")
    for p in {m.partition() for m in messages}:
        in_partition = ids([m for m in messages if m.partition() == p])
        assert in_partition == sorted(in_partition), f"partition {p} out of order"


def test_batches_and_offsets_commit_together_and_a_restart_resumes(pg_server, pg_db, kafka, tmp_path):
    """A clean run then a restart: every row once, the offsets topic holds committed Kafka Connect records, no offsets file."""
    pg_server.execute("CREATE TABLE e (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO e SELECT generate_series(1, 100)", dbname=pg_db)
    prefix = unique_topic("pge")
    topic = f"{prefix}.public.e"
    props = exactly_once_properties(pg_server, pg_db, tmp_path, kafka.bootstrap, prefix, "eslot",
                                    **{"debezium.source.max.batch.size": 32})
    cdc = start(props, tmp_path)
    try:
        read_committed(kafka.bootstrap, topic, 100)
        pg_server.execute("INSERT INTO e SELECT generate_series(101, 150)", dbname=pg_db)
        read_committed(kafka.bootstrap, topic, 150)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert f"transactional.id cdc-{prefix}" in cdc.log()
    assert not (tmp_path / "offsets.json").exists()
    stored = offset_records(kafka.bootstrap, prefix)
    assert stored and all(key == [prefix, {"server": prefix}] for key, _ in stored)
    assert "lsn" in stored[-1][1]

    # Rows written while stopped: the restart resumes at the committed offset (no new snapshot, nothing again).
    pg_server.execute("INSERT INTO e SELECT generate_series(151, 200)", dbname=pg_db)
    cdc = start(props, tmp_path)
    try:
        messages = read_committed(kafka.bootstrap, topic, 200)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert_once_in_order(messages, 200)
    assert offset_records(kafka.bootstrap, prefix)[-1][1]["lsn"] > stored[-1][1]["lsn"]


def test_kill_9_under_writes_then_every_change_exactly_once(pg_server, pg_db, kafka, tmp_path):
    """kill -9 of ``cdc run`` while rows are written, then a restart: a read_committed consumer sees each row once, in order."""
    pg_server.execute("CREATE TABLE k (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO k SELECT generate_series(1, 50)", dbname=pg_db)
    prefix = unique_topic("pgx")
    topic = f"{prefix}.public.k"
    # A long offset flush interval: at least once, everything since the last flush would come again after the kill;
    # exactly once commits the offsets with each batch whatever the interval.
    props = exactly_once_properties(pg_server, pg_db, tmp_path, kafka.bootstrap, prefix, "xslot",
                                    **{"debezium.source.max.batch.size": 256,
                                       "debezium.source.offset.flush.interval.ms": 60000})
    cdc = start(props, tmp_path)
    read_committed(kafka.bootstrap, topic, 50)  # the snapshot is in
    cdc, written, killed_at = kill_and_restart_under_writes(pg_server, pg_db, "k", 50, cdc, props, tmp_path)
    try:
        messages = read_committed(kafka.bootstrap, topic, written, timeout=90)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert killed_at > 50, "the kill came before any streamed change"
    got = ids(messages)
    again = len(got) - len(set(got))
    if again and isinstance(kafka, EmbeddedKafka):
        # Tansu lets the killed process's open transaction through (see the next test): never a loss, at most that batch.
        assert set(got) == set(range(1, written + 1)), f"missing: {sorted(set(range(1, written + 1)) - set(got))[:20]}"
        assert again <= 256, again
        pytest.xfail(f"Tansu: the kill landed inside a transaction, which Tansu does not abort: {again} rows twice")
    assert_once_in_order(messages, written)
    print(f"{written} rows, killed at {killed_at}, 0 duplicates")


def _validate(tmp_path: Path, **changes) -> str:
    """``cdc validate`` of a kafka-sink, Kafka-offsets, exactly-once configuration with ``changes``; its stderr (exit 2)."""
    props = {
        "debezium.sink.type": "kafka", "debezium.sink.kafka.producer.bootstrap.servers": "localhost:9092",
        "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "debezium.source.database.hostname": "localhost", "debezium.source.database.user": "u",
        "debezium.source.database.dbname": "d", "debezium.source.topic.prefix": "p",
        "debezium.source.offset.storage": KAFKA_OFFSETS, "debezium.source.offset.storage.topic": "offsets",
        "debezium.source.bootstrap.servers": "localhost:9092", "debezium.source.exactly.once.support": "required",
    }
    for name, value in changes.items():
        name = name.replace("__", ".")
        if value is None:
            props.pop(name, None)
        else:
            props[name] = value
    done = run_cli("validate", str(write_properties(tmp_path / "app.properties", props)))
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


def test_exactly_once_is_refused_where_it_cannot_be_given(tmp_path):
    """Without Kafka offsets, with another sink, on another cluster or another boundary: one line naming the property."""
    asked = "debezium.source.exactly.once.support=required"
    err = _validate(tmp_path, **{"debezium__source__offset__storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
                                 "debezium__source__offset__storage__file__filename": str(tmp_path / "o.json")})
    assert f"{asked}: needs debezium.source.offset.storage={KAFKA_OFFSETS}" in err, err
    err = _validate(tmp_path, **{"debezium__sink__type": "file", "debezium__sink__kafka__producer__bootstrap__servers": None,
                                 "debezium__sink__file__dir": str(tmp_path)})
    assert f"{asked}: needs debezium.sink.type=kafka" in err, err
    err = _validate(tmp_path, **{"debezium__source__bootstrap__servers": "127.0.0.1:9093"})
    assert f"{asked}: debezium.source.bootstrap.servers must name the kafka sink's cluster" in err, err
    err = _validate(tmp_path, **{"debezium__source__transaction__boundary": "interval"})
    assert "debezium.source.transaction.boundary=interval: only poll" in err, err
    # requested (Kafka Connect's default) is at least once: nothing refused.
    done = run_cli("validate", str(write_properties(tmp_path / "ok.properties", {
        "debezium.sink.type": "file", "debezium.sink.file.dir": str(tmp_path),
        "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "debezium.source.database.hostname": "localhost", "debezium.source.database.user": "u",
        "debezium.source.database.dbname": "d", "debezium.source.topic.prefix": "p",
        "debezium.source.offset.storage.file.filename": str(tmp_path / "o.json"),
        "debezium.source.exactly.once.support": "requested"})))
    assert "exactly.once" not in done.stderr, done.stderr


def test_a_new_process_aborts_the_open_transaction_of_the_old_one(kafka):
    """Same transactional.id: the newcomer's start aborts what the old producer sent but had not committed."""
    from confluent_kafka import KafkaException

    from cdc_core.config import Config
    from cdc_core.sinks.kafka import KafkaSink
    from cdc_core.spi.sink import SinkRecord

    prefix = unique_topic("fence")
    topic, offsets = f"{prefix}.t", f"{prefix}-offsets"
    partition = {"server": prefix}

    def sink() -> KafkaSink:
        s = KafkaSink(Config({"producer.bootstrap.servers": kafka.bootstrap}))
        s.begin_exactly_once(offsets, prefix, f"cdc-{prefix}")
        return s

    def rec(i: int) -> SinkRecord:
        return SinkRecord(topic, orjson.dumps({"payload": {"id": i}}), b"{}", {})

    old = sink()
    old.write_transaction([rec(1), rec(2)], [(partition, {"lsn": 2})])
    # The old process is mid-batch (as when killed): records 3 and 4 and their offset sent, not committed.
    old._producer.begin_transaction()
    old._produce_all([rec(3), rec(4), (offsets, orjson.dumps([prefix, partition]), orjson.dumps({"lsn": 4}), None)])
    assert old._producer.flush(10) == 0
    new = sink()  # its init_transactions fences the old producer and aborts the old open transaction
    new.write_transaction([rec(3), rec(4), rec(5)], [(partition, {"lsn": 5})])
    new.close()
    got = sorted(ids(read_committed(kafka.bootstrap, topic, 5, timeout=30)))
    if got != [1, 2, 3, 4, 5] and isinstance(kafka, EmbeddedKafka):
        pytest.xfail(f"Tansu: a new producer's InitProducerId does not abort the same transactional.id's open "
                     f"transaction, whose records then reach read_committed consumers (read {got})")
    assert got == [1, 2, 3, 4, 5]
    with pytest.raises(KafkaException):  # fenced: never committed
        old._producer.commit_transaction(5.0)
    assert sorted(ids(read_committed(kafka.bootstrap, topic, 5, timeout=30))) == [1, 2, 3, 4, 5]
    assert [o for _, o in offset_records(kafka.bootstrap, prefix)] == [{"lsn": 2}, {"lsn": 5}]
