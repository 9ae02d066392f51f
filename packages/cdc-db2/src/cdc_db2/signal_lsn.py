"""A USER signal's ``SIGNAL_LSN``: the log position of one moment, as the capture program saw it.

Inserted into ``<cdc.control.schema>.IBMSNAP_SIGNAL`` and committed, a ``USER`` signal is marked ``C``
by asncap when it reads that commit in the log, with ``SIGNAL_LSN`` the log sequence number of the
commit. Committed while the captured tables are locked against writers, it splits their changes
exactly: every one committed before the locks lies below it, every later one above it, whatever
asncap's lag (the highest synchpoint, Debezium's handoff, lags it). cdc-spark's chunks
(``cdc_db2.chunks``) and the ``exclusive`` snapshot (``cdc_db2.snapshot``) hand off there.
"""

from __future__ import annotations

import time
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_db2.lsn import from_value

#: ``SIGNAL_SUBTYPE`` of the snapshots' signals (``SIGNAL_INPUT_IN`` is the snapshot id).
SUBTYPE = "CDC_SNAPSHOT"


def signal_lsn(conn: Any, control: str, snapshot_id: str, timeout_s: float) -> str:
    """Insert and commit a USER signal on ``conn`` (autocommit) and wait up to ``timeout_s`` for asncap's
    ``SIGNAL_LSN`` of it; a ConnectorError naming the control schema when it does not come."""
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {control}.IBMSNAP_SIGNAL (SIGNAL_TYPE, SIGNAL_SUBTYPE, SIGNAL_INPUT_IN, "
                "SIGNAL_STATE) VALUES ('USER', ?, ?, 'P')", (SUBTYPE, snapshot_id))
    deadline = time.monotonic() + timeout_s
    pause = 0.02
    while True:
        cur.execute(f"SELECT SIGNAL_STATE, SIGNAL_LSN FROM {control}.IBMSNAP_SIGNAL "
                    "WHERE SIGNAL_TYPE = 'USER' AND SIGNAL_INPUT_IN = ?", (snapshot_id,))
        row = cur.fetchone()
        if row is not None and str(row[0]).strip() == "C" and row[1] is not None:
            return str(from_value(row[1]))
        if time.monotonic() > deadline:
            raise ConnectorError(
                f"the capture program did not complete the snapshot's USER signal {snapshot_id!r} in "
                f"{control}.IBMSNAP_SIGNAL within {timeout_s:.0f} s (is asncap running for "
                f"cdc.control.schema={control}?)")
        time.sleep(pause)
        pause = min(0.5, pause * 2)
