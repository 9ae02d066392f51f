"""The "Capture Instance" COMPLETED notification: streaming is done with a capture instance that a newer one replaced.

As Debezium 2.7.4's SqlServerStreamingChangeEventSource.commitOffset: once a committed offset's commit LSN is past
the stop LSN of an instance (the start LSN of its table's next instance), one notification per instance, with
additional data ``capture_instance``, ``start_lsn``, ``stop_lsn``, ``commit_lsn`` (``xxxxxxxx:xxxxxxxx:xxxx``), the
partition's ``server`` and ``database``, and ``connector_name``; a random id (NotificationsIT
.completeReadingFromACaptureInstanceNotificationEmitted).
"""

from __future__ import annotations

from typing import Any

from cdc_sqlserver.lsn import Lsn

CAPTURE_INSTANCE = "Capture Instance"


class InstanceCompletion:
    """Tells, per committed offset, which replaced capture instances streaming has finished with (each once)."""

    def __init__(self, server: str, db: str):
        self.server = server
        self.db = db
        self._done: set[tuple[str, str]] = set()

    def committed(self, offset: dict[str, Any], instances: list[Any], notifier: Any) -> None:
        """Notify for every instance of ``instances`` whose stop LSN is before ``offset``'s commit LSN."""
        if notifier is None or not offset.get("commit_lsn"):
            return
        commit = Lsn.parse(offset["commit_lsn"])
        if not commit.available:
            return
        for inst in instances:
            key = (inst.name, str(inst.start_lsn))
            if not inst.stop_lsn.available or key in self._done or not inst.stop_lsn.key() < commit.key():
                continue
            self._done.add(key)
            notifier.notify(CAPTURE_INSTANCE, "COMPLETED", {
                "capture_instance": inst.name, "start_lsn": str(inst.start_lsn), "stop_lsn": str(inst.stop_lsn),
                "commit_lsn": str(commit), "server": self.server, "database": self.db})
