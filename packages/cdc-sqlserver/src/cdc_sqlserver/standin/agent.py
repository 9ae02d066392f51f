"""The capture agent: turns committed transactions into change-table rows, as SQL Server Agent's capture job does.

It reads the source database's WAL through a logical replication slot (``test_decoding``), so
change rows are written after the commit, asynchronously, in commit order, one transaction at a
time: each captured transaction gets one 10-byte commit LSN (``__$start_lsn``, from the commit
record's WAL position), each change a ``__$seqval`` (its own WAL position), an update an op 3/4
pair (op 1/2 when it changed the primary key) and the transaction one ``cdc.lsn_time_mapping``
row, all written in one transaction. A capture instance sees transactions whose commit record is
at or after its ``start_lsn`` (the WAL insert position when it was enabled) only.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from cdc_postgres.standin.agent import COMMIT, SlotAgent, pg_lsn_bytes, pg_lsn_int
from cdc_postgres.standin.decoding import DecodedChange, parse_change
from cdc_sqlserver.standin.ddl import quote


def lsn_bytes(pg_lsn: str, slot: int = 0) -> bytes:
    """A PostgreSQL LSN (``X/Y``) as a 10-byte SQL Server LSN: 4 bytes of X, 4 of Y, 2 of ``slot``."""
    return pg_lsn_bytes(pg_lsn, slot, 2)


class Instance(NamedTuple):
    """A capture instance as the agent needs it."""

    name: str
    start_lsn: bytes
    columns: list[str]
    key: list[str]


class CaptureAgent(SlotAgent):
    """A thread polling the slot every ``interval`` seconds and writing change rows (SQL Server Agent's capture job)."""

    STATUS_TABLE = "standin.agent"
    THREAD = "capture-agent"

    def __init__(self, conninfo: str, slot: str, interval: float = 0.05, batch: int = 20000):
        """An agent for the slot ``slot`` of the database ``conninfo`` names."""
        super().__init__(conninfo, slot, interval, batch)
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """True while the polling thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def _instances(self, conn: psycopg.Connection) -> dict[tuple[str, str], list[Instance]]:
        """The capture instances by source table, with captured and key columns."""
        rows = conn.execute(
            "SELECT ct.capture_instance, ct.start_lsn, object_schema_name(ct.source_object_id), "
            "object_name(ct.source_object_id), ct.source_object_id, "
            "(SELECT array_agg(cc.column_name ORDER BY cc.column_ordinal) FROM cdc.captured_columns cc "
            " WHERE cc.object_id = ct.object_id) "
            "FROM cdc.change_tables ct").fetchall()
        out: dict[tuple[str, str], list[Instance]] = {}
        for name, start, schema, table, oid, columns in rows:
            key = [r[0] for r in conn.execute(
                "SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::oid AND i.indisprimary", (oid,)).fetchall()]
            out.setdefault((schema, table), []).append(Instance(name, bytes(start), list(columns or []), key))
        return out

    def poll(self, conn: psycopg.Connection) -> bool:
        """Capture every complete transaction the slot holds; True if a full batch was read (poll again at once)."""
        with self._lock:
            current = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
            rows = conn.execute(
                "SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes(%s, NULL, %s, "
                "'include-xids', '1', 'include-timestamp', '1', 'skip-empty-xacts', '1')",
                (self.slot, self.batch)).fetchall()
            conn.commit()
            instances = self._instances(conn) if rows else {}
            last_commit = None
            changes: list[tuple[str, DecodedChange]] = []
            begin_lsn = None
            for lsn, xid, data in rows:
                if data.startswith("BEGIN"):
                    changes, begin_lsn = [], lsn
                elif data.startswith("COMMIT"):
                    m = COMMIT.match(data)
                    assert m is not None
                    when = datetime.fromisoformat(m.group(2)).replace(tzinfo=None) if m.group(2) else None
                    self._capture(conn, instances, lsn, begin_lsn or lsn, int(xid), when, changes)
                    last_commit = lsn
                else:
                    change = parse_change(data, instances)
                    if change is not None:
                        changes.append((lsn, change))
            conn.commit()
            if last_commit is not None:
                conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self.slot, last_commit))
                conn.commit()
            full = len(rows) >= self.batch
            if not full:
                self.caught_up = max(self.caught_up, pg_lsn_int(current))
            return full

    def _capture(self, conn: psycopg.Connection, instances: dict[tuple[str, str], list[Instance]], commit: str,
                 begin: str, xid: int, when: datetime | None, changes: list[tuple[str, DecodedChange]]) -> None:
        """Write one committed transaction's change rows and its lsn_time_mapping row."""
        # No server-side prepared INSERTs: their parameter types are fixed when prepared, and an ALTER COLUMN
        # propagated to a change table (StandIn.alter_column) changes the column's type under them.
        conn.prepare_threshold = None
        commit_lsn = lsn_bytes(commit)
        rows: list[tuple[Instance, bytes, int, dict[str, Any]]] = []
        for lsn, change in changes:
            for inst in instances.get((change.schema, change.table), ()):
                # An instance holds every change committed at or after its start LSN (SQL Server's change tables: what
                # Debezium relies on when it reads an older instance up to the newer one's start LSN and this one on).
                if commit_lsn < inst.start_lsn or change.kind == "TRUNCATE":
                    continue
                seqval = lsn_bytes(lsn, 1)  # slot 1: above the previous commit record at the same WAL position
                if change.kind == "INSERT":
                    rows.append((inst, seqval, 2, change.new or {}))
                elif change.kind == "DELETE":
                    rows.append((inst, seqval, 1, change.old or {}))
                else:
                    old = change.old if change.old is not None else change.new or {}
                    new = change.new or {}
                    key_changed = any(old.get(k) != new.get(k) for k in inst.key)
                    rows.append((inst, seqval, 1 if key_changed else 3, old))
                    rows.append((inst, seqval, 2 if key_changed else 4, new))
        if not rows:
            return
        if conn.execute("SELECT 1 FROM cdc.lsn_time_mapping WHERE start_lsn = %s", (commit_lsn,)).fetchone():
            return  # captured before the slot was advanced (an agent crash in between)
        by_instance: dict[str, list[tuple[Any, ...]]] = {}
        for inst, seqval, op, values in rows:
            mask = bytes([0xFF] * ((len(inst.columns) + 7) // 8))
            by_instance.setdefault(inst.name, []).append((commit_lsn, seqval, op, mask,
                                                          *[values.get(c) for c in inst.columns]))
        for name, params in by_instance.items():
            cols = next(i.columns for i, *_ in rows if i.name == name)
            names = "".join(", " + quote(c) for c in cols)
            with conn.cursor() as cur:
                cur.executemany(
                    f'INSERT INTO cdc.{quote(name + "_CT")} ("__$start_lsn", "__$end_lsn", "__$seqval", '
                    f'"__$operation", "__$update_mask", "__$command_id"{names}) '
                    f"VALUES (%s, NULL, %s, %s, %s, 1{', %s' * len(cols)})", params)
        conn.execute("INSERT INTO cdc.lsn_time_mapping VALUES (%s, %s, %s, %s, %s)",
                     (commit_lsn, when, when, xid.to_bytes(10, "big"), lsn_bytes(begin)))
