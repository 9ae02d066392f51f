"""The stand-in's server restarts mid-stream: the connector reconnects, resumes at its offset, loses nothing."""

from __future__ import annotations

import logging
import threading
import time

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.embedded import EmbeddedPostgres
from cdc_sqlserver import odbc
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS


def _data_only(records):
    """A handler that keeps every record but the schema change events (tested in test_sqlserver_schema_history)."""
    return lambda batch: records.extend(r for r in batch if not str(getattr(r.value_schema, "name", "") or "")
                                        .endswith(".SchemaChangeValue"))


def test_server_restart_mid_stream_reconnects_and_loses_nothing(caplog):
    saved = odbc.CONNECT, odbc.DRIVERS
    dbapi.install()
    with EmbeddedPostgres() as pg:
        pg.create_database("app")
        s = StandIn(pg, "app")
        try:
            s.create_table(CUSTOMERS)
            s.enable_db()
            s.enable_table("dbo", "customers")
            s.agent.start()
            config = s.properties(**{"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 500})
            engine = Engine(config, offset_store=MemoryOffsetStore())
            records: list = []
            runner = threading.Thread(target=engine.run, args=(_data_only(records),))
            with caplog.at_level(logging.WARNING):
                runner.start()
                try:
                    def wait(n):
                        deadline = time.monotonic() + 60
                        # Distinct rows: the snapshot/streaming handoff may repeat rows inserted during the snapshot.
                        while len({r.value["after"]["id"] for r in records if r.value}) < n:
                            assert runner.is_alive() and time.monotonic() < deadline, len(records)
                            time.sleep(0.05)

                    for i in range(20):
                        s.execute(f"INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'b', 'e{i}')")
                    wait(20)
                    pg.restart()
                    for i in range(20, 40):
                        s.execute(f"INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'b', 'e{i}')")
                    wait(40)
                finally:
                    engine.stop()
                    runner.join(30)
        finally:
            s.agent.stop()
            odbc.install(*saved)
    ids = [r.value["after"]["id"] for r in records if r.value]
    assert sorted(set(ids)) == list(range(1001, 1041)), ids
    assert any("lost the connection to SQL Server" in r.getMessage() or "cannot connect to SQL Server" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
