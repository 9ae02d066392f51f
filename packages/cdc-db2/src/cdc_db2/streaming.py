"""Streaming from the change-data tables: windows up to the highest synchpoint, merged in commit order.

As Db2StreamingChangeEventSource: each iteration reads the highest synchpoint of
``IBMSNAP_REGISTER``, queries every CD table for the rows with ``IBMSNAP_COMMITSEQ`` between the
last position and it, merges them on ``(IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ)``, and pairs an
update: a ``D`` row followed, in the same commit, by an ``I`` row of the same table is one update
(``CHG_UPD_TO_DEL_INS='Y'``; on both platforms, as LuwPlatform's LEAD/LAG and ZOsPlatform's ROW_NUMBER
self-join pair them), and so is a ``U`` row (``'N'``, no before image). Commit times come from
``IBMSNAP_UOW.IBMSNAP_LOGMARKER`` (the real commit time, spec DB2-10). An event's ``change_lsn`` is
the intent sequence of its last row (an update's I row, ``event_serial_no`` 2, as Debezium), so a restart
skips exactly the changes its offset covers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import partial
from bisect import bisect_right
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.byte_lsn import grouped_hex
from cdc_core.events import Checkpoint, RawChange
from cdc_db2.catalog import LUW, CaptureTable, max_lsn_query
from cdc_db2.dialects import Dialect
from cdc_db2.errors import sqlstate
from cdc_db2.lsn import Lsn, text
from cdc_db2.source import source_block
from cdc_db2.timestamps import select_list

_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)
#: Above every intent sequence: a position ``(commit, _AFTER_ALL)`` covers the whole transaction.
_AFTER_ALL = b"\xff" * 17
_SKIPPED = {"c": "I", "d": "D"}
#: IBMSNAP_OPERATION values as drivers return them (CHAR(1), maybe padded); others go through str().strip().
_OPERATIONS = {"I": "I", "D": "D", "U": "U", "I ": "I", "D ": "D", "U ": "U"}
_COMMIT, _INTENT = itemgetter(0), itemgetter(1)
#: Of a merged row ``(commit, intent, n, row)``: its position, its table's number, the CD row.
_POSITION, _N, _ROW = itemgetter(0, 1), itemgetter(2), itemgetter(3)
#: Of a CD row: IBMSNAP_OPERATION, IBMSNAP_LOGMARKER (the commit time), the captured columns.
_OP, _WHEN, _DATA = itemgetter(2), itemgetter(3), itemgetter(slice(4, None))
#: A RawChange from its fields in one tuple, made by tuple.__new__ in C.
_new_change = partial(tuple.__new__, RawChange)
#: At most this many transactions per window (a backlog is read in steps, not all into memory at once).
WINDOW_TRANSACTIONS = 5000


def nth_commit_query(control: str) -> str:
    """The commit sequence of the n-th unit of work after a position (two parameters: the position, n)."""
    return (f"SELECT MAX(t.IBMSNAP_COMMITSEQ) FROM (SELECT IBMSNAP_COMMITSEQ FROM {control}.IBMSNAP_UOW "
            "WHERE IBMSNAP_COMMITSEQ > ? ORDER BY IBMSNAP_COMMITSEQ FETCH FIRST ? ROWS ONLY) t")


def change_query(captured: CaptureTable, control: str) -> str:
    """One CD table's rows of a window (two LSN parameters), with the commit time of their unit of work."""
    cols = select_list(captured.table.columns, "cd.")
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


def _keyed(rows: list[tuple[Any, ...]], n: int) -> list[tuple[bytes, bytes, int, tuple[Any, ...]]]:
    """Rows of CD table ``n`` with their merge key ``(commit, intent, n)`` first (built in C, no call per row)."""
    return list(zip(map(bytes, map(_COMMIT, rows)), map(bytes, map(_INTENT, rows)), repeat(n), rows))


