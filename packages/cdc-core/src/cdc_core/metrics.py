"""Connector metrics with Debezium's names: the snapshot and streaming groups, readable as plain dicts.

Counters are updated per batch by the engine and per table by connectors; nothing here runs per
event except a few integer additions. ``cdc_core.prometheus`` serves them over HTTP.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from cdc_core.events import Checkpoint


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class CommonMetrics:
    """What both groups share: events seen, filtered and erroneous, the last event and the queue."""

    def __init__(self, queue: Any = None):
        self.queue = queue
        self.total_events = 0
        self.filtered = 0
        self.erroneous = 0
        self.last_event: str | None = None
        self.last_event_ms: int | None = None
        self.captured_tables: set[str] = set()
        self.lock = threading.Lock()

    def common(self) -> dict[str, Any]:
        """The shared attributes, by Debezium name."""
        capacity = self.queue.capacity if self.queue is not None else 0
        remaining = self.queue.remaining_capacity if self.queue is not None else 0
        return {
            "TotalNumberOfEventsSeen": self.total_events,
            "NumberOfEventsFiltered": self.filtered,
            "NumberOfErroneousEvents": self.erroneous,
            "LastEvent": self.last_event or "",
            "MilliSecondsSinceLastEvent": -1 if self.last_event_ms is None else _now_ms() - self.last_event_ms,
            "CapturedTables": sorted(self.captured_tables),
            "QueueTotalCapacity": capacity,
            "QueueRemainingCapacity": remaining,
            "MaxQueueSizeInBytes": 0,
            "CurrentQueueSizeInBytes": 0,
        }


class SnapshotMetrics(CommonMetrics):
    """Debezium's snapshot metrics (``context=snapshot``)."""

    def __init__(self, queue: Any = None):
        super().__init__(queue)
        self.total_tables = 0
        self.remaining_tables = 0
        self.running = False
        self.aborted = False
        self.completed = False
        self.paused = False
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.rows_scanned: dict[str, int] = {}
        self.estimated_rows: dict[str, int] = {}
        self.current_table: str | None = None

    def snapshot_started(self, tables: dict[str, int]) -> None:
        """A snapshot of ``tables`` (name -> estimated rows) begins."""
        with self.lock:
            self.total_tables = self.remaining_tables = len(tables)
            self.estimated_rows = dict(tables)
            self.captured_tables = set(tables)
            self.rows_scanned = {t: 0 for t in tables}
            self.running, self.aborted, self.completed = True, False, False
            self.started_at, self.ended_at = time.monotonic(), None

    def rows(self, table: str, count: int) -> None:
        """``count`` more rows of ``table`` were read."""
        self.current_table = table
        self.rows_scanned[table] = self.rows_scanned.get(table, 0) + count

    def table_completed(self, table: str) -> None:
        """One table is fully read."""
        with self.lock:
            self.remaining_tables = max(0, self.remaining_tables - 1)

    def snapshot_ended(self, completed: bool) -> None:
        """The snapshot completed, or was aborted."""
        with self.lock:
            self.running = False
            self.completed, self.aborted = completed, not completed
            self.ended_at = time.monotonic()

    def values(self) -> dict[str, Any]:
        """Every snapshot attribute, by Debezium name."""
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        duration = 0 if self.started_at is None else int(end - self.started_at)
        return {
            **self.common(),
            "TotalTableCount": self.total_tables,
            "RemainingTableCount": self.remaining_tables,
            "SnapshotRunning": self.running,
            "SnapshotPaused": self.paused,
            "SnapshotAborted": self.aborted,
            "SnapshotCompleted": self.completed,
            "SnapshotDurationInSeconds": duration,
            "SnapshotPausedDurationInSeconds": 0,
            "RowsScanned": dict(self.rows_scanned),
        }


class StreamingMetrics(CommonMetrics):
    """Debezium's streaming metrics (``context=streaming``)."""

    def __init__(self, queue: Any = None):
        super().__init__(queue)
        self.connected = False
        self.behind_ms = -1
        self.committed_transactions = 0
        self.source_position: dict[str, Any] = {}
        self.last_transaction_id: str | None = None
        self.by_op = {"c": 0, "u": 0, "d": 0}

    def values(self) -> dict[str, Any]:
        """Every streaming attribute, by Debezium name."""
        return {
            **self.common(),
            "Connected": self.connected,
            "MilliSecondsBehindSource": self.behind_ms,
            "NumberOfCommittedTransactions": self.committed_transactions,
            "SourceEventPosition": dict(self.source_position),
            "LastTransactionId": self.last_transaction_id or "",
            "TotalNumberOfCreateEventsSeen": self.by_op["c"],
            "TotalNumberOfUpdateEventsSeen": self.by_op["u"],
            "TotalNumberOfDeleteEventsSeen": self.by_op["d"],
        }


class ConnectorMetrics:
    """Both groups of one connector, identified as Debezium does (plugin, server name)."""

    def __init__(self, plugin: str, server: str, queue: Any = None):
        self.plugin = plugin
        self.server = server
        self.snapshot = SnapshotMetrics(queue)
        self.streaming = StreamingMetrics(queue)

    def record_batch(self, records: list) -> None:
        """Account a converted batch: counts by op, the last event, lag behind the source."""
        snap, stream = self.snapshot, self.streaming
        now = _now_ms()
        for r in records:
            if r.__class__ is Checkpoint:
                if r.transaction_end is not None:
                    stream.committed_transactions += 1
                continue
            value = r.value
            if value is None or "source" not in value:
                if value is not None and value.get("status") == "END":
                    stream.committed_transactions += 1
                continue
            op = value.get("op")
            if op is None:  # a schema change event (it has a source, no op)
                continue
            group = snap if op == "r" else stream
            group.total_events += 1
            if op in stream.by_op:
                stream.by_op[op] += 1
            source = value["source"]
            if op == "r":
                table = f"{source.get('schema') or source.get('db')}.{source.get('table')}"
                snap.rows(table, 1)
            else:
                ts = source.get("ts_ms")
                if isinstance(ts, int):
                    stream.behind_ms = max(0, now - ts)
                tx = value.get("transaction")
                if tx:
                    stream.last_transaction_id = tx.get("id")
                stream.source_position = {k: source[k] for k in ("lsn", "txId", "file", "pos", "gtid") if k in source}
            group.last_event = f"{r.topic}:{op}"
            group.last_event_ms = now

    def values(self) -> dict[str, dict[str, Any]]:
        """``{"snapshot": {...}, "streaming": {...}}``."""
        return {"snapshot": self.snapshot.values(), "streaming": self.streaming.values()}
