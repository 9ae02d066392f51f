"""The engine's hook into the change stream: signals in, watermarks seen, READs out, state in every offset.

``SignalController.wrap`` sits between a connector's ``stream()`` and the EventBuilder. Per batch it
polls the signal channels, delivers queued notifications, and (only when something needs it)
walks the batch: rows of the signal table are taken out (they are watermarks or signals; they
stay in the stream as events only if that table is captured, or the connector declares
``signal_table_captured`` as Debezium's table filter does), log events inside an open window
are shown to the incremental snapshot, a closing window's surviving READs are put in at the high
watermark, and every offset gets the incremental snapshot's progress. With position watermarks
(``read.only=true``) every log event and checkpoint is shown to the incremental snapshot instead,
which opens and closes windows from the positions they report. When nothing is running and no
signal table is configured, a batch passes through untouched.

A blocking snapshot runs right after the signal, or, for a connector declaring ``pauses_at_round_end``
(SQL Server, Db2), at the next ``RoundEnd`` its stream yields: Debezium's SqlServerChangeEventSourceCoordinator
checks ``context.isPaused()`` only after a whole round of streaming iterations (every database's poll
window), so the changes after the signal in that round reach it before the snapshot's records; Db2's
Db2StreamingChangeEventSource checks it after each window (its round is one window).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any


from cdc_core.config import Config
from cdc_core.errors import RetriableError
from cdc_core.events import Checkpoint, ChangeRecord, PartitionBatch, RawChange, RoundEnd
from cdc_core.filters import TableFilter
from cdc_core.incremental.blocking import BLOCKING_KEY, BlockingRequest, run_blocking
from cdc_core.incremental.coordinator import CLOSE, IDLE_WAIT_S, OPEN, IncrementalSnapshot
from cdc_core.incremental.spi import IncrementalSnapshotSource, incremental_source_for
from cdc_core.incremental.state import STATE_KEY
from cdc_core.notifications.service import Listener, NotificationService
from cdc_core.notifications.spi import SIGNAL
from cdc_core.relational import Table
from cdc_core.signals.actions import ACTIONS, signal_data
from cdc_core.signals.channels import InProcessSignalChannel
from cdc_core.signals.conditions import Node
from cdc_core.signals.config import SIGNAL_CHANNELS, SIGNAL_DATA_COLLECTION, WATERMARKING
from cdc_core.signals.names import SignalDataError, parse_quoted_name
from cdc_core.signals.spi import SignalRecord

Batch = list[RawChange | Checkpoint | ChangeRecord]
_NOT_SIGNAL, _SIGNAL_CAPTURED, _SIGNAL_HIDDEN = 0, 1, 2


class SignalController:
    """Runs signals, notifications, and incremental and blocking snapshots for one connector attempt."""

    def __init__(self, config: Config, connector: Any, plugins: Any, log: Any, *, metrics: Any = None,
                 connector_name: str = "", partition: dict[str, Any] | None = None,
                 listeners: list[Listener] | None = None, in_process: InProcessSignalChannel | None = None,
                 stopping: Callable[[], bool] = lambda: False, with_catalog: bool = False):
        self.config = config
        self.connector = connector
        self.log = log
        self.metrics = metrics
        self.stopping = stopping
        self.notifier = NotificationService(config, plugins, log, connector_name, listeners, partition, with_catalog)
        attach = getattr(connector, "attach_notifier", None)
        if callable(attach):  # the connector's own notifications (cdc_core.notifications.initial)
            attach(self.notifier)
        enabled = config.get(SIGNAL_CHANNELS) or []
        self.source_enabled = "source" in enabled
        self.channels = [plugins.get("signal channel", n)(config, log) for n in enabled if n != "source"]
        if in_process is not None:
            self.channels.append(in_process)
        self.signal_table = _signal_table_parts(config.get(SIGNAL_DATA_COLLECTION))
        self.strategy = config.get(WATERMARKING)
        self.filter = TableFilter(config)
        #: A connector whose table filter includes the signal table whatever the lists say (Debezium's
        #: RelationalTableFilters adds it; cdc's SQL Server connector follows it) declares
        #: ``signal_table_captured = True``: its rows then stay in the stream as events on the table's topic.
        self.signal_captured = bool(getattr(connector, "signal_table_captured", False))
        self.incremental: IncrementalSnapshot | None = None
        self._source: IncrementalSnapshotSource | None = None
        self._kinds: dict[int, tuple[Table, int, tuple[int, int, int] | None]] = {}
        self._blocking: BlockingRequest | None = None
        self._last_offset: dict[str, Any] | None = None
        #: The stream pauses for a blocking snapshot at the end of its poll round (a ``RoundEnd``), not at the
        #: signal (see the module's docstring); checked per batch, never per change.
        self.round_pause = bool(getattr(connector, "pauses_at_round_end", False))
        #: (Round pause, several partitions) the last offset of the signal partition's batches: where its stream
        #: stands at a round's end, the position a blocking snapshot pauses at (and resumes streaming from).
        self._signal_offset: dict[str, Any] | None = None
        self._read_channels: list[Any] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, offset: dict[str, Any] | None) -> None:
        """Continue what the committed offset records: an incremental snapshot, an unfinished blocking one."""
        self._last_offset = self._signal_offset = offset
        if not offset or not (offset.get(STATE_KEY) or offset.get(BLOCKING_KEY)):
            return
        source = self.capability()
        if source is None:
            self.log.warning("the offsets record an ad hoc snapshot, but this connector cannot run one; it is dropped")
            return
        try:
            if offset.get(STATE_KEY):
                self.incremental_snapshot().restore(offset[STATE_KEY])
            if offset.get(BLOCKING_KEY):
                self._blocking = BlockingRequest.from_offset(offset, source.captured_tables(), self.log)
                self._last_offset = self._blocking.paused_at if self._blocking else offset
                self._signal_offset = self._last_offset
        except Exception as e:  # noqa: BLE001 - the database is unreachable: the engine retries the attempt
            raise RetriableError(f"cannot resume the ad hoc snapshot recorded in the offsets: {e}") from e

    def close(self) -> None:
        """Stop reader threads, close channels and connections."""
        if self.incremental is not None:
            self.incremental.close()
        for channel in self.channels:
            try:
                channel.close()
            except Exception:  # noqa: BLE001
                pass
        # What was notified last (a failed snapshot's SQL_EXCEPTION and ABORTED) still reaches the listeners and the
        # channels that deliver elsewhere, as Debezium's notify is immediate; no record can follow the stream's end.
        self.notifier.drain()
        self.notifier.close()
        if self._source is not None:
            self._source.close()

    # -- the stream --------------------------------------------------------------------------

    def wrap(self, stream: Iterator[Batch]) -> Iterator[Batch]:
        """The connector's batches with signals handled, READs put in and offsets carrying snapshot progress.

        With a connector of several partitions (its batches are ``PartitionBatch``), every batch made
        here keeps the partition of the batch it came from (what a blocking snapshot resumed at start
        makes: the partition ``start`` got its offset from, ``signal_partition()`` or the first), so the
        engine stores its offsets under the right one.
        """
        partitions = getattr(self.connector, "partitions", None)
        signal_partition = getattr(self.connector, "signal_partition", None)
        part = (signal_partition() if callable(signal_partition) else partitions()[0]) if callable(partitions) \
            else None
        if self._blocking is not None:
            yield from _tagged(self._run_blocking(), part)
        signal_part = part
        round_pause = self.round_pause
        for batch in stream:
            if round_pause and batch.__class__ is RoundEnd:
                # A round's end: a blocking snapshot requested during it runs now (at the end of a round that
                # polled the signal partition, when tasks poll their databases in rounds of their own).
                if self._blocking is not None and (signal_part is None or batch.partitions is None
                                                   or signal_part in batch.partitions):
                    yield from _tagged(self._pause_at_round_end(signal_part is not None), signal_part)
                continue
            part = getattr(batch, "partition", None)
            if part is None:
                yield from self._process(batch)
            else:
                before = self._last_offset
                yield from _tagged(self._process(batch), part)
                if round_pause and self._last_offset is not before and part == signal_part:
                    self._signal_offset = self._last_offset

    def _process(self, batch: Batch) -> Iterator[Batch]:
        out: Batch = list(self.notifier.drain())
        records = self._poll_channels()
        for record in records:
            self._dispatch(record)
            if self._blocking is not None and not self.round_pause:
                self._commit_channels()
                yield out
                out = []
                yield from self._run_blocking()
        if records:
            self._commit_channels()
        inc = self.incremental
        if records and inc is not None and inc.state is not None and inc.positional and self._last_offset:
            # A snapshot just started: on an idle server its windows close at the stream's current position
            # (rather than at the next heartbeat).
            position = {k: v for k, v in self._last_offset.items() if k != STATE_KEY}
            out = yield from self._idle_windows(inc, position, out, True)
        if inc is not None:
            inc.poll()
        if self.signal_table is None and (inc is None or inc.state is None):
            if batch:
                for item in reversed(batch):
                    if item.offset is not None:
                        self._last_offset = item.offset
                        break
            if out:
                out += batch
                yield out
            else:
                yield batch
            return
        append = out.append
        last_table, kind, fields = None, _NOT_SIGNAL, None
        state = inc.state if inc is not None else None
        positional = state is not None and inc.positional  # type: ignore[union-attr]
        for item in batch:
            cls = item.__class__
            if positional and cls is RawChange:
                # Windows this transaction is past the high watermark of close before it.
                reads = inc.advance(item)  # type: ignore[union-attr]
                if reads is not None:
                    out += reads
                    state = inc.state  # type: ignore[union-attr]
                    positional = state is not None
            if cls is RawChange:
                table = item.table
                if table is not last_table:
                    kind, fields = self._kind(table)
                    last_table = table
                if kind:
                    self._signal_row(item, kind, fields, out)
                    inc = self.incremental
                    state = inc.state if inc is not None else None
                    if self._blocking is not None and not self.round_pause:
                        yield out
                        out = []
                        append = out.append
                        yield from self._run_blocking()
                    continue
                if state is not None:
                    inc.observe(item)  # type: ignore[union-attr]
                if state is not None:
                    item = item._replace(offset={**item.offset, STATE_KEY: state})
                self._last_offset = item.offset
                append(item)
            elif cls is Checkpoint:
                position = item.offset
                if state is not None:
                    item = item._replace(offset={**position, STATE_KEY: state})
                self._last_offset = item.offset
                append(item)
                if positional:
                    # Windows whose high watermark this position contains close after it (after a transaction's
                    # END), and on an idle server the next ones too: at an idle position (no commit), wait for
                    # the reader's next windows; at a commit, only those ready already.
                    reads = inc.advance_checkpoint(position)  # type: ignore[union-attr]
                    if reads is not None:
                        out += reads
                        idle = item.transaction_end is None and item.ts_ms is None
                        out = yield from self._idle_windows(inc, position, out, idle)  # type: ignore[arg-type]
                        append = out.append
                        state = inc.state  # type: ignore[union-attr]
                        positional = state is not None
            else:
                if item.offset is not None:
                    if state is not None:
                        item.offset = {**item.offset, STATE_KEY: state}
                    self._last_offset = item.offset
                append(item)
        out += self.notifier.drain()
        yield out

    def _idle_windows(self, inc: IncrementalSnapshot, offset: dict[str, Any], out: Batch,
                      wait: bool) -> Generator[Batch, None, Batch]:
        """Position watermarks at ``offset``, the stream's latest position: close the windows whose high watermark
        it contains while nothing new is logged, each followed by a checkpoint with the progress (a crash
        resumes after it); each window is handed on at once, so the next chunk is read meanwhile. With
        ``wait`` the reader's next windows are waited for (``close_idle``), else only those ready already
        are looked at. Returns the batch to go on with."""
        while True:
            out += self.notifier.drain()
            progress = inc.state
            out.append(Checkpoint(offset if progress is None else {**offset, STATE_KEY: progress}))
            if self.stopping():
                return out
            more = inc.close_idle(offset, wait=IDLE_WAIT_S if wait else 0.0)
            if more is None:
                return out
            yield out
            out = more

    def _kind(self, table: Table) -> tuple[int, tuple[int, int, int] | None]:
        """Whether ``table`` is the signal table (captured or not), and the positions of its id/type/data."""
        found = self._kinds.get(id(table))
        if found is not None and found[0] is table:
            return found[1], found[2]
        kind, fields = _NOT_SIGNAL, None
        if self.signal_table is not None and _table_parts(table)[-len(self.signal_table):] == self.signal_table:
            kind = _SIGNAL_CAPTURED if self.signal_captured or self.filter.includes(table.id) else _SIGNAL_HIDDEN
            names = [c.name for c in table.columns]
            if all(n in names for n in ("id", "type", "data")):
                fields = (names.index("id"), names.index("type"), names.index("data"))
            elif len(names) >= 3:
                fields = (0, 1, 2)  # Debezium reads the first three columns, whatever their names
        self._kinds[id(table)] = (table, kind, fields)
        return kind, fields

    def _signal_row(self, item: RawChange, table_kind: int, fields: tuple[int, int, int] | None, out: Batch) -> None:
        """A row of the signal table: a watermark or a signal; it stays an event only if the table is captured."""
        inc = self.incremental
        row = item.after if item.op == "c" else item.before if item.op == "d" else None
        blocking_before = self._blocking
        if fields is not None and row is not None:
            row_id, kind, data = (_text(row[i]) or "" for i in fields)
            if item.op == "c" and kind == OPEN:
                if inc is not None:
                    inc.window_open(row_id.removesuffix("-open"))
            elif item.op == "c" and kind == CLOSE:
                if inc is not None:
                    out += inc.window_close(row_id.removesuffix("-close"), item) or ()
            elif item.op == "d" and row_id and row_id.endswith("-open"):
                if inc is not None and self.strategy == "insert_delete":
                    out += inc.window_close(row_id.removesuffix("-open"), item) or ()
            elif item.op == "c" and kind:
                if self.source_enabled:
                    self._dispatch(SignalRecord(row_id, kind, data, "source"))
                else:
                    self.log.info("signal %s (%s) in the signal table ignored: the source channel is not in "
                                  "signal.enabled.channels", row_id, kind)
        # The row's own offset carries the state after the signal, so a committed signal is never lost
        # (and a blocking snapshot it started resumes after it, not before it).
        inc = self.incremental
        state = inc.state if inc is not None else None
        offset = item.offset if state is None else {**item.offset, STATE_KEY: state}
        self._last_offset = offset
        if self._blocking is not None and self._blocking is not blocking_before:
            self._blocking.paused_at = offset
        if table_kind == _SIGNAL_CAPTURED:
            out.append(item._replace(offset=offset))
        else:
            out.append(Checkpoint(offset))

    def _poll_channels(self) -> list[SignalRecord]:
        out: list[SignalRecord] = []
        for channel in self.channels:
            try:
                records = channel.read()
            except Exception as e:  # noqa: BLE001 - a broken channel must not stop the stream
                self.log.warning("signal channel %r failed: %s", getattr(channel, "name", channel), e)
                continue
            if records:
                out += records
                self._read_channels.append(channel)
        return out

    def _commit_channels(self) -> None:
        """Tell the channels whose signals were dispatched (a file channel records its position)."""
        for channel in self._read_channels:
            try:
                channel.commit()
            except Exception as e:  # noqa: BLE001
                self.log.warning("signal channel %r could not record its position: %s", channel.name, e)
        self._read_channels.clear()

    # -- actions -----------------------------------------------------------------------------

    def _dispatch(self, record: SignalRecord) -> None:
        """Run one signal; a refused one is logged and notified (aggregate ``Signal``, type ``REJECTED``)."""
        self.log.info("signal %s: %s (channel %s)", record.id, record.type, record.channel)
        try:
            action = ACTIONS.get(record.type)
            if action is None:
                raise SignalDataError(f"unknown signal type {record.type!r}; known: {', '.join(sorted(ACTIONS))}")
            action(self, record, signal_data(record))
        except SignalDataError as e:
            self._refuse(record, str(e))
        except Exception as e:  # noqa: BLE001 - e.g. the catalog could not be read: the stream goes on
            self.log.exception("signal %s (%s) failed", record.id, record.type)
            self._refuse(record, f"{type(e).__name__}: {e}")

    def _refuse(self, record: SignalRecord, reason: str) -> None:
        self.log.warning("signal %s (%s) refused: %s", record.id, record.type, reason)
        self.notifier.notify(SIGNAL, "REJECTED", {"signal_id": record.id, "signal_type": record.type,
                                                   "channel": record.channel, "reason": reason}, record.id)

    def request_blocking(self, signal_id: str, tables: list[tuple[Table, str | None, Node | None]]) -> None:
        """Run a blocking snapshot of ``tables`` (table, filter text, filter) right after the current signal (with
        ``round_pause``: at the end of the current poll round)."""
        self._blocking = BlockingRequest(signal_id, tables, self._last_offset)

    def capability(self) -> IncrementalSnapshotSource | None:
        """The connector's ad hoc snapshot capability (looked up once), or None."""
        if self._source is None:
            self._source = incremental_source_for(self.connector, self.config, self.log)
        return self._source

    def incremental_snapshot(self) -> IncrementalSnapshot:
        """The incremental snapshot runner (created on first use)."""
        if self.incremental is None:
            source = self.capability()
            assert source is not None
            self.incremental = IncrementalSnapshot(source, self.config, self.notifier,
                                                   self.metrics.snapshot if self.metrics is not None else None, self.log)
        return self.incremental

    def _pause_at_round_end(self, several: bool) -> Iterator[Batch]:
        """The requested blocking snapshot, paused where the (signal partition's) stream stands at the round's end:
        Debezium's runs on the stream's offset context as the round left it, and streaming resumes from there."""
        paused = self._signal_offset if several else self._last_offset
        if self._blocking is not None and paused is not None:
            self._blocking.paused_at = paused
        yield from self._run_blocking()

    def _run_blocking(self) -> Iterator[Batch]:
        request, self._blocking = self._blocking, None
        if request is None:
            return
        source = self.capability()
        assert source is not None
        metrics = self.metrics.snapshot if self.metrics is not None else None
        signal = self.config.get(SIGNAL_DATA_COLLECTION)
        for batch in run_blocking(source, request, self.notifier, metrics, self.log, self.stopping,
                                  ".".join(_signal_table_parts(signal)) if signal else None):
            notes = self.notifier.drain()
            yield [*notes, *batch] if notes else batch
        notes = self.notifier.drain()
        if notes:
            yield notes


def _tagged(batches: Iterator[Batch], part: dict[str, Any] | None) -> Iterator[Batch]:
    """``batches``, each a ``PartitionBatch`` of ``part`` unless it names one (unchanged when ``part`` is None)."""
    if part is None:
        yield from batches
        return
    for batch in batches:
        yield batch if getattr(batch, "partition", None) is not None else PartitionBatch(batch, part)


def _signal_table_parts(name: str | None) -> list[str] | None:
    """``signal.data.collection`` as name parts (quoted form allowed)."""
    if not name:
        return None
    quoted = parse_quoted_name(name)
    return quoted if quoted is not None else name.split(".")


def _table_parts(table: Table) -> list[str]:
    tid = table.id
    return [p for p in (tid.catalog, tid.schema, tid.table) if p is not None]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
