"""Db2 streaming benchmark on the stand-in: a change backlog through the connector vs a bare read of the same CD rows.

A 5-column table on the stand-in (a throwaway PostgreSQL with SQL Replication's ASN objects, filled
by its asncap-like agent). ``--changes`` inserts (200k by default, in transactions of 1000 rows) are
captured first; then the clock runs (1) for the connector streaming the backlog through the Engine
(from an offset at the table's registration, every record serialized to JSON with schemas and
dropped), and (2) for a bare SELECT of the same CD rows through the same ibm_db_dbi-shaped connection
(the connector's own CD-table query, rows fetched and dropped). Target: connector >= 0.5x bare.
``BENCH_NO_SERIALIZE=1`` leaves the JSON out. The process's CPU time per change is printed too. What it
measures is the connector's Python per change, not Db2: the stand-in's adaptation and PostgreSQL serve
both sides. Each of ``--rounds`` (3) runs both on the same backlog; the medians are the result.
Usage: ``uv run python benchmarks/db2_streaming.py [--changes N] [--rounds N]``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cdc_core.relational import Table, TableId
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.catalog import CaptureTable, Registration
from cdc_db2.lsn import from_value
from cdc_db2.standin import dbapi
from cdc_db2.standin.server import StandIn
from cdc_db2.streaming import change_query

from change_table_backlog import SERIALIZE, arguments, drain, fill_backlog, read_all, rounds, throwaway_database

COLUMNS = [("ID", "INTEGER NOT NULL"), ("NAME", "VARCHAR(40)"), ("AMOUNT", "DECIMAL(12,2)"), ("QTY", "BIGINT"),
           ("CREATED", "TIMESTAMP(3)")]


@contextmanager
def backlog(changes: int) -> Iterator[tuple[Any, str, StandIn, bytes]]:
    """``BENCH.ITEMS`` (COLUMNS) on a throwaway stand-in with ``changes`` inserts captured: (PostgreSQL, database,
    stand-in, the table's first synchpoint)."""
    dbapi.install()
    with throwaway_database() as (pg, db):
        s = StandIn(pg, db)
        s.create_table("BENCH", "ITEMS", COLUMNS, key=["ID"])
        s.add_table("BENCH", "ITEMS")
        fill_backlog(s, '"BENCH"."ITEMS"', changes)
        # Just below the first CD row's commit sequence (ADDTABLE leaves CD_OLD_SYNCHPOINT null, as Debezium's
        # script does): everything at or below an offset was delivered, the whole backlog is above it.
        first = bytes(s.execute('SELECT ibmsnap_commitseq FROM "ASNCDC"."CDC_BENCH_ITEMS" ORDER BY 1 LIMIT 1')[0][0])
        start = (int.from_bytes(first, "big") - 1).to_bytes(len(first), "big")
        yield pg, db, s, start


def bare_query(db: str) -> tuple[CaptureTable, str]:
    """``BENCH.ITEMS``'s capture and the connector's own CD-table query selecting every column (the bare read's)."""
    captured = CaptureTable(Table(TableId(db, "BENCH", "ITEMS"), [], ["ID"]),
                            Registration("BENCH", "ITEMS", "ASNCDC", "CDC_BENCH_ITEMS", True))
    query = change_query(captured, "ASNCDC").replace("u.IBMSNAP_LOGMARKER, ", "u.IBMSNAP_LOGMARKER, " + ", ".join(
        f'cd."{c}"' for c, _ in COLUMNS)).replace(", FROM", " FROM")
    return captured, query


def main() -> None:
    """Fill the backlog, then alternate the connector and the bare read; print each round and the medians."""
    args = arguments()
    with backlog(args.changes) as (pg, db, s, start):
        config = s.properties(**{"snapshot.mode": "no_data"})

        def connector() -> tuple[int, float]:
            store = MemoryOffsetStore()
            store.commit([({"server": "mydatabase"}, {"commit_lsn": str(from_value(start)), "change_lsn": "NULL",
                                                      "event_serial_no": 0})])
            return drain(config, store, args.changes, serialize=SERIALIZE)

        conn = dbapi.connect(f"DATABASE={db};HOSTNAME={pg.host};PORT={pg.port};PROTOCOL=TCPIP;", pg.user, "")
        _, query = bare_query(db)

        def bare() -> tuple[int, float]:
            started = time.monotonic()
            cur = conn.cursor()
            cur.execute("SELECT MAX(SYNCHPOINT) FROM ASNCDC.IBMSNAP_REGISTER")
            top = cur.fetchone()[0]
            cur.execute(query, (start, top))
            return read_all(cur), time.monotonic() - started

        rounds(args.rounds, connector, bare, serialize=SERIALIZE)
        s.agent.stop()


if __name__ == "__main__":
    main()
