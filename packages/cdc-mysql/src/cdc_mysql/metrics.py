"""Debezium's MySQL/MariaDB-specific metrics: the binlog streaming attributes and the schema history group.

Both hang off the engine's ``ConnectorMetrics`` (``StreamingMetrics.extension`` and
``ConnectorMetrics.group``), so their counters outlive the connector's restarts. The binlog
position, file and GTID set are read from the running streamer when asked, not per event.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

#: Name of the streaming-group extension and the context of the schema history group.
BINLOG_EXTENSION = "binlog"
#: Name of the snapshot-group extension (``HoldingGlobalLock``).
SNAPSHOT_LOCK_EXTENSION = "binlog-snapshot"
SCHEMA_HISTORY_CONTEXT = "schema-history"


class BinlogMetrics:
    """``BinlogFilename``, ``BinlogPosition``, ``IsGtidModeEnabled``, ``GtidSet`` and the binlog event counters."""

    def __init__(self) -> None:
        #: The running ``BinlogStreamer`` (None before streaming starts); positions are read from it.
        self.streamer: Any = None
        self.gtid_mode = False
        self.skipped_events = 0
        self.disconnects = 0
        # Counted by ``cdc_mysql.lookahead`` only while ``binlog.buffer.size`` > 0 (as Debezium's buffer does).
        self.rolled_back_transactions = 0
        self.not_well_formed_transactions = 0
        self.large_transactions = 0
        self._last: tuple[str, int, str] = ("", 0, "")

    def values(self) -> dict[str, Any]:
        """The attributes by Debezium name."""
        streamer = self.streamer
        if streamer is not None:
            reader = streamer.reader
            file = getattr(reader, "log_file", None) or streamer.file
            pos = getattr(reader, "log_pos", None) or streamer.next_pos
            self._last = (str(file), int(pos), str(streamer.gtids) if streamer.gtids else "")
        file, pos, gtids = self._last
        return {
            "BinlogFilename": file,
            "BinlogPosition": pos,
            "IsGtidModeEnabled": self.gtid_mode,
            "GtidSet": gtids,
            "NumberOfSkippedEvents": self.skipped_events,
            "NumberOfDisconnects": self.disconnects,
            "NumberOfRolledBackTransactions": self.rolled_back_transactions,
            "NumberOfNotWellFormedTransactions": self.not_well_formed_transactions,
            "NumberOfLargeTransactions": self.large_transactions,
        }


class SnapshotLockMetrics:
    """The MySQL/MariaDB snapshot metric ``HoldingGlobalLock``: true while the snapshot holds a global or table lock."""

    def __init__(self) -> None:
        self.holding_global_lock = False

    def values(self) -> dict[str, Any]:
        """The attribute by Debezium name."""
        return {"HoldingGlobalLock": self.holding_global_lock}


class SchemaHistoryMetrics:
    """Debezium's ``context=schema-history`` group: recovery progress and the changes applied since."""

    #: Debezium's status names, and the numbers its MXBean's ``getStatus`` returns (what Prometheus gets).
    STATUS_CODES = {"STOPPED": 0, "RECOVERING": 1, "RUNNING": 2}

    def __init__(self) -> None:
        self.status = "STOPPED"
        self.recovery_started_at: float | None = None
        self.changes_recovered = 0
        self.changes_applied = 0
        self.last_recovered: dict[str, Any] | None = None
        self.last_applied: dict[str, Any] | None = None
        self.last_recovered_at: float | None = None
        self.last_applied_at: float | None = None
        self.lock = threading.Lock()

    def recovery_started(self) -> None:
        """Recovery from the history store begins."""
        with self.lock:
            self.status = "RECOVERING"
            self.recovery_started_at = time.time()

    def recovered(self, record: dict[str, Any]) -> None:
        """One record was read from the store during recovery."""
        self.last_recovered = record
        self.last_recovered_at = time.time()
        self.changes_recovered += 1

    def applied(self, record: dict[str, Any]) -> None:
        """One record was applied to the in-memory schema (recovered, or recorded while running)."""
        self.last_applied = record
        self.last_applied_at = time.time()
        self.changes_applied += 1

    def running(self) -> None:
        """Recovery finished (or there was nothing to recover): the history records new changes."""
        with self.lock:
            self.status = "RUNNING"

    def stopped(self) -> None:
        """The connector stopped."""
        with self.lock:
            self.status = "STOPPED"

    def values(self) -> dict[str, Any]:
        """The attributes by Debezium name (``RecoveryStartTime`` in epoch seconds, -1 before any recovery)."""
        now = time.time()
        return {
            "Status": self.status,
            "RecoveryStartTime": -1 if self.recovery_started_at is None else int(self.recovery_started_at),
            "ChangesRecovered": self.changes_recovered,
            "ChangesApplied": self.changes_applied,
            "MilliSecondsSinceLastAppliedChange":
                -1 if self.last_applied_at is None else int((now - self.last_applied_at) * 1000),
            "LastAppliedChange": "" if self.last_applied is None else json.dumps(self.last_applied, default=str),
            "MilliSecondsSinceLastRecoveredChange":
                -1 if self.last_recovered_at is None else int((now - self.last_recovered_at) * 1000),
            "LastRecoveredChange": "" if self.last_recovered is None else json.dumps(self.last_recovered, default=str),
        }

    def numeric_values(self) -> dict[str, Any]:
        """``values()`` with ``Status`` as Debezium's MXBean number (STOPPED 0, RECOVERING 1, RUNNING 2)."""
        values = self.values()
        values["Status"] = self.STATUS_CODES[values["Status"]]
        return values


def binlog_metrics(metrics: Any) -> BinlogMetrics | None:
    """The binlog attributes of an engine's ``ConnectorMetrics`` (None without metrics)."""
    return None if metrics is None else metrics.streaming.extension(BINLOG_EXTENSION, BinlogMetrics)


def snapshot_lock_metrics(metrics: Any) -> SnapshotLockMetrics | None:
    """The ``HoldingGlobalLock`` attribute of an engine's snapshot group (None without metrics)."""
    return None if metrics is None else metrics.snapshot.extension(SNAPSHOT_LOCK_EXTENSION, SnapshotLockMetrics)


def schema_history_metrics(metrics: Any) -> SchemaHistoryMetrics | None:
    """The schema history group of an engine's ``ConnectorMetrics`` (None without metrics)."""
    return None if metrics is None else metrics.group(SCHEMA_HISTORY_CONTEXT, SchemaHistoryMetrics)
