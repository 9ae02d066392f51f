"""The driver side of the stream: a connector running in a thread, its events buffered by position.

Events get consecutive positions; a *cut* is a position after which the connector has an offset
(the last record of a delete/tombstone group, a commit checkpoint): batches end only at cuts, so
a restart from a batch's end offset never splits such a group. Nothing is acknowledged to the
connector here except what the stream reader passes to ``acknowledge`` after Spark's commit.

After a snapshot whose chunks were read at positions of their own, the connector's events go
through its handoff filter (``cdc_core.spi.chunks.HandoffFilter``) until it says the handoff is
over; the filter's state at each cut (``handoff_at``) goes into the stream's offsets, so a restart
there filters the same way.
"""

from __future__ import annotations

import bisect
import logging
import operator
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from cdc_core.config import common
from cdc_core.envelope import EventBuilder
from cdc_core.errors import RetriableError
from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.spi.chunks import handoff_filter, snapshot_chunks_for
from cdc_core.spi.connector import ConnectorContext
from cdc_core.plugins import registry
from cdc_core.transforms.chain import build_chain
from cdc_spark.framing import Framer
from cdc_spark.options import SourceOptions
from cdc_spark.rows import EventRow
from cdc_spark.runtime import tune_gc

log = logging.getLogger("cdc.spark")
_POSITION = EventRow._fields.index("position")
_position = operator.itemgetter(_POSITION)


class FeedError(RuntimeError):
    """The connector behind the stream failed; the message says why."""


