"""tasks.max over database.names: the databases spread over tasks as Debezium does, each task on its own thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kit.engine import EngineThread
from psycopg import sql

from cdc_core.engine import connector_report
from cdc_core.config import Config
from cdc_core.stores.file_offsets import FileOffsetStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.connector import SqlServerConnector
from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS, inventory, standin  # noqa: F401  (fixtures)
from cdc_sqlserver.tasks import task_databases

EU, US = "inventory_eu", "inventory_us"


def _database(pg_server, name: str, rows: list[str]) -> StandIn:
    """A CDC-enabled database ``name`` on the stand-in's server with ``dbo.customers`` holding ``rows`` (first names)."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    pg_server.create_database(name)
    server = StandIn(pg_server, name)
    server.create_table(CUSTOMERS)
    for first in rows:
        server.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES (%s, 'x', %s)",
                       (first, f"{first}@{name}"))
    server.enable_db()
    server.enable_table("dbo", "customers")
    server.agent.start()
    return server


def _drop(server: StandIn) -> None:
    server.agent.stop()
    server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                   (server.slot,))


@pytest.fixture
def eu(pg_server, inventory) -> Iterator[StandIn]:
    """A second database, two rows."""
    server = _database(pg_server, EU, ["Jean", "Ana"])
    try:
        yield server
    finally:
        _drop(server)


@pytest.fixture
def us(pg_server, inventory) -> Iterator[StandIn]:
    """A third database, three rows."""
    server = _database(pg_server, US, ["Bob", "Carol", "Dave"])
    try:
        yield server
    finally:
        _drop(server)


def _data(records, db):
    return [r for r in records if r.topic == f"server1.{db}.dbo.customers"]


def _ids(records, db, op=None):
    return [r.key["id"] for r in _data(records, db) if r.value and (op is None or r.value["op"] == op)]


def test_the_split_of_the_databases_is_debeziums():
    assert task_databases(["a", "b", "c"], 2) == [["a", "c"], ["b"]]
    assert task_databases(["a", "b", "c"], 3) == [["a"], ["b"], ["c"]]
    assert task_databases(["a", "b"], 5) == [["a"], ["b"]]  # min(tasks.max, databases) tasks
    assert task_databases(["a", "b", "c"], 1) == [["a", "b", "c"]]


def test_two_databases_two_tasks_snapshot_stream_offsets_and_mbeans(inventory, eu):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{EU}", "tasks.max": 2})
    runner = EngineThread(config, offsets=store).start()
    try:
        runner.wait(lambda rs: len(_data(rs, inventory.dbname)) >= 4 and len(_data(rs, EU)) >= 2, "both snapshots")
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('x', 'x', 'x@x')")
        eu.execute("UPDATE dbo.customers SET email = 'ana@example.br' WHERE id = 1002")
        runner.wait(lambda rs: _ids(rs, inventory.dbname, "c") and _ids(rs, EU, "u"), "a change in each database")
        # Many transactions in both databases at once: each database's events in its commit order.
        for i in range(40):
            inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('m', 'm', %s)",
                              (f"m{i}@a",))
            eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('m', 'm', %s)", (f"m{i}@b",))
        runner.wait(lambda rs: len(_ids(rs, inventory.dbname, "c")) == 41 and len(_ids(rs, EU, "c")) == 40,
                    "the 80 transactions")
        metrics = runner.engine.metrics
        values = metrics.values()
        names = {context: metrics.mbean_name(context) for context in values}
    finally:
        runner.stop()
    assert _ids(runner.records, inventory.dbname, "c") == list(range(1005, 1046))
    assert _ids(runner.records, EU, "c") == list(range(1003, 1043))
    for db in (inventory.dbname, EU):
        lsns = [r.value["source"]["commit_lsn"] for r in _data(runner.records, db) if r.value["op"] != "r"]
        assert lsns == sorted(lsns)
    assert _ids(runner.records, EU, "r") == [1001, 1002] and _ids(runner.records, inventory.dbname, "r") == [
        1001, 1002, 1003, 1004]
    prefix = "debezium.sql_server:type=connector-metrics,server=server1"
    # Each database's MBeans under its task: the first database is task 0's, the second task 1's.
    assert names[f"streaming,database={inventory.dbname}"] == f"{prefix},task=0,context=streaming,database={inventory.dbname}"
    assert names[f"streaming,database={EU}"] == f"{prefix},task=1,context=streaming,database={EU}"
    assert names[f"snapshot,database={EU}"] == f"{prefix},task=1,context=snapshot,database={EU}"
    # Each task its own task MBean: task 0's are the engine's groups, task 1 has its own.
    assert names["streaming"] == f"{prefix},task=0,context=streaming"
    assert names["streaming,task=1"] == f"{prefix},task=1,context=streaming"
    assert names["snapshot,task=1"] == f"{prefix},task=1,context=snapshot"
    assert values["streaming,task=1"]["Databases"] == [EU] and values["streaming,task=1"]["Connected"] is True
    assert values[f"streaming,database={EU}"]["TotalNumberOfUpdateEventsSeen"] == 1
    # Offsets per database partition, as with one task.
    a = store.get({"server": "server1", "database": inventory.dbname})
    b = store.get({"server": "server1", "database": EU})
    assert a["commit_lsn"] == _data(runner.records, inventory.dbname)[-1].value["source"]["commit_lsn"]
    assert b["commit_lsn"] == _data(runner.records, EU)[-1].value["source"]["commit_lsn"]


