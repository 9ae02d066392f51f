"""The RabbitMQ sink: Debezium Server's ``rabbitmq`` sink on pika (imported only when configured).

Each record goes to ``exchange`` (the topic's name when unset) with a routing key from
``routingKey.source``; a batch is acknowledged once the broker confirmed every message (publisher
confirms), gathered in one go rather than one round-trip per message. A batch's AMQP frames
(Basic.Publish, content header, body) are made here, the method frame once per exchange and
routing key, and handed to pika's connection as one buffer rather than one socket send per frame.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import threading
import time
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import ConfigError, SinkError
from cdc_core.sinks.retry import Backoff, TransientSinkError
from cdc_core.spi.sink import SinkRecord

P = "debezium.sink.rabbitmq."
C = "connection."

# Debezium Server's own properties.
EXCHANGE = ConfigField("exchange", "string", "", doc="The exchange; unset or empty: the topic's name.")
ROUTING_KEY = ConfigField("routingKey", "string", "", doc="The routing key when routingKey.source is static.")
ROUTING_KEY_SOURCE = ConfigField("routingKey.source", "enum", None, allowed=("static", "topic", "key"),
                                 doc="static, topic (the topic's name) or key (the record's key).")
ROUTING_KEY_FROM_TOPIC_NAME = ConfigField("routingKeyFromTopicName", "boolean", False,
                                          doc="Deprecated: routingKey.source=topic.")
AUTO_CREATE_ROUTING_KEY = ConfigField("autoCreateRoutingKey", "boolean", False,
                                      doc="Declare a queue named after each routing key.")
ROUTING_KEY_DURABLE = ConfigField("routingKeyDurable", "boolean", True, doc="Declare those queues durable.")
DELIVERY_MODE = ConfigField("deliveryMode", "int", 2, minimum=1, maximum=2, doc="1 transient, 2 persistent.")
ACK_TIMEOUT = ConfigField("ackTimeout", "int", 30000, minimum=1, doc="Wait this long (ms) for a batch's confirms.")
NULL_VALUE = ConfigField("null.value", "string", "default", doc="The body sent for a tombstone.")
# cdc's: the back-off of a failed batch (as debezium.sink.redis.retry.*); retried until it succeeds.
RETRY_INITIAL_DELAY_MS = ConfigField("retry.initial.delay.ms", "long", 300, minimum=1, doc="First retry delay.")
RETRY_MAX_DELAY_MS = ConfigField("retry.max.delay.ms", "long", 10000, minimum=1, doc="Longest retry delay.")
RETRIES = ConfigField("retries", "int", -1, minimum=-1, doc="Retries of a failed batch (-1: forever).")
# The RabbitMQ Java client's ConnectionFactoryConfigurator keys, under ``connection.``.
URI = ConfigField(C + "uri", "password", doc="amqp[s]://user:password@host:port/vhost (may hold a password).")
HOST = ConfigField(C + "host", "string", "localhost", allow_blank=False, doc="Broker host.")
PORT = ConfigField(C + "port", "int", None, minimum=1, maximum=65535, doc="Broker port (5672, 5671 with TLS).")
USERNAME = ConfigField(C + "username", "string", "guest", doc="User name.")
PASSWORD = ConfigField(C + "password", "password", "guest", doc="Password.")
VIRTUAL_HOST = ConfigField(C + "virtual.host", "string", "/", doc="Virtual host.")
CHANNEL_MAX = ConfigField(C + "connection.channel.max", "int", None, minimum=0, doc="Requested channel maximum.")
FRAME_MAX = ConfigField(C + "connection.frame.max", "int", None, minimum=0, doc="Requested frame maximum.")
HEARTBEAT = ConfigField(C + "connection.heartbeat", "int", 60, minimum=0, doc="Heartbeat (s).")
CONNECTION_TIMEOUT = ConfigField(C + "connection.timeout", "int", 60000, minimum=0, doc="TCP connect timeout (ms).")
HANDSHAKE_TIMEOUT = ConfigField(C + "handshake.timeout", "int", 10000, minimum=0, doc="AMQP handshake timeout (ms).")
SSL_ENABLED = ConfigField(C + "ssl.enabled", "boolean", False, doc="TLS.")
SSL_VALIDATE = ConfigField(C + "ssl.validate.server.certificate", "boolean", False, doc="Check the broker's certificate.")
SSL_VERIFY_HOSTNAME = ConfigField(C + "ssl.verify.hostname", "boolean", False, doc="Check the certificate's name.")
SSL_KEY_STORE = ConfigField(C + "ssl.key.store", "string", doc="Client certificate: a PEM file with key and chain.")
SSL_KEY_STORE_PASSWORD = ConfigField(C + "ssl.key.store.password", "password", doc="The PEM key's password.")
SSL_TRUST_STORE = ConfigField(C + "ssl.trust.store", "string", doc="Trusted CA certificates: a PEM file.")
#: Accepted and not used: what the Java client tunes that pika does differently or cdc does itself (reconnecting).
IGNORED = [ConfigField(C + n, t) for n, t in (
    ("shutdown.timeout", "int"), ("connection.recovery.enabled", "boolean"), ("topology.recovery.enabled", "boolean"),
    ("connection.recovery.interval", "long"), ("channel.rpc.timeout", "int"),
    ("channel.should.check.rpc.response.type", "boolean"), ("use.nio", "boolean"), ("ssl.algorithm", "string"),
    ("ssl.key.store.type", "string"), ("ssl.key.store.algorithm", "string"), ("ssl.trust.store.password", "password"),
    ("ssl.trust.store.type", "string"), ("ssl.trust.store.algorithm", "string"))]

log = logging.getLogger("cdc.sinks.rabbitmq")


def _header_value(value: Any) -> str:
    """A header value as Debezium Server's JSON header converter writes it (without the schema)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _closed_types() -> tuple[type, ...]:
    """pika's exceptions that carry the broker's reply code and text."""
    import pika.exceptions as px

    return (px.ConnectionClosed, px.ChannelClosed)


