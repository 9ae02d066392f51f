"""A network black hole between cdc and PostgreSQL (no bytes, no close) is noticed, logged and reconnected from."""

from __future__ import annotations

import time

from cdc_postgres.embedded import EmbeddedPostgres

from cdc_process import CdcProcess, server_properties, write_properties
from tcp_proxy import TcpProxy

TOPIC = "dbserver1.public.hole"
WAL_SENDER_TIMEOUT_S = 4


def test_black_hole_is_noticed_within_the_servers_timeout_and_nothing_is_lost(tmp_path):
    with EmbeddedPostgres(settings={"wal_sender_timeout": f"{WAL_SENDER_TIMEOUT_S}s"}) as pg, \
            TcpProxy(pg.host, pg.port) as proxy:
        pg.create_database("app")
        pg.execute("CREATE TABLE hole (id int PRIMARY KEY)", dbname="app")
        pg.execute("INSERT INTO hole VALUES (1)", dbname="app")

        class ThroughProxy:
            host, port, user = "127.0.0.1", proxy.port, pg.user

        props = server_properties(ThroughProxy, "app", tmp_path, **{
            "table.include.list": "public.hole", "status.update.interval.ms": 1000, "connect.timeout.ms": 2000,
            "errors.retry.delay.initial.ms": 200, "errors.retry.delay.max.ms": 1000, "heartbeat.interval.ms": 0,
        })
        cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
        try:
            cdc.wait_events(TOPIC, 1)
            pg.execute("INSERT INTO hole VALUES (2)", dbname="app")
            cdc.wait_events(TOPIC, 2)

            proxy.blackhole()
            holed = time.monotonic()
            pg.execute("INSERT INTO hole VALUES (3)", dbname="app")  # made while cdc cannot hear
            # Noticed while the hole lasts: a keepalive request unanswered for wal_sender_timeout, plus slack.
            cdc.wait_until(lambda: "no message from the server" in cdc.log(), timeout=WAL_SENDER_TIMEOUT_S + 10,
                           what="the silent connection to be noticed")
            noticed = time.monotonic() - holed
            assert "retrying in" in cdc.log(), cdc.log()
            proxy.heal()
            events = cdc.wait_events(TOPIC, 3, timeout=30)
            assert sorted({e["key"]["payload"]["id"] for e in events}) == [1, 2, 3], events
            assert noticed < WAL_SENDER_TIMEOUT_S + 10
        finally:
            proxy.heal()
            code = cdc.terminate()
        assert code == 0, cdc.log()
        assert "Traceback" not in cdc.log()
