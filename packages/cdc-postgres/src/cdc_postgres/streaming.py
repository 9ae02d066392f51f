"""Streaming: pgoutput messages from the replication connection turned into RawChange batches."""

from __future__ import annotations

import time
from struct import Struct
from struct import error as StructError
from typing import Any

from cdc_core.events import UNAVAILABLE, Checkpoint, RawChange, TransactionBegin
from cdc_core.relational import Table
from cdc_postgres.catalog import Catalog
from cdc_postgres.messages import MessageFilter, message_record
from cdc_postgres.pgoutput import (
    Begin, Commit, Delete, Insert, Message, Relation, StreamAbort, StreamCommit, StreamStart, StreamStop, Truncate,
    Update, decode, decode_insert, decode_streamed, insert_decoder,
)
from cdc_postgres.relations import relation_table
from cdc_postgres.replication import ReplicationConnection
from cdc_postgres.spill import SpilledTransaction
from cdc_postgres.source import CONNECTOR, DEBEZIUM_VERSION


#: Changes handed over per call while a committed streamed transaction is replayed.
REPLAY_CHUNK = 4096
#: Kinds that carry an xid inside a stream block (R, Y, I, U, D, T, M), and two of them.
_XID_PREFIXED = frozenset(b"RYIUDTM")
_RELATION, _TYPE, _INSERT, _UPDATE, _DELETE = ord("R"), ord("Y"), ord("I"), ord("U"), ord("D")
#: The row changes ``StreamReader._rows`` takes in one loop.
_ROW_KINDS = frozenset(b"IUD")
_new = tuple.__new__  # builds RawChanges without the NamedTuple's generated __new__
_INSERT_HEAD = Struct(">IxH").unpack_from  # an Insert's relation OID, its 'N' (skipped), its column count


class ResumePoint:
    """Where a restart resumes inside the log: skip what the stored offset says was acknowledged.

    The offset holds ``lsn_commit`` (the commit LSN of the transaction being processed, or the
    end LSN of the last completed one) and ``lsn_proc`` (the LSN of the last acknowledged change
    in that transaction, or None). A transaction committed before ``lsn_commit`` was fully
    processed; within the transaction at ``lsn_commit`` only changes after ``lsn_proc`` are new.
    """

    def __init__(self, offset: dict[str, Any] | None, last_commit: int | None = -1):
        self.commit = (offset or {}).get("lsn_commit") or 0
        self.proc = (offset or {}).get("lsn_proc")
        self.ts_us = (offset or {}).get("ts_usec")
        #: Debezium's lastCommitLsn at the start (source.sequence's first element until the first commit):
        #: the stored offset's, or ``last_commit`` where given (None on a new slot without a stored one).
        self.last_commit = (self.commit or None) if last_commit == -1 else last_commit

    def skip_transaction(self, commit_lsn: int) -> bool:
        """True if the whole transaction committing at ``commit_lsn`` was already processed."""
        return commit_lsn < self.commit

    def skip_change(self, commit_lsn: int, lsn: int) -> bool:
        """True if this change of a partly processed transaction was already acknowledged."""
        return commit_lsn == self.commit and self.proc is not None and lsn <= self.proc


