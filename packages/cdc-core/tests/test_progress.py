"""Snapshot progress: the live terminal line and its numbers."""

from __future__ import annotations

import io
import time

from cdc_core.metrics import SnapshotMetrics
from cdc_core.progress import SnapshotProgress, describe


def test_describe_gives_rows_estimate_rate_eta_and_tables():
    m = SnapshotMetrics()
    m.snapshot_started({"public.a": 1000, "public.b": 3000})
    m.rows("public.a", 1000)
    m.table_completed("public.a")
    m.rows("public.b", 1000)
    line = describe(m, 2.0)
    assert line == "snapshot: public.b  2,000 rows of ~4,000 (50%)  ETA 2s  1,000 rows/s  tables 1/2"


def test_terminal_line_is_redrawn_and_cleared():
    m = SnapshotMetrics()
    out = io.StringIO()
    progress = SnapshotProgress(m, out, interactive=True).start()
    m.snapshot_started({"public.a": 10})
    m.rows("public.a", 5)
    time.sleep(1.2)
    m.snapshot_ended(True)
    time.sleep(0.8)
    progress.stop()
    text = out.getvalue()
    assert "\r\x1b[2Ksnapshot: public.a  5 rows of ~10 (50%)" in text
    assert text.endswith("\r\x1b[2K")
