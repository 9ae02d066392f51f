"""SQL Server's log position: ``sys.fn_cdc_get_max_lsn()`` now, compared with an offset's commit LSN.

The change tables hold what the capture job has written; the max LSN is the commit LSN of the last
transaction it wrote, so "what exists now" (Spark's ``Trigger.AvailableNow``) is every change up to
it. The stream delivers transactions in commit order, so:

- a change offset belongs to the transaction committed at its ``commit_lsn``: past the position
  only when that LSN is above it (a change of the position's own transaction must still be read);
- an idle checkpoint carries ``caught_up_lsn``, the end of the window its poll read with nothing
  left (``cdc_sqlserver.streaming.StreamReader.idle_offset``): at or above the position, every
  change up to it was delivered, and the checkpoint closes no change.

A transaction committed before ``current_position`` but not yet written by the capture job comes
after the position, as it would for Debezium.
"""

from __future__ import annotations

from typing import Any

from cdc_core.config import Config
from cdc_sqlserver import config as msc
from cdc_sqlserver import odbc
from cdc_sqlserver.lsn import Lsn, from_value
from cdc_sqlserver.streaming import CAUGHT_UP


class SqlServerLogPosition:
    """The LogPosition capability of the SQL Server connector (see ``cdc_core.spi.position``)."""

    def __init__(self, config: Config):
        """No I/O."""
        self.config = config
        names = config.get(msc.NAMES) or []
        self.db = names[0] if names else ""

    def current_position(self) -> dict[str, Any]:
        """``{"lsn": <sys.fn_cdc_get_max_lsn() as text>}`` (``NULL`` before the first captured change)."""
        conn = odbc.connect(self.config, self.db)
        try:
            row = conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()
        finally:
            conn.close()
        return {"lsn": str(from_value(row[0] if row else None))}

    def reached(self, offset: dict[str, Any] | None, position: dict[str, Any]) -> bool:
        """True once ``offset`` is past every change captured up to ``position`` (module docstring)."""
        if not offset or (offset.get("snapshot") and not offset.get("snapshot_completed")):
            return False
        target = Lsn.parse(position.get("lsn"))
        if not target.available:
            return True  # nothing was captured when the position was taken
        caught_up = offset.get(CAUGHT_UP)
        if caught_up is not None and Lsn.parse(caught_up).key() >= target.key():
            return True
        if offset.get("snapshot"):
            return False  # the snapshot's own offset: streaming has not polled yet
        commit = Lsn.parse(offset.get("commit_lsn"))
        return commit.available and commit.key() > target.key()


#: The capability, found by ``cdc_core.spi.position.log_position_for``.
log_position = SqlServerLogPosition
