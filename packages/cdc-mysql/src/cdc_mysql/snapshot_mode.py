"""The snapshot decision: from ``snapshot.mode``, the stored offset and the server's state, what to do at start.

Kept in one small module so it can move onto the core's Snapshotter SPI: each mode answers the
same questions Debezium's Snapshotter does (snapshot data? schema? stream? what on a missing
binlog position or a missing history?).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.config import Config
from cdc_core.errors import ConnectorError

from cdc_mysql import config as myc


@dataclass(frozen=True)
class SnapshotPlan:
    """What the connector does at start."""

    data: bool  # read every captured table's rows (op r)
    schema: bool  # read table definitions from the catalog into the history
    stream: bool  # stream the binlog afterwards
    resume: bool  # stream from the stored offset (else from the snapshot's position)


@dataclass(frozen=True)
class ModeAnswers:
    """One snapshot mode's answers (Debezium's Snapshotter methods, as data)."""

    data: bool
    schema: bool
    stream: bool
    data_again: bool = False  # snapshot data even when a completed snapshot's offsets exist
    on_data_error: bool = False  # snapshot data when the stored binlog position is gone
    on_schema_error: bool = False  # snapshot schema when the history is missing


MODES: dict[str, ModeAnswers] = {
    "initial": ModeAnswers(data=True, schema=True, stream=True),
    "initial_only": ModeAnswers(data=True, schema=True, stream=False),
    "no_data": ModeAnswers(data=False, schema=True, stream=True),
    "never": ModeAnswers(data=False, schema=True, stream=True),
    "recovery": ModeAnswers(data=False, schema=True, stream=True, on_schema_error=True),
    "when_needed": ModeAnswers(data=True, schema=True, stream=True, on_data_error=True, on_schema_error=True),
    "always": ModeAnswers(data=True, schema=True, stream=True, data_again=True),
}


def answers(config: Config) -> ModeAnswers:
    """The answers of the configured ``snapshot.mode`` (configuration_based reads its sub-properties)."""
    mode = config.get(myc.SNAPSHOT_MODE)
    if mode == "configuration_based":
        return ModeAnswers(
            data=config.get(myc.CB_SNAPSHOT_DATA), schema=config.get(myc.CB_SNAPSHOT_SCHEMA) or config.get(myc.CB_SNAPSHOT_DATA),
            stream=config.get(myc.CB_START_STREAM), on_data_error=config.get(myc.CB_ON_DATA_ERROR),
            on_schema_error=config.get(myc.CB_ON_SCHEMA_ERROR),
        )
    if mode == "custom":
        raise ConnectorError("snapshot.mode=custom: custom snapshotters are not supported yet by the MySQL/MariaDB "
                             "connectors; choose one of the built-in snapshot.mode values")
    return MODES[mode]


def plan(config: Config, offset: dict[str, Any] | None, history_exists: bool, position_available: bool,
         where: str) -> SnapshotPlan:
    """Decide what to do at start; ConnectorError says how to fix an impossible start."""
    mode = config.get(myc.SNAPSHOT_MODE)
    a = answers(config)
    if offset is None or offset.get("snapshot"):
        # Never snapshotted, or the snapshot did not complete: start over.
        return SnapshotPlan(data=a.data, schema=True, stream=a.stream, resume=False)
    if mode == "initial_only":
        return SnapshotPlan(data=False, schema=False, stream=False, resume=True)
    if a.data_again:
        return SnapshotPlan(data=True, schema=True, stream=a.stream, resume=False)
    if not position_available:
        if a.on_data_error:
            return SnapshotPlan(data=True, schema=True, stream=a.stream, resume=False)
        raise ConnectorError(
            f"the binlog position in the stored offsets ({offset.get('file')}:{offset.get('pos')}) is no longer "
            f"available on {where} (the binlog was purged): the changes since then cannot be read. A new snapshot is "
            "needed: set snapshot.mode=when_needed, or delete the offsets and the schema history to start over."
        )
    if mode == "recovery":
        return SnapshotPlan(data=False, schema=True, stream=a.stream, resume=True)
    if not history_exists:
        if a.on_schema_error:
            return SnapshotPlan(data=False, schema=True, stream=a.stream, resume=True)
        raise ConnectorError(
            "offsets exist but the schema history is missing or empty, so the binlog's rows cannot be decoded. "
            "Restore the history file (schema.history.internal.file.filename), or set snapshot.mode=recovery to "
            "rebuild it from the current table definitions (safe only if no schema changed since the last stop)."
        )
    return SnapshotPlan(data=False, schema=False, stream=a.stream, resume=True)
