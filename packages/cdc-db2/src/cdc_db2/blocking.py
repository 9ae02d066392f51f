"""The Db2 blocking snapshot (signal ``execute-snapshot``, ``type: blocking``) as Debezium 2.7.4's Db2 connector.

The stream pauses at the end of the poll window the signal came in (Db2Connector.pauses_at_round_end),
then, on a connection of its own, in one transaction, the snapshot goes as Debezium's
RelationalSnapshotChangeEventSource.doExecute with the blocking task (getBlockingSnapshottingTask:
``snapshotSchema`` and ``snapshotData`` true):

1. ``snapshot.isolation.mode`` and the SnapshotLock's statements exactly as the initial snapshot
   (Db2SnapshotChangeEventSource.lockTablesForSchemaSnapshot; cdc_db2.snapshot.SnapshotReader.begin);
2. the offset (determineSnapshotOffset): the previous one, the stream's Db2OffsetContext the signal
   handed over, unless ``snapshot.mode=always``, which makes a new one at the max LSN read in the
   transaction (``commit_lsn`` only);
3. the tables' structure read again (readTableStructure), a CREATE recorded in the schema history and
   sent for each (createSchemaChangeEventsForTables), then the schema locks released;
4. the rows, with the initial snapshot's ``source.snapshot`` markers (first, true,
   first_in_data_collection, last_in_data_collection, last), the signal table's left out
   (determineSnapshotSelect).

The source blocks of the CREATEs and rows carry the offset's ``change_lsn`` and ``commit_lsn``
(Db2SourceInfoStructMaker has no ``event_serial_no``). The events' offsets are the paused one plus
the tables left to read (cdc_core.incremental.blocking), so a crash resumes the rest and then streams
from the pause: nothing lost, nothing streamed twice (Debezium's are ``{snapshot, snapshot_completed:
false, commit_lsn}``, which resume nothing after a crash).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import RawChange
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.snapshot.markers import marked_batches
from cdc_core.snapshot.table_reader import first_line
from cdc_db2 import config as dbc
from cdc_db2.catalog import CaptureTable, quote
from cdc_db2.incremental import signal_table
from cdc_db2.snapshot import SnapshotReader, quote_table_id, select_for, snapshot_offset, table_name
from cdc_db2.source import source_block
from cdc_db2.timestamps import select_items, select_list

#: Debezium's Db2OffsetContext position: ``(change_lsn, commit_lsn, event_serial_no)``.
Position = tuple[str | None, str | None, int | None]


def position_of(offset: dict[str, Any] | None) -> Position | None:
    """A stored offset's ``(change_lsn, commit_lsn, event_serial_no)`` (None without a commit LSN)."""
    if not offset or not offset.get("commit_lsn"):
        return None
    serial = offset.get("event_serial_no")
    return offset.get("change_lsn"), offset["commit_lsn"], None if serial is None else int(serial)


def select(connector: Any, captured: CaptureTable, condition: Node | None) -> tuple[str | None, tuple[Any, ...]]:
    """The SELECT of a table's rows and its parameters (None: no rows).

    As Debezium's determineSnapshotSelect for a blocking task: the signal's ``additional-conditions`` filter
    (its only overrides: ``snapshot.select.statement.overrides`` is the initial snapshot's), else the
    SnapshotQuery (``snapshot.query.mode=custom``'s, whose empty answer skips the table), else every column.
    """
    table = captured.table
    if condition is not None:
        text, params = condition.render(quote, "?")
        return f"SELECT {select_list(table.columns)} FROM {table_name(captured)} WHERE {text}", \
            tuple(params)
    if connector.snapshot_query is not None:
        return connector.snapshot_query.snapshot_query(table.id, select_items(table.columns),
                                                       quote_table_id), ()
    return select_for(captured), ()


