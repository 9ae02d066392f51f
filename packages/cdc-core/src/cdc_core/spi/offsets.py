"""The offset store contract: where acknowledged source positions are kept between runs."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config


@runtime_checkable
class OffsetStore(Protocol):
    """Keeps the last acknowledged offset of each source partition.

    Partitions and offsets are JSON-compatible dicts. ``commit`` must be atomic: after a crash
    the store holds either the previous or the new offsets, never a mix or a torn file. A store
    that cannot read its data raises ``OffsetStoreError``; it never returns empty data instead.
    """

    name: ClassVar[str]
    class_names: ClassVar[tuple[str, ...]]

    def __init__(self, config: Config) -> None:
        """``config`` holds the connector properties (e.g. ``offset.storage.file.filename``)."""

    def get(self, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The stored offset of ``partition``, or None if there is none."""

    def all(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every stored ``(partition, offset)`` pair."""

    def commit(self, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Store these partitions' offsets atomically and durably."""

    def close(self) -> None:
        """Release resources."""
