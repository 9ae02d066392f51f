"""The Structured Streaming reader: snapshot chunks as one batch, then the connector's log by position.

Spark's offsets are ``{"position", "offset", "phase"[, "snapshot"]}``: ``offset`` is the
connector's own offset (what the engine would store), ``position`` numbers the events so a batch
is exactly the events in ``(start.position, end.position]``. Spark's checkpoint is the offset
store: a restarted query starts the connector from the checkpointed offset, and a batch Spark
replays is re-read from the connector (or the still-buffered rows). The connector is told to
release a position (``acknowledge``) only in ``commit``, after Spark has committed the batch.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from cdc_core.config import common
from cdc_core.schema import Schema
from cdc_core.spi.chunks import SnapshotPlan, snapshot_chunks_for
from cdc_spark.feed import ConnectorFeed, FeedError
from cdc_spark.options import parse_options
from cdc_spark.partitions import ChunkPartition, RowsPartition, read_chunk_rows, rows_partitions
from cdc_spark.rows import RowEncoder

log = logging.getLogger("cdc.spark")

INITIAL = "initial"
STREAM = "stream"
#: How long ``partitions`` waits for the connector to re-read a batch being replayed.
REPLAY_TIMEOUT_S = 600.0
#: AvailableNow: the connector has caught up once it read no change for this long (seconds).
QUIET_S = 3.0
#: How long one AvailableNow ``latestOffset`` waits for the connector to catch up.
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
        self._feed: ConnectorFeed | None = None
        self._chunks: Any = None
        self._plan: SnapshotPlan | None = None
        self._plan_end: dict[str, Any] | None = None
        self._resume: dict[str, dict[str, Any] | None] = {}
        self._ack: dict[str, Any] | None = None
        self._available_now = False
        self._target: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the reader pickled: only what ``read`` needs.
        return {"raw_options": self.raw_options, "options": self.options, "schema": self.schema,
                "value_schema": self.value_schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._feed = self._chunks = self._plan = self._plan_end = self._ack = self._target = None
        self._resume = {}
        self._available_now = False

    # -- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """A new query starts before the snapshot."""
        return {"position": 0, "offset": None, "phase": INITIAL}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxEventsPerTrigger`` as a row limit."""
        n = self.options.max_events_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Stop at what the connector can read now: once it has caught up with its log (no change for a while)."""
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch: the whole snapshot as one batch, then events up to the read limit."""
        if start.get("phase") == INITIAL and self._capability() is not None and self._chunks_instance().needs_snapshot(None):
            if self._plan is None or self._plan_end is None or self._plan_end.get("_start") != _key(start):
                self._open_plan()
                assert self._plan is not None
                end = {"position": int(start["position"]) + 1, "offset": self._plan.resume_offset,
                       "phase": STREAM, "snapshot": self._plan.snapshot_id}
                self._plan_end = {**end, "_start": _key(start)}
            return {k: v for k, v in self._plan_end.items() if k != "_start"}
        self._close_plan()
        feed = self._feed_from(start)
        position = int(start["position"])
        if self._available_now and self._target is None:
            quiet = max(QUIET_S, 5 * self.options.config.get(common.POLL_INTERVAL_MS) / 1000.0)
            feed.wait(lambda: feed.caught_up(quiet) or feed.last_cut[0] > position, CATCH_UP_TIMEOUT_S)
            feed.check()
            if feed.caught_up(quiet) or feed.ended:
                self._target = feed.last_cut[0]
        feed.check()
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        cut_position, cut_offset = feed.cut_within(position, max_rows)
        if self._target is not None and cut_position > self._target:
            cut_position, cut_offset = feed.cut_within(position, self._target - position) if self._target > position else (position, start.get("offset"))
        if cut_position < position or (cut_position == position and _key(cut_offset or {}) == _key(start.get("offset") or {})):
            return start
        return {"position": cut_position, "offset": cut_offset or None, "phase": STREAM}

    def reportLatestOffset(self) -> dict | None:
        """The newest position the connector has read."""
        if self._feed is None:
            return None
        position, offset = self._feed.last_cut
        return {"position": position, "offset": offset or None, "phase": STREAM}

    # -- batches -------------------------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """Snapshot chunks for the snapshot batch; otherwise the buffered (or re-read) events of the range."""
        if start.get("phase") == INITIAL and "snapshot" in end:
            if self._plan is None or self._plan.snapshot_id != end["snapshot"]:
                log.warning("replaying snapshot batch %s: its snapshot is gone, taking a new one", end["snapshot"])
                self._open_plan()
                assert self._plan is not None
                self._resume[_key(end)] = self._plan.resume_offset
            return [ChunkPartition(c, int(end["position"])) for c in self._plan.chunks]
        position, last = int(start["position"]), int(end["position"])
        if last <= position:
            return []
        feed = self._feed_from(start)
        if not feed.wait(lambda: feed.last_cut[0] >= last, REPLAY_TIMEOUT_S):
            feed.check()
            raise FeedError(f"the connector did not deliver events up to position {last} "
                            f"(it stopped at {feed.last_cut[0]}); cannot replay batch {start} -> {end}")
        return rows_partitions(feed.rows_between(position, last))

    def read(self, partition: InputPartition):
        """On an executor: Arrow batches of the partition's rows (reading the chunk first for a snapshot chunk)."""
        encoder = RowEncoder(self.schema, self.value_schema, self.options.value_schemas)
        if isinstance(partition, RowsPartition):
            yield from encoder.batches(partition.rows)
        else:
            assert isinstance(partition, ChunkPartition)
            for rows in read_chunk_rows(self.options, partition.chunk, partition.position):
                yield encoder.batch(rows)

    def commit(self, end: dict) -> None:
        """Spark committed everything up to ``end``: acknowledge it to the connector and drop its rows."""
        offset = self._resume.get(_key(end), end.get("offset")) if "snapshot" in end else end.get("offset")
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
        self._close_plan()

    # -- helpers -------------------------------------------------------------------------------

    def _capability(self) -> type | None:
        return snapshot_chunks_for(self.options.connector_class)

    def _chunks_instance(self) -> Any:
        if self._chunks is None:
            cls = self._capability()
            assert cls is not None
            self._chunks = cls(self.options.config, None)
        return self._chunks

    def _open_plan(self) -> None:
        self._close_plan()
        tables = [self.options.table] if self.options.table else None
        self._plan = self._chunks_instance().open(for_streaming=True, tables=tables,
                                                  chunk_rows=self.options.snapshot_chunk_rows)

    def _close_plan(self) -> None:
        if self._plan is not None:
            self._chunks_instance().close()
            self._plan = None

    def _feed_from(self, start: dict) -> ConnectorFeed:
        """The running feed if it covers ``start``; otherwise a new one from ``start``."""
        position = int(start["position"])
        feed = self._feed
        if feed is not None and feed.cuts[0][0] <= position:
            return feed
        if feed is not None:
            feed.stop()
        offset = self._resume.get(_key(start), start.get("offset")) if "snapshot" in start else start.get("offset")
        feed = self._feed = ConnectorFeed(self.options, position, offset)
        if self._ack is not None:
            feed.acknowledge(self._ack)
        return feed.start()
