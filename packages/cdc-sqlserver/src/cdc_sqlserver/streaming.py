"""Streaming from the change tables: windows up to the max LSN, merged across tables in commit order.

As SqlServerStreamingChangeEventSource: each iteration reads the maximum LSN, queries every
capture instance for ``(from, to]`` (``fn_cdc_get_all_changes_<instance>(..., N'all update old')``
or the change table itself), merges the rows on ``(__$start_lsn, __$seqval, __$operation)``, pairs
op 3 with the following op 4 into one update, and numbers events sharing a position with
``event_serial_no``. After a restart the first window starts at the stored commit LSN itself and
skips what the offset says was already delivered.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from cdc_core.errors import ConnectorError
from cdc_core.events import RawChange
from cdc_sqlserver.catalog import CaptureInstance, instance_names, quote
from cdc_sqlserver.lsn import NULL, Lsn, from_value
from cdc_sqlserver.source import source_block

_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)
_OPS = {1: "d", 2: "c", 3: "u", 4: "u"}
_SKIPPED_CODES = {"c": (2,), "u": (3, 4), "d": (1,)}


#: The n-th transaction's commit LSN after a position, and from the beginning (``max.iteration.transactions``).
NTH_FROM_LAST = ("SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM cdc.lsn_time_mapping "
                 "WHERE start_lsn > ? AND tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns")
NTH_FROM_BEGINNING = ("SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM cdc.lsn_time_mapping "
                      "WHERE tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns")


class Position(NamedTuple):
    """Debezium's TxLogPosition: ``(commit LSN, change LSN)``, compared byte-wise with NULL first."""

    commit: Lsn
    change: Lsn

    def key(self) -> tuple[bytes, bytes]:
        """The sort key."""
        return self.commit.key(), self.change.key()


class ResumePoint:
    """Where streaming starts, from a stored offset (or a snapshot's)."""

    def __init__(self, offset: dict[str, Any] | None):
        """Set up from the stored offset (or the state of the reader)."""
        offset = offset or {}
        self.offset = offset
        self.position = Position(Lsn.parse(offset.get("commit_lsn")), Lsn.parse(offset.get("change_lsn")))
        self.serial = int(offset.get("event_serial_no") or 0)
        #: Only right after a completed snapshot is the window's start moved past the stored commit LSN.
        self.increase_from = bool(offset.get("snapshot_completed"))


def function_query(inst: CaptureInstance) -> str:
    """The ``function`` mode query of one capture instance (two LSN parameters)."""
    cols = ", ".join(quote(c.name) for c in inst.table.columns)
    return (f"SELECT [__$start_lsn], [__$seqval], [__$operation], sys.fn_cdc_map_lsn_to_time([__$start_lsn]), "
            f"{cols} FROM cdc.{quote('fn_cdc_get_all_changes_' + inst.name)}(?, ?, N'all update old') "
            "ORDER BY [__$start_lsn] ASC, [__$seqval] ASC, [__$operation] ASC")


def direct_query(inst: CaptureInstance) -> str:
    """The ``direct`` mode query: the change table joined to ``cdc.lsn_time_mapping`` for the commit time."""
    cols = ", ".join("ct." + quote(c.name) for c in inst.table.columns)
    return (f"SELECT ct.[__$start_lsn], ct.[__$seqval], ct.[__$operation], m.tran_end_time, {cols} "
            f"FROM {inst.change_table} AS ct LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = ct.[__$start_lsn] "
            "WHERE ct.[__$start_lsn] BETWEEN ? AND ? "
            "ORDER BY ct.[__$start_lsn] ASC, ct.[__$seqval] ASC, ct.[__$operation] ASC")


def _keyed(rows: list[tuple[Any, ...]], n: int) -> Iterator[tuple[Any, ...]]:
    """Rows of instance ``n`` with their merge key ``(commit, seqval, operation, n, i)`` first."""
    for i, r in enumerate(rows):
        yield bytes(r[0]), bytes(r[1]), int(r[2]), n, i, r


