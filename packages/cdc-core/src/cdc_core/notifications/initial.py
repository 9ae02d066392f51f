"""The initial snapshot's notifications, in the shape of Debezium 2.7.4's InitialSnapshotNotificationService.

A connector hands the engine's notifier (``attach_notifier``, called by the signal controller before the
stream starts) to ``InitialSnapshotNotifications`` and reports its snapshot's life through it:
``STARTED`` (no data but ``connector_name``), ``IN_PROGRESS`` per table to read (``current_collection_in_progress``,
``data_collections``: the tables to read), ``TABLE_SCAN_COMPLETED`` per table read (``scanned_collection``,
``data_collections``: the captured tables, ``total_rows_scanned``, ``status`` ``SUCCEEDED``; ``SQL_EXCEPTION`` with
``scanned_collection`` only when its read failed), then ``COMPLETED`` or ``ABORTED``; ``SKIPPED`` when no
snapshot is due. Every id is a random UUID (Debezium's buildNotificationWith), every aggregate type
``Initial Snapshot``. ``tables`` wraps a snapshot's batches and sends the per-table ones from the rows it sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from cdc_core.events import RawChange
from cdc_core.notifications.service import collection_name
from cdc_core.notifications.spi import INITIAL_SNAPSHOT


class InitialSnapshotNotifications:
    """Sends the initial snapshot's notifications through ``notifier`` (nothing when it is None)."""

    def __init__(self, notifier: Any):
        self.notifier = notifier

    def _send(self, type_: str, data: dict[str, Any] | None = None) -> None:
        if self.notifier is not None:
            self.notifier.notify(INITIAL_SNAPSHOT, type_, data)

    def name(self, table_id: Any) -> str:
        """How the notifications name a table (Debezium's ``TableId.identifier()``)."""
        return collection_name(self.notifier, table_id) if self.notifier is not None else table_id.identifier

    def started(self) -> None:
        """The snapshot begins (before its connection, locks and reads)."""
        self._send("STARTED")

    def skipped(self) -> None:
        """No snapshot is due (a stored offset, a mode that takes none)."""
        self._send("SKIPPED")

    def completed(self) -> None:
        """The snapshot completed."""
        self._send("COMPLETED")

    def aborted(self) -> None:
        """The snapshot stopped before its end (a stop, an error)."""
        self._send("ABORTED")

    def in_progress(self, table: str, tables: list[str]) -> None:
        """``table`` is about to be read; ``tables`` are all the snapshot reads."""
        self._send("IN_PROGRESS", {"current_collection_in_progress": table, "data_collections": ",".join(tables)})

    def table_completed(self, table: str, rows: int, captured: list[str]) -> None:
        """``table`` was read (``rows`` rows); ``captured`` are the snapshot's captured tables."""
        self._send("TABLE_SCAN_COMPLETED", {"scanned_collection": table, "data_collections": ",".join(captured),
                                            "total_rows_scanned": rows, "status": "SUCCEEDED"})

    def table_failed(self, table: str) -> None:
        """Reading ``table`` failed."""
        self._send("TABLE_SCAN_COMPLETED", {"scanned_collection": table, "status": "SQL_EXCEPTION"})

    def announce(self, read: list[str], captured: list[str]) -> Callable[[str, int], None]:
        """Every table of ``read`` IN_PROGRESS now (Debezium hands them all to its reader threads at once); returns
        what a reader calls as it finishes one (its name, its rows): that table's TABLE_SCAN_COMPLETED, naming the
        ``captured`` tables. For readers that may read several tables at once (``snapshot.max.threads``)."""
        for name in read:
            self.in_progress(name, read)

        def done(name: str, rows: int) -> None:
            self.table_completed(name, rows, captured)

        return done

    def tables(self, batches: Iterator[list[Any]], read: list[Any], captured: list[Any],
               stopped: Callable[[], bool], reading: Callable[[], Any] | None = None) -> Iterator[list[Any]]:
        """``batches`` (the rows of the tables ``read``, in that order) with the per-table notifications: every
        table's IN_PROGRESS first (Debezium notifies them as it hands the tables to its reader threads), then each
        one's TABLE_SCAN_COMPLETED once the next table's rows (or the end, unless ``stopped()``) come; a failed read
        names its table: ``reading()``'s table id (the one the reader was at), else the last one rows came from.
        (Tables read whole before a failing one whose completion no row announced yet get no notification: their
        last row is still held by a reader that marks it ``last_in_data_collection``, so their count is not known.)"""
        names = [self.name(t.id) for t in read]
        everything = [self.name(t.id) for t in captured]
        for name in names:
            self.in_progress(name, names)
        position = {t.id: i for i, t in enumerate(read)}
        current, rows = 0, 0
        try:
            for batch in batches:
                for item in batch:
                    if item.__class__ is not RawChange:
                        continue
                    at = position.get(item.table.id, current)
                    while current < at:
                        self.table_completed(names[current], rows, everything)
                        current, rows = current + 1, 0
                    rows += 1
                yield batch
        except Exception:
            at = position.get(reading(), current) if reading is not None else current
            if at < len(names):
                self.table_failed(names[at])
            raise
        while current < len(names) and not stopped():
            self.table_completed(names[current], rows, everything)
            current, rows = current + 1, 0
