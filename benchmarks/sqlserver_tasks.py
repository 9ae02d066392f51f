"""SQL Server ``tasks.max`` benchmark on the stand-in: two databases' change backlogs drained with one task, then two.

Two databases on one stand-in (a throwaway PostgreSQL with SQL Server's CDC objects, filled by its
capture agents), each with ``--changes`` inserts (40k by default) in a 5-column table. The engine
drains both backlogs from the instances' start (``snapshot.mode=no_data``, every record serialized to
JSON with schemas and dropped) with ``tasks.max=1`` (the databases in turn on the engine's thread)
and ``tasks.max=2`` (a thread per database), alternately, ``--rounds`` times each. Printed per run: the
rate, this process's CPU time per change, and the load average. What it shows: how much the task
threads overlap the waits on the server on this machine (the event building stays on the engine's
one thread). Usage: ``uv run python benchmarks/sqlserver_tasks.py [--changes N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import os
import time

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn

from change_table_backlog import SERIALIZE, drain, fill_backlog, throwaway_database

TABLE = ("CREATE TABLE dbo.bench (id INT NOT NULL PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), "
         "qty BIGINT, created DATETIME2(3))")


def main() -> None:
    """Fill both backlogs, then drain them with tasks.max 1 and 2 alternately; print the rates."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=40_000, help="changes per database")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    dbapi.install()
    with throwaway_database() as (pg, first):
        second = first + "_b"
        pg.create_database(second)
        servers = [StandIn(pg, db) for db in (first, second)]
        starts = {}
        for s in servers:
            s.create_table(TABLE)
            s.enable_db()
            s.enable_table("dbo", "bench")
            fill_backlog(s, "dbo.bench", args.changes)
            starts[s.dbname] = str(from_value(bytes(s.execute("SELECT start_lsn FROM cdc.change_tables")[0][0])))
        total = 2 * args.changes
        for _ in range(args.rounds):
            for tasks in (1, 2):
                config = servers[0].properties(**{"database.names": f"{first},{second}", "tasks.max": tasks,
                                                  "snapshot.mode": "no_data", "max.iteration.transactions": 500})
                store = MemoryOffsetStore()
                store.commit([({"server": "server1", "database": db},
                               {"commit_lsn": lsn, "change_lsn": "NULL", "event_serial_no": 0})
                              for db, lsn in starts.items()])
                cpu = time.process_time()
                events, seconds = drain(config, store, total, serialize=SERIALIZE)
                cpu = time.process_time() - cpu
                print(f"tasks.max={tasks}: {events} changes in {seconds:.2f}s = {events / seconds:,.0f}/s, "
                      f"CPU {cpu / events * 1e6:.2f} us/change, load average {os.getloadavg()}")
        for s in servers:
            s.agent.stop()


if __name__ == "__main__":
    main()
