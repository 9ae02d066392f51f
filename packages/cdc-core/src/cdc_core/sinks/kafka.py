"""The Kafka sink: Debezium Server's ``debezium.sink.kafka.*`` on confluent-kafka (librdkafka), at least or exactly once.

A batch is produced whole, then flushed; ``write`` returns only when every record's delivery was
acknowledged by the broker (``acks=all``, idempotent producer), so offsets move only past records
that are durably in Kafka. Failed deliveries are retried with back-off when transient (broker down,
timeouts, leader changes) and stop the run with one line when permanent (authorization, unknown
topic with auto-creation off, a record too large). The producer compresses with lz4 unless told
otherwise (``COMPRESSION_DEFAULT``).

Exactly once (``exactly.once.support=required``, cdc_core.exactly_once): the engine calls
``begin_exactly_once`` before it reads the offsets, then hands every batch with its offsets to
``write_transaction``, which produces the records and the Kafka Connect offset records in one
transaction of a producer whose ``transactional.id`` is stable per connector; a restarted process's
``init_transactions`` fences the dead one and aborts its open transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import ConfigError, SinkError
from cdc_core.sinks.retry import Backoff, TransientSinkError
from cdc_core.spi.sink import SinkRecord
from cdc_core.stores.kafka_client import check_hosts, client_config, describe, import_kafka, new_client, redact
from cdc_core.stores.kafka_offsets import record_key

PREFIX = "debezium.sink.kafka."
WAIT_TIMEOUT = ConfigField(
    "wait.message.delivery.timeout.ms", "int", 30000, minimum=0,
    doc="How long one delivery attempt of a batch may take (0: no limit); then undelivered records are retried.")
#: The producer's compression unless the user set ``producer.compression.type`` (or librdkafka's ``.codec``).
#: lz4 where Debezium Server's producer compresses nothing: change events as JSON with schemas shrink about
#: tenfold, which takes the broker's work per event from ~8 to ~1 us and this process' from ~7 to ~3.3 us
#: (benchmarks/sink_write.py on Tansu) and the network and disk bytes with it; every Kafka consumer
#: decompresses transparently, so the records read are the same. ``producer.compression.type=none`` is
#: Debezium Server's behaviour.
COMPRESSION_DEFAULT = "lz4"
#: How long the start waits for a broker to answer before giving up (runtime error, exit 1).
CONNECT_TIMEOUT_S = 10.0

log = logging.getLogger("cdc.sinks.kafka")

#: The transactional producer's errors meaning another process took over its ``transactional.id``: stop, never fence it back.
FENCED = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"})

#: Error names that no retry can fix: the batch fails and the run stops.
PERMANENT = frozenset({
    "MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "INVALID_RECORD", "RECORD_LIST_TOO_LARGE", "INVALID_MSG_SIZE",
    "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED", "_AUTHENTICATION", "_SSL", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_OR_PART",
    "TOPIC_EXCEPTION", "INVALID_TOPIC_EXCEPTION", "_INVALID_ARG", "POLICY_VIOLATION", "_UNKNOWN_PARTITION",
    "INVALID_REQUIRED_ACKS", "UNSUPPORTED_VERSION", "UNSUPPORTED_FOR_MESSAGE_FORMAT",
})
_HINTS = {
    "_UNKNOWN_TOPIC": "the topic does not exist and the broker does not create topics (auto.create.topics.enable)",
    "UNKNOWN_TOPIC_OR_PART": "the topic does not exist and the broker does not create topics (auto.create.topics.enable)",
    "MSG_SIZE_TOO_LARGE": "raise the broker's message.max.bytes / the topic's max.message.bytes, "
                          "and debezium.sink.kafka.producer.max.request.size",
    "_MSG_SIZE_TOO_LARGE": "raise debezium.sink.kafka.producer.max.request.size (librdkafka message.max.bytes)",
}


def _headers(headers: dict[str, Any] | list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Record headers as Kafka headers: bytes as they are, any other value as its JSON text (as the file sink
    shows it); a list is already Kafka headers (a record sent again, as librdkafka handed it back)."""
    if isinstance(headers, list):
        return headers
    return [(k, v if isinstance(v, bytes) else orjson.dumps(v)) for k, v in headers.items()]


