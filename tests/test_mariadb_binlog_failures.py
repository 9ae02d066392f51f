"""event.deserialization.failure.handling.mode: a binlog rows event the schema history cannot decode."""

from __future__ import annotations

import logging
import re
import time

import pytest

from mariadb_cdc import EngineThread, connector_config


def _ids(records) -> list[int]:
    return [r.value["after"]["id"] for r in records if r.value is not None and r.value.get("op") == "c"]


def _run(server, db, caplog, **extra):
    """Stream a table whose ENUM grows behind the history's back, then insert an undecodable and a good row."""
    server.execute("CREATE TABLE e (id INT PRIMARY KEY, c ENUM('a', 'b'))", db)
    engine = EngineThread(connector_config(server, db, **{"errors.max.retries": 0}, **extra)).start()
    deadline = time.monotonic() + 30
    while not engine.engine.metrics.streaming.connected:
        assert engine.alive and time.monotonic() < deadline, engine.error
        time.sleep(0.02)
    caplog.set_level(logging.INFO, logger="cdc.mariadb")
    # Changed outside the captured history: this ALTER is not in the binlog.
    server.execute(["SET SESSION sql_log_bin = 0", "ALTER TABLE e MODIFY c ENUM('a', 'b', 'c', 'd')"], db)
    server.execute(["INSERT INTO e VALUES (1, 'd')", "INSERT INTO e VALUES (2, 'a')"], db)
    return engine


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "cannot decode" in r.getMessage()]


def test_fail_stops_naming_the_binlog_position(mariadb_server, mariadb_db, caplog):
    engine = _run(mariadb_server, mariadb_db, caplog)  # fail is the default
    error = engine.join()
    assert error is not None
    message = str(error)
    assert re.search(r"rows event of .*\.e at mariadb-bin\.\d+:\d+", message), message
    assert "event.deserialization.failure.handling.mode" in message
    assert _ids(engine.snapshot()) == []


@pytest.mark.parametrize("properties, logged", [
    ({"event.deserialization.failure.handling.mode": "warn"}, True),
    ({"event.deserialization.failure.handling.mode": "ignore"}, False),
    # The deprecated property unset: the common event.processing.failure.handling.mode decides.
    ({"event.processing.failure.handling.mode": "warn"}, True),
    ({"event.processing.failure.handling.mode": "skip"}, False),
    # The deprecated property wins when both are set (as in Debezium).
    ({"event.deserialization.failure.handling.mode": "ignore", "event.processing.failure.handling.mode": "fail"},
     False),
])
def test_warn_and_ignore_skip_the_event(mariadb_server, mariadb_db, caplog, properties, logged):
    engine = _run(mariadb_server, mariadb_db, caplog, **properties)
    try:
        engine.wait(lambda rs: 2 in _ids(rs), "the decodable row after the skipped one")
        skipped = engine.engine.metrics.streaming.values()["NumberOfSkippedEvents"]
    finally:
        engine.stop()
    assert engine.error is None
    assert _ids(engine.snapshot()) == [2]
    assert skipped == 1
    warnings = _warnings(caplog)
    if logged:
        assert len(warnings) == 1 and re.search(r"at mariadb-bin\.\d+:\d+", warnings[0]), warnings
    else:
        assert warnings == []