def _quiet_pika() -> None:
    """pika logs every failed connection attempt at ERROR with a traceback: the sink says it in one line instead."""
    logging.getLogger("pika").setLevel(logging.CRITICAL)


#: AMQP frame types and the frame end octet.
_FRAME_HEADER, _FRAME_BODY, _FRAME_END = 2, 3, b"\xce"
_frame_start = struct.Struct(">BHI").pack
_content_start = struct.Struct(">HxxQ").pack


class _ChannelClosed(Exception):
    """The broker closed the channel: ``code`` and ``text`` of its Channel.Close."""

    def __init__(self, code: int, text: str):
        super().__init__(f"{code} {text}")
        self.code, self.text = code, text


class RabbitMqSink:
    """Publishes each record to an exchange with publisher confirms; a batch is acknowledged once all are confirmed."""

    name: ClassVar[str] = "rabbitmq"
    fields: ClassVar[Fields] = Fields([
        EXCHANGE, ROUTING_KEY, ROUTING_KEY_SOURCE, ROUTING_KEY_FROM_TOPIC_NAME, AUTO_CREATE_ROUTING_KEY,
        ROUTING_KEY_DURABLE, DELIVERY_MODE, ACK_TIMEOUT, NULL_VALUE, RETRY_INITIAL_DELAY_MS, RETRY_MAX_DELAY_MS,
        RETRIES, URI, HOST, PORT, USERNAME, PASSWORD, VIRTUAL_HOST, CHANNEL_MAX, FRAME_MAX, HEARTBEAT,
        CONNECTION_TIMEOUT, HANDSHAKE_TIMEOUT, SSL_ENABLED, SSL_VALIDATE, SSL_VERIFY_HOSTNAME, SSL_KEY_STORE,
        SSL_KEY_STORE_PASSWORD, SSL_TRUST_STORE, *IGNORED,
    ], prefixes=[C + "client.properties.", C + "nio."])

    def __init__(self, config: Config):
        config.validate(self.fields)
        try:
            import pika  # noqa: F401 - only to say what is missing
        except ImportError:
            raise ConfigError([f"{P}{C}host: the rabbitmq sink needs pika (pip install 'cdc-core[rabbitmq]')"]) from None
        _quiet_pika()
        self.config = config
        self.exchange = config.get(EXCHANGE)
        self.routing_key = config.get(ROUTING_KEY)
        source = config.get(ROUTING_KEY_SOURCE)
        if config.get(ROUTING_KEY_FROM_TOPIC_NAME):
            log.warning("%s%s is deprecated; use %s%s=topic", P, ROUTING_KEY_FROM_TOPIC_NAME.name, P,
                        ROUTING_KEY_SOURCE.name)
            if source is None and not self.routing_key:
                source = "topic"
        self.routing_key_source = source or "static"
        self.auto_create = config.get(AUTO_CREATE_ROUTING_KEY)
        self.durable = config.get(ROUTING_KEY_DURABLE)
        self.delivery_mode = config.get(DELIVERY_MODE)
        self.ack_timeout = config.get(ACK_TIMEOUT) / 1000.0
        self.null_value = config.get(NULL_VALUE).encode()
        self.parameters = self._parameters(config)
        self._stopping = threading.Event()
        self.backoff = Backoff("rabbitmq sink", log, config.get(RETRY_INITIAL_DELAY_MS), config.get(RETRY_MAX_DELAY_MS),
                               config.get(RETRIES), self._stopping)
        self._connection: Any = None
        self._channel: Any = None
        self._declared: set[str] = set()
        self._method_frames: dict[tuple[int, str, str], bytes] = {}
        self._plain_properties: bytes | None = None
        self._closed: _ChannelClosed | None = None
        self._next_tag = 1
        self._unconfirmed: set[int] = set()
        self._nacked = 0
        self._check_host()
        try:
            self._connect()
        except TransientSinkError as e:  # the broker may come later: write() retries
            log.warning("rabbitmq sink: %s; will retry when the first batch comes", e)

    # ------------------------------------------------------------------ configuration
    def _parameters(self, config: Config) -> Any:
        """pika's connection parameters from the Java client's keys (``connection.uri`` first, as the Java client)."""
        import pika

        uri = config.get(URI)
        if uri:
            try:
                params = pika.URLParameters(uri)
            except Exception:  # noqa: BLE001 - the text may quote the password
                raise ConfigError([f"{P}{URI.name}: not an amqp:// or amqps:// URI"]) from None
        else:
            params = pika.ConnectionParameters()
        raw = dict(config)
        if not uri or raw.get(HOST.name) is not None:
            params.host = config.get(HOST)
        if not uri or raw.get(USERNAME.name) is not None or raw.get(PASSWORD.name) is not None:
            params.credentials = pika.PlainCredentials(config.get(USERNAME), config.get(PASSWORD))
        if not uri or raw.get(VIRTUAL_HOST.name) is not None:
            params.virtual_host = config.get(VIRTUAL_HOST)
        tls = config.get(SSL_ENABLED) or (uri and uri.startswith("amqps:"))
        if tls:
            params.ssl_options = pika.SSLOptions(self._ssl_context(config), params.host)
        port = config.get(PORT)
        params.port = port if port is not None else (params.port if uri else (5671 if tls else 5672))
        params.heartbeat = config.get(HEARTBEAT)
        params.socket_timeout = max(config.get(CONNECTION_TIMEOUT), 1) / 1000.0
        params.stack_timeout = max(config.get(HANDSHAKE_TIMEOUT) + config.get(CONNECTION_TIMEOUT), 1) / 1000.0
        params.blocked_connection_timeout = self.ack_timeout
        params.connection_attempts = 1
        if config.get(CHANNEL_MAX):
            params.channel_max = config.get(CHANNEL_MAX)
        if config.get(FRAME_MAX):
            params.frame_max = config.get(FRAME_MAX)
        client = {k[len(C + "client.properties."):]: str(v) for k, v in raw.items()
                  if k.startswith(C + "client.properties.")}
        params.client_properties = {"connection_name": "cdc", **client}
        return params

    @staticmethod
    def _ssl_context(config: Config) -> ssl.SSLContext:
        """TLS as the Java client's keys say: no certificate check unless ``ssl.validate.server.certificate``."""
        context = ssl.create_default_context(cafile=config.get(SSL_TRUST_STORE) or None)
        context.check_hostname = config.get(SSL_VERIFY_HOSTNAME)
        if not config.get(SSL_VALIDATE) and not config.get(SSL_TRUST_STORE):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        keystore = config.get(SSL_KEY_STORE)
        if keystore:
            try:
                context.load_cert_chain(keystore, password=config.get(SSL_KEY_STORE_PASSWORD) or None)
            except (OSError, ssl.SSLError, ValueError):
                problem = f"{P}{SSL_KEY_STORE.name}: cannot load {keystore}: not a PEM file with a key and its chain"
                raise ConfigError([problem]) from None
        return context

    def _where(self) -> str:
        return f"{self.parameters.host}:{self.parameters.port}"

    def _host_property(self) -> str:
        return P + (URI.name if self.config.get(URI) and self.config.get(HOST.name) is None else HOST.name)

    def _check_host(self) -> None:
        """A host name that does not resolve is a configuration error, not something to wait for."""
        try:
            socket.getaddrinfo(self.parameters.host, None)
        except socket.gaierror as e:
            if e.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
                raise SinkError(f"rabbitmq sink: {self._host_property()}: host {self.parameters.host!r} is unknown") from None

    # ------------------------------------------------------------------ connection
    def _connect(self) -> None:
        """Open a connection and a channel in confirm mode; declare the static routing key's queue if asked."""
        import pika
        import pika.exceptions as px

        self._disconnect()
        try:
            connection = pika.BlockingConnection(self.parameters)
        except (px.ProbableAuthenticationError, px.AuthenticationError):
            raise SinkError(f"rabbitmq sink: {self._where()} refused the credentials ({P}{USERNAME.name}, "
                            f"{P}{PASSWORD.name}): access refused") from None
        except px.ProbableAccessDeniedError:
            raise SinkError(f"rabbitmq sink: {self._where()} refused access to virtual host "
                            f"{self.parameters.virtual_host!r} ({P}{VIRTUAL_HOST.name})") from None
        except px.ConnectionClosedByBroker as e:
            if e.reply_code in (403, 530):
                raise SinkError(f"rabbitmq sink: {self._where()} refused the connection ({P}{USERNAME.name}, "
                                f"{P}{VIRTUAL_HOST.name}): {e.reply_text}") from None
            raise TransientSinkError(f"{self._where()} closed the connection: {e.reply_code} {e.reply_text}") from None
        except (px.AMQPError, OSError) as e:
            raise TransientSinkError(f"cannot connect to {self._where()}: {self._reason(e)}") from None
        self._connection = connection
        try:
            self._closed = None
            channel = connection.channel()
            impl = channel._impl  # the asynchronous channel: confirms of a whole batch, not one round-trip each
            impl.add_on_close_callback(lambda ch, reason: self._on_channel_closed(ch, reason))
            selected: list[bool] = []
            impl.confirm_delivery(ack_nack_callback=self._on_confirm, callback=lambda _frame: selected.append(True))
            self._pump(lambda: bool(selected), self.ack_timeout, "Confirm.Select")
            self._channel = channel
            self._next_tag, self._unconfirmed, self._nacked = 1, set(), 0
            self._declared.clear()
            if self.routing_key_source != "topic" and self.auto_create:
                self._declare(self.routing_key)
        except BaseException:
            self._disconnect()
            raise
        log.info("rabbitmq sink: connected to %s", self._where())

    @staticmethod
    def _reason(e: BaseException) -> str:
        """A one-line reason for a connection failure: the socket error pika nests deep inside, if any."""
        todo, seen = [e], 0
        while todo and seen < 50:
            cause = todo.pop(0)
            seen += 1
            if isinstance(cause, OSError) and cause.strerror:
                return cause.strerror
            todo += [a for a in cause.args if isinstance(a, BaseException)]
            todo += [getattr(cause, "exception", None)] if isinstance(getattr(cause, "exception", None),
                                                                     BaseException) else []
            todo += [x for x in getattr(cause, "exceptions", None) or () if isinstance(x, BaseException)]
        if isinstance(e, _closed_types()) and getattr(e, "reply_code", None):
            return f"{e.reply_code} {e.reply_text}"
        return f"{type(e).__name__} {e}".strip()

    def _disconnect(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except Exception as e:  # noqa: BLE001 - a broken connection is being dropped anyway
                log.debug("rabbitmq sink: closing the connection: %s", e)

    def _on_channel_closed(self, channel: Any, reason: BaseException) -> None:
        """Remember why the broker closed the current channel (an old channel's closing is of no interest)."""
        if self._connection is None or (self._channel is not None and channel is not self._channel._impl):
            return
        code = getattr(reason, "reply_code", 0)
        self._closed = _ChannelClosed(code, getattr(reason, "reply_text", str(reason)))

    def _on_confirm(self, frame: Any) -> None:
        """Basic.Ack or Basic.Nack, of one delivery tag or (``multiple``) of every tag up to it."""
        method = frame.method
        tag = method.delivery_tag
        done = {t for t in self._unconfirmed if t <= tag} if method.multiple else {tag} & self._unconfirmed
        self._unconfirmed -= done
        if method.NAME == "Basic.Nack":
            self._nacked += len(done)

    def _pump(self, ready: Any, timeout: float, what: str) -> None:
        """Process the connection's I/O until ``ready()``, the channel closes, or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self._closed is not None:
                raise self._closed
            left = deadline - time.monotonic()
            if left <= 0:
                raise TransientSinkError(f"no answer to {what} from {self._where()} within {timeout * 1000:.0f} ms "
                                         f"({P}{ACK_TIMEOUT.name})")
            self._wait(lambda: ready() or self._closed is not None, left)
        if self._closed is not None:
            raise self._closed

    def _wait(self, ready: Any, timeout: float) -> None:
        """Process the connection's I/O until ``ready()`` or ``timeout`` seconds pass, returning as soon as it is.

        ``process_data_events(time_limit=t)`` always blocks for the whole ``t`` when the awaited event is a
        callback of the asynchronous channel (a publisher confirm): every batch took at least that long.
        pika's own wait for "output flushed and one of these conditions" does what is wanted; where this pika
        has no such method, short ``process_data_events`` calls stand in.
        """
        from pika.adapters import blocking_connection as bc

        timer_context = getattr(bc, "_IoloopTimerContext", None)
        flush = getattr(self._connection, "_flush_output", None)
        if timer_context is None or flush is None:
            self._connection.process_data_events(time_limit=min(timeout, 0.01))
            return
        with timer_context(timeout, self._connection._impl) as timer:
            flush(timer.is_ready, ready)

    def _declare(self, queue: str) -> None:
        """Declare the queue named after a routing key (``autoCreateRoutingKey``), once per connection."""
        import pika.exceptions as px

        if queue in self._declared:
            return
        try:
            self._channel.queue_declare(queue, durable=self.durable)
        except px.ChannelClosedByBroker as e:
            raise SinkError(f"rabbitmq sink: cannot declare queue {queue!r} ({P}{AUTO_CREATE_ROUTING_KEY.name}, "
                            f"{P}{ROUTING_KEY_DURABLE.name}): {e.reply_text}") from None
        self._declared.add(queue)

    # ------------------------------------------------------------------ publishing
    def _route(self, r: SinkRecord) -> tuple[str, str]:
        """The exchange and routing key of a record, as Debezium Server chooses them."""
        exchange = self.exchange or r.topic
        if self.routing_key_source == "topic":
            return exchange, r.topic
        if self.routing_key_source == "key":
            return exchange, r.key.decode("utf-8", "replace") if r.key is not None else ""
        return exchange, self.routing_key

    def write(self, batch: list[SinkRecord]) -> None:
        """Publish a batch; return once the broker confirmed every message (retrying transient failures)."""
        messages = []
        for r in batch:
            exchange, routing_key = self._route(r)
            headers = {k: _header_value(v) for k, v in r.headers.items() if v is not None} if r.headers else None
            messages.append((exchange, routing_key, r.value if r.value is not None else self.null_value, headers))
        self.backoff.call(lambda: self._publish(messages))

    def _properties(self, headers: dict[str, str] | None) -> Any:
        import pika

        return pika.BasicProperties(delivery_mode=self.delivery_mode, headers=headers or {})

    def _frames(self, channel: int, body_max: int, messages: list[tuple[str, str, bytes, Any]]) -> bytes:
        """The AMQP frames publishing ``messages`` on ``channel``, as pika's Connection._send_message makes them."""
        import pika.frame
        import pika.spec

        methods = self._method_frames
        if len(methods) > 10_000:  # routing keys made from data: keep the cache bounded
            methods.clear()
        plain = self._plain_properties
        if plain is None:
            plain = self._plain_properties = b"".join(self._properties(None).encode())
        parts = []
        for exchange, routing_key, body, headers in messages:
            method = methods.get((channel, exchange, routing_key))
            if method is None:
                method = methods[(channel, exchange, routing_key)] = pika.frame.Method(
                    channel, pika.spec.Basic.Publish(exchange=exchange, routing_key=routing_key)).marshal()
            properties = plain if headers is None else b"".join(self._properties(headers).encode())
            header = _content_start(pika.spec.BasicProperties.INDEX, len(body)) + properties
            parts += (method, _frame_start(_FRAME_HEADER, channel, len(header)), header, _FRAME_END)
            for start in range(0, len(body), body_max):
                chunk = body[start:start + body_max]
                parts += (_frame_start(_FRAME_BODY, channel, len(chunk)), chunk, _FRAME_END)
        return b"".join(parts)

    def _publish(self, messages: list[tuple[str, str, bytes, Any]]) -> None:
        import pika.exceptions as px

        try:
            if self._channel is None or not self._channel.is_open or not self._connection.is_open:
                self._connect()
            impl = self._channel._impl
            if self.routing_key_source == "topic" and self.auto_create:
                for _, routing_key, _, _ in messages:
                    self._declare(routing_key)
            connection = self._connection._impl
            emit = getattr(connection, "_output_marshaled_frames", None)
            body_max = getattr(connection, "_body_max_length", 0)
            if emit is not None and body_max > 0:
                emit([self._frames(impl.channel_number, body_max, messages)])
            else:  # a pika without those: one basic_publish per message
                for exchange, routing_key, body, headers in messages:
                    impl.basic_publish(exchange, routing_key, body, self._properties(headers))
            tags = set(range(self._next_tag, self._next_tag + len(messages)))
            self._next_tag += len(messages)
            self._unconfirmed |= tags
            nacked_before = self._nacked
            self._pump(lambda: not (self._unconfirmed & tags), self.ack_timeout, f"{len(tags)} publisher confirms")
            if self._nacked != nacked_before:
                raise TransientSinkError(f"the broker refused {self._nacked - nacked_before} of {len(tags)} "
                                         "messages (Basic.Nack)")
        except _ChannelClosed as e:
            self._disconnect()
            if e.code == 404:
                raise SinkError(f"rabbitmq sink: {e.text} (set {P}{EXCHANGE.name} to an existing exchange or "
                                f"declare it)") from None
            if e.code in (403, 406):
                raise SinkError(f"rabbitmq sink: the broker closed the channel: {e.code} {e.text}") from None
            raise TransientSinkError(f"the broker closed the channel: {e.code} {e.text}") from None
        except (px.AMQPError, OSError) as e:
            self._disconnect()
            raise TransientSinkError(f"publishing to {self._where()} failed: {self._reason(e)}") from None
        except TransientSinkError:
            self._disconnect()
            raise

    def stop(self) -> None:
        """Cut a retry wait short (the batch then fails unacknowledged)."""
        self._stopping.set()

    def close(self) -> None:
        """Close the channel and the connection."""
        self._disconnect()
