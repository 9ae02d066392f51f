"""The Structured Streaming reader: snapshot chunks in batches, then the connector's log by position.

Spark's offsets are ``{"position", "offset", "phase"[, "snapshot", "chunk"]}``: ``offset`` is the
connector's own offset (what the engine would store), ``position`` numbers the events so a batch
is exactly the events in ``(start.position, end.position]``. The snapshot comes first, in batches
of whole chunks (``cdc_spark.snapshot_batches``). Spark's checkpoint is the offset store: a
restarted query starts the connector from the checkpointed offset, and a batch Spark replays is
re-read from the connector (or the still-buffered rows). The connector is told to release a
position (``acknowledge``) only in ``commit``, after Spark has committed the batch.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from cdc_core.config import common
from cdc_core.schema import Schema
from cdc_core.spi.position import log_position_for
from cdc_spark.encoding import RowEncoder
from cdc_spark.feed import ConnectorFeed, FeedError
from cdc_spark.options import parse_options
from cdc_spark.partitions import ChunkPartition, RowsPartition, read_chunk, rows_partitions
from cdc_spark.runtime import tune_gc
from cdc_spark.snapshot_batches import INITIAL, STREAM, SnapshotBatches

log = logging.getLogger("cdc.spark")

#: How long ``partitions`` waits for the connector to re-read a batch being replayed.
REPLAY_TIMEOUT_S = 600.0
#: AvailableNow without a LogPosition capability: caught up once no change was read for this long (seconds).
QUIET_S = 3.0
#: How long one AvailableNow ``latestOffset`` waits for the connector to make progress.
CATCH_UP_TIMEOUT_S = 600.0


def _key(offset: dict[str, Any]) -> str:
    return json.dumps(offset, sort_keys=True)


class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Runs the connector on the driver; executors only turn the rows (or snapshot chunks) into Arrow."""

    def __init__(self, options: dict[str, str], schema: StructType, value_schema: Schema | None):
        self.raw_options = dict(options)
        self.options = parse_options(self.raw_options)
        self.schema = schema
        self.value_schema = value_schema
        self._reset()

    def _reset(self) -> None:
        self._feed: ConnectorFeed | None = None
        self._snapshot = SnapshotBatches(self.options)
        self._ack: dict[str, Any] | None = None
        self._available_now = False
        self._target: int | None = None
        self._position: Any = None
        self._stop_position: dict[str, Any] | None = None
        self._last_advance = time.monotonic()
        self._encoder: RowEncoder | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the reader pickled: only what ``read`` needs.
        return {"raw_options": self.raw_options, "options": self.options, "schema": self.schema,
                "value_schema": self.value_schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # -- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """A new query starts before the snapshot."""
        return {"position": 0, "offset": None, "phase": INITIAL}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxEventsPerTrigger`` as a row limit."""
        n = self.options.max_events_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Stop at the connector's log position now (its LogPosition), else once it has caught up (quiet for a while)."""
        self._available_now = True
        cls = log_position_for(self.options.connector_class)
        if cls is not None:
            self._position = cls(self.options.config)
            self._stop_position = self._position.current_position()
            log.info("Trigger.AvailableNow: reading up to log position %s", self._stop_position)
            if self._feed is not None:
                self._apply_stop(self._feed)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch: snapshot chunks, then events, within the read limit."""
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self._snapshot.pending(start):
            return self._snapshot.end(start, max_rows)
        self._snapshot.close()
        feed = self._feed_from(start)
        position = int(start["position"])
        if self._available_now:
            self._wait_for_progress(feed, position)
        feed.check()
        cut_position, cut_offset = feed.cut_within(position, max_rows)
        if self._target is not None and cut_position > self._target:
            cut_position, cut_offset = feed.cut_within(position, self._target - position) if self._target > position else (position, start.get("offset"))
        if cut_position < position or (cut_position == position and _key(cut_offset or {}) == _key(self._snapshot.resume_offset(start) or {})):
            return start
        if cut_position == position and not self._available_now:
            # Only the offset moved (a commit or idle checkpoint): an empty batch now and then is
            # enough for the source to release its log.
            if time.monotonic() - self._last_advance < self.options.empty_batch_interval_s:
                return start
        self._last_advance = time.monotonic()
        end = {"position": cut_position, "offset": cut_offset or None, "phase": STREAM}
        handoff = feed.handoff_at(cut_position)
        return end if handoff is None else {**end, "handoff": handoff}

    def _wait_for_progress(self, feed: ConnectorFeed, position: int) -> None:
        """AvailableNow: wait until the feed has events past ``position`` or knows where to stop."""
        if self._stop_position is not None:
            if not feed.wait(lambda: feed.stop_cut is not None or feed.last_cut[0] > position, CATCH_UP_TIMEOUT_S):
                feed.check()
                if feed.ended:
                    return
                raise FeedError(f"Trigger.AvailableNow: the connector made no progress towards log position "
                                f"{self._stop_position} for {CATCH_UP_TIMEOUT_S:.0f}s")
            return
        if self._target is None:
            quiet = max(QUIET_S, 5 * self.options.config.get(common.POLL_INTERVAL_MS) / 1000.0)
            feed.wait(lambda: feed.caught_up(quiet) or feed.last_cut[0] > position, CATCH_UP_TIMEOUT_S)
            feed.check()
            if feed.caught_up(quiet) or feed.ended:
                self._target = feed.last_cut[0]

    def reportLatestOffset(self) -> dict | None:
        """The newest position the connector has read."""
        if self._feed is None:
            return None
        position, offset = self._feed.last_cut
        return {"position": position, "offset": offset or None, "phase": STREAM}

    # -- batches -------------------------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """Snapshot chunks for a snapshot batch; otherwise the buffered (or re-read) events of the range."""
        if self._snapshot.is_snapshot_batch(start, end):
            return self._snapshot.partitions(start, end)
        position, last = int(start["position"]), int(end["position"])
        if last <= position:
            return []
        feed = self._feed_from(start)
        if not feed.wait(lambda: feed.last_cut[0] >= last, REPLAY_TIMEOUT_S):
            feed.check()
            raise FeedError(f"the connector did not deliver events up to position {last} "
                            f"(it stopped at {feed.last_cut[0]}); cannot replay batch {start} -> {end}")
        rows, frames = feed.rows_between(position, last), feed.frames()
        return rows_partitions(rows, self._driver_encoder(), frames)

    def read(self, partition: InputPartition):
        """On an executor: Arrow batches of the partition's rows (reading the chunk first for a snapshot chunk)."""
        tune_gc()
        encoder = RowEncoder(self.schema, self.value_schema, self.options.key_schemas, self.options.value_schemas)
        if isinstance(partition, RowsPartition):
            yield from encoder.from_ipc(partition.data, partition.frames)
        else:
            assert isinstance(partition, ChunkPartition)
            yield from read_chunk(self.options, partition.chunk, partition.position, encoder, partition.report)

    def commit(self, end: dict) -> None:
        """Spark committed everything up to ``end``: acknowledge it to the connector and drop its rows."""
        offset = self._snapshot.resume_offset(end)
        if end.get("phase") == STREAM and offset:
            self._ack = offset
            if self._feed is not None:
                self._feed.acknowledge(offset)
        if self._feed is not None:
            self._feed.trim(int(end["position"]))

    def stop(self) -> None:
        """Stop the connector and release a held snapshot."""
        if self._feed is not None:
            self._feed.stop()
            self._feed = None
        self._snapshot.shutdown()

    # -- helpers -------------------------------------------------------------------------------

    def _driver_encoder(self) -> RowEncoder:
        if self._encoder is None:
            self._encoder = RowEncoder(self.schema, self.value_schema, self.options.key_schemas, self.options.value_schemas)
        return self._encoder

    def _feed_from(self, start: dict) -> ConnectorFeed:
        """The running feed if it covers ``start``; otherwise a new one from ``start``."""
        position = int(start["position"])
        feed = self._feed
        if feed is not None and feed.cuts[0][0] <= position:
            return feed
        if feed is not None:
            feed.stop()
        offset = self._snapshot.resume_offset(start)
        feed = self._feed = ConnectorFeed(self.options, position, offset, self._snapshot.handoff(start))
        if self._ack is not None:
            feed.acknowledge(self._ack)
        self._apply_stop(feed)
        return feed.start()

    def _apply_stop(self, feed: ConnectorFeed) -> None:
        """AvailableNow with a LogPosition: the feed stops at the position taken when the query started."""
        if self._position is not None and self._stop_position is not None:
            position, target = self._position, self._stop_position
            feed.stop_at(lambda offset: position.reached(offset, target))
