"""Notifications: Debezium-shaped status messages through pluggable channels."""

from cdc_core.notifications.spi import Notification, NotificationChannel

__all__ = ["Notification", "NotificationChannel"]
