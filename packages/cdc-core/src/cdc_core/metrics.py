"""Connector metrics with Debezium's names: the snapshot and streaming groups, readable as plain dicts.

Counters are updated per batch by the engine and per table by connectors; nothing here runs per
event except a few integer additions. ``cdc_core.prometheus`` serves them over HTTP.

Connectors add their own attributes through two extension points: ``CommonMetrics.extension``
(more attributes in the snapshot or streaming group, e.g. MySQL's ``BinlogFilename``) and
``ConnectorMetrics.group`` (another context, e.g. ``schema-history``). Both keep their object for
the engine's lifetime, so counters survive the connector's restarts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from operator import attrgetter, itemgetter
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
        self.extensions: dict[str, Any] = {}

    def extension(self, name: str, factory: Callable[[], Any]) -> Any:
        """The connector-specific attributes named ``name``: made once by ``factory``, an object whose
        ``values()`` dict is added to this group's attributes."""
        with self.lock:
            found = self.extensions.get(name)
            if found is None:
                found = self.extensions[name] = factory()
            return found

    def extended(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` plus every extension's attributes."""
        for ext in list(self.extensions.values()):
            values.update(ext.values())
        return values

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
            "MaxQueueSizeInBytes": getattr(self.queue, "max_bytes", 0),
            "CurrentQueueSizeInBytes": getattr(self.queue, "current_bytes", 0),
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
        # The incremental-snapshot attributes (Debezium's ChunkId, ChunkFrom, ChunkTo, TableFrom, TableTo).
        self.chunk_id = ""
        self.chunk_from = ""
        self.chunk_to = ""
        self.table_from = ""
        self.table_to = ""
        self.paused_since: float | None = None
        self.paused_seconds = 0.0

    def chunk(self, chunk_id: str, chunk_from: str, chunk_to: str, table_from: str, table_to: str) -> None:
        """An incremental-snapshot chunk was emitted: its id, key bounds, and its table's key bounds."""
        self.chunk_id, self.chunk_from, self.chunk_to = chunk_id, chunk_from, chunk_to
        self.table_from, self.table_to = table_from, table_to

    def set_paused(self, paused: bool) -> None:
        """An incremental snapshot was paused or resumed."""
        with self.lock:
            if paused and self.paused_since is None:
                self.paused_since = time.monotonic()
            elif not paused and self.paused_since is not None:
                self.paused_seconds += time.monotonic() - self.paused_since
                self.paused_since = None
            self.paused = paused

    def snapshot_started(self, tables: dict[str, int], unread: tuple[str, ...] = ()) -> None:
        """A snapshot of ``tables`` (name -> estimated rows) begins; ``unread``: captured tables whose rows are never
        read (the signal table), counted and completed at once with 0 rows, as Debezium 2.7.4's
        RelationalSnapshotChangeEventSource does for a table without a SELECT (``dataCollectionSnapshotCompleted``
        with 0 before the first row is read: in TotalTableCount and RowsScanned, not in RemainingTableCount)."""
        with self.lock:
            self.total_tables = len(tables) + len(unread)
            self.remaining_tables = len(tables)
            self.estimated_rows = {**dict.fromkeys(unread, 0), **tables}
            self.captured_tables = set(tables) | set(unread)
            self.rows_scanned = {t: 0 for t in (*unread, *tables)}
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
        return self.extended({
            **self.common(),
            "TotalTableCount": self.total_tables,
            "RemainingTableCount": self.remaining_tables,
            "SnapshotRunning": self.running,
            "SnapshotPaused": self.paused,
            "SnapshotAborted": self.aborted,
            "SnapshotCompleted": self.completed,
            "SnapshotDurationInSeconds": duration,
            "SnapshotPausedDurationInSeconds": int(self.paused_seconds + (
                0 if self.paused_since is None else time.monotonic() - self.paused_since)),
            "RowsScanned": dict(self.rows_scanned),
            "ChunkId": self.chunk_id,
            "ChunkFrom": self.chunk_from,
            "ChunkTo": self.chunk_to,
            "TableFrom": self.table_from,
            "TableTo": self.table_to,
        })


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
        return self.extended({
            **self.common(),
            "Connected": self.connected,
            "MilliSecondsBehindSource": self.behind_ms,
            "NumberOfCommittedTransactions": self.committed_transactions,
            "SourceEventPosition": dict(self.source_position),
            "LastTransactionId": self.last_transaction_id or "",
            "TotalNumberOfCreateEventsSeen": self.by_op["c"],
            "TotalNumberOfUpdateEventsSeen": self.by_op["u"],
            "TotalNumberOfDeleteEventsSeen": self.by_op["d"],
        })


_VALUE, _OP = attrgetter("value"), itemgetter("op")
_STREAMING_OPS = frozenset({"c", "u", "d"})


def _streaming_op_counts(records: list) -> tuple[dict[str, int], int, Any] | None:
    """For a batch of creates, updates and deletes (with checkpoints between them, but no tombstone, transaction
    or schema change record): ``({"r": 0, "c": n, "u": n, "d": n}, transactions ended, the last event)``; else None."""
    events, committed = records, 0
    try:
        ops = list(map(_OP, map(_VALUE, events)))
    except (AttributeError, TypeError, KeyError):  # a Checkpoint, a tombstone, a value without an op
        events = [r for r in records if r.__class__ is not Checkpoint]
        if len(events) == len(records):
            return None
        try:
            ops = list(map(_OP, map(_VALUE, events)))
        except (AttributeError, TypeError, KeyError):
            return None
        committed = sum(1 for r in records if r.__class__ is Checkpoint and r.transaction_end is not None)
    kinds = set(ops)
    if not kinds or not kinds <= _STREAMING_OPS:
        return None
    counts = {"r": 0, "c": ops.count("c") if "c" in kinds else 0, "u": ops.count("u") if "u" in kinds else 0,
              "d": ops.count("d") if "d" in kinds else 0}
    return counts, committed, events[-1]


def last_event(record: Any) -> tuple:
    """A change record as the streaming metrics keep their last event: ``(topic, op, source ts_ms, transaction id,
    source position)`` (small, so a worker process can hand it back)."""
    value = record.value
    source = value["source"]
    tx = value.get("transaction")
    return (record.topic, value["op"], source.get("ts_ms"), tx.get("id") if tx else None,
            {k: source[k] for k in ("lsn", "txId", "file", "pos", "gtid") if k in source})


def last_change(records: list) -> Any:
    """The last change event (a value with an op) of ``records``, or None."""
    for r in reversed(records):
        if r.__class__ is not Checkpoint and (value := r.value) is not None and value.get("op") is not None:
            return r
    return None


def _table_of(topic: str, records: list) -> str:
    """The ``schema.table`` (or ``db.table``) of the first snapshot record on ``topic``."""
    for r in records:
        if r.__class__ is not Checkpoint and r.topic == topic and r.value is not None and r.value.get("op") == "r":
            source = r.value["source"]
            return f"{source.get('schema') or source.get('db')}.{source.get('table')}"
    return topic


class ConnectorMetrics:
    """Both groups of one connector, identified as Debezium does (plugin, server name)."""

    def __init__(self, plugin: str, server: str, queue: Any = None, tags: dict[str, str] | None = None,
                 task: str | None = None):
        self.plugin = plugin
        self.server = server
        #: Connectors whose snapshot/streaming MBeans name the task (SQL Server: ``server=..,task=0,context=..``).
        self.task = task
        #: A group's own task where it is not ``task`` (SQL Server with tasks.max > 1: a database's groups are named
        #: after the task that streams it), by context; a context may also carry ``task=<id>`` after its name.
        self.context_tasks: dict[str, str] = {}
        #: ``custom.metric.tags``: appended to every MBean name and added as Prometheus labels.
        self.tags: dict[str, str] = dict(tags or {})
        self.snapshot = SnapshotMetrics(queue)
        self.streaming = StreamingMetrics(queue)
        #: Further contexts a connector adds (``group``), by context name.
        self.groups: dict[str, Any] = {}
        self._lock = threading.Lock()

    def mbean_name(self, context: str) -> str:
        """The JMX name Debezium gives a group: ``debezium.<plugin>:type=connector-metrics,context=..,server=..[,tags]``."""
        tags = "".join(f",{k}={v}" for k, v in self.tags.items())
        head, *keys = context.split(",")
        if self.task is not None and head in ("snapshot", "streaming"):
            # A group context may carry its own keys after the context ("streaming,database=db1": SQL Server's
            # per-database MBeans, server, task, context, database in that order); a ``task=<id>`` key, or the
            # group's entry in ``context_tasks``, names its task instead of the engine's.
            task = self.context_tasks.get(context, self.task)
            rest = []
            for key in keys:
                if key.startswith("task="):
                    task = key[5:]
                else:
                    rest.append(f",{key}")
            return (f"debezium.{self.plugin}:type=connector-metrics,server={self.server},task={task},"
                    f"context={head}{''.join(rest)}{tags}")
        return f"debezium.{self.plugin}:type=connector-metrics,context={context},server={self.server}{tags}"

    def group(self, context: str, factory: Callable[[], Any]) -> Any:
        """The metrics group of ``context`` (e.g. ``schema-history``), made once by ``factory``: an object
        with ``values()`` (by Debezium name) and optionally ``numeric_values()`` for Prometheus."""
        with self._lock:
            found = self.groups.get(context)
            if found is None:
                found = self.groups[context] = factory()
            return found

    def record_serialized(self, count: int, topic: str, built: list) -> None:
        """Account ``count`` snapshot reads of ``topic`` serialized by a worker process (``built``: the records
        built beside them, which name the table)."""
        self.snapshot.total_events += count
        self.snapshot.rows(_table_of(topic, built), count)

    def record_streamed(self, counts: dict[str, int], last: tuple | None) -> None:
        """Account change events a worker process built and serialized while streaming (``counts`` by op, ``last``:
        ``last_event`` of them)."""
        stream = self.streaming
        for op, n in counts.items():
            stream.total_events += n
            if op in stream.by_op:
                stream.by_op[op] += n
        if last is not None:
            self._streamed_last(last)

    def record_batch(self, records: list) -> None:
        """Account a converted batch: counts by op and rows per table; the last event and the lag from
        the batch's last data event only (the per-record work is a few integer additions)."""
        snap, stream = self.snapshot, self.streaming
        streamed = _streaming_op_counts(records)  # change events (and checkpoints): no per-record loop
        counts, committed, last = streamed or ({"r": 0, "c": 0, "u": 0, "d": 0}, 0, None)
        rows: dict[Any, int] = {}
        for r in records if streamed is None else ():
            if r.__class__ is Checkpoint:
                if r.transaction_end is not None:
                    committed += 1
                continue
            value = r.value
            op = value.get("op") if value is not None else None
            if op is None:  # tombstones, schema changes, transaction BEGIN/END
                if value is not None and value.get("status") == "END":
                    committed += 1
                continue
            if op in counts:
                counts[op] += 1
            else:
                counts[op] = 1
            if op == "r":
                topic = r.topic
                rows[topic] = rows.get(topic, 0) + 1
            last = r
        stream.committed_transactions += committed
        if last is None:
            return
        snapshot_events = counts.pop("r")
        snap.total_events += snapshot_events
        stream.total_events += sum(counts.values())
        for op in ("c", "u", "d"):
            stream.by_op[op] += counts[op]
        for topic, n in rows.items():
            snap.rows(_table_of(topic, records), n)
        if last.value["op"] == "r":
            snap.last_event = f"{last.topic}:r"
            snap.last_event_ms = _now_ms()
        else:
            self._streamed_last(last_event(last))

    def _streamed_last(self, last: tuple) -> None:
        """The streaming group's last event, lag, transaction and position from ``last_event``'s tuple."""
        topic, op, ts, tx_id, position = last
        stream = self.streaming
        now = _now_ms()
        stream.last_event = f"{topic}:{op}"
        stream.last_event_ms = now
        if isinstance(ts, int):
            stream.behind_ms = max(0, now - ts)
        if tx_id is not None:
            stream.last_transaction_id = tx_id
        stream.source_position = position

    def values(self) -> dict[str, dict[str, Any]]:
        """``{"snapshot": {...}, "streaming": {...}}`` and any added context."""
        values = {"snapshot": self.snapshot.values(), "streaming": self.streaming.values()}
        for context, group in list(self.groups.items()):
            values[context] = group.values()
        return values

    def numeric_values(self) -> dict[str, dict[str, Any]]:
        """``values()`` as Prometheus serves them: a group may map its strings to numbers (``numeric_values``)."""
        values = self.values()
        for context, group in list(self.groups.items()):
            numeric = getattr(group, "numeric_values", None)
            if numeric is not None:
                values[context] = numeric()
        return values
