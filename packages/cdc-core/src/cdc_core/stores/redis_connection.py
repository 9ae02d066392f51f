"""Debezium's common Redis settings (``<prefix>redis.address``, ``user``, ``password``, ...) and the connection they make.

The Redis sink (``debezium.sink.redis.*``), the offset store (``offset.storage.redis.*``) and the schema
history (``schema.history.internal.redis.*``) share them, as Debezium's ``RedisCommonConfig`` does.
redis-py is imported only when a connection is made, so cdc-core runs without it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from cdc_core.config import Config, ConfigField, Fields

#: ``host:port``, as Debezium's ``RedisConnection`` checks it.
_ADDRESS = re.compile(r"[\w.-]+:\d{1,5}")

log = logging.getLogger("cdc.redis")


def _address_problem(value: str) -> str | None:
    """Why an address is not ``host:port``, or None."""
    if not _ADDRESS.fullmatch(value.strip()):
        return f"{value!r} is not in host:port format"
    if not 0 < int(value.rsplit(":", 1)[1]) < 65536:
        return f"{value!r} has no valid port"
    return None


def redis_fields(prefix: str, *, address_required: bool = True) -> list[ConfigField]:
    """Debezium's ``RedisCommonConfig`` properties under ``prefix`` (``""`` for the sink, ``offset.storage.redis.``...)."""
    F = ConfigField
    return [
        F(f"{prefix}address", "string", required=address_required, validator=_address_problem, allow_blank=False,
          doc="The Redis server, host:port."),
        F(f"{prefix}db.index", "int", 0, minimum=0, maximum=15, doc="The database index (0..15)."),
        F(f"{prefix}user", "string", doc="The ACL user (Redis 6+)."),
        F(f"{prefix}password", "password", doc="The password (of the user, or of the default user)."),
        F(f"{prefix}ssl.enabled", "boolean", False, doc="Connect with TLS."),
        F(f"{prefix}connection.timeout.ms", "int", 2000, minimum=1, doc="Connection timeout."),
        F(f"{prefix}socket.timeout.ms", "int", 2000, minimum=1, doc="Socket (reply) timeout."),
        F(f"{prefix}retry.initial.delay.ms", "int", 300, minimum=0, doc="First wait after a transient failure."),
        F(f"{prefix}retry.max.delay.ms", "int", 10000, minimum=0, doc="Longest wait between retries."),
        F(f"{prefix}retry.max.attempts", "int", 10, minimum=1, doc="Schema history: attempts before giving up."),
        F(f"{prefix}wait.enabled", "boolean", False, doc="WAIT for one replica after each write."),
        F(f"{prefix}wait.timeout.ms", "long", 1000, minimum=1, doc="WAIT's timeout."),
        F(f"{prefix}wait.retry.enabled", "boolean", False, doc="WAIT again until the replica has the write."),
        F(f"{prefix}wait.retry.delay.ms", "long", 1000, minimum=0, doc="Pause before WAITing again."),
    ]


@dataclass(frozen=True)
class RedisSettings:
    """One Redis connection's settings; ``prefix`` is the full property prefix used in messages."""

    prefix: str
    host: str
    port: int
    db: int
    user: str | None
    password: str | None = field(repr=False)
    ssl: bool
    connect_timeout_s: float
    socket_timeout_s: float
    retry_initial_ms: int
    retry_max_ms: int
    retry_max_attempts: int
    wait_enabled: bool
    wait_timeout_ms: int
    wait_retry_enabled: bool
    wait_retry_delay_ms: int

    @classmethod
    def from_config(cls, config: Config, prefix: str, shown_prefix: str) -> RedisSettings:
        """Read the settings under ``prefix`` of ``config``; ``shown_prefix`` is how messages name them."""
        fields = Fields(redis_fields(prefix))
        config.validate(fields, check_unknown=False)

        def get(name: str) -> Any:
            return config.get(fields[prefix + name])

        host, port = get("address").strip().rsplit(":", 1)
        return cls(
            prefix=shown_prefix, host=host, port=int(port), db=get("db.index"), user=get("user") or None,
            password=get("password") or None, ssl=get("ssl.enabled"),
            connect_timeout_s=get("connection.timeout.ms") / 1000.0, socket_timeout_s=get("socket.timeout.ms") / 1000.0,
            retry_initial_ms=get("retry.initial.delay.ms"), retry_max_ms=get("retry.max.delay.ms"),
            retry_max_attempts=get("retry.max.attempts"), wait_enabled=get("wait.enabled"),
            wait_timeout_ms=get("wait.timeout.ms"), wait_retry_enabled=get("wait.retry.enabled"),
            wait_retry_delay_ms=get("wait.retry.delay.ms"),
        )

    @property
    def address(self) -> str:
        """``host:port`` (never with credentials)."""
        return f"{self.host}:{self.port}"


