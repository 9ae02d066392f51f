"""The built-in snapshot modes, snapshot queries and snapshot locks, each an SPI implementation."""

from __future__ import annotations

from typing import ClassVar

from cdc_core.config import Config
from cdc_core.config import ConfigField as F
from cdc_core.relational import TableId


class _Snapshotter:
    """Shared defaults: schema follows data, stream afterwards, no re-snapshot on errors."""

    name: ClassVar[str] = ""
    stream: ClassVar[bool] = True
    on_data_error: ClassVar[bool] = False

    def configure(self, config: Config) -> None:
        """Nothing to configure."""
        self.config = config

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Snapshot when there is no offset yet or the last snapshot did not complete."""
        return not offset_exists or snapshot_in_progress

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Schema goes with the data."""
        return self.should_snapshot_data(offset_exists, snapshot_in_progress)

    def should_stream(self) -> bool:
        """Stream after the snapshot unless the mode says otherwise."""
        return self.stream

    def should_snapshot_on_schema_error(self) -> bool:
        """No."""
        return False

    def should_snapshot_on_data_error(self) -> bool:
        """Only ``when_needed``."""
        return self.on_data_error

    def should_stream_events_starting_from_snapshot(self) -> bool:
        """Stream from where the snapshot was taken (Debezium's default)."""
        return True

    def snapshot_completed(self) -> None:
        """Nothing to do."""

    def snapshot_aborted(self) -> None:
        """Nothing to do."""


class InitialSnapshotter(_Snapshotter):
    """``initial``: snapshot once, when there is no offset, then stream."""

    name = "initial"


class InitialOnlySnapshotter(_Snapshotter):
    """``initial_only``: snapshot once and stop; never stream."""

    name = "initial_only"
    stream = False


class NoDataSnapshotter(_Snapshotter):
    """``no_data`` (formerly ``never``): no rows, only schemas; stream from the slot or stored position."""

    name = "no_data"

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Never."""
        return False

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Schemas are captured when there is no offset."""
        return not offset_exists


class AlwaysSnapshotter(_Snapshotter):
    """``always``: snapshot at every start, then stream."""

    name = "always"

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Always."""
        return True


class WhenNeededSnapshotter(_Snapshotter):
    """``when_needed``: as ``initial``, and again when the stored position is gone from the log."""

    name = "when_needed"
    on_data_error = True

    def should_snapshot_on_schema_error(self) -> bool:
        """Yes."""
        return True


class RecoverySnapshotter(NoDataSnapshotter):
    """``recovery`` (formerly ``schema_only_recovery``): rebuild the schema history, no rows, then stream."""

    name = "recovery"

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Always rebuild the schemas."""
        return True

    def should_snapshot_on_schema_error(self) -> bool:
        """Yes."""
        return True


_PREFIX = "snapshot.mode.configuration.based."
CONFIGURATION_BASED_FIELDS = [
    F(_PREFIX + "snapshot.data", "boolean", False),
    F(_PREFIX + "snapshot.schema", "boolean", False),
    F(_PREFIX + "start.stream", "boolean", False),
    F(_PREFIX + "snapshot.on.schema.error", "boolean", False),
    F(_PREFIX + "snapshot.on.data.error", "boolean", False),
]


class ConfigurationBasedSnapshotter(_Snapshotter):
    """``configuration_based``: each decision is a ``snapshot.mode.configuration.based.*`` property."""

    name = "configuration_based"

    def configure(self, config: Config) -> None:
        """Read the five flags."""
        self.data, self.schema, self.stream_, self.on_schema, self.on_data = (config.get(f) for f in CONFIGURATION_BASED_FIELDS)

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """``snapshot.data``, when there is no offset or the snapshot did not complete."""
        return self.data and (not offset_exists or snapshot_in_progress)

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """``snapshot.schema``."""
        return self.schema and (not offset_exists or snapshot_in_progress)

    def should_stream(self) -> bool:
        """``start.stream``."""
        return self.stream_

    def should_snapshot_on_schema_error(self) -> bool:
        """``snapshot.on.schema.error``."""
        return self.on_schema

    def should_snapshot_on_data_error(self) -> bool:
        """``snapshot.on.data.error``."""
        return self.on_data


BUILTIN_SNAPSHOTTERS = [
    InitialSnapshotter, InitialOnlySnapshotter, NoDataSnapshotter, AlwaysSnapshotter,
    WhenNeededSnapshotter, RecoverySnapshotter, ConfigurationBasedSnapshotter,
]


class SelectAllQuery:
    """``select_all``: every selected column of the table, or the table's ``snapshot.select.statement.overrides``."""

    name: ClassVar[str] = "select_all"

    def configure(self, config: Config) -> None:
        """Read ``snapshot.select.statement.overrides`` and the per-table statements."""
        listed = str(config.get("snapshot.select.statement.overrides") or "")
        self.overrides = {}
        for table in (t.strip() for t in listed.split(",")):
            if table:
                statement = config.get(f"snapshot.select.statement.overrides.{table}")
                if statement:
                    self.overrides[table] = str(statement)

    def snapshot_query(self, table: TableId, columns: list[str], quote) -> str | None:
        """The override for the table, else ``SELECT <columns> FROM <table>``."""
        override = self.overrides.get(table.identifier)
        if override is not None:
            return override
        return f"SELECT {', '.join(columns)} FROM {quote(table)}"


class NoLock:
    """``none``: no table locks."""

    name: ClassVar[str] = "none"

    def configure(self, config: Config) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: TableId, quote) -> str | None:
        """No statement."""
        return None


class SharedLock:
    """``shared``: ``LOCK TABLE ... IN ACCESS SHARE MODE`` (blocks DDL, not writes) while schemas are read."""

    name: ClassVar[str] = "shared"

    def configure(self, config: Config) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: TableId, quote) -> str | None:
        """The SQL-standard shared lock statement."""
        return f"LOCK TABLE {quote(table)} IN ACCESS SHARE MODE"
