"""Snapshot chunks read, converted and serialized in worker processes; results handed back in plan order.

``snapshot.max.threads`` above 1 with a sink (``cdc run``, ``Engine(sink=...)``): threads share one
core (the GIL), processes use them all. The workers are forked, so they inherit the engine's event
builder, transform chain and serializer as they are (custom converters, transforms and plugins
included, nothing is pickled or loaded again); each task's result (the chunk's serialized records)
is pickled back as plain bytes. At most ``window`` tasks are in flight, so a slow sink bounds memory.
Where ``fork`` does not exist, ``available()`` says why and the caller reads in its own process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint
from cdc_core.spi.sink import SinkRecord

_make = partial(tuple.__new__, SinkRecord)

class SerializedRecords:
    """A batch's last item: records a worker process serialized already (the engine adds them after the rest)."""

    __slots__ = ("records", "offset")

    def __init__(self, records: list[SinkRecord]):
        self.records = records
        #: Always None: the connector's raw changes around them carry the offsets.
        self.offset = None


@dataclass
class WorkerPipeline:
    """What turns a connector's raw changes into sink bytes: the engine's builder, transforms and serializer."""

    builder: Any
    chain: Any
    serializer: Any

    def serialize(self, raw: list) -> list[SinkRecord]:
        """Raw changes to the records the sink writes, exactly as the engine's own path makes them."""
        records = self.builder.build(raw)
        if self.chain is not None:
            records = self.chain.apply(records)
        return self.serializer.serialize([r for r in records if r.__class__ is not Checkpoint])


def available() -> str | None:
    """None if worker processes can be used here, else why not (one line for the log)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return "this platform cannot fork"
    return None


def pack(records: list[SinkRecord]) -> tuple:
    """A chunk's records in the cheapest form to pickle: one topic and no headers as three lists' worth."""
    if records and all(r.headers is None or not r.headers for r in records):
        topic = records[0].topic
        if all(r.topic == topic for r in records):
            return (topic, [r.key for r in records], [r.value for r in records], records[0].headers)
    return (None, records, None, None)


def unpack(packed: tuple) -> list[SinkRecord]:
    """``pack`` undone, in the main process (the SinkRecords made by ``tuple.__new__`` in C)."""
    topic, keys, values, headers = packed
    if topic is None:
        return keys
    return list(map(_make, zip(repeat(topic), keys, values, repeat(headers))))



_STATE: Any = None
_PR_SET_PDEATHSIG = 1


def _init(state: Any, parent: int) -> None:
    global _STATE
    _STATE = state
    _die_with_parent(parent)
    started = getattr(state, "started", None)
    if started is not None:  # e.g. to claim this worker's own connection
        started()


def _die_with_parent(parent: int) -> None:
    """End this worker when the process that forked it dies (kill -9 included), where Linux allows it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # it died before the call took effect
        os._exit(1)


def _run(task: Any) -> Any:
    return _STATE.run(task)


def run_in_order(state: Any, tasks: Iterable[Any], processes: int, stopped: Callable[[], bool],
                 window: int = 0) -> Iterator[Any]:
    """Yield ``state.run(task)`` of each task, in the order of ``tasks``, computed in ``processes`` forked workers.

    ``state`` reaches the workers through the fork (not pickled); tasks and results are pickled.
    A worker's exception is raised here; a worker that died (killed, out of memory) raises a
    ConnectorError saying so. When the caller stops (``stopped()``, an error, the generator
    closed) the workers are ended at once.
    """
    ctx = multiprocessing.get_context("fork")
    executor = ProcessPoolExecutor(max_workers=processes, mp_context=ctx, initializer=_init, initargs=(state, os.getpid()))
    todo = iter(tasks)
    pending: deque[Future] = deque()
    window = window or 2 * processes
    finished = False
    try:
        for task in todo:
            pending.append(executor.submit(_run, task))
            if len(pending) >= window:
                break
        while pending:
            if stopped():
                return
            try:
                result = pending.popleft().result()
            except BrokenProcessPool:
                raise ConnectorError(
                    f"a snapshot worker process (snapshot.max.threads={processes}) died before finishing its chunk "
                    "(killed, or out of memory); the snapshot stops here and is taken again on the next start, "
                    "as an interrupted snapshot is") from None
            for task in todo:
                pending.append(executor.submit(_run, task))
                break
            yield result
        finished = True
    finally:
        if not finished:
            for future in pending:
                future.cancel()
            # Workers in the middle of a chunk are ended rather than waited for.
            for process in list(getattr(executor, "_processes", {}).values()):
                if process.is_alive():
                    process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)

