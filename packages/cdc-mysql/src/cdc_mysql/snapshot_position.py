"""The binlog position of a consistent-snapshot transaction, read so that another session's cannot be taken for it."""

from __future__ import annotations

from typing import Any

from cdc_core.errors import ConnectorError


def status_position(cur: Any) -> tuple[str, int] | None:
    """MariaDB's (and Percona's) binlog position of the current consistent-snapshot transaction, if the server has it.

    One reading can be another session's: see ``snapshot_with_position``.
    """
    cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
    status = {str(k).lower(): v for k, v in cur.fetchall()}
    file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
    return (str(file), int(pos)) if file else None


#: The server-wide named lock our readers take around reading their snapshot position (``snapshot_with_position``).
POSITION_LOCK = "cdc.binlog_snapshot_position"
#: Readings of ``binlog_snapshot_*`` that must agree, and snapshots tried, before a reader trusts a position.
POSITION_READINGS, POSITION_ATTEMPTS = 3, 10


def snapshot_with_position(conn: Any, cur: Any, lock_timeout_s: int) -> tuple[str, int] | None:
    """Start a consistent-snapshot transaction; its binlog position from ``binlog_snapshot_*`` (None: no such status).

    The server fills ``binlog_snapshot_file``/``_position`` for SHOW STATUS into process-wide
    variables, from the calling session's snapshot, without a lock held until they are copied into
    the result (MariaDB 10.11's ``TC_LOG_BINLOG::set_status_variables``). A SHOW STATUS running at
    the same moment in another session (another chunk reader, a monitoring agent) then makes this
    one read *that* session's position: a chunk reported later than its rows loses the changes in
    between (the handoff drops them as already read), one reported earlier gets changes twice.

    So our readers take the position one at a time (the named lock ``POSITION_LOCK``, server-wide,
    so also across processes and executors), and a position counts only when several readings in
    the same transaction agree (the snapshot's own value never changes; a clobbered reading is a
    value the other session had at that moment). A disagreement starts a new snapshot.
    """
    cur.execute("SELECT GET_LOCK(%s, %s)", (POSITION_LOCK, lock_timeout_s))
    locked = cur.fetchone()[0] == 1  # not got in time: still checked by the readings below
    try:
        for _ in range(POSITION_ATTEMPTS):
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            readings = {status_position(cur) for _ in range(POSITION_READINGS)}
            if len(readings) == 1:
                return readings.pop()
            conn.rollback()
        raise ConnectorError(f"the server's binlog_snapshot_position changed between readings in one transaction "
                             f"{POSITION_ATTEMPTS} times (other sessions reading SHOW STATUS at the same time)")
    finally:
        if locked:
            cur.execute("SELECT RELEASE_LOCK(%s)", (POSITION_LOCK,))
            cur.fetchall()
