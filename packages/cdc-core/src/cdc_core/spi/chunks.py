"""The chunked-snapshot capability: a consistent snapshot split into chunks other processes read in parallel.

A connector offers it by naming a class in its ``snapshot_chunks`` class attribute, or, without
touching the connector, by a ``snapshot_chunks`` attribute in the ``chunks`` module next to the
connector's module (``cdc_postgres.chunks`` for ``cdc_postgres.connector``). Runtimes that
spread a snapshot over many workers (cdc-spark) use it; the engine never needs it.

The flow: ``open()`` in one long-lived process creates the snapshot and plans the chunks; any
process then calls ``read_chunk(config, chunk)`` for each chunk (each chunk carries everything
needed to read it, and pickles); once every chunk is read, ``close()`` releases the snapshot.
Streaming then resumes from ``plan.resume_offset`` through the connector itself, so nothing is
lost or read twice at the handoff.

Chunks read at positions of their own (the handoff). Where processes cannot share one
transaction snapshot (MySQL, MariaDB), each chunk reader takes its own consistent read, at a log
position at or after the plan's resume position, and reports it: ``read_chunk`` yields a batch
``[ChunkRead(...)]`` before its rows, and the plan says ``reports_reads=True``. The runtime
collects the reports (every read of a chunk; a chunk may be read more than once) and, once every
chunk was read, asks ``capability.handoff(plan, reports)`` for a small JSON state. The stream
from ``resume_offset`` then goes through ``capability_class.handoff_filter(config, state)`` (a
``HandoffFilter``), which drops the changes a chunk's rows already contain (changes to keys of
chunk *i* logged before chunk *i*'s read position), until the stream has passed every read
position. The state travels with the runtime's offsets, so a restart in that window filters the
same way. Capabilities whose chunks all read one snapshot (PostgreSQL's exported snapshot) leave
``reports_reads`` False and need neither method.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_core.spi.capability import capability_for


@dataclass
class Chunk:
    """One part of one table's snapshot, readable by any process while the snapshot is held.

    ``bounds`` is connector-specific and JSON/pickle friendly (key ranges, page ranges, ...);
    ``first``/``last`` say whether the chunk is the first/last of its table, ``first_overall``
    /``last_overall`` of the whole snapshot (for the ``source.snapshot`` markers).
    """

    table: str
    index: int
    snapshot: str
    bounds: dict[str, Any] = field(default_factory=dict)
    first: bool = True
    last: bool = True
    first_overall: bool = False
    last_overall: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SnapshotPlan:
    """A held snapshot: its id, its chunks, and the connector offset streaming resumes from afterwards.

    ``reports_reads``: each chunk reader reports the log position its rows correspond to
    (``ChunkRead``), and the stream needs the capability's ``handoff_filter`` (module docstring).
    """

    snapshot_id: str
    chunks: list[Chunk]
    resume_offset: dict[str, Any] | None
    tables: list[Table] = field(default_factory=list)
    reports_reads: bool = False


@dataclass(frozen=True)
class ChunkRead:
    """A chunk reader's report: chunk ``index`` of ``table`` was read at ``position`` (connector-specific, JSON).

    ``read_chunk`` yields it alone in a batch, before the chunk's rows, when the plan says
    ``reports_reads``. Runtimes pass every report to ``SnapshotChunks.handoff``; they never read
    ``position`` themselves.
    """

    table: str
    index: int
    position: dict[str, Any]


@runtime_checkable
class HandoffFilter(Protocol):
    """Drops from the stream the changes chunk reads already contain (see the module docstring).

    ``filter`` takes one batch as the connector yields it (RawChanges, Checkpoints, ChangeRecords)
    and returns it without those changes (it may turn a key-changing update into the half that is
    still needed). ``state`` is the JSON state to rebuild an equal filter after a restart at the
    point of the stream just filtered, or None once the stream passed every read position (from
    then on ``filter`` keeps everything); ``version`` grows whenever ``state`` changes.
    """

    version: int

    def filter(self, batch: Sequence[Any]) -> list[Any]:
        """The batch without the changes the chunk reads contain."""

    def state(self) -> dict[str, Any] | None:
        """The state after the batches filtered so far (None: the handoff is over)."""


@runtime_checkable
class SnapshotChunks(Protocol):
    """A connector's snapshot, split into chunks read in parallel (optional connector capability).

    ``__init__`` does no I/O. ``needs_snapshot`` says whether a run resuming from ``offset``
    (None for a new run) takes a snapshot, following ``snapshot.mode``. ``open`` makes the
    snapshot consistent with the log: with ``for_streaming`` the log position to stream from
    afterwards is fixed (``plan.resume_offset``), e.g. by creating a replication slot with an
    exported snapshot. ``tables`` limits the snapshot to those ``schema.table`` identifiers
    (None: every captured table); ``chunk_rows`` is the target rows per chunk.
    ``wait_read`` blocks until every chunk reported it was read (or ``timeout`` seconds), for
    holders that cannot otherwise know when readers are done; ``close`` releases the snapshot.
    A capability whose readers cannot tell it (no channel such as PostgreSQL's NOTIFY) sets the
    class attribute ``observes_reads = False``: a runtime holding its snapshot for readers
    elsewhere must then learn that every chunk was read by itself before calling ``close``
    (its ``wait_read`` returns 0 at once).
    """

    def __init__(self, config: Config, log: Any) -> None: ...

    def needs_snapshot(self, offset: dict[str, Any] | None) -> bool:
        """True if a run starting from ``offset`` takes a snapshot first."""

    def describe(self, tables: list[str] | None) -> list[Table]:
        """The current definitions of the captured tables (limited to ``tables`` if given)."""

    def open(self, *, for_streaming: bool, tables: list[str] | None, chunk_rows: int) -> SnapshotPlan:
        """Create and hold a consistent snapshot; plan its chunks."""

    def wait_read(self, plan: SnapshotPlan, timeout: float) -> int:
        """Wait until every chunk of ``plan`` was read (again) or ``timeout`` s passed; the number of chunk reads seen."""

    def close(self) -> None:
        """Release the snapshot and its connections."""

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint]]:
        """Read one chunk inside the held snapshot: batches of ``op: r`` changes (runs in any process).

        With ``plan.reports_reads`` the first batch is ``[ChunkRead(...)]``.
        """

    # Only when plans have ``reports_reads`` (module docstring):
    #
    # def handoff(self, plan: SnapshotPlan, reports: Mapping[tuple[str, int], list[dict]]) -> dict | None:
    #     """The handoff state from every reported read position by (table, index); no I/O."""
    #
    # @classmethod
    # def handoff_filter(cls, config: Config, state: dict) -> HandoffFilter:
    #     """A filter for the stream from ``plan.resume_offset`` (or a later offset the state came with)."""


def handoff_state(capability: Any, plan: SnapshotPlan,
                  reports: Mapping[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The capability's handoff state for ``plan`` (None when its chunks share one snapshot)."""
    if not plan.reports_reads:
        return None
    return capability.handoff(plan, reports)


def handoff_filter(capability_class: type, config: Config, state: dict[str, Any] | None) -> HandoffFilter | None:
    """The capability's filter for a handoff ``state`` (None without a state)."""
    if state is None:
        return None
    return capability_class.handoff_filter(config, state)


def snapshot_chunks_for(connector_class: type) -> type | None:
    """The SnapshotChunks class a connector offers, or None if it offers none."""
    return capability_for(connector_class, "snapshot_chunks", "chunks")
