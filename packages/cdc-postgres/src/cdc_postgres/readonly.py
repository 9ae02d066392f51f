"""Read-only incremental snapshots (``read.only=true``, PG-49): transaction snapshots and WAL positions as watermarks.

Nothing is written to the source: no signal table row, no transaction id is assigned (Debezium
calls ``pg_current_xact_id()`` once at the start of a snapshot, which assigns one and logs its
commit; cdc does not need it, see below). Each chunk is read in a ``REPEATABLE READ READ ONLY``
transaction whose first statement returns the read's own snapshot (``pg_current_snapshot()``:
xmin, xmax and the in-progress list) with the WAL insert position; after the read, the same
connection commits and returns the insert position again. The core
(``cdc_core.incremental.positions``) opens and closes the chunk's window from them:

* A watermark taken *by the read* (``Watermark.read``, the low one) contains a transaction when
  the read saw it: its commit record lies before the read's WAL position and its xid is visible
  in the read's snapshot (below xmin, or below xmax and not in the in-progress list). A
  transaction outside it opens the window. This is Debezium's rule made exact: Debezium opens a
  window at ``txId >= low.xmin``, i.e. also at transactions the read did see (harmless, only
  more READs dropped), and compares against a snapshot taken before the read rather than the
  read's own.
* A position taken *around* the read (``current_position``: before it, and the high watermark
  after it) contains every transaction whose commit record starts below it. The window closes
  before the first transaction committing at or past the high position, or at a checkpoint
  (a commit's end, or an idle position the walsender reports) at or past it. Debezium closes at
  ``txId > max(high.xmax, low.xmax)`` and, on a heartbeat, at ``txId == high.xmax`` or
  ``txId <= high.xmin``; xid order is not commit order, and an idle checkpoint carries no txId at
  all (``txId`` is None in cdc's idle checkpoints, and Debezium needs a fresh xid so its heartbeat
  has one to compare), so cdc compares WAL positions, which the stream reports in commit order:
  every transaction the read saw committed before the read's position, so once the stream is
  past the high position it has passed all of them, and any transaction it has not passed yet
  committed after the read, so its events may follow the chunk's READs.

A commit reaches the WAL a moment before snapshots see it (longer under synchronous replication,
which waits in between), so a transaction may commit below the read's position and still be
invisible to it. If the stream passed it before the window opened, the core finds it in its
lookback at the close (``PositionWindows.since`` walks back to the newest transaction the read saw;
the read's in-progress list also goes to ``ChunkRows.invisible``, which catches such a transaction
behind a later one the read did see). Left open: a transaction whose xid is at or past the read's
xmax, committed below its position but not yet visible, passed by the stream before the window
opened and followed in the WAL by one the read saw (a commit overtaken between its WAL record and
its visibility; Debezium's xid rules miss it as well).

Idle servers: a high watermark is reached when the stream reports a position at or past it, a
commit or an idle checkpoint (the walsender's keepalive position, everything before which was
decoded). In read-only mode the stream reports its idle position at least every
``IDLE_POSITION_S``, and every ``MOVED_POSITION_S`` while transactions it skips (tables it does not
capture) move it; after a window closed there, the core closes the next windows the reader
finishes at the same position while nothing new is logged (``close_idle``). Polling
``pg_current_snapshot()`` instead would say whether transactions finished, not whether the stream
has passed them: only a position from the stream tells that.

Positions are the WAL insert position (``pg_current_wal_insert_lsn()``): with
``synchronous_commit=off`` a commit is visible before it is written, so the write position could lag
a commit the read saw. At the start of a WAL page the insert position points past the page header,
where no record starts or ends, while the walsender reports the page boundary: such a position is
taken as the boundary (``normalize_lsn``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from cdc_core.errors import ConnectorError

from cdc_postgres import config as pgc

#: ``pg_current_snapshot()`` and ``pg_current_xact_id()`` appeared in PostgreSQL 13.
MIN_VERSION = 130000
#: The snapshot and the WAL insert position, in one row (the first statement of a read fixes its snapshot).
POSITION_QUERY = "SELECT pg_current_snapshot()::text, (pg_current_wal_insert_lsn() - '0/0')::bigint"
#: Most seconds between the stream's idle positions (checkpoints): on a server where nothing is logged, a chunk
#: window whose high watermark the stream already reached closes at the next one (a signal from the signal
#: table starts a snapshot at a commit, before any window is read; Debezium waits for a heartbeat there).
IDLE_POSITION_S = 1.0
#: Most seconds between the stream's positions while only transactions it skips are logged (tables it does not
#: capture): each position closes the windows whose high watermark it passed (the stream carries no commit
#: of its own to close them at; at the streamer's default 1 s a snapshot would close about 4 chunks a second).
MOVED_POSITION_S = 0.05
#: Sizes of the short and long (segment start) WAL page headers: no record starts or ends inside them.
_PAGE_HEADERS = (24, 40)
_XID_MASK = 0xFFFFFFFF


class PgSnapshot(NamedTuple):
    """``pg_current_snapshot()``: full (epoch-extended) xids: the oldest running, the next, those running between."""

    xmin: int
    xmax: int
    xip: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> PgSnapshot:
        """``xmin:xmax:xip,xip`` as PostgreSQL prints a snapshot."""
        xmin, xmax, xip = text.split(":")
        return cls(int(xmin), int(xmax), frozenset(int(x) for x in xip.split(",") if x))

    def full_xid(self, xid: int) -> int:
        """A 32-bit xid from the WAL stream as a full xid, taking the epoch nearest this snapshot."""
        full = (self.xmax & ~_XID_MASK) | (xid & _XID_MASK)
        if full > self.xmax + (1 << 31):
            full -= 1 << 32
        elif full < self.xmax - (1 << 31):
            full += 1 << 32
        return full

    def visible(self, xid: int) -> bool:
        """True if a committed transaction ``xid`` (32-bit) was visible to this snapshot."""
        full = self.full_xid(xid)
        return full < self.xmin or (full < self.xmax and full not in self.xip)

    def in_progress(self) -> frozenset[int]:
        """The xids this snapshot counted as running, 32-bit as the stream's ``source.txId``."""
        return frozenset(x & _XID_MASK for x in self.xip)

    def __str__(self) -> str:
        return f"{self.xmin}:{self.xmax}:{','.join(str(x) for x in sorted(self.xip))}"


