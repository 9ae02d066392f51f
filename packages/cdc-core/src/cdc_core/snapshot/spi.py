"""The snapshot SPIs (Debezium's io.debezium.spi.snapshot): when to snapshot, what to select, how to lock."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.relational import TableId


@runtime_checkable
class Snapshotter(Protocol):
    """Decides, at each connector start, whether to snapshot data and schema and whether to stream.

    Every built-in ``snapshot.mode`` is a Snapshotter; a third-party one is selected with
    ``snapshot.mode=custom`` and ``snapshot.mode.custom.name=<name>``.
    """

    #: The name that selects it (``snapshot.mode`` or ``snapshot.mode.custom.name``).
    name: ClassVar[str]

    def configure(self, config: Config) -> None:
        """Receive the connector configuration."""

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Snapshot the tables' rows? ``snapshot_in_progress``: the last snapshot did not complete."""

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Capture the tables' schemas (the schema history) before streaming?"""

    def should_stream(self) -> bool:
        """Stream changes from the log after the snapshot (False: stop after it)?"""

    def should_snapshot_on_schema_error(self) -> bool:
        """Re-capture schemas when the schema history is missing or unusable?"""

    def should_snapshot_on_data_error(self) -> bool:
        """Take a new snapshot when the stored log position is no longer available?"""

    def snapshot_completed(self) -> None:
        """Called once a snapshot completed."""

    # Optional (Debezium's default method): ``should_stream_events_starting_from_snapshot() -> bool``, read
    # through ``streams_from_snapshot``. True (the default): streaming starts where the snapshot was taken.
    # False: when the connector resumes with a stored position and takes a snapshot, it first streams from
    # that position up to the log's current end ("catch-up"), then snapshots, then streams on from where the
    # catch-up stopped (PostgreSQL, as Debezium 2.7's PostgresChangeEventSourceCoordinator; MySQL/MariaDB, as
    # in Debezium, have no catch-up step and stream from the snapshot's position whatever it says).

    def snapshot_aborted(self) -> None:
        """Called when a snapshot was stopped before it completed."""


def streams_from_snapshot(snapshotter: Snapshotter) -> bool:
    """The snapshotter's ``should_stream_events_starting_from_snapshot()``, True where it has none."""
    method = getattr(snapshotter, "should_stream_events_starting_from_snapshot", None)
    return True if method is None else bool(method())


@runtime_checkable
class SnapshotQuery(Protocol):
    """Builds the query that reads a table during a snapshot (``snapshot.query.mode``)."""

    name: ClassVar[str]

    def configure(self, config: Config) -> None:
        """Receive the connector configuration."""

    def snapshot_query(self, table: TableId, columns: list[str], quote: "QuoteFn") -> str | None:
        """The SELECT for ``table`` reading ``columns`` (already quoted by ``quote``); None skips the table's rows."""


@runtime_checkable
class SnapshotLock(Protocol):
    """Gives the statement that locks a table while a snapshot reads schemas (``snapshot.locking.mode``)."""

    name: ClassVar[str]

    def configure(self, config: Config) -> None:
        """Receive the connector configuration."""

    def table_lock_statement(self, lock_timeout_ms: int, table: TableId, quote: "QuoteFn") -> str | None:
        """The lock statement for ``table``, or None for no lock."""


class QuoteFn(Protocol):
    """Quotes a table id as the database's SQL expects (``"schema"."table"`` for PostgreSQL)."""

    def __call__(self, table: TableId) -> str: ...
