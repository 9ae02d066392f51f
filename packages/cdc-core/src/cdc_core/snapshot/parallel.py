"""``snapshot.max.threads``: tables read on several connections at once, their batches merged into one stream."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any

_DONE = object()


def read_in_parallel(conns: Sequence[Any], tables: Sequence[Any], read_table: Callable[[Any, Any, queue.Queue], None],
                     stopped: Callable[[], bool], stop: Callable[[], None],
                     queue_per_thread: int = 4) -> Generator[list[Any], None, Any]:
    """Read ``tables`` with one thread per connection, one table per thread at a time; yield their batches.

    ``read_table(conn, table, out)`` puts a table's batches (lists of records) on ``out`` in order, so
    each table keeps its row order while tables interleave. The very last record of all is held back
    and returned (``held = yield from read_in_parallel(...)``), for the caller to mark ``last``; None
    when no row was read or ``stopped()`` cut the read short. A worker's exception is raised here.
    If the read ends early (an error, a stop, the generator closed), ``stop()`` is called so that the
    readers (which check ``stopped()`` between batches) end too.
    """
    todo: queue.Queue[Any] = queue.Queue()
    for table in tables:
        todo.put(table)
    out: queue.Queue[Any] = queue.Queue(maxsize=queue_per_thread * len(conns))

    def work(conn: Any) -> None:
        try:
            while not stopped():
                try:
                    table = todo.get_nowait()
                except queue.Empty:
                    break
                read_table(conn, table, out)
        except BaseException as e:  # noqa: BLE001 - handed to the reading thread, which raises it
            out.put(e)
        finally:
            out.put(_DONE)

    workers = [threading.Thread(target=work, args=(c,), name=f"cdc-snapshot-{i}", daemon=True)
               for i, c in enumerate(conns)]
    for w in workers:
        w.start()
    running, held = len(workers), None
    finished = False
    try:
        while running:
            item = out.get()
            if item is _DONE:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            if stopped():
                return None
            batch = item if held is None else [held, *item]
            held = batch.pop()
            if batch:
                yield batch
        finished = True
    finally:
        if running:
            stop()
        while running:  # let the workers finish their current put and exit
            try:
                if out.get(timeout=0.1) is _DONE:
                    running -= 1
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    break
    return held if finished and not stopped() else None
