"""BatchQueue: bounded capacity with back-pressure, batches out, close and drain."""

from __future__ import annotations

import threading
import time

from cdc_core.queue import BatchQueue


class Producer(threading.Thread):
    """Puts one list into the queue on its own thread and remembers the result."""

    def __init__(self, queue: BatchQueue, items: list, should_stop=lambda: False):
        super().__init__(daemon=True)
        self.queue, self.items, self.should_stop = queue, items, should_stop
        self.result: bool | None = None
        self.done = threading.Event()

    def run(self) -> None:
        self.result = self.queue.put(self.items, self.should_stop)
        self.done.set()


def test_get_returns_batches_in_order_up_to_max_items() -> None:
    queue: BatchQueue[int] = BatchQueue(10)
    assert queue.put([1, 2, 3]) and queue.put([4, 5])
    assert len(queue) == 5 and queue.remaining_capacity == 5
    assert queue.get(2, 0) == [1, 2]
    assert queue.get(10, 0) == [3, 4, 5]
    assert queue.get(10, 0.01) == []  # empty and open: nothing after the timeout
    assert not queue.drained


def test_full_queue_blocks_the_producer_until_the_consumer_takes() -> None:
    queue: BatchQueue[int] = BatchQueue(3)
    queue.put([1, 2, 3])
    assert queue.remaining_capacity == 0
    producer = Producer(queue, [4, 5])
    producer.start()
    assert not producer.done.wait(0.2), "put must block while the queue is full"
    assert queue.get(1, 0) == [1]
    assert not producer.done.wait(0.1), "one free slot is not enough for two items"
    assert queue.get(1, 0) == [2]
    assert producer.done.wait(5) and producer.result is True
    assert queue.get(10, 0) == [3, 4, 5]


def test_a_list_larger_than_the_capacity_goes_into_an_empty_queue() -> None:
    queue: BatchQueue[int] = BatchQueue(2)
    assert queue.put([1, 2, 3, 4])
    assert queue.get(3, 0) == [1, 2, 3]


def test_waiting_consumer_wakes_when_items_arrive() -> None:
    queue: BatchQueue[int] = BatchQueue(2)
    threading.Timer(0.05, queue.put, args=([7],)).start()
    started = time.monotonic()
    assert queue.get(5, 5) == [7]
    assert time.monotonic() - started < 4


def test_close_drains_what_is_left_then_returns_empty_batches() -> None:
    queue: BatchQueue[int] = BatchQueue(5)
    queue.put([1, 2, 3])
    queue.close()
    assert queue.closed and not queue.drained
    assert queue.put([4]) is False
    assert queue.get(2, 1) == [1, 2]
    assert queue.get(2, 1) == [3]
    assert queue.drained
    started = time.monotonic()
    assert queue.get(2, 5) == []  # closed: no waiting
    assert time.monotonic() - started < 1


def test_close_releases_a_blocked_producer() -> None:
    queue: BatchQueue[int] = BatchQueue(1)
    queue.put([1])
    producer = Producer(queue, [2])
    producer.start()
    assert not producer.done.wait(0.1)
    queue.close()
    assert producer.done.wait(5) and producer.result is False
    assert queue.get(5, 0) == [1]


def test_close_releases_a_waiting_consumer() -> None:
    queue: BatchQueue[int] = BatchQueue(1)
    threading.Timer(0.05, queue.close).start()
    started = time.monotonic()
    assert queue.get(5, 10) == []
    assert time.monotonic() - started < 5


def test_should_stop_releases_a_blocked_producer() -> None:
    queue: BatchQueue[int] = BatchQueue(1)
    queue.put([1])
    stop = threading.Event()
    producer = Producer(queue, [2], stop.is_set)
    producer.start()
    assert not producer.done.wait(0.1)
    stop.set()
    assert producer.done.wait(5) and producer.result is False
    assert queue.get(5, 0) == [1]


def test_a_byte_bound_lets_items_in_as_they_fit() -> None:
    """``max.queue.size.in.bytes``: a producer blocked on bytes resumes as the consumer frees them, and the
    queue never holds more than the bound (one oversized item still goes into an empty queue)."""
    import threading

    from cdc_core.queue import BatchQueue

    q: BatchQueue[int] = BatchQueue(100, max_bytes=10, sizer=lambda item: item)
    done = threading.Event()
    threading.Thread(target=lambda: (q.put([4, 4, 4, 4]), done.set()), daemon=True).start()
    assert not done.wait(0.3)
    assert len(q) == 2 and q.current_bytes == 8
    assert q.get(1, 1.0) == [4]
    deadline = time.monotonic() + 2
    while len(q) < 2 and time.monotonic() < deadline:  # the producer puts the third item as it fits
        time.sleep(0.01)
    assert q.current_bytes == 8
    assert q.get(10, 1.0) == [4, 4]
    assert done.wait(2.0)
    assert q.get(10, 1.0) == [4] and q.current_bytes == 0
    assert q.put([25]) and q.current_bytes == 25  # larger than the bound, into an empty queue
