"""The memory offset store: offsets that last as long as the process."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config


class MemoryOffsetStore:
    """Keeps offsets in a dict; a restarted process starts without any."""

    name: ClassVar[str] = "memory"
    class_names: ClassVar[tuple[str, ...]] = ("org.apache.kafka.connect.storage.MemoryOffsetBackingStore",)

    def __init__(self, config: Config | None = None):
        self._offsets: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}

    def get(self, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The stored offset of ``partition``, or None."""
        found = self._offsets.get(orjson.dumps(partition, option=orjson.OPT_SORT_KEYS))
        return copy.deepcopy(found[1]) if found else None

    def all(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every stored ``(partition, offset)`` pair."""
        return copy.deepcopy(list(self._offsets.values()))

    def commit(self, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Store these offsets."""
        for partition, offset in offsets:
            key = orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)
            self._offsets[key] = (copy.deepcopy(partition), copy.deepcopy(offset))

    def close(self) -> None:
        """Nothing to release."""
