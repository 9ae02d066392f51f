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
change, not SQL Server: the stand-in's translation and PostgreSQL serve both sides. Usage: ``uv run python benchmarks/sqlserver_streaming.py [--changes N]``.
"""

from __future__ import annotations

import time

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn

from change_table_backlog import (SERIALIZE, changes_argument, drain, fill_backlog, read_all, report,
                                  throwaway_database)

TABLE = ("CREATE TABLE dbo.bench (id INT NOT NULL PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), "
         "qty BIGINT, created DATETIME2(3))")


def main() -> None:
    """Run the benchmark and print the rates."""
    changes = changes_argument()
    dbapi.install()
    with throwaway_database() as (pg, db):
        s = StandIn(pg, db)
        s.create_table(TABLE)
        s.enable_db()
        s.enable_table("dbo", "bench")
        fill_backlog(s, "dbo.bench", changes)
        start_lsn = str(from_value(bytes(s.execute("SELECT start_lsn FROM cdc.change_tables")[0][0])))

        config = s.properties(**{"snapshot.mode": "no_data", "max.iteration.transactions": 500})
        store = MemoryOffsetStore()
        store.commit([({"server": "server1", "database": db},
                       {"commit_lsn": start_lsn, "change_lsn": "NULL", "event_serial_no": 0})])
        cpu = time.process_time()
        events, connector_s = drain(config, store, changes, serialize=SERIALIZE)
        connector_cpu = time.process_time() - cpu

        conn = dbapi.connect(f"Server={pg.host},{pg.port};Database={db};UID={pg.user};PWD=", autocommit=True)
        started, cpu = time.monotonic(), time.process_time()
        mn, mx = conn.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_bench'), sys.fn_cdc_get_max_lsn()").fetchone()
        cur = conn.execute("SELECT [__$start_lsn], [__$seqval], [__$operation], [id], [name], [amount], [qty], "
                           "[created] FROM cdc.[fn_cdc_get_all_changes_dbo_bench](?, ?, N'all update old') "
                           "ORDER BY [__$start_lsn], [__$seqval], [__$operation]", mn, mx)
        bare = read_all(cur)
        bare_s, bare_cpu = time.monotonic() - started, time.process_time() - cpu
        report(events, connector_s, bare, bare_s, serialize=SERIALIZE)
        # This process's CPU time (PostgreSQL's own work is in neither): steadier than rates on a loaded machine.
        print(f"CPU of this process per change: connector {connector_cpu / events * 1e6:.2f} us (with its start), "
              f"bare read {bare_cpu / bare * 1e6:.2f} us")
        s.agent.stop()


if __name__ == "__main__":
    main()
