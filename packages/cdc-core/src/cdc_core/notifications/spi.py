"""The notification contract: Debezium's notification shape and the channels that deliver it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.events import ChangeRecord

#: Debezium's aggregate types.
INCREMENTAL_SNAPSHOT = "Incremental Snapshot"
INITIAL_SNAPSHOT = "Initial Snapshot"
#: cdc's own aggregate type for a signal that was refused (Debezium only logs those).
SIGNAL = "Signal"


@dataclass(frozen=True)
class Notification:
    """What happened: ``aggregate_type`` (e.g. "Incremental Snapshot"), ``type`` (e.g. STARTED), details.

    ``additional_data`` maps strings to strings, as Debezium's ``Map<String, String>``;
    ``timestamp`` is epoch milliseconds; ``id`` is the signal's id where one started it.
    """

    id: str
    aggregate_type: str
    type: str
    additional_data: dict[str, str] = field(default_factory=dict)
    timestamp: int = 0

    @staticmethod
    def of(aggregate_type: str, type_: str, data: dict[str, Any] | None = None, id_: str | None = None) -> Notification:
        """A notification stamped now (values of ``data`` become strings)."""
        return Notification(id_ or str(uuid.uuid4()), aggregate_type, type_,
                            {k: str(v) for k, v in (data or {}).items()}, time.time_ns() // 1_000_000)

    def as_dict(self) -> dict[str, Any]:
        """The payload, fields in Debezium's order."""
        return {"id": self.id, "type": self.type, "aggregate_type": self.aggregate_type,
                "additional_data": dict(self.additional_data), "timestamp": self.timestamp}


#: Puts a record into the change stream (after the records before it), as the sink channel does.
Emit = Callable[[ChangeRecord], None]


@runtime_checkable
class NotificationChannel(Protocol):
    """A destination for notifications, selected by name in ``notification.enabled.channels``.

    ``send`` runs on the connector thread, in the order notifications happen; it must not block
    for long. ``emit`` appends a record to the change stream (the ``sink`` channel's way out);
    channels that deliver elsewhere ignore it.
    """

    #: The name that selects it in ``notification.enabled.channels``.
    name: ClassVar[str]

    def __init__(self, config: Config, log: Any) -> None: ...

    def send(self, notification: Notification, emit: Emit) -> None:
        """Deliver one notification."""

    def close(self) -> None:
        """Release resources."""
