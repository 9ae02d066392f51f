"""``driver.*`` on MariaDB: Connector/J's connection properties of a Debezium configuration take effect through
their PyMySQL equivalents; one without an equivalent starts with a warning naming it."""

from __future__ import annotations

import logging
import time

import pytest

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_mysql import config as myc
from cdc_mysql.connection import Connection

from kit.engine import EngineThread
from kit.silent_server import silent_server  # noqa: F401  (fixture)
from mariadb_cdc import connector_config


def test_connector_j_properties_start_with_one_warning_for_the_unknown(mariadb_server, mariadb_db, caplog):
    mariadb_server.execute(["CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)"], mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "driver.connectTimeout": "5000", "driver.sessionVariables": "wait_timeout=123",
        "driver.useCursorFetch": "true", "driver.allowPublicKeyRetrieval": "true"})
    with caplog.at_level(logging.WARNING):
        engine = EngineThread(config).start()
        try:
            engine.wait(lambda rs: any(r.value and r.value.get("op") == "r" for r in rs), "the snapshot")
        finally:
            engine.stop()
    warnings = [r.getMessage() for r in caplog.records if "driver." in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("ignoring driver.useCursorFetch:"), warnings


def test_session_variables_are_set_on_every_query_connection(mariadb_server):
    """Connector/J's ``sessionVariables`` (``SET SESSION`` at connect), and ``socketTimeout`` as the socket's
    read/write limit, tighter than database.query.timeout.ms's."""
    config = Config(connector_config(mariadb_server, "mysql", **{
        "driver.sessionVariables": "wait_timeout=123,sql_mode='ANSI_QUOTES'", "driver.socketTimeout": "4500"}))
    args = myc.connect_args(config)
    assert (args["read_timeout"], args["write_timeout"]) == (4.5, 4.5)
    conn = Connection(**args)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@session.wait_timeout, @@session.sql_mode")
            assert cur.fetchone() == (123, "ANSI_QUOTES")
    finally:
        conn.close()


def test_socket_timeout_bounds_the_wait_for_a_silent_server(silent_server):
    """A server that accepts and never greets: Connector/J's ``socketTimeout`` (ms) bounds every socket read,
    the greeting's included (without it: database.query.timeout.ms, 600 s by default)."""
    config = {"connector.class": "mariadb", "topic.prefix": "drv", "database.hostname": "127.0.0.1",
              "database.port": silent_server, "database.user": "root", "database.server.id": 5600,
              "errors.max.retries": 0, "driver.socketTimeout": "1000", "driver.connectTimeout": "2000"}
    assert myc.connect_args(Config(config))["connect_timeout"] == 2
    started = time.monotonic()
    with pytest.raises(Exception):
        Engine(config, offset_store=MemoryOffsetStore()).run(lambda records: None)
    assert time.monotonic() - started < 10
