"""Streaming: binlog events into RawChange batches, DDL into the model, history and schema change events.

Offsets follow Debezium's shape: ``file``/``pos`` is where the current transaction starts (the
restart point), ``event`` the rows events of that transaction already handled and ``row`` the
rows handled in the next one; between transactions ``pos`` is the next event and both are 0.
``gtids`` is the GTID set of completed transactions. A restart replays the transaction at
``pos`` and skips what the counters say was acknowledged.

With ``binlog.buffer.size`` above 0 the events pass ``cdc_mysql.lookahead.LookAhead`` first, which
holds each transaction until its end and drops rolled-back ones; at 0 the loop reads the binlog
reader directly, exactly as before.
"""

from __future__ import annotations

import select
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from pymysqlreplication.event import (
    GtidEvent, HeartbeatLogEvent, MariadbAnnotateRowsEvent, MariadbGtidEvent, QueryEvent, RotateEvent,
    RowsQueryLogEvent, XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.errors import ConnectorError
from cdc_core.relational import Table
from cdc_core.relational import TableId as CoreTableId

from cdc_mysql.binlog import BinlogConnectionLost, BinlogStartPosition, CdcBinLogStreamReader
from cdc_mysql.ddl import AppliedDdl, SchemaModel
from cdc_mysql.gtid import gtid_set
from cdc_mysql.lookahead import LookAhead
from cdc_mysql.model import TableDef, TableId
from cdc_mysql.rows import RowDecoder, SchemaMismatch, compile_decoder
from cdc_mysql.source import DEBEZIUM_VERSION
from cdc_mysql.types import TypeModes, column_for

_WRITE, _UPDATE, _DELETE = WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent
_TX_STATEMENTS = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "XA START", "XA END", "XA PREPARE", "XA COMMIT"})


class TableVersions:
    """cdc Table objects per model table version (one object per version, so the core's caches hold)."""

    def __init__(self, modes: TypeModes):
        self.modes = modes
        self._tables: dict[int, tuple[TableDef, Table]] = {}

    def table(self, definition: TableDef) -> Table:
        """The cdc Table of a definition (built once per definition object)."""
        found = self._tables.get(id(definition))
        if found is not None and found[0] is definition:
            return found[1]
        columns = [column_for(c, self.modes) for c in definition.columns]
        table = Table(CoreTableId(definition.id.database, None, definition.id.table), columns,
                      list(definition.key_columns), definition.comment)
        self._tables[id(definition)] = (definition, table)
        return table


class DdlHandler:
    """What the streamer calls for each DDL statement (implemented by the connector)."""

    def ddl(self, statement: str, database: str | None, position: dict[str, Any], source: dict[str, Any],
            offset: dict[str, Any]) -> tuple[AppliedDdl | None, list[ChangeRecord]]:
        """Apply a statement; return what it did and the schema change records to emit."""
        raise NotImplementedError


