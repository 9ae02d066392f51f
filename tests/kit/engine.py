"""The engine in a thread, as a library user runs it: every record collected, stores surviving restarts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore

WAIT_S = 30.0


class EngineThread:
    """``Engine(config).run(handler)`` in a thread, collecting every record; stores survive restarts."""

    def __init__(self, config: dict[str, Any], offsets: MemoryOffsetStore | None = None,
                 history: MemorySchemaHistoryStore | None = None, plugins: Any = None):
        self.offsets = offsets if offsets is not None else MemoryOffsetStore()
        # A history store the configuration names (a file, Kafka, Redis) is the engine's own; otherwise one in
        # memory that a restart can be handed.
        named = any(k in config for k in ("schema.history.internal", "schema.history.internal.file.filename"))
        self.history = history if history is not None or named else MemorySchemaHistoryStore()
        self.engine = Engine(config, offset_store=self.offsets, history_store=self.history, plugins=plugins)
        self.records: list[ChangeRecord] = []
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kit-engine", daemon=True)

    def _run(self) -> None:
        try:
            self.engine.run(self._handle)
        except BaseException as e:  # reported by wait()/stop()
            self.error = e

    #: Seconds the handler sleeps per batch (with a small max.queue.size this holds a snapshot back).
    slow = 0.0

    def _handle(self, records: list[ChangeRecord]) -> None:
        with self._lock:
            self.records.extend(records)
        if self.slow:
            time.sleep(self.slow)

    def start(self) -> EngineThread:
        """Start the engine thread."""
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        """True while the engine runs."""
        return self._thread.is_alive()

    def snapshot(self) -> list[ChangeRecord]:
        """The records so far."""
        with self._lock:
            return list(self.records)

    def wait(self, done: Callable[[list[ChangeRecord]], bool], what: str, timeout: float = WAIT_S) -> None:
        """Wait until ``done(records)``; fail naming ``what`` if the engine stops or time runs out."""
        deadline = time.monotonic() + timeout
        while not done(self.snapshot()):
            if not self._thread.is_alive():
                if done(self.snapshot()):
                    return
                raise AssertionError(f"the engine stopped before {what}: {self.error!r}") from self.error
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; got {len(self.snapshot())} records")
            time.sleep(0.01)

    def wait_streaming(self, timeout: float = WAIT_S) -> None:
        """Wait until the connector reports streaming connected: changes made from now on are captured."""
        deadline = time.monotonic() + timeout
        while not self.engine.metrics.streaming.connected:
            if not self._thread.is_alive():
                raise AssertionError(f"the engine stopped before streaming: {self.error!r}") from self.error
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for streaming; got {len(self.snapshot())} records")
            time.sleep(0.01)

    def join(self, timeout: float = WAIT_S) -> BaseException | None:
        """Wait for the engine to end by itself; return its error, if any."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the engine did not end"
        return self.error

    def stop(self) -> None:
        """Stop the engine and wait for it."""
        self.engine.stop()
        self._thread.join(timeout=WAIT_S)
        assert not self._thread.is_alive(), "the engine did not stop"


def streaming_with_notifications(config: dict[str, Any], offsets: MemoryOffsetStore,
                                 history: MemorySchemaHistoryStore | None = None, slow: float = 0.0,
                                 timeout: float = 60.0) -> tuple[EngineThread, list[Any]]:
    """An engine started on ``offsets`` (``slow``: its handler's sleep per batch), once it streams, and the list its
    notifications are appended to (stopped again if it never streams)."""
    runner = EngineThread(config, offsets=offsets, history=history)
    runner.slow = slow
    notes: list[Any] = []
    runner.engine.add_notification_listener(notes.append)
    runner.start()
    try:
        runner.wait_streaming(timeout)
    except BaseException:
        runner.stop()
        raise
    return runner, notes


def run_until(config: dict[str, Any], done: Callable[[list[ChangeRecord]], bool], what: str = "the records",
              action: Callable[[], Any] | None = None, offsets: MemoryOffsetStore | None = None,
              history: MemorySchemaHistoryStore | None = None, timeout: float = WAIT_S,
              settle: float = 0.0) -> EngineThread:
    """Run the engine until ``done(records)`` (``action()`` first, once streaming is connected); stop; return it.

    ``settle``: seconds to keep collecting after ``done`` holds, so that records that should not come would show.
    """
    runner = EngineThread(config, offsets, history).start()
    try:
        if action is not None:
            runner.wait_streaming(timeout)
            action()
        runner.wait(done, what, timeout)
        time.sleep(settle)
    finally:
        runner.stop()
    return runner
