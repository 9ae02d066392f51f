"""The Redis Streams sink: Debezium Server's ``redis`` sink (``RedisStreamChangeConsumer``).

Each record is XADDed to the stream named after its topic: ``{key: value}`` (``compact``) or
``{"key": key, "value": value, <HEADER>: ...}`` (``extended``). A batch goes out in pipelines of
``batch.size`` XADDs (no MULTI) and is acknowledged once every reply is in. Each pipeline is packed
here into one buffer of RESP commands (the record bytes as they came, no per-argument encoding) and
sent with one write; the replies are read in order on the same connection (redis-py's parser,
hiredis' where installed). Connection failures,
timeouts and Redis answering OOM (or being above ``memory.threshold.percentage`` of its memory)
are retried with back-off from ``retry.initial.delay.ms`` doubling to ``retry.max.delay.ms``, for as
long as it takes, as Debezium Server does; refused credentials and wrong key types stop at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import SinkError
from cdc_core.sinks.retry import Backoff, TransientSinkError
from cdc_core.spi.sink import SinkRecord
from cdc_core.stores.redis_connection import RedisSettings, classify, close_quietly, connect, redis_fields, \
    wait_for_replica

F = ConfigField
BATCH_SIZE = F("batch.size", "int", 500, minimum=1, doc="XADDs per pipeline.")
NULL_KEY = F("null.key", "string", "default", doc="Stands for a record without a key.")
NULL_VALUE = F("null.value", "string", "default", doc="Stands for a record without a value (a tombstone).")
MESSAGE_FORMAT = F("message.format", "enum", "compact", allowed=("compact", "extended"),
                   doc="compact: {key: value}; extended: key, value and the headers as separate fields.")
MEMORY_THRESHOLD = F("memory.threshold.percentage", "int", 85, minimum=0, maximum=100,
                     doc="Wait while used_memory is at or above this share of maxmemory (0: never).")
MEMORY_LIMIT_MB = F("memory.limit.mb", "int", 0, minimum=0,
                    doc="The memory to measure against when Redis' maxmemory is 0 (or larger).")
BUFFER_FILL_RATE = F("buffer.fill.rate", "int", 30000, minimum=0,
                     doc="Accepted (Debezium Server 2.6+'s estimate of incoming records); not used.")

#: The client name Debezium Server gives its sink connection.
CLIENT_NAME = "debezium:redis:sink"

log = logging.getLogger("cdc.sinks.redis")


def _text(b: bytes | str) -> bytes:
    return b.encode("utf-8") if isinstance(b, str) else b


def _bulk(b: bytes) -> bytes:
    """A RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(b), b)


def _xadd_prefix(stream: str, fields: int) -> bytes:
    """``XADD <stream> *`` as the start of a RESP array of ``3 + 2 * fields`` bulk strings."""
    return b"*%d\r\n$4\r\nXADD\r\n%s$1\r\n*\r\n" % (3 + 2 * fields, _bulk(stream.encode("utf-8")))


def _header_value(value: Any) -> bytes:
    """A header value as text: a string as is, anything else as JSON."""
    if isinstance(value, (bytes, str)):
        return _text(value)
    return orjson.dumps(value)


