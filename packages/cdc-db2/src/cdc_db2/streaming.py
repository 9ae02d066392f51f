"""Streaming from the change-data tables: windows up to the highest synchpoint, merged in commit order.

As Db2StreamingChangeEventSource: each iteration reads the highest synchpoint of
``IBMSNAP_REGISTER``, queries every CD table for the rows with ``IBMSNAP_COMMITSEQ`` between the
last position and it, merges them on ``(IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ)``, and pairs an
update: a ``D`` row followed, in the same commit, by an ``I`` row of the same table is one update
(``CHG_UPD_TO_DEL_INS='Y'``; on both platforms, as LuwPlatform's LEAD/LAG and ZOsPlatform's ROW_NUMBER
self-join pair them), and so is a ``U`` row (``'N'``, no before image). Commit times come from
``IBMSNAP_UOW.IBMSNAP_LOGMARKER`` (the real commit time, spec DB2-10). An event's ``change_lsn`` is
the intent sequence of its first row, so a restart skips exactly the changes its offset covers.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_db2.catalog import LUW, CaptureTable, max_lsn_query, quote
from cdc_db2.dialects import Dialect
from cdc_db2.errors import sqlstate
from cdc_db2.lsn import Lsn, text
from cdc_db2.source import source_block

_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)
#: Above every intent sequence: a position ``(commit, _AFTER_ALL)`` covers the whole transaction.
_AFTER_ALL = b"\xff" * 17
_SKIPPED = {"c": "I", "d": "D"}
#: At most this many transactions per window (a backlog is read in steps, not all into memory at once).
WINDOW_TRANSACTIONS = 5000


def nth_commit_query(control: str) -> str:
    """The commit sequence of the n-th unit of work after a position (two parameters: the position, n)."""
    return (f"SELECT MAX(t.IBMSNAP_COMMITSEQ) FROM (SELECT IBMSNAP_COMMITSEQ FROM {control}.IBMSNAP_UOW "
            "WHERE IBMSNAP_COMMITSEQ > ? ORDER BY IBMSNAP_COMMITSEQ FETCH FIRST ? ROWS ONLY) t")


def change_query(captured: CaptureTable, control: str) -> str:
    """One CD table's rows of a window (two LSN parameters), with the commit time of their unit of work."""
    cols = ", ".join("cd." + quote(c.name) for c in captured.table.columns)
    return (f"SELECT cd.IBMSNAP_COMMITSEQ, cd.IBMSNAP_INTENTSEQ, cd.IBMSNAP_OPERATION, u.IBMSNAP_LOGMARKER, {cols} "
            f"FROM {captured.registration.change_table} cd LEFT JOIN {control}.IBMSNAP_UOW u "
            "ON u.IBMSNAP_COMMITSEQ = cd.IBMSNAP_COMMITSEQ "
            "WHERE cd.IBMSNAP_COMMITSEQ >= ? AND cd.IBMSNAP_COMMITSEQ <= ? "
            "ORDER BY cd.IBMSNAP_COMMITSEQ, cd.IBMSNAP_INTENTSEQ")


class ResumePoint:
    """Where streaming starts, from a stored offset (or a snapshot's)."""

    def __init__(self, offset: dict[str, Any] | None):
        """Everything at or below the stored position was delivered."""
        offset = offset or {}
        self.offset = dict(offset)
        commit = Lsn.parse(offset.get("commit_lsn")).key()
        change = Lsn.parse(offset.get("change_lsn"))
        # After a snapshot (no change LSN) the whole transaction at the snapshot's LSN is in the snapshot.
        self.position = (commit, change.raw if change.available else _AFTER_ALL)


def _keyed(rows: list[tuple[Any, ...]], n: int) -> Iterator[tuple[Any, ...]]:
    """Rows of CD table ``n`` with their merge key ``(commit, intent, n)`` first."""
    for r in rows:
        yield bytes(r[0]), bytes(r[1]), n, r


