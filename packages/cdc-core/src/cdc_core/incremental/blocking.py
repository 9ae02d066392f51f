"""Blocking snapshots: streaming pauses, the tables are read as the initial snapshot reads them, streaming resumes.

The change stream is simply not pulled while the snapshot runs, so streaming resumes exactly
where it paused (as in Debezium, a change committed after that position and before the snapshot's
read is in the snapshot's rows and is streamed afterwards too). Each READ carries the paused position plus
the tables still to read, so a crash in the middle re-reads the remaining tables (the current one
from its start) before streaming on. Where the stream pauses is the connector's: right after the
signal, or at the end of the poll round the signal came in (``pauses_at_round_end``: SQL Server, Db2, as
Debezium's coordinator); changes the stream had not reached by then are streamed after the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cdc_core.errors import RetriableError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.incremental.spi import IncrementalSnapshotSource
from cdc_core.notifications.service import collection_name
from cdc_core.notifications.spi import INITIAL_SNAPSHOT
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node, parse_filter
from cdc_core.signals.names import SignalDataError

#: The offset key under which an unfinished blocking snapshot is stored.
BLOCKING_KEY = "blocking_snapshot"


@dataclass
class BlockingRequest:
    """A blocking snapshot to run: the signal's id, each table with its filter, and the position it paused at."""

    id: str
    tables: list[tuple[Table, str | None, Node | None]]
    paused_at: dict[str, Any] | None = None

    @staticmethod
    def from_offset(offset: dict[str, Any], captured: list[Table], log: Any) -> BlockingRequest | None:
        """The unfinished blocking snapshot an offset recorded, or None."""
        doc = offset.get(BLOCKING_KEY)
        if not doc:
            return None
        by_name = {t.id.identifier: t for t in captured}
        tables = []
        for name in doc.get("tables") or []:
            table = by_name.get(name)
            if table is None:
                log.warning("blocking snapshot: table %s is no longer captured; it is skipped", name)
                continue
            text = (doc.get("conditions") or {}).get(name)
            try:
                tables.append((table, text, parse_filter(text, table, allow_select=True) if text else None))
            except SignalDataError as e:
                log.warning("blocking snapshot: %s; table %s is skipped", e, name)
        paused_at = {k: v for k, v in offset.items() if k != BLOCKING_KEY}
        return BlockingRequest(str(doc.get("id") or ""), tables, paused_at)


def run_blocking(source: IncrementalSnapshotSource, request: BlockingRequest, notifier: Any, metrics: Any, log: Any,
                 stopped: Callable[[], bool], signal_collection: str | None = None) -> Iterator[list[RawChange | Checkpoint]]:
    """Yield the snapshot's batches, then a checkpoint back at the paused position (a heartbeat's, once completed).

    Its notifications carry Debezium 2.7.4's additional data (InitialSnapshotNotificationService, as
    RelationalSnapshotChangeEventSource calls it): STARTED and COMPLETED only ``connector_name``; IN_PROGRESS the
    table and ``data_collections``, the tables read; TABLE_SCAN_COMPLETED ``scanned_collection``,
    ``total_rows_scanned``, ``status`` and ``data_collections``, the snapshot context's captured tables (the tables
    the signal names, in include-list order); ABORTED none (the reason is in the log). Each notification has an id of
    its own (a random UUID, buildNotificationWith's), not the signal's: a consumer that tells notifications apart by id
    sees each one.
    """
    names = [t.id.identifier for t, _, _ in request.tables]
    conditions = {t.id.identifier: text for t, text, _ in request.tables if text}
    offsets: dict[str, dict[str, Any] | None] = {}
    for i, name in enumerate(names):
        offsets[name] = None if request.paused_at is None else {
            **request.paused_at, BLOCKING_KEY: {"id": request.id, "tables": names[i:], "conditions": conditions}}
    log.info("blocking snapshot %s of %s: streaming paused", request.id, ", ".join(names))
    labels = {t.id.identifier: collection_name(notifier, t.id) for t, _, _ in request.tables}  # notifications' names
    # The snapshot context's captured tables: the tables the signal names, in table.include.list order (Debezium's
    # addSignalingCollectionAndSort orders them by the include list's patterns; the signal table is among them only
    # when the signal names it). Checked against the real Debezium 3.0.7 (test_conformance_snapshot_notifications).
    captured = ",".join(labels.values())
    # The tables whose rows are read (RelationalSnapshotChangeEventSource's rowCountTables: not the signal table,
    # which determineSnapshotSelect gives no SELECT): each announced IN_PROGRESS up front, as the loop submitting
    # their reads does, and TABLE_SCAN_COMPLETED once read, an empty one with 0 rows.
    read = [n for n in names if labels[n] != signal_collection]
    reading = ",".join(labels[n] for n in read)
    order = {n: i for i, n in enumerate(read)}
    rows = dict.fromkeys(read, 0)
    done = 0
    notifier.notify(INITIAL_SNAPSHOT, "STARTED", {})
    if metrics is not None:
        metrics.snapshot_started({n: 0 for n in names})
    for n in read:
        notifier.notify(INITIAL_SNAPSHOT, "IN_PROGRESS", {
            "data_collections": reading, "current_collection_in_progress": labels[n]})

    def table_done(name: str) -> None:
        notifier.notify(INITIAL_SNAPSHOT, "TABLE_SCAN_COMPLETED", {
            "scanned_collection": labels[name], "data_collections": captured, "total_rows_scanned": rows[name],
            "status": "SUCCEEDED"})
        if metrics is not None:
            metrics.table_completed(name)

    completed = False
    try:
        pairs = [(t, node) for t, _, node in request.tables]
        last_table, at = None, -1
        for batch in source.blocking_snapshot(pairs, lambda t: offsets[t.id.identifier], stopped):
            for ch in batch:
                if ch.__class__ is RawChange:
                    if ch.table is not last_table:
                        last_table, at = ch.table, order.get(ch.table.id.identifier, -1)
                        while done < at:
                            table_done(read[done])
                            done += 1
                    if at >= 0:
                        rows[read[at]] += 1
            yield batch
            if stopped():
                return
        if stopped():  # the connector ended early: the offsets keep what is left to read
            return
        while done < len(read):
            table_done(read[done])
            done += 1
        completed = True
    except RetriableError:
        raise  # the engine retries; the offsets say which tables are left
    except Exception as e:  # noqa: BLE001 - the stream goes on without the rest of this snapshot
        log.error("blocking snapshot %s failed: %s; streaming resumes", request.id, e)
        notifier.notify(INITIAL_SNAPSHOT, "ABORTED", {})
    finally:
        if metrics is not None:
            metrics.snapshot_ended(completed)
    if completed:
        notifier.notify(INITIAL_SNAPSHOT, "COMPLETED", {})
        log.info("blocking snapshot %s completed; streaming resumes", request.id)
    if request.paused_at is not None:
        # A completed one ends with Debezium's forced heartbeat: a blocking snapshot runs the initial snapshot's code
        # (RelationalSnapshotChangeEventSource.doExecute, ending with dispatcher.alwaysDispatchHeartbeatEvent), which
        # an aborted one never reaches. Checked against the real Debezium 3.0.7 (test_conformance_snapshot_heartbeat).
        yield [Checkpoint(request.paused_at, heartbeat=completed)]
