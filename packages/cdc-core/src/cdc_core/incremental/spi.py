"""What a connector gives the core for ad hoc snapshots: key-ordered chunk reads, watermarks, a blocking read.

The core runs Debezium's watermark algorithm (``cdc_core.incremental.coordinator``) on top of
these few capabilities, the same for every relational connector. A connector offers them by a
``incremental_snapshot_source()`` method, or, without touching the connector, by an
``incremental_snapshot_source`` attribute (a class taking ``(config, log)``) in the
``incremental`` module next to the connector's module (``cdc_postgres.incremental``), the way
``cdc_core.spi.chunks`` finds the parallel-snapshot capability.

Keys are lists of values in the connector's own representation (PostgreSQL: the text form),
JSON-compatible because they are stored in offsets; the core only hands them back. Filters are
``cdc_core.signals.conditions.Node`` trees: render them with the connector's identifier quoting
and bind their parameters; signal text never reaches SQL otherwise. This chunk API is public:
the Spark adapter (or any runtime) may read key-ordered chunks with it directly.

Watermarks come in two kinds, declared by the source's ``watermarks`` attribute (absent means
``"signal_table"``). ``"signal_table"``: the reader writes rows to the signal table and the stream
reads them back (``insert_watermark``/``delete_watermark``). ``"position"``: nothing is written; the
reader reports the server's log position before and after each chunk (``current_position``) and
the source says where the stream is against them (``PositionWatermarks``: MySQL's and MariaDB's
``read.only=true``, whose positions are executed GTID sets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.spi.capability import capability_for

Key = list[Any]

#: ``IncrementalSnapshotSource.watermarks``: rows written to the signal table (the default).
SIGNAL_TABLE = "signal_table"
#: ``IncrementalSnapshotSource.watermarks``: log positions read from the server; nothing is written.
POSITION = "position"


@dataclass
class ChunkRows:
    """One chunk: its rows in key order and the keys of the first and last one (None when there are none).

    ``invisible`` names the transactions the read's snapshot counted as still running (in the
    form ``IncrementalSnapshotSource.transaction_of`` gives for log events). A commit reaches the
    log a moment before new snapshots see it, so such a transaction may precede the low watermark
    in the log and still be missing from the rows; the core then drops the rows it touched.
    """

    rows: list[RawChange] = field(default_factory=list)
    last_key: Key | None = None
    first_key: Key | None = None
    invisible: frozenset[Any] = frozenset()
    #: Position watermarks only: a low watermark the read itself established (the exact position its
    #: snapshot saw, when the server tells it), used instead of the one taken before the read.
    low: Any = None
    #: ``incremental.snapshot.allow.schema.changes``: the table's shape changed since the last read, so the
    #: chunk was not read; the core closes the window empty and reads the same chunk again in the next one.
    schema_changed: bool = False


@runtime_checkable
class ChunkReader(Protocol):
    """One connection's worth of chunk reads and watermark writes (used by one thread at a time)."""

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The largest key of the rows matching ``condition`` (None if there are none)."""

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """At most ``limit`` rows with ``after < key <= upto`` (no lower bound if ``after`` is None) in key order.

        Rows are ``op: r`` RawChanges whose ``source`` marks them ``snapshot: "incremental"``
        and whose ``offset`` is None (the core adds the checkpoint once the window closes).
        The read is one statement, so it sees one consistent state of the table.
        """

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """Insert ``(row_id, kind, data)`` into the signal table and commit (it must reach the log)."""

    def current_position(self) -> Any:
        """(``watermarks = "position"`` only) The server's log position now, every transaction it has
        logged included: a watermark for ``PositionWatermarks``. Writes nothing."""

    def delete_watermark(self, row_id: str) -> None:
        """Delete the signal table row ``row_id`` and commit (``insert_delete`` closes a window so)."""

    def close(self) -> None:
        """Close the connection."""


@runtime_checkable
class IncrementalSnapshotSource(Protocol):
    """A connector's ad hoc snapshot capabilities (no I/O in ``__init__``; thread-safe ``reader()``)."""

    def captured_tables(self) -> list[Table]:
        """The current definitions of every captured table (what ``data-collections`` may name)."""

    def reader(self) -> ChunkReader:
        """A new ChunkReader with its own connection."""

    def transaction_of(self, change: RawChange) -> Any:
        """The id of the transaction of a log event, comparable with ``ChunkRows.invisible`` (None if unknown)."""

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool]) -> Iterator[list[RawChange]]:
        """Read the tables as the initial snapshot does (one consistent transaction, ``op: r``, its markers).

        Each table's rows carry ``offset_for(table)``; end early when ``stopped()`` is true.
        """

    def close(self) -> None:
        """Release connections."""

    # Optional: ``stream_source(read: dict, streamed: dict) -> dict``, the source block of a READ emitted when
    # the streamed change whose source block is ``streamed`` closed its window (Debezium sends a chunk's READs
    # with the stream's position then: SQL Server's change_lsn/commit_lsn/event_serial_no). Absent: as read.


@runtime_checkable
class PositionWatermarks(Protocol):
    """What a source with ``watermarks = "position"`` adds: where log events and the stream are against a watermark.

    A window opens when the stream reaches a transaction ``after`` its low watermark and closes
    before the first transaction ``after`` its high one, or at a checkpoint whose recorded position
    is ``caught_up`` with the high watermark (an idle server closes windows so).
    """

    watermarks: str

    def event_position(self, change: RawChange) -> Any:
        """The log position of a log event's transaction (None if it has none: it moves no window)."""

    def after(self, watermark: Any, position: Any) -> bool:
        """True if the transaction at ``position`` is not contained in ``watermark`` (it came later)."""

    def caught_up(self, watermark: Any, offset: dict[str, Any]) -> bool:
        """True if the stream position a checkpoint ``offset`` records contains every transaction of ``watermark``."""


def watermarks_of(source: Any) -> str:
    """How ``source`` marks chunk windows: ``SIGNAL_TABLE`` or ``POSITION``."""
    kind = getattr(source, "watermarks", SIGNAL_TABLE)
    if kind not in (SIGNAL_TABLE, POSITION):
        raise ValueError(f"{type(source).__name__}.watermarks is {kind!r}; expected {SIGNAL_TABLE!r} or {POSITION!r}")
    if kind == POSITION and not isinstance(source, PositionWatermarks):
        raise TypeError(f"{type(source).__name__} declares position watermarks but lacks event_position, after "
                        "or caught_up")
    return kind


def incremental_source_for(connector: Any, config: Config, log: Any) -> IncrementalSnapshotSource | None:
    """The capability a connector offers, or None."""
    method = getattr(connector, "incremental_snapshot_source", None)
    if callable(method):
        return method()
    factory: Callable[..., IncrementalSnapshotSource] | None = capability_for(
        type(connector), "incremental_snapshot_source", "incremental")
    return None if factory is None else factory(config, log)
