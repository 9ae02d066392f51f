"""Fanning notifications out to the enabled channels and in-process listeners, on the connector thread."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from cdc_core.config import Config
from cdc_core.envelope import data_collection
from cdc_core.events import ChangeRecord
from cdc_core.notifications.spi import Notification
from cdc_core.signals.config import NOTIFICATION_CHANNELS

Listener = Callable[[Notification], None]


class NotificationService:
    """Queues notifications from any thread; ``drain`` delivers them in order and returns the sink records.

    Channels come from the plugin registry (``notification channel``); ``listeners`` are called
    with every notification whatever the configuration (``Engine.add_notification_listener``).
    A failing channel or listener is logged, never fatal.
    """

    def __init__(self, config: Config, plugins: Any, log: Any, connector_name: str,
                 listeners: list[Listener] | None = None, partition: dict[str, Any] | None = None,
                 with_catalog: bool = False):
        self.log = log
        #: The connector's TableIds carry the database (SQL Server): tables are named ``<db>.<schema>.<table>``.
        self.with_catalog = with_catalog
        self.connector_name = connector_name
        self.listeners = listeners if listeners is not None else []
        self.partition = partition
        self.channels = [plugins.get("notification channel", name)(config, log)
                         for name in config.get(NOTIFICATION_CHANNELS) or []]
        self._queue: deque[Notification] = deque()
        self._lock = threading.Lock()

    def collection(self, tid: Any) -> str:
        """How notifications name a table: Debezium's ``DataCollectionId.identifier()`` (cdc_core.envelope)."""
        return data_collection(tid, self.with_catalog)

    def notify(self, aggregate_type: str, type_: str, data: dict[str, Any] | None = None,
               id_: str | None = None) -> Notification:
        """Queue a notification (``connector_name`` is added to its data, as Debezium does)."""
        n = Notification.of(aggregate_type, type_, {**(data or {}), "connector_name": self.connector_name}, id_)
        with self._lock:
            self._queue.append(n)
        return n

    def drain(self) -> list[ChangeRecord]:
        """Deliver everything queued; the records the sink channel emitted, in order."""
        if not self._queue:
            return []
        with self._lock:
            pending = list(self._queue)
            self._queue.clear()
        records: list[ChangeRecord] = []

        def emit(record: ChangeRecord) -> None:
            record.partition = self.partition
            records.append(record)

        for n in pending:
            for channel in self.channels:
                try:
                    channel.send(n, emit)
                except Exception as e:  # noqa: BLE001 - a broken channel must not stop the connector
                    self.log.warning("notification channel %r failed: %s", getattr(channel, "name", channel), e)
            for listener in list(self.listeners):
                try:
                    listener(n)
                except Exception as e:  # noqa: BLE001
                    self.log.warning("notification listener %r failed: %s", listener, e)
        return records

    def close(self) -> None:
        """Close the channels."""
        for channel in self.channels:
            try:
                channel.close()
            except Exception:  # noqa: BLE001
                pass


def collection_name(notifier: Any, tid: Any) -> str:
    """``notifier``'s name for a table (``NotificationService.collection``; another notifier: ``schema.table``)."""
    name = getattr(notifier, "collection", None)
    return name(tid) if name is not None else tid.identifier
