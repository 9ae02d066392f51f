"""The memory schema history store: a list that lasts as long as the process."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, ClassVar

from cdc_core.config import Config


class MemorySchemaHistoryStore:
    """Keeps schema history records in a list."""

    name: ClassVar[str] = "memory"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.relational.history.MemorySchemaHistory",)

    def __init__(self, config: Config | None = None):
        self._records: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any]) -> None:
        """Append one record."""
        self._records.append(copy.deepcopy(record))

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record in order."""
        return iter(copy.deepcopy(self._records))

    def exists(self) -> bool:
        """True if any record was appended."""
        return bool(self._records)

    def close(self) -> None:
        """Nothing to release."""
