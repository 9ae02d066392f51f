"""Avro through Kafka as a Debezium Server user runs it: PostgreSQL -> ``cdc run`` (avro, kafka sink) -> a consumer.

The consumer reads each message as a Confluent Avro deserializer does: the schema id from the
frame, the schema from the registry (the test registry, or ``CDC_TEST_SCHEMA_REGISTRY_URL``), the
record with fastavro. The topic prefix has dashes, so the connector needs
``schema.name.adjustment.mode=avro`` for valid Avro names, as with Debezium and Confluent's converter.
"""

from __future__ import annotations

import pytest

from avro_reader import decode
from brokers.kafka import consume, kafka, unique_topic  # noqa: F401 - fixture
from brokers.schema_registry import TestSchemaRegistry, external_registry_url
from test_kafka_sink import kafka_properties, start

pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (uv sync --all-extras)")


def test_avro_keys_and_values_through_kafka(pg_server, pg_db, kafka, tmp_path):  # noqa: F811
    """Snapshot, insert, update, delete and tombstone arrive as Confluent-framed Avro a registry-aware reader decodes."""
    pg_server.execute("CREATE TABLE av (id int PRIMARY KEY, amount numeric(6,2), note text, data bytea)", dbname=pg_db)
    pg_server.execute("INSERT INTO av VALUES (1, 1.25, 'snap', '\\x01')", dbname=pg_db)
    registry = None
    url = external_registry_url()
    if url is None:
        registry = TestSchemaRegistry().start()
        url = registry.url
    prefix = unique_topic("av")
    topic = f"{prefix}.public.av"
    props = kafka_properties(pg_server, pg_db, tmp_path, kafka.bootstrap, prefix, "avslot", **{
        "debezium.format.key": "avro", "debezium.format.value": "avro",
        "debezium.format.schema.registry.url": url,
        "debezium.source.schema.name.adjustment.mode": "avro"})
    cdc = start(props, tmp_path)
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot to complete")
        pg_server.execute("INSERT INTO av VALUES (2, -3.5, NULL, NULL)", dbname=pg_db)
        pg_server.execute("UPDATE av SET note = 'changed' WHERE id = 1", dbname=pg_db)
        pg_server.execute("DELETE FROM av WHERE id = 2", dbname=pg_db)
        messages = consume(kafka.bootstrap, topic, 5, timeout=60)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    try:
        _check(messages, url, topic, registry)
    finally:
        if registry is not None:
            registry.stop()


def _check(messages, url, topic, registry) -> None:
    assert len(messages) == 5, [m.value() for m in messages]
    rows = []
    for m in sorted(messages, key=lambda m: m.offset()):
        key = decode(url, m.key())[1]
        value = None if m.value() is None else decode(url, m.value())[1]
        rows.append((key["id"], None if value is None else value["op"],
                     None if value is None or value["after"] is None else str(value["after"]["amount"])))
    assert rows == [(1, "r", "1.25"), (2, "c", "-3.50"), (1, "u", "1.25"), (2, "d", None), (2, None, None)]
    if registry is not None:
        assert {f"{topic}-key", f"{topic}-value"} <= set(registry.subjects)
