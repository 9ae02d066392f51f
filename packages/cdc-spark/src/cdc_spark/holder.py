"""A detached process that holds a one-off snapshot while executors read its chunks (batch reads).

Spark plans a batch read in a short-lived Python process, so the snapshot cannot live there:
``hold_snapshot`` starts this module in its own session; it opens the snapshot, prints the plan,
and keeps the snapshot until every chunk was read and no chunk was read again for two minutes
(at most ``snapshotHoldSeconds`` waiting for the first complete read).
The options travel on stdin, never on the command line, so passwords stay out of ``ps``.

A capability that cannot see reads itself (``observes_reads = False``: Db2, whose holder keeps
SHARE locks and whose readers have no NOTIFY) learns them through this process instead: it
listens for reports (``cdc_spark.reports``, at ``chunkReportHost``), each chunk reader reports
once its rows are read, and the snapshot is released as soon as every chunk was read once (its
locks hold writers back, so it is not kept for later actions: those read the tables again as
they are then).
"""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
import tempfile
import time
from typing import Any

from cdc_core.spi.chunks import SnapshotPlan, snapshot_chunks_for
from cdc_spark.options import parse_options
from cdc_spark.reports import ReadReports


#: Seconds without any chunk read after which a fully read snapshot is released.
IDLE_RELEASE_S = 120.0


class SnapshotHoldError(RuntimeError):
    """The snapshot could not be opened; the message says why."""


def hold_snapshot(options: dict[str, str], tables: list[str] | None, chunk_rows: int,
                  hold_seconds: float) -> tuple[SnapshotPlan, dict[str, Any] | None]:
    """Start a holder process; the plan of the snapshot it holds, and where readers report reads (if it must know)."""
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc_spark.holder"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=errors, start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = {"options": options, "tables": tables, "chunk_rows": chunk_rows, "hold": hold_seconds}
    proc.stdin.write(json.dumps(request).encode())
    proc.stdin.close()
    line = proc.stdout.readline().decode().strip()
    proc.stdout.close()
    kind, _, payload = line.partition(" ")
    if kind != "PLAN":
        if not payload:
            proc.wait(10)
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-5:]
            payload = "the snapshot holder exited without a plan: " + " | ".join(tail)
        raise SnapshotHoldError(payload)
    errors.close()
    return pickle.loads(base64.b64decode(payload))


def main() -> None:
    """Open the snapshot, print ``PLAN <base64 pickle>`` (or ``ERROR <message>``), hold it, release it."""
    request = json.loads(sys.stdin.read())
    try:
        options = parse_options(request["options"])
        cls = snapshot_chunks_for(options.connector_class)
        if cls is None:
            raise SnapshotHoldError(f"connector {options.connector_class.name!r} cannot split its snapshot")
        chunks = cls(options.config, None)
        plan = chunks.open(for_streaming=False, tables=request["tables"], chunk_rows=request["chunk_rows"])
    except Exception as e:  # reported to the planner, which raises it
        message = " ".join(str(e).split())
        sys.stdout.write(f"ERROR {message}\n")
        sys.stdout.flush()
        return
    plan = SnapshotPlan(plan.snapshot_id, plan.chunks, plan.resume_offset)  # tables hold converters: not picklable
    reports = None if getattr(cls, "observes_reads", True) else ReadReports(options.chunk_report_host)
    address = None if reports is None else reports.address
    sys.stdout.write("PLAN " + base64.b64encode(pickle.dumps((plan, address))).decode() + "\n")
    sys.stdout.flush()
    sys.stdout.close()
    try:
        if reports is not None:
            wait_reported(reports, plan, float(request["hold"]))
        # Spark re-reads the same partitions for every action on the DataFrame: hold the snapshot
        # until it has been idle for a while after the first complete read.
        elif chunks.wait_read(plan, float(request["hold"])) and plan.chunks:
            while chunks.wait_read(plan, IDLE_RELEASE_S):
                pass
    finally:
        chunks.close()
        if reports is not None:
            reports.close()


def wait_reported(reports: ReadReports, plan: SnapshotPlan, timeout: float) -> bool:
    """Wait until every chunk of ``plan`` was reported read, up to ``timeout`` s; True if all were."""
    wanted = {(c.table, c.index) for c in plan.chunks}
    deadline = time.monotonic() + timeout
    while not wanted <= set(reports.reports(plan.snapshot_id)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


if __name__ == "__main__":
    main()
