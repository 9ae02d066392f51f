"""The PostgreSQL connector's own streaming metrics: ``NumberOfSkippedEvents`` and ``NumberOfDisconnects``.

The spec's PostgreSQL chapter lists both with the streaming metrics (Debezium 2.7's PostgreSQL MBean
has neither; its binlog connectors count undecodable events and client disconnects). Here:

- ``NumberOfSkippedEvents``: changes and logical decoding messages the slot sent again that the
  stored offset says were already delivered (a restart inside or after a transaction whose position
  the slot had not confirmed yet), dropped instead of delivered twice;
- ``NumberOfDisconnects``: connections to the server lost while streaming (each followed by a
  reconnect, unless retries are exhausted).

They hang off the engine's streaming group (``CommonMetrics.extension``), so they survive restarts.
"""

from __future__ import annotations

from typing import Any

#: Name of the streaming-group extension.
EXTENSION = "postgres"


class PostgresStreamingMetrics:
    """The counters; written by the connector's thread only."""

    def __init__(self) -> None:
        self.skipped_events = 0
        self.disconnects = 0

    def values(self) -> dict[str, Any]:
        """The attributes, by their names in the spec."""
        return {"NumberOfSkippedEvents": self.skipped_events, "NumberOfDisconnects": self.disconnects}


def postgres_metrics(metrics: Any) -> PostgresStreamingMetrics | None:
    """The extension of the engine's metrics (None without metrics)."""
    return None if metrics is None else metrics.streaming.extension(EXTENSION, PostgresStreamingMetrics)
