"""The initial snapshot's notifications ("Initial Snapshot" aggregate type), as Debezium 2.7.4's SQL Server sends them.

AbstractSnapshotChangeEventSource.execute notifies STARTED before the snapshot (also for snapshot.mode=no_data,
which snapshots the schema) and COMPLETED after it; RelationalSnapshotChangeEventSource.createDataEvents notifies
IN_PROGRESS for every table it is about to read (the loop submitting the reads: all of them first) with
``data_collections`` the tables read, and TABLE_SCAN_COMPLETED at the end of each table with ``scanned_collection``,
``total_rows_scanned``, ``status`` SUCCEEDED and ``data_collections`` the captured tables (with the signal table:
addSignalingCollectionAndSort), each as TableId.identifier() names it: ``<database>.<schema>.<table>``. A
snapshot that is not due (a restart after a completed one) is SKIPPED.
InitialSnapshotNotificationService adds ``connector_name`` to each and gives each a random id.
(AbstractNotificationsIT, NotificationsIT.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdc_core.events import RawChange
from cdc_core.notifications.spi import INITIAL_SNAPSHOT


def notify(notifier: Any, type_: str, data: dict[str, Any] | None = None) -> None:
    """One Initial Snapshot notification (none without a notifier)."""
    if notifier is not None:
        notifier.notify(INITIAL_SNAPSHOT, type_, data or {})


def notified_snapshot(batches: Iterator[list[Any]], notifier: Any, db: str, read: list[str],
                      captured: list[str]) -> Iterator[list[Any]]:
    """Pass a snapshot of ``read`` (``schema.table``, in reading order) on, notifying as Debezium does; ``captured``:
    the snapshot's captured tables (``read`` plus the signal table where it is one)."""
    if notifier is None:
        yield from batches
        return
    names = {t: f"{db}.{t}" for t in {*read, *captured}}
    reading = ",".join(names[t] for t in read)
    all_captured = ",".join(sorted(names[t] for t in captured))
    for t in read:
        notify(notifier, "IN_PROGRESS", {"current_collection_in_progress": names[t], "data_collections": reading})
    order = {t: i for i, t in enumerate(read)}
    rows = {t: 0 for t in read}
    done = 0

    def completed(table: str) -> None:
        notify(notifier, "TABLE_SCAN_COMPLETED", {"scanned_collection": names[table], "data_collections": all_captured,
                                                  "total_rows_scanned": rows[table], "status": "SUCCEEDED"})

    for batch in batches:
        for item in batch:
            if item.__class__ is RawChange and item.op == "r":
                table = item.table.id.identifier
                at = order.get(table, done)
                while done < at:
                    completed(read[done])
                    done += 1
                rows[table] = rows.get(table, 0) + 1
        yield batch
    while done < len(read):
        completed(read[done])
        done += 1
