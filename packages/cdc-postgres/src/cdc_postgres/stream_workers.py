"""Long runs of row changes decoded, built and serialized in forked worker processes (``streaming.worker.processes``).

A transaction of many row changes is a run of Insert, Update and Delete messages. With worker
processes the streaming reader keeps receiving, and hands each chunk of such a run over as the
messages' bytes joined into one (not decoded rows): a worker decodes them exactly as ``StreamReader._rows`` does
here (it is a fork of this process: same tables, converters, transforms and serializer), builds,
transforms and serializes the records and writes them as sink lines into a memory file
(``cdc_core.record_block``). The chunk's last captured change is decoded here and follows the
worker's records in the batch (``SerializedRecords.after``), so the batch's offset covers every
record in it. A stop resumes after exactly the last record written; the sink's batches may end
inside a chunk (``max.batch.size``), whose records carry no offset of their own, so after a crash the
part of a chunk written before its offset was acknowledged comes again (at least once, Debezium's
own guarantee; hence not with ``exactly.once.support=required``). Batches leave in log order:
one waiting for a worker holds back everything after it, and at most ``WINDOW`` chunks per worker
are outstanding.

Used only where nothing else needs to see the decoded changes: no transaction metadata (the
per-table order of a transaction's events is counted in one place), no signal table and no
read-only incremental snapshots (their windows are matched against the stream). When a relation
changes, the workers are forked again before the next hand-over, so they decode with the new columns.
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from operator import attrgetter
from struct import Struct
from typing import Any

from cdc_core.worker_pool import WorkerBatches, serialize_changes, streaming_unusable
from cdc_postgres import config as pgc

#: Fewer row changes than this in a run are decoded here (forking and handing over would cost more).
MIN_RUN = 512
#: Row changes per chunk handed to a worker.
CHUNK = 2048
#: Chunks outstanding per worker before the reader waits for the oldest.
WINDOW = 2
_ROW_KINDS = frozenset(b"IUD")
_RELATION_OID = Struct(">I").unpack_from  # every row change message: its kind, then the relation's OID
_data_start = attrgetter("data_start")
_payload = attrgetter("payload")


def unusable(config: Any, pipeline: Any, reader: Any) -> str | None:
    """None if ``streaming.worker.processes`` can be used with this configuration and reader, else why not."""
    if config.get(pgc.READ_ONLY):
        return "read.only=true: incremental snapshot windows are matched against the stream"
    if not getattr(reader, "_fast_insert", False):
        return "this connector decodes its row changes its own way"
    return streaming_unusable(config, pipeline)


class _Message:
    """A row change message as a worker gets it: ``StreamReader._rows`` reads these two attributes."""

    __slots__ = ("data_start", "payload")

    def __init__(self, data_start: int, payload: bytes):
        self.data_start = data_start
        self.payload = payload


class RunDecoder:
    """In a worker: a chunk of row change messages to what the sink writes, as this process's reader and engine would."""

    def __init__(self, reader: Any, pipeline: Any):
        self.reader = reader
        self.pipeline = pipeline

    def run(self, task: tuple) -> tuple:
        """``(fields, LSNs, payload lengths, the payloads joined)`` to ``(packed records or None, (counts by op,
        last event), (filtered, skipped, changes))``."""
        fields, lsns, lengths, joined = task
        ends = list(accumulate(lengths))
        payloads = list(map(joined.__getitem__, map(slice, [0, *ends[:-1]], ends)))
        reader = self.reader
        (reader._commit_lsn, resume_commit, resume_proc, reader._ts_us, reader._xid, reader._tx_id,
         reader._last_commit_lsn, reader.xmin) = fields
        reader.resume.commit, reader.resume.proc = resume_commit, resume_proc
        reader.filtered = reader.skipped = reader._changes_in_tx = 0
        raw: list = []
        reader._rows(list(map(_Message, lsns, payloads)), 0, raw.append)
        packed, streamed = serialize_changes(self.pipeline, raw)
        return packed, streamed, (reader.filtered, reader.skipped, reader._changes_in_tx)


class StreamWorkers:
    """The reader's side: runs held and handed over in chunks, and the batches waiting for them (``WorkerBatches``)."""

    def __init__(self, reader: Any, pipeline: Any, processes: int):
        self.reader = reader
        self.batches = WorkerBatches(lambda: RunDecoder(reader, pipeline), processes, "cdc-stream-worker",
                                     self._counted, WINDOW)
        #: Row change messages of the current run not handed over yet (a run continues across reads).
        self._held: list = []

    @property
    def holding(self) -> bool:
        """Whether row changes of the current run are held, waiting for more of it to arrive."""
        return bool(self._held)

    def take_run(self, received: list, index: int, out: list) -> tuple[int, list]:
        """The run of row changes from ``received[index]`` held with what came before it; once it is long enough,
        whole chunks go to the workers, and when it ends inside ``received``, all of it (``flush``). Returns the
        index after the run and the batch to go on filling."""
        end, count = index, len(received)
        while end < count and received[end].payload[0] in _ROW_KINDS:
            end += 1
        self._held += received[index:end]
        if end < count:
            return end, self.flush(out)
        if len(self._held) >= 2 * CHUNK:
            out = self._hand_over(out, final=False)
        return end, out

    def flush(self, out: list) -> list:
        """Every held row change handed over (or, too few, decoded here into ``out``); the batch to go on filling."""
        return self._hand_over(out, final=True) if self._held else out

    def _hand_over(self, out: list, final: bool) -> list:
        msgs, self._held = self._held, []
        reader = self.reader
        if len(msgs) < MIN_RUN or not self.batches.ready_for(reader.relations_version):
            if final:
                reader._rows(msgs, 0, out.append)
            else:
                self._held = msgs
            return out
        tables, resume = reader.tables, reader.resume
        proc = resume.proc if reader._commit_lsn == resume.commit else None
        index, end = 0, len(msgs)
        while index < end:
            left = end - index
            if not final and left < 2 * CHUNK:
                self._held = msgs[index:]
                break
            stop = end if left < 2 * CHUNK else index + CHUNK
            last = stop - 1  # the chunk's last change made here: the last one captured and not delivered before
            while last >= index and not _carries(msgs[last], tables, proc):
                last -= 1
            if last - index < MIN_RUN:
                index = reader._rows(msgs, index, out.append, stop)
                continue
            chunk = msgs[index:last]
            fields = (reader._commit_lsn, resume.commit, resume.proc, reader._ts_us, reader._xid, reader._tx_id,
                      reader._last_commit_lsn, reader.xmin)
            payloads = list(map(_payload, chunk))
            after: list = []
            reader._rows(msgs, last, after.append, stop)  # its change; those after it only count as filtered
            self.batches.submit((fields, array("q", map(_data_start, chunk)), array("q", map(len, payloads)),
                                 b"".join(payloads)), out, after)
            out = []
            index = stop
        return out

    def _counted(self, extra: tuple) -> None:
        filtered, skipped, made = extra
        reader = self.reader
        reader.filtered += filtered
        reader.skipped += skipped
        reader._changes_in_tx += made

    def close(self) -> None:
        """End the workers; held batches and changes are dropped (nothing after the last acknowledged one was confirmed)."""
        self._held = []
        self.batches.close()


def _carries(message: Any, tables: dict, proc: int | None) -> bool:
    """Whether this row change message becomes a change here: a captured table's, after the resume point."""
    payload = message.payload
    if len(payload) < 5 or _RELATION_OID(payload, 1)[0] not in tables:
        return False
    return proc is None or message.data_start > proc
