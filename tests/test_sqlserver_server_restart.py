"""The stand-in's server restarts mid-stream: the connector reconnects, resumes at its offset, loses nothing."""

from __future__ import annotations

import logging

from change_table_tests import run_through_a_server_restart, without_schema_changes

from cdc_postgres.embedded import EmbeddedPostgres
from cdc_sqlserver import odbc
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS


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
            with caplog.at_level(logging.WARNING):
                # Distinct rows: the snapshot/streaming handoff may repeat rows inserted during the snapshot.
                records = without_schema_changes(run_through_a_server_restart(
                    config, pg, lambda i: s.execute(
                        f"INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'b', 'e{i}')"),
                    lambda rs: len({r.value["after"]["id"] for r in without_schema_changes(rs) if r.value}),
                    streaming_first=False))
        finally:
            s.agent.stop()
            odbc.install(*saved)
    ids = [r.value["after"]["id"] for r in records if r.value]
    assert sorted(set(ids)) == list(range(1001, 1041)), ids
    assert any("lost the connection to SQL Server" in r.getMessage() or "cannot connect to SQL Server" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