def test_three_databases_resume_exactly_when_tasks_max_changes(inventory, eu, us, tmp_path):
    """Offsets are per database partition: a restart with another tasks.max resumes each database where it was
    (from the same offsets and schema history files, each run a new engine as a new process would be)."""
    names = f"{inventory.dbname},{EU},{US}"
    files = {"offset.storage.file.filename": str(tmp_path / "offsets.dat"),
             "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
             "schema.history.internal.file.filename": str(tmp_path / "history.dat")}

    def run(tasks_max: int, until, act=lambda: None):
        config = inventory.properties(**{"database.names": names, "tasks.max": tasks_max, **files})
        runner = EngineThread(config, offsets=FileOffsetStore(Config(config))).start()
        try:
            act()
            runner.wait(until, f"the records with tasks.max={tasks_max}")
        finally:
            runner.stop()
        return runner

    first = run(2, lambda rs: (len(_ids(rs, inventory.dbname)), len(_ids(rs, EU)), len(_ids(rs, US))) == (4, 2, 3))
    assert first.engine.metrics.mbean_name(f"streaming,database={US}").endswith(f"task=0,context=streaming,database={US}")
    # Changes while the connector is down, then while it runs with three tasks.
    for db, server in ((inventory.dbname, inventory), (EU, eu), (US, us)):
        server.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES (%s, 'y', %s)",
                       ("down", f"down@{db}"))

    def more():
        us.execute("UPDATE dbo.customers SET email = 'bob@us' WHERE id = 1001")
        eu.execute("DELETE FROM dbo.customers WHERE id = 1002")

    second = run(3, lambda rs: (len(_ids(rs, inventory.dbname)), len(_ids(rs, EU)), len(_ids(rs, US))) == (1, 2, 2),
                 more)
    assert [(r.value["op"], r.key["id"]) for r in _data(second.records, inventory.dbname)] == [("c", 1005)]
    assert [(r.value["op"] if r.value else None, r.key["id"]) for r in _data(second.records, EU)] == [
        ("c", 1003), ("d", 1002), (None, 1002)]
    assert [(r.value["op"], r.key["id"]) for r in _data(second.records, US)] == [("c", 1004), ("u", 1001)]
    assert second.engine.metrics.mbean_name(f"streaming,database={US}").endswith(f"task=2,context=streaming,database={US}")
    # And back to one task: only what came since.
    eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('last', 'z', 'last@eu')")
    third = run(1, lambda rs: len(_ids(rs, EU)) >= 1)
    assert [(r.value["op"], r.key["id"]) for r in _data(third.records, EU)] == [("c", 1004)]
    assert _data(third.records, inventory.dbname) == [] and _data(third.records, US) == []


def _held(monkeypatch, db: str, gate: threading.Event) -> None:
    """``db``'s reader waits for ``gate`` before each batch (a task kept busy, e.g. by a long query)."""
    original = SqlServerConnector.stream

    def stream(self):
        for batch in original(self):
            if self.db == db:
                gate.wait(30)
            yield batch

    monkeypatch.setattr(SqlServerConnector, "stream", stream)


def test_a_busy_task_does_not_hold_back_another_tasks_databases(inventory, eu, monkeypatch):
    gate = threading.Event()
    _held(monkeypatch, inventory.dbname, gate)
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{EU}", "tasks.max": 2})
    runner = EngineThread(config).start()
    try:
        runner.wait(lambda rs: len(_ids(rs, EU, "r")) == 2, "the second database's snapshot")
        eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('z', 'z', 'z@eu')")
        runner.wait(lambda rs: _ids(rs, EU, "c") == [1003], "the second database's change")
        assert _data(runner.snapshot(), inventory.dbname) == []  # its task is still held
        gate.set()
        runner.wait(lambda rs: len(_ids(rs, inventory.dbname, "r")) == 4, "the first database once released")
    finally:
        gate.set()
        runner.stop()


