"""Debezium's state in Kafka: KafkaSchemaHistory, KafkaOffsetBackingStore and the Kafka signal channel, through ``cdc run``.

Runs on Tansu (memory storage) unless ``CDC_TEST_KAFKA_BOOTSTRAP`` names a real Apache Kafka.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from brokers.kafka import consume, create_topic, kafka, partitions, unique_topic  # noqa: F401 - fixture
from cdc_process import CdcProcess, run_cli, server_properties, write_properties
from mariadb_cdc import mariadb_properties

pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (uv sync --all-extras)")

KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"
KAFKA_OFFSETS = "org.apache.kafka.connect.storage.KafkaOffsetBackingStore"


def start(props: dict, workdir: Path) -> CdcProcess:
    """Write the configuration and start ``cdc run``."""
    workdir.mkdir(parents=True, exist_ok=True)
    return CdcProcess(write_properties(workdir / "app.properties", props), workdir).start()


def rows(cdc: CdcProcess, topic: str) -> list[dict]:
    """The ``after`` of every create or snapshot read event on ``topic``."""
    return [e["value"]["payload"]["after"] for e in cdc.events(topic)
            if e["value"] is not None and e["value"]["payload"]["op"] in ("c", "r")]


def test_schema_history_in_kafka_survives_a_restart(mariadb_server, mariadb_db, kafka, tmp_path):
    """DDL while streaming goes to the history topic; after a restart the binlog written meanwhile is read with the right columns."""
    history_topic = unique_topic("schemahistory")
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)", mariadb_db)
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{
        "schema.history.internal": KAFKA_HISTORY,
        "schema.history.internal.kafka.topic": history_topic,
        "schema.history.internal.kafka.bootstrap.servers": kafka.bootstrap,
        "schema.history.internal.kafka.recovery.poll.interval.ms": 200,
        "schema.history.internal.producer.key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
        "schema.history.internal.consumer.session.timeout.ms": 10000,
    })
    del props["debezium.source.schema.history.internal.file.filename"]
    topic = f"dbserver1.{mariadb_db}.t"
    cdc = start(props, tmp_path)
    try:
        mariadb_server.execute("INSERT INTO t VALUES (1, 10)", mariadb_db)
        cdc.wait_until(lambda: len(rows(cdc, topic)) == 1, what="the first insert")
        mariadb_server.execute(["ALTER TABLE t ADD COLUMN b VARCHAR(10)", "INSERT INTO t VALUES (2, 20, 'two')"],
                               mariadb_db)
        cdc.wait_until(lambda: len(rows(cdc, topic)) == 2, what="the insert after the DDL")
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert not (tmp_path / "history.dat").exists() and not list(tmp_path.glob("*history*"))
    # While stopped: a row of the current shape, then another DDL and a row of the new shape.
    mariadb_server.execute(["INSERT INTO t VALUES (3, 30, 'three')", "ALTER TABLE t DROP COLUMN a",
                            "ALTER TABLE t ADD COLUMN c INT", "INSERT INTO t VALUES (4, 'four', 44)"], mariadb_db)
    cdc = start(props, tmp_path)
    try:
        cdc.wait_until(lambda: len(rows(cdc, topic)) == 4, what="the rows written while stopped")
    finally:
        assert cdc.terminate() == 0, cdc.log()
    after = rows(cdc, topic)
    assert after == [{"id": 1, "a": 10}, {"id": 2, "a": 20, "b": "two"}, {"id": 3, "a": 30, "b": "three"},
                     {"id": 4, "b": "four", "c": 44}]
    # The topic: one partition, kept forever; each record Debezium's history record.
    assert partitions(kafka.bootstrap, history_topic) == 1
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    configs = admin.describe_configs([ConfigResource("topic", history_topic)])
    settings = {k: v.value for k, v in next(iter(configs.values())).result(10).items()}
    assert settings["cleanup.policy"] == "delete"
    assert settings["retention.ms"] in ("-1", str(2**63 - 1)) and settings["retention.bytes"] == "-1"
    records = [orjson.loads(m.value()) for m in consume(kafka.bootstrap, history_topic)]
    assert {"source", "position", "databaseName", "ddl", "tableChanges"} <= set(records[0])
    ddls = [r["ddl"] for r in records]
    assert any("ADD COLUMN b" in d for d in ddls) and any("ADD COLUMN c" in d for d in ddls), ddls


def _ids(cdc: CdcProcess, topic: str) -> list[int]:
    return [e["key"]["payload"]["id"] for e in cdc.events(topic) if e["value"] is not None]


def _run_until(props: dict, workdir: Path, topic: str, n: int) -> CdcProcess:
    """Run ``cdc run`` until ``topic`` has ``n`` events, then stop it cleanly."""
    cdc = start(props, workdir)
    try:
        cdc.wait_events(topic, n, timeout=60)
        time.sleep(0.5)  # a duplicate would show up now
    finally:
        assert cdc.terminate() == 0, cdc.log()
    return cdc


def test_offsets_in_kafka_connect_format_and_the_way_back_to_a_file(pg_server, pg_db, kafka, tmp_path):
    """A Kafka Connect offset record is the start position; ``cdc offsets copy`` moves offsets Kafka -> file -> Kafka with no change lost or repeated."""
    from confluent_kafka import Producer

    prefix = unique_topic("pgo").replace("-", "_")
    offsets_topic = unique_topic("connect-offsets")
    table_topic = f"{prefix}.public.o"
    pg_server.execute("CREATE TABLE o (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO o SELECT generate_series(1, 50)", dbname=pg_db)
    file_props = server_properties(pg_server, pg_db, tmp_path, **{"topic.prefix": prefix, "slot.name": "oslot",
                                                                  "name": "inventory-connector"})
    kafka_props = {k: v for k, v in file_props.items() if k != "debezium.source.offset.storage.file.filename"}
    kafka_props.update({
        "debezium.source.offset.storage": KAFKA_OFFSETS,
        "debezium.source.offset.storage.topic": offsets_topic,
        "debezium.source.offset.storage.partitions": 5,
        "debezium.source.offset.storage.replication.factor": 1,
        "debezium.source.bootstrap.servers": kafka.bootstrap,
    })
    file_config = write_properties(tmp_path / "file.properties", file_props)
    kafka_config = write_properties(tmp_path / "kafka.properties", kafka_props)

    # 1. A first run with file offsets; then the position is written to Kafka as a Kafka Connect worker would.
    _run_until(file_props, tmp_path, table_topic, 50)
    stored = orjson.loads((tmp_path / "offsets.json").read_bytes())["offsets"]
    assert len(stored) == 1 and stored[0]["partition"] == {"server": prefix}
    create_topic(kafka.bootstrap, offsets_topic, 5, {"cleanup.policy": "compact"})
    connect = Producer({"bootstrap.servers": kafka.bootstrap, "partitioner": "murmur2_random", "acks": "all"})
    key = orjson.dumps(["inventory-connector", {"server": prefix}])
    connect.produce(offsets_topic, orjson.dumps({"lsn": 1}), orjson.dumps(["another-connector", {"server": prefix}]))
    connect.produce(offsets_topic, orjson.dumps(stored[0]["offset"]), key)
    assert connect.flush(15) == 0
    (tmp_path / "offsets.json").unlink()

    # 2. Kafka offsets: the run starts at that position (no new snapshot) and commits Kafka Connect records.
    pg_server.execute("INSERT INTO o SELECT generate_series(51, 60)", dbname=pg_db)
    cdc = _run_until(kafka_props, tmp_path, table_topic, 60)
    assert _ids(cdc, table_topic) == list(range(1, 61))
    assert not (tmp_path / "offsets.json").exists()
    records = [m for m in consume(kafka.bootstrap, offsets_topic) if m.key() == key]
    last = orjson.loads(records[-1].value())
    assert last["lsn"] > stored[0]["offset"]["lsn"]
    shown = run_cli("offsets", "show", str(kafka_config))
    assert shown.returncode == 0, shown.stderr
    assert orjson.loads(shown.stdout) == [{"partition": {"server": prefix}, "offset": last}]

    # 3. Back to a file, then to Kafka again: each time no change lost or repeated.
    for config, props, (first, end) in ((file_config, file_props, (61, 70)), (kafka_config, kafka_props, (71, 80))):
        other = kafka_config if config == file_config else file_config
        done = run_cli("offsets", "copy", str(other), str(config))
        assert done.returncode == 0, done.stdout + done.stderr
        pg_server.execute(f"INSERT INTO o SELECT generate_series({first}, {end})", dbname=pg_db)
        cdc = _run_until(props, tmp_path, table_topic, end)
        assert _ids(cdc, table_topic) == list(range(1, end + 1))


def test_execute_snapshot_signal_through_kafka_runs_a_read_only_incremental_snapshot(pg_server, pg_db, kafka, tmp_path):
    """An execute-snapshot record keyed by topic.prefix on the signal topic snapshots the table; another key is ignored."""
    from confluent_kafka import Producer
    from test_postgres_incremental_readonly import _read_only_user

    rows_count = 3000
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)", dbname=pg_db)
    pg_server.execute(f"INSERT INTO items SELECT g, g FROM generate_series(1, {rows_count}) g", dbname=pg_db)
    user = _read_only_user(pg_server, pg_db)
    prefix = unique_topic("pgs").replace("-", "_")
    signal_topic = unique_topic("signals")
    create_topic(kafka.bootstrap, signal_topic, 1)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "topic.prefix": prefix, "slot.name": "sigslot", "slot.drop.on.stop": "true", "database.user": user,
        "snapshot.mode": "no_data", "read.only": "true", "table.include.list": "public.items",
        "incremental.snapshot.chunk.size": 500, "signal.enabled.channels": "kafka",
        "signal.kafka.topic": signal_topic, "signal.kafka.bootstrap.servers": kafka.bootstrap,
        "signal.consumer.client.rack": "r1"})
    topic = f"{prefix}.public.items"
    cdc = start(props, tmp_path)
    try:
        cdc.wait_until(lambda: "reading signals from Kafka topic" in cdc.log() and "streaming" in cdc.log(),
                       what="the signal channel and the stream")
        signal = {"type": "execute-snapshot", "data": {"data-collections": ["public.items"], "type": "incremental"}}
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(signal_topic, orjson.dumps({"id": "not-mine", **signal}), b"another_connector")
        producer.produce(signal_topic, orjson.dumps({"id": "snap-1", **signal}), prefix.encode())
        assert producer.flush(15) == 0
        cdc.wait_events(topic, rows_count, timeout=60)
        time.sleep(0.5)
        events = cdc.events(topic)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert sorted(e["key"]["payload"]["id"] for e in events) == list(range(1, rows_count + 1))
    assert {e["value"]["payload"]["op"] for e in events} == {"r"}
    assert "'another_connector'" in cdc.log()


def test_missing_kafka_state_properties_are_configuration_errors(tmp_path):
    """Kafka history, offsets or signals without their topic or brokers: ``cdc validate`` names each property (exit 2)."""
    props = {
        "debezium.sink.type": "file", "debezium.sink.file.dir": str(tmp_path),
        "debezium.source.connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "debezium.source.database.hostname": "localhost", "debezium.source.database.user": "u",
        "debezium.source.database.server.id": 1, "debezium.source.topic.prefix": "p",
        "debezium.source.schema.history.internal": KAFKA_HISTORY,
        "debezium.source.offset.storage": KAFKA_OFFSETS, "debezium.source.offset.storage.topic": "offsets",
        "debezium.source.signal.enabled.channels": "kafka",
    }
    done = run_cli("validate", str(write_properties(tmp_path / "app.properties", props)))
    assert done.returncode == 2, done.stdout + done.stderr
    for name in ("schema.history.internal.kafka.topic", "schema.history.internal.kafka.bootstrap.servers",
                 "bootstrap.servers: is required by KafkaOffsetBackingStore", "signal.kafka.bootstrap.servers"):
        assert f"debezium.source.{name}" in done.stderr, done.stderr