class BinlogStreamer:
    """Reads a started CdcBinLogStreamReader and yields batches of RawChanges, Checkpoints and ChangeRecords."""

    def __init__(self, reader: CdcBinLogStreamReader, model: SchemaModel, versions: TableVersions, *,
                 connector: str, server: str, gtid_format: str, offset: dict[str, Any],
                 captured: Callable[[TableId], bool], ddl: DdlHandler, include_query: bool,
                 inconsistent_mode: str, max_batch: int, log: Any, heartbeat: bool = False,
                 on_connected: Callable[[], None] | None = None,
                 stop_requested: Callable[[], bool] = lambda: False,
                 gtid_source_filter: Callable[[str], bool] | None = None,
                 reconnect: Callable[[BinlogStartPosition, BaseException], CdcBinLogStreamReader] | None = None,
                 undecodable_mode: str = "fail", metrics: Any = None, buffer_size: int = 0,
                 rewind: Callable[[BinlogStartPosition], CdcBinLogStreamReader] | None = None,
                 on_filtered: Callable[[], None] | None = None):
        self.reader = reader
        #: Called for each rows event of a table that is not captured (``NumberOfEventsFiltered``).
        self.on_filtered = on_filtered
        #: ``binlog.buffer.size``: a new reader at a position, for rereading a large transaction.
        self.rewind = rewind
        #: ``connect.keep.alive``: a new reader at a position after the connection broke (None: raise).
        self.reconnect = reconnect
        #: ``event.deserialization.failure.handling.mode`` for rows events the model cannot decode.
        self.undecodable_mode = undecodable_mode
        #: ``cdc_mysql.metrics.BinlogMetrics`` (skipped events), if any.
        self.metrics = metrics
        self.model = model
        self.versions = versions
        self.connector = connector
        self.server = server
        self.captured = captured
        self.ddl_handler = ddl
        self.include_query = include_query
        self.inconsistent_mode = inconsistent_mode
        self.max_batch = max_batch
        self.log = log
        self.heartbeat = heartbeat
        self.on_connected = on_connected
        self.stop_requested = stop_requested
        #: ``gtid.source.includes``/``excludes``: row events of transactions from other sources are skipped.
        self.gtid_source_filter = gtid_source_filter
        self._tx_ignored = False
        self.stopped = False
        self.file: str = offset["file"]
        self.next_pos: int = int(offset["pos"])
        self.gtids = gtid_set(gtid_format, offset.get("gtids") or "")
        self._gtids_text: str | None = str(self.gtids) or None  # kept in step with ``gtids``
        self._skip_events = int(offset.get("event") or 0)
        self._skip_rows = int(offset.get("row") or 0)
        self._tx_pos: int | None = None
        self._tx_gtid: str | None = None
        self._tx_id: str | None = None
        self._tx_events = 0
        self._thread: int | None = None
        self._query: str | None = None
        self._server_id = 0
        #: The row number of the last captured row read in this binlog file: Debezium's source ``row``,
        #: which only a new binlog file resets, so its DDL events carry it too (BinlogSourceInfo).
        self._last_row = 0
        self._decoders: dict[tuple[int, int], tuple[Any, RowDecoder, Table, TableDef]] = {}
        self._compiled: dict[tuple[Any, ...], tuple[Any, RowDecoder, Table, TableDef]] = {}
        self._skipped_tables: set[TableId] = set()
        #: Counts the decoders added (worker processes decode with those they were forked with).
        self.decoders_version = 0
        self.events_seen = 0
        #: ``streaming.worker.processes``: rows events of large transactions decoded in workers
        #: (``cdc_mysql.stream_workers.RowsWorkers``; None: all here).
        self.workers: Any = None
        #: ``binlog.buffer.size`` > 0: the look-ahead buffer the events pass (None: read directly).
        self.lookahead: LookAhead | None = None
        if buffer_size > 0:
            if rewind is None:
                raise ValueError("binlog.buffer.size needs a way to reopen the binlog (rewind) for large transactions")
            self.lookahead = LookAhead(buffer_size, metrics, log, lambda: self.file, self._rewind)

    # -- offsets --------------------------------------------------------------------------------

    def boundary_offset(self) -> dict[str, Any]:
        """The offset between transactions: the next event, nothing to skip."""
        return {"file": self.file, "pos": self.next_pos, "event": 0, "row": 0, "gtids": self._gtids_text,
                "ts_sec": int(time.time())}

    # -- the loop -------------------------------------------------------------------------------

    def batches(self) -> Iterator[list[Any]]:
        """Yield batches until stopped (a lost connection raises BinlogConnectionLost)."""
        try:
            yield from self._batches()
        finally:
            if self.workers is not None:
                self.workers.close()

    def _hand_on(self, out: list[Any], wait: bool) -> Iterator[list[Any]]:
        """``out`` as the next batch; with worker processes after the batches held before it, handing on those
        that are due (all with ``wait``)."""
        workers = self.workers
        if workers is None or not workers.batches.queued:
            if out:
                yield out
            return
        batches = workers.batches
        batches.enqueue(out)
        while batches.queued and (wait or batches.due()):
            yield batches.pop(True)

    def _batches(self) -> Iterator[list[Any]]:
        out: list[Any] = []
        workers = self.workers
        reader = self.reader
        checksum = None
        connected = self.on_connected
        stop_requested = self.stop_requested
        events = self._events() if self.lookahead is None else self.lookahead.events(self._events())
        for ev in events:
            if connected is not None:
                connected()
                connected = None
            if self.stopped or stop_requested():  # also a stop that came before the connection existed
                break
            cls = ev.__class__
            packet = ev.packet
            if cls is _WRITE or cls is _UPDATE or cls is _DELETE:
                if checksum is None or reader is not self.reader:  # a reconnect brings a new reader
                    reader = self.reader
                    checksum = 4 if reader.use_checksum else 0
                out = self._rows(ev, packet, checksum, out)
                if len(out) >= self.max_batch or workers is not None and workers.batches.queued and \
                        workers.batches.due():  # a large transaction's records handed on as its chunks are done
                    yield from self._hand_on(out, False)
                    out = []
                continue
            log_pos = packet.log_pos
            if cls is XidEvent:
                if workers is not None:
                    out = workers.flush(out)
                self._commit(log_pos, ev.timestamp, out)
                if workers is not None and workers.batches.queued:
                    # Hand on what the workers finished; everything once nothing more is waiting in the binlog.
                    yield from self._hand_on(out, self._idle())
                    out = []
                elif out and (len(out) >= 256 or self._idle()):
                    yield out
                    out = []
                continue
            if workers is not None and (cls is QueryEvent or cls is RotateEvent or cls is HeartbeatLogEvent) and (
                    workers.holding or workers.batches.queued):
                # Before a statement (a COMMIT: the rows held so far handed over), and before a DDL, a new binlog file
                # or an idle heartbeat every batch handed on (what the workers report, e.g. the last row number a
                # DDL event carries, is then known here).
                out = workers.flush(out)
                if cls is not QueryEvent or ev.query.strip().upper() not in _TX_STATEMENTS:
                    yield from self._hand_on(out, True)
                    out = []
            if cls is MariadbGtidEvent or cls is GtidEvent:
                self._tx_pos = log_pos - packet.event_size
                self._tx_gtid = ev.gtid
                self._tx_id = ev.gtid
                self._tx_events = 0
                self._tx_ignored = self.gtid_source_filter is not None and not self.gtid_source_filter(ev.gtid)
                self._query = None
                self._server_id = packet.server_id
            elif cls is QueryEvent:
                self._query_event(ev, packet, out)
                if out and self._idle():
                    yield from self._hand_on(out, True)
                    out = []
            elif cls is MariadbAnnotateRowsEvent:
                if self.include_query:
                    self._query = ev.sql_statement.decode("utf-8", "replace")
            elif cls is RowsQueryLogEvent:
                if self.include_query:
                    self._query = ev.query
            elif cls is RotateEvent:
                self.reader.table_map.clear()  # table ids are numbered again after a server restart (new file)
                self._last_row = 0
                self.file = ev.next_binlog
                self.next_pos = ev.position
                continue
            elif cls is HeartbeatLogEvent:
                # Every idle heartbeat is a checkpoint, as Debezium dispatches every one: read-only incremental
                # snapshots close their windows at it; the core writes a heartbeat record only when one is due.
                if self._tx_pos is None:
                    out.append(Checkpoint(self.boundary_offset()))
                if out:
                    yield out
                    out = []
                continue
            if log_pos:
                self.next_pos = log_pos
        yield from self._hand_on(out, True)

    def _events(self) -> Iterator[Any]:
        """The reader's events; after a lost connection, those of a new reader at the last delivered position."""
        while True:
            try:
                yield from self.reader
                return
            except BinlogConnectionLost as e:
                if self.reconnect is None or self.stopped or self.stop_requested():
                    raise
                start = self._resume_position()
                self.log.info("resuming the binlog at %s, skipping %d handled rows events of its transaction",
                              start, self._skip_events)
                self.reader = self.reconnect(start, e)

    def _rewind(self, start: BinlogStartPosition) -> Iterator[Any]:
        """The events of a new reader at ``start`` (the look-ahead buffer rereads a large transaction)."""
        assert self.rewind is not None
        self.reader = self.rewind(start)
        return self._events()

    def _resume_position(self) -> BinlogStartPosition:
        """Where to reconnect: the open transaction's start (its handled events skipped) or the next event."""
        if self.lookahead is not None:
            self.lookahead.reset()  # held events were not handled: they are read again
        if self._tx_pos is None:
            return BinlogStartPosition(self.file, self.next_pos)
        if self._tx_events > self._skip_events:
            self._skip_events, self._skip_rows = self._tx_events, 0
        start = BinlogStartPosition(self.file, self._tx_pos)
        self._tx_pos = self._tx_gtid = self._tx_id = None
        self._tx_events = 0
        self._tx_ignored = False
        return start

    def _idle(self) -> bool:
        """True if no further event is already waiting (so a partial batch should go now)."""
        conn = self.reader.stream_connection
        sock = getattr(conn, "_sock", None)
        if sock is None:
            return True
        try:
            if select.select([sock], [], [], 0)[0]:
                return False
            timeout = sock.gettimeout()
            sock.setblocking(False)
            try:
                return not conn._rfile.peek(1)
            except (BlockingIOError, OSError):
                return True
            finally:
                sock.settimeout(timeout)
        except (OSError, ValueError):
            return True

    # -- transactions ---------------------------------------------------------------------------

    def _begin(self, pos: int, thread: int | None, server_id: int) -> None:
        if self._tx_pos is None:
            self._tx_pos = pos
            self._tx_gtid = None
            self._tx_id = None
            self._tx_events = 0
            self._query = None
        if self._tx_id is None:
            self._tx_id = f"file={self.file},pos={self._tx_pos}"
        self._thread = thread
        self._server_id = server_id

    def _commit(self, next_pos: int, timestamp: int, out: list[Any]) -> None:
        if self._tx_gtid is not None:
            self.gtids.add(self._tx_gtid)
            self._gtids_text = str(self.gtids) or None
        self.next_pos = next_pos
        tx_id = self._tx_id
        had_events = self._tx_events > 0
        self._tx_pos = self._tx_gtid = self._tx_id = None
        self._tx_events = 0
        self._query = None
        self._skip_events = self._skip_rows = 0
        self._tx_ignored = False
        offset = self.boundary_offset()
        out.append(Checkpoint(offset, tx_id if had_events else None, timestamp * 1000))

    def _query_event(self, ev: QueryEvent, packet: Any, out: list[Any]) -> None:
        statement = ev.query.strip()
        word = statement.upper()
        start = packet.log_pos - packet.event_size
        if word == "BEGIN" or word.startswith("XA START"):
            self._begin(start, ev.slave_proxy_id, packet.server_id)
            return
        if word in ("COMMIT", "ROLLBACK") or word.startswith(("XA COMMIT", "XA END", "XA PREPARE", "XA ROLLBACK")):
            self._commit(packet.log_pos, ev.timestamp, out)
            return
        if word.startswith("SAVEPOINT") or word.startswith("ROLLBACK TO"):
            return
        # A DDL statement: its own transaction. The tables it changes come with new table ids; the
        # reader's parsed TABLE_MAPs are dropped all the same (CdcBinLogStreamReader.freeze_table_maps).
        self.reader.table_map.clear()
        database = ev.schema.decode("utf-8", "replace") if isinstance(ev.schema, bytes) else (ev.schema or None)
        if self._tx_gtid is not None:
            self.gtids.add(self._tx_gtid)
            self._gtids_text = str(self.gtids) or None
        self.next_pos = packet.log_pos
        gtid = self._tx_gtid
        self._tx_pos = self._tx_gtid = self._tx_id = None
        self._tx_events = 0
        self._query = None
        offset = self.boundary_offset()
        source = {
            "version": DEBEZIUM_VERSION, "connector": self.connector, "name": self.server,
            "ts_ms": ev.timestamp * 1000, "snapshot": "false", "db": database or "", "sequence": None,
            "ts_us": ev.timestamp * 1_000_000, "ts_ns": ev.timestamp * 1_000_000_000, "table": None,
            "server_id": packet.server_id, "gtid": gtid, "file": self.file, "pos": start, "row": self._last_row,
            "thread": None, "query": None,
        }
        applied, records = self.ddl_handler.ddl(statement, database or None, offset, source, offset)
        if applied is not None and applied.kind == "truncate":
            for tid in applied.truncated:
                definition = self.model.table(tid)
                if definition is None or not self.captured(tid):
                    continue
                # thread: the last transaction's (BinlogSourceInfo keeps it; a DDL statement sets none)
                src = dict(source, table=tid.table, db=tid.database, thread=self._thread)
                if self.include_query:
                    src["query"] = statement
                out.append(RawChange(self.versions.table(definition), "t", None, None, src, offset))
        out.extend(records)
        if applied is not None and applied.changes:
            touched = {c.id for c in applied.changes} | {c.previous_id for c in applied.changes}
            for key in [k for k, v in self._decoders.items() if v[3].id in touched]:
                del self._decoders[key]
        out.append(Checkpoint(offset))

    # -- rows -----------------------------------------------------------------------------------

    def _rows(self, ev: Any, packet: Any, checksum: int, out: list[Any]) -> list[Any]:
        """A rows event's changes into ``out`` (or held for a worker process); returns the batch to go on filling."""
        table_map = self.reader.table_map.get(ev.table_id)
        if table_map is None:
            return out
        tid = TableId(table_map.schema, table_map.table)
        if self._tx_pos is None:  # rows outside BEGIN (some non-transactional paths)
            self._begin(packet.log_pos - packet.event_size, None, packet.server_id)
        index = self._tx_events
        self._tx_events += 1
        if self._tx_ignored:
            return out
        if not self.captured(tid):
            if self.on_filtered is not None:
                self.on_filtered()
            return out
        if index < self._skip_events:
            return out
        key = (ev.table_id, id(table_map))
        found = self._decoders.get(key)
        if found is None:
            found = self._lookup(ev, table_map, tid)
            if found is None:
                return out
        if ev.columns_present_bitmap != b"\xff" * len(ev.columns_present_bitmap) and \
                int.from_bytes(ev.columns_present_bitmap, "little") != (1 << ev.number_of_columns) - 1:
            raise ConnectorError(
                f"binlog rows event for {tid} at {self.file}:{packet.log_pos - packet.event_size} does not carry "
                "every column: the server runs with binlog_row_image other than FULL. Set binlog_row_image=FULL "
                "(SET GLOBAL binlog_row_image = 'FULL', and in the server configuration)."
            )
        mp = packet.packet
        data = mp._data
        skip = self._skip_rows if index == self._skip_events else 0
        ts = ev.timestamp * 1000
        # One source block and offset per rows event, copied per row (a dict copy is several times
        # cheaper than building the 17 keys again); only ``row`` differs between the rows.
        source = {
            "version": DEBEZIUM_VERSION, "connector": self.connector, "name": self.server, "ts_ms": ts,
            "snapshot": "false", "db": tid.database, "sequence": None, "ts_us": ts * 1000, "ts_ns": ts * 1_000_000,
            "table": tid.table, "server_id": packet.server_id, "gtid": self._tx_gtid, "file": self.file,
            "pos": packet.log_pos - packet.event_size, "row": 0, "thread": self._thread, "query": self._query,
        }
        offset = {"file": self.file, "pos": self._tx_pos, "event": index, "row": 0, "gtids": self._gtids_text,
                  "ts_sec": ev.timestamp, "server_id": packet.server_id}
        cls = ev.__class__
        op = "u" if cls is _UPDATE else "c" if cls is _WRITE else "d"
        event_pos = packet.log_pos - packet.event_size
        workers = self.workers
        if workers is not None:
            return workers.hold((key, op, data[mp._position:len(data) - checksum], skip, source, offset, self._tx_id,
                                 tid, self.file, event_pos), out)
        self._changes(found, op, data, mp._position, len(data) - checksum, skip, source, offset, self._tx_id, tid,
                      self.file, event_pos, out.append)
        return out

    def _changes(self, found: tuple, op: str, data: bytes, start: int, end: int, skip: int, source: dict[str, Any],
                 offset: dict[str, Any], tx_id: str | None, tid: TableId, file: str, event_pos: int,
                 append: Callable[[Any], None]) -> None:
        """The rows of one rows event (``data[start:end]``) as RawChanges, the first ``skip`` left out."""
        _, decode, table, _ = found
        try:
            images = decode(data, start, end)
        except (IndexError, KeyError, ValueError, TypeError, struct.error) as e:
            self._undecodable(tid, f"{file}:{event_pos}", e)
            return
        if op == "u":
            pairs = [(images[k], images[k + 1]) for k in range(0, len(images), 2)]
        elif op == "c":
            pairs = [(None, row) for row in images]
        else:
            pairs = [(row, None) for row in images]
        for r, (before, after) in enumerate(pairs):
            if r < skip:
                continue
            src = source.copy()
            src["row"] = r
            off = offset.copy()
            off["row"] = r + 1
            append(RawChange(table, op, before, after, src, off, tx_id))
        if pairs:
            self._last_row = len(pairs) - 1
        self.events_seen += len(pairs)

    def _undecodable(self, tid: TableId, position: str, error: BaseException) -> None:
        """A rows event the model cannot decode (at ``file:pos``): fail naming its position, or skip it (warn logs it)."""
        message = (f"cannot decode the binlog rows event of {tid} at {position} ({type(error).__name__}: {error}): "
                   "the table's definition in the schema history does not match the binlog (changed outside it?)")
        if self.undecodable_mode == "fail":
            raise ConnectorError(f"{message}. Set event.deserialization.failure.handling.mode=warn or ignore to "
                                 "skip such events, or rebuild the schema history with snapshot.mode=recovery")
        if self.metrics is not None:
            self.metrics.skipped_events += 1
        if self.undecodable_mode == "warn":
            self.log.warning("%s; skipping the event", message)

    def _decoder_for(self, ev: Any, table_map: Any, tid: TableId) -> tuple[Any, RowDecoder, Table, TableDef] | None:
        definition = self.model.table(tid)
        position = f"{self.file}:{ev.packet.log_pos - ev.packet.event_size}"
        try:
            if definition is None:
                raise SchemaMismatch("the table is not in the schema history")
            decode = compile_decoder(table_map.columns, definition.columns)
        except SchemaMismatch as e:
            message = (f"cannot decode the binlog rows of {tid} at {position}: {e}. The schema history does not "
                       "match the binlog (inconsistent.schema.handling.mode=fail); rebuild it with "
                       "snapshot.mode=recovery, or set inconsistent.schema.handling.mode=warn to skip such events")
            if self.inconsistent_mode == "fail":
                raise ConnectorError(message) from None
            if self.inconsistent_mode == "warn" and tid not in self._skipped_tables:
                self.log.warning("%s; skipping events of %s", message.split(" (inconsistent")[0], tid)
            self._skipped_tables.add(tid)
            return None
        return (table_map, decode, self.versions.table(definition), definition)

    def _lookup(self, ev: Any, table_map: Any, tid: TableId) -> tuple[Any, RowDecoder, Table, TableDef] | None:
        """The decoder of a TABLE_MAP: compiled once per table version and column layout."""
        definition = self.model.table(tid)
        signature = (tid, id(definition), tuple(
            (c.type, getattr(c, "max_length", None), getattr(c, "length_size", None), getattr(c, "precision", None),
             getattr(c, "decimals", None), getattr(c, "fsp", None), getattr(c, "bits", None), getattr(c, "size", None))
            for c in table_map.columns))
        found = self._compiled.get(signature)
        if found is None or found[3] is not definition:
            found = self._decoder_for(ev, table_map, tid)
            if found is None:
                return None
            self._compiled[signature] = found
        for key in [k for k in self._decoders if k[0] == ev.table_id]:
            del self._decoders[key]
        self._decoders[(ev.table_id, id(table_map))] = found
        self.decoders_version += 1
        return found
