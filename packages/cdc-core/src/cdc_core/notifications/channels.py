"""The built-in notification channels: ``log`` and ``sink`` (records on ``notification.sink.topic.name``)."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config
from cdc_core.events import ChangeRecord
from cdc_core.notifications.spi import Emit, Notification
from cdc_core.schema import INT64, STRING, Schema, struct
from cdc_core.signals.config import NOTIFICATION_TOPIC

#: Debezium's SchemaFactory notification key and value schemas.
KEY_SCHEMA = struct("io.debezium.connector.common.NotificationKey", [("id", STRING)], version=1)
VALUE_SCHEMA = struct(
    "io.debezium.connector.common.Notification",
    [
        ("id", STRING),
        ("type", STRING),
        ("aggregate_type", STRING),
        ("additional_data", Schema("map", optional=True, keys=STRING, values=STRING)),
        ("timestamp", INT64),
    ],
    version=1,
)


class LogNotificationChannel:
    """Writes each notification to the log, as Debezium's LogNotificationChannel does."""

    name: ClassVar[str] = "log"

    def __init__(self, config: Config, log: Any):
        self.log = log

    def send(self, notification: Notification, emit: Emit) -> None:
        """Log it at INFO."""
        self.log.info("[Notification Service] %s", notification.as_dict())

    def close(self) -> None:
        """Nothing to release."""


class SinkNotificationChannel:
    """Emits each notification as a record on ``notification.sink.topic.name`` through the sink."""

    name: ClassVar[str] = "sink"

    def __init__(self, config: Config, log: Any):
        self.topic = config.get(NOTIFICATION_TOPIC)

    def send(self, notification: Notification, emit: Emit) -> None:
        """Emit the record (key ``{"id"}``, value the notification) with no offset of its own."""
        emit(ChangeRecord(self.topic, {"id": notification.id}, notification.as_dict(), KEY_SCHEMA, VALUE_SCHEMA))

    def close(self) -> None:
        """Nothing to release."""
