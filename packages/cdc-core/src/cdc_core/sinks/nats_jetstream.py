"""The NATS JetStream sink: Debezium Server's ``nats-jetstream`` sink on nats-py (imported only when configured).

Each record's value is published to the subject named after its topic; a tombstone (null value) is
not published, as in Debezium Server. nats-py runs on asyncio, so the sink owns one event loop in a
thread of its own; ``write`` publishes a whole batch in order without waiting in between and returns
once every record's PubAck came back (``async.enabled=false``: one record at a time). The batch's
HPUB commands are made here (the value bytes as they came, the headers rendered once) and handed to
nats-py's outgoing buffer in large pieces, then flushed once; the PubAcks are counted against one
waiter per batch rather than a future per record.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import socket
import ssl
import threading
import uuid
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import ConfigError, SinkError
from cdc_core.sinks.retry import Backoff, TransientSinkError
from cdc_core.spi.sink import SinkRecord

T = TypeVar("T")
P = "debezium.sink.nats-jetstream."

URL = ConfigField("url", "string", required=True, allow_blank=False, doc="NATS server URL(s), comma-separated.")
STREAM_NAME = ConfigField("stream-name", "string", "DebeziumStream", allow_blank=False,
                          doc="The stream created when create-stream is true.")
CREATE_STREAM = ConfigField("create-stream", "boolean", False, doc="Create the stream at start.")
SUBJECTS = ConfigField("subjects", "list", ["*.*.*"], doc="Subjects of the created stream, comma-separated.")
STORAGE = ConfigField("storage", "enum", "memory", allowed=("memory", "file"), doc="Storage of the created stream.")
AUTH_JWT = ConfigField("auth.jwt", "string", doc="User JWT (with auth.seed).")
AUTH_SEED = ConfigField("auth.seed", "password", doc="NKey seed signing the server's nonce (with auth.jwt).")
AUTH_USER = ConfigField("auth.user", "string", doc="User name (with auth.password).")
AUTH_PASSWORD = ConfigField("auth.password", "password", doc="Password (with auth.user).")
TLS_KEYSTORE = ConfigField("auth.tls.keystore", "string", doc="Client certificate: a PEM file with key and chain.")
TLS_KEYSTORE_PASSWORD = ConfigField("auth.tls.keystore.password", "password", doc="Accepted; see auth.tls.password.")
TLS_PASSWORD = ConfigField("auth.tls.password", "password", doc="Password of the PEM file's private key.")
ASYNC_ENABLED = ConfigField("async.enabled", "boolean", True, doc="Publish a batch without waiting between records.")
ASYNC_TIMEOUT_MS = ConfigField("async.timeout.ms", "long", 5000, minimum=1, doc="Wait this long for a batch's PubAcks.")
SYNC_RETRIES = ConfigField("sync.retries", "int", 5, minimum=-1, doc="Retries of a failed batch (-1: forever).")
SYNC_RETRY_INTERVAL_MS = ConfigField("sync.retry.interval.ms", "long", 1000, minimum=1, doc="First retry delay.")
SYNC_RETRY_MAX_INTERVAL_MS = ConfigField("sync.retry.max.interval.ms", "long", 60000, minimum=1, doc="Longest delay.")
SYNC_RETRY_BACKOFF_MULTIPLIER = ConfigField("sync.retry.backoff.multiplier", "double", 2.0, minimum=1.0,
                                            doc="Accepted; the delay always doubles.")

#: JetStream API error codes that no retry can fix (Debezium Server's list): stream not found, bad
#: request, JetStream not enabled for the account, JetStream not enabled.
PERMANENT_API_CODES = frozenset({10059, 10003, 10039, 10076})
#: The stream already exists with another configuration (create-stream on an existing stream).
STREAM_NAME_IN_USE = 10058

log = logging.getLogger("cdc.sinks.nats-jetstream")


def _sign(seed: str, nonce: str) -> bytes:
    """The server's nonce signed with the NKey seed (JWT authentication, as Java's staticCredentials)."""
    import base64

    import nkeys

    key = nkeys.from_seed(bytearray(seed.strip().encode()))
    try:
        return base64.b64encode(key.sign(nonce.encode()))
    finally:
        key.wipe()


async def _cancel_tasks() -> None:
    """Cancel every other task of the running loop and wait for them to end."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _Nack(Exception):
    """A publish answered with an error (``code``/``err_code`` from the server) or by no stream at all."""

    def __init__(self, subject: str, code: int = 0, err_code: int = 0, description: str = "no stream answered"):
        super().__init__(description)
        self.subject, self.code, self.err_code, self.description = subject, code, err_code, description


