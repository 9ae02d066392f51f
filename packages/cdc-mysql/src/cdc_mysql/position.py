"""MySQL's and MariaDB's log position: the binlog file/position and GTID set now, compared with an offset.

``current_position`` reads ``SHOW MASTER STATUS`` (file, position; MySQL's executed GTID set) and,
on MariaDB, ``@@global.gtid_binlog_pos``. Every transaction committed before the call has its
events before that file/position (the binlog is written at commit, whole transactions at a time)
and its GTID in that set.

Offsets (``cdc_mysql.streaming``): a change's offset holds ``file``/``pos`` of the start of its
transaction and ``gtids``, the transactions completed before it; a commit or idle checkpoint holds
the position after the last complete transaction (``event`` and ``row`` 0) and ``gtids`` including
it. So, with GTIDs on both sides, an offset reached the position when the position's set is
contained in the offset's: every transaction committed before the position was delivered, and a
change offset's own transaction (not in its set) committed after. Without GTIDs the same holds for
``(file number, pos) >= position``: a change's transaction starting at or after the position
committed after it; a checkpoint at or after it follows every transaction before it.
"""

from __future__ import annotations

from typing import Any

from cdc_core.config import Config
from cdc_mysql.gtid import MariaDbGtidSet, MySqlGtidSet


def binlog_key(file: str, pos: int) -> tuple[int, str, int]:
    """A sortable binlog position: the file's sequence number (``base.000042`` -> 42), the name, the position."""
    stem, _, number = str(file).rpartition(".")
    return (int(number), stem, int(pos)) if number.isdigit() else (0, str(file), int(pos))


def before(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True if binlog position ``a`` (``file``/``pos``) is before ``b``."""
    return binlog_key(a["file"], a["pos"])[::2] < binlog_key(b["file"], b["pos"])[::2]


def gtid_contains(outer: str, inner: str) -> bool:
    """True if every transaction of GTID set ``inner`` is in ``outer`` (MySQL sets or MariaDB positions)."""
    if ":" not in inner:
        return MariaDbGtidSet(outer).includes(MariaDbGtidSet(inner))
    return MySqlGtidSet(outer).includes(MySqlGtidSet(inner))


class MySqlLogPosition:
    """The LogPosition capability of the MySQL and MariaDB connectors (see ``cdc_core.spi.position``)."""

    def __init__(self, config: Config):
        self.config = config

    def current_position(self) -> dict[str, Any]:
        """``{"file", "pos", "gtids"}`` of the binlog now (``gtids`` None when GTIDs are off)."""
        from cdc_mysql.catalog import Catalog
        from cdc_mysql.chunks import connect

        conn = connect(self.config)
        try:
            file, pos, gtids = Catalog(conn).binlog_position()
        finally:
            conn.close()
        return {"file": file, "pos": pos, "gtids": gtids or None}

    def reached(self, offset: dict[str, Any] | None, position: dict[str, Any]) -> bool:
        """True once ``offset`` is past every transaction committed before ``position``."""
        if not offset or offset.get("snapshot") or offset.get("file") is None or offset.get("pos") is None:
            return False
        target, have = position.get("gtids"), offset.get("gtids")
        if target and have:
            return gtid_contains(have, target)
        return not before(offset, position)


#: The capability, found by ``cdc_core.spi.position.log_position_for``.
log_position = MySqlLogPosition
