"""Db2 reader benchmark on the stand-in: a window of CD rows to RawChanges (no envelope, no JSON) vs a bare fetch.

The same 5-column table and backlog as ``db2_streaming.py`` (``--changes`` inserts, then updates of
every tenth row: D+I pairs). The CD rows of the backlog are fetched once through the stand-in's
ibm_db_dbi-shaped connection (the bare fetch, timed), then the connector's StreamReader turns that
fetched window into events (timed on the thread's CPU clock as well as the wall clock, with the
engine's GC threshold). It measures the Python the reader spends per change, which the JSON
benchmark's wall clock on a shared machine hides. Usage: ``uv run python benchmarks/db2_reader.py [--changes N]``.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from typing import Any

from cdc_core.engine import YOUNG_GC_THRESHOLD
from cdc_db2.lsn import from_value
from cdc_db2.standin import dbapi
from cdc_db2.streaming import ResumePoint, StreamReader

from change_table_backlog import arguments
from db2_streaming import backlog, bare_query


class _Fetched:
    """A connection whose every cursor returns the rows fetched already (the reader's work alone is timed)."""

    def __init__(self, rows: list[Any]):
        self.rows = rows

    def cursor(self) -> _Fetched:
        return self

    def execute(self, *_: Any) -> None:
        pass

    def fetchall(self) -> list[Any]:
        return self.rows


def main() -> None:
    """Run the benchmark and print the rates."""
    with backlog(arguments().changes) as (pg, db, s, start):
        s.execute('UPDATE "BENCH"."ITEMS" SET "QTY" = "QTY" + 1 WHERE "ID" % 10 = 0')
        s.wait_captured(600)
        s.agent.stop()
        conn = dbapi.connect(f"DATABASE={db};HOSTNAME={pg.host};PORT={pg.port};PROTOCOL=TCPIP;", pg.user, "")
        captured, query = bare_query(db)
        cur = conn.cursor()
        cur.execute("SELECT MAX(SYNCHPOINT) FROM ASNCDC.IBMSNAP_REGISTER")
        top = bytes(cur.fetchone()[0])
        started = time.monotonic()
        cur.execute(query, (start, top))
        rows = cur.fetchall()
        fetch_s = time.monotonic() - started
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])  # as the engine runs
        offset = {"commit_lsn": str(from_value(start)), "change_lsn": "NULL", "event_serial_no": 0}
        for _ in range(3):
            reader = StreamReader(_Fetched(rows), "mydatabase", db, "ASNCDC", [captured], ResumePoint(offset), set(),
                                  logging.getLogger("bench"))
            reader.queries = [query]
            started, cpu = time.monotonic(), time.thread_time()
            events = sum(len(batch) for batch in reader._read(b"\x00", top))
            cpu, wall = time.thread_time() - cpu, time.monotonic() - started
            print(f"reader: {len(rows)} CD rows to {events} events+checkpoints in {wall:.2f}s wall, {cpu:.2f}s CPU "
                  f"= {len(rows) / cpu:,.0f} rows per CPU-second")
        print(f"bare fetch: {len(rows)} rows in {fetch_s:.2f}s = {len(rows) / fetch_s:,.0f}/s")
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
