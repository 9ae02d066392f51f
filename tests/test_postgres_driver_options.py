"""``driver.*`` on PostgreSQL: pgjdbc's connection properties of a Debezium configuration take effect through
their libpq equivalents; one without an equivalent starts with a warning naming it."""

from __future__ import annotations

import logging
import time

import pytest
from kit.engine import EngineThread
from kit.silent_server import silent_server  # noqa: F401  (fixture)

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _config(host, port, user, db, **extra) -> dict:
    return {"connector.class": "postgres", "database.hostname": host, "database.port": port,
            "database.user": user, "database.dbname": db, "topic.prefix": "drv", "table.include.list": "public.t",
            "poll.interval.ms": 50, "errors.max.retries": 0, **extra}


def _streaming(pg, db, config: dict, check):
    """Run the engine until its slot is streaming, call ``check()``, stop; return what ``check()`` returned."""
    runner = EngineThread(config).start()
    try:
        def active(records) -> bool:
            time.sleep(0.1)  # one query per 0.1 s
            rows = pg.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'debezium'", dbname=db)
            return bool(rows and rows[0][0])

        runner.wait(active, "the slot to stream")
        return check()
    finally:
        runner.stop()


def test_application_name_and_options_reach_the_server(pg_server, pg_db, caplog):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    config = _config(pg_server.host, pg_server.port, pg_server.user, pg_db, **{
        "driver.ApplicationName": "orders-cdc", "driver.options": "-c work_mem=7MB -c DateStyle=SQL",
        "driver.stringtype": "unspecified", "driver.tcpKeepAlive": "true"})
    with caplog.at_level(logging.WARNING):
        names = _streaming(pg_server, pg_db, config, lambda: pg_server.execute(
            "SELECT backend_type FROM pg_stat_activity WHERE application_name = 'orders-cdc' ORDER BY 1", dbname=pg_db))
    # The query connection and the walsender both carry it.
    assert {row[0] for row in names} == {"client backend", "walsender"}, names
    warnings = [r.getMessage() for r in caplog.records if "driver." in r.getMessage()]
    assert len(warnings) == 1 and "driver.stringtype" in warnings[0], warnings
    assert "driver.ApplicationName" not in warnings[0] and "driver.tcpKeepAlive" not in warnings[0]


def test_driver_options_come_before_the_pinned_output_settings(pg_server, pg_db):
    """``driver.options`` reaches the session; cdc's own output settings (DateStyle=ISO ...) still hold."""
    import psycopg

    from cdc_core.config import Config
    from cdc_postgres import config as pgc

    config = Config(_config(pg_server.host, pg_server.port, pg_server.user, pg_db, **{
        "driver.options": "-c work_mem=7MB -c DateStyle=SQL"}))
    with psycopg.connect(pgc.conninfo(config)) as conn:
        assert conn.execute("SHOW work_mem").fetchone()[0] == "7MB"
        assert conn.execute("SHOW DateStyle").fetchone()[0].startswith("ISO")


def test_connect_timeout_bounds_the_wait_for_a_silent_server(silent_server):
    """connect.timeout.ms keeps its 30 s default; driver.connectTimeout=1 gives up after about a second."""
    started = time.monotonic()
    engine = Engine(_config("127.0.0.1", silent_server, "postgres", "app", **{"driver.connectTimeout": "1"}),
                    offset_store=MemoryOffsetStore())
    with pytest.raises(Exception):
        engine.run(lambda records: None)
    assert time.monotonic() - started < 10


def test_target_server_type_secondary_refuses_a_primary(pg_server, pg_db):
    """``driver.targetServerType=secondary`` on a primary: libpq's target_session_attrs=standby refuses it."""
    started = time.monotonic()
    engine = Engine(_config(pg_server.host, pg_server.port, pg_server.user, pg_db,
                            **{"driver.targetServerType": "secondary", "connect.timeout.ms": 2000}),
                    offset_store=MemoryOffsetStore())
    with pytest.raises(Exception) as e:
        engine.run(lambda records: None)
    assert "standby" in str(e.value) or "hot standby" in str(e.value) or "read-only" in str(e.value), e.value
    assert time.monotonic() - started < 20
