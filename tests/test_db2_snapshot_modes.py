"""Db2 snapshot modes and isolation levels on the stand-in: what is read, and where streaming starts."""

from __future__ import annotations

import time

import pytest
from kit.engine import EngineThread, run_until

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


def _records(config, store, wait_streaming=True, action=None, until=None):
    """The (op, ID) of the CUSTOMERS events of a run: until streaming (``action()`` then, until ``until(records)``),
    or without ``wait_streaming`` until the engine ends by itself."""
    if wait_streaming:
        records = run_until(config, until or (lambda rs: True), "the expected records", action=action or (lambda: None),
                            offsets=store).records
    else:
        runner = EngineThread(config, offsets=store).start()
        runner.join(30)  # fails if it kept running
        records = runner.records
    return [(r.value["op"], r.value["after"]["ID"]) for r in records if r.topic.endswith(".CUSTOMERS") and r.value]


def test_initial_only_snapshots_then_stops(inventory):
    store = MemoryOffsetStore()
    ops = _records(inventory.properties(**{"snapshot.mode": "initial_only"}), store, wait_streaming=False)
    assert ops == [("r", i) for i in range(1001, 1005)]
    assert store.get({"server": "mydatabase"})["snapshot_completed"] is True


def test_no_data_streams_from_now(inventory):
    ops = _records(inventory.properties(**{"snapshot.mode": "no_data"}), MemoryOffsetStore(),
                   action=lambda: inventory.execute(INSERT + "('n', 'd', 'n@d')"),
                   until=lambda rs: any(r.topic.endswith(".CUSTOMERS") for r in rs))
    assert ops == [("c", 1005)]


@pytest.mark.parametrize("isolation", ["read_uncommitted", "repeatable_read"])
def test_always_snapshots_again_at_each_start(inventory, isolation):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"snapshot.mode": "always", "snapshot.isolation.mode": isolation})
    assert _records(config, store) == [("r", i) for i in range(1001, 1005)]
    inventory.execute(INSERT + "('n', 'd', 'n@d')")
    inventory.wait_captured()
    # The second start reads the table again, 1005 included, and streams after that snapshot.
    assert _records(config, store) == [("r", i) for i in range(1001, 1006)]



def test_snapshot_lock_timeout_fails_the_snapshot_naming_the_table(inventory):
    # A writer in the middle of a transaction: LOCK TABLE ... IN EXCLUSIVE MODE waits for it.
    import psycopg

    writer = psycopg.connect(inventory.conninfo)
    writer.execute(INSERT + "('w', 'w', 'w@w')")
    try:
        config = inventory.properties(**{"snapshot.isolation.mode": "exclusive", "snapshot.lock.timeout.ms": "1000"})
        started = time.monotonic()
        with pytest.raises(Exception) as failure:
            Engine(config, offset_store=MemoryOffsetStore()).run(lambda records: None)
        waited = time.monotonic() - started
    finally:
        writer.close()
    message = str(failure.value)
    assert "MYSCHEMA.CUSTOMERS" in message and "snapshot.lock.timeout.ms=1000" in message, message
    assert "SQL0911N" in message and waited < 20


class _Recorder:
    """A connection recording the statements a snapshot's begin runs."""

    def __init__(self):
        self.statements: list[str] = []

    def set_autocommit(self, on):
        pass

    def cursor(self):
        return self

    def execute(self, statement):
        self.statements.append(statement)

    def fetchone(self):
        return (None,)


#: (snapshot.isolation.mode, snapshot.locking.mode, snapshot.lock.timeout.ms) -> statements before the rows
#: (Db2SnapshotChangeEventSource.lockTablesForSchemaSnapshot with Db2's ExclusiveSnapshotLock; cdc's exclusive
#: isolation adds LOCK TABLE ... IN EXCLUSIVE MODE).
LOCK_CASES = [
    ("read_uncommitted", "exclusive", 10000, ["SET CURRENT ISOLATION = UR", "MAX"]),
    ("read_committed", "exclusive", 10000, ["SET CURRENT ISOLATION = CS", "MAX"]),
    ("repeatable_read", "exclusive", 10000, [
        "SET CURRENT ISOLATION = RS", "SET CURRENT LOCK TIMEOUT = 10",
        "SAVEPOINT cdc_schema_snapshot ON ROLLBACK RETAIN CURSORS",
        'SELECT * FROM "MYSCHEMA"."CUSTOMERS" WHERE 0=1 WITH CS', "SET CURRENT LOCK TIMEOUT = NULL", "MAX",
        "ROLLBACK TO SAVEPOINT cdc_schema_snapshot"]),
    ("repeatable_read", "none", 10000, ["SET CURRENT ISOLATION = RS", "MAX"]),
    ("exclusive", "exclusive", 1500, [
        "SET CURRENT ISOLATION = RS", "SET CURRENT LOCK TIMEOUT = 2",
        'SELECT * FROM "MYSCHEMA"."CUSTOMERS" WHERE 0=1 WITH CS',
        'LOCK TABLE "MYSCHEMA"."CUSTOMERS" IN EXCLUSIVE MODE', "SET CURRENT LOCK TIMEOUT = NULL", "MAX"]),
    ("exclusive", "none", 0, [
        "SET CURRENT ISOLATION = RS", "SET CURRENT LOCK TIMEOUT = NOT WAIT",
        'LOCK TABLE "MYSCHEMA"."CUSTOMERS" IN EXCLUSIVE MODE', "SET CURRENT LOCK TIMEOUT = NULL", "MAX"]),
    ("exclusive", "none", -1, [
        "SET CURRENT ISOLATION = RS", "SET CURRENT LOCK TIMEOUT = WAIT",
        'LOCK TABLE "MYSCHEMA"."CUSTOMERS" IN EXCLUSIVE MODE', "SET CURRENT LOCK TIMEOUT = NULL", "MAX"]),
]


