"""What to do at start: the Snapshotter's answers (``snapshot.mode``) applied to the offsets and the server's state.

Every ``snapshot.mode`` is a Snapshotter of the core (``cdc_core.snapshot``), the built-in ones and
``custom`` alike. The binlog connectors add one rule of their own: rows in the binlog can only be
decoded with the tables' definitions, so whenever there is no usable history (no offsets yet, a
snapshot to repeat) the definitions are read even if the Snapshotter asks for no schema snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.errors import ConnectorError


@dataclass(frozen=True)
class SnapshotPlan:
    """What the connector does at start."""

    data: bool  # read every captured table's rows (op r)
    schema: bool  # read table definitions from the catalog into the history
    stream: bool  # stream the binlog afterwards
    resume: bool  # stream from the stored offset (else from the snapshot's position)


def plan(snapshotter: Any, offset: dict[str, Any] | None, history_exists: bool, position_available: bool,
         where: str, history: str = "the history file (schema.history.internal.file.filename)") -> SnapshotPlan:
    """Decide what to do at start; ConnectorError says how to fix an impossible start (``history`` names the history)."""
    stream = snapshotter.should_stream()
    offset_exists = offset is not None
    in_progress = bool(offset and offset.get("snapshot"))
    data = snapshotter.should_snapshot_data(offset_exists, in_progress)
    if not offset_exists or in_progress or data:
        # Nothing to resume from (or a snapshot to take again): the schema is read either way.
        return SnapshotPlan(data=data, schema=True, stream=stream, resume=False)
    if not stream and not snapshotter.should_snapshot_schema(offset_exists, in_progress):
        return SnapshotPlan(data=False, schema=False, stream=False, resume=True)
    assert offset is not None
    if not position_available:
        if snapshotter.should_snapshot_on_data_error():
            return SnapshotPlan(data=True, schema=True, stream=stream, resume=False)
        raise ConnectorError(
            f"the binlog position in the stored offsets ({offset.get('file')}:{offset.get('pos')}) is no longer "
            f"available on {where} (the binlog was purged): the changes since then cannot be read. A new snapshot is "
            "needed: set snapshot.mode=when_needed, or delete the offsets and the schema history to start over."
        )
    if snapshotter.should_snapshot_schema(offset_exists, in_progress):
        return SnapshotPlan(data=False, schema=True, stream=stream, resume=True)
    if not history_exists:
        if snapshotter.should_snapshot_on_schema_error():
            return SnapshotPlan(data=False, schema=True, stream=stream, resume=True)
        raise ConnectorError(
            f"offsets exist but the schema history is missing or empty, so the binlog's rows cannot be decoded. "
            f"Restore {history}, or set snapshot.mode=recovery to "
            "rebuild it from the current table definitions (safe only if no schema changed since the last stop)."
        )
    return SnapshotPlan(data=False, schema=False, stream=stream, resume=True)