class ConnectorFeed:
    """Runs the connector from ``offset`` and buffers its events, numbered after ``position``."""

    def __init__(self, options: SourceOptions, position: int, offset: dict[str, Any] | None,
                 handoff: dict[str, Any] | None = None):
        self.options = options
        self.base = position
        self.start_offset = offset
        self.rows: list[EventRow] = []
        self.cuts: list[tuple[int, dict[str, Any]]] = [(position, offset)] if offset is not None else [(position, {})]
        self.ended = False
        self.error: BaseException | None = None
        self.polls = 0
        self.last_change_at = time.monotonic()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._connector: Any = None
        self._pending_ack: dict[str, Any] | None = None
        self._topic: str | None = None
        #: ``transforms=``: applied to each batch as the engine applies them (a dropped record leaves its offset).
        self._chain = build_chain(options.config, registry()) if options is not None else None
        #: The JsonConverter frames the buffered keys and values refer to.
        self.framer = Framer()
        self._reached: Callable[[dict[str, Any]], bool] | None = None
        #: The cut a stream that must stop at a log position ends at (see ``stop_at``), once known.
        self.stop_cut: tuple[int, dict[str, Any]] | None = None
        self._handoff: Any = None
        #: ``(position, state)``: the handoff filter's state from each position on (None: over).
        self.handoff_log: list[tuple[int, dict[str, Any] | None]] = [(position, handoff)]
        if handoff is not None:
            cls = snapshot_chunks_for(options.connector_class)
            self._handoff = handoff_filter(cls, options.config, handoff) if cls is not None else None
        self._thread = threading.Thread(target=self._run, name="cdc-spark-feed", daemon=True)

    # -- control -------------------------------------------------------------------------------

    def start(self) -> ConnectorFeed:
        """Start the connector thread."""
        tune_gc()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the connector and wait for the thread."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
            connector = self._connector
        if connector is not None:
            connector.stop()
        self._thread.join(timeout=30)

    def stop_at(self, reached: Callable[[dict[str, Any]], bool]) -> None:
        """End the stream at the first cut whose offset ``reached`` a log position (LogPosition semantics).

        That cut is the stop if it closes no events; otherwise (its events were committed after
        the position) the cut before it is.
        """
        with self._cond:
            self._reached = reached
            self.stop_cut = None
            previous = None
            for cut in self.cuts:
                if self._check_stop(previous, cut):
                    break
                previous = cut
            self._cond.notify_all()

    def _check_stop(self, previous: tuple[int, dict[str, Any]] | None, cut: tuple[int, dict[str, Any]]) -> bool:
        """Record ``cut`` (or ``previous``) as the stop if ``cut`` reached the position; under the lock."""
        if self._reached is None or self.stop_cut is not None or not self._reached(cut[1]):
            return False
        self.stop_cut = cut if previous is None or previous[0] == cut[0] else previous
        return True

    def _cut(self, position: int, offset: dict[str, Any]) -> None:
        """Append a cut; under the lock."""
        previous = self.cuts[-1]
        self.cuts.append((position, offset))
        if self._reached is not None and self.stop_cut is None:
            self._check_stop(previous, (position, offset))

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Spark committed everything up to ``offset``: let the connector release it."""
        with self._cond:
            connector = self._connector
            self._pending_ack = offset
        if connector is not None:
            connector.acknowledge(offset)

    def trim(self, position: int) -> None:
        """Forget events at or before ``position`` (Spark committed them)."""
        with self._cond:
            i = bisect.bisect_right(self.rows, position, key=_position)
            del self.rows[:i]
            j = bisect.bisect_right(self.cuts, position, key=lambda c: c[0])
            if j > 1:
                del self.cuts[: j - 1]
            self._cond.notify_all()

    # -- reading -------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise the connector's failure, if any."""
        if self.error is not None:
            raise FeedError(f"the {self.options.config.get(common.CONNECTOR_CLASS)} connector failed: {self.error}") from self.error

    @property
    def last_cut(self) -> tuple[int, dict[str, Any]]:
        """The newest cut: ``(position, offset)``."""
        with self._cond:
            return self.cuts[-1]

    def cut_within(self, start: int, max_events: int | None) -> tuple[int, dict[str, Any]]:
        """The furthest cut at most ``max_events`` past ``start`` (the first one past it if none fits),
        never past the stop cut."""
        with self._cond:
            cut = self._cut_within(start, max_events)
            stop = self.stop_cut
            return stop if stop is not None and cut[0] >= stop[0] else cut

    def _cut_within(self, start: int, max_events: int | None) -> tuple[int, dict[str, Any]]:
        if max_events is None:
            return self.cuts[-1]
        limit = start + max_events
        i = bisect.bisect_right(self.cuts, limit, key=lambda c: c[0])
        if i > 0 and self.cuts[i - 1][0] > start:
            return self.cuts[i - 1]
        j = bisect.bisect_right(self.cuts, start, key=lambda c: c[0])
        return self.cuts[j] if j < len(self.cuts) else self.cuts[-1]

    def wait(self, predicate, timeout: float) -> bool:
        """Wait until ``predicate()`` holds (re-checked on every change), the feed ends, or timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate() and not self.ended and self.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
            return predicate()

    def caught_up(self, quiet_seconds: float) -> bool:
        """True once the connector has polled without any change for ``quiet_seconds``."""
        return self.polls > 0 and time.monotonic() - self.last_change_at >= quiet_seconds

    def frames(self) -> list[bytes]:
        """The JsonConverter frames buffered rows refer to (``cdc_spark.framing``)."""
        with self._cond:
            return list(self.framer.frames)

    def rows_between(self, start: int, end: int) -> list[EventRow]:
        """The buffered events with ``start < position <= end``."""
        with self._cond:
            i = bisect.bisect_right(self.rows, start, key=_position)
            j = bisect.bisect_right(self.rows, end, key=_position)
            return self.rows[i:j]

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        opts = self.options
        cls = opts.connector_class
        config = opts.config
        name = config.get(common.NAME) or config.get(common.TOPIC_PREFIX)
        delay = config.get(common.ERRORS_RETRY_DELAY_INITIAL_MS) / 1000.0
        max_delay = config.get(common.ERRORS_RETRY_DELAY_MAX_MS) / 1000.0
        retries, max_retries = 0, config.get(common.ERRORS_MAX_RETRIES)
        try:
            while not self._stop.is_set():
                ctx = ConnectorContext(log=connector_logger(f"cdc.{cls.name}", cls.name, name))
                connector = cls(config, ctx)
                builder = EventBuilder(config, cls.source_schema, connector.partition(),
                                       catalog_in_data_collection=getattr(cls, "catalog_in_data_collection", False))
                with self._cond:
                    self._connector = connector
                    offset = self.cuts[-1][1] or self.start_offset
                    ack = self._pending_ack
                if hasattr(builder, "restore"):  # transaction numbering continues from the offset
                    builder.restore(offset or None)
                try:
                    connector.start(offset or None)
                    if ack is not None:
                        connector.acknowledge(ack)
                    for raw in connector.stream():
                        retries = 0
                        if self._stop.is_set():
                            break
                        self._add(builder, raw)
                    if not self._stop.is_set():
                        with self._cond:
                            self.ended = True
                            self._cond.notify_all()
                    return
                except RetriableError as e:
                    retries += 1
                    if 0 <= max_retries < retries:
                        raise
                    log.warning("%s; retrying in %.1fs", e, delay)
                    self._stop.wait(delay)
                    delay = min(delay * 2, max_delay)
                finally:
                    with self._cond:
                        self._connector = None
                    connector.close()
        except BaseException as e:  # reported to Spark by the next call of the stream reader
            log.error("connector failed: %s", e)
            with self._cond:
                self.error = e
                self._cond.notify_all()

    def handoff_at(self, position: int) -> dict[str, Any] | None:
        """The handoff state a stream restarted at the cut at ``position`` needs (None: no filtering)."""
        with self._cond:
            i = bisect.bisect_right(self.handoff_log, position, key=lambda e: e[0])
            return self.handoff_log[max(0, i - 1)][1]

    def _add(self, builder: EventBuilder, raw: list) -> None:
        """Buffer one connector batch (through the handoff filter while there is one)."""
        handoff = self._handoff
        if handoff is None:
            self._add_batch(builder, raw)
            return
        version = handoff.version
        segment: list = []
        for item in raw:  # one by one: a state change must land exactly at its cut
            segment += handoff.filter([item])
            if handoff.version != version:
                version = handoff.version
                self._add_batch(builder, segment)
                segment = []
                state = handoff.state()
                with self._cond:
                    position = self.cuts[-1][0] if not self.rows else max(self.rows[-1][_POSITION], self.cuts[-1][0])
                    self.handoff_log.append((position, state))
                if state is None:
                    self._handoff = None
                    log.info("snapshot handoff over: the stream has passed every chunk's read position")
        self._add_batch(builder, segment)

    def _add_batch(self, builder: EventBuilder, raw: list) -> None:
        table = self.options.table
        if table is not None:
            raw = [r for r in raw if r.__class__ is Checkpoint or (r.__class__ is RawChange and r.table.id.identifier == table)]
        with self._cond:
            self.polls += 1
            if any(r.__class__ is not Checkpoint for r in raw):
                self.last_change_at = time.monotonic()
            self._cond.notify_all()
        if not raw:
            return
        if table is not None and self._topic is None:
            first = next((r for r in raw if r.__class__ is RawChange), None)
            if first is not None:
                self._topic = builder.table_events(first.table).topic
        built = builder.build(raw)
        if self._chain is not None:
            built = self._chain.apply(built)
        if table is not None:  # one table's stream: no heartbeats or transaction records; their offsets stay
            built = [r if r.__class__ is Checkpoint or r.topic == self._topic else Checkpoint(r.offset)
                     for r in built if r.__class__ is Checkpoint or r.topic == self._topic or r.offset is not None]
        options, framer = self.options, self.framer
        key_on, value_on = options.key_schemas, options.value_schemas
        key_replace, value_replace = options.key_replace_null_with_default, options.value_replace_null_with_default
        split = framer.split
        serialized = [(*split(r.key_schema, r.key, key_on, key_replace),
                       *split(r.value_schema, r.value, value_on, value_replace))
                      for r in built if r.__class__ is ChangeRecord]
        with self._cond:
            while (self.rows and self.rows[-1][_POSITION] - self.rows[0][_POSITION] >= self.options.max_buffered_events
                   and not self._stop.is_set()):
                self._cond.wait(0.5)
            position = self.cuts[-1][0] if not self.rows else max(self.rows[-1][_POSITION], self.cuts[-1][0])
            k = 0
            pending: list[tuple] = []
            for item in built:
                if item.__class__ is Checkpoint:
                    if pending:  # records without an offset of their own are delivered with this one
                        self._flush(pending, item.offset)
                        pending = []
                    self._cut(position, item.offset)
                    continue
                key_frame, key, value_frame, value = serialized[k]
                k += 1
                position += 1
                v = item.value
                pending.append((item.topic, key, value, v.get("op") if v else None,
                                v.get("ts_ms") if v else None, position, key_frame, value_frame))
                if item.offset is not None:
                    self._flush(pending, item.offset)
                    pending = []
                    self._cut(position, item.offset)
            if pending:  # cannot happen with EventBuilder's groups; keep them rather than lose them
                self._flush(pending, None)
            self._cond.notify_all()

    def _flush(self, pending: list[tuple], offset: dict[str, Any] | None) -> None:
        """Buffer the rows of one offset group; under the lock."""
        text = orjson.dumps(offset).decode() if offset else None
        tail = (text, None)
        self.rows.extend([p + tail for p in pending])  # EventRow's fields, as plain tuples (cheaper to make)