class RedisStreamSink:
    """XADDs each record to the Redis stream named after its topic; see the module docstring."""

    name: ClassVar[str] = "redis"
    fields: ClassVar[Fields] = Fields([*redis_fields(""), BATCH_SIZE, NULL_KEY, NULL_VALUE, MESSAGE_FORMAT,
                                       MEMORY_THRESHOLD, MEMORY_LIMIT_MB, BUFFER_FILL_RATE])

    def __init__(self, config: Config):
        config.validate(self.fields)
        self.settings = RedisSettings.from_config(config, "", "debezium.sink.redis.")
        self.batch_size = config.get(BATCH_SIZE)
        self.null_key = config.get(NULL_KEY).encode("utf-8")
        self.null_value = config.get(NULL_VALUE).encode("utf-8")
        self.extended = config.get(MESSAGE_FORMAT) == "extended"
        self.memory_threshold = config.get(MEMORY_THRESHOLD)
        self.memory_limit = config.get(MEMORY_LIMIT_MB) * 1024 * 1024
        self._stopping = threading.Event()
        self._backoff = Backoff("redis sink", log, self.settings.retry_initial_ms,
                                self.settings.retry_max_ms, -1, self._stopping)
        self._client: Any = None
        self._prefixes: dict[str, bytes] = {}
        try:
            self._connect()
        except TransientSinkError as e:  # unreachable at start: retried on the first batch, as Debezium Server does
            log.warning("redis sink: %s; will retry", e)

    # -- the connection ------------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> SinkError:
        """The SinkError (transient or not) for a redis-py failure; the connection is dropped if it may be broken."""
        transient, message = classify(exc, self.settings)
        self._drop()
        return TransientSinkError(message) if transient else SinkError(f"redis sink: {message}")

    def _connect(self) -> Any:
        """The connection, made if there is none; a failure classified as ``_fail`` does."""
        if self._client is None:
            try:
                self._client = connect(self.settings, CLIENT_NAME)
            except ImportError as e:
                raise SinkError(f"redis sink: {e}") from None
            except Exception as e:  # noqa: BLE001 - classified: transient, or a one-line permanent error
                raise self._fail(e) from None
        return self._client

    def _drop(self) -> None:
        """Close and forget the connection (the next delivery reconnects)."""
        if self._client is not None:
            close_quietly(self._client)
            self._client = None

    # -- writing -------------------------------------------------------------------------------

    def _fields(self, r: SinkRecord) -> dict[bytes, bytes]:
        """The stream entry of a record, in ``message.format``."""
        key = r.key if r.key is not None else self.null_key
        value = r.value if r.value is not None else self.null_value
        if not self.extended:
            return {key: value}
        out = {b"key": key, b"value": value}
        for name, header in r.headers.items():
            out[name.upper().encode("utf-8")] = _header_value(header)
        return out

    def _commands(self, records: list[SinkRecord]) -> list[tuple[str, bytes]]:
        """Each record's stream and its XADD, packed as RESP (compact entries without a dict in between)."""
        prefixes = self._prefixes
        if len(prefixes) > 10_000:  # streams named from data: keep the cache bounded
            prefixes.clear()
        out = []
        null_key, null_value = self.null_key, self.null_value
        for r in records:
            topic = r.topic
            if self.extended:
                fields = self._fields(r)
                out.append((topic, b"".join((_xadd_prefix(topic, len(fields)),
                                             *(_bulk(k) + _bulk(v) for k, v in fields.items())))))
                continue
            prefix = prefixes.get(topic)
            if prefix is None:
                prefix = prefixes[topic] = _xadd_prefix(topic, 1)
            key = r.key if r.key is not None else null_key
            value = r.value if r.value is not None else null_value
            out.append((topic, b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n" % (prefix, len(key), key, len(value), value)))
        return out

    def _memory_ok(self, client: Any) -> bool:
        """False while Redis' used memory is at or above ``memory.threshold.percentage`` of its limit."""
        if self.memory_threshold <= 0:
            return True
        info = client.info("memory")
        used, maximum = int(info.get("used_memory") or 0), int(info.get("maxmemory") or 0)
        if maximum == 0 or (self.memory_limit > 0 and maximum > self.memory_limit):
            maximum = self.memory_limit
        if maximum <= 0:
            return True
        percentage = used * 100 // maximum
        if percentage >= self.memory_threshold:
            log.info("redis sink: memory threshold reached (used_memory %d of %d bytes, %d%% >= %d%%); waiting",
                     used, maximum, percentage, self.memory_threshold)
            return False
        return True

    def _send(self, pending: list[tuple[str, bytes]]) -> None:
        """One pipeline of XADDs; removes what Redis took from ``pending``; raises if anything is left."""
        from redis import exceptions as rx

        client = self._connect()
        try:
            if not self._memory_ok(client):
                raise TransientSinkError(f"Redis at {self.settings.address} is above "
                                         f"debezium.sink.redis.memory.threshold.percentage={self.memory_threshold}")
            connection = client.connection  # the client's one connection (single_connection_client)
            connection.send_packed_command([b"".join([command for _, command in pending])], check_health=False)
            # Every reply is read, errors included, so that the connection stays in step for the next pipeline.
            replies: list[Any] = []
            read = connection.read_response
            for _ in range(len(pending)):
                try:
                    replies.append(read(disable_decoding=True))
                except rx.ResponseError as e:
                    replies.append(e)
        except (rx.RedisError, OSError) as e:
            raise self._fail(e) from None
        # Everything before the first failure is in the streams; retry from there, in order.
        for done, reply in enumerate(replies):
            if isinstance(reply, Exception):
                del pending[:done]
                stream = pending[0][0]
                transient, message = classify(reply, self.settings)
                if isinstance(reply, rx.ResponseError) and str(reply).upper().startswith("WRONGTYPE"):
                    raise SinkError(f"redis sink: key {stream!r} in Redis at {self.settings.address} is not a stream "
                                    "(WRONGTYPE); delete or rename it")
                if transient:
                    raise TransientSinkError(f"XADD to {stream!r}: {message}")
                raise SinkError(f"redis sink: XADD to {stream!r}: {message}")
        pending.clear()
        if self.settings.wait_enabled:
            try:
                wait_for_replica(client, self.settings, self._stopping)
            except (rx.RedisError, OSError) as e:
                raise self._fail(e) from None

    def write(self, batch: list[SinkRecord]) -> None:
        """XADD the batch in pipelines of ``batch.size``; return once Redis has taken every record."""
        for start in range(0, len(batch), self.batch_size):
            pending = self._commands(batch[start:start + self.batch_size])
            self._backoff.call(lambda: self._send(pending))

    def stop(self) -> None:
        """Cut a retry wait short (the engine is stopping): the batch fails unacknowledged."""
        self._stopping.set()

    def close(self) -> None:
        """Close the connection (every acknowledged record is in Redis)."""
        self._drop()
