"""The default in-memory schema history: one per engine, kept across the engine's retries, never shared."""

from __future__ import annotations

import gc
import time
import weakref

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.stores import configured_history

from mariadb_cdc import EngineThread, connector_config


def _ids(records) -> list[int]:
    return [r.value["after"]["id"] for r in records if r.value is not None and r.value.get("op") == "c"]


def _without_history_store(config: dict) -> EngineThread:
    """An engine thread whose engine has no history store given (so the connector uses its in-memory one)."""
    thread = EngineThread(config)
    thread.engine = Engine(config, offset_store=thread.offsets)
    return thread


def _history(engine: EngineThread) -> dict:
    return engine.engine.metrics.values()["schema-history"]


def _wait(engine: EngineThread, condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert engine.alive and time.monotonic() < deadline, f"{what}: {engine.error!r}"
        time.sleep(0.02)


def _dump_threads(server) -> list[int]:
    rows = server.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
    return [int(r[0]) for r in rows]


def test_two_engines_never_see_each_others_history(mariadb_server):
    """Two engines at once, each retrying after a lost connection, recover exactly their own history records."""
    dbs = ("hist_a", "hist_b")
    for db in dbs:
        mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}")
        mariadb_server.create_database(db)
    try:
        mariadb_server.execute(["CREATE TABLE a1 (id INT PRIMARY KEY)", "CREATE TABLE a2 (id INT PRIMARY KEY)"],
                               "hist_a")
        mariadb_server.execute("CREATE TABLE b (id INT PRIMARY KEY)", "hist_b")
        retrying = {"connect.keep.alive": False, "errors.max.retries": 5, "errors.retry.delay.initial.ms": 50}
        a = _without_history_store(connector_config(mariadb_server, "hist_a", **retrying)).start()
        b = _without_history_store(connector_config(mariadb_server, "hist_b", **retrying, **{
            "topic.prefix": "other", "database.server.id": 5601})).start()
        try:
            for engine in (a, b):
                _wait(engine, lambda: engine.engine.metrics.streaming.connected, "streaming")
            applied = [_history(a)["ChangesApplied"], _history(b)["ChangesApplied"]]
            for thread in _dump_threads(mariadb_server):  # both retry: each recovers its history from its store
                mariadb_server.execute(f"KILL {thread}")
            for engine in (a, b):
                _wait(engine, lambda: _history(engine)["ChangesRecovered"] > 0, "the recovery after the retry")
            mariadb_server.execute("INSERT INTO a1 VALUES (1)", "hist_a")
            mariadb_server.execute("INSERT INTO b VALUES (2)", "hist_b")
            a.wait(lambda rs: _ids(rs) == [1], "engine A's insert after the retry")
            b.wait(lambda rs: _ids(rs) == [2], "engine B's insert after the retry")
            recovered = [_history(a)["ChangesRecovered"], _history(b)["ChangesRecovered"]]
        finally:
            a.stop()
            b.stop()
    finally:
        for db in dbs:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}")
    assert min(applied) > 0
    assert recovered == applied  # a shared store would hold both engines' records


def test_a_collected_configs_history_goes_with_it(mariadb_server):
    """The history is kept per live Config: once collected, a new Config that gets its id cannot find it."""
    config = Config(connector_config(mariadb_server, "unused"))
    store = configured_history.memory_history(config)
    assert configured_history.memory_history(config) is store  # the same engine's retries keep it
    key, ref = id(config), weakref.ref(config)
    del config
    gc.collect()
    assert ref() is None and key not in configured_history._MEMORY_HISTORIES
