"""Db2 windows of inserts into one table are read a transaction at a time: the same events, offsets and batches."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from cdc_core.events import RawChange
from cdc_core.relational import Table, TableId
from cdc_db2 import streaming
from cdc_db2.catalog import CaptureTable, Registration
from cdc_db2.lsn import from_value
from cdc_db2.streaming import ResumePoint, StreamReader, _keyed

_TABLE = CaptureTable(Table(TableId("TESTDB", "BENCH", "ITEMS"), [], ["ID"]),
                      Registration("BENCH", "ITEMS", "ASNCDC", "CDC_BENCH_ITEMS", True))


def _lsn(high: int, low: int) -> bytes:
    return high.to_bytes(8, "big") + low.to_bytes(8, "big")


def _rows(transactions: list[int]) -> list[tuple]:
    """CD rows of inserts: one transaction per entry, that many rows each, commit times one second apart (the
    third transaction's rows with two commit times, as a UOW join could give)."""
    rows, intent, key = [], 0, 0
    for t, size in enumerate(transactions):
        commit = _lsn(7, 1000 + t)
        for i in range(size):
            intent += 1
            key += 1
            when = datetime(2024, 1, 1) + timedelta(seconds=t + (i % 2 if t == 2 else 0))
            rows.append((commit, _lsn(5, intent), "I", when, key, f"name-{key}", Decimal(key).scaleb(-2)))
    return rows


def _read(rows: list[tuple], offset: dict, by_rows: bool) -> list:
    """Every batch of the window as plain data, and the reader's position after each."""
    reader = StreamReader(None, "mydatabase", "TESTDB", "ASNCDC", [_TABLE], ResumePoint(offset), set(),
                          logging.getLogger("test"))
    if by_rows:  # the row-by-row loop, as for windows with updates and deletes
        original = streaming._inserts_of_one_table
        streaming._inserts_of_one_table = lambda merged: False
    try:
        out = []
        for batch in reader._events(_keyed(rows, 0), (_lsn(7, 9999), b"\xff" * 17)):
            out.append([(x.op, x.after, x.source, list(x.source), x.offset) if x.__class__ is RawChange
                        else (x.offset, x.transaction_end, x.ts_ms) for x in batch])
            out.append(("position", reader.offset(), reader._open_tx))
        out.append(("end", reader.offset(), reader.last))
        return out
    finally:
        if by_rows:
            streaming._inserts_of_one_table = original


@pytest.mark.parametrize("resume", ["start", "mid-transaction", "after-transaction"])
def test_insert_window_gives_the_events_and_batches_of_the_row_loop(resume):
    # 1,023 rows then a new transaction: its checkpoint is the 1,024th item, the batch ends after the next event.
    rows = _rows([1023, 5, 6, 1500, 3])
    offset = {"start": {"commit_lsn": str(from_value(_lsn(7, 999))), "change_lsn": "NULL", "event_serial_no": 0},
              "mid-transaction": {"commit_lsn": str(from_value(rows[1030][0])),
                                  "change_lsn": str(from_value(rows[1030][1])), "event_serial_no": 1},
              "after-transaction": {"commit_lsn": str(from_value(rows[1030][0])), "change_lsn": "NULL",
                                    "event_serial_no": 0}}[resume]
    fast, slow = _read(rows, offset, by_rows=False), _read(rows, offset, by_rows=True)
    assert fast == slow
    events = [x for batch in fast if isinstance(batch, list) for x in batch if len(x) == 5]
    assert events and all(op == "c" for op, *_ in events)