def blocking_snapshot(connector: Any, tables: list[tuple[Table, Node | None]],
                      offset_for: Callable[[Table], dict[str, Any] | None],
                      stopped: Callable[[], bool]) -> Iterator[list[Any]]:
    """The CREATEs, then the rows of ``tables`` (each with the signal's filter), read in one transaction."""
    config = connector.config
    conn = connector._connect()
    try:
        reader = SnapshotReader(conn, connector.server, connector.db, connector.control,
                                config.get(dbc.SNAPSHOT_ISOLATION_MODE), config.get(dbc.SNAPSHOT_FETCH_SIZE),
                                connector.log.with_context("snapshot"), connector.dialect)
        reader.lock = connector.snapshot_lock
        reader.lock_timeout_ms = config.get(dbc.SNAPSHOT_LOCK_TIMEOUT_MS)
        by_name = {t.table.id.identifier: t for t in connector._tables + connector._uncaptured}
        captured = [(by_name[t.id.identifier], condition) for t, condition in tables if t.id.identifier in by_name]
        fresh: dict[str, CaptureTable] = {}

        def structure() -> None:
            """readTableStructure: the definitions again, under the schema locks (a table gone keeps the old one)."""
            fresh.update(connector.blocking_tables(conn))

        max_lsn = reader.begin([t for t, _ in captured], structure)
        captured = [(fresh.get(t.table.id.identifier, t), condition) for t, condition in captured]
        paused = offset_for(tables[0][0]) if tables else None
        # determineSnapshotOffset: the stream's offset context where it paused (its last window's last change,
        # or, for a snapshot resumed at start before streaming, the paused offset stored with its progress);
        # snapshot.mode=always: a new one at the max LSN.
        at = None if config.get(dbc.SNAPSHOT_MODE) == "always" else connector.round_position() or position_of(paused)
        if at is not None:
            lsns = (at[0], at[1])
            # The history record's position: the paused one, so a restart replays the CREATEs once the stored
            # offset reaches the pause (cdc_db2.history; Debezium's record has the snapshot offset
            # {snapshot, snapshot_completed: false, commit_lsn}, placed by change_lsn, which it lacks).
            position = {k: v for k, v in zip(("change_lsn", "commit_lsn", "event_serial_no"), at) if v is not None}
        else:
            lsns, position = (None, max_lsn), snapshot_offset(max_lsn, False)
        connector.log.info("blocking snapshot of %d tables at change LSN %s, commit LSN %s "
                           "(snapshot.isolation.mode=%s)", len(captured), lsns[0], lsns[1], reader.isolation)
        events = connector.blocking_created([t for t, _ in captured], lsns, position, paused)
        if events:
            yield events

        def rows(captured: CaptureTable, condition: Node | None) -> Iterator[RawChange]:
            table = captured.table
            statement, params = select(connector, captured, condition)
            if statement is None:
                return
            cur = conn.cursor()
            try:
                cur.execute(statement, params) if params else cur.execute(statement)
            except Exception as e:
                if type(e).__name__ == "OperationalError":
                    raise
                raise ConnectorError(f"the blocking snapshot of {table.id} failed: Db2 refused {statement!r}: "
                                     f"{first_line(e)}") from None
            source = source_block(connector.server, connector.db, time.time_ns() // 1000, "true",
                                  table.id.schema or "", table.id.table, *lsns)
            offset = offset_for(table)
            while fetched := cur.fetchmany(reader.fetch_size):
                for row in fetched:
                    yield RawChange(table, "r", None, list(row), source, offset)

        signal = signal_table(config)
        data = [(t, c) for t, c in captured if (t.table.id.schema, t.table.id.table) != signal]
        yield from marked_batches((rows(t, c) for t, c in data), reader.fetch_size, stopped)
        if stopped():
            return
        reader.end()
    finally:
        try:
            conn.close()
        except Exception as e:  # the snapshot's own connection; closing it cannot lose data
            connector.log.debug("closing the blocking snapshot connection: %s", first_line(e))
