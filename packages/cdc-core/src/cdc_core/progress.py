"""Snapshot progress for ``cdc run``: a live line on a terminal, plain log lines otherwise."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TextIO

from cdc_core.metrics import SnapshotMetrics

log = logging.getLogger("cdc.progress")


def describe(metrics: SnapshotMetrics, elapsed: float) -> str:
    """One line: the table being read, rows so far out of the estimate, rate and ETA, tables done."""
    rows = sum(metrics.rows_scanned.values())
    estimate = sum(metrics.estimated_rows.values())
    rate = rows / elapsed if elapsed > 0 else 0.0
    done = metrics.total_tables - metrics.remaining_tables
    table = metrics.current_table or "-"
    line = f"snapshot: {table}  {rows:,} rows"
    if estimate > rows:
        eta = (estimate - rows) / rate if rate > 0 else float("inf")
        eta_text = "?" if eta == float("inf") else f"{eta:.0f}s"
        line += f" of ~{estimate:,} ({100 * rows / estimate:.0f}%)  ETA {eta_text}"
    return f"{line}  {rate:,.0f} rows/s  tables {done}/{metrics.total_tables}"


class SnapshotProgress:
    """Reports a running snapshot: redraws one terminal line every 0.5 s, or logs every 10 s."""

    def __init__(self, metrics: SnapshotMetrics, stream: TextIO | None = None, interactive: bool | None = None):
        self.metrics = metrics
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdc-progress", daemon=True)

    def start(self) -> SnapshotProgress:
        """Start reporting in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reporting."""
        self._stop.set()
        self._thread.join(2)

    def _run(self) -> None:
        interval = 0.5 if self.interactive else 10.0
        shown = False
        while not self._stop.wait(interval):
            m = self.metrics
            if m.started_at is None:
                continue
            if m.running:
                text = describe(m, time.monotonic() - m.started_at)
                if self.interactive:
                    self.stream.write("\r\x1b[2K" + text)
                    self.stream.flush()
                    shown = True
                else:
                    log.info("%s", text)
            elif shown:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                shown = False