def test_a_failing_task_stops_the_engine_naming_task_and_database_and_a_restart_resumes(inventory, eu, monkeypatch):
    store = MemoryOffsetStore()
    original = SqlServerConnector.stream
    broken = threading.Event()

    def stream(self):
        for batch in original(self):
            if self.db == EU and broken.is_set():
                raise RuntimeError("the change table cannot be read")
            yield batch

    monkeypatch.setattr(SqlServerConnector, "stream", stream)
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{EU}", "tasks.max": 2,
                                     "errors.max.retries": 0})
    runner = EngineThread(config, offsets=store).start()
    runner.wait(lambda rs: len(_ids(rs, inventory.dbname)) == 4 and len(_ids(rs, EU)) == 2, "both snapshots")
    broken.set()
    eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('lost?', 'z', 'z@eu')")
    error = runner.join()
    assert error is not None and "SQL Server task 1 (database inventory_eu)" in str(error)
    assert "the change table cannot be read" in str(error)
    assert _ids(runner.records, EU, "c") == []
    # Nothing lost: a restart (the table readable again) delivers the change the failing task did not.
    broken.clear()
    again = EngineThread(config, offsets=store).start()
    try:
        again.wait(lambda rs: _ids(rs, EU, "c") == [1003], "the change after the restart")
    finally:
        again.stop()
    assert _ids(again.records, EU, "r") == [] and _data(again.records, inventory.dbname) == []


def _problems(config: dict) -> list[str]:
    return connector_report(Config(config)).problems


def test_single_task_connectors_refuse_or_ignore_tasks_max_as_debezium():
    mysql = {"connector.class": "mysql", "database.hostname": "h", "database.user": "u", "topic.prefix": "p",
             "database.server.id": 5}
    assert any("tasks.max=2: Only a single connector task may be started" in p for p in _problems({**mysql, "tasks.max": 2}))
    assert not any("tasks.max" in p for p in _problems({**mysql, "tasks.max": 1}))
    db2 = {"connector.class": "db2", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
           "topic.prefix": "p", "tasks.max": 3}
    report = connector_report(Config(db2))
    assert not report.problems and "tasks.max" in report.ignored  # the chapter: "always uses a single task"
    postgres = {"connector.class": "postgres", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
                "topic.prefix": "p", "tasks.max": 4}
    report = connector_report(Config(postgres))
    assert not report.problems and "tasks.max" in report.ignored  # one task whatever it says, as Debezium's
    sqlserver = {"connector.class": "sqlserver", "database.hostname": "h", "database.user": "u",
                 "database.names": "a", "topic.prefix": "p", "tasks.max": 3}
    assert not _problems(sqlserver) and "tasks.max" not in connector_report(Config(sqlserver)).ignored
    assert any("tasks.max" in p for p in _problems({**sqlserver, "tasks.max": 0}))


SIGNAL = "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


def test_an_incremental_snapshot_of_another_tasks_database(inventory, eu):
    """The signal table in task 0's database, the snapshotted table in task 1's: chunks and READs as with one task."""
    inventory.create_table(SIGNAL)
    inventory.enable_table("dbo", "debezium_signal")
    eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) "
               "SELECT 'n' || g, 'n', 'n' || g || '@x' FROM generate_series(1, 28) g")
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{EU}", "tasks.max": 2,
                                     "snapshot.mode": "no_data", "table.include.list": "dbo.customers",
                                     "poll.interval.ms": 50, "incremental.snapshot.chunk.size": 10,
                                     "signal.data.collection": f"{inventory.dbname}.dbo.debezium_signal"})
    runner = EngineThread(config)
    notes: list = []
    runner.engine.add_notification_listener(notes.append)
    runner.start()
    try:
        runner.wait_streaming()
        inventory.execute("INSERT INTO dbo.debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"" + EU + ".dbo.customers\"]}')")
        eu.execute("UPDATE dbo.customers SET email = 'late@x' WHERE id = 1020")
        runner.wait(lambda rs: any((n.aggregate_type, n.type) == ("Incremental Snapshot", "COMPLETED") for n in notes) and len(set(_ids(rs, EU, "r"))) == 30,
                    "the incremental snapshot")
        runner.wait(lambda rs: _ids(rs, EU, "u") == [1020], "the update")
    finally:
        runner.stop()
    assert sorted(set(_ids(runner.records, EU, "r"))) == list(range(1001, 1031))
    latest = {r.key["id"]: r.value["after"]["email"] for r in _data(runner.records, EU) if r.value}
    assert latest[1020] == "late@x"
    assert _data(runner.records, inventory.dbname) == []