class StreamReader:
    """One database's change tables, read window by window."""

    def __init__(self, conn: Any, server: str, db: str, instances: list[CaptureInstance], resume: ResumePoint,
                 mode: str, skipped: set[str], log: Any, max_transactions: int = 0,
                 refresh: Any = None):
        """Set up from the stored offset (or the state of the reader)."""
        self.conn = conn
        self.server = server
        self.db = db
        self.instances = instances
        self.log = log
        self.mode = mode
        self.max_transactions = max_transactions
        self.skipped_codes = {code for op in skipped for code in _SKIPPED_CODES.get(op, ())}
        self._last_raw = resume.position.key()
        self._commit_text, self._change_text = str(resume.position.commit), str(resume.position.change)
        self._ts_us = 0
        self.serial = resume.serial
        self.increase_from = resume.increase_from
        self.on_start = resume.position
        self.on_start_serial = resume.serial
        self.first_window = True
        self._resume_offset = dict(resume.offset)
        self._emitted = False
        #: ``() -> list[CaptureInstance]``: every instance of the captured tables, read again when one appears or goes.
        self.refresh = refresh
        self.names = frozenset(inst.name for inst in instances)
        self._set_instances(instances)

    def _set_instances(self, instances: list[CaptureInstance]) -> None:
        """Use these capture instances, and their queries, from the next window on."""
        self.instances = instances
        self.queries = {inst.name: (function_query if self.mode == "function" else direct_query)(inst)
                        for inst in instances}

    def offset(self) -> dict[str, Any]:
        """The offset of the last event, or the one streaming resumed from if none was read yet."""
        if not self._emitted:
            return self._resume_offset
        return {"commit_lsn": self._commit_text, "change_lsn": self._change_text, "event_serial_no": self.serial}

    def _check_instances(self) -> None:
        """Pick up a new capture instance (after an ALTER) or forget a dropped one."""
        if self.refresh is None:
            return
        names = instance_names(self.conn)
        if names != self.names:
            self.names = names
            self._set_instances(self.refresh())
            self.log.info("capture instances now: %s", ", ".join(
                f"{i.name} ({i.table.id}, from {i.start_lsn}{'' if not i.stop_lsn.available else f' to {i.stop_lsn}'})"
                for i in self.instances))

    @property
    def last_commit(self) -> Lsn:
        """The commit LSN of the last change read (or resumed from)."""
        return Lsn(self._last_raw[0] or None)

    def window(self) -> Iterator[list[RawChange]] | None:
        """The changes of the next window, or None when there is nothing new (a heartbeat may be due)."""
        self._check_instances()
        last = self.last_commit
        row = self.conn.execute("SELECT sys.fn_cdc_get_max_lsn(), DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME())"
                                ).fetchone()
        to_lsn = from_value(row[0]) if row else NULL
        tz = timedelta(minutes=int(row[1] or 0)) if row else timedelta(0)
        if not to_lsn.available:
            return None
        if self.max_transactions:
            # As Debezium's getToLsn: the window ends at the n-th transaction after the last position.
            if last.available:
                nth = self.conn.execute(NTH_FROM_LAST, self.max_transactions, last.raw).fetchone()
            else:
                nth = self.conn.execute(NTH_FROM_BEGINNING, self.max_transactions).fetchone()
            if nth is not None and nth[0] is not None:
                to_lsn = from_value(nth[0])
        if self.increase_from and to_lsn.key() <= last.key():
            return None
        if last.available and self.increase_from:
            from_lsn = from_value(self.conn.execute("SELECT sys.fn_cdc_increment_lsn(?)", last.raw)
                                  .fetchone()[0])
        else:
            from_lsn = last
        self.increase_from = True
        return self._read(from_lsn, to_lsn, tz)

    def _rows(self, inst: CaptureInstance, from_lsn: Lsn, to_lsn: Lsn) -> list[tuple[Any, ...]]:
        """One instance's change rows in the window, within its own start and stop LSNs."""
        start = max(from_lsn, inst.start_lsn, key=Lsn.key)  # an instance never reads below its start LSN
        if start.key() > to_lsn.key():
            return []
        if inst.stop_lsn.available and inst.stop_lsn.key() <= start.key():
            return []  # replaced by a newer instance before this window
        rows = self.conn.execute(self.queries[inst.name], start.raw, to_lsn.raw).fetchall()
        if inst.stop_lsn.available:
            stop = inst.stop_lsn.raw
            rows = [r for r in rows if bytes(r[0]) < stop]  # from its stop LSN on, the newer instance has them
        return rows

    def _read(self, from_lsn: Lsn, to_lsn: Lsn, tz: timedelta) -> Iterator[list[RawChange]]:
        """Merge every instance's rows of the window into events, in commit order."""
        streams = []
        for n, inst in enumerate(self.instances):
            rows = self._rows(inst, from_lsn, to_lsn)
            if self.skipped_codes:
                rows = [r for r in rows if r[2] not in self.skipped_codes]
            streams.append(_keyed(rows, n))
        merged = heapq.merge(*streams)
        batch: list[RawChange] = []
        serial_in_start_tx = 1
        pending_before: tuple[Any, ...] | None = None
        # Positions as raw bytes, the NULL LSN as b"" (smallest), as Position.key() orders them.
        skipping = self.first_window
        start, start_serial = self.on_start.key(), self.on_start_serial
        instances = self.instances
        for commit, change, op, n, _i, row in merged:
            position = (commit, change)
            if pending_before is not None:
                if op != 4:
                    raise ConnectorError(f"the update before image at {_text(commit)}:{_text(change)} of table "
                                         f"{instances[n].table.id} was not followed by its after image "
                                         "(__$operation 4)")
                before, pending_before = pending_before, None
                self._emit(batch, instances[n], position, 2, before, row, tz)
                continue
            if skipping:
                if position < start:
                    continue
                if position == start:
                    if serial_in_start_tx <= start_serial:
                        serial_in_start_tx += 1
                        continue
                else:
                    skipping = False  # positions only grow from here: nothing more was delivered before
            if op == 3:
                pending_before = row
                continue
            self._emit(batch, instances[n], position, 1, None, row, tz)
            if len(batch) >= 1024:
                yield batch
                batch = []
        if pending_before is not None:
            raise ConnectorError(f"the update before image of a change at the end of window {to_lsn} was not "
                                 "followed by its after image (__$operation 4)")
        self.first_window = False
        if batch:
            yield batch

    def _emit(self, batch: list[RawChange], inst: CaptureInstance, position: tuple[bytes, bytes], count: int,
              before: tuple[Any, ...] | None, row: tuple[Any, ...], tz: timedelta) -> None:
        """Append one event: position, event_serial_no, source block and offset as Debezium sets them."""
        commit_raw = position[0]
        if position == self._last_raw:
            self.serial += count
        else:
            self.serial = count
            if commit_raw != self._last_raw[0]:
                # Once per transaction: the commit LSN's text and the commit time.
                when = row[3]
                self._commit_text = _text(commit_raw)
                self._ts_us = (when - tz - _EPOCH) // _MICRO if isinstance(when, datetime) else 0
            self._change_text = _text(position[1])
        self._last_raw = position
        self._emitted = True
        commit, change, serial = self._commit_text, self._change_text, self.serial
        table = inst.table
        source = source_block(self.server, self.db, self._ts_us, "false", table.id.schema or "", table.id.table,
                              change, commit, serial)
        offset = {"commit_lsn": commit, "change_lsn": change, "event_serial_no": serial}
        op = row[2]
        if op == 4:
            batch.append(RawChange(table, "u", list(before[4:]) if before else None, list(row[4:]), source, offset,
                                   commit))
        elif op == 1:
            batch.append(RawChange(table, "d", list(row[4:]), None, source, offset, commit))
        else:
            batch.append(RawChange(table, "c", None, list(row[4:]), source, offset, commit))


def _text(raw: bytes) -> str:
    """An LSN's text form from its 10 bytes (``NULL`` for b"")."""
    if not raw:
        return "NULL"
    h = raw.hex()
    return f"{h[:8]}:{h[8:16]}:{h[16:]}"