class StreamReader:
    """The CD tables of the captured tables, read window by window."""

    def __init__(self, conn: Any, server: str, db: str, control: str, tables: list[CaptureTable],
                 resume: ResumePoint, skipped: set[str], log: Any, dialect: Dialect = LUW):
        """Set up from the stored offset."""
        self.conn = conn
        self.server = server
        self.db = db
        self.control = control
        self.log = log
        self.dialect = dialect
        self.skipped = {_SKIPPED[op] for op in skipped if op in _SKIPPED}
        self.skip_updates = "u" in skipped
        self.last = resume.position
        self._resume_offset = resume.offset
        self._emitted = False
        self._commit_text = self._change_text = "NULL"
        self._commit_raw = b""
        #: The transaction whose events are being emitted: (commit LSN, its text, last offset, commit time in ms).
        self._open_tx: tuple[bytes, str, dict[str, Any], int] | None = None
        self.set_tables(tables)

    def set_tables(self, tables: list[CaptureTable]) -> None:
        """Read these tables (and their queries) from the next window on."""
        self.tables = tables
        self.queries = [change_query(t, self.control) for t in tables]

    def offset(self) -> dict[str, Any]:
        """The offset of the last event, or the one streaming resumed from if none was read yet."""
        if not self._emitted:
            return self._resume_offset
        return {"commit_lsn": self._commit_text, "change_lsn": self._change_text, "event_serial_no": 1}

    def max_lsn(self) -> bytes | None:
        """The highest synchpoint now (None before the capture program ever ran)."""
        cur = self.conn.cursor()
        cur.execute(max_lsn_query(self.control, self.dialect))
        row = cur.fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def window(self) -> Iterator[list[RawChange]] | None:
        """The changes of the next window, or None when the capture program has nothing new."""
        to_lsn = self.max_lsn()
        if to_lsn is None or (to_lsn, _AFTER_ALL) <= self.last:
            return None
        # IBMSNAP_UOW rows are written with their CD rows: any of them below the synchpoint ends a complete window.
        cur = self.conn.cursor()
        cur.execute(nth_commit_query(self.control), (self.last[0] or b"\x00", WINDOW_TRANSACTIONS))
        row = cur.fetchone()
        if row and row[0] is not None and bytes(row[0]) < to_lsn:
            to_lsn = bytes(row[0])
        return self._read(self.last[0] or b"\x00", to_lsn)

    def _end_transaction(self, batch: list[Any]) -> None:
        """The END checkpoint of the open transaction (the core writes its END event from it)."""
        if self._open_tx is not None:
            _, tid, offset, ts_ms = self._open_tx
            batch.append(Checkpoint(offset, transaction_end=tid, ts_ms=ts_ms))
            self._open_tx = None

    def _read(self, from_lsn: bytes, to_lsn: bytes) -> Iterator[list[RawChange | Checkpoint]]:
        """Merge every CD table's rows of the window into events, in commit order."""
        streams = []
        for n, query in enumerate(self.queries):
            cur = self.conn.cursor()
            try:
                cur.execute(query, (from_lsn, to_lsn))
            except Exception as e:
                if sqlstate(e) != "42704":
                    raise
                # REMOVETABLE dropped the CD table since the last look at the register: nothing left to read.
                self.log.info("CD table %s is gone (the table left capture mode)",
                              self.tables[n].registration.change_table)
                continue
            streams.append(_keyed(cur.fetchall(), n))
        batch: list[Any] = []
        last = self.last
        pending: tuple[bytes, bytes, int, tuple[Any, ...]] | None = None
        for item in heapq.merge(*streams):
            commit, intent, n, row = item
            if pending is not None:
                p_commit, p_intent, p_n, p_row = pending
                pending = None
                if p_n == n and p_commit == commit and str(row[2]).strip() == "I":
                    self._emit(batch, n, p_commit, p_intent, "u", p_row, row, last)
                    continue
                self._emit(batch, p_n, p_commit, p_intent, "d", p_row, None, last)
            op = str(row[2]).strip()
            if op == "D":
                pending = item  # maybe the before image of an update (its I row follows)
                continue
            if op == "I":
                self._emit(batch, n, commit, intent, "c", None, row, last)
            elif op == "D":
                self._emit(batch, n, commit, intent, "d", row, None, last)
            elif op == "U":
                self._emit(batch, n, commit, intent, "u", None, row, last)
            else:
                raise ConnectorError(f"unknown IBMSNAP_OPERATION {op!r} at {text(commit)}:{text(intent)} in "
                                     f"{self.tables[n].registration.change_table}")
            if len(batch) >= 1024:
                yield batch
                batch = []
        if pending is not None:
            p_commit, p_intent, p_n, p_row = pending
            self._emit(batch, p_n, p_commit, p_intent, "d", p_row, None, last)
        self._end_transaction(batch)  # a window holds whole transactions (asncap writes each one at once)
        # The whole window is read: the next one starts above its end.
        self.last = max(self.last, (to_lsn, _AFTER_ALL))
        if batch:
            yield batch

    def _emit(self, batch: list[Any], n: int, commit: bytes, intent: bytes, op: str,
              before: tuple[Any, ...] | None, after: tuple[Any, ...] | None, last: tuple[bytes, bytes]) -> None:
        """Append one event unless its position is at or below the resume point."""
        if (commit, intent) <= last:
            return
        if (op == "c" and "I" in self.skipped) or (op == "d" and "D" in self.skipped) or \
                (op == "u" and self.skip_updates):
            self._position(commit, intent)
            return
        row = after if after is not None else before
        assert row is not None
        when = row[3]
        if isinstance(when, datetime):
            if when.tzinfo is not None:
                when = when.astimezone(timezone.utc).replace(tzinfo=None)
            ts_us = (when - _EPOCH) // _MICRO
        else:
            ts_us = 0
        if self._open_tx is not None and self._open_tx[0] != commit:
            self._end_transaction(batch)
        self._position(commit, intent)
        table = self.tables[n].table
        source = source_block(self.server, self.db, ts_us, "false", table.id.schema or "", table.id.table,
                              self._change_text, self._commit_text)
        offset = {"commit_lsn": self._commit_text, "change_lsn": self._change_text, "event_serial_no": 1}
        batch.append(RawChange(table, op, list(before[4:]) if before is not None else None,
                               list(after[4:]) if after is not None else None, source, offset, self._commit_text))
        self._open_tx = (commit, self._commit_text, offset, ts_us // 1000)

    def _position(self, commit: bytes, intent: bytes) -> None:
        """Record the position of the last event read (the commit LSN's text once per transaction)."""
        if commit != self._commit_raw:
            self._commit_raw, self._commit_text = commit, text(commit)
        self._change_text = text(intent)
        self._emitted = True
