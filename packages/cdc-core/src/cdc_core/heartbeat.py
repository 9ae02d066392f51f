"""Heartbeats: records on ``<topic.heartbeat.prefix>.<topic.prefix>`` that keep offsets moving while idle."""

from __future__ import annotations

import time
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import INT64, STRING, struct

KEY_SCHEMA = struct("io.debezium.connector.common.ServerNameKey", [("serverName", STRING)], version=1)
VALUE_SCHEMA = struct("io.debezium.connector.common.Heartbeat", [("ts_ms", INT64)], version=1)


class Heartbeat:
    """Turns a due Checkpoint into a heartbeat record carrying its offset (``heartbeat.interval.ms`` > 0)."""

    def __init__(self, interval_ms: int, topic: str, server: str):
        self.interval = interval_ms / 1000.0
        self.topic = topic
        self.key = {"serverName": server}
        # The first heartbeat comes one interval after start, as in Debezium, not at the first checkpoint.
        self._last = time.monotonic()
        #: Whether a snapshot's end (``Checkpoint.heartbeat``) is written as a heartbeat whatever the interval, as
        #: Debezium's snapshots end (False where only a connector's own default turned heartbeats on).
        self.at_snapshot_end = True

    @property
    def enabled(self) -> bool:
        """True when heartbeats are configured."""
        return self.interval > 0

    def forced(self, checkpoint_asks: bool) -> bool:
        """True if a Checkpoint that asks for one (a snapshot's end) is written as a heartbeat now."""
        return checkpoint_asks and self.at_snapshot_end and self.enabled

    def due(self) -> bool:
        """True if a heartbeat should be written now."""
        return self.enabled and time.monotonic() - self._last >= self.interval

    def record(self, offset: dict[str, Any]) -> ChangeRecord:
        """A heartbeat record carrying ``offset``; restarts the interval."""
        self._last = time.monotonic()
        return ChangeRecord(self.topic, dict(self.key), {"ts_ms": time.time_ns() // 1_000_000}, KEY_SCHEMA, VALUE_SCHEMA, offset)
