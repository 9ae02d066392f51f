"""The snapshot part of a stream: batches of whole chunks of one held snapshot, within the read limit.

A batch from ``start`` to ``end`` reads chunks ``[start.chunk, end.chunk)`` of the snapshot the
offsets name (``phase: snapshot``); the batch that completes the snapshot ends in ``phase: stream``
at the snapshot's resume offset. A snapshot lives only as long as the driver process holding it:
after a restart, a batch replayed from the checkpoint reads a new snapshot from its first chunk up
to the batch's end (its ``snapshot_id`` differs, so its rows replace what a table had), and the
next batches continue in that new snapshot; a restart after a committed snapshot batch starts a
new snapshot from its first chunk.

Chunks read at positions of their own (``SnapshotPlan.reports_reads``, e.g. MySQL and MariaDB):
executors report each read to the driver (``cdc_spark.reports``); the batch reading the last
chunks ends in ``phase: snapshot`` at ``chunk == len(chunks)``, and the next (empty) batch ends in
``phase: stream`` with the capability's ``handoff`` state, computed from every report once all
reads are done. The stream carries that state in its offsets until the connector's handoff filter
says it is over (``cdc_spark.feed``). A restart before that handoff batch takes a new snapshot, as
for any snapshot batch whose snapshot is gone.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.datasource import InputPartition

from cdc_core.spi.chunks import SnapshotPlan, handoff_state, snapshot_chunks_for
from cdc_spark.options import SourceOptions
from cdc_spark.partitions import ChunkPartition
from cdc_spark.reports import ReadReports

log = logging.getLogger("cdc.spark")

INITIAL = "initial"
SNAPSHOT = "snapshot"
STREAM = "stream"


class SnapshotBatches:
    """Plans snapshot batches and holds the snapshot they read (on the driver)."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self._chunks: Any = None
        self._plan: SnapshotPlan | None = None
        #: Snapshot ids in offsets -> the id of the held snapshot that replaced them (replays after a restart).
        self._alias: dict[str, str] = {}
        #: Snapshot ids in offsets -> the resume offset of the snapshot actually read for them.
        self._resume: dict[str, dict[str, Any] | None] = {}
        #: Snapshot ids in offsets -> the plan read again for them (its handoff comes from its own reads).
        self._replaced: dict[str, SnapshotPlan] = {}
        self._reports: ReadReports | None = None

    def pending(self, start: dict) -> bool:
        """True if the batch after ``start`` is a snapshot batch."""
        if start.get("phase") == SNAPSHOT:
            return True
        return (start.get("phase") == INITIAL and snapshot_chunks_for(self.options.connector_class) is not None
                and self._capability().needs_snapshot(None))

    def is_snapshot_batch(self, start: dict, end: dict) -> bool:
        """True if ``start -> end`` reads snapshot chunks."""
        return end.get("phase") == SNAPSHOT or ("snapshot" in end and start.get("phase") in (INITIAL, SNAPSHOT))

    def end(self, start: dict, max_rows: int | None) -> dict:
        """The end of the next snapshot batch: whole chunks, as many as ``max_rows`` allows (at least one)."""
        plan = self._plan_for(start)
        first = self._first_chunk(start, plan)
        count = len(plan.chunks) - first
        if max_rows is not None:
            count = min(count, max(1, max_rows // self.options.snapshot_chunk_rows))
        position = int(start["position"]) + 1
        if plan.reports_reads and first < len(plan.chunks) <= first + count:
            # The last chunks: the handoff needs their reads, so it is the next batch's end.
            return {"position": position, "offset": None, "phase": SNAPSHOT, "snapshot": plan.snapshot_id,
                    "chunk": len(plan.chunks)}
        if first + count >= len(plan.chunks):
            end = {"position": position, "offset": plan.resume_offset, "phase": STREAM, "snapshot": plan.snapshot_id}
            state = self._handoff(plan)
            return end if state is None else {**end, "handoff": state}
        return {"position": position, "offset": None, "phase": SNAPSHOT, "snapshot": plan.snapshot_id,
                "chunk": first + count}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """The chunks the snapshot batch ``start -> end`` reads (from a new snapshot if its own is gone)."""
        wanted = end["snapshot"]
        plan = self._held(wanted)
        if plan is not None:
            first = self._first_chunk(start, plan)
        else:
            log.warning("replaying snapshot batch %s -> %s: its snapshot is gone, taking a new one", start, end)
            plan = self._open()
            self._alias[wanted] = plan.snapshot_id
            self._resume[wanted] = plan.resume_offset
            self._replaced[wanted] = plan
            first = 0
        last = int(end["chunk"]) if end.get("phase") == SNAPSHOT else len(plan.chunks)
        position = int(end["position"])
        report = self._reports.address if plan.reports_reads and self._reports is not None else None
        return [ChunkPartition(c, position, report) for c in plan.chunks[first:last]]

    def resume_offset(self, offset: dict) -> dict[str, Any] | None:
        """The connector offset a stream continues from after ``offset`` (a replaced snapshot's own resume offset)."""
        if "snapshot" in offset and offset.get("phase") == STREAM:
            return self._resume.get(offset["snapshot"], offset.get("offset"))
        return offset.get("offset")

    def handoff(self, offset: dict) -> dict[str, Any] | None:
        """The handoff state a stream from ``offset`` starts with (that of a replaced snapshot's own reads)."""
        if "snapshot" in offset and offset.get("phase") == STREAM and offset["snapshot"] in self._replaced:
            return self._handoff(self._replaced[offset["snapshot"]])
        return offset.get("handoff")

    def close(self) -> None:
        """Release the held snapshot, if any (the reports stay until ``shutdown``)."""
        if self._plan is not None:
            self._capability().close()
            self._plan = None

    def shutdown(self) -> None:
        """Release the snapshot and stop listening for reports."""
        self.close()
        if self._reports is not None:
            self._reports.close()
            self._reports = None

    def _handoff(self, plan: SnapshotPlan) -> dict[str, Any] | None:
        reports = self._reports.reports(plan.snapshot_id) if self._reports is not None else {}
        return handoff_state(self._capability(), plan, reports)

    # -- helpers -------------------------------------------------------------------------------

    def _capability(self) -> Any:
        if self._chunks is None:
            cls = snapshot_chunks_for(self.options.connector_class)
            assert cls is not None
            self._chunks = cls(self.options.config, None)
        return self._chunks

    def _open(self) -> SnapshotPlan:
        self.close()
        tables = [self.options.table] if self.options.table else None
        self._plan = self._capability().open(for_streaming=True, tables=tables,
                                             chunk_rows=self.options.snapshot_chunk_rows)
        if self._plan.reports_reads and self._reports is None:
            self._reports = ReadReports(self.options.chunk_report_host)
        return self._plan

    def _held(self, snapshot_id: str | None) -> SnapshotPlan | None:
        """The held plan that stands for ``snapshot_id`` (itself or its replacement), if any."""
        plan = self._plan
        if plan is None or snapshot_id is None:
            return None
        return plan if plan.snapshot_id == self._alias.get(snapshot_id, snapshot_id) else None

    def _plan_for(self, start: dict) -> SnapshotPlan:
        """The held snapshot ``start`` continues, or a new one (a new query, or one restarted mid-snapshot)."""
        if start.get("phase") == SNAPSHOT:
            plan = self._held(start.get("snapshot"))
            if plan is not None:
                return plan
            log.warning("snapshot %s of the last committed batch is gone (the query restarted): taking a new "
                        "snapshot from its first chunk; its rows replace what was read", start.get("snapshot"))
        elif self._plan is not None:
            return self._plan  # planned by an earlier call for this same first batch
        return self._open()

    def _first_chunk(self, start: dict, plan: SnapshotPlan) -> int:
        """The first chunk of ``plan`` a batch from ``start`` reads (0 unless ``start`` is inside ``plan``)."""
        if start.get("phase") == SNAPSHOT and self._held(start.get("snapshot")) is plan:
            return min(int(start.get("chunk", 0)), len(plan.chunks))
        return 0
