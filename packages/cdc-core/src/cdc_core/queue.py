"""The bounded queue between the connector thread and the sink: batches in, batches out, back-pressure."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BatchQueue(Generic[T]):
    """A FIFO of items bounded by ``capacity`` items (and ``max_bytes`` bytes); producers put lists, the
    consumer takes batches.

    ``put`` blocks while the queue is full: ``capacity`` items (a list larger than the capacity is
    accepted when the queue is empty, so progress never stalls), and when ``max_bytes`` is positive
    (``max.queue.size.in.bytes``) that many bytes as ``sizer`` measures each item: then items go in
    as they fit, one always fitting into an empty queue. ``close`` ends the stream: ``get`` then
    returns what is left and finally an empty list.
    """

    def __init__(self, capacity: int, max_bytes: int = 0, sizer: Callable[[T], int] | None = None):
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._sizer = sizer if max_bytes > 0 else None
        self._items: deque[T] = deque()
        self._sizes: deque[int] = deque()
        #: Bytes the queued items take (0 unless ``max_bytes`` is set).
        self.current_bytes = 0
        self._cond = threading.Condition()
        self._closed = False

    def __len__(self) -> int:
        return len(self._items)

    @property
    def remaining_capacity(self) -> int:
        """How many more items fit before ``put`` blocks."""
        return max(0, self.capacity - len(self._items))

    def put(self, items: list[T], should_stop=lambda: False) -> bool:
        """Append items, waiting while full; False if the queue was closed or ``should_stop()`` became true."""
        if self._sizer is not None:
            return self._put_bounded(items, [self._sizer(i) for i in items], should_stop)
        with self._cond:
            while self._items and len(self._items) + len(items) > self.capacity:
                if self._closed or should_stop():
                    return False
                self._cond.wait(0.1)
            if self._closed:
                return False
            self._items.extend(items)
            self._cond.notify_all()
            return True

    def _put_bounded(self, items: list[T], sizes: list[int], should_stop) -> bool:
        """``put`` under ``max_bytes``: items go in as they fit, as Debezium enqueues record by record (one item
        always fits into an empty queue); the item bound stays as for ``put``."""
        i, n = 0, len(items)
        with self._cond:
            while self._items and len(self._items) + len(items) > self.capacity:
                if self._closed or should_stop():
                    return False
                self._cond.wait(0.1)
            while i < n:
                if self._closed:
                    return False
                j, total = i, self.current_bytes
                while j < n and (total + sizes[j] <= self.max_bytes or (j == i and not self._items)):
                    total += sizes[j]
                    j += 1
                if j == i:
                    if should_stop():
                        return False
                    self._cond.wait(0.1)
                    continue
                self._items.extend(items[i:j])
                self._sizes.extend(sizes[i:j])
                self.current_bytes = total
                i = j
                self._cond.notify_all()
            return True

    def get(self, max_items: int, timeout: float) -> list[T]:
        """Take up to ``max_items``, waiting up to ``timeout`` seconds for the first one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._items and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self._cond.wait(left)
            n = min(max_items, len(self._items))
            popleft = self._items.popleft
            out = [popleft() for _ in range(n)]
            if self._sizer is not None:
                pop_size = self._sizes.popleft
                self.current_bytes -= sum(pop_size() for _ in range(n))
            self._cond.notify_all()
            return out

    def close(self) -> None:
        """No more items will come; wake everyone."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._closed

    @property
    def drained(self) -> bool:
        """True when closed and empty."""
        return self._closed and not self._items