@pytest.mark.parametrize("isolation,locking,timeout,expected", LOCK_CASES)
def test_snapshot_locking_statements(isolation, locking, timeout, expected):
    import logging

    from cdc_core.relational import Table, TableId
    from cdc_core.snapshot.modes import NoLock
    from cdc_db2.catalog import CaptureTable
    from cdc_db2.snapshot import ExclusiveSnapshotLock, SnapshotReader

    conn = _Recorder()
    reader = SnapshotReader(conn, "s", "d", "ASNCDC", isolation, 10, logging.getLogger("test"))
    reader.lock = ExclusiveSnapshotLock() if locking == "exclusive" else NoLock()
    reader.lock_timeout_ms = timeout
    table = CaptureTable(Table(TableId(None, "MYSCHEMA", "CUSTOMERS"), [], []), None)
    reader.begin([table], lambda: conn.statements.append("(table definitions read)"))
    # The definitions are read after the synchpoint and before a repeatable_read's locks are released.
    at = expected.index("MAX") + 1
    expected = expected[:at] + ["(table definitions read)"] + expected[at:]
    assert ["MAX" if "MAX(" in s else s for s in conn.statements] == expected


class _DescendingQuery:
    """A custom SnapshotQuery: rows by ID descending."""

    name = "descending"

    def configure(self, config):
        pass

    def snapshot_query(self, table, columns, quote):
        return f"SELECT {', '.join(columns)} FROM {quote(table)} ORDER BY \"ID\" DESC"


class _RecordingLock:
    """A custom SnapshotLock recording the tables it is asked about and locking them in SHARE mode."""

    name = "recording"
    asked: list = []

    def configure(self, config):
        pass

    def table_lock_statement(self, lock_timeout_ms, table, quote):
        _RecordingLock.asked.append((quote(table), lock_timeout_ms))
        return f"LOCK TABLE {quote(table)} IN SHARE MODE"


def test_custom_snapshot_query_and_lock_are_plugins(inventory):
    from cdc_core.errors import ConfigError
    from cdc_core.hookspecs import hookimpl
    from cdc_core.plugins import PluginRegistry

    class Plugins:
        @hookimpl
        def register_snapshot_queries(self):
            return [_DescendingQuery]

        @hookimpl
        def register_snapshot_locks(self):
            return [_RecordingLock]

    plugins = PluginRegistry()
    plugins.register(Plugins(), name="db2-snapshot-spi-tests")
    config = inventory.properties(**{"snapshot.mode": "initial_only", "snapshot.query.mode": "custom",
                                     "snapshot.query.mode.custom.name": "descending", "snapshot.locking.mode": "custom",
                                     "snapshot.locking.mode.custom.name": "recording", "snapshot.lock.timeout.ms": "3000"})
    records: list = []
    Engine(config, offset_store=MemoryOffsetStore(), plugins=plugins).run(records.extend)
    ids = [r.value["after"]["ID"] for r in records if r.topic.endswith(".CUSTOMERS") and r.value]
    assert ids == [1004, 1003, 1002, 1001]
    assert _RecordingLock.asked == [('"MYSCHEMA"."CUSTOMERS"', 3000)]
    bad = inventory.properties(**{"snapshot.locking.mode": "custom", "snapshot.locking.mode.custom.name": "nosuch"})
    with pytest.raises(ConfigError, match="snapshot.locking.mode.custom.name"):
        Engine(bad, offset_store=MemoryOffsetStore()).run(lambda records: None)
