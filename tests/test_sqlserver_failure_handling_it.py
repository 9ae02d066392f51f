"""Debezium 2.7.4's EventProcessingFailureHandlingIT on the stand-in: a change whose value cannot be converted.

tableb's ``colb BIGINT NOT NULL`` becomes VARCHAR(30) with no new capture instance; its changes still convert
with the recorded BIGINT (the schema history's structure), so ``'b'`` fails. ``warn``: tablea's five changes
arrive, none of tableb's, with a warning naming the offset; ``skip``: the same without the warning; ``fail``
(the default): the connector stops with an error.
"""

from __future__ import annotations

import logging

import pytest
from kit.engine import EngineThread

from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)


def _start(standin, mode):
    standin.create_table("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))")
    standin.create_table("CREATE TABLE dbo.tableb (id int primary key, colb BIGINT NOT NULL)")
    standin.create_table("CREATE TABLE dbo.tablec (id int primary key, colc varchar(30))")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    standin.agent.start()
    extra = {"snapshot.mode": "no_data"}
    if mode is not None:
        extra["event.processing.failure.handling.mode"] = mode
    runner = EngineThread(standin.properties(**extra)).start()
    runner.wait_streaming()
    standin.execute("INSERT INTO dbo.tablea VALUES (1, 'seed')")
    runner.wait(lambda rs: any(r.topic.endswith(".tablea") for r in rs), "the seed row")
    standin.alter_column("dbo", "tableb", "colb", "VARCHAR(30)")
    standin.execute("; ".join(f"INSERT INTO dbo.tablea VALUES ({i}, 'a'); INSERT INTO dbo.tableb VALUES ({i}, 'b')"
                              for i in range(10, 15)))
    return runner


def _table(records, name):
    return [r for r in records if r.topic.endswith(f".{name}")]


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_warn_and_skip_leave_the_failing_changes_out(standin, caplog, mode):
    with caplog.at_level(logging.WARNING):
        runner = _start(standin, mode)
        try:
            runner.wait(lambda rs: len(_table(rs, "tablea")) >= 6, "tablea's five changes")
        finally:
            runner.stop()
    assert _table(runner.records, "tableb") == []
    warned = [r for r in caplog.records if "tableb" in r.getMessage() and "offset" in r.getMessage()]
    assert bool(warned) is (mode == "warn")


def test_fail_stops_the_connector(standin):
    runner = _start(standin, None)
    try:
        runner.wait(lambda rs: not runner.alive, "the connector to stop", timeout=30)
    except AssertionError as e:
        assert "tableb" in str(e.__cause__ or e) or runner.error is not None
    finally:
        if runner.alive:
            runner.stop()
    assert runner.error is not None and "tableb" in str(runner.error)
    assert _table(runner.records, "tableb") == []
