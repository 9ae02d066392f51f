"""SQL Server streaming benchmark on the stand-in: a change backlog through the connector vs a bare read of it.

A 5-column table on the stand-in (a throwaway PostgreSQL with SQL Server's CDC objects, filled by
its capture agent). ``--changes`` inserts (200k by default, in transactions of 1000 rows) are
captured first; then the clock runs (1) for the connector streaming the backlog through the
Engine (``snapshot.mode=no_data`` from the instance's start, every record serialized to JSON with
schemas and dropped), and (2) for a bare SELECT of the same change rows through the same pyodbc-shaped
connection (the T-SQL function query, rows fetched and dropped). Target: connector >= 0.5x bare.
``BENCH_NO_SERIALIZE=1`` leaves the JSON out (the records are built, not serialized).
Also printed: this process's CPU time per change on both sides (PostgreSQL's work is in neither),
steadier than the rates when the machine is loaded. What it measures is the connector's Python per
change, not SQL Server: the stand-in's translation and PostgreSQL serve both sides. Each
of ``--rounds`` (3) runs both on the same backlog; the medians are the result.
Usage: ``uv run python benchmarks/sqlserver_streaming.py [--changes N] [--rounds N]``.
"""

from __future__ import annotations

import time

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn

from change_table_backlog import SERIALIZE, arguments, drain, fill_backlog, read_all, rounds, throwaway_database

TABLE = ("CREATE TABLE dbo.bench (id INT NOT NULL PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), "
         "qty BIGINT, created DATETIME2(3))")


def main() -> None:
    """Fill the backlog, then alternate the connector and the bare read; print each round and the medians."""
    args = arguments()
    dbapi.install()
    with throwaway_database() as (pg, db):
        s = StandIn(pg, db)
        s.create_table(TABLE)
        s.enable_db()
        s.enable_table("dbo", "bench")
        fill_backlog(s, "dbo.bench", args.changes)
        config = s.properties(**{"snapshot.mode": "no_data", "max.iteration.transactions": 500})
        # Streaming from just above the instance's start LSN (as fn_cdc_increment_lsn): below the first change, and
        # above the oldest start LSN, as Debezium's check of a stored offset wants (at it, the offset counts as lost).
        start = int.from_bytes(bytes(s.execute("SELECT start_lsn FROM cdc.change_tables")[0][0]), "big") + 1
        start_lsn = start.to_bytes(10, "big")

        def connector() -> tuple[int, float]:
            store = MemoryOffsetStore()
            store.commit([({"server": "server1", "database": db},
                           {"commit_lsn": str(from_value(start_lsn)), "change_lsn": "NULL", "event_serial_no": 0})])
            return drain(config, store, args.changes, serialize=SERIALIZE)

        conn = dbapi.connect(f"Server={pg.host},{pg.port};Database={db};UID={pg.user};PWD=", autocommit=True)

        def bare() -> tuple[int, float]:
            started = time.monotonic()
            mn, mx = conn.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_bench'), sys.fn_cdc_get_max_lsn()").fetchone()
            cur = conn.execute("SELECT [__$start_lsn], [__$seqval], [__$operation], [id], [name], [amount], [qty], "
                               "[created] FROM cdc.[fn_cdc_get_all_changes_dbo_bench](?, ?, N'all update old') "
                               "ORDER BY [__$start_lsn], [__$seqval], [__$operation]", mn, mx)
            return read_all(cur), time.monotonic() - started

        rounds(args.rounds, connector, bare, serialize=SERIALIZE)
        s.agent.stop()


if __name__ == "__main__":
    main()