class StreamReader:
    """Decodes XLogData into RawChanges for the captured tables, tracking transactions and relations."""

    def __init__(self, repl: ReplicationConnection, catalog: Catalog, tables: dict[int, Table],
                 server: str, db: str, resume: ResumePoint, log):
        self.repl = repl
        self.catalog = catalog
        self.tables = tables
        self.server = server
        self.db = db
        self.resume = resume
        self.log = log
        self._xid: int | None = None
        self._commit_lsn = 0
        self._ts_us = 0
        self._changes_in_tx = 0
        self._skip_tx = False
        # Debezium's lastCommitLsn (source.sequence's first element): where the last COMMIT message or
        # non-transactional logical decoding message was received (the commit's end LSN).
        self._last_commit_lsn: int | None = resume.last_commit
        #: The commit time of the last transaction: a non-transactional message's source.ts_ms.
        self._last_ts_us: int = resume.ts_us or time.time_ns() // 1000
        self._tx_id: str | None = None
        self._begun = False
        self._checkpointed = resume.commit
        self._last_idle = time.monotonic()
        #: How often to checkpoint even when the position did not move (for heartbeats).
        self.idle_interval = float("inf")
        #: How often to checkpoint a position that moved (read-only incremental snapshot windows close there).
        self.moved_interval = 1.0
        #: Which logical decoding messages to emit (None: none), and their topic.
        self.messages: MessageFilter | None = None
        self.message_topic = f"{server}.message"
        #: ``binary.handling.mode``, which the messages' ``content`` follows.
        self.binary_mode = "bytes"
        #: Where streamed transactions are spilled (None: the system's temp directory).
        self.spill_dir: str | None = None
        self._spills: dict[int, SpilledTransaction] = {}
        self._stream_xid: int | None = None
        self._replay = None
        self._backlog: list = []
        self._last_keepalive = time.monotonic()
        #: ``provide.transaction.metadata``: announce every transaction (BEGIN/END also without captured changes).
        self.transaction_metadata = False
        #: Changes and messages outside the table filters and message prefix lists (NumberOfEventsFiltered), and
        #: those skipped as already delivered (NumberOfSkippedEvents), since the connector last took them.
        self.filtered = 0
        self.skipped = 0
        #: Row changes take the one-loop path (``_rows``) unless a subclass changes ``_change`` (YugabyteDB's cells).
        self._fast_insert = type(self)._change is StreamReader._change
        #: The slot's catalog_xmin as last read (``xmin.fetch.interval.ms``): source.xmin and the offsets' xmin.
        self.xmin: int | None = None
        #: Worker processes for long runs of row changes (``cdc_postgres.stream_workers``; None: all decoded here).
        self.workers: Any = None
        #: Counts the Relation messages that changed a table (workers decode with the relations they were forked with).
        self.relations_version = 0
        self._received = 0

    def read(self, timeout: float) -> list[RawChange | Checkpoint]:
        """One batch: every message already received (waiting up to ``timeout`` for the first).

        With worker processes (``stream_workers``), batches waiting for a worker come first, in log order:
        while the oldest is not done and the workers have room, this reads on without waiting.
        """
        if self.workers is None:
            return self._read(timeout)
        batches = self.workers.batches
        if batches.queued and (batches.due() or self._replay is not None or self._backlog):
            return batches.pop(True)
        out = self._read(0.0 if batches.queued else timeout)
        if not batches.queued:
            return out
        batches.enqueue(out)
        return batches.pop(wait=not self._received)

    def _read(self, timeout: float) -> list[RawChange | Checkpoint]:
        """``read`` in this process: every message already received (waiting up to ``timeout`` for the first).

        A committed streamed transaction is replayed from its spill file first, a bounded chunk
        per call, and the messages that arrived after its commit wait until it is done.
        """
        out: list[RawChange | Checkpoint] = []
        if self._replay is not None:
            chunk = next(self._replay, None)
            if chunk is not None:
                self._keep_alive()
                return chunk
            self._replay = None
        if self._backlog:
            received, self._backlog = self._backlog, []
        else:
            received = self.repl.read(timeout)
        self._received = len(received)
        workers = self.workers
        if workers is not None and workers.holding and (
                (received[0].payload[0] not in _ROW_KINDS or self._stream_xid is not None) if received else timeout):
            # The held run ended (another message follows it) or nothing more came in ``timeout``: hand it over.
            out = workers.flush(out)
        append = out.append
        index, count = 0, len(received)
        while index < count:
            x = received[index]
            index += 1
            payload = x.payload
            if self._stream_xid is not None:
                if payload[0] in _XID_PREFIXED:
                    self._stream_message(x.data_start, payload)
                    continue
            elif self._fast_insert and payload[0] in _ROW_KINDS:  # the common case: a run of row changes
                if not self._skip_tx:
                    if self.workers is not None:
                        index, out = self.workers.take_run(received, index - 1, out)
                        append = out.append
                    else:
                        index = self._rows(received, index - 1, append)
                    continue
                if payload[0] == _INSERT:  # of a transaction processed before a restart (not decoded)
                    continue
            msg = decode(payload)
            cls = msg.__class__
            if cls is Insert or cls is Update or cls is Delete:
                if not self._skip_tx:
                    self._change(msg, x.data_start, append)
                else:
                    self.skipped += 1
            elif cls is Begin:
                self._begin(msg.xid, msg.final_lsn, msg.commit_ts_us)
                self._announce(x.data_start, append)
            elif cls is Commit:
                self._commit(x.data_start, append)
            elif cls is Truncate:
                if not self._skip_tx:
                    self._truncate(msg, x.data_start, append)
            elif cls is Message:
                if not msg.transactional:
                    self._last_commit_lsn = x.data_start
                if self.messages is None or not self.messages.includes(msg.prefix):
                    self.filtered += 1
                elif msg.transactional and self._skip_tx:
                    self.skipped += 1
                else:
                    self._message(msg, x.data_start, append)
            elif cls is Relation:
                self._relation(msg)
            elif cls is StreamStart:
                self._stream_xid = msg.xid
                if msg.xid not in self._spills:
                    self._spills[msg.xid] = SpilledTransaction(msg.xid, self.spill_dir)
            elif cls is StreamStop:
                self._stream_xid = None
            elif cls is StreamCommit:
                spill = self._spills.pop(msg.xid, None)
                if spill is not None:
                    self._replay = self._replay_spill(spill, msg)
                    self._backlog = received[index:]
                    return out
            elif cls is StreamAbort:
                spill = self._spills.get(msg.xid)
                if spill is not None:
                    if msg.subxid == msg.xid:
                        self._spills.pop(msg.xid).close()
                    else:
                        spill.abort_subtransaction(msg.subxid)
        if self._xid is None and not self._spills:
            self._idle_checkpoint(out)
        return out

    def idle_position(self) -> int | None:
        """Between transactions with nothing held back: the position everything before has been read up to
        (the server's sent position, or the last commit); None while a transaction is open or replayed."""
        if self._xid is not None or self._spills or self._replay is not None or self._backlog or (
                self.workers is not None and (self.workers.batches.queued or self.workers.holding)):
            return None
        return max(self.repl.server_wal_end, self._last_commit_lsn or 0, self._checkpointed)

    def _change(self, msg: Insert | Update | Delete, lsn: int, append) -> None:
        """One row change of the current transaction, unless acknowledged before a restart."""
        table = self.tables.get(msg.relation_oid)
        if table is None:
            self.filtered += 1
            return
        if self.resume.skip_change(self._commit_lsn, lsn):
            self.skipped += 1
            return
        cls = msg.__class__
        if cls is Insert:
            op, before, after = "c", None, msg.new
        elif cls is Update:
            # With REPLICA IDENTITY DEFAULT the old key arrives only when the key changed.
            op, before, after = "u", msg.old, msg.new
            if before is not None and UNAVAILABLE in after:
                after = _untoasted(after, before)
        else:
            op, before, after = "d", msg.old, None
        ts_us = self._ts_us
        source = self._source(table.id.schema, table.id.table, lsn, ts_us, True)
        offset = {"lsn_proc": lsn, "lsn_commit": self._commit_lsn, "lsn": lsn, "txId": self._xid, "ts_usec": ts_us}
        if self.xmin is not None:
            offset["xmin"] = self.xmin
        # As PostgresTransactionMonitor: the block's id is <txId>:<LSN of this change> (made only when written).
        event_id = f"{self._xid}:{lsn}" if self.transaction_metadata else None
        append(RawChange(table, op, before, after, source, offset, self._tx_id, event_id))
        self._changes_in_tx += 1

    def _rows(self, received: list, index: int, append, end: int | None = None) -> int:
        """``_change`` of each Insert, Update and Delete message from ``received[index]`` on (up to ``end``); the
        index after them.

        The streaming hot path: one loop for the run, what is the same for all its changes taken once
        (the transaction's fields, the resume check, the table and its source block, the offset), each
        change's source and offset a copy of the run's with its own LSN set (a dict copy is a third of
        the cost of building one), and an insert's tuple decoded by a function generated for its column
        count (updates and deletes through ``decode``). The RawChanges are ``_change``'s: same keys, same
        order, same values.
        """
        if end is None:
            end = len(received)
        tables = self.tables
        commit_lsn, resume = self._commit_lsn, self.resume
        proc = resume.proc if commit_lsn == resume.commit else None  # resume.skip_change where it applies
        ts_us, xid, tx_id = self._ts_us, self._xid, self._tx_id
        metadata = self.transaction_metadata
        last = self._last_commit_lsn
        sequence = f'["{last}","' if last else '[null,"'
        offset_of_run = self._with_xmin({"lsn_proc": None, "lsn_commit": commit_lsn, "lsn": None, "txId": xid,
                                         "ts_usec": ts_us})
        head, insert, update, delete = _INSERT_HEAD, _INSERT, _UPDATE, _DELETE
        seen_oid = seen_ncols = -1
        table = source_of_table = values = None
        made = 0
        try:
            while index < end:
                x = received[index]
                payload = x.payload
                kind = payload[0]
                if kind == insert:
                    index += 1
                    if payload.__class__ is not bytes:
                        payload = bytes(payload)
                    try:
                        oid, ncols = head(payload, 1)  # the relation, then (past 'N') the column count
                    except StructError:
                        oid, after = decode_insert(payload)  # raises the precise error
                    else:
                        if ncols != seen_ncols:
                            values, seen_ncols = insert_decoder(ncols), ncols
                        after = values(payload)  # checks the rest, as decode_insert
                    op, before = "c", None
                elif kind == update or kind == delete:
                    index += 1
                    msg = decode(payload)
                    oid, before = msg.relation_oid, msg.old
                    if kind == update:
                        # With REPLICA IDENTITY DEFAULT the old key arrives only when the key changed.
                        op, after = "u", msg.new
                        if before is not None and UNAVAILABLE in after:
                            after = _untoasted(after, before)
                    else:
                        op, after = "d", None
                else:
                    break
                if oid != seen_oid:
                    seen_oid, table = oid, tables.get(oid)
                    if table is not None:
                        tid = table.id
                        source_of_table = self._source(tid.schema, tid.table, None, ts_us, True)
                if table is None:
                    self.filtered += 1
                    continue
                lsn = x.data_start
                if proc is not None and lsn <= proc:
                    self.skipped += 1
                    continue
                source = source_of_table.copy()
                source["sequence"] = f'{sequence}{lsn}"]'
                source["lsn"] = lsn
                offset = offset_of_run.copy()
                offset["lsn_proc"] = offset["lsn"] = lsn
                append(_new(RawChange, (table, op, before, after, source, offset, tx_id,
                                        f"{xid}:{lsn}" if metadata else None)))
                made += 1
        finally:
            self._changes_in_tx += made
        return index

    def _begin(self, xid: int, commit_lsn: int, ts_us: int) -> None:
        self._xid = xid
        self._tx_id = f"{xid}:{commit_lsn}"
        self._commit_lsn = commit_lsn
        self._ts_us = self._last_ts_us = ts_us
        self._changes_in_tx = 0
        self._begun = False
        self._skip_tx = self.resume.skip_transaction(commit_lsn)

    def _announce(self, lsn: int, append) -> None:
        """With transaction metadata, the transaction's BEGIN, written ``<txId>:<LSN of the BEGIN message>``.

        As PostgresTransactionMonitor: the id carries the LSN the BEGIN message arrived with (since
        PostgreSQL 15 the LSN of the transaction's first published change or message, as pgoutput
        sends BEGIN only then), so a transaction with only a logical decoding message or a skipped
        TRUNCATE still gets BEGIN and END, with event_count 0.
        """
        if self.transaction_metadata and not self._skip_tx and not self._begun:
            self._begun = True
            append(TransactionBegin(self._tx_id, self._ts_us // 1000, f"{self._xid}:{lsn}"))

    def _commit(self, end_lsn: int, append) -> None:
        """The COMMIT message, received at the commit's end LSN (Debezium's lastCommitLsn from now on)."""
        if self._changes_in_tx or self._skip_tx or self._begun:
            # The transaction is complete: once acknowledged, confirm past its commit.
            append(Checkpoint(self._with_xmin({"lsn_proc": None, "lsn_commit": end_lsn, "lsn": end_lsn,
                                               "txId": self._xid, "ts_usec": self._ts_us}),
                              self._tx_id, self._ts_us // 1000, f"{self._xid}:{end_lsn}"))
            self._checkpointed = max(self._checkpointed, end_lsn)
        self._last_commit_lsn = end_lsn
        self._skip_tx = self._begun = False
        self._xid = self._tx_id = None

    # -- streamed (in-progress) transactions, protocol v2 --------------------------------------

    def _stream_message(self, lsn: int, payload) -> None:
        """A message inside a stream block: relations apply now; changes go to the spill file."""
        kind = payload[0]
        if kind == _RELATION:
            self._relation(decode_streamed(payload)[1])
        elif kind != _TYPE:
            self._spills[self._stream_xid].append(lsn, payload)

    def _replay_spill(self, spill: SpilledTransaction, commit: StreamCommit):
        """The committed streamed transaction's changes, in bounded chunks, then its checkpoint."""
        try:
            self._begin(commit.xid, commit.commit_lsn, commit.commit_ts_us)
            self.log.info("replaying streamed transaction %d: %d messages, %.1f MB spilled", commit.xid,
                          spill.messages, spill.bytes / 1e6)
            out: list[RawChange | Checkpoint] = []
            first = True
            for lsn, payload in spill.replay():
                if first:  # pgoutput sends a BEGIN with the first message's LSN (PostgreSQL 15+)
                    self._announce(lsn, out.append)
                    first = False
                subxid, msg = decode_streamed(payload)
                if subxid in spill.aborted:
                    continue
                if self._skip_tx:
                    self.skipped += 1
                    continue
                cls = msg.__class__
                if cls is Insert or cls is Update or cls is Delete:
                    self._change(msg, lsn, out.append)
                elif cls is Truncate:
                    self._truncate(msg, lsn, out.append)
                elif cls is Message:
                    if self.messages is not None and self.messages.includes(msg.prefix):
                        self._message(msg, lsn, out.append)
                    else:
                        self.filtered += 1
                if len(out) >= REPLAY_CHUNK:
                    yield out
                    out = []
            self._commit(commit.end_lsn, out.append)
            yield out
        finally:
            spill.close()

    def _keep_alive(self) -> None:
        """While replaying, keep confirming so the server's wal_sender_timeout does not end the session."""
        now = time.monotonic()
        if now - self._last_keepalive >= 5.0:
            self._last_keepalive = now
            self.repl.send_status()

    def close(self) -> None:
        """Delete the spill files of transactions still in progress."""
        for spill in self._spills.values():
            spill.close()
        self._spills.clear()
        if self.workers is not None:
            self.workers.close()

    def _source(self, schema: str, table: str, lsn: int, ts_us: int, tx: bool) -> dict[str, Any]:
        return {
            "version": DEBEZIUM_VERSION, "connector": CONNECTOR, "name": self.server,
            "ts_ms": ts_us // 1000, "snapshot": "false", "db": self.db,
            "sequence": f'["{self._last_commit_lsn}","{lsn}"]' if self._last_commit_lsn else f'[null,"{lsn}"]',
            "ts_us": ts_us, "ts_ns": ts_us * 1000, "schema": schema, "table": table,
            "txId": self._xid if tx else None, "lsn": lsn, "xmin": self.xmin,
        }

    def _with_xmin(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset`` with the slot's xmin, once one was read (as PostgresOffsetContext.getOffset)."""
        if self.xmin is not None:
            offset["xmin"] = self.xmin
        return offset

    def _truncate(self, msg: Truncate, lsn: int, append) -> None:
        """One ``op: t`` change per captured table (skipped by default through ``skipped.operations=t``)."""
        if self.resume.skip_change(self._commit_lsn, lsn):
            return
        for oid in msg.relation_oids:
            table = self.tables.get(oid)
            if table is None:
                continue
            source = self._source(table.id.schema or "", table.id.table, lsn, self._ts_us, True)
            offset = self._with_xmin({"lsn_proc": lsn, "lsn_commit": self._commit_lsn, "lsn": lsn,
                                      "txId": self._xid, "ts_usec": self._ts_us})
            append(RawChange(table, "t", None, None, source, offset, self._tx_id,
                             f"{self._xid}:{lsn}" if self.transaction_metadata else None))
            self._changes_in_tx += 1

    def _message(self, msg: Message, lsn: int, append) -> None:
        """An ``op: m`` record; a non-transactional message has no transaction.

        As PostgresStreamingChangeEventSource: a non-transactional message is its own commit (its
        LSN becomes the last commit LSN before its event is made), and it keeps the source time
        of the last transaction, as pgoutput sends it no commit time.
        """
        if msg.transactional:
            if self.resume.skip_change(self._commit_lsn, lsn):
                self.skipped += 1
                return
            ts_us = self._ts_us
            offset = self._with_xmin({"lsn_proc": lsn, "lsn_commit": self._commit_lsn, "lsn": lsn,
                                      "txId": self._xid, "ts_usec": ts_us})
            self._changes_in_tx += 1
        else:
            ts_us = self._last_ts_us
            offset = None  # outside any transaction: its position is confirmed with the next checkpoint
        source = self._source("", "", lsn, ts_us, msg.transactional)
        append(message_record(self.message_topic, msg.prefix, msg.content, source, offset, self.binary_mode))

    def _idle_checkpoint(self, out: list[RawChange | Checkpoint]) -> None:
        """Between transactions, checkpoint the server's sent position now and then.

        The walsender has decoded everything before it; a transaction still in progress commits
        after it and is not skipped. Confirming it lets the slot advance while the captured
        tables are idle and others write, so WAL does not pile up; the core turns such a
        checkpoint into a heartbeat when one is due.
        """
        now = time.monotonic()
        wal_end = self.repl.server_wal_end
        moved = wal_end > self._checkpointed
        if now - self._last_idle < (self.moved_interval if moved else self.idle_interval):
            return
        self._last_idle = now
        if moved or self.idle_interval != float("inf"):
            position = max(wal_end, self._checkpointed)
            self._checkpointed = position
            out.append(Checkpoint(self._with_xmin({"lsn_proc": None, "lsn_commit": position, "lsn": position,
                                                   "txId": None, "ts_usec": None})))

    def _relation(self, rel: Relation) -> None:
        """Encode the table's next changes with the Relation's column types (``cdc_postgres.relations``)."""
        current = self.tables.get(rel.oid)
        fresh = relation_table(rel, current, self.catalog)
        if fresh is None or fresh is current:
            return
        if current is not None:
            self.log.info("table %s changed; columns: %s", fresh.id,
                          ", ".join(f"{c.name} {c.type_name}" for c in fresh.columns))
        self.tables[rel.oid] = fresh
        self.relations_version += 1


def _untoasted(new: tuple, old: tuple) -> tuple:
    """The new row with each unchanged TOASTed value taken from the old row where that carries it.

    As PostgresChangeRecordEmitter.columnValues: the old tuple (REPLICA IDENTITY FULL sends it
    whole, TOASTed values included) is the source of values the new tuple leaves out.
    """
    return tuple(o if n is UNAVAILABLE and o is not None else n for n, o in zip(new, old))
