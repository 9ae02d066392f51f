"""Rows events of large transactions decoded, built and serialized in forked worker processes (``streaming.worker.processes``).

With worker processes the binlog streamer keeps reading, and holds each captured rows event of the
current transaction as its row bytes with what ``BinlogStreamer._rows`` worked out for it (the
decoder's key, the source block and offset it copies per row, the rows to skip). Once a
transaction's held rows reach ``CHUNK_BYTES``, and at its commit, they go to a worker: a fork of
this process, so it has the same decoders, tables, converters, transforms and serializer; it
decodes them exactly as ``_changes`` does here, builds, transforms and serializes the records and
writes them as sink lines into a memory file (``cdc_core.record_block``). A checkpoint follows the
worker's records in the batch, carrying the offset past its last rows event (``event`` one more,
``row`` 0: what the last row's own offset resumes at), so the batch's offset covers every record in
it: a stop resumes after exactly the last record written. The sink's batches may end inside a chunk
(``max.batch.size``), whose records carry no offset of their own, so after a crash the part of a
chunk written before its offset was acknowledged comes again (at least once, Debezium's own
guarantee; hence not with ``exactly.once.support=required``). Transactions under ``MIN_BYTES`` of row data are decoded here. Batches leave in log order; at a
commit with nothing more waiting in the binlog, everything held is handed on.

Used only where nothing else needs to see the decoded changes: no transaction metadata, no signal
table, no read-only incremental snapshots, no ``binlog.buffer.size`` look-ahead. When a decoder is
added (a new table, a table changed by DDL), the workers are forked again before the next hand-over.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from cdc_core.events import Checkpoint
from cdc_core.worker_pool import WorkerBatches, serialize_changes, streaming_unusable
from cdc_mysql import config as myc

#: A transaction's held row data under this many bytes is decoded here (handing over would cost more).
MIN_BYTES = 4096
#: Row data per chunk handed to a worker.
CHUNK_BYTES = 256 * 1024
#: Chunks outstanding per worker before the streamer waits for the oldest.
WINDOW = 2


def unusable(config: Any, pipeline: Any) -> str | None:
    """None if ``streaming.worker.processes`` can be used with this configuration, else why not."""
    if config.get(myc.READ_ONLY):
        return "read.only=true: incremental snapshot windows are matched against the stream"
    if config.get(myc.BINLOG_BUFFER_SIZE):
        return "binlog.buffer.size > 0: the look-ahead buffer rereads large transactions"
    return streaming_unusable(config, pipeline)


class EventDecoder:
    """In a worker: held rows events to what the sink writes, as this process's streamer and engine would."""

    def __init__(self, streamer: Any, pipeline: Any):
        self.streamer = streamer
        self.pipeline = pipeline

    def run(self, held: list[tuple]) -> tuple:
        """Held rows events to ``(packed records or None, (counts by op, last event), (rows, last row
        number, undecodable))``."""
        streamer = self.streamer
        metrics = streamer.metrics
        undecodable = metrics.skipped_events if metrics is not None else 0
        streamer.events_seen, streamer._last_row = 0, -1
        raw: list = []
        append = raw.append
        decoders, changes = streamer._decoders, streamer._changes
        for key, op, data, skip, source, offset, tx_id, tid, file, event_pos in held:
            changes(decoders[key], op, data, 0, len(data), skip, source, offset, tx_id, tid, file, event_pos, append)
        packed, streamed = serialize_changes(self.pipeline, raw)
        undecodable = (metrics.skipped_events - undecodable) if metrics is not None else 0
        return packed, streamed, (streamer.events_seen, streamer._last_row, undecodable)


class RowsWorkers:
    """The streamer's side: a transaction's rows events held and handed over, the batches waiting for them."""

    def __init__(self, streamer: Any, pipeline: Any, processes: int):
        self.streamer = streamer
        self.batches = WorkerBatches(lambda: EventDecoder(streamer, pipeline), processes, "cdc-binlog-worker",
                                     self._counted, WINDOW)
        self._held: list[tuple] = []
        self._bytes = 0
        #: Hand-overs and decodings here, numbered in log order: a worker's last row number counts only if
        #: nothing after its chunk was decoded here (the DDL events' ``row`` is the last one in log order).
        self._seq = self._decoded_here = 0
        self._submitted: deque[int] = deque()

    @property
    def holding(self) -> bool:
        """Whether rows events of the current transaction are held."""
        return bool(self._held)

    def hold(self, event: tuple, out: list) -> list:
        """Hold one rows event (``BinlogStreamer._rows``'s tuple); a chunk's worth goes to a worker. Returns the
        batch to go on filling."""
        self._held.append(event)
        self._bytes += len(event[2])
        if self._bytes >= CHUNK_BYTES:
            return self._hand_over(out)
        return out

    def flush(self, out: list) -> list:
        """The held rows events handed over (under ``MIN_BYTES``, decoded here into ``out``); the batch to go on filling."""
        if not self._held:
            return out
        if self._bytes < MIN_BYTES:
            return self._decode_here(out)
        return self._hand_over(out)

    def _hand_over(self, out: list) -> list:
        if not self.batches.ready_for(self.streamer.decoders_version):
            return self._decode_here(out)
        held, self._held, self._bytes = self._held, [], 0
        past = {**held[-1][5], "row": 0}
        past["event"] += 1  # past the last event's rows: where its last row's offset resumes too
        self.batches.submit(held, out, [Checkpoint(past)])
        self._seq += 1
        self._submitted.append(self._seq)
        return []

    def _decode_here(self, out: list) -> list:
        held, self._held, self._bytes = self._held, [], 0
        self._seq += 1
        self._decoded_here = self._seq
        streamer = self.streamer
        decoders, append = streamer._decoders, out.append
        for key, op, data, skip, source, offset, tx_id, tid, file, event_pos in held:
            streamer._changes(decoders[key], op, data, 0, len(data), skip, source, offset, tx_id, tid, file,
                              event_pos, append)
        return out

    def _counted(self, extra: tuple) -> None:
        rows, last_row, undecodable = extra
        streamer = self.streamer
        streamer.events_seen += rows
        submitted = self._submitted.popleft()
        if last_row >= 0 and submitted > self._decoded_here:
            streamer._last_row = last_row
        if undecodable and streamer.metrics is not None:
            streamer.metrics.skipped_events += undecodable

    def close(self) -> None:
        """End the workers; held events and batches are dropped (nothing after the last acknowledged one was confirmed)."""
        self._held, self._bytes = [], 0
        self._submitted.clear()
        self.batches.close()
