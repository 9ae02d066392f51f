"""Schema history in a Redis stream, exactly as Debezium's ``RedisSchemaHistory`` keeps it.

Each record is one stream entry (``schema.history.internal.redis.key``, default
``metadata:debezium:schema_history``) with a single field ``schema`` holding the record's JSON.
Connection failures are retried with back-off up to ``retry.max.attempts`` times, as Debezium does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import SchemaHistoryError
from cdc_core.sinks.retry import Backoff
from cdc_core.stores.redis_connection import RedisSettings, StoreClient, redis_fields, wait_for_replica

PREFIX = "schema.history.internal.redis."
KEY = ConfigField(f"{PREFIX}key", "string", "metadata:debezium:schema_history", allow_blank=False,
                  doc="The stream holding the schema history.")
#: The client name Debezium gives its schema history connection.
CLIENT_NAME = "debezium:schema_history"
#: The stream entry's field holding the record.
FIELD = b"schema"
#: Entries read per XRANGE call.
_PAGE = 1000

log = logging.getLogger("cdc.stores.redis_history")


class RedisSchemaHistoryStore:
    """Schema history in a Redis stream (``io.debezium.storage.redis.history.RedisSchemaHistory``)."""

    name: ClassVar[str] = "redis"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.storage.redis.history.RedisSchemaHistory",
                                              "io.debezium.server.redis.RedisSchemaHistory")
    fields: ClassVar[Fields] = Fields([*redis_fields(PREFIX, address_required=False), KEY])

    def __init__(self, config: Config):
        if not config.get(f"{PREFIX}address"):
            raise SchemaHistoryError(f"{PREFIX}address: is required by the Redis schema history "
                                     "(or set debezium.sink.redis.address with the redis sink)")
        self.settings = RedisSettings.from_config(config, PREFIX, PREFIX)
        self.key = config.get(KEY)
        # Transient failures retried up to retry.max.attempts.
        backoff = Backoff(f"Redis schema history ({self.settings.address}, stream {self.key!r})", log,
                          self.settings.retry_initial_ms, self.settings.retry_max_ms,
                          self.settings.retry_max_attempts - 1, threading.Event())
        self._redis = StoreClient(self.settings, CLIENT_NAME, backoff, SchemaHistoryError, "Redis schema history")

    def append(self, record: dict[str, Any]) -> None:
        """XADD one record (then WAIT for a replica if ``wait.enabled``)."""
        line = orjson.dumps(record)

        def add(client: Any) -> None:
            client.xadd(self.key, {FIELD: line})
            if self.settings.wait_enabled:
                wait_for_replica(client, self.settings)

        self._redis.call(f"appending to stream {self.key!r}", add)

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record in stream order; SchemaHistoryError naming the entry if one is not a record."""
        start = "-"
        while True:
            page = self._redis.call(f"reading stream {self.key!r}",
                              lambda c, s=start: c.xrange(self.key, min=s, max="+", count=_PAGE))
            for entry_id, fields in page:
                raw = fields.get(FIELD)
                try:
                    if raw is None:
                        raise ValueError("it has no 'schema' field")
                    yield orjson.loads(raw)
                except (ValueError, orjson.JSONDecodeError) as e:
                    raise SchemaHistoryError(f"Redis schema history: stream {self.key!r} entry "
                                             f"{entry_id.decode()} is not a history record: {e}") from None
            if len(page) < _PAGE:
                return
            start = "(" + page[-1][0].decode()

    def exists(self) -> bool:
        """True if the stream holds any record."""
        return bool(self._redis.call(f"reading stream {self.key!r}", lambda c: c.xlen(self.key)))

    def close(self) -> None:
        """Close the connection (every append is already in Redis)."""
        self._redis.close()
