"""Snapshot chunks read, converted and serialized in worker processes; results handed back in plan order.

``snapshot.max.threads`` above 1 with a sink (``cdc run``, ``Engine(sink=...)``): threads share one
core (the GIL), processes use them all. The workers are forked, so they inherit the engine's event
builder, transform chain and serializer as they are (custom converters, transforms and plugins
included, nothing is pickled or loaded again); each task's result is pickled back, except a chunk's
serialized records: those a worker writes as JSON lines into a memory file whose descriptor it passes
over the pipe (``cdc_core.record_block``), so the main process neither unpickles nor copies them per
record (records that do not fit a block, e.g. with headers, are pickled as lists). At most ``window``
tasks are in flight, so a slow sink bounds memory.
Where ``fork`` does not exist, ``available()`` says why and the caller reads in its own process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import socket
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint
from cdc_core.record_block import BlockLayout, RecordBlock, can_write, write_changes, write_lines
from cdc_core.spi.sink import SinkRecord

_make = partial(tuple.__new__, SinkRecord)

class SerializedRecords:
    """A batch's last item: records a worker process serialized already (the engine adds them after the rest),
    then ``after``: raw changes that follow them (the engine builds those and adds them last)."""

    __slots__ = ("records", "offset", "after", "streamed")

    def __init__(self, records: list, after: list | None = None, streamed: tuple | None = None):
        self.records = records
        #: Streamed changes: ``(creates, updates and deletes by op, metrics.last_event)`` of ``records`` (None:
        #: snapshot reads).
        self.streamed = streamed
        #: ``after``'s last offset (a streaming connector ends each batch of a worker's records with the change
        #: after them, so the batch's offset covers them); None without: raw changes before carry the offsets.
        self.after = after
        self.offset = after[-1].offset if after else None


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

    def pack(self, raw: list) -> Any:
        """Raw changes to what a worker hands back: a block of lines serialized straight into its memory file
        where the serializer can (``record_block.write_changes``), else ``pack`` of ``serialize``'s records."""
        return self.pack_built(self.builder.build(raw))

    def pack_built(self, records: list) -> Any:
        """``pack`` of records ``builder`` built already."""
        if self.chain is not None:
            records = self.chain.apply(records)
        records = [r for r in records if r.__class__ is not Checkpoint]
        if can_write():
            made = write_changes(self.serializer, records)
            if made is not None:
                _outbox.append(made[1])
                return made[0]
        return pack(self.serializer.serialize(records))


def available() -> str | None:
    """None if worker processes can be used here, else why not (one line for the log)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return "this platform cannot fork"
    return None


#: In a worker: descriptors of the memory files of the current task's blocks, sent after its result.
_outbox: list[int] = []


def pack(records: list[SinkRecord]) -> Any:
    """A chunk's records in the cheapest form to hand over: a block's layout (its lines in a memory file,
    sent after the result), else one topic and no headers as three lists' worth, else the records."""
    if can_write():
        made = write_lines(records)
        if made is not None:
            layout, fd = made
            _outbox.append(fd)
            return layout
    if records and all(r.headers is None or not r.headers for r in records):
        topic = records[0].topic
        if all(r.topic == topic for r in records):
            return (topic, [r.key for r in records], [r.value for r in records], records[0].headers)
    return (None, records, None, None)


def unpack(packed: Any) -> list:
    """``pack`` undone, in the main process: ``[block]`` or the SinkRecords (made by ``tuple.__new__`` in C)."""
    if packed.__class__ is RecordBlock:
        return [packed]
    topic, keys, values, headers = packed
    if topic is None:
        return keys
    return list(map(_make, zip(repeat(topic), keys, values, repeat(headers))))


def packed_count(packed: Any) -> int:
    """How many records ``pack`` packed."""
    return len(packed) if packed.__class__ is RecordBlock else len(packed[1])


def _opened(result: Any, fds: list[int]) -> Any:
    """A worker's result with each block layout in it (a tuple's items) opened over its memory file, in order."""
    if result.__class__ is BlockLayout:
        return result.open(fds.pop(0))
    if result.__class__ is tuple:
        return tuple(_opened(item, fds) if item.__class__ in (BlockLayout, tuple) else item for item in result)
    return result


def _close_all(fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())



_PR_SET_PDEATHSIG = 1


