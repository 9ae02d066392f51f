"""SQL Server's per-database metrics: the ``database=<name>`` MBeans beside the task's.

Debezium 2.7.4's SQL Server connector registers, per context, one task MBean
``debezium.sql_server:type=connector-metrics,server=<prefix>,task=0,context=streaming`` (the
engine's groups: queue, connection, totals) and one per database
``...,task=0,context=streaming,database=<name>`` (SqlServerStreamingPartitionMetrics /
SqlServerSnapshotPartitionMetrics: the events of that database, and the snapshot one also its
snapshot's SnapshotMeter: TotalTableCount, RemainingTableCount, SnapshotRunning/Completed/Aborted,
RowsScanned...). Here the per-database ones are
groups of the engine's ConnectorMetrics named ``snapshot,database=<name>`` and
``streaming,database=<name>`` (so ``mbean_name`` gives Debezium's name, and Prometheus labels them
``context="streaming,database=<name>"``), counted from the batches the database's reader yields;
the snapshot group's SnapshotMeter is a ``cdc_core.metrics.SnapshotMetrics`` driven by
``metered_snapshot`` around the database's snapshot, which also fills the task-level group's table
counts and snapshot state (``_TaskMeter``: beyond Debezium, whose task MBean has the queue attributes only).
"""

from __future__ import annotations

import time
import weakref
from collections import Counter
from collections.abc import Iterator
from typing import Any

from cdc_core.events import RawChange
from cdc_core.metrics import SnapshotMetrics

_OPS = {"c": "Create", "u": "Update", "d": "Delete"}
#: The SnapshotMeter attributes of Debezium's SqlServerSnapshotPartitionMetrics (the rest of SnapshotMetrics'
#: are the task's: queue, events filtered...).
_METER = ("TotalTableCount", "RemainingTableCount", "SnapshotRunning", "SnapshotPaused", "SnapshotAborted",
          "SnapshotCompleted", "SnapshotDurationInSeconds", "SnapshotPausedDurationInSeconds", "RowsScanned",
          "ChunkId", "ChunkFrom", "ChunkTo", "TableFrom", "TableTo")


class DatabaseMetrics:
    """One database's events in one context (snapshot or streaming); written by the connector's thread."""

    def __init__(self, streaming: bool):
        self.streaming = streaming
        self.total = 0
        self.by_op = {"c": 0, "u": 0, "d": 0}
        self.last_event: str | None = None
        self.last_event_ms: int | None = None
        self.behind_ms: int | None = None
        #: ``schema.table`` of the captured tables of this database (CapturedTables).
        self.captured: list[str] = []
        #: The snapshot group's SnapshotMeter (None in the streaming group).
        self.meter = None if streaming else SnapshotMetrics()

    def values(self) -> dict[str, Any]:
        """The attributes, by Debezium's names."""
        since = -1 if self.last_event_ms is None else int(time.time() * 1000) - self.last_event_ms
        out: dict[str, Any] = {"TotalNumberOfEventsSeen": self.total, "LastEvent": self.last_event,
                               "MilliSecondsSinceLastEvent": since}
        if self.streaming:
            for op, name in _OPS.items():
                out[f"TotalNumberOf{name}EventsSeen"] = self.by_op[op]
            out["MilliSecondsBehindSource"] = -1 if self.behind_ms is None else self.behind_ms
        else:
            meter = self.meter.values()
            out.update((name, meter[name]) for name in _METER)
        out["CapturedTables"] = list(self.captured)
        return out


def database_groups(metrics: Any, db: str) -> tuple[DatabaseMetrics, DatabaseMetrics] | None:
    """The snapshot and streaming groups of ``db`` (None without metrics)."""
    if metrics is None:
        return None
    return (metrics.group(f"snapshot,database={db}", lambda: DatabaseMetrics(False)),
            metrics.group(f"streaming,database={db}", lambda: DatabaseMetrics(True)))


def counted(batches: Iterator[list[Any]], metrics: Any, db: str) -> Iterator[list[Any]]:
    """Pass ``batches`` on, counting each database's events into its groups."""
    groups = database_groups(metrics, db)
    if groups is None:
        yield from batches
        return
    snapshot, streaming = groups
    for batch in batches:
        ops = [item.op for item in batch if item.__class__ is RawChange]
        if ops:
            for op in dict.fromkeys(ops):  # each op once, in order of appearance (as Counter, at half its cost)
                n = ops.count(op)
                if op == "r":
                    snapshot.total += n
                else:
                    streaming.total += n
                    streaming.by_op[op] = streaming.by_op.get(op, 0) + n
            last = next(item for item in reversed(batch) if item.__class__ is RawChange)
            now = int(time.time() * 1000)
            group = snapshot if last.op == "r" else streaming
            group.last_event = f"{last.table.id}:{last.op}"
            group.last_event_ms = now
            ts = last.source.get("ts_ms")
            if group is streaming and isinstance(ts, int) and ts:
                streaming.behind_ms = max(0, now - ts)
        yield batch


