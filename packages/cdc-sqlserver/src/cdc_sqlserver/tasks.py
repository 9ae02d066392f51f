"""``tasks.max`` over ``database.names``: Debezium's split of the databases into tasks, each run by a thread of its own.

Debezium 2.7.4's ``SqlServerConnector.taskConfigs`` gives task ``i`` (``task.id`` ``i``) the databases at
indexes ``i, i+n, ...`` of ``database.names``, ``n = min(tasks.max, number of databases)``; each task
streams its databases in turn (SqlServerStreamingChangeEventSource over its partitions) with its own
offsets per database partition, and registers its MBeans with ``task=<id>``. cdc does the same inside
one engine: each task is a thread that takes its databases' readers (one ``SqlServerConnector`` each)
round-robin and hands their batches, each a ``PartitionBatch`` naming its database, to the engine's
one connector thread through a hand-over with a few slots per task. The offsets stay per database
partition (``{"server": <prefix>, "database": <db>}``) exactly as with one task, so an offsets file
keeps working when ``tasks.max`` changes, as in Debezium; a database's batches keep their order (one
thread reads it), databases of different tasks have no order between them (as in Debezium).

Threads, not forked processes: a task's time goes mostly to waiting on the server (the ODBC driver
and psycopg release the GIL while a query runs and rows are fetched), which threads overlap as well
as processes would; the CPU-heavy part (envelopes, transforms, serialization) is the engine's one
pipeline whatever the task count, and the sink, the offset store, the signal controller and the
schema history store live in this process: a forked task would have to pickle every change row over
a pipe to reach them, costing more CPU than reading it on this 2-core machine. Kafka Connect too runs
a connector's tasks as threads of one worker JVM.

A task that fails stops the engine with an error naming the task and the database
(``SQL Server task 1 (database db2): ...``); a lost connection stays retriable, so the engine
restarts every task from the acknowledged offsets (``errors.max.retries``): the other tasks' databases
are delivered again from their last acknowledged offset, nothing is lost. This is what Debezium's own
embedded engine does, the deployment cdc stands in for: 3.0.7's ``AsyncEmbeddedEngine.run`` runs all
tasks' polling loops and closes the whole engine (``closeEngineWithException``) when any task throws.
Kafka Connect's distributed worker would instead mark that one task FAILED and leave the others
running until someone restarts it through its REST API; cdc has no such per-task restart API, and a
service whose one task silently stopped would be worse than one that stops loudly. Nothing is dropped silently: the failing task's error is raised by the
engine's connector thread once the batches handed over before it are delivered.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from cdc_core.errors import ConnectorError, RetriableError
from cdc_core.events import PartitionBatch, RoundEnd

#: Batches a task may have handed over and not yet taken by the engine (its own queue capacity).
TASK_SLOTS = 4
_END = object()


def task_databases(names: list[str], tasks_max: int) -> list[list[str]]:
    """The databases of each task: task ``i`` gets ``names[i], names[i+n], ...``, ``n = min(tasks_max, len(names))``
    (Debezium 2.7.4's ``SqlServerConnector.buildTaskConfigs``)."""
    n = max(1, min(tasks_max, len(names)))
    return [names[i::n] for i in range(n)]


class TaskFailedError(ConnectorError):
    """A task's database failed: the message names the task and the database."""


class TaskRetriableError(RetriableError):
    """A task's database lost its connection (retried by the engine, as any RetriableError)."""


def task_error(task: str, db: str, error: BaseException) -> ConnectorError:
    """``error`` of ``db``'s reader in task ``task``, as an error naming both (retriable if it was)."""
    cls = TaskRetriableError if isinstance(error, RetriableError) else TaskFailedError
    wrapped = cls(f"SQL Server task {task} (database {db}): {error}")
    wrapped.__cause__ = error
    return wrapped


def round_robin(readers: list[Any], stopped: Any) -> Iterator[PartitionBatch | RoundEnd]:
    """Each reader's batches in turn, as one Debezium task: a snapshot batch each per turn, then, once streaming,
    a whole poll each (SqlServerStreamingChangeEventSource.executeIteration per partition), each round ended
    by a ``RoundEnd`` naming the readers' partitions and where each one's stream stood.

    Debezium's coordinator checks ``context.isPaused()`` after every database's iteration of a round, so a
    blocking snapshot signalled in one database's window runs after the other databases' windows of that
    round (cdc_core.signals.controller runs it at the ``RoundEnd``). A reader's poll ends with its own
    ``RoundEnd`` (SqlServerConnector._stream), which is not passed on. An error of a reader leaves with
    ``.database`` set to its database.
    """
    running = [(r, r.partition(), r.stream()) for r in readers]
    partitions = [p for _, p, _ in running]
    try:
        while running and not stopped():
            positions: dict[str, Any] = {}
            for entry in list(running):
                reader, partition, batches = entry
                while True:
                    try:
                        batch = next(batches)
                    except StopIteration:
                        running.remove(entry)
                        break
                    except BaseException as e:
                        try:
                            e.database = reader.db  # type: ignore[attr-defined]
                        except AttributeError:  # an exception type without a __dict__: the task's databases are named
                            pass
                        raise
                    if batch.__class__ is RoundEnd:
                        positions.update(batch.positions or ())
                        break
                    yield PartitionBatch(batch, partition)
                    if stopped():
                        return
                    if not getattr(reader, "streaming", False):
                        break  # a snapshot's batch: the next reader's turn
            yield RoundEnd(partitions, positions)
    finally:
        for _, _, batches in running:
            batches.close()


class TaskGroup:
    """A task's own MBean (``...,task=<id>,context=snapshot|streaming``): Debezium's SqlServerTaskMetricsMXBean
    (its queue; streaming also Connected), here the task's hand-over slots."""

    def __init__(self, task: TaskThread, streaming: bool):
        self.task = task
        self.streaming = streaming

    def values(self) -> dict[str, Any]:
        """The attributes, by Debezium's names."""
        used = self.task.queued
        out: dict[str, Any] = {"QueueTotalCapacity": TASK_SLOTS, "QueueRemainingCapacity": TASK_SLOTS - used,
                               "MaxQueueSizeInBytes": 0, "CurrentQueueSizeInBytes": 0,
                               "Databases": [r.db for r in self.task.readers]}
        if self.streaming:
            out["Connected"] = self.task.connected
        return out


class TaskThread:
    """One task: a thread taking its databases' readers round-robin, handing their batches over."""

    def __init__(self, task: str, readers: list[Any], handover: queue.Queue, stopped: threading.Event, log: Any):
        self.task = task
        self.readers = readers
        self.handover = handover
        self.stopped = stopped
        self.log = log
        self._slots = threading.Semaphore(TASK_SLOTS)
        self._lock = threading.Lock()
        self.queued = 0
        self.connected = False
        self.thread = threading.Thread(target=self._run, name=f"cdc-sqlserver-task-{task}", daemon=True)

    def _run(self) -> None:
        self.connected = True
        try:
            for batch in round_robin(self.readers, self.stopped.is_set):
                while not self._slots.acquire(timeout=0.1):
                    if self.stopped.is_set():
                        return
                with self._lock:
                    self.queued += 1
                self.handover.put((self, batch))
        except BaseException as e:  # handed to the engine's thread, which raises it
            db = getattr(e, "database", None) or ",".join(r.db for r in self.readers)
            # The engine reports it (its cause, with the traceback, chained): here only for debugging.
            self.log.debug("SQL Server task %s (database %s) failed", self.task, db, exc_info=True)
            self.handover.put((self, task_error(self.task, db, e)))
        finally:
            self.connected = False
            self.handover.put((self, _END))

    def taken(self) -> None:
        """The engine took one of this task's batches: a slot is free again."""
        with self._lock:
            self.queued -= 1
        self._slots.release()


class Tasks:
    """Several tasks, each a TaskThread over its readers; ``stream`` merges what they hand over."""

    def __init__(self, assignment: list[tuple[str, list[Any]]], log: Any, metrics: Any):
        """``assignment``: (task id, its readers) per task; each task's MBeans are registered in ``metrics``."""
        self.stopped = threading.Event()
        self.handover: queue.Queue = queue.Queue()
        self.log = log
        self.tasks = [TaskThread(task, readers, self.handover, self.stopped, log.with_context(f"task {task}"))
                      for task, readers in assignment]
        if metrics is not None:
            for task in self.tasks:
                for reader in task.readers:
                    for context in (f"snapshot,database={reader.db}", f"streaming,database={reader.db}"):
                        metrics.context_tasks[context] = task.task
                if task.task != "0":  # task 0's are the engine's own snapshot and streaming groups
                    # Set, not made once: after a retry the groups follow the new task threads.
                    metrics.groups[f"snapshot,task={task.task}"] = TaskGroup(task, False)
                    metrics.groups[f"streaming,task={task.task}"] = TaskGroup(task, True)

    def stream(self) -> Iterator[PartitionBatch]:
        """Every task's batches as they come; a task's error is raised here (the other tasks are stopped)."""
        for task in self.tasks:
            task.thread.start()
        alive = len(self.tasks)
        try:
            while alive:
                task, item = self.handover.get()
                if item is _END:
                    alive -= 1
                    continue
                if isinstance(item, BaseException):
                    if self.stopped.is_set():
                        # Failing while asked to stop (e.g. a query cut short): a clean stop stays clean; what
                        # was not acknowledged is read again from the offsets at the next start.
                        self.log.warning("while stopping: %s", item)
                        continue
                    raise item
                task.taken()
                yield item
        finally:
            self.stop()

    def stop(self) -> None:
        """Ask every task to end (its readers stop; a task waiting for a slot gives up)."""
        self.stopped.set()
        for task in self.tasks:
            for reader in task.readers:
                reader.stop()

    def join(self, timeout: float = 30.0) -> None:
        """Wait for the task threads (before their readers' connections are closed)."""
        for task in self.tasks:
            if task.thread.is_alive():
                task.thread.join(timeout)
