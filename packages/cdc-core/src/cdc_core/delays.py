"""``snapshot.delay.ms`` and ``streaming.delay.ms``: the waits before a snapshot and before streaming.

As Debezium's ``delaySnapshotIfNeeded`` and ``delayStreamingIfNeeded``: the snapshot delay comes before a
snapshot that reads rows (Debezium also waits before a schema-only one; cdc does not); the streaming delay
comes after a completed snapshot (its last offset already handed on for commit), before the log is read,
and not when no snapshot ran. Both end at once when the connector is stopped. Connectors call
``wait_before`` at those two points.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common

_FIELDS = {"snapshot": common.SNAPSHOT_DELAY_MS, "streaming": common.STREAMING_DELAY_MS}
#: How often a long wait says how much of it is left (Debezium logs every ConfigurationDefaults.RETURN_CONTROL_INTERVAL).
_REPORT_EVERY_S = 10.0


def wait_before(phase: str, config: Config, stop: threading.Event, log: Any) -> bool:
    """Wait the configured delay before ``phase`` (``snapshot`` or ``streaming``); True if stopped meanwhile."""
    field = _FIELDS[phase]
    delay = (config.get(field) or 0) / 1000.0
    if delay <= 0:
        return stop.is_set()
    deadline = time.monotonic() + delay
    log.info("waiting %gs before the %s starts (%s)", delay, phase, field.name)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return stop.is_set()
        if stop.wait(min(left, _REPORT_EVERY_S)):
            log.info("stopped while waiting before the %s (%s)", phase, field.name)
            return True
        if deadline - time.monotonic() > 0:
            log.info("the %s starts in %.0fs (%s)", phase, deadline - time.monotonic(), field.name)
