"""The bounded queue between the connector thread and the sink: batches in, batches out, back-pressure."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from cdc_core.record_block import RecordBlock

T = TypeVar("T")


class BatchQueue(Generic[T]):
    """A FIFO of items bounded by ``capacity`` items (and ``max_bytes`` bytes); producers put lists, the
    consumer takes batches.

    ``put`` blocks while the queue is full: ``capacity`` items (a list larger than the capacity is
    accepted when the queue is empty, so progress never stalls), and when ``max_bytes`` is positive
    (``max.queue.size.in.bytes``) that many bytes as ``sizer`` measures each item: then items go in
    as they fit, one always fitting into an empty queue. ``close`` ends the stream: ``get`` then
    returns what is left and finally an empty list.

    A ``RecordBlock`` (a snapshot worker's records as one object) counts as its records wherever
    items are counted (capacity, ``get``'s ``max_items``); ``get`` splits one where a batch ends.
    The producer says so by passing ``weight`` (the records its items stand for) to ``put``.
    """

    def __init__(self, capacity: int, max_bytes: int = 0, sizer: Callable[[T], int] | None = None):
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._sizer = sizer if max_bytes > 0 else None
        self._items: deque[T] = deque()
        self._sizes: deque[int] = deque()
        #: Records queued (items, with each block counted as its records) and blocks among the items.
        self._count = 0
        self._blocks = 0
        #: Bytes the queued items take (0 unless ``max_bytes`` is set).
        self.current_bytes = 0
        self._cond = threading.Condition()
        self._closed = False

    def __len__(self) -> int:
        return self._count

    @property
    def remaining_capacity(self) -> int:
        """How many more items fit before ``put`` blocks."""
        return max(0, self.capacity - self._count)

    def put(self, items: list[T], should_stop=lambda: False, weight: int | None = None) -> bool:
        """Append items, waiting while full; False if the queue was closed or ``should_stop()`` became true.

        ``weight``: the records ``items`` stand for when some are ``RecordBlock``s (else their number).
        """
        if weight is None:
            weight, blocks = len(items), 0
        else:
            blocks = sum(1 for i in items if i.__class__ is RecordBlock)
        if self._sizer is not None:
            return self._put_bounded(items, [self._sizer(i) for i in items], should_stop, weight, blocks)
        with self._cond:
            while self._items and self._count + weight > self.capacity:
                if self._closed or should_stop():
                    return False
                self._cond.wait(0.1)
            if self._closed:
                return False
            self._items.extend(items)
            self._count += weight
            self._blocks += blocks
            self._cond.notify_all()
            return True

    def _put_bounded(self, items: list[T], sizes: list[int], should_stop, weight: int, blocks: int) -> bool:
        """``put`` under ``max_bytes``: items go in as they fit, as Debezium enqueues record by record (one item
        always fits into an empty queue); the item bound stays as for ``put``."""
        i, n = 0, len(items)
        weights = [len(x) if x.__class__ is RecordBlock else 1 for x in items] if blocks else None
        with self._cond:
            while self._items and self._count + weight > self.capacity:
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
                if weights is None:
                    self._count += j - i
                else:
                    self._count += sum(weights[i:j])
                    self._blocks += sum(1 for x in items[i:j] if x.__class__ is RecordBlock)
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
            if self._blocks:
                out = self._take_weighed(max_items)
            else:
                n = min(max_items, len(self._items))
                popleft = self._items.popleft
                out = [popleft() for _ in range(n)]
                self._count -= n
                if self._sizer is not None:
                    pop_size = self._sizes.popleft
                    self.current_bytes -= sum(pop_size() for _ in range(n))
            self._cond.notify_all()
            return out

    def _take_weighed(self, max_items: int) -> list[T]:
        """``get``'s taking when blocks are queued: up to ``max_items`` records, a block split where the batch ends."""
        items, sizes, out, room = self._items, self._sizes, [], max_items
        while items and room > 0:
            item = items[0]
            if item.__class__ is RecordBlock:
                if len(item) > room:
                    head, tail = item.split(room)
                    items[0] = tail
                    if self._sizer is not None:
                        size = self._sizer(head)
                        sizes[0] -= size
                        self.current_bytes -= size
                    out.append(head)
                    self._count -= room
                    break
                self._blocks -= 1
                room -= len(item)
                self._count -= len(item)
            else:
                room -= 1
                self._count -= 1
            out.append(items.popleft())
            if self._sizer is not None:
                self.current_bytes -= sizes.popleft()
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