def _serve(state: Any, conn: Any, parent: int) -> None:
    """A worker's life: ``state.run`` each task received on ``conn``, its result (or exception) sent back."""
    _die_with_parent(parent)
    started = getattr(state, "started", None)
    if started is not None:  # e.g. to claim this worker's own connection
        started()
    sock = socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)  # for the descriptors
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            reply = (True, state.run(task), len(_outbox))
        except BaseException as e:  # noqa: BLE001 - handed to the main process, which raises it
            _close_all(_outbox)
            reply = (False, e, 0)
        try:
            conn.send(reply)
            if _outbox:
                socket.send_fds(sock, [b"F"], _outbox)
        except (BrokenPipeError, OSError):
            return
        except Exception:  # noqa: BLE001 - an exception that cannot be pickled: its text
            conn.send((False, ConnectorError(f"{type(reply[1]).__name__}: {reply[1]}"), 0))
        finally:
            _close_all(_outbox)


def _die_with_parent(parent: int) -> None:
    """End this worker when the process that forked it dies (kill -9 included), where Linux allows it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # it died before the call took effect
        os._exit(1)


def run_in_order(state: Any, tasks: Iterable[Any], processes: int, stopped: Callable[[], bool],
                 window: int = 2) -> Iterator[Any]:
    """Yield ``state.run(task)`` of each task, in the order of ``tasks``, computed in ``processes`` forked workers.

    ``state`` reaches the workers through the fork (not pickled); tasks and results are pickled. Each
    worker has at most ``window`` tasks outstanding and gets its next one when its oldest result is
    taken (results come back from each worker in the order it was given its tasks, and tasks are given
    out in order, so the oldest outstanding task is always some worker's oldest). A worker's exception
    is raised here; a worker that died (killed, out of memory) raises a ConnectorError saying so. When
    the caller stops (``stopped()``, an error, the generator closed) the workers are killed at once
    (none is waited for: a worker in the middle of sending a result is simply gone).
    """
    ctx = multiprocessing.get_context("fork")
    todo = iter(tasks)
    workers: list[tuple[Any, Any]] = []  # (process, this side of its pipe)
    sockets: list[Any] = []  # the same pipes as sockets, for the descriptors of blocks
    pending: deque[tuple[int, Any]] = deque()  # (worker, task) in task order
    finished = False

    def died(process: Any) -> ConnectorError:
        return ConnectorError(
            f"a snapshot worker process (snapshot.max.threads={processes}) died before finishing its chunk "
            f"(exit code {_exit_code(process)}: killed, or out of memory); the snapshot stops here and is "
            "taken again on the next start, as an interrupted snapshot is")

    def give(w: int, task: Any) -> None:
        process, conn = workers[w]
        try:
            conn.send(task)
        except OSError:  # its end is closed: it died
            raise died(process) from None
        pending.append((w, task))

    try:
        for _ in range(processes):
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(state, theirs, os.getpid()), name="cdc-snapshot-worker",
                                  daemon=True)
            process.start()
            theirs.close()  # only the worker holds its end: its death is an end of file here
            workers.append((process, mine))
            sockets.append(socket.fromfd(mine.fileno(), socket.AF_UNIX, socket.SOCK_STREAM))
        for _ in range(window):
            for w in range(len(workers)):
                task = next(todo, None)
                if task is None:
                    break
                give(w, task)
        while pending:
            if stopped():
                return
            w, _task = pending.popleft()
            process, conn = workers[w]
            result = _receive(conn, sockets[w], lambda: died(process))
            task = next(todo, None)
            if task is not None:
                give(w, task)
            yield result
        finished = True
    finally:
        for process, conn in workers:
            if finished:
                try:
                    conn.send(None)
                except OSError:
                    pass
            elif process.is_alive():
                process.kill()
        for process, conn in workers:
            process.join(10)
            conn.close()
        for sock in sockets:
            sock.close()


def _receive(conn: Any, sock: Any, died: Callable[[], BaseException]) -> Any:
    """A worker's next result from ``conn`` (its blocks opened over the descriptors that follow on ``sock``); the
    worker's exception raised, ``died()`` raised when the worker is gone."""
    try:
        ok, result, nfds = conn.recv()
        fds: list[int] = []
        if nfds:
            _, fds, _, _ = socket.recv_fds(sock, 1, nfds)
            if len(fds) != nfds:
                _close_all(fds)
                raise EOFError
    except (EOFError, OSError):
        raise died() from None
    if not ok:
        raise result
    if nfds:
        try:
            result = _opened(result, fds)
        finally:
            _close_all(fds)
    return result


def _exit_code(process: Any) -> Any:
    process.join(1)
    return process.exitcode