def test_a_lost_connection_in_one_task_is_retried_and_every_database_goes_on(inventory, eu, monkeypatch, caplog):
    """A retriable failure of one task restarts every task from its acknowledged offsets: nothing lost."""
    from cdc_core.errors import RetriableError

    original = SqlServerConnector.stream
    fail = threading.Event()

    def stream(self):
        for batch in original(self):
            if self.db == EU and fail.is_set():
                fail.clear()
                raise RetriableError("lost the connection to SQL Server (test)")
            yield batch

    monkeypatch.setattr(SqlServerConnector, "stream", stream)
    config = inventory.properties(**{"database.names": f"{inventory.dbname},{EU}", "tasks.max": 2,
                                     "errors.retry.delay.initial.ms": 50, "poll.interval.ms": 50})
    runner = EngineThread(config).start()
    try:
        runner.wait(lambda rs: len(_ids(rs, inventory.dbname)) == 4 and len(_ids(rs, EU)) == 2, "both snapshots")
        fail.set()
        runner.wait(lambda rs: not fail.is_set(), "the failure")
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'a', 'a@x')")
        eu.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('b', 'b', 'b@x')")
        runner.wait(lambda rs: _ids(rs, inventory.dbname, "c") and _ids(rs, EU, "c"), "a change in each after it")
        values = runner.engine.metrics.values()
    finally:
        runner.stop()
    assert sorted(set(_ids(runner.records, inventory.dbname))) == [1001, 1002, 1003, 1004, 1005]
    assert sorted(set(_ids(runner.records, EU))) == [1001, 1002, 1003]
    assert values["streaming,task=1"]["Connected"] is True  # the new task 1's
    assert any("SQL Server task 1 (database inventory_eu): lost the connection" in r.getMessage()
               for r in caplog.records)


def test_cdc_run_killed_with_two_tasks_resumes_each_database_exactly_with_one(inventory, eu, tmp_path):
    """kill -9 of ``cdc run`` with tasks.max=2, restart with tasks.max=1 on the same offsets file: every change of
    each database arrives, none at or before its database's stored offset twice."""
    import random

    from change_table_cli import StandInProcess, _comparable, server_properties, values

    from cdc_core.stores.file_offsets import read_offsets_file

    servers = {inventory.dbname: inventory, EU: eu}
    topics = {db: f"server1.{db}.dbo.customers" for db in servers}

    def start(tasks: int) -> StandInProcess:
        config = server_properties(inventory, tmp_path, **{"database.names": f"{inventory.dbname},{EU}",
                                                           "tasks.max": tasks})
        return StandInProcess("cdc_sqlserver.standin.cli", config, tmp_path).start()

    def creates(proc, db):
        return [v for v in values(proc.events(topics[db])) if v["op"] == "c"]

    procs = [start(2)]
    try:
        procs[0].wait_events(topics[inventory.dbname], 4)
        procs[0].wait_events(topics[EU], 2)
        for n in range(30):
            for db, server in servers.items():
                server.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('k', 'k', %s)",
                               (f"k{n}@{db}",))
            if n == 15:
                want = 5 + random.randint(0, 8)
                procs[0].wait_until(lambda: all(len(creates(procs[0], db)) >= want for db in servers),
                                    what="some changes of each database")
                procs[0].kill()
                before = {db: len(creates(procs[0], db)) for db in servers}
                stored = {p["database"]: o for p, o in read_offsets_file(tmp_path / "offsets.json").values()}
                procs.append(start(1))
        proc = procs[-1]
        proc.wait_until(lambda: all(len({v["after"]["id"] for v in creates(proc, db)}) == 30 for db in servers),
                        what="every change of each database")
        assert proc.terminate() == 0
    finally:
        for p in procs:
            if p.proc is not None and p.proc.poll() is None:
                p.kill()
    for db in servers:
        streamed = creates(proc, db)
        offset = _comparable([stored[db]["commit_lsn"]])
        after = streamed[before[db]:]
        # The first change after the restart is the next one after the stored offset; none at or before it twice.
        assert _comparable([after[0]["source"]["commit_lsn"]]) > offset, db
        done = [v["after"]["id"] for v in streamed if _comparable([v["source"]["commit_lsn"]]) <= offset]
        assert len(done) == len(set(done)) and len(done) >= 1, db
        first = 1005 if db == inventory.dbname else 1003  # after the snapshot's rows
        assert sorted({v["after"]["id"] for v in streamed}) == list(range(first, first + 30)), db
