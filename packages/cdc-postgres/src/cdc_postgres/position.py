"""PostgreSQL's log position: the WAL insert position now, compared with an offset's commit LSN.

Every transaction that committed before ``current_position`` has its commit record before the WAL
insert position read then (also with ``synchronous_commit=off``, whose commits are inserted but
maybe not yet flushed). The stream delivers transactions in commit order, so once an offset's
``lsn_commit`` is at or past that position, everything committed before it was delivered:

- a change offset (``lsn_proc`` set) belongs to the transaction whose commit record starts at
  ``lsn_commit``: at or past the position, that transaction committed after it;
- a commit checkpoint (``txId`` set, ``lsn_proc`` None) holds the end of the commit record: the
  transaction committed before the position exactly when that end is at or before it, and the
  checkpoint carries no change (with ``provide.transaction.metadata`` its END event, so then it
  must be strictly past);
- an idle checkpoint (no ``txId``) holds the walsender's position between transactions.
"""

from __future__ import annotations

from typing import Any

import psycopg

from cdc_core.config import Config
from cdc_core.config import common
from cdc_postgres import config as pgc
from cdc_postgres.replication import parse_lsn

_CURRENT = ("SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
            "ELSE pg_current_wal_insert_lsn() END)::text")


class PostgresLogPosition:
    """The LogPosition capability of the PostgreSQL connector (see ``cdc_core.spi.position``)."""

    def __init__(self, config: Config):
        self.config = config
        self.end_events = bool(config.get(common.PROVIDE_TRANSACTION_METADATA))

    def current_position(self) -> dict[str, Any]:
        """``{"lsn": <WAL insert LSN>}`` (the replay LSN on a standby)."""
        with psycopg.connect(pgc.conninfo(self.config), autocommit=True) as conn:
            text = conn.execute(_CURRENT).fetchone()[0]
        return {"lsn": parse_lsn(text)}

    def reached(self, offset: dict[str, Any] | None, position: dict[str, Any]) -> bool:
        """True once ``offset`` is past every transaction committed before ``position``."""
        if not offset or offset.get("snapshot"):
            return False
        commit = offset.get("lsn_commit")
        if commit is None:
            return False
        target = int(position["lsn"])
        if offset.get("lsn_proc") is None and offset.get("txId") is not None and self.end_events:
            return commit > target
        return commit >= target


#: The capability, found by ``cdc_core.spi.position.log_position_for``.
log_position = PostgresLogPosition
