"""Forked worker processes given tasks one at a time and read back in the order the tasks were given;
a streaming connector's batches held in log order while some wait for them.

The push-style sibling of ``cdc_core.snapshot.processes.run_in_order`` (whose worker loop, ``_serve``,
it shares): a streaming connector hands a task over as soon as it has one (``submit``) and goes on
reading its log while the workers work, then takes the results back oldest first (``take``). Tasks
go round-robin, so the oldest outstanding task is always the oldest of some worker's, and each
worker answers its tasks in order. ``state`` reaches the workers through the fork (not pickled);
tasks and results are pickled, and a result's ``BlockLayout``s come back opened over the memory
files their worker wrote (``cdc_core.record_block``). A worker's exception is raised by ``take``; a
worker that died raises a ConnectorError saying so.

``WorkerBatches`` is what a streaming connector keeps on top: the batches it made, in log order, some
of them ending with a worker's records still to come, followed by what carries their offset
(``SerializedRecords.after``); ``serialize_changes`` is what a worker does with the changes it decoded.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import socket
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from cdc_core import exactly_once
from cdc_core.config import common
from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint
from cdc_core.metrics import last_change, last_event
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_core.snapshot.processes import SerializedRecords, _exit_code, _receive, _serve, available, unpack


class OrderedWorkers:
    """``processes`` forked workers running ``state.run(task)``; results taken back in submission order."""

    def __init__(self, state: Any, processes: int, name: str):
        ctx = multiprocessing.get_context("fork")
        self.name = name
        self._workers: list[tuple[Any, Any, Any]] = []  # (process, this side of its pipe, the pipe as a socket)
        self._pending: deque[int] = deque()  # the worker of each outstanding task, oldest first
        self._next = 0
        self._pollers: list[Any] = []
        try:
            for _ in range(processes):
                mine, theirs = ctx.Pipe()
                process = ctx.Process(target=_serve, args=(state, theirs, os.getpid()), name=name, daemon=True)
                process.start()
                theirs.close()  # only the worker holds its end: its death is an end of file here
                self._workers.append((process, mine, socket.fromfd(mine.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)))
                poller = select.poll()  # ``ready``'s check without the selector multiprocessing makes per call
                poller.register(mine.fileno(), select.POLLIN)
                self._pollers.append(poller)
        except BaseException:
            self.close()
            raise

    @property
    def outstanding(self) -> int:
        """Tasks given and not yet taken back."""
        return len(self._pending)

    @property
    def processes(self) -> int:
        """How many workers there are."""
        return len(self._workers)

    def submit(self, task: Any) -> None:
        """Give ``task`` to the next worker in turn."""
        w = self._next
        self._next = (w + 1) % len(self._workers)
        process, conn, _ = self._workers[w]
        try:
            conn.send(task)
        except OSError:  # its end is closed: it died
            raise self._died(process) from None
        self._pending.append(w)

    def ready(self) -> bool:
        """Whether the oldest outstanding task's result has (begun to) come back: ``take`` will not wait long."""
        return bool(self._pending) and bool(self._pollers[self._pending[0]].poll(0))

    def take(self) -> Any:
        """The oldest outstanding task's result (waiting for it); its worker's exception raised here."""
        w = self._pending.popleft()
        process, conn, sock = self._workers[w]
        return _receive(conn, sock, lambda: self._died(process))

    def close(self) -> None:
        """End the workers at once (outstanding results are dropped)."""
        for process, _, _ in self._workers:
            if process.is_alive():
                process.kill()
        for process, conn, sock in self._workers:
            process.join(10)
            sock.close()
            conn.close()
        self._workers.clear()
        self._pollers.clear()
        self._pending.clear()

    def _died(self, process: Any) -> ConnectorError:
        return ConnectorError(f"a worker process ({self.name}) died before finishing its task (exit code "
                              f"{_exit_code(process)}: killed, or out of memory)")


def streaming_unusable(config: Any, pipeline: Any) -> str | None:
    """None if ``streaming.worker.processes`` can be used as far as the engine goes, else why not (the connectors
    add their own reasons, ``read.only`` among them): the records must go to a sink, and nothing may need every
    change in one process."""
    if pipeline is None:
        return "the records go to a handler, not a sink"
    if exactly_once.enabled(config):
        return ("exactly.once.support=required commits each batch with its offset, and a batch that ends inside a "
                "worker's chunk has none of its own")
    if config.get(common.PROVIDE_TRANSACTION_METADATA):
        return "provide.transaction.metadata=true numbers a transaction's events in one process"
    if config.get(SIGNAL_DATA_COLLECTION):
        return "signal.data.collection is set: signals and incremental snapshot windows are read from the stream"
    return available()


