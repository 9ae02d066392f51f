"""Retrying a sink's delivery with exponential back-off: transient failures wait and retry, permanent ones stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from cdc_core.errors import SinkError

T = TypeVar("T")


class TransientSinkError(SinkError):
    """A delivery failure worth retrying (broker unreachable, timeout, 5xx, 429); a plain SinkError is permanent."""


class SinkStopped(SinkError):
    """The engine was asked to stop while the sink was retrying: the batch is unacknowledged, nothing is wrong."""


class Backoff:
    """Retries a delivery: waits ``initial_ms``, doubling up to ``max_ms``, at most ``max_retries`` times (-1: forever).

    Each sink maps Debezium Server's retry properties onto it (``debezium.sink.redis.retry.initial.delay.ms``,
    ``debezium.sink.http.retries``, ...). ``stopping`` (an Event) cuts a wait short: the batch then fails
    with the last error, unacknowledged, so its records come again after the restart.
    """

    def __init__(self, what: str, log: logging.Logger, initial_ms: int = 300, max_ms: int = 10_000,
                 max_retries: int = -1, stopping: threading.Event | None = None):
        self.what = what
        self.log = log
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.max_retries = max_retries
        self.stopping = stopping or threading.Event()

    def call(self, deliver: Callable[[], T]) -> T:
        """Run ``deliver`` until it returns; retry on ``TransientSinkError``, raise anything else at once."""
        attempt, delay = 0, self.initial_ms / 1000.0
        while True:
            try:
                return deliver()
            except TransientSinkError as e:
                attempt += 1
                if self.stopping.is_set():
                    raise SinkStopped(f"{self.what}: stopped while retrying: {e}") from e
                if 0 <= self.max_retries < attempt:
                    raise SinkError(f"{self.what}: giving up after {attempt} attempt(s): {e}") from e
                self.log.warning("%s: %s; retrying in %.1fs (attempt %d%s)", self.what, e, delay, attempt,
                                 "" if self.max_retries < 0 else f" of {self.max_retries}")
                if self.stopping.wait(delay):
                    raise SinkStopped(f"{self.what}: stopped while retrying: {e}") from e
                delay = min(delay * 2, self.max_ms / 1000.0)