def connect(settings: RedisSettings, client_name: str) -> Any:
    """A connected ``redis.Redis`` (PING answered, client name set); raises redis-py's errors as they come."""
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as e:
        raise ImportError("the Redis sink and stores need redis-py: pip install 'cdc-core[redis]'") from e
    client = redis.Redis(
        host=settings.host, port=settings.port, db=settings.db, username=settings.user, password=settings.password,
        ssl=settings.ssl, socket_connect_timeout=settings.connect_timeout_s, socket_timeout=settings.socket_timeout_s,
        retry=Retry(NoBackoff(), 0), single_connection_client=True,
    )
    try:
        client.ping()
        try:
            client.client_setname(client_name)
        except redis.exceptions.ResponseError as e:
            log.warning("Redis at %s: cannot set the client name: %s", settings.address, e)
    except BaseException:
        close_quietly(client)
        raise
    return client


class StoreClient:
    """A state store's one Redis client, (re)connected on demand; each call retried with ``backoff``.

    Transient failures are retried; a permanent one, or the last retry, is raised as ``error``
    (``OffsetStoreError``, ``SchemaHistoryError``) prefixed with ``store`` (its name for the user).
    """

    def __init__(self, settings: RedisSettings, client_name: str, backoff: Any, error: type[Exception], store: str):
        self.settings, self.client_name, self.backoff, self.error, self.store = settings, client_name, backoff, error, store
        self._client: Any = None

    def call(self, what: str, action: Any) -> Any:
        """Run ``action(client)``, ``what`` naming it in errors."""
        from cdc_core.errors import SinkError
        from cdc_core.sinks.retry import TransientSinkError

        def attempt() -> Any:
            from redis import exceptions as rx

            try:
                if self._client is None:
                    self._client = connect(self.settings, self.client_name)
                return action(self._client)
            except (rx.RedisError, OSError) as e:
                self.close()
                transient, message = classify(e, self.settings)
                if transient:
                    raise TransientSinkError(f"{what}: {message}") from None
                raise self.error(f"{self.store}: {what}: {message}") from None

        try:
            return self.backoff.call(attempt)
        except ImportError as e:
            raise self.error(f"{self.store}: {e}") from None
        except SinkError as e:  # the last retry, or stopped while waiting
            raise self.error(f"{self.store}: {e}") from None

    def close(self) -> None:
        """Close the client, if any."""
        if self._client is not None:
            close_quietly(self._client)
            self._client = None


def close_quietly(client: Any) -> None:
    """Close a client; a failure to close a broken connection changes nothing."""
    try:
        client.close()
    except Exception as e:  # noqa: BLE001 - closing a dead connection
        log.debug("closing a Redis connection failed: %s", e)


def classify(exc: BaseException, settings: RedisSettings) -> tuple[bool, str]:
    """``(transient, message)`` for a redis-py failure; the message names the server and property, never the password."""
    from redis import exceptions as rx

    where = f"Redis at {settings.address}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, rx.OutOfMemoryError) and not text.startswith("OOM"):
        text = f"OOM {text}"  # redis-py drops the reply's error code
    upper = text.upper()
    auth = (isinstance(exc, (rx.AuthenticationError, rx.AuthenticationWrongNumberOfArgsError))
            or upper.startswith(("WRONGPASS", "NOAUTH", "INVALID USERNAME-PASSWORD"))
            or (isinstance(exc, rx.ResponseError) and "AUTH" in upper and "PASSWORD" in upper))
    if auth:
        return False, (f"{where} refused the credentials: check {settings.prefix}user and {settings.prefix}password "
                       f"({_redact(text, settings)})")
    if isinstance(exc, rx.NoPermissionError) or upper.startswith("NOPERM"):
        return False, f"{where}: the user in {settings.prefix}user lacks a permission: {_redact(text, settings)}"
    if isinstance(exc, (rx.BusyLoadingError, rx.ReadOnlyError, rx.MasterDownError, rx.TryAgainError,
                        rx.OutOfMemoryError)) or upper.startswith(("OOM", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN")):
        return True, f"{where}: {_redact(text, settings)}"
    if isinstance(exc, (rx.ConnectionError, rx.TimeoutError, ConnectionError, TimeoutError, OSError)):
        return True, f"{where} is unreachable ({settings.prefix}address): {_redact(text, settings)}"
    return False, f"{where}: {_redact(text, settings)}"


def _redact(text: str, settings: RedisSettings) -> str:
    """``text`` with the password (should a server echo it) masked."""
    if settings.password:
        text = text.replace(settings.password, "********")
    return text


def wait_for_replica(client: Any, settings: RedisSettings, stopping: Any = None) -> None:
    """After a write, WAIT for one replica (``wait.enabled``); again after ``wait.retry.delay.ms`` if so configured."""
    import time

    while True:
        reached = int(client.execute_command("WAIT", 1, settings.wait_timeout_ms))
        if reached >= 1:
            return
        if not settings.wait_retry_enabled:
            log.warning("Redis at %s: the write did not reach a replica within %d ms", settings.address,
                        settings.wait_timeout_ms)
            return
        log.error("Redis at %s: the write did not reach a replica within %d ms; waiting again in %d ms",
                  settings.address, settings.wait_timeout_ms, settings.wait_retry_delay_ms)
        if stopping is not None and stopping.wait(settings.wait_retry_delay_ms / 1000.0):
            return
        if stopping is None:
            time.sleep(settings.wait_retry_delay_ms / 1000.0)