def serialize_changes(pipeline: Any, raw: list) -> tuple[Any, tuple[dict[str, int], tuple | None]]:
    """In a worker: raw changes to ``(packed records or None, (their change events by op, the last one))`` as the
    engine's metrics take them (built events: a key change is a delete and a create; ``metrics.last_event``)."""
    if not raw:
        return None, ({}, None)
    built = pipeline.builder.build(raw)
    counts = Counter(v["op"] for r in built if r.__class__ is not Checkpoint and (v := r.value) is not None)
    last = last_change(built)
    return pipeline.pack_built(built), (dict(counts), last_event(last) if last is not None else None)


class WorkerBatches:
    """A streaming connector's batches in log order while worker processes serialize some of their records.

    ``submit`` hands a task over and queues the batch made before it, to be followed by the worker's
    records and then ``after`` (raw changes or a checkpoint carrying the offset past those records). A
    worker's result is ``(packed records, (counts by op, last event), extra)`` (``serialize_changes``'s two and
    the connector's own); ``on_result(extra)`` gets the extra.
    At most ``window`` tasks per worker are outstanding: a further ``submit`` first takes the oldest
    result back (kept in its place in the queue), so neither side ever waits on a full pipe for the
    other. The workers are forked by ``ready_for(version)``, again whenever the version changes (what
    they decode with, e.g. table definitions, changed) once none of their tasks is outstanding.
    """

    def __init__(self, state: Callable[[], Any], processes: int, name: str, on_result: Callable[[Any], None],
                 window: int = 2):
        self._state = state
        self.processes = processes
        self.name = name
        self._on_result = on_result
        self._window = window
        self._pool: OrderedWorkers | None = None
        self._version: Any = object()
        #: ``[items, after, result]`` in log order: ``after`` None for a batch made here; ``result`` the worker's,
        #: once taken back (None while its task is outstanding).
        self._queue: deque[list] = deque()

    @property
    def queued(self) -> bool:
        """Whether batches are held (the connector hands these on before anything read after them)."""
        return bool(self._queue)

    def due(self) -> bool:
        """Whether the oldest batch should be handed on now: made here, its worker done, or the workers all busy."""
        head = self._queue[0]
        if head[1] is None or head[2] is not None:
            return True
        pool = self._pool
        assert pool is not None  # a task is outstanding
        return pool.ready() or pool.outstanding >= self._window * pool.processes

    def ready_for(self, version: Any) -> bool:
        """Workers forked with ``version`` of what they decode with (forked now if need be); False while older
        ones still have tasks out (the caller decodes in its own process meanwhile)."""
        if self._pool is not None and self._version == version:
            return True
        if self._pool is not None:
            if self._pool.outstanding:
                return False
            self._pool.close()
            self._pool = None
        self._pool = OrderedWorkers(self._state(), self.processes, self.name)
        self._version = version
        return True

    def submit(self, task: Any, before: list, after: list) -> None:
        """Hand ``task`` to a worker (after ``ready_for``); ``before`` and then its records and ``after`` are queued."""
        pool = self._pool
        assert pool is not None
        while pool.outstanding >= self._window * pool.processes:
            self._take_oldest()
        pool.submit(task)
        self._queue.append([before, after, None])

    def enqueue(self, items: list) -> None:
        """A batch made here, after those held."""
        if items:
            self._queue.append([items, None, None])

    def pop(self, wait: bool) -> list:
        """The oldest batch (a worker's records with what follows them), [] if not ready and not ``wait``."""
        head = self._queue[0]
        items, after, result = head
        if after is None:
            self._queue.popleft()
            return items
        if result is None:
            assert self._pool is not None
            if not wait and not self._pool.ready():
                return []
            self._take_oldest()
            result = head[2]
        self._queue.popleft()
        items.append(result)
        return items

    def _take_oldest(self) -> None:
        """The oldest outstanding task's result, taken back into its place in the queue."""
        assert self._pool is not None
        entry = next(e for e in self._queue if e[1] is not None and e[2] is None)
        packed, streamed, extra = self._pool.take()
        self._on_result(extra)
        entry[2] = SerializedRecords(unpack(packed) if packed is not None else [], entry[1], streamed)

    def close(self) -> None:
        """End the workers; held batches are dropped (nothing after the last acknowledged one was confirmed)."""
        self._queue.clear()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