class Watermark(NamedTuple):
    """A WAL insert position and the snapshot taken with it; ``read``: the chunk read's own snapshot (low)."""

    lsn: int
    snapshot: PgSnapshot
    read: bool = False

    def __str__(self) -> str:
        hi, lo = divmod(self.lsn, 1 << 32)
        return f"{hi:X}/{lo:X} (snapshot {self.snapshot}{', the read' if self.read else ''})"


class EventPosition(NamedTuple):
    """Where a WAL event's transaction is: its xid (32-bit) and the LSN of its commit record."""

    xid: int | None
    commit_lsn: int


def normalize_lsn(lsn: int, block_size: int) -> int:
    """``lsn`` moved back to its page boundary if it points just past a page header (see the module doc)."""
    within = lsn % block_size
    return lsn - within if within in _PAGE_HEADERS else lsn


def after(watermark: Watermark, position: EventPosition) -> bool:
    """True if the transaction at ``position`` is not contained in ``watermark`` (it came later)."""
    if position.commit_lsn >= watermark.lsn:
        return True
    return watermark.read and position.xid is not None and not watermark.snapshot.visible(position.xid)


def caught_up(watermark: Watermark, offset: dict[str, Any]) -> bool:
    """True if the stream position a checkpoint ``offset`` records is at or past ``watermark``'s WAL position.

    ``lsn_commit`` is a completed transaction's end, an idle position everything before which was
    decoded, or (inside a transaction) its commit's LSN: every earlier commit was streamed.
    """
    lsn = offset.get("lsn_commit")
    if lsn is None:
        lsn = offset.get("lsn")
    return lsn is not None and int(lsn) >= watermark.lsn


def event_position(change: Any) -> EventPosition | None:
    """The position of a streamed RawChange (None without a commit LSN: it moves no window)."""
    offset = change.offset
    if not offset:
        return None
    commit = offset.get("lsn_commit")
    if commit is None:
        return None
    return EventPosition(change.source.get("txId"), int(commit))


def read_only_problem(version_num: int, where: str) -> str | None:
    """Why ``read.only=true`` cannot work on a server of ``server_version_num`` ``version_num``, or None."""
    if version_num >= MIN_VERSION:
        return None
    major = str(version_num // 10000) if version_num >= 100000 else f"{version_num // 10000}.{version_num // 100 % 100}"
    return (f"read.only: read-only incremental snapshots use pg_current_snapshot() as watermarks, which needs "
            f"PostgreSQL 13 or later; {where} runs PostgreSQL {major} (server_version_num {version_num}). "
            "Upgrade the server, or set read.only=false (watermarks written to signal.data.collection).")


def check_read_only(conn: Any, config: Any, where: str) -> None:
    """With ``read.only=true``, refuse a server older than PostgreSQL 13 (a ConnectorError naming the property)."""
    if not config.get(pgc.READ_ONLY):
        return
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    problem = read_only_problem(version, where)
    if problem is not None:
        raise ConnectorError(problem)
