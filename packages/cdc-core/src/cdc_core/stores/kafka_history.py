"""Debezium's KafkaSchemaHistory: schema history records as JSON messages on a single-partition Kafka topic.

The topic (``schema.history.internal.kafka.topic``) is created as Debezium creates it when it does
not exist: one partition, ``cleanup.policy=delete``, ``retention.ms`` = Long.MAX_VALUE,
``retention.bytes=-1``. Each record is one message without a key, its value the record's JSON (the
same document the file history writes a line of). Recovery reads the partition from its start to
the end offset it had when recovery began.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.config import common as c
from cdc_core.errors import ConfigError, SchemaHistoryError
from cdc_core.stores.kafka_client import client_config, describe, import_kafka, new_client

log = logging.getLogger("cdc.stores.kafka_history")

PREFIX = "schema.history.internal."
#: Debezium's topic settings: kept forever, never compacted.
TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(2**63 - 1), "retention.bytes": "-1"}


class KafkaSchemaHistoryStore:
    """The schema history in partition 0 of ``schema.history.internal.kafka.topic``."""

    name: ClassVar[str] = "kafka"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.storage.kafka.history.KafkaSchemaHistory",
                                              "io.debezium.relational.history.KafkaDatabaseHistory")

    @classmethod
    def config_problems(cls, config: Config) -> list[str]:
        """The required properties that are missing (checked with the rest of the configuration, exit 2)."""
        return [f"{f.name}: is required by the Kafka schema history"
                for f in (c.SCHEMA_HISTORY_KAFKA_TOPIC, c.SCHEMA_HISTORY_KAFKA_BOOTSTRAP) if not config.get(f)]

    def __init__(self, config: Config):
        missing = self.config_problems(config)
        if missing:
            raise ConfigError(missing)
        self.topic = config.get(c.SCHEMA_HISTORY_KAFKA_TOPIC)
        bootstrap = config.get(c.SCHEMA_HISTORY_KAFKA_BOOTSTRAP)
        self._ck = import_kafka()
        self.poll_s = config.get(c.SCHEMA_HISTORY_KAFKA_POLL_MS) / 1000.0
        self.attempts = config.get(c.SCHEMA_HISTORY_KAFKA_ATTEMPTS)
        self.query_s = config.get(c.SCHEMA_HISTORY_KAFKA_QUERY_MS) / 1000.0
        self.create_s = config.get(c.SCHEMA_HISTORY_KAFKA_CREATE_MS) / 1000.0
        name = config.get(c.NAME) or config.get(c.TOPIC_PREFIX) or "cdc"
        base = {"bootstrap.servers": bootstrap, "client.id": f"{name}-schemahistory"}
        self._given_producer = config.subset(PREFIX + "producer")
        self._given_consumer = config.subset(PREFIX + "consumer")
        self._producer_conf = {**base, "acks": "all",
                               **client_config(self._given_producer, PREFIX + "producer.")}
        self._consumer_conf = {**base, "group.id": f"{name}-schemahistory", "enable.auto.commit": False,
                               "enable.partition.eof": True,
                               **client_config(self._given_consumer, PREFIX + "consumer.")}
        self._producer: Any = None
        self._topic_ready = False

    def __repr__(self) -> str:
        return f"Kafka topic {self.topic}:0 at {self._producer_conf['bootstrap.servers']}"

    # -- writing -------------------------------------------------------------------------------

    def _ensure_topic(self) -> None:
        """Create the topic as Debezium does if it does not exist (an existing one is used as it is)."""
        from confluent_kafka.admin import NewTopic

        admin = new_client("admin", self._producer_conf, PREFIX + "producer.", self._given_producer)
        try:
            futures = admin.create_topics([NewTopic(self.topic, 1, config=TOPIC_CONFIG)],
                                          request_timeout=self.create_s)
            futures[self.topic].result(self.create_s)
            log.info("created the schema history topic %s (1 partition, retention infinite)", self.topic)
        except self._ck.KafkaException as e:
            if e.args and getattr(e.args[0], "code", lambda: None)() != self._ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise SchemaHistoryError(f"cannot create the schema history topic {self.topic!r} "
                                         f"({c.SCHEMA_HISTORY_KAFKA_TOPIC.name}): {describe(e, self._producer_conf)}") from None
        self._topic_ready = True

    def append(self, record: dict[str, Any]) -> None:
        """Produce one record to partition 0 and wait until the broker acknowledged it."""
        if not self._topic_ready:
            self._ensure_topic()
        if self._producer is None:
            self._producer = new_client("Producer", self._producer_conf, PREFIX + "producer.", self._given_producer)
        failed: list[Any] = []
        self._producer.produce(self.topic, orjson.dumps(record), None, partition=0,
                               on_delivery=lambda err, msg: failed.append(err) if err is not None else None)
        left = self._producer.flush()
        if failed or left:
            why = describe(failed[0], self._producer_conf) if failed else "not acknowledged"
            raise SchemaHistoryError(f"cannot append to the schema history topic {self.topic!r}: {why}")

    # -- reading -------------------------------------------------------------------------------

    def _consumer(self) -> Any:
        return new_client("Consumer", self._consumer_conf, PREFIX + "consumer.", self._given_consumer)

    def _bounds(self, consumer: Any) -> tuple[int, int] | None:
        """(low, high) offsets of partition 0, or None if the topic does not exist."""
        TopicPartition = self._ck.TopicPartition
        try:
            md = consumer.list_topics(self.topic, timeout=self.query_s)
        except self._ck.KafkaException as e:
            raise SchemaHistoryError(f"cannot reach the schema history topic {self.topic!r} at "
                                     f"{self._consumer_conf['bootstrap.servers']}: {describe(e, self._consumer_conf)}") from None
        meta = md.topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return None
        if len(meta.partitions) != 1:
            log.warning("the schema history topic %s should have one partition but has %d; reading partition 0",
                        self.topic, len(meta.partitions))
        try:
            return consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=self.query_s)
        except self._ck.KafkaException as e:
            raise SchemaHistoryError(f"cannot read the end of the schema history topic {self.topic!r}: "
                                     f"{describe(e, self._consumer_conf)}") from None

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record from the start of partition 0 to the end offset seen when recovery began."""
        consumer = self._consumer()
        try:
            bounds = self._bounds(consumer)
            if bounds is None or bounds[1] <= bounds[0]:
                return
            low, high = bounds
            consumer.assign([self._ck.TopicPartition(self.topic, 0, low)])
            last, empty = low - 1, 0
            while last < high - 1:
                if empty > self.attempts:
                    raise SchemaHistoryError(
                        f"the schema history topic {self.topic!r} could not be read to its end (offset {high}) in "
                        f"{self.attempts} polls; consider raising {c.SCHEMA_HISTORY_KAFKA_POLL_MS.name}")
                messages = consumer.consume(500, self.poll_s)
                got = 0
                for m in messages:
                    if m.error() is not None:
                        if m.error().code() == self._ck.KafkaError._PARTITION_EOF:
                            continue
                        raise SchemaHistoryError(f"cannot read the schema history topic {self.topic!r}: "
                                                 f"{describe(m.error(), self._consumer_conf)}")
                    if m.offset() <= last or m.offset() >= high:
                        continue
                    last, got = m.offset(), got + 1
                    if m.value() is None:
                        log.warning("skipping a null record at offset %d of the schema history topic %s", m.offset(), self.topic)
                        continue
                    try:
                        yield orjson.loads(m.value())
                    except orjson.JSONDecodeError as e:
                        raise SchemaHistoryError(f"the schema history topic {self.topic!r} is corrupt at offset "
                                                 f"{m.offset()}: {e}") from None
                empty = 0 if got else empty + 1
        finally:
            consumer.close()

    def exists(self) -> bool:
        """True if the topic exists and holds at least one record."""
        consumer = self._consumer()
        try:
            bounds = self._bounds(consumer)
        finally:
            consumer.close()
        return bounds is not None and bounds[1] > bounds[0]

    def close(self) -> None:
        """Flush and let the producer go (every append was already acknowledged)."""
        if self._producer is not None:
            self._producer.flush(5.0)
            self._producer = None
