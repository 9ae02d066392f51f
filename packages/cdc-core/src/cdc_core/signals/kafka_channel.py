"""The ``kafka`` signal channel: signals as records of partition 0 of ``signal.kafka.topic``, keyed by ``topic.prefix``.

A record's value is ``{"id": ..., "type": ..., "data": {...}}``; a record with another key is
meant for another connector and skipped. As in Debezium, only signals sent while the channel runs
are read, unless ``signal.kafka.consumer.offset.commit.enabled`` keeps the consumer group's
position, so signals sent while stopped run after the restart.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.config import common as c
from cdc_core.errors import ConfigError
from cdc_core.signals.config import SIGNAL_KAFKA_BOOTSTRAP, SIGNAL_KAFKA_COMMIT, SIGNAL_KAFKA_GROUP, SIGNAL_KAFKA_TOPIC
from cdc_core.signals.spi import SignalRecord
from cdc_core.stores.kafka_client import check_hosts, client_config, describe, import_kafka, new_client

_log = logging.getLogger("cdc.signals.kafka")


class KafkaSignalChannel:
    """Reads partition 0 of the signal topic without waiting; remembers its position in the group when asked to."""

    name: ClassVar[str] = "kafka"

    def __init__(self, config: Config, log: Any = None):
        self.log = log or _log
        self.connector = config.get(c.TOPIC_PREFIX)
        self.topic = config.get(SIGNAL_KAFKA_TOPIC) or f"{self.connector}-signal"
        bootstrap = config.get(SIGNAL_KAFKA_BOOTSTRAP)
        if not bootstrap:
            raise ConfigError([f"{SIGNAL_KAFKA_BOOTSTRAP.name}: is required by the kafka signal channel"])
        check_hosts(bootstrap, SIGNAL_KAFKA_BOOTSTRAP.name)
        ck = self._ck = import_kafka()
        self.commit_enabled = config.get(SIGNAL_KAFKA_COMMIT)
        given = config.subset("signal.consumer")
        conf = {"bootstrap.servers": bootstrap, "group.id": config.get(SIGNAL_KAFKA_GROUP),
                "client.id": f"{self.connector}-signals", "enable.auto.commit": False,
                "auto.offset.reset": "earliest" if self.commit_enabled else "latest",
                **client_config(given, "signal.consumer.")}
        self._consumer = new_client("Consumer", conf, "signal.consumer.", given)
        tp = ck.TopicPartition(self.topic, 0)
        start = ck.OFFSET_STORED if self.commit_enabled else self._end(tp)
        self._consumer.assign([ck.TopicPartition(self.topic, 0, start)])
        self._next: int | None = None
        self.log.info("reading signals from Kafka topic %s (key %r)", self.topic, self.connector)

    def _end(self, tp: Any) -> int:
        """The end of partition 0 now (0 if the topic does not exist yet): signals sent from now on are read."""
        try:
            return self._consumer.get_watermark_offsets(tp, timeout=10)[1]
        except self._ck.KafkaException as e:
            self.log.warning("signal topic %s: %s; reading it from its start once it exists", self.topic, describe(e))
            return 0

    def read(self) -> list[SignalRecord]:
        """The signals that arrived (never waits)."""
        out = []
        for m in self._consumer.consume(100, 0):
            err = m.error()
            if err is not None:
                if err.code() not in (self._ck.KafkaError._PARTITION_EOF, self._ck.KafkaError.UNKNOWN_TOPIC_OR_PART):
                    self.log.warning("signal topic %s: %s", self.topic, describe(err))
                continue
            self._next = m.offset() + 1
            key = m.key().decode("utf-8", "replace") if m.key() is not None else None
            if key != self.connector:
                self.log.info("signal at offset %d of %s has key %r, not this connector's %r; ignored",
                              m.offset(), self.topic, key, self.connector)
                continue
            try:
                doc = orjson.loads(m.value() or b"null")
                if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
                    raise ValueError('a signal is a JSON object with a string "type"')
            except ValueError as e:
                self.log.warning("skipping the record at offset %d of signal topic %s: %s", m.offset(), self.topic, e)
                continue
            out.append(SignalRecord(str(doc.get("id") or uuid.uuid4()), doc["type"], doc.get("data"), self.name,
                                    {"channelOffset": m.offset()}))
        return out

    def commit(self) -> None:
        """Commit the position after the dispatched signals (when offset commits are enabled)."""
        if self.commit_enabled and self._next is not None:
            self._consumer.commit(offsets=[self._ck.TopicPartition(self.topic, 0, self._next)], asynchronous=False)

    def close(self) -> None:
        """Close the consumer."""
        try:
            self._consumer.close()
        except self._ck.KafkaException as e:
            self.log.warning("closing the signal consumer failed: %s", describe(e))
