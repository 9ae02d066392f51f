"""The end of the database's transaction log as an LSN (``sys.dm_db_log_stats``): where an exact handoff stands.

``fn_cdc_get_max_lsn()`` is the last transaction the capture job has copied into the change tables, so it
lags: a transaction committed a moment ago may not be there yet. The end of the log does not: every
transaction committed before it was read has its commit record below it. Read while the tables a
reader reads are locked against writers, it splits their changes exactly into those in the rows read
(below it) and those after (above it), whatever the capture job's lag (cdc-spark's chunks, and the
``exclusive`` snapshot: ``cdc_sqlserver.snapshot``).
"""

from __future__ import annotations

from typing import Any

from cdc_core.errors import ConnectorError
from cdc_sqlserver.lsn import Lsn

#: The end of the log: the LSN of its last record (``nvarchar(24)``, ``xxxxxxxx:xxxxxxxx:xxxx``).
LOG_END = "SELECT log_end_lsn FROM sys.dm_db_log_stats(DB_ID())"
#: What reading it needs, for the messages.
PERMISSION = "VIEW DATABASE STATE (VIEW DATABASE PERFORMANCE STATE from SQL Server 2022) on the database"


def log_end(conn: Any) -> str:
    """``log_end_lsn`` as an LSN text (hexadecimal parts; also taken in the decimal form of some DMVs); a
    ConnectorError naming the permission when the server gives none."""
    row = conn.execute(LOG_END).fetchone()
    text = str(row[0]).strip() if row and row[0] is not None else ""
    if ":" in text:
        vlf, block, slot = (int(p, 16) for p in text.split(":"))
    elif text.isdigit():  # numeric(25,0): vlf * 10^15 + block * 10^5 + slot
        value = int(text)
        vlf, block, slot = value // 10**15, value // 10**5 % 10**10, value % 10**5
    else:
        raise ConnectorError(f"sys.dm_db_log_stats gave no log_end_lsn ({text!r}); reading the end of the log needs "
                             f"{PERMISSION}")
    return str(Lsn(vlf.to_bytes(4, "big") + block.to_bytes(4, "big") + slot.to_bytes(2, "big")))
