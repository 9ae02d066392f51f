"""The capture agent: turns committed transactions into CD rows, as SQL Replication's asncap does.

It reads the database's WAL through a logical replication slot (``test_decoding``), so CD rows
are written after the commit, asynchronously, in commit order, one transaction at a time. Each
captured transaction gets one 16-byte ``IBMSNAP_COMMITSEQ`` (its commit record's WAL position,
then 8 zero bytes), each row change an ``IBMSNAP_INTENTSEQ`` (its own WAL position, then its
number in the transaction), an update a ``D`` row and an ``I`` row with adjacent intent
sequences (``CHG_UPD_TO_DEL_INS='Y'``, as on LUW), and the transaction one ``IBMSNAP_UOW`` row
(the commit time as ``IBMSNAP_LOGMARKER``). The register's synchpoints move in the same
transaction, as does a USER signal inserted into ``IBMSNAP_SIGNAL`` (state ``C``, ``SIGNAL_LSN``
the commit sequence of the transaction that inserted it). Only ACTIVE registered tables are
captured, from their registration on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

import psycopg
from psycopg import sql

from cdc_postgres.standin.agent import COMMIT, SlotAgent, pg_lsn_bytes, pg_lsn_int
from cdc_postgres.standin.decoding import DecodedChange, parse_change


def seq(pg_lsn: str, n: int = 0) -> bytes:
    """A PostgreSQL LSN (``X/Y``) as a 16-byte sequence: 4 bytes of X, 4 of Y, 8 of ``n``."""
    return pg_lsn_bytes(pg_lsn, n, 8)


#: How test_decoding starts a row inserted into the signal table (asncap reads those from the log).
_SIGNAL_INSERT = "table asncdc.ibmsnap_signal: INSERT:"


class Registered(NamedTuple):
    """A table in capture mode as the agent needs it."""

    cd_table: str
    start: bytes
    columns: list[str]
    #: ``CHG_UPD_TO_DEL_INS``: 'Y' records an update as a D and an I row (LUW), 'N' as one U row (z/OS).
    delete_insert: bool = True


class CaptureAgent(SlotAgent):
    """A thread polling the slot every ``interval`` seconds and writing CD rows (``asncap capture_schema=asncdc``)."""

    STATUS_TABLE = "standin.asncap"
    THREAD = "asncap"

    def _registered(self, conn: psycopg.Connection) -> dict[tuple[str, str], Registered]:
        """The ACTIVE tables in capture mode, with their CD table's source columns."""
        rows = conn.execute(
            "SELECT r.source_owner, r.source_table, r.cd_table, s.start_lsn, r.chg_upd_to_del_ins = 'Y', "
            "(SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a "
            "  WHERE a.attrelid = format('%I.%I', 'ASNCDC', r.cd_table)::regclass AND a.attnum > 3 "
            "  AND NOT a.attisdropped) "
            "FROM asncdc.ibmsnap_register r JOIN standin.capture_start s ON s.source_owner = r.source_owner "
            "AND s.source_table = r.source_table WHERE r.state = 'A' AND r.source_owner <> ''").fetchall()
        return {(s, t): Registered(cd, bytes(start), list(cols or []), di) for s, t, cd, start, di, cols in rows}

    def poll(self, conn: psycopg.Connection) -> bool:
        """Capture every complete transaction the slot holds; True if a full batch was read (poll again at once)."""
        current = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        rows = conn.execute(
            "SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes(%s, NULL, %s, "
            "'include-xids', '1', 'include-timestamp', '1', 'skip-empty-xacts', '1')",
            (self.slot, self.batch)).fetchall()
        conn.commit()
        registered = self._registered(conn)
        last_commit = None
        changes: list[tuple[str, DecodedChange]] = []
        signals: list[dict[str, object]] = []
        for lsn, xid, data in rows:
            if data.startswith("BEGIN"):
                changes, signals = [], []
            elif data.startswith("COMMIT"):
                m = COMMIT.match(data)
                assert m is not None
                when = datetime.fromisoformat(m.group(2)).replace(tzinfo=None) if m.group(2) else None
                self._capture(conn, registered, lsn, int(xid), when, changes)
                self._signals(conn, lsn, signals)
                last_commit = lsn
            else:
                change = parse_change(data, registered)
                if change is not None:
                    changes.append((lsn, change))
                elif data.startswith(_SIGNAL_INSERT):
                    signal = parse_change(data)
                    if signal is not None and signal.new is not None:
                        signals.append(signal.new)
        full = len(rows) >= self.batch
        # The synchpoint: every transaction committed below it is in the CD tables.
        synch = seq(last_commit) if full and last_commit else seq(current)
        conn.execute("UPDATE asncdc.ibmsnap_register SET synchpoint = %s, synchtime = now() AT TIME ZONE 'UTC' "
                     "WHERE synchpoint IS NULL OR synchpoint < %s", (synch, synch))
        conn.commit()
        if last_commit is not None:
            conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self.slot, last_commit))
            conn.commit()
        if not full:
            self.caught_up = max(self.caught_up, pg_lsn_int(current))
        return full

    def _signals(self, conn: psycopg.Connection, commit: str, signals: list[dict[str, object]]) -> None:
        """Mark the transaction's pending USER signals complete at its commit sequence, as asncap does."""
        for signal in signals:
            if signal.get("signal_type") == "USER" and signal.get("signal_state") == "P":
                conn.execute("UPDATE asncdc.ibmsnap_signal SET signal_state = 'C', signal_lsn = %s "
                             "WHERE signal_time = %s::timestamp AND signal_state = 'P'",
                             (seq(commit), signal.get("signal_time")))

    def _capture(self, conn: psycopg.Connection, registered: dict[tuple[str, str], Registered], commit: str,
                 xid: int, when: datetime | None, changes: list[tuple[str, DecodedChange]]) -> None:
        """Write one committed transaction's CD rows, its IBMSNAP_UOW row and the new synchpoints."""
        commitseq = seq(commit)
        rows: dict[str, list[tuple[Any, ...]]] = {}
        n = 0
        for lsn, change in changes:
            reg = registered.get((change.schema, change.table))
            if reg is None or commitseq <= reg.start or change.kind == "TRUNCATE":
                continue
            images = []
            if change.kind == "INSERT":
                images.append(("I", change.new or {}))
            elif change.kind == "DELETE":
                images.append(("D", change.old or {}))
            elif reg.delete_insert:  # an update: the before image deleted, the after image inserted
                images.append(("D", change.old if change.old is not None else change.new or {}))
                images.append(("I", change.new or {}))
            else:  # an update as one U row with the after image
                images.append(("U", change.new or {}))
            for op, values in images:
                n += 1
                rows.setdefault(reg.cd_table, []).append(
                    (commitseq, seq(lsn, n), op, *[values.get(c) for c in reg.columns]))
        if not rows:
            return
        if conn.execute("SELECT 1 FROM asncdc.ibmsnap_uow WHERE ibmsnap_commitseq = %s", (commitseq,)).fetchone():
            return  # captured before the slot was advanced (an agent crash in between)
        for cd_table, params in rows.items():
            cols = next(r.columns for r in registered.values() if r.cd_table == cd_table)
            statement = sql.SQL("INSERT INTO {} (ibmsnap_commitseq, ibmsnap_intentseq, ibmsnap_operation{}) "
                                "VALUES (%s, %s, %s{})").format(
                sql.Identifier("ASNCDC", cd_table), sql.SQL("").join(sql.SQL(", ") + sql.Identifier(c) for c in cols),
                sql.SQL(", %s" * len(cols)))
            with conn.cursor() as cur:
                cur.executemany(statement, params)
            conn.execute("UPDATE asncdc.ibmsnap_register SET cd_new_synchpoint = %s WHERE cd_table = %s",
                         (commitseq, cd_table))
        conn.execute("INSERT INTO asncdc.ibmsnap_uow (ibmsnap_uowid, ibmsnap_commitseq, ibmsnap_logmarker, "
                     "ibmsnap_authid) VALUES (%s, %s, %s, current_user)",
                     (xid.to_bytes(10, "big"), commitseq, when or datetime.utcnow()))