def _micros(when: Any) -> int:
    """A commit time (IBMSNAP_LOGMARKER) in microseconds since the epoch, UTC (0 when there is none)."""
    if not isinstance(when, datetime):
        return 0
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return (when - _EPOCH) // _MICRO


def _open_tx(commit: bytes | None, commit_text: str | None, offset: dict[str, Any] | None,
             ts_us: int | None) -> tuple[bytes, str, dict[str, Any], int] | None:
    """The open transaction as the reader keeps it between batches (None: none): commit LSN, its text, the
    offset of its last event, its commit time in ms."""
    return None if commit is None else (commit, commit_text, offset, ts_us // 1000)  # type: ignore[return-value, operator]


def _grouped_hexes(raws: list[bytes]) -> list[str]:
    """``grouped_hex`` of each LSN: hex grouped by 4 bytes in C, the third colon dropped for 13-16 bytes (LUW's
    16-byte LSNs: ``8:8:16`` digits); other lengths one by one."""
    lengths = set(map(len, raws))
    if lengths <= _GROUPED_BY_4:
        return list(map(bytes.hex, raws, repeat(":"), repeat(-4)))
    if lengths <= _THIRD_COLON_DROPPED:
        return [h[:26] + h[27:] for h in map(bytes.hex, raws, repeat(":"), repeat(-4))]
    return list(map(grouped_hex, raws))


#: LSN lengths whose ``bytes.hex(":", -4)`` is grouped_hex's text, and those where it has one colon too many.
_GROUPED_BY_4, _THIRD_COLON_DROPPED = frozenset(range(9, 13)), frozenset(range(13, 17))


def _inserts_of_one_table(merged: list[tuple[bytes, bytes, int, tuple[Any, ...]]]) -> bool:
    """Whether a window holds inserts (IBMSNAP_OPERATION I) of one CD table only."""
    tables = list(map(_N, merged))
    if tables.count(tables[0]) != len(tables):
        return False
    return all((_OPERATIONS.get(code) or str(code).strip()) == "I" for code in set(map(_OP, map(_ROW, merged))))


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

    def window(self, to_lsn: bytes | None) -> Iterator[list[RawChange]] | None:
        """The changes of the next window, up to ``to_lsn`` (``max_lsn()`` read before the registrations were, as
        Debezium reads its currentMaxLsn first), or None when there is nothing new."""
        if to_lsn is None or (to_lsn, _AFTER_ALL) <= self.last:
            return None
        # IBMSNAP_UOW rows are written with their CD rows: any of them below the synchpoint ends a complete window.
        cur = self.conn.cursor()
        cur.execute(nth_commit_query(self.control), (self.last[0] or b"\x00", WINDOW_TRANSACTIONS))
        row = cur.fetchone()
        if row and row[0] is not None and bytes(row[0]) < to_lsn:
            to_lsn = bytes(row[0])
        return self._read(self.last[0] or b"\x00", to_lsn)

    def _read(self, from_lsn: bytes, to_lsn: bytes) -> Iterator[list[RawChange | Checkpoint]]:
        """Merge every CD table's rows of the window into events, in commit order."""
        parts = []
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
            if rows := cur.fetchall():
                parts.append(_keyed(rows, n))
        # Each table's rows come sorted: one table's are the window; several merge (timsort finds the runs).
        merged = parts[0] if len(parts) == 1 else sorted(chain.from_iterable(parts))
        yield from self._events(merged, (to_lsn, _AFTER_ALL))

    def _events(self, merged: list[tuple[bytes, bytes, int, tuple[Any, ...]]],
                end: tuple[bytes, bytes]) -> Iterator[list[Any]]:
        """The window's rows (merge key first) as batches of events, the window read up to ``end``.

        A D row and the I row right after it (same table, same commit; on z/OS too, as Debezium's z/OS query
        pairs them) are one update; rows at or below the resume point are dropped. Per-row state lives in
        locals, stored on the reader before each batch leaves.
        """
        last_commit, last_intent = self.last
        tables = [t.table for t in self.tables]
        skipped, skip_updates = self.skipped, self.skip_updates
        skip_c, skip_d = "I" in skipped, "D" in skipped
        if not skip_c and merged and _inserts_of_one_table(merged):
            yield from self._insert_events(merged, end, tables[merged[0][2]])
            return
        server, db = self.server, self.db
        commit_raw, commit_text, change_text = self._commit_raw, self._commit_text, self._change_text
        emitted = self._emitted
        # The open transaction (self._open_tx) in locals: its commit LSN (None: none), text, last offset, commit time.
        tx_commit, tx_text, tx_offset, tx_ts_ms = self._open_tx or (None, None, None, None)
        tx_ts_us = None if tx_ts_ms is None else tx_ts_ms * 1000
        # The source block of the events of one table in one commit, all but change_lsn (built once per run).
        source_key: tuple[Any, ...] | None = None
        template: dict[str, Any] = {}
        ts_us = 0
        past = False  # rows come in position order: once one is above the resume point, all that follow are
        batch: list[Any] = []
        count = len(merged)
        i = 0
        while i < count:
            commit, intent, n, row = merged[i]
            i += 1
            serial = 1
            code = row[2]
            op = _OPERATIONS.get(code) or str(code).strip()
            if op == "I":
                kind, before, after = "c", None, row
            elif op == "D":
                kind, before, after = "d", row, None
                if i < count:
                    n_commit, n_intent, n_n, n_row = merged[i]
                    if n_n == n and n_commit == commit and (_OPERATIONS.get(n_row[2]) or str(n_row[2]).strip()) == "I":
                        kind, after = "u", n_row  # the before image of an update and its after image
                        i += 1
                        # Debezium's position of an update is its I row's, and its event count 2 (setChangePosition
                        # after the cursor moved to the after image): change_lsn the I row's, event_serial_no 2.
                        intent, serial = n_intent, 2
            elif op == "U":
                kind, before, after = "u", None, row
            else:
                self._keep(commit_raw, commit_text, change_text, emitted,
                           _open_tx(tx_commit, tx_text, tx_offset, tx_ts_us))
                raise ConnectorError(f"unknown IBMSNAP_OPERATION {op!r} at {text(commit)}:{text(intent)} in "
                                     f"{self.tables[n].registration.change_table}")
            if not past:
                if commit < last_commit or (commit == last_commit and intent <= last_intent):
                    continue
                past = True
            if commit != commit_raw:
                commit_raw, commit_text = commit, grouped_hex(commit)
            change_text = grouped_hex(intent)
            emitted = True
            if (kind == "c" and skip_c) or (kind == "d" and skip_d) or (kind == "u" and skip_updates):
                continue
            when = (after or before)[3]
            if source_key is None or source_key[0] is not commit_raw or source_key[1] != n or source_key[2] != when:
                ts_us = _micros(when)
                table = tables[n]
                template = source_block(server, db, ts_us, "false", table.id.schema or "", table.id.table,
                                        None, commit_text)
                source_key = (commit_raw, n, when)
            if tx_commit != commit:
                if tx_commit is not None:
                    batch.append(Checkpoint(tx_offset, ts_ms=tx_ts_us // 1000))
                tx_commit, tx_text = commit, commit_text
            source = template.copy()
            source["change_lsn"] = change_text
            tx_offset = {"commit_lsn": commit_text, "change_lsn": change_text, "event_serial_no": serial}
            tx_ts_us = ts_us
            # The row's columns after the four CD columns, as they came (a slice, as SQL Server's reader passes).
            batch.append(_new_change((tables[n], kind, before[4:] if before is not None else None,
                                      after[4:] if after is not None else None, source, tx_offset, commit_text, None)))
            if len(batch) >= 1024:
                self._keep(commit_raw, commit_text, change_text, emitted,
                           _open_tx(tx_commit, tx_text, tx_offset, tx_ts_us))
                yield batch
                batch = []
        self._keep(commit_raw, commit_text, change_text, emitted, None)
        if tx_commit is not None:  # a window holds whole transactions (asncap writes each one at once)
            # No transaction_end: Debezium 2.7.4's Db2 connector never reports a commit, so a transaction's END
            # comes with the next transaction's first event (TransactionMonitor.dataEvent; TransactionMetadataIT
            # expects BEGIN, END, BEGIN after two transactions).
            batch.append(Checkpoint(tx_offset, ts_ms=tx_ts_us // 1000))
        # The whole window is read: the next one starts above its end.
        self.last = max(self.last, end)
        if batch:
            yield batch

    def _insert_events(self, merged: list[tuple[bytes, bytes, int, tuple[Any, ...]]], end: tuple[bytes, bytes],
                       table: Any) -> Iterator[list[Any]]:
        """``_events`` of a window of inserts into one table: the same events, checkpoints and batches, built a
        transaction at a time (source blocks and offsets by copies, RawChanges by ``tuple.__new__`` over ``zip``)."""
        server, db, schema, name = self.server, self.db, table.id.schema or "", table.id.table
        tx_commit, _, tx_offset, tx_ts_ms = self._open_tx or (None, None, None, None)
        batch: list[Any] = []
        # Rows at or below the resume point were delivered before (the window is sorted by position).
        start = bisect_right(merged, self.last, key=_POSITION)
        for commit, group in groupby(merged[start:] if start else merged, _COMMIT):
            items = list(group)
            commit_text = grouped_hex(commit)
            if tx_commit is not None and tx_commit != commit:
                batch.append(Checkpoint(tx_offset, ts_ms=tx_ts_ms))
            whens = list(map(_WHEN, map(_ROW, items)))
            # One commit time per transaction (IBMSNAP_UOW's row); a source block per run of one commit time.
            runs = [(whens[0], items)] if whens.count(whens[0]) == len(whens) else [
                (when, [item for _, item in run]) for when, run in groupby(zip(whens, items), _COMMIT)]
            for when, run in runs:
                ts_us = _micros(when)
                texts = _grouped_hexes(list(map(_INTENT, run)))
                source = source_block(server, db, ts_us, "false", schema, name, None, commit_text)
                offset = {"commit_lsn": commit_text, "change_lsn": None, "event_serial_no": 1}
                sources = list(map(dict.copy, repeat(source, len(run))))
                offsets = list(map(dict.copy, repeat(offset, len(run))))
                for s, o, t in zip(sources, offsets, texts):
                    s["change_lsn"] = o["change_lsn"] = t
                batch += map(_new_change, zip(repeat(table), repeat("c"), repeat(None), map(_DATA, map(_ROW, run)),
                                              sources, offsets, repeat(commit_text), repeat(None)))
                tx_commit, tx_offset, tx_ts_ms = commit, offsets[-1], ts_us // 1000
                # As _events: a batch leaves after the event that brings it to 1024 items.
                while len(batch) >= 1024:
                    cut = 1024 if batch[1023].__class__ is RawChange else 1025
                    last = batch[cut - 1].offset
                    self._keep(commit, commit_text, last["change_lsn"], True,
                               (commit, commit_text, last, ts_us // 1000))
                    yield batch[:cut]
                    batch = batch[cut:]
            self._commit_raw, self._commit_text, self._change_text, self._emitted = commit, commit_text, texts[-1], True
        self._open_tx = None
        if tx_commit is not None:  # a window holds whole transactions (asncap writes each one at once)
            batch.append(Checkpoint(tx_offset, ts_ms=tx_ts_ms))
        self.last = max(self.last, end)
        if batch:
            yield batch

    def _keep(self, commit_raw: bytes, commit_text: str, change_text: str, emitted: bool,
              open_tx: tuple[bytes, str, dict[str, Any], int] | None) -> None:
        """Store the position of the last event read (kept in locals while a window is converted)."""
        self._commit_raw, self._commit_text, self._change_text = commit_raw, commit_text, change_text
        self._emitted, self._open_tx = emitted, open_tx