class KafkaSink:
    """Produces each record to its topic: key = the record key (murmur2 partitioning, as Java's client), null value = tombstone."""

    name: ClassVar[str] = "kafka"
    fields: ClassVar[Fields] = Fields([WAIT_TIMEOUT], prefixes=("producer.",))

    def __init__(self, config: Config):
        config.validate(self.fields)
        self._ck = import_kafka()
        given = config.subset("producer")
        if not given.get("bootstrap.servers"):
            raise ConfigError([f"{PREFIX}producer.bootstrap.servers: is required by the kafka sink"])
        check_hosts(given["bootstrap.servers"], f"{PREFIX}producer.bootstrap.servers")
        self.wait_ms = config.get(WAIT_TIMEOUT)
        self._conf: dict[str, Any] = {
            "acks": "all",
            "enable.idempotence": "true",
            "partitioner": "murmur2_random",  # the Java client's default partitioner for keyed records
            "delivery.report.only.error": True,  # no Python call per delivered record
            "message.timeout.ms": str(self.wait_ms),
            "error_cb": self._on_error,
            # One callback for the producer, not one per produce() call (each would be a reference held per record).
            "on_delivery": self._on_delivery,
        }
        mapped = client_config(given, f"{PREFIX}producer.")
        if "compression.type" not in mapped and "compression.codec" not in mapped:  # librdkafka's two names
            self._conf["compression.type"] = COMPRESSION_DEFAULT
        if str(mapped.get("acks", "all")).lower() not in ("all", "-1") and "enable.idempotence" not in mapped:
            # An explicit weaker acks asks for the Java client's behaviour: idempotence needs acks=all.
            self._conf["enable.idempotence"] = "false"
        self._conf.update(mapped)
        self._given = given
        #: The cluster the records go to (exactly once needs the offsets topic on it).
        self.bootstrap = given["bootstrap.servers"]
        #: ``(offsets topic, connector name)`` once ``begin_exactly_once`` ran; None: at least once.
        self._offsets_to: tuple[str, str] | None = None
        self._aborting = False
        #: A commit failed retriably (it may have happened): the next attempt resumes it instead of redoing the batch.
        self._committing = False
        self._stopping = threading.Event()
        self._backoff = Backoff("kafka sink", log, stopping=self._stopping)
        self._last_error = ""
        self._failures: list[tuple[Any, Any]] = []
        self._producer = self._new_producer()
        self._check_reachable()

    # -- setup ---------------------------------------------------------------------------------

    def _new_producer(self) -> Any:
        return new_client("Producer", self._conf, f"{PREFIX}producer.", self._given)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        """A record that could not be delivered (only failures are reported: delivery.report.only.error)."""
        if err is not None:
            self._failures.append((err, msg))

    def _on_error(self, err: Any) -> None:
        """librdkafka's client-wide errors (brokers down, ...): remembered for the next message, logged at debug."""
        self._last_error = describe(err, self._conf)
        log.debug("kafka sink: %s", self._last_error)

    def _check_reachable(self) -> None:
        """Fail the start (runtime error) if no broker answers within CONNECT_TIMEOUT_S."""
        timeout = CONNECT_TIMEOUT_S if not self.wait_ms else min(CONNECT_TIMEOUT_S, self.wait_ms / 1000.0)
        try:
            self._producer.list_topics(timeout=max(timeout, 1.0))
        except self._ck.KafkaException as e:
            raise SinkError(f"{PREFIX}producer.bootstrap.servers: no Kafka broker answered at "
                            f"{self._given['bootstrap.servers']} within {timeout:.0f}s ({describe(e, self._conf)})") from None

    # -- writing -------------------------------------------------------------------------------

    def write(self, batch: list[SinkRecord]) -> None:
        """Produce the batch and wait until the broker acknowledged every record; retry what failed transiently."""
        todo: list[Any] = batch

        def attempt() -> None:
            nonlocal todo
            todo = self._send(todo)
            if todo:
                raise TransientSinkError(f"{len(todo)} record(s) not delivered: {self._last_error}")

        self._backoff.call(attempt)

    def _send(self, records: list[Any]) -> list[Any]:
        """One delivery attempt; returns the records to send again (transient failures), raises on permanent ones.

        ``records`` are SinkRecords or, sent again, ``(topic, key, value, headers)`` tuples of the same shape.
        """
        try:
            return self._attempt(records)
        except self._ck.KafkaException as e:
            err = e.args[0] if e.args else None
            if err is None or not hasattr(err, "fatal") or not err.fatal():
                raise SinkError(f"kafka sink: {describe(e, self._conf)}") from None
            # A fatal producer error (e.g. the broker forgot the idempotent producer's id): a new producer
            # sends the whole attempt again (at least once; what was delivered comes twice).
            self._last_error = describe(e, self._conf)
            log.warning("kafka sink: the producer hit a fatal error (%s); starting a new one", self._last_error)
            self._producer = self._new_producer()
            return records

    def _produce_all(self, records: list[Any]) -> None:
        """Hand every record to librdkafka (waiting for room in its queue when full)."""
        produce = self._producer.produce
        # Positional arguments, and headers only where there are some: the cheapest produce() call.
        for topic, key, value, headers in records:
            try:
                if headers:
                    produce(topic, value, key, headers=_headers(headers))
                else:
                    produce(topic, value, key)
            except BufferError:  # librdkafka's queue is full: let it send, then go on
                self._produce_when_room(topic, key, value, headers)

    def _attempt(self, records: list[Any]) -> list[Any]:
        failures = self._failures = []
        producer = self._producer
        self._produce_all(records)
        deadline = time.monotonic() + self.wait_ms / 1000.0 if self.wait_ms else None
        while producer.flush(0.2) > 0:
            if deadline is not None and time.monotonic() > deadline:
                # Give up this attempt: what is still queued fails with _PURGE_* and is sent again.
                producer.purge(in_queue=True, in_flight=True, blocking=False)
                producer.flush(5.0)
                if producer.flush(0) > 0:  # still not reported: start over with a new producer
                    self._producer = self._new_producer()
                    return records
                break
        retry = []
        fatal = False
        for err, msg in failures:
            name = err.name()
            if name in PERMANENT:
                hint = _HINTS.get(name)
                raise SinkError(f"kafka sink: cannot deliver to topic {msg.topic()!r}: {describe(err, self._conf)}"
                                + (f" ({hint})" if hint else ""))
            fatal = fatal or err.fatal()
            self._last_error = describe(err, self._conf)
            retry.append((msg.topic(), msg.key(), msg.value(), msg.headers()))
        if fatal:
            log.warning("kafka sink: the producer hit a fatal error (%s); starting a new one", self._last_error)
            self._producer = self._new_producer()
        return retry

    # -- exactly once --------------------------------------------------------------------------

    def begin_exactly_once(self, offsets_topic: str, connector: str, transactional_id: str) -> None:
        """Replace the producer by a transactional one (``producer.transactional.id`` if set, else ``transactional_id``).

        Its ``init_transactions`` fences a process that used the same id before and aborts that process's
        open transaction, so the offsets topic read next holds only committed batches.
        """
        self._conf.setdefault("transactional.id", transactional_id)
        txn_ms = int(self._conf.get("transaction.timeout.ms", 60000))
        if not self.wait_ms or self.wait_ms > txn_ms:  # librdkafka: message.timeout.ms <= transaction.timeout.ms
            self._conf["message.timeout.ms"] = str(txn_ms)
        self._producer.flush(5.0)
        self._producer = self._new_transactional_producer()
        self._offsets_to = (offsets_topic, connector)
        log.info("kafka sink: exactly once, each batch and its offsets in one transaction (transactional.id %s)",
                 self._conf["transactional.id"])

    def _new_transactional_producer(self) -> Any:
        producer = self._new_producer()
        try:
            producer.init_transactions(max(CONNECT_TIMEOUT_S, (self.wait_ms or 60000) / 1000.0))
        except self._ck.KafkaException as e:
            raise SinkError(f"kafka sink: cannot start the transactional producer {self._conf['transactional.id']!r} "
                            f"at {self.bootstrap}: {describe(e, self._conf)}") from None
        return producer

    def write_transaction(self, batch: list[SinkRecord], offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Produce the batch and its offset records (Kafka Connect's format) in one transaction; return once committed."""
        assert self._offsets_to is not None, "begin_exactly_once was not called"
        topic, connector = self._offsets_to
        marks = [(topic, record_key(connector, p), orjson.dumps(o), None) for p, o in offsets]
        self._backoff.call(lambda: self._transact(batch, marks))

    def _transact(self, records: list[Any], marks: list[Any]) -> None:
        """One transaction of ``records`` then their offset records ``marks``.

        The offset records are sent only once every record was acknowledged (within the transaction): a
        broker that, unlike Kafka, lets a dead producer's open transaction through (Tansu) then shows at
        worst records again, never an offset past records it does not have.

        A commit that failed retriably (timed out: it may have happened) is resumed, never redone, so a batch
        cannot be committed twice; any other failure aborts the transaction (a new producer with the same id
        bumps the epoch) and the next attempt sends the batch again.
        """
        timeout = max(CONNECT_TIMEOUT_S, (self.wait_ms or 60000) / 1000.0)
        try:
            if self._aborting:  # the last attempt failed: a new producer with the same id aborts its transaction
                self._producer = self._new_producer()
                self._producer.init_transactions(timeout)
                self._aborting = False
            if not self._committing:
                self._failures = []
                self._producer.begin_transaction()
                self._produce_all(records)
                if records and (self._producer.flush(timeout) or self._failures):
                    raise TransientSinkError(f"{len(self._failures) or 'some'} record(s) of a transaction not "
                                             f"delivered: {self._last_error}")
                self._produce_all(marks)
                self._committing = True
            self._producer.commit_transaction(timeout)
            self._committing = False
            return
        except TransientSinkError as e:
            err, name, resume, failure = None, "", False, str(e)
        except self._ck.KafkaException as e:
            err = e.args[0] if e.args else None
            name = err.name() if hasattr(err, "name") else ""
            resume = (self._committing and hasattr(err, "retriable") and err.retriable()
                      and not err.txn_requires_abort() and not err.fatal())
            failure = describe(e, self._conf)
        self._last_error = failure
        if resume:
            raise TransientSinkError(f"the commit of a transaction of {len(records)} record(s) failed: {failure}")
        self._committing = False
        self._aborting = True  # whatever state the transaction is in, the next attempt's new producer aborts it
        for err, msg in self._failures:  # a record no retry can deliver fails the batch
            if err.name() in PERMANENT:
                hint = _HINTS.get(err.name())
                raise SinkError(f"kafka sink: cannot deliver to topic {msg.topic()!r}: {describe(err, self._conf)}"
                                + (f" ({hint})" if hint else ""))
        if name in FENCED:
            raise SinkError(f"kafka sink: another process took over transactional.id {self._conf['transactional.id']!r} "
                            f"({failure}); only one cdc may run per connector")
        raise TransientSinkError(f"the transaction of {len(records)} record(s) failed: {failure}")

    def _produce_when_room(self, topic: str, key: bytes | None, value: bytes | None, headers: Any) -> None:
        """Produce one record once librdkafka's queue has room (serving delivery reports meanwhile)."""
        kafka_headers = _headers(headers) if headers else None
        while True:
            self._producer.poll(0.05)
            try:
                self._producer.produce(topic, value, key, headers=kafka_headers)
                return
            except BufferError:
                continue

    def stop(self) -> None:
        """Cut a back-off wait short (the engine is stopping): a failing batch fails unacknowledged instead of retrying."""
        self._stopping.set()

    def close(self) -> None:
        """Flush what librdkafka still holds (nothing after an acknowledged ``write``) and let the producer go."""
        if self._aborting or self._committing:  # a transaction left open by a failed attempt (stopped while retrying): end it now
            try:
                self._producer.abort_transaction(5.0)
            except self._ck.KafkaException:
                pass  # the broker aborts it at transaction.timeout.ms, or the next start's init_transactions does
        try:
            left = self._producer.flush(5.0)
        except Exception as e:  # noqa: BLE001 - every acknowledged batch is already in Kafka
            log.warning("kafka sink: closing the producer failed: %s", redact(str(e), self._conf))
            return
        if left:
            log.warning("kafka sink: %d unacknowledged record(s) dropped at close; they come again after a restart", left)
