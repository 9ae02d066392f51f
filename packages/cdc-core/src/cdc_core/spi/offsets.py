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


#: The kinds of offset field ``OffsetShape`` knows, and the JSON values each accepts.
_KINDS: dict[str, Any] = {
    "uint": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "snapshot": lambda v: isinstance(v, bool) or v in ("true", "false", "last", "first", "incremental"),
}


class OffsetShape:
    """What a connector's stored offset must look like: required and optional fields, each of a kind.

    A connector states it as ``offset_shape`` (``OffsetShape(required={"lsn": "uint"}, optional=...)``;
    kinds: ``uint``, ``str``, ``bool``, ``snapshot``); the engine checks a stored offset against it
    before the connector sees it, so a hand-edited or damaged offset stops the start with a clear
    error instead of a traceback deep in the connector, a silent new snapshot or a silent skip.
    Fields it does not name (incremental snapshot context, ...) are left to their owners; null
    optional fields are accepted.
    """

    def __init__(self, required: dict[str, str], optional: dict[str, str] | None = None):
        self.required = dict(required)
        self.optional = dict(optional or {})
        for kind in (*self.required.values(), *self.optional.values()):
            assert kind in _KINDS, f"unknown offset field kind {kind!r}"

    def problems(self, offset: dict[str, Any]) -> list[str]:
        """What is wrong with ``offset``, one phrase per field (empty if nothing)."""
        out = []
        for name, kind in self.required.items():
            if offset.get(name) is None:
                out.append(f"{name!r} is missing")
            elif not _KINDS[kind](offset[name]):
                out.append(f"{name!r} is {offset[name]!r}, not a {_DESCRIBE[kind]}")
        for name, kind in self.optional.items():
            if offset.get(name) is not None and not _KINDS[kind](offset[name]):
                out.append(f"{name!r} is {offset[name]!r}, not a {_DESCRIBE[kind]}")
        return out


_DESCRIBE = {"uint": "non-negative integer", "str": "string", "bool": "boolean", "snapshot": "snapshot marker"}
