"""Offsets in a Redis hash, exactly as Debezium's ``RedisOffsetBackingStore`` keeps them.

The hash (``offset.storage.redis.key``, default ``metadata:debezium:offsets``) maps Kafka Connect's
offset key, the JSON ``["<engine name>",{<partition>}]``, to the offset as JSON. Debezium Server's
engine name is the sink type, so its entries read ``["redis",{"server":"dbserver1"}]``; cdc finds a
partition's entry under any engine name, keeps that name when it writes, and uses ``redis`` for a
new entry, so a user moving between Debezium Server and cdc keeps the position both ways.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import OffsetStoreError
from cdc_core.sinks.retry import Backoff
from cdc_core.stores.redis_connection import RedisSettings, StoreClient, redis_fields, wait_for_replica

PREFIX = "offset.storage.redis."
KEY = ConfigField(f"{PREFIX}key", "string", "metadata:debezium:offsets", allow_blank=False,
                  doc="The hash holding the offsets.")
#: The engine name Debezium Server writes new entries under (its sink type, here the Redis sink's).
ENGINE_NAME = "redis"
#: The client name Debezium gives its offsets connection.
CLIENT_NAME = "debezium:offsets"

log = logging.getLogger("cdc.stores.redis_offsets")


class RedisOffsetStore:
    """Offsets in a Redis hash (``io.debezium.storage.redis.offset.RedisOffsetBackingStore``)."""

    name: ClassVar[str] = "redis"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.storage.redis.offset.RedisOffsetBackingStore",
                                              "io.debezium.server.redis.RedisOffsetBackingStore")
    fields: ClassVar[Fields] = Fields([*redis_fields(PREFIX, address_required=False), KEY])

    def __init__(self, config: Config):
        if not config.get(f"{PREFIX}address"):
            raise OffsetStoreError(f"{PREFIX}address: is required by the Redis offset store "
                                   "(or set debezium.sink.redis.address with the redis sink)")
        self.settings = RedisSettings.from_config(config, PREFIX, PREFIX)
        self.key = config.get(KEY)
        # Transient failures retried forever, as Debezium does.
        backoff = Backoff(f"Redis offset store ({self.settings.address}, hash {self.key!r})", log,
                          self.settings.retry_initial_ms, self.settings.retry_max_ms, -1, threading.Event())
        self._redis = StoreClient(self.settings, CLIENT_NAME, backoff, OffsetStoreError, "Redis offset store")
        #: partition key (sorted JSON) -> (hash field, partition, offset)
        self._entries: dict[bytes, tuple[bytes, dict[str, Any], dict[str, Any]]] = self._load()

    def _load(self) -> dict[bytes, tuple[bytes, dict[str, Any], dict[str, Any]]]:
        """Read and check the whole hash; OffsetStoreError for an entry that is not Debezium's."""
        raw: dict[bytes, bytes] = self._redis.call(f"reading hash {self.key!r}", lambda c: c.hgetall(self.key))
        out = {}
        for field, value in raw.items():
            try:
                name_and_partition = orjson.loads(field)
                offset = orjson.loads(value)
            except orjson.JSONDecodeError as e:
                raise OffsetStoreError(
                    f"Redis offset store: hash {self.key!r} at {self.settings.address} holds an entry that is not "
                    f"Debezium's offset JSON ({e}); refusing to start. Fix or delete that entry deliberately."
                ) from None
            if not (isinstance(name_and_partition, list) and len(name_and_partition) == 2
                    and isinstance(name_and_partition[1], dict)):
                raise OffsetStoreError(f"Redis offset store: hash {self.key!r}: field {field[:200]!r} is not "
                                       "Kafka Connect's offset key [\"<engine name>\",{partition}]; refusing to start")
            if offset is None:  # a deleted (tombstoned) offset
                continue
            if not isinstance(offset, dict):
                raise OffsetStoreError(f"Redis offset store: hash {self.key!r}: the offset of {field[:200]!r} is "
                                       "not a JSON object; refusing to start")
            partition = name_and_partition[1]
            pkey = orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)
            # Debezium Server's own name first: if two engines wrote the same partition, its entry wins.
            if pkey in out and name_and_partition[0] != ENGINE_NAME:
                continue
            out[pkey] = (field, partition, offset)
        if out:
            log.info("Redis offset store: %d offset(s) in hash %r at %s", len(out), self.key, self.settings.address)
        return out

    def get(self, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The stored offset of ``partition``, or None."""
        found = self._entries.get(orjson.dumps(partition, option=orjson.OPT_SORT_KEYS))
        return copy.deepcopy(found[2]) if found else None

    def all(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every stored ``(partition, offset)`` pair."""
        return [(copy.deepcopy(p), copy.deepcopy(o)) for _, p, o in self._entries.values()]

    def commit(self, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """HSET each partition's offset in one pipeline (then WAIT for a replica if ``wait.enabled``)."""
        updates = {}
        for partition, offset in offsets:
            pkey = orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)
            found = self._entries.get(pkey)
            field = found[0] if found else orjson.dumps([ENGINE_NAME, partition])
            updates[pkey] = (field, copy.deepcopy(partition), copy.deepcopy(offset))

        def write(client: Any) -> None:
            client.hset(self.key, mapping={field: orjson.dumps(offset) for field, _, offset in updates.values()})
            if self.settings.wait_enabled:
                wait_for_replica(client, self.settings)

        self._redis.call(f"writing hash {self.key!r}", write)
        self._entries.update(updates)

    def close(self) -> None:
        """Close the connection (every commit is already in Redis)."""
        self._redis.close()
