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
from itertools import islice
from operator import itemgetter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from cdc_core.errors import ConnectorError
from cdc_core.events import RawChange
from cdc_sqlserver.change_rows import ChangeRows
from cdc_sqlserver.catalog import CaptureInstance, instance_names, quote
from cdc_sqlserver.lsn import NULL, Lsn, from_value
from cdc_core.relational import Table

_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)
_SKIPPED_CODES = {"c": (2,), "u": (3, 4), "d": (1,)}


#: The n-th transaction's commit LSN after a position, and from the beginning (``max.iteration.transactions``).
NTH_FROM_LAST = ("SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM cdc.lsn_time_mapping "
                 "WHERE start_lsn > ? AND tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns")
NTH_FROM_BEGINNING = ("SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM cdc.lsn_time_mapping "
                      "WHERE tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns")


def lsn_text(value: str | None) -> str | None:
    """An offset's LSN text as a source block writes it: None for a missing or ``NULL`` one."""
    return value if value and Lsn.parse(value).available else None


#: The idle checkpoint's key for the end of the last window read (``StreamReader.idle_offset``).
CAUGHT_UP = "caught_up_lsn"


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
    return (f"SELECT [__$start_lsn], [__$seqval], [__$operation], {cols} "
            f"FROM cdc.{quote('fn_cdc_get_all_changes_' + inst.name)}(?, ?, N'all update old') "
            "ORDER BY [__$start_lsn] ASC, [__$seqval] ASC, [__$operation] ASC")


def direct_query(inst: CaptureInstance) -> str:
    """The ``direct`` mode query: the change table itself, between two LSNs."""
    cols = ", ".join(quote(c.name) for c in inst.table.columns)
    return (f"SELECT [__$start_lsn], [__$seqval], [__$operation], {cols} FROM {inst.change_table} "
            "WHERE [__$start_lsn] BETWEEN ? AND ? "
            "ORDER BY [__$start_lsn] ASC, [__$seqval] ASC, [__$operation] ASC")


#: The commit times of a window's transactions, read once per window (Debezium maps each row's LSN with
#: ``sys.fn_cdc_map_lsn_to_time``; one lookup per window gives the same times for far less work).
COMMIT_TIMES = "SELECT start_lsn, tran_end_time FROM cdc.lsn_time_mapping WHERE start_lsn BETWEEN ? AND ?"


#: The order of change rows across capture instances: ``(__$start_lsn, __$seqval, __$operation)`` (bytes and
#: bytearray compare by content with each other, so no copy per row).
_merge_key = itemgetter(0, 1, 2)


