"""The schema history store contract: the ordered record of table definitions a connector has seen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config


@runtime_checkable
class SchemaHistoryStore(Protocol):
    """An append-only log of schema history records (JSON-compatible dicts), replayed on restart."""

    name: ClassVar[str]
    class_names: ClassVar[tuple[str, ...]]

    def __init__(self, config: Config) -> None:
        """``config`` holds the connector properties (e.g. ``schema.history.internal.file.filename``)."""

    def append(self, record: dict[str, Any]) -> None:
        """Durably append one record."""

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record in the order appended; ``SchemaHistoryError`` if the store is corrupt."""

    def exists(self) -> bool:
        """True if the store holds any record."""

    def close(self) -> None:
        """Release resources."""
