"""A sink engine snapshotting while a writer changes the tables, until streaming has the writer's last change."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def run_with_writer(engine: Any, writer: Callable[[threading.Event], None], marker: Callable[[], Any],
                    marker_seen: Callable[[], bool], timeout: float = 120.0) -> list[BaseException]:
    """Run ``engine`` (with its sink) while ``writer(stop)`` writes; return the engine's errors.

    Once streaming is connected (and 0.3 s more) the writer stops, ``marker()`` writes one last change,
    and the run ends when ``marker_seen()`` (or on an error, or after ``timeout`` seconds).
    """
    stop, errors = threading.Event(), []

    def run() -> None:
        try:
            engine.run()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    runner = threading.Thread(target=run)
    runner.start()
    thread = threading.Thread(target=writer, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not engine.metrics.streaming.connected and not errors and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        stop.set()
        thread.join()
        marker()
        while not marker_seen() and not errors and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join()
        engine.stop()
        runner.join(60)
    return errors
