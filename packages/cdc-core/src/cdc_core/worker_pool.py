"""Forked worker processes given tasks one at a time and read back in the order the tasks were given.

The push-style sibling of ``cdc_core.snapshot.processes.run_in_order`` (whose worker loop, ``_serve``,
it shares): a streaming connector hands a task over as soon as it has one (``submit``) and goes on
reading its log while the workers work, then takes the results back oldest first (``take``). Tasks
go round-robin, so the oldest outstanding task is always the oldest of some worker's, and each
worker answers its tasks in order. ``state`` reaches the workers through the fork (not pickled);
tasks and results are pickled, and a result's ``BlockLayout``s come back opened over the memory
files their worker wrote (``cdc_core.record_block``). A worker's exception is raised by ``take``; a
worker that died raises a ConnectorError saying so.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
from collections import deque
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.snapshot.processes import _close_all, _exit_code, _opened, _serve


class OrderedWorkers:
    """``processes`` forked workers running ``state.run(task)``; results taken back in submission order."""

    def __init__(self, state: Any, processes: int, name: str):
        ctx = multiprocessing.get_context("fork")
        self.name = name
        self._workers: list[tuple[Any, Any, Any]] = []  # (process, this side of its pipe, the pipe as a socket)
        self._pending: deque[int] = deque()  # the worker of each outstanding task, oldest first
        self._next = 0
        try:
            for _ in range(processes):
                mine, theirs = ctx.Pipe()
                process = ctx.Process(target=_serve, args=(state, theirs, os.getpid()), name=name, daemon=True)
                process.start()
                theirs.close()  # only the worker holds its end: its death is an end of file here
                self._workers.append((process, mine, socket.fromfd(mine.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)))
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
        return bool(self._pending) and self._workers[self._pending[0]][1].poll()

    def take(self) -> Any:
        """The oldest outstanding task's result (waiting for it); its worker's exception raised here."""
        w = self._pending.popleft()
        process, conn, sock = self._workers[w]
        try:
            ok, result, nfds = conn.recv()
            fds: list[int] = []
            if nfds:
                _, fds, _, _ = socket.recv_fds(sock, 1, nfds)
                if len(fds) != nfds:
                    _close_all(fds)
                    raise EOFError
        except (EOFError, OSError):
            raise self._died(process) from None
        if not ok:
            raise result
        if nfds:
            try:
                result = _opened(result, fds)
            finally:
                _close_all(fds)
        return result

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
        self._pending.clear()

    def _died(self, process: Any) -> ConnectorError:
        return ConnectorError(f"a worker process ({self.name}) died before finishing its task (exit code "
                              f"{_exit_code(process)}: killed, or out of memory)")
