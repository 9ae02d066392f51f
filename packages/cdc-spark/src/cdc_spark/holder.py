"""A detached process that holds a one-off snapshot while executors read its chunks (batch reads).

Spark plans a batch read in a short-lived Python process, so the snapshot cannot live there:
``hold_snapshot`` starts this module in its own session; it opens the snapshot, prints the plan,
and keeps the snapshot until every chunk was read and no chunk was read again for two minutes
(at most ``snapshotHoldSeconds`` waiting for the first complete read).
The options travel on stdin, never on the command line, so passwords stay out of ``ps``.
"""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
import tempfile

from cdc_core.spi.chunks import SnapshotPlan, snapshot_chunks_for
from cdc_spark.options import parse_options


#: Seconds without any chunk read after which a fully read snapshot is released.
IDLE_RELEASE_S = 120.0


class SnapshotHoldError(RuntimeError):
    """The snapshot could not be opened; the message says why."""


def hold_snapshot(options: dict[str, str], tables: list[str] | None, chunk_rows: int, hold_seconds: float) -> SnapshotPlan:
    """Start a holder process and return the plan of the snapshot it holds."""
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
    sys.stdout.write("PLAN " + base64.b64encode(pickle.dumps(plan)).decode() + "\n")
    sys.stdout.flush()
    sys.stdout.close()
    try:
        # Spark re-reads the same partitions for every action on the DataFrame: hold the snapshot
        # until it has been idle for a while after the first complete read.
        if chunks.wait_read(plan, float(request["hold"])) and plan.chunks:
            while chunks.wait_read(plan, IDLE_RELEASE_S):
                pass
    finally:
        chunks.close()


if __name__ == "__main__":
    main()
