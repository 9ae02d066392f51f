"""The stand-in's server restarts mid-stream: the connector reconnects, resumes at its offset, loses nothing."""

from __future__ import annotations

import logging
import threading
import time

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
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
            engine = Engine(config, offset_store=MemoryOffsetStore())
            records: list = []
            runner = threading.Thread(target=engine.run, args=(records.extend,))
            with caplog.at_level(logging.WARNING):
                runner.start()
                try:
                    def wait(n):
                        deadline = time.monotonic() + 60
                        while len([r for r in records if r.value and r.topic != 'mydatabase']) < n:
                            assert runner.is_alive() and time.monotonic() < deadline, len(records)
                            time.sleep(0.05)

                    deadline = time.monotonic() + 30
                    while not engine.metrics.streaming.connected:
                        assert runner.is_alive() and time.monotonic() < deadline
                        time.sleep(0.05)
                    for i in range(20):
                        s.execute(INSERT + f"('a', 'b', 'e{i}')")
                    wait(20)
                    pg.restart()
                    for i in range(20, 40):
                        s.execute(INSERT + f"('a', 'b', 'e{i}')")
                    wait(40)
                finally:
                    engine.stop()
                    runner.join(30)
        finally:
            s.agent.stop()
            driver.install(saved)
    ids = [r.value["after"]["ID"] for r in records if r.value and r.topic != "mydatabase"]
    assert ids == list(range(1001, 1041))  # in order, each once
    assert any("lost the connection to Db2" in r.getMessage() or "cannot connect to Db2" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
