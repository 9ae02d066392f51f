"""Kafka Connect's KafkaOffsetBackingStore: offsets as records of a compacted topic, the last one per key winning.

Each record is what a Kafka Connect worker writes for a source connector: key = the JSON array
``["<connector name>", {<source partition>}]``, value = the offset's JSON object (null = deleted),
both as JsonConverter writes them with schemas off, partitioned by murmur2 of the key as the
Java producer does. So offsets move between Kafka Connect and cdc in both directions. The
connector name is ``name``, else ``topic.prefix``.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.config import common as c
from cdc_core.errors import ConfigError, OffsetStoreError
from cdc_core.stores.kafka_client import check_hosts, describe, import_kafka, new_client

log = logging.getLogger("cdc.stores.kafka_offsets")


def _key(partition: dict[str, Any]) -> bytes:
    return orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)


def record_key(connector: str, partition: dict[str, Any]) -> bytes:
    """The Kafka Connect offset record key: ``["<connector>",{partition}]``."""
    return orjson.dumps([connector, partition])


class KafkaOffsetStore:
    """Offsets in ``offset.storage.topic`` at ``bootstrap.servers``, read whole at start, appended on every commit."""

    name: ClassVar[str] = "kafka"
    class_names: ClassVar[tuple[str, ...]] = ("org.apache.kafka.connect.storage.KafkaOffsetBackingStore",)

    @classmethod
    def config_problems(cls, config: Config) -> list[str]:
        """The required properties that are missing (checked with the rest of the configuration, exit 2)."""
        return [f"{f.name}: is required by KafkaOffsetBackingStore"
                for f in (c.OFFSET_TOPIC, c.BOOTSTRAP_SERVERS) if not config.get(f)]

    def __init__(self, config: Config):
        missing = self.config_problems(config)
        if missing:
            raise ConfigError(missing)
        self.topic = config.get(c.OFFSET_TOPIC)
        bootstrap = config.get(c.BOOTSTRAP_SERVERS)
        check_hosts(bootstrap, c.BOOTSTRAP_SERVERS.name)
        self._ck = import_kafka()
        self.connector = config.get(c.NAME) or config.get(c.TOPIC_PREFIX)
        self.partitions = config.get(c.OFFSET_PARTITIONS)
        self.replication = config.get(c.OFFSET_REPLICATION)
        self._conf = {"bootstrap.servers": bootstrap, "client.id": f"{self.connector}-offsets"}
        self._offsets: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._other_names: dict[bytes, set[str]] = {}
        self._ensure_topic()
        self._read()
        self._producer = new_client("Producer", {
            **self._conf, "acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random"}, "")

    def __repr__(self) -> str:
        return f"Kafka offsets topic {self.topic} at {self._conf['bootstrap.servers']}"

    def _ensure_topic(self) -> None:
        """Create the topic as Kafka Connect does (compacted) if it does not exist."""
        from confluent_kafka.admin import NewTopic

        admin = new_client("admin", self._conf, "")
        try:
            futures = admin.create_topics([NewTopic(self.topic, self.partitions, self.replication,
                                                    config={"cleanup.policy": "compact"})], request_timeout=30)
            futures[self.topic].result(30)
            log.info("created the offsets topic %s (%d partitions, compacted)", self.topic, self.partitions)
        except self._ck.KafkaException as e:
            if e.args and getattr(e.args[0], "code", lambda: None)() != self._ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise OffsetStoreError(f"{c.OFFSET_TOPIC.name}: cannot create the offsets topic {self.topic!r} at "
                                       f"{self._conf['bootstrap.servers']}: {describe(e)}") from None

    def _read(self) -> None:
        """Read every partition of the topic to its current end; keep this connector's last offset per partition."""
        ck = self._ck
        # read_committed: with exactly once, an offset record counts only once its batch's transaction committed.
        consumer = new_client("Consumer", {**self._conf, "group.id": f"{self.connector}-offsets-reader",
                                           "isolation.level": "read_committed",
                                           "enable.auto.commit": False, "enable.partition.eof": False}, "")
        try:
            md = consumer.list_topics(self.topic, timeout=30)
            meta = md.topics.get(self.topic)
            if meta is None or meta.error is not None:
                raise OffsetStoreError(f"{c.OFFSET_TOPIC.name}: cannot read the offsets topic {self.topic!r}: "
                                       f"{describe(meta.error) if meta is not None else 'it does not exist'}")
            ends: dict[int, int] = {}
            assign = []
            for p in meta.partitions:
                low, high = consumer.get_watermark_offsets(ck.TopicPartition(self.topic, p), timeout=30)
                if high > low:
                    ends[p] = high
                    assign.append(ck.TopicPartition(self.topic, p, low))
            if not assign:
                return
            consumer.assign(assign)
            idle = 0
            while ends:
                messages = consumer.consume(1000, 0.1)
                for m in messages:
                    if m.error() is not None:
                        raise OffsetStoreError(f"cannot read the offsets topic {self.topic!r}: {describe(m.error())}")
                    self._apply(m)
                # Done with a partition once its position passed the end seen at start (control records included).
                for tp in consumer.position([ck.TopicPartition(self.topic, p) for p in ends]):
                    if tp.offset >= ends[tp.partition]:
                        ends.pop(tp.partition)
                idle = 0 if messages else idle + 1
                if idle > 300:
                    raise OffsetStoreError(f"cannot read the offsets topic {self.topic!r} to its end: nothing "
                                           f"came for 30s from partitions {sorted(ends)}")
        except ck.KafkaException as e:
            raise OffsetStoreError(f"cannot read the offsets topic {self.topic!r} at {self._conf['bootstrap.servers']}: "
                                   f"{describe(e)}") from None
        finally:
            consumer.close()

    def _apply(self, m: Any) -> None:
        """One record of the topic: another connector's is noted, this connector's replaces its partition's offset."""
        try:
            name, partition = orjson.loads(m.key() or b"null")
            if not isinstance(name, str) or not isinstance(partition, dict):
                raise ValueError
        except (ValueError, TypeError):
            log.warning("offsets topic %s: skipping a record at %d/%d whose key is not [connector, {partition}]",
                        self.topic, m.partition(), m.offset())
            return
        key = _key(partition)
        if name != self.connector:
            self._other_names.setdefault(key, set()).add(name)
            return
        if m.value() is None:
            self._offsets.pop(key, None)
            return
        try:
            offset = orjson.loads(m.value())
        except orjson.JSONDecodeError as e:
            raise OffsetStoreError(f"offsets topic {self.topic!r}: the offset of {partition} at {m.partition()}/"
                                   f"{m.offset()} is not JSON ({e}); refusing to start") from None
        if not isinstance(offset, dict):
            raise OffsetStoreError(f"offsets topic {self.topic!r}: the offset of {partition} at {m.partition()}/"
                                   f"{m.offset()} is not a JSON object; refusing to start")
        self._offsets[key] = (partition, offset)

    def get(self, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The last offset of ``partition`` under this connector's name, or None."""
        found = self._offsets.get(_key(partition))
        if found is None and self._other_names.get(_key(partition)):
            names = ", ".join(sorted(self._other_names[_key(partition)]))
            log.warning("offsets topic %s holds no offset of %s for connector %r, but does for %s: set name to that "
                        "connector's name to resume from its position (Debezium Server names its engine after the "
                        "sink type)", self.topic, partition, self.connector, names)
        return copy.deepcopy(found[1]) if found else None

    def all(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every ``(partition, offset)`` of this connector."""
        return copy.deepcopy(list(self._offsets.values()))

    def commit(self, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Produce one record per partition and wait until the broker acknowledged them all."""
        failed: list[Any] = []
        on_delivery = lambda err, msg: failed.append(err) if err is not None else None  # noqa: E731
        for partition, offset in offsets:
            self._producer.produce(self.topic, orjson.dumps(offset), record_key(self.connector, partition),
                                   on_delivery=on_delivery)
        left = self._producer.flush(60)
        if failed or left:
            why = describe(failed[0]) if failed else "not acknowledged within 60s"
            raise OffsetStoreError(f"cannot commit offsets to the offsets topic {self.topic!r}: {why}")
        for partition, offset in offsets:
            self._offsets[_key(partition)] = (copy.deepcopy(partition), copy.deepcopy(offset))

    def close(self) -> None:
        """Nothing pending: every commit was acknowledged."""
        self._producer.flush(5.0)
