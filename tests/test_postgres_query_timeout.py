"""``database.query.timeout.ms``: a query of cdc's that runs longer stops the connector with an error naming
the property (not an endless reconnect); a long snapshot read whose rows keep coming is not cut short."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConnectorError
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _config(pg, db, **extra) -> dict:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": pg.user, "database.dbname": db, "topic.prefix": "qt", "poll.interval.ms": 50,
            "table.include.list": "public.t", "errors.max.retries": 0, **extra}


def _run_until(pg, db, config: dict, done, timeout: float = 30.0):
    """Run the engine until ``done(records)`` or it ends; return (error, records)."""
    engine = Engine(config, offset_store=MemoryOffsetStore())
    records: list = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            engine.run(records.extend)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    deadline = time.monotonic() + timeout
    while runner.is_alive() and not done(records) and time.monotonic() < deadline:
        time.sleep(0.05)
    engine.stop()
    runner.join(30)
    return (errors[0] if errors else None), records


def test_a_slow_initial_statement_stops_naming_the_property(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    error, _ = _run_until(pg_server, pg_db, _config(pg_server, pg_db, **{
        "database.query.timeout.ms": 300, "database.initial.statements": "SELECT pg_sleep(5)"}), lambda rs: False)
    assert isinstance(error, ConnectorError)
    assert "database.query.timeout.ms=300" in str(error) and "database.initial.statements" in str(error)


def test_a_catalog_statement_waiting_on_a_lock_stops_naming_the_property(pg_server, pg_db):
    """``publication.autocreate.mode=filtered`` creates the publication for the table; another session's
    transaction holds the table locked, so the statement waits."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    with psycopg.connect(pg_server.conninfo(pg_db)) as holder:
        holder.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        error, _ = _run_until(pg_server, pg_db, _config(pg_server, pg_db, **{
            "database.query.timeout.ms": 500, "publication.autocreate.mode": "filtered"}), lambda rs: False)
        holder.rollback()
    assert isinstance(error, ConnectorError), error
    assert "database.query.timeout.ms=500" in str(error) and "statement timeout" in str(error)
    assert time.monotonic() - started < 20


def test_a_snapshot_select_without_rows_in_time_stops_naming_the_property(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)", dbname=pg_db)
    error, _ = _run_until(pg_server, pg_db, _config(pg_server, pg_db, **{
        "database.query.timeout.ms": 500, "snapshot.select.statement.overrides": "public.t",
        "snapshot.select.statement.overrides.public.t": "SELECT * FROM t WHERE pg_sleep(5) IS NOT NULL"}),
        lambda rs: False)
    assert isinstance(error, ConnectorError), error
    assert "database.query.timeout.ms=500" in str(error) and "public.t" in str(error)


def test_a_snapshot_read_longer_than_the_limit_completes_while_rows_keep_coming(pg_server, pg_db):
    """As pgjdbc's timer (which covers the wait for a cursor's first rows): 60 rows 40 ms apart take longer
    than the limit, and all arrive. Each row is larger than the server's 8 kB send buffer, so it is sent at once."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, pad text);"
                      "INSERT INTO t SELECT g, repeat('x', 9000) FROM generate_series(1, 60) g", dbname=pg_db)
    started = time.monotonic()
    error, records = _run_until(pg_server, pg_db, _config(pg_server, pg_db, **{
        "database.query.timeout.ms": 1000, "snapshot.select.statement.overrides": "public.t",
        "snapshot.select.statement.overrides.public.t": "SELECT * FROM t WHERE pg_sleep(0.04) IS NOT NULL"}),
        lambda rs: len([r for r in rs if r.value and r.value.get("op") == "r"]) >= 60)
    assert error is None
    assert len([r for r in records if r.value and r.value.get("op") == "r"]) == 60
    assert time.monotonic() - started > 2.4


@pytest.mark.parametrize("value", ["-1", "99999999999"])
def test_out_of_range_values_are_refused(pg_server, pg_db, value):
    from cdc_core.errors import ConfigError
    with pytest.raises(ConfigError) as e:
        Engine(_config(pg_server, pg_db, **{"database.query.timeout.ms": value}), offset_store=MemoryOffsetStore())
    assert "database.query.timeout.ms" in str(e.value)
