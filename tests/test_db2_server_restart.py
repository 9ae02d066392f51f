"""The stand-in's server restarts mid-stream: the connector reconnects, resumes at its offset, loses nothing."""

from __future__ import annotations

import logging

from change_table_tests import run_through_a_server_restart

from cdc_db2 import driver
from cdc_db2.standin import dbapi
from cdc_db2.standin.server import StandIn
from cdc_db2.standin.testing import CUSTOMERS
from cdc_postgres.embedded import EmbeddedPostgres

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


def test_server_restart_mid_stream_reconnects_and_loses_nothing(caplog):
    saved = driver.CONNECT
    dbapi.install()
    with EmbeddedPostgres() as pg:
        pg.create_database("app")
        s = StandIn(pg, "app")
        try:
            s.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
            s.add_table("MYSCHEMA", "CUSTOMERS")
            s.agent.start()
            config = s.properties(**{"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 500})
            with caplog.at_level(logging.WARNING):
                records = run_through_a_server_restart(
                    config, pg, lambda i: s.execute(INSERT + f"('a', 'b', 'e{i}')"),
                    lambda rs: len([r for r in rs if r.value and r.topic != "mydatabase"]), streaming_first=True)
        finally:
            s.agent.stop()
            driver.install(saved)
    ids = [r.value["after"]["ID"] for r in records if r.value and r.topic != "mydatabase"]
    assert ids == list(range(1001, 1041))  # in order, each once
    assert any("lost the connection to Db2" in r.getMessage() or "cannot connect to Db2" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
