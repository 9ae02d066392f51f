"""Read-only incremental snapshots (``read.only=true``, MY-18): executed GTID sets as chunk watermarks.

Nothing is written to the source. Before a chunk's read the low watermark is the server's executed
GTID set (MySQL ``@@global.gtid_executed``, MariaDB ``@@global.gtid_binlog_pos``), after it the
high watermark; the core (``cdc_core.incremental.positions``) opens a window at the first binlog
transaction not in the low set and closes it at the first one not in the high set, or at a
checkpoint whose ``gtids`` contain the whole high set (a commit, or an idle heartbeat).

MariaDB's ``gtid_binlog_pos`` holds only the last ``domain-server-seq`` of each domain. That is
enough for containment: sequence numbers grow monotonically within a domain, so a GTID is in the
set exactly when its seq is at most its domain's recorded seq (``MariaDbGtidSet.contains``).

MariaDB writes a transaction's GTID into ``gtid_binlog_pos`` when it writes the binlog, a moment
before the storage engine commit makes its rows visible; a transaction in the low set may so be
missing from the chunk. So MariaDB reads each chunk in ``START TRANSACTION WITH CONSISTENT
SNAPSHOT`` and records ``binlog_snapshot_file``/``binlog_snapshot_position``, the binlog position
that snapshot corresponds to exactly: a transaction at or after it is inside the window even when
the low GTID set contains it. MySQL adds a GTID to ``gtid_executed`` only after the engine commit,
so its low set alone is safe (Debezium's choice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from cdc_core.errors import ConnectorError

from cdc_mysql.config import READ_ONLY
from cdc_mysql.gtid import MariaDbGtidSet, MySqlGtidSet, gtid_set

GtidSet = MySqlGtidSet | MariaDbGtidSet


@dataclass(frozen=True)
class WatermarkDialect:
    """How one server family gives its executed GTID set and checks that GTIDs are on (data, not branches)."""

    gtid_format: str
    #: The executed GTID set: every transaction the server has logged.
    executed_query: str
    #: Whether chunks are read in a consistent snapshot whose exact binlog position the server reports.
    snapshot_position: bool
    #: The variable that is ON when GTIDs are enabled (None: always on).
    gtid_mode_variable: str | None
    #: Variables (parallel workers, preserve commit order); a multi-threaded replica must preserve commit order.
    replica_order_variables: tuple[tuple[str, str], ...] = ()


MYSQL = WatermarkDialect("mysql", "SELECT @@global.gtid_executed", False, "gtid_mode",
                         (("replica_parallel_workers", "replica_preserve_commit_order"),
                          ("slave_parallel_workers", "slave_preserve_commit_order")))
MARIADB = WatermarkDialect("mariadb", "SELECT @@global.gtid_binlog_pos", True, None)
#: By flavor name (``Flavor.name``).
DIALECTS = {"mysql": MYSQL, "mariadb": MARIADB}


class GtidWatermark(NamedTuple):
    """A watermark: an executed GTID set, and (MariaDB's low watermark) the chunk read's exact binlog position."""

    gtids: GtidSet
    file: str | None = None
    pos: int | None = None

    def __str__(self) -> str:
        where = f" (read at {self.file}:{self.pos})" if self.file is not None else ""
        return f"{self.gtids or '<no gtids>'}{where}"


class EventPosition(NamedTuple):
    """Where a binlog event is: its transaction's GTID and the event's file and position."""

    gtid: str
    file: str
    pos: int


def binlog_order(file: str, pos: int) -> tuple[int, str, int]:
    """A sort key of a binlog position: the file's number (``mariadb-bin.000012``), then the position."""
    number = file.rpartition(".")[2]
    return (int(number) if number.isdigit() else -1, file, int(pos))


def after(watermark: GtidWatermark, position: EventPosition) -> bool:
    """True if the transaction at ``position`` is not contained in ``watermark`` (it came later)."""
    if not watermark.gtids.contains(position.gtid):
        return True
    if watermark.file is not None and watermark.pos is not None:
        return binlog_order(position.file, position.pos) >= binlog_order(watermark.file, watermark.pos)
    return False


def contains_set(outer: GtidSet, inner: GtidSet) -> bool:
    """True if every transaction of ``inner`` is in ``outer`` (sets of one format)."""
    assert type(outer) is type(inner), (outer, inner)
    return outer.includes(inner)  # type: ignore[arg-type]


class StreamPositions:
    """The GTID sets checkpoints record, parsed once per distinct text (checkpoints repeat it while idle)."""

    def __init__(self, gtid_format: str):
        self.gtid_format = gtid_format
        self._text: str | None = None
        self._set: GtidSet = gtid_set(gtid_format)

    def executed(self, offset: dict[str, Any]) -> GtidSet:
        """The GTID set of transactions the stream completed, as ``offset`` records it."""
        text = offset.get("gtids") or ""
        if text != self._text:
            self._set = gtid_set(self.gtid_format, text)
            self._text = text
        return self._set

    def caught_up(self, watermark: GtidWatermark, offset: dict[str, Any]) -> bool:
        """True if the stream position of a checkpoint ``offset`` contains the whole ``watermark``."""
        return contains_set(self.executed(offset), watermark.gtids)


def event_position(change: Any) -> EventPosition | None:
    """The position of a binlog RawChange (None without a GTID: such an event moves no window)."""
    source = change.source
    gtid = source.get("gtid")
    if not gtid:
        return None
    return EventPosition(gtid, source.get("file") or "", int(source.get("pos") or 0))


def read_only_problem(dialect: WatermarkDialect, variable: Any, where: str) -> str | None:
    """Why ``read.only=true`` cannot work on this server (``variable(name)`` reads a global variable), or None."""
    if dialect.gtid_mode_variable is not None:
        mode = str(variable(dialect.gtid_mode_variable) or "OFF").upper()
        if mode != "ON":
            return (f"read.only: read-only incremental snapshots use executed GTID sets as watermarks, but "
                    f"gtid_mode is {mode} on {where}. Set gtid_mode=ON and enforce_gtid_consistency=ON on the "
                    "server, or set read.only=false (watermarks written to signal.data.collection).")
    for workers, order in dialect.replica_order_variables:
        count = variable(workers)
        if count is None:
            continue
        if int(count) > 0 and str(variable(order) or "OFF").upper() not in ("ON", "1"):
            return (f"read.only: {where} is a multi-threaded replica ({workers}={count}) without {order}=ON; "
                    f"read-only incremental snapshots need commits in order. Set {order}=ON, or read.only=false.")
        break
    return None


def check_read_only(catalog: Any, flavor: str, address: str, config: Any) -> None:
    """With ``read.only=true``, refuse a server whose GTIDs cannot serve as watermarks (ConnectorError naming it)."""
    if not config.get(READ_ONLY):
        return
    problem = read_only_problem(DIALECTS.get(flavor, MYSQL), catalog.variable, f"{flavor} at {address}")
    if problem is not None:
        raise ConnectorError(problem)