class StreamReader:
    """One database's change tables, read window by window."""

    def __init__(self, conn: Any, server: str, db: str, instances: list[CaptureInstance], resume: ResumePoint,
                 mode: str, skipped: set[str], log: Any, max_transactions: int = 0,
                 refresh: Any = None, fetch_size: int = 0, agent: Any = None):
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
        #: The end of the last window read (everything captured up to it was delivered), for idle checkpoints.
        self.caught_up: Lsn | None = None
        #: ``() -> list[CaptureInstance]``: every instance of the captured tables, read again when one appears or goes.
        self.refresh = refresh
        #: ``streaming.fetch.size``: rows per fetch of a capture instance read alone in a window (0: ``_BATCH``).
        self.fetch_size = fetch_size
        #: cdc_sqlserver.agent.AgentCheck: asked when a poll finds no maximum LSN (None: never).
        self.agent = agent
        self.names = frozenset(inst.name for inst in instances)
        #: Capture instances whose start LSN a window reached (their structure was checked, see reached()).
        self._reached: set[str] = set()
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

    def source_position(self) -> tuple[str | None, str | None, int | None]:
        """Debezium's offset context here as a source block has it: ``(change_lsn, commit_lsn, event_serial_no)``.

        The last event's; before any event of this run, the resumed offset's LSNs with no serial number
        (SqlServerOffsetContext's loader sets the LSNs of its SourceInfo, whose ``event_serial_no`` only
        setChangePosition sets). A blocking snapshot's events carry it (``cdc_sqlserver.incremental``).
        """
        if self._emitted:
            return self._change_text, self._commit_text, self.serial
        return lsn_text(self._resume_offset.get("change_lsn")), lsn_text(self._resume_offset.get("commit_lsn")), None

    def idle_offset(self) -> dict[str, Any]:
        """``offset()`` at an idle poll, with ``caught_up_lsn``: every change captured up to it was delivered
        (``cdc_sqlserver.position`` tells Spark's Trigger.AvailableNow so; a resume ignores it)."""
        offset = self.offset()
        if self.caught_up is None or not self.caught_up.available:
            return offset
        return {**offset, CAUGHT_UP: str(self.caught_up)}

    def _check_instances(self) -> None:
        """Pick up a new capture instance (after an ALTER) or forget a dropped one.

        A table whose last instance ``sys.sp_cdc_disable_table`` dropped is no longer read; as in
        Debezium 2.7.4 nothing is emitted or recorded for it (its SQL Server schema change emitter
        knows CREATE and ALTER only), so enabling it again later announces an ALTER only if its
        structure differs from the recorded one.
        """
        if self.refresh is None:
            return
        names = instance_names(self.conn)
        if names != self.names:
            for gone in sorted(self.names - names):
                self.log.info("capture instance %s was dropped (sys.sp_cdc_disable_table): no longer read", gone)
            self.names = names
            self._set_instances(self.refresh())
            self.log.info("capture instances now: %s", ", ".join(
                f"{i.name} ({i.table.id}, from {i.start_lsn}{'' if not i.stop_lsn.available else f' to {i.stop_lsn}'})"
                for i in self.instances))

    def reload(self, instances: list[CaptureInstance]) -> None:
        """Read these capture instances from the next window on (their tables' structures were recorded anew)."""
        self._set_instances(instances)

    def reached(self) -> list[CaptureInstance]:
        """The current capture instances whose start LSN the last window reached, each once.

        As Debezium's schema change checkpoints: a new instance's structure is checked (an ALTER if it
        differs) at the first poll that covers its start LSN, whether or not a change of it follows.
        """
        if self.caught_up is None or not self.caught_up.available:
            return []
        end = self.caught_up.key()
        out = [inst for inst in self.instances if inst.name not in self._reached and not inst.stop_lsn.available
               and inst.start_lsn.key() <= end]
        self._reached.update(inst.name for inst in out)
        return out

    @property
    def last_commit(self) -> Lsn:
        """The commit LSN of the last change read (or resumed from)."""
        return Lsn(self._last_raw[0] or None)

    def window(self) -> Iterator[list[RawChange]] | None:
        """The changes of the next window, or None when there is nothing new (a heartbeat may be due).

        The max LSN is read before the capture instances are (SqlServerStreamingChangeEventSource's order:
        currentMaxLsn, then the change tables whose start LSN lies below it): an instance created after that
        read starts above the window. Read the other way round, one created in between (with changes captured)
        was not known to the window, which read the old instance past the new one's start LSN and streamed
        those changes with the old structure.
        """
        last = self.last_commit
        row = self.conn.execute("SELECT sys.fn_cdc_get_max_lsn(), DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME())"
                                ).fetchone()
        self._check_instances()
        to_lsn = from_value(row[0]) if row else NULL
        tz = timedelta(minutes=int(row[1] or 0)) if row else timedelta(0)
        if not to_lsn.available:
            if self.agent is not None:
                self.agent.no_max_lsn(self.conn)
            return None
        if self.agent is not None:
            self.agent.max_lsn_seen()
        if self.max_transactions:
            # As Debezium's getToLsn: the window ends at the n-th transaction after the last position.
            if last.available:
                nth = self.conn.execute(NTH_FROM_LAST, self.max_transactions, last.raw).fetchone()
            else:
                nth = self.conn.execute(NTH_FROM_BEGINNING, self.max_transactions).fetchone()
            if nth is not None and nth[0] is not None:
                to_lsn = from_value(nth[0])
        if self.increase_from and to_lsn.key() <= last.key():
            self.caught_up = to_lsn
            return None
        if last.available and self.increase_from:
            from_lsn = from_value(self.conn.execute("SELECT sys.fn_cdc_increment_lsn(?)", last.raw)
                                  .fetchone()[0])
        else:
            from_lsn = last
        self.increase_from = True
        self.caught_up = to_lsn
        return self._read(from_lsn, to_lsn, tz)

    def _rows(self, inst: CaptureInstance, from_lsn: Lsn, to_lsn: Lsn, whole: bool
              ) -> Iterable[list[tuple[Any, ...]]]:
        """One instance's change rows in the window, within its own start and stop LSNs, a fetch (list) at a time.

        ``whole``: fetched at once (several instances are merged: one connection holds one open result
        set); else in ``streaming.fetch.size`` batches, ``_BATCH`` rows when it is 0 (JDBC's fetch size 0, which
        Debezium passes on, leaves it to the driver, and mssql-jdbc streams: a window's rows are never all held
        at once, however large its transactions).
        """
        start = max(from_lsn, inst.start_lsn, key=Lsn.key)  # an instance never reads below its start LSN
        if start.key() > to_lsn.key():
            return ()
        if inst.stop_lsn.available and inst.stop_lsn.key() <= start.key():
            return ()  # replaced by a newer instance before this window
        try:
            cursor = self.conn.execute(self.queries[inst.name], start.raw, to_lsn.raw)
        except Exception as e:
            if type(e).__name__ == "OperationalError" or inst.name in instance_names(self.conn):
                raise
            # sp_cdc_disable_table between the instance check and this query: as Debezium's
            # processErrorFromChangeTableQuery, the instance is no longer read (and nothing is emitted).
            self.log.info("capture instance %s of %s is gone (sys.sp_cdc_disable_table): no longer read", inst.name,
                          inst.table.id)
            return ()
        fetches: Iterable[list[tuple[Any, ...]]] = ([cursor.fetchall()] if whole
                                                     else _batches(cursor, self.fetch_size or _BATCH))
        if inst.stop_lsn.available:
            stop = inst.stop_lsn.raw
            # from its stop LSN on, the newer instance has them
            fetches = ([r for r in fetch if bytes(r[0]) < stop] for fetch in fetches)
        return fetches

    def _commit_times(self, from_lsn: Lsn, to_lsn: Lsn, tz: timedelta) -> dict[bytes, int]:
        """``{commit LSN: commit time in microseconds since the epoch (UTC)}`` of the window's transactions."""
        out = {}
        for lsn, when in self.conn.execute(COMMIT_TIMES, from_lsn.raw if from_lsn.available else b"\0" * 10,
                                           to_lsn.raw).fetchall():
            out[bytes(lsn)] = (when - tz - _EPOCH) // _MICRO if isinstance(when, datetime) else 0
        return out

    def _read(self, from_lsn: Lsn, to_lsn: Lsn, tz: timedelta) -> Iterator[list[RawChange]]:
        """Every instance's rows of the window as events, in commit order (merged when several have rows).

        The streaming hot path: rows go to ``ChangeRows`` a fetch (at most ``_BATCH`` rows) at a time,
        positions kept as raw bytes (the NULL LSN as b"", smallest, as Position.key() orders them).
        """
        times = self._commit_times(from_lsn, to_lsn, tz)
        live = [inst for inst in self.instances
                if max(from_lsn, inst.start_lsn, key=Lsn.key).key() <= to_lsn.key()]
        whole = len(live) > 1
        streams = [(inst.table, self._rows(inst, from_lsn, to_lsn, whole)) for inst in live]
        streams = [(t, rows) for t, rows in streams if rows != ()]
        if not streams:
            self.first_window = False
            return
        if len(streams) == 1:
            only: Table | None = streams[0][0]
            fetches: Iterable[list[tuple[Any, ...]]] = streams[0][1]
        else:
            # Each row carries its table as the last item while merged (ChangeRows leaves it out of the data).
            tagged = [[(*r, t) for fetch in rows for r in fetch] for t, rows in streams]
            only = None
            fetches = _fetches(heapq.merge(*tagged, key=_merge_key))
        if not self._emitted:
            # Resumed inside a transaction: the rest of it carries its commit time too (ChangeRows looks a commit's
            # time up when the commit changes, and the resumed commit is the one it starts with).
            self._ts_us = times.get(self._last_raw[0], self._ts_us)
        rows = ChangeRows(self.server, self.db, times, only, self._last_raw, (self._commit_text, self._change_text),
                          self.serial, self._ts_us, self.first_window, self.on_start.key(), self.on_start_serial)
        skipped_codes = self.skipped_codes
        for fetch in fetches:
            for i in range(0, len(fetch), _BATCH):
                chunk = fetch[i:i + _BATCH] if i or len(fetch) > _BATCH else fetch
                if skipped_codes:
                    chunk = [r for r in chunk if r[2] not in skipped_codes]
                batch = rows.convert(chunk)
                self._keep(rows)
                if batch:
                    yield batch
        if rows.pending is not None:
            raise ConnectorError(f"the update before image of a change at the end of window {to_lsn} was not "
                                 "followed by its after image (__$operation 4)")
        self.first_window = False

    def _keep(self, rows: ChangeRows) -> None:
        """Remember the last event's position (the offset, and where the next window starts)."""
        if rows.emitted:
            self._last_raw = (rows.commit, rows.change)
            self._commit_text, self._change_text, self.serial, self._ts_us = (rows.commit_text, rows.change_text,
                                                                               rows.serial, rows.ts_us)
            self._emitted = True


#: Rows per conversion (and at most events per yielded batch).
_BATCH = 2048


def _batches(cursor: Any, size: int) -> Iterator[list[tuple[Any, ...]]]:
    """A cursor's rows, fetched ``size`` at a time (``streaming.fetch.size``)."""
    while rows := cursor.fetchmany(size):
        yield rows


def _fetches(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    """Merged rows in lists of ``_BATCH``."""
    while chunk := list(islice(rows, _BATCH)):
        yield chunk
