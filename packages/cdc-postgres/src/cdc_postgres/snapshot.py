"""The initial snapshot: every captured table read with COPY inside the slot's exported snapshot."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
from psycopg import sql

from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_postgres.copytext import parse_row
from cdc_postgres.source import sequence, source_block


class SnapshotReader:
    """Reads tables in one REPEATABLE READ transaction that uses an exported snapshot.

    The slot created with that snapshot starts streaming exactly at the snapshot's consistent
    point, so nothing is lost or duplicated at the handoff.
    """

    def __init__(self, conn: psycopg.Connection, server: str, db: str, consistent_point: int, fetch_size: int, log):
        self.conn = conn
        self.server = server
        self.db = db
        self.lsn = consistent_point
        self.fetch_size = fetch_size
        self.log = log
        self.tx_id: int | None = None
        self.stopped = False

    def begin(self, snapshot_name: str | None) -> None:
        """Open the snapshot transaction, on the exported snapshot if there is one."""
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        if snapshot_name:
            self.conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot_name)))
        row = self.conn.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())").fetchone()
        self.tx_id = int(row[0]) if row else None

    def end(self) -> None:
        """Close the snapshot transaction."""
        self.conn.execute("COMMIT")

    def _offset(self, last: bool) -> dict:
        return {"snapshot": True, "last_snapshot_record": last, "lsn": self.lsn, "txId": self.tx_id,
                "ts_usec": time.time_ns() // 1000}

    def read(self, tables: list[Table]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield batches of ``op: r`` changes, table by table; the last batch ends with the completion checkpoint.

        ``source.snapshot`` is ``first`` for the first record, ``first_in_data_collection`` /
        ``last_in_data_collection`` at each table's edges, ``last`` for the very last, ``true`` otherwise.
        """
        seq = sequence(None, self.lsn)
        pending: RawChange | None = None  # one record held back, to mark the very last one
        batch: list[RawChange | Checkpoint] = []
        first_overall = True
        for table in tables:
            if self.stopped:
                return
            started = time.monotonic()
            ts_us = time.time_ns() // 1000
            schema, name = table.id.schema or "", table.id.table
            rows = 0
            query = sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT").format(
                sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns),
                sql.Identifier(schema, name),
            )
            prev: RawChange | None = None
            with self.conn.cursor() as cur, cur.copy(query) as copy:
                for data in copy:
                    values = parse_row(bytes(data).decode("utf-8").rstrip("\n"))
                    marker = "first" if first_overall else ("first_in_data_collection" if prev is None else "true")
                    first_overall = False
                    if prev is not None:
                        if pending is not None:
                            batch.append(pending)
                        pending = prev
                    prev = RawChange(table, "r", None, values,
                                     source_block(self.server, self.db, ts_us, marker, schema, name, self.tx_id, self.lsn, seq),
                                     self._offset(False))
                    rows += 1
                    if len(batch) >= self.fetch_size:
                        yield batch
                        batch = []
                        if self.stopped:
                            return
            if prev is not None:
                if pending is not None:
                    batch.append(pending)
                if prev.source["snapshot"] == "true":
                    prev.source["snapshot"] = "last_in_data_collection"
                pending = prev
            self.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started)
        if pending is not None:
            pending.source["snapshot"] = "last"
            pending.offset["last_snapshot_record"] = True
            batch.append(pending)
        batch.append(Checkpoint({"lsn": self.lsn, "lsn_commit": self.lsn, "lsn_proc": None,
                                 "txId": self.tx_id, "ts_usec": time.time_ns() // 1000}))
        yield batch