class _TaskSnapshot:
    """The databases whose initial snapshot the task-level group is showing, and whether one was aborted."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.aborted = False


#: The task-level snapshot group -> the database snapshots it aggregates (several databases run in turn).
_TASK: weakref.WeakKeyDictionary[Any, _TaskSnapshot] = weakref.WeakKeyDictionary()


class _TaskMeter:
    """The task-level ``context=snapshot`` group's share of one database's initial snapshot.

    Debezium 2.7.4's SqlServerSnapshotTaskMetrics exposes only the queue attributes (SqlServerTaskMetricsMXBean);
    its SnapshotMeter lives in the partition MBeans. cdc's task group is the core's SnapshotMetrics, which
    the ad hoc snapshots and ``cdc run``'s progress line already use (and whose RowsScanned the engine
    counts from the READs it builds, by ``schema.table``), so rather than leave its TotalTableCount,
    RemainingTableCount, SnapshotRunning and SnapshotCompleted at 0/false during the initial snapshot, it
    shows the databases' snapshots together: all their tables (with several databases a ``schema.table``
    of two databases is one RowsScanned entry, counted twice in TotalTableCount), running until the last
    one ends, completed if none was aborted.
    """

    def __init__(self, task: Any, db: str):
        self.task = task
        self.db = db
        self.state = _TASK.setdefault(task, _TaskSnapshot())

    def started(self, tables: list[str]) -> None:
        task, state = self.task, self.state
        if state.running:  # another database's snapshot runs: this one's tables join it
            with task.lock:
                task.total_tables += len(tables)
                task.remaining_tables += len(tables)
                for t in tables:
                    task.estimated_rows.setdefault(t, 0)
                    task.rows_scanned.setdefault(t, 0)
                task.captured_tables |= set(tables)
        else:
            state.aborted = False
            task.snapshot_started({t: 0 for t in tables})
        state.running.add(self.db)

    def table_completed(self, table: str) -> None:
        self.task.table_completed(table)

    def ended(self, completed: bool) -> None:
        state = self.state
        state.running.discard(self.db)
        state.aborted = state.aborted or not completed
        if not state.running:
            self.task.snapshot_ended(not state.aborted)


def metered_snapshot(batches: Iterator[list[Any]], metrics: Any, db: str, tables: list[str],
                     task_level: bool = True) -> Iterator[list[Any]]:
    """Pass a snapshot of ``tables`` (``schema.table``, in reading order) on, driving ``db``'s SnapshotMeter and,
    with ``task_level``, the task-level group's table counts and state (``_TaskMeter``).

    A table counts as done once a row of a later table (or the end) comes; the snapshot as completed
    only if ``batches`` ran out (a stop or an error in between leaves it aborted).
    """
    groups = database_groups(metrics, db)
    if groups is None:
        yield from batches
        return
    meter = groups[0].meter
    task = _TaskMeter(metrics.snapshot, db) if task_level else None
    meter.snapshot_started({t: 0 for t in tables})
    if task is not None:
        task.started(tables)
    order = {t: i for i, t in enumerate(tables)}
    done = 0  # tables[:done] are read

    def table_done(table: str) -> None:
        meter.table_completed(table)
        if task is not None:
            task.table_completed(table)

    completed = False
    try:
        for batch in batches:
            rows: Counter[str] = Counter(item.table.id.identifier for item in batch
                                         if item.__class__ is RawChange and item.op == "r")
            for table, n in rows.items():
                meter.rows(table, n)
                at = order.get(table, done)
                while done < at:
                    table_done(tables[done])
                    done += 1
            yield batch
        while done < len(tables):
            table_done(tables[done])
            done += 1
        completed = True
    finally:
        meter.snapshot_ended(completed)
        if task is not None:
            task.ended(completed)


def metered_blocking_snapshot(batches: Iterator[list[Any]], metrics: Any, db: str,
                              tables: list[str]) -> Iterator[list[Any]]:
    """Pass a blocking snapshot of ``tables`` (``schema.table``, in reading order) on, driving ``db``'s SnapshotMeter:
    Debezium 2.7.4's blocking snapshot reports to the same partition metrics as the initial one, so its
    ``database=<name>`` group's RowsScanned are the blocking snapshot's (AbstractBlockingSnapshotTest
    .executeBlockingSnapshotWhileStreaming reads them). The task-level group is the core's (cdc_core.incremental)."""
    return metered_snapshot(batches, metrics, db, tables, task_level=False)