def _header_value(value: Any) -> str:
    """A header value as Debezium Server's JSON header converter writes it (without the schema)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


#: What nats-py accepts as a header name; values have CR and LF replaced by spaces (as nats-py does).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NEWLINES = str.maketrans({"\r": " ", "\n": " "})
#: Bytes of HPUB commands per piece handed to nats-py's outgoing buffer.
CHUNK_BYTES = 1 << 20


def _headers_block(headers: dict[str, Any], msg_id: str) -> bytes:
    """The NATS/1.0 header block of one message: its record headers, then ``Nats-Msg-Id``."""
    lines = [b"NATS/1.0\r\n"]
    for k, v in headers.items():
        if v is None:
            continue
        name = k.strip()
        if not name:
            continue
        if not _HEADER_NAME.fullmatch(name):
            raise SinkError(f"nats-jetstream sink: header name {name!r} cannot be sent as a NATS header")
        lines.append(b"%s: %s\r\n" % (name.encode(), _header_value(v).strip().translate(_NEWLINES).encode()))
    lines.append(b"Nats-Msg-Id: %s\r\n\r\n" % msg_id.encode())
    return b"".join(lines)


class _Waiter:
    """The PubAcks one send waits for: how many are still to come, and the refusals by position."""

    __slots__ = ("left", "errors", "done")

    def __init__(self, loop: asyncio.AbstractEventLoop, count: int):
        self.left = count
        self.errors: dict[int, _Nack] = {}
        self.done: asyncio.Future[None] = loop.create_future()

    def answer(self, position: int, error: _Nack | None) -> None:
        if error is not None:
            self.errors[position] = error
        self.left -= 1
        if self.left <= 0 and not self.done.done():
            self.done.set_result(None)

    def fail(self, error: _Nack) -> None:
        if not self.done.done():
            self.done.set_exception(error)
            self.done.exception()  # retrieved: a batch that failed early is retried whole, nobody awaits it


class NatsJetStreamSink:
    """Publishes each record's value to JetStream on the subject named after its topic; acknowledged per PubAck."""

    name: ClassVar[str] = "nats-jetstream"
    fields: ClassVar[Fields] = Fields([
        URL, STREAM_NAME, CREATE_STREAM, SUBJECTS, STORAGE, AUTH_JWT, AUTH_SEED, AUTH_USER, AUTH_PASSWORD,
        TLS_KEYSTORE, TLS_KEYSTORE_PASSWORD, TLS_PASSWORD, ASYNC_ENABLED, ASYNC_TIMEOUT_MS, SYNC_RETRIES,
        SYNC_RETRY_INTERVAL_MS, SYNC_RETRY_MAX_INTERVAL_MS, SYNC_RETRY_BACKOFF_MULTIPLIER,
    ])

    def __init__(self, config: Config):
        config.validate(self.fields)
        try:
            import nats  # noqa: F401 - only to say what is missing
        except ImportError:
            raise ConfigError([f"{P}url: the nats-jetstream sink needs nats-py (pip install 'cdc-core[nats]')"]) from None
        self.config = config
        self.servers = [s.strip() for s in config.get(URL).split(",") if s.strip()]
        self._async = config.get(ASYNC_ENABLED)
        self._timeout = config.get(ASYNC_TIMEOUT_MS) / 1000.0
        self._connect_options = self._auth_options(config)
        multiplier = config.get(SYNC_RETRY_BACKOFF_MULTIPLIER)
        if multiplier != 2.0:
            log.warning("%s%s=%s: cdc doubles each retry delay (2.0)", P, SYNC_RETRY_BACKOFF_MULTIPLIER.name, multiplier)
        self._stopping = threading.Event()
        self.backoff = Backoff("nats-jetstream sink", log, config.get(SYNC_RETRY_INTERVAL_MS),
                               config.get(SYNC_RETRY_MAX_INTERVAL_MS), config.get(SYNC_RETRIES), self._stopping)
        # One id per record, the same on every retry of its batch: JetStream drops a re-sent copy (Nats-Msg-Id).
        self._run_id = uuid.uuid4().hex[:12]
        self._sequence = itertools.count(1)
        self._nc: Any = None
        self._js: Any = None
        self._reply_prefix = ""
        self._reply_prefix_bytes = b""
        self._subjects: dict[str, bytes] = {}
        #: Reply token -> the waiter, the message's position in its send, its subject.
        self._pending: dict[bytes, tuple[_Waiter, int, str]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="cdc-nats-jetstream", daemon=True)
        self._thread.start()
        try:
            self._check_hosts()
            self._run(self._connect())
        except TransientSinkError as e:  # the server may come later: write() retries
            log.warning("nats-jetstream sink: %s; will retry when the first batch comes", e)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ configuration
    def _auth_options(self, config: Config) -> dict[str, Any]:
        """nats-py's connect options for the configured credentials (Debezium Server's order: JWT, user, TLS)."""
        jwt, seed = config.get(AUTH_JWT), config.get(AUTH_SEED)
        user, password = config.get(AUTH_USER), config.get(AUTH_PASSWORD)
        keystore = config.get(TLS_KEYSTORE)
        options: dict[str, Any] = {}
        if jwt and seed:
            try:
                import nkeys  # noqa: F401
            except ImportError:
                raise ConfigError([f"{P}auth.jwt: JWT authentication needs the Python package nkeys (pip install nkeys)"]
                                  ) from None
            options.update(user_jwt_cb=lambda: bytearray(jwt.encode()), signature_cb=lambda nonce: _sign(seed, nonce))
        elif user and password:
            options.update(user=user, password=password)
        elif keystore:
            context = ssl.create_default_context()
            try:
                context.load_cert_chain(keystore, password=config.get(TLS_PASSWORD) or None)
            except (OSError, ssl.SSLError, ValueError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else "not a PEM file with a key and its chain"
                raise ConfigError([f"{P}{TLS_KEYSTORE.name}: cannot load {keystore}: {reason}"]) from None
            options["tls"] = context
        if any(urlsplit(s).scheme == "tls" for s in self.servers) and "tls" not in options:
            options["tls"] = ssl.create_default_context()
        return options

    def _check_hosts(self) -> None:
        """A host name that does not resolve is a configuration error, not something to wait for."""
        for server in self.servers:
            host = urlsplit(server if "://" in server else f"nats://{server}").hostname
            if not host:
                raise SinkError(f"nats-jetstream sink: {P}{URL.name}: {server!r} names no host")
            try:
                socket.getaddrinfo(host, None)
            except socket.gaierror as e:
                if e.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
                    raise SinkError(f"nats-jetstream sink: {P}{URL.name}: host {host!r} is unknown") from None
                raise TransientSinkError(f"cannot resolve {host!r}: {e.strerror}") from None

    # ------------------------------------------------------------------ the event loop thread
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the sink's event loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _connect(self) -> None:
        """Connect (no automatic reconnect, as Debezium Server), create the stream if asked, subscribe to PubAcks."""
        import nats
        import nats.errors

        await self._disconnect()

        errors: list[Exception] = []

        async def quiet(e: Exception) -> None:
            errors.append(e)
            log.debug("nats-jetstream sink: connection error: %s", e)

        try:
            # One attempt per server (nats-py counts attempts beyond the first); cdc's back-off does the waiting.
            nc = await nats.connect(servers=self.servers, allow_reconnect=False, max_reconnect_attempts=1,
                                    reconnect_time_wait=0.05, connect_timeout=max(1, int(self._timeout)),
                                    error_cb=quiet, name="cdc", **self._connect_options)
        except nats.errors.NoServersError:
            raise self._classify_connect_error(errors[-1] if errors else OSError("no server answered")) from None
        except Exception as e:  # noqa: BLE001 - sorted into permanent and transient below
            raise self._classify_connect_error(e) from None
        self._nc, self._js = nc, nc.jetstream(timeout=self._timeout)
        if self.config.get(CREATE_STREAM):
            await self._create_stream()
        self._reply_prefix = nc.new_inbox() + "."
        self._reply_prefix_bytes = self._reply_prefix.encode()
        subscription = await nc.subscribe(self._reply_prefix + "*", cb=self._on_reply)
        self._take_replies_early(nc, getattr(subscription, "_id", None))
        log.info("nats-jetstream sink: connected to %s", self._where())

    def _classify_connect_error(self, e: BaseException) -> SinkError:
        """Authentication and TLS failures are permanent; anything about the network is transient."""
        text = str(e).lower()
        if "authorization" in text or "authentication" in text or "credentials" in text:
            prop = AUTH_JWT.name if self._connect_options.get("user_jwt_cb") else AUTH_USER.name
            return SinkError(f"nats-jetstream sink: {self._where()} refused the credentials "
                             f"({P}{prop}): authorization violation")
        if isinstance(e, ssl.SSLError):
            return SinkError(f"nats-jetstream sink: TLS with {self._where()} failed ({P}{TLS_KEYSTORE.name}): "
                             f"{e.reason or type(e).__name__}")
        reason = e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__} {e}".rstrip()
        return TransientSinkError(f"cannot connect to {self._where()}: {reason}")

    async def _create_stream(self) -> None:
        """Debezium Server's stream: ``stream-name`` with ``subjects`` and ``storage`` (kept if it exists)."""
        from nats.js.api import StorageType, StreamConfig
        from nats.js.errors import APIError

        name = self.config.get(STREAM_NAME)
        stream = StreamConfig(name=name, subjects=self.config.get(SUBJECTS),
                              description="The debezium stream, contains messages which are coming from debezium",
                              storage=StorageType.FILE if self.config.get(STORAGE) == "file" else StorageType.MEMORY)
        try:
            await self._js.add_stream(stream)
        except APIError as e:
            if e.err_code != STREAM_NAME_IN_USE:
                raise SinkError(f"nats-jetstream sink: cannot create stream {name!r} ({P}{CREATE_STREAM.name}, "
                                f"{P}{SUBJECTS.name}): {e.description}") from None
            log.info("nats-jetstream sink: stream %r exists with another configuration; left as it is", name)

    async def _disconnect(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        for waiter, _, subject in self._pending.values():
            waiter.fail(_Nack(subject, 503, 0, "connection lost"))
        self._pending.clear()
        if nc is not None:
            try:
                await nc.close()
            except Exception as e:  # noqa: BLE001 - a broken connection is being dropped anyway
                log.debug("nats-jetstream sink: closing the connection: %s", e)

    def _take_replies_early(self, nc: Any, sid: int | None) -> None:
        """Answer PubAcks where nats-py's parser hands over each message, before it builds a ``Msg`` and
        queues it for the subscription's task (most of the per-message cost); other messages go on as before.
        Left as it is (the subscription's callback answers) if this nats-py has no such hook."""
        process = getattr(nc, "_process_msg", None)
        if sid is None or process is None:
            return
        answer = self._answer

        async def process_msg(msg_sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
            if msg_sid == sid:
                answer(subject, data, headers)
                return
            await process(msg_sid, subject, reply, data, headers)

        nc._process_msg = process_msg  # noqa: SLF001

    def _answer(self, subject: bytes, data: bytes, headers: bytes | None) -> None:
        """A PubAck, an API error, or the server's "no responders" status, for the raw message on the reply inbox."""
        entry = self._pending.pop(subject[len(self._reply_prefix_bytes):], None)
        if entry is None:
            return
        waiter, position, topic = entry
        if headers and headers[9:12] == b"503":  # "NATS/1.0 503\r\n": no stream takes the subject
            waiter.answer(position, _Nack(topic))
            return
        try:
            reply = orjson.loads(data)
        except orjson.JSONDecodeError:
            waiter.answer(position, _Nack(topic, 500, 0, "unreadable PubAck"))
            return
        error = reply.get("error")
        waiter.answer(position, _Nack(topic, error.get("code", 0), error.get("err_code", 0),
                                      error.get("description", "")) if error else None)

    async def _on_reply(self, msg: Any) -> None:
        """The same for a ``Msg`` delivered to the subscription (where ``_take_replies_early`` did not hook in)."""
        raw = b"NATS/1.0 503\r\n\r\n" if msg.headers and msg.headers.get("Status") == "503" else None
        self._answer(msg.subject.encode(), msg.data, raw)

    # ------------------------------------------------------------------ publishing
    def _where(self) -> str:
        """The configured servers as host:port, without any credentials a URL may hold."""
        out = []
        for server in self.servers:
            parts = urlsplit(server if "://" in server else f"nats://{server}")
            out.append(f"{parts.hostname}:{parts.port or 4222}")
        return ",".join(out)

    def write(self, batch: list[SinkRecord]) -> None:
        """Publish every record with a value; return once each has its PubAck (retrying transient failures)."""
        messages = self._messages(batch)
        if messages:
            self.backoff.call(lambda: self._run(self._publish(messages)))

    def _messages(self, batch: list[SinkRecord]) -> list[tuple[str, bytes, bytes, bytes, bytes]]:
        """Each record with a value as (topic, subject, reply token, header block, payload); ids drawn once,
        so that every retry of the batch sends the same ``Nats-Msg-Id``s."""
        messages = []
        run_id = self._run_id
        sequence = self._sequence
        subjects = self._subjects
        plain = b"NATS/1.0\r\nNats-Msg-Id: cdc-%s-%d\r\n\r\n"
        for r in batch:
            if r.value is None:
                continue  # Debezium Server does not publish tombstones to NATS
            topic = r.topic
            subject = subjects.get(topic)
            if subject is None:
                if not topic or any(c.isspace() for c in topic):
                    raise SinkError(f"nats-jetstream sink: topic {topic!r} is not a valid NATS subject")
                if len(subjects) > 10_000:  # subjects named from data: keep the cache bounded
                    subjects.clear()
                subject = subjects[topic] = topic.encode()
            n = next(sequence)
            token = b"%d" % n
            if r.headers:
                block = _headers_block(r.headers, f"cdc-{run_id}-{n}")
            else:
                block = plain % (run_id.encode(), n)
            messages.append((topic, subject, token, block, r.value))
        return messages

    def _commands(self, messages: list[tuple[str, bytes, bytes, bytes, bytes]]) -> list[bytes]:
        """The HPUB commands of ``messages`` (reply subjects on the current connection's inbox)."""
        reply = self._reply_prefix_bytes
        limit = self._nc.max_payload
        out = []
        for topic, subject, token, block, payload in messages:
            size = len(block) + len(payload)
            if size > limit:
                raise SinkError(f"nats-jetstream sink: a record of {len(payload)} bytes for subject {topic!r} is "
                                f"larger than the server's max_payload ({limit} bytes)")
            out.append(b"HPUB %s %s%s %d %d\r\n%s%s\r\n" % (subject, reply, token, len(block), size, block, payload))
        return out

    async def _send(self, commands: list[bytes]) -> None:
        """Hand HPUB commands to nats-py's outgoing buffer in pieces of about CHUNK_BYTES, in order."""
        send = self._nc._send_command  # noqa: SLF001 - the buffer publish() appends to, without per-message work
        piece: list[bytes] = []
        size = 0
        for command in commands:
            piece.append(command)
            size += len(command)
            if size >= CHUNK_BYTES:
                await send(b"".join(piece))
                piece, size = [], 0
        if piece:
            await send(b"".join(piece))

    async def _publish(self, messages: list[tuple[str, bytes, bytes, bytes, bytes]]) -> None:
        import nats.errors

        if self._nc is None or not self._nc.is_connected:
            await self._connect()
        loop = asyncio.get_running_loop()
        commands = self._commands(messages)
        sends = [(0, len(messages))] if self._async else [(i, i + 1) for i in range(len(messages))]
        waiter: _Waiter | None = None
        try:
            for start, end in sends:
                waiter = _Waiter(loop, end - start)
                for position in range(start, end):
                    self._pending[messages[position][2]] = (waiter, position, messages[position][0])
                await self._send(commands[start:end])
                await self._nc.flush(timeout=max(1, int(self._timeout)))
                await asyncio.wait([waiter.done], timeout=self._timeout)
                if not waiter.done.done() or waiter.done.exception() is not None or waiter.errors:
                    break
        except (nats.errors.Error, OSError, TimeoutError) as e:
            await self._disconnect()
            raise TransientSinkError(f"publishing to {self._where()} failed: {type(e).__name__} {e}".rstrip()) from None
        finally:
            for _, _, token, _, _ in messages:
                self._pending.pop(token, None)
        if waiter is None:
            return
        if not waiter.done.done():
            left = waiter.left
            waiter.fail(_Nack("", 408, 0, "timed out"))
            await self._disconnect()
            raise TransientSinkError(f"{left} of {len(messages)} PubAcks did not come within "
                                     f"{self._timeout * 1000:.0f} ms ({P}{ASYNC_TIMEOUT_MS.name})")
        error = waiter.done.exception()
        if error is None and waiter.errors:
            error = waiter.errors[min(waiter.errors)]
        if error is not None:
            await self._nack(error)

    async def _nack(self, e: BaseException) -> None:
        """Raise the error a refused publish means: permanent for a missing stream or bad request, else transient."""
        if not isinstance(e, _Nack):
            raise TransientSinkError(f"publishing failed: {e}")
        if e.code == 0:  # nobody answered: is there a stream for the subject at all?
            import nats.errors
            from nats.js.errors import NotFoundError, ServiceUnavailableError

            try:
                await self._js.find_stream_name_by_subject(e.subject)
            except NotFoundError:
                raise SinkError(f"nats-jetstream sink: no JetStream stream takes subject {e.subject!r}: create one "
                                f"or set {P}{CREATE_STREAM.name}=true with {P}{SUBJECTS.name} covering it") from None
            except (nats.errors.NoRespondersError, ServiceUnavailableError):
                raise TransientSinkError(f"JetStream on {self._where()} does not answer (is it enabled: nats-server "
                                         "-js?)") from None
            except Exception as lookup:  # noqa: BLE001 - the connection went: try again
                raise TransientSinkError(f"no stream answered for subject {e.subject!r} ({lookup!r})") from None
            raise TransientSinkError(f"the stream for subject {e.subject!r} did not answer")
        if e.err_code in PERMANENT_API_CODES:
            raise SinkError(f"nats-jetstream sink: publishing to subject {e.subject!r} refused: {e.description} "
                            f"(error {e.err_code})")
        raise TransientSinkError(f"publishing to subject {e.subject!r} refused: {e.description} (error {e.err_code})")

    def stop(self) -> None:
        """Cut a retry wait short (the batch then fails unacknowledged)."""
        self._stopping.set()

    def close(self) -> None:
        """Close the connection and stop the event loop thread."""
        if not self._loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(self._disconnect(), self._loop).result(10)
            except Exception as e:  # noqa: BLE001 - every acknowledged batch is already stored
                log.warning("nats-jetstream sink: closing the connection failed: %s", e)
            try:  # nats-py's own tasks (subscriptions of a connection that broke) end before the loop closes
                asyncio.run_coroutine_threadsafe(_cancel_tasks(), self._loop).result(10)
            except Exception as e:  # noqa: BLE001 - as above
                log.debug("nats-jetstream sink: cancelling the client's tasks: %s", e)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self._loop.close()
