"""Incremental snapshots: Debezium's watermark algorithm (DDD-3), once, for every relational connector.

For each chunk a reader thread registers a window, inserts the low watermark into the signal
table, reads up to ``incremental.snapshot.chunk.size`` rows after the previous chunk's last key
(one statement, in key order), and inserts the high watermark (``insert_insert``) or deletes the
low one (``insert_delete``). The connector thread sees both watermarks in the change stream:
between them it notes the keys of the table's log events; at the high watermark it drops the
chunk rows those events superseded and emits the rest as READs, so no READ ever follows a newer
change of its row. Progress (each table's last emitted key) rides in every offset, so a crash
resumes after the last closed chunk.

With position watermarks (a source declaring ``watermarks = "position"``: MySQL's and MariaDB's
``read.only=true``) nothing is written: the reader takes the server's log position before and after
the read, and the connector thread opens and closes windows from the positions the stream reports
(``cdc_core.incremental.positions``). On an idle server a checkpoint that contains a window's high
watermark closes it, and the windows the reader finishes while nothing new is logged close at that
same checkpoint (``close_idle``), as Debezium reads chunk after chunk at a heartbeat.

Beyond Debezium: a reader reads the next chunk while the stream has not yet reached the previous
window (up to ``MAX_INFLIGHT`` windows per table; each window is judged only by the events
between its own watermarks, so this changes nothing in the result), and ``snapshot.max.threads``
tables are read at the same time.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from typing import Any

import orjson

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.incremental.positions import PositionWindows
from cdc_core.incremental.spi import POSITION, ChunkReader, ChunkRows, IncrementalSnapshotSource, watermarks_of
from cdc_core.incremental.state import TableScan, format_key
from cdc_core.incremental.window import KeyFn, Window, key_function
from cdc_core.notifications.service import collection_name
from cdc_core.notifications.spi import INCREMENTAL_SNAPSHOT
from cdc_core.relational import Table, TableId
from cdc_core.signals.conditions import parse_filter
from cdc_core.signals.config import CHUNK_SIZE, MAX_THREADS, WATERMARKING
from cdc_core.signals.names import SignalDataError

#: Windows per table read ahead of the stream.
MAX_INFLIGHT = 4
#: Attempts at a table's chunk before the table is given up (SQL_EXCEPTION).
MAX_FAILURES = 3
#: Seconds after which a window whose low watermark never showed up in the stream is reported.
WATERMARK_WARNING_S = 30.0
#: Transactions of the scanned tables remembered with the keys they changed (the lookback).
LOOKBACK_TRANSACTIONS = 50_000
#: Seconds ``close_idle`` waits for a reader to finish its next window.
IDLE_WAIT_S = 0.5
#: Seconds ``close_idle`` does not wait after it found the server busy (logging transactions); doubled
#: each time it finds it busy again, up to ``MAX_BUSY_S``, back to ``BUSY_S`` once it finds it idle.
BUSY_S = 1.0
MAX_BUSY_S = 16.0

OPEN, CLOSE = "snapshot-window-open", "snapshot-window-close"


class IncrementalSnapshot:
    """A running incremental snapshot: its tables, reader threads, open windows and offset state.

    Everything but the reader threads runs on the connector thread (``add``, ``stop``, ``pause``,
    ``window_open``, ``window_close``, ``observe``, ``poll``); ``state`` is the JSON the offsets
    carry, rebuilt whenever a window closes or the table list changes.
    """

    def __init__(self, source: IncrementalSnapshotSource, config: Config, notifier: Any, metrics: Any, log: Any):
        self.source = source
        self.notifier = notifier
        self.metrics = metrics
        self.log = log
        self.chunk_size = config.get(CHUNK_SIZE)
        self.strategy = config.get(WATERMARKING)
        self.threads = config.get(MAX_THREADS)
        self.id: str | None = None
        self.scans: list[TableScan] = []
        self.paused = False
        self.chunks = 0
        self.state: dict[str, Any] | None = None
        self._pending: dict[str, Window] = {}
        self._open: dict[TableId, Window] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._workers: list[threading.Thread] = []
        self._failures: list[tuple[TableScan, Window | None, BaseException]] = []
        self._keys: dict[int, tuple[Table, KeyFn | None]] = {}
        self._warned: set[str] = set()
        self._transaction_of = getattr(source, "transaction_of", None)
        self.watermarks = watermarks_of(source)
        self._positions = PositionWindows(source) if self.watermarks == POSITION else None  # type: ignore[arg-type]
        if self._positions is not None and self._transaction_of is None:
            self._transaction_of = _transaction_id
        #: Position watermarks: the log position of each transaction of the lookback.
        self._recent_pos: dict[Any, Any] = {}
        self._busy_until = 0.0
        self._busy_s = BUSY_S
        self._recent: dict[Any, list[tuple[TableId, bytes]]] = {}
        self._recent_order: deque[Any] = deque()
        self._scanned: dict[TableId, list[str]] = {}

    # -- control (connector thread) ----------------------------------------------------------

    @property
    def active(self) -> bool:
        """True while tables remain to be snapshotted."""
        return bool(self.scans)

    @property
    def positional(self) -> bool:
        """True if windows are judged by log positions (``advance``), not by signal table rows."""
        return self._positions is not None

    @property
    def has_open_windows(self) -> bool:
        """True while the stream is between a low and a high watermark."""
        return bool(self._open)

    def add(self, signal_id: str, scans: list[TableScan]) -> None:
        """Start a snapshot of ``scans``, or add those not already in the running one."""
        known = {s.table.id for s in self.scans}  # the id, with its database: the same schema.table may be in two
        new = [s for s in scans if s.table.id not in known]
        if not new:
            self.log.info("incremental snapshot: every requested table is already being snapshotted")
            return
        if not self.scans:
            self.id, self.chunks = signal_id, 0
            if self.metrics is not None:
                self.metrics.snapshot_started({s.name: 0 for s in new})
        with self._cond:
            self.scans += new
            self._cond.notify_all()
        self.notifier.notify(INCREMENTAL_SNAPSHOT, "STARTED", {"data_collections": self._names()}, self.id)
        self.log.info("incremental snapshot %s of %s (chunks of %d rows)", self.id, ", ".join(s.name for s in new),
                      self.chunk_size)
        self._skip_unreadable()
        self._rebuild_state()
        self._start_workers()

    def restore(self, state: dict[str, Any] | None) -> None:
        """Continue the snapshot an offset recorded: each table after its last emitted key."""
        if not state:
            return
        captured = self.source.captured_tables()
        tables = {t.id.identifier: t for t in captured}
        # ``schema.table`` and its database, for connectors over several databases (the same name in each).
        qualified = {(t.id.catalog, t.id.identifier): t for t in captured}
        for entry in state.get("tables") or []:
            if entry.get("skip"):  # reported when its turn comes, as before the restart
                known = tables.get(entry.get("table")) or Table(TableId(None, None, str(entry.get("table"))), [], [])
                self.scans.append(TableScan(known, [], skip=entry["skip"]))
                continue
            table = qualified.get((entry.get("catalog"), entry.get("table"))) or tables.get(entry.get("table"))
            if table is None:
                self.log.warning("incremental snapshot: table %s is no longer captured; it is skipped", entry.get("table"))
                continue
            scan = TableScan(table, list(entry["key"]), entry.get("condition"), None, entry.get("surrogate"),
                             entry.get("max"), bool(entry.get("max_known")), entry.get("first"),
                             entry.get("last"), entry.get("last"), int(entry.get("rows") or 0))
            if scan.condition_text:
                try:
                    scan.condition = parse_filter(scan.condition_text, table)
                except SignalDataError as e:
                    self.log.warning("incremental snapshot: %s; table %s is skipped", e, scan.name)
                    continue
            if any(c not in {col.name for col in table.columns} for c in scan.key):
                self.log.warning("incremental snapshot: table %s no longer has key columns %s; it is skipped",
                                 scan.name, scan.key)
                continue
            self.scans.append(scan)
        if not self.scans:
            return
        self.id = state.get("id")
        self.chunks = int(state.get("chunks") or 0)
        self.paused = bool(state.get("paused"))
        if self.metrics is not None:
            self.metrics.snapshot_started({s.name: s.rows for s in self.scans})
            self.metrics.set_paused(self.paused)
        self.log.info("resuming incremental snapshot %s: %s", self.id,
                      ", ".join(f"{s.name} after {format_key(s.committed)}" for s in self.scans))
        self._skip_unreadable()  # an unreadable table whose turn had come
        self._rebuild_state()
        self._start_workers()

    def stop(self, names: set[str] | None) -> list[str]:
        """Stop the tables called ``names`` (all if None); their open windows emit nothing. Returns those stopped."""
        with self._cond:
            stopped = [s for s in self.scans if names is None or s.name in names]
            for s in stopped:
                s.stopped = True
                self.scans.remove(s)
            self._cond.notify_all()
        if not stopped:
            return []
        self.notifier.notify(INCREMENTAL_SNAPSHOT, "ABORTED", {"data_collections": ",".join(map(self._label, stopped))},
                             self.id)
        self.log.info("incremental snapshot: stopped %s", ", ".join(s.name for s in stopped))
        if not self.scans:
            self._finish(completed=False)
        else:
            self._skip_unreadable()  # an unreadable table that is now first has its turn
        self._rebuild_state()
        return [s.name for s in stopped]

    def pause(self) -> bool:
        """Read no further chunks until ``resume`` (open windows still close); False if nothing runs."""
        if not self.scans or self.paused:
            return False
        with self._cond:
            self.paused = True
        if self.metrics is not None:
            self.metrics.set_paused(True)
        self.notifier.notify(INCREMENTAL_SNAPSHOT, "PAUSED", {"data_collections": self._names()}, self.id)
        self._rebuild_state()
        return True

    def resume(self) -> bool:
        """Continue a paused snapshot; False if it was not paused."""
        if not self.scans or not self.paused:
            return False
        with self._cond:
            self.paused = False
            self._cond.notify_all()
        if self.metrics is not None:
            self.metrics.set_paused(False)
        self.notifier.notify(INCREMENTAL_SNAPSHOT, "RESUMED", {"data_collections": self._names()}, self.id)
        for scan in [s for s in self.scans if s.extra.pop("read_while_paused", False)]:
            self._scan_done(scan)
        self._rebuild_state()
        return True

    # -- the stream (connector thread) -------------------------------------------------------

    def window_open(self, window_id: str) -> None:
        """The stream reached a low watermark."""
        with self._cond:
            w = self._pending.get(window_id)
            if w is None:
                return
            w.opened = True
            self._open[w.scan.table.id] = w

    def window_close(self, window_id: str, at: RawChange | None = None) -> list[RawChange] | None:
        """The stream reached a high watermark: the chunk rows to emit as READs (None for an unknown window).

        ``at`` is the streamed change that closed the window; a source with a ``stream_source(read, streamed)``
        method gives the READs the source block it makes of the two (Debezium sends them with the stream's
        position)."""
        with self._cond:
            w = self._pending.pop(window_id, None)
            if w is None:
                return None
            if self._open.get(w.scan.table.id) is w:
                del self._open[w.scan.table.id]
            scan = w.scan
            scan.inflight -= 1
            self._cond.notify_all()
        if scan.stopped or scan not in self.scans:
            return []
        if self._positions is not None and w.low is not None:
            # Transactions past the low watermark the stream saw before the window opened (the reader
            # registered it, or took the low watermark, just after the stream passed them).
            for tx in self._positions.since(w.low, self._recent_order, self._recent_pos):
                for tid, k in self._recent.get(tx, ()):
                    if tid == scan.table.id:
                        w.seen.add(k)
        for tx in w.invisible:
            for tid, k in self._recent.get(tx, ()):
                if tid == scan.table.id and k not in w.seen:
                    w.seen.add(k)
                    self.log.debug("window %s: key %s was changed by transaction %s, which its read did not see",
                                   w.id, k.decode(), tx)
        rows = w.surviving_rows()
        if len(rows) < len(w.rows):
            self.log.debug("window %s: %d of %d rows superseded by log events", w.id, len(w.rows) - len(rows), len(w.rows))
        self.chunks += 1
        scan.committed = w.last_key
        scan.rows += len(rows)
        if scan.first_key is None:
            scan.first_key = w.first_key
        if self.metrics is not None:
            self.metrics.chunk(w.id, format_key(w.from_key), format_key(w.last_key), format_key(scan.first_key),
                               format_key(scan.max_key))
        if w.rows:
            # As Debezium 2.7.4's notifyInProgress: after every chunk that read rows, the table's last one too (its
            # readChunk reads once more and finds none before TABLE_SCAN_COMPLETED), with the first value of the
            # maximum key and of the chunk's last key, and nothing else.
            self.notifier.notify(INCREMENTAL_SNAPSHOT, "IN_PROGRESS", {
                "data_collections": self._names(), "current_collection_in_progress": self._label(scan),
                "maximum_key": _first(scan.max_key), "last_processed_key": _first(w.last_key)}, self.id)
        if w.done and self.paused:
            # Debezium 2.7.4 finds a table done at the next readChunk, which a paused snapshot does not take: its
            # TABLE_SCAN_COMPLETED (and COMPLETED) come after RESUMED, never while it is paused.
            scan.extra["read_while_paused"] = True
        elif w.done:
            self._scan_done(scan)
        self._rebuild_state()
        stamp = getattr(self.source, "stream_source", None)
        if at is None or stamp is None or not rows:
            return rows
        made: dict[int, dict[str, Any]] = {}  # a chunk's rows share one source block: stamp it once
        return [r._replace(source=made.get(id(r.source)) or made.setdefault(id(r.source), stamp(r.source, at.source)))
                for r in rows]

    def observe(self, change: RawChange) -> None:
        """A log event of a scanned table: note the keys it touches in the open window and in the lookback."""
        table = change.table
        tid = table.id
        key = self._scanned.get(tid)
        if key is None:
            return
        found = self._keys.get(id(table))
        if found is None or found[0] is not table:
            fn = key_function(table, key)
            if fn is None:
                self.log.warning("table %s changed shape during its incremental snapshot (key %s); "
                                 "schema changes are not supported while it runs", tid, key)
            found = self._keys[id(table)] = (table, fn)
        fn = found[1]
        if fn is None:
            return
        keys = [k for row in (change.before, change.after) if row is not None and (k := fn(row)) is not None]
        w = self._open.get(tid)
        if w is not None:
            w.seen.update(keys)
        if self._transaction_of is not None:
            tx = self._transaction_of(change)
            if tx is not None:
                entries = self._recent.get(tx)
                if entries is None:
                    entries = self._recent[tx] = []
                    self._recent_order.append(tx)
                    if self._positions is not None:
                        self._recent_pos[tx] = self._positions.event_position(change)
                    if len(self._recent_order) > LOOKBACK_TRANSACTIONS:
                        old = self._recent_order.popleft()
                        self._recent.pop(old, None)
                        self._recent_pos.pop(old, None)
                entries += [(tid, k) for k in keys]

    def advance(self, change: RawChange) -> list[RawChange] | None:
        """Position watermarks: the stream reached ``change`` (any table). Opens the windows its transaction is
        past the low watermark of; returns the READs of those it is past the high watermark of (they go before
        it), or None if it closed none."""
        if not self._pending:
            return None
        assert self._positions is not None
        close, opened = self._positions.passed(change, list(self._pending.values()))
        out: list[RawChange] | None = None
        for w in close:
            rows = self.window_close(w.id)
            if rows is not None:
                out = rows if out is None else out + rows
        for w in opened:
            self.window_open(w.id)
        return out

    def advance_checkpoint(self, offset: dict[str, Any]) -> list[RawChange] | None:
        """Position watermarks: the stream recorded ``offset``; the READs of the windows whose high watermark
        it contains (None if it closed none)."""
        if not self._pending:
            return None
        assert self._positions is not None
        ready = self._positions.reached(offset, list(self._pending.values()))
        if not ready:
            return None
        out: list[RawChange] = []
        for w in ready:
            out += self.window_close(w.id) or ()
        return out

    def close_idle(self, offset: dict[str, Any], wait: float = IDLE_WAIT_S) -> list[RawChange] | None:
        """Position watermarks, right after ``offset`` closed a window: wait up to ``wait`` seconds for the next
        window a reader finishes and close it if ``offset`` contains its high watermark too (nothing was
        logged since). None when no window became ready, or the server logged something new.

        Waiting holds the stream back, so after a window that found the server busy there is no wait for
        a while (``BUSY_S``, growing while the server stays busy; only windows ready already are looked
        at): the stream closes them then.
        """
        now = time.monotonic()
        deadline = now + (wait if now >= self._busy_until else 0.0)
        with self._cond:
            while not any(w.high is not None for w in self._pending.values()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed or self.paused or \
                        not (self._pending or any(not s.reading_done for s in self.scans)):
                    return None
                self._cond.wait(remaining)
        rows = self.advance_checkpoint(offset)
        if rows is None:
            self._busy_until = time.monotonic() + self._busy_s
            self._busy_s = min(MAX_BUSY_S, 2 * self._busy_s)
        else:
            self._busy_s = BUSY_S
        return rows

    def poll(self) -> None:
        """Handle what reader threads reported: failed chunks, tables given up; warn about missing watermarks."""
        if self._failures:
            with self._cond:
                failures, self._failures = self._failures, []
            for scan, window, error in failures:
                if window is not None:
                    with self._cond:
                        if self._pending.pop(window.id, None) is not None:
                            scan.inflight -= 1  # its high watermark will never come
                        if self._open.get(scan.table.id) is window:
                            del self._open[scan.table.id]
                        self._cond.notify_all()
                if scan.failures >= MAX_FAILURES and scan in self.scans:
                    self.log.error("incremental snapshot of %s failed %d times, giving up the table: %s",
                                   scan.name, scan.failures, error)
                    with self._cond:
                        self.scans.remove(scan)
                        scan.stopped = True
                    self._table_completed(scan, "SQL_EXCEPTION")
                    if not self.scans:
                        self._finish(completed=False)
                    else:
                        self._skip_unreadable()
                    self._rebuild_state()
        if self._pending and self._positions is not None:
            now = time.monotonic()
            for w in list(self._pending.values()):
                if w.high is not None and now - w.created > WATERMARK_WARNING_S and w.id not in self._warned:
                    self._warned.add(w.id)
                    self.log.warning(
                        "incremental snapshot window %s has waited %.0fs for the change stream to reach its high "
                        "watermark %s: the stream is behind the server, or reports no position", w.id,
                        now - w.created, w.high)
        elif self._pending:
            now = time.monotonic()
            for w in list(self._pending.values()):
                if not w.opened and now - w.created > WATERMARK_WARNING_S and w.id not in self._warned:
                    self._warned.add(w.id)
                    self.log.warning(
                        "the low watermark of incremental snapshot window %s has not reached the change stream "
                        "after %.0fs: is the signal table captured by the stream (in the publication)?",
                        w.id, now - w.created)

    def close(self) -> None:
        """Stop the reader threads."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for t in self._workers:
            t.join(10)
        self._workers = []

    # -- helpers -----------------------------------------------------------------------------

    def _names(self) -> str:
        """The tables left, as notifications name them."""
        return ",".join(map(self._label, self.scans))

    def _label(self, scan: TableScan) -> str:
        """A table as notifications name it (SQL Server: ``<db>.<schema>.<table>``, Debezium's identifier())."""
        return collection_name(self.notifier, scan.table.id)

    def _skip_unreadable(self) -> None:
        """Complete the tables at the head of the queue that cannot be read (UNKNOWN_SCHEMA, NO_PRIMARY_KEY): as
        Debezium 2.7.4's readChunk, each when its turn comes, after the tables named before it."""
        while self.scans and self.scans[0].skip:
            with self._cond:
                scan = self.scans.pop(0)
            self._table_completed(scan, scan.skip or "SKIPPED")
        if not self.scans:
            self._finish(completed=True)

    def _scan_done(self, scan: TableScan) -> None:
        """``scan``'s last window closed: the table is completed, and the snapshot if it was the last."""
        with self._cond:
            self.scans.remove(scan)
        self._table_completed(scan, "SUCCEEDED" if scan.max_key is not None else "EMPTY")
        self._skip_unreadable()

    def _table_completed(self, scan: TableScan, status: str) -> None:
        self.log.info("incremental snapshot of %s: %s, %d rows", scan.name, status, scan.rows)
        if self.metrics is not None:
            self.metrics.table_completed(scan.name)
        # Exactly the keys of Debezium 2.7.4's IncrementalSnapshotNotificationService.notifyTableScanCompleted.
        self.notifier.notify(INCREMENTAL_SNAPSHOT, "TABLE_SCAN_COMPLETED", {
            "data_collections": ",".join(map(self._label, [scan, *self.scans])),
            "scanned_collection": self._label(scan), "total_rows_scanned": scan.rows, "status": status}, self.id)

    def _finish(self, completed: bool) -> None:
        if completed:
            self.notifier.notify(INCREMENTAL_SNAPSHOT, "COMPLETED", {}, self.id)
            self.log.info("incremental snapshot %s completed (%d chunks)", self.id, self.chunks)
        if self.metrics is not None:
            self.metrics.snapshot_ended(completed)
            self.metrics.set_paused(False)
        self.paused = False
        self.id = None

    def _rebuild_state(self) -> None:
        self._scanned = {s.table.id: s.key for s in self.scans}
        if not self.scans:
            self.state = None
            self._recent.clear()
            self._recent_order.clear()
            self._recent_pos.clear()
            return
        self.state = {"id": self.id, "paused": self.paused, "chunks": self.chunks,
                      "tables": [s.to_state() for s in self.scans]}

    # -- reader threads ----------------------------------------------------------------------

    def _start_workers(self) -> None:
        self._workers = [t for t in self._workers if t.is_alive()]
        while len(self._workers) < self.threads:
            t = threading.Thread(target=self._work, name=f"cdc-incremental-{len(self._workers)}", daemon=True)
            self._workers.append(t)
            t.start()

    def _next_scan(self) -> TableScan | None:
        with self._cond:
            while not self._closed:
                if not self.paused:
                    for scan in self.scans:
                        if not (scan.assigned or scan.reading_done or scan.stopped or scan.skip
                                or scan.failures >= MAX_FAILURES):
                            scan.assigned = True
                            return scan
                self._cond.wait(0.5)
        return None

    def _work(self) -> None:
        reader: ChunkReader | None = None
        try:
            while True:
                scan = self._next_scan()
                if scan is None:
                    return
                try:
                    if reader is None:
                        reader = self.source.reader()
                    self._read_table(reader, scan)
                except Exception as e:  # noqa: BLE001 - reported to the connector thread
                    scan.failures += 1
                    self.log.warning("incremental snapshot of %s: chunk failed (attempt %d of %d): %s",
                                     scan.name, scan.failures, MAX_FAILURES, e)
                    with self._cond:
                        self._failures.append((scan, scan.extra.pop("window", None), e))
                    if reader is not None:
                        try:
                            reader.close()
                        except Exception:  # noqa: BLE001
                            pass
                        reader = None
                    with self._cond:
                        self._cond.wait(min(5.0, 0.2 * 2 ** scan.failures))
                finally:
                    with self._cond:
                        scan.assigned = False
                        self._cond.notify_all()
        finally:
            if reader is not None:
                reader.close()

    def _read_table(self, reader: ChunkReader, scan: TableScan) -> None:
        """Read the table's chunks, one window each, until its last chunk or a stop."""
        while True:
            with self._cond:
                while (self.paused or scan.inflight >= MAX_INFLIGHT) and not (self._closed or scan.stopped):
                    self._cond.wait(0.5)
                if self._closed or scan.stopped or scan.failures >= MAX_FAILURES:
                    return
            if not scan.max_known:
                scan.max_key = reader.max_key(scan.table, scan.key, scan.condition)
                scan.max_known = True
            # A random UUID per chunk, as Debezium's AbstractIncrementalSnapshotContext.startNewChunk: the watermark
            # rows' ids are then "<uuid>-open" / "<uuid>-close" on the signal table's topic as in Debezium's.
            window = Window(str(uuid.uuid4()), scan, from_key=scan.cursor)
            with self._cond:
                self._pending[window.id] = window
                scan.inflight += 1
            scan.extra["window"] = window
            if self._positions is not None:
                window.low = reader.current_position()
            else:
                reader.insert_watermark(f"{window.id}-open", OPEN, _metadata("openWindowTimestamp"))
            if scan.max_key is None:
                chunk = ChunkRows()
            else:
                chunk = reader.read_chunk(scan.table, scan.key, scan.cursor, scan.max_key, self.chunk_size, scan.condition)
            window.rows = chunk.rows
            window.invisible = chunk.invisible
            window.last_key = chunk.last_key if chunk.rows else scan.cursor
            window.done = len(chunk.rows) < self.chunk_size or chunk.last_key == scan.max_key
            if chunk.schema_changed:  # Debezium's revertChunk: this window closes empty, the next rereads the chunk
                self.log.info("incremental snapshot of %s: the table's schema changed; chunk after %s read again",
                              scan.name, format_key(scan.cursor))
                window.rows, window.last_key, window.done = [], scan.cursor, False
            window.first_key = chunk.first_key
            if self._positions is not None:
                if chunk.low is not None:
                    window.low = chunk.low
                high = reader.current_position()
                with self._cond:
                    window.high = high  # last: the connector thread may close the window from now on
                    self._cond.notify_all()
            elif self.strategy == "insert_delete":
                reader.delete_watermark(f"{window.id}-open")
            else:
                reader.insert_watermark(f"{window.id}-close", CLOSE, _metadata("closeWindowTimestamp"))
            scan.extra.pop("window", None)
            scan.cursor = window.last_key
            if window.done:
                scan.reading_done = True
                return


def _transaction_id(change: RawChange) -> Any:
    """A log event's transaction, when the source names none otherwise."""
    return change.transaction_id


def _metadata(name: str) -> str:
    """The ``data`` of a watermark row, as Debezium writes it."""
    return orjson.dumps({name: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).decode()


def _first(key: Any) -> str:
    """A key as Debezium 2.7.4's notifyInProgress prints it: ``Objects.toString(key[0], "<null>")``, the first value."""
    return "<null>" if not key or key[0] is None else str(key[0])
