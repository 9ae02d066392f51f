"""``binlog.buffer.size``: Debezium's look-ahead buffer, holding a transaction's events until its COMMIT or ROLLBACK.

Debezium's ``EventBuffer`` (2.7, ``debezium-connector-binlog``) sits between the binlog client and
the event handlers. A transaction starts at ``BEGIN`` (MariaDB: a GTID event without the standalone
flag) and ends at ``COMMIT`` or an XID event; its events are held (the begin and end events count
towards the capacity) and, at the end:

- ``COMMIT``/XID: handed to the handlers in binlog order, exactly as without the buffer;
- ``ROLLBACK``: dropped, counting ``NumberOfRolledBackTransactions``. MariaDB writes such
  transactions when a non-transactional change cannot be undone (e.g. a MyISAM temporary table
  created in a transaction that then rolls back); the rows of transactional tables in it never
  happened, while the non-transactional ones did. Debezium drops the whole transaction, and so
  does cdc: no event of it is emitted (with ``binlog.buffer.size=0`` all its rows are streamed).
  ``ROLLBACK TO SAVEPOINT`` is not an end: the rows before it stream with the transaction's
  COMMIT, as in Debezium (and as MariaDB has kept them in the binlog);
- more events than the capacity: ``NumberOfLargeTransactions`` counts it, the held events are
  let go (memory stays bounded) and the rest is read ahead, unhandled, until the end. A COMMIT
  then rewinds the binlog client and handles the transaction from the binlog. Debezium hands the
  held events over and rewinds to the first one that did not fit; cdc rewinds to the
  transaction's start instead, which handles exactly the same events in the same order (and the
  offsets of a restart in between stay those of the unbuffered stream). A ROLLBACK drops it:
  Debezium's buffer streams nothing of a large transaction before its end either.

Not well formed (``NumberOfNotWellFormedTransactions``): a transaction starting while one is held
(the held one is handed over, as Debezium's ``completeTransaction(false)`` does), or a COMMIT/XID
or ROLLBACK without a start (e.g. streaming resumed from a position inside a transaction).

Debezium knows only BEGIN/COMMIT/XID/ROLLBACK; MariaDB's XA transactions (``XA START`` GTID …
``XA END``, ``XA PREPARE``) therefore stay held in its buffer until the next BEGIN and count as
not well formed. cdc ends them where its streamer does (``XA END``/``XA PREPARE``), so they are
neither delayed nor miscounted; ``XA COMMIT``/``XA ROLLBACK`` are groups of their own, passed on.

Every event still goes through the streamer's handlers: for a rolled-back transaction its begin and
ROLLBACK events (nothing between), so the offset moves past it and a restart does not replay it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pymysqlreplication.event import HeartbeatLogEvent, MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent

from cdc_mysql.binlog import BinlogStartPosition

#: MariaDB's GTID flag FL_STANDALONE: a group without BEGIN/COMMIT (DDL), not a transaction start.
MARIADB_STANDALONE = 0x01

#: What an event means to the buffer.
OTHER, BEGIN, COMMIT, ROLLBACK = 0, 1, 2, 3

#: Query statements (upper-cased, stripped) by what they mean; ``XA START``/``XA END``/``XA PREPARE`` by prefix.
_QUERY_KINDS = {"BEGIN": BEGIN, "COMMIT": COMMIT, "ROLLBACK": ROLLBACK}
_QUERY_PREFIXES = (("XA START", BEGIN), ("XA END", COMMIT), ("XA PREPARE", COMMIT))


def kind(ev: Any) -> int:
    """BEGIN, COMMIT, ROLLBACK or OTHER for one binlog event."""
    cls = ev.__class__
    if cls is XidEvent:
        return COMMIT
    if cls is MariadbGtidEvent:
        return OTHER if ev.flags & MARIADB_STANDALONE else BEGIN
    if cls is QueryEvent:
        statement = ev.query.strip().upper()
        found = _QUERY_KINDS.get(statement)
        if found is not None:
            return found
        for prefix, meaning in _QUERY_PREFIXES:
            if statement.startswith(prefix):
                return meaning
    return OTHER


class LookAhead:
    """Holds the events of each transaction until its end; drops rolled-back ones; rewinds for large ones."""

    def __init__(self, capacity: int, metrics: Any, log: Any, file: Callable[[], str],
                 rewind: Callable[[BinlogStartPosition], Iterator[Any]]):
        if capacity < 1:
            raise ValueError(f"binlog.buffer.size: the look-ahead buffer needs a capacity of 1 or more, not {capacity}")
        self.capacity = capacity
        #: ``cdc_mysql.metrics.BinlogMetrics`` (None: not counted).
        self.metrics = metrics
        self.log = log
        #: The binlog file the streamer is in (where the held transaction starts).
        self.file = file
        #: Reopens the binlog at a position; returns the new events.
        self.rewind = rewind
        self.reset()

    def reset(self) -> None:
        """Forget the open transaction (the binlog is being reopened where the streamer left off)."""
        self._held: list[Any] | None = None  # None: no transaction open
        self._begin: Any = None
        self._start: BinlogStartPosition | None = None
        self._count = 0
        self._full = False
        self._replay_until: int | None = None  # while replaying a large transaction: its end position

    def _count_metric(self, name: str) -> None:
        if self.metrics is not None:
            setattr(self.metrics, name, getattr(self.metrics, name) + 1)

    def events(self, source: Iterator[Any]) -> Iterator[Any]:
        """The events to handle, in binlog order, with rolled-back transactions left out."""
        while True:
            rewound = None
            for ev in source:
                if self._replay_until is not None:
                    yield ev
                    if ev.packet.log_pos == self._replay_until and ev.__class__ is not HeartbeatLogEvent:
                        self._replay_until = None
                    continue
                meaning = kind(ev)
                if meaning == OTHER:
                    if self._held is None or ev.__class__ is HeartbeatLogEvent or ev.__class__ is RotateEvent:
                        yield ev
                        continue
                    self._count += 1
                    if self._full:
                        continue
                    if self._count > self.capacity:
                        self._overflow(ev)
                        continue
                    self._held.append(ev)
                    continue
                if meaning == BEGIN:
                    if self._held is not None:
                        self._count_metric("not_well_formed_transactions")
                        self.log.warning("a transaction started at %s:%s while the one from %s had not ended; "
                                         "handing that one over", self.file(), _start_of(ev), self._start)
                        if self._full:
                            rewound = self._rewind_to(_start_of(ev))
                            break
                        yield from self._release()
                    self._open(ev)
                    continue
                if self._held is None:  # an end without a start
                    self._count_metric("not_well_formed_transactions")
                    if meaning == ROLLBACK:
                        self._count_metric("rolled_back_transactions")
                    self.log.warning("a transaction ended at %s:%s without having started in the binlog read",
                                     self.file(), _start_of(ev))
                    yield ev
                    continue
                self._count += 1
                if meaning == ROLLBACK:
                    self._count_metric("rolled_back_transactions")  # (Debezium never buffers the ROLLBACK itself)
                    begin = self._begin
                    self._close()
                    # Its start and end only: the offset moves past it; none of its changes are emitted.
                    yield begin
                    yield ev
                    continue
                if self._full:
                    rewound = self._rewind_to(ev.packet.log_pos)
                    break
                if self._count > self.capacity:  # the end did not fit: Debezium counts it large, nothing to reread
                    self._count_metric("large_transactions")
                self._held.append(ev)
                yield from self._release()
            if rewound is None:
                return
            source = rewound

    def _open(self, ev: Any) -> None:
        self._held = [ev]
        self._begin = ev
        self._start = BinlogStartPosition(self.file(), _start_of(ev))
        self._count = 1
        self._full = False

    def _close(self) -> None:
        self._held = None
        self._begin = None
        self._start = None
        self._count = 0
        self._full = False

    def _release(self) -> Iterator[Any]:
        held = self._held or []
        self._close()
        yield from held

    def _overflow(self, ev: Any) -> None:
        """More events than the capacity: let the held ones go, read ahead to the end, reread after a COMMIT."""
        self._count_metric("large_transactions")
        self.log.info("the transaction from %s has more than binlog.buffer.size=%d events (at %s:%s); reading "
                      "ahead to its end, it is reread from the binlog if it commits", self._start, self.capacity,
                      self.file(), _start_of(ev))
        self._full = True
        self._held = [self._begin]

    def _rewind_to(self, until: int) -> Iterator[Any]:
        """Reopen the binlog at the held transaction's start; pass its events on up to position ``until``."""
        start = self._start
        assert start is not None
        self._close()
        self._replay_until = until
        self.log.info("rereading the large transaction from %s up to position %d", start, until)
        return self.rewind(start)


def _start_of(ev: Any) -> int:
    """Where an event starts in its binlog file."""
    packet = ev.packet
    return packet.log_pos - packet.event_size
