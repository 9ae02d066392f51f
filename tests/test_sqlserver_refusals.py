"""What the SQL Server connector refuses at start, on the stand-in: one clear line each, never the password."""

from __future__ import annotations

from change_table_cli import StandInProcess
from change_table_tests import SECRET
from change_table_tests import start_error as _start_error

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_process import write_properties
from kit.engine import run_until
from cdc_sqlserver.standin.testing import CUSTOMERS, inventory, standin  # noqa: F401  (fixtures)


def test_database_without_cdc_is_refused_naming_the_fix(standin):
    standin.create_table(CUSTOMERS)
    message = _start_error(standin.properties())
    assert f"CDC is not enabled on database {standin.dbname!r}" in message
    assert "sys.sp_cdc_enable_db" in message


def test_no_table_with_cdc_starts_snapshots_warns_and_streams_a_table_enabled_later(standin, caplog):
    """As Debezium 2.7.4: no refusal; the snapshot reads the table, streaming warns (getChangeTablesToQuery's
    words) and reads nothing, and a capture instance created later is picked up when it appears."""
    standin.create_table(CUSTOMERS)
    standin.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'b', 'a@b')")
    standin.enable_db()
    standin.agent.start()
    customers = lambda rs: [r for r in rs if r.topic.endswith(".customers") and r.value is not None]  # noqa: E731
    store = MemoryOffsetStore()
    config = {**standin.properties(), "snapshot.mode": "initial", "poll.interval.ms": 10}
    with caplog.at_level("WARNING"):
        runner = run_until(config, lambda rs: len(customers(rs)) >= 1, "the snapshot", action=lambda: standin.execute(
            "INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('c', 'd', 'c@d')"),
            offsets=store, settle=0.5)
    assert [(r.value["op"], r.value["after"]["email"]) for r in customers(runner.records)] == [("r", "a@b")]
    warnings = _messages(caplog, "WARNING")
    assert warnings.count("No table has enabled CDC or security constraints prevents getting the list of change "
                          "tables") == 1, warnings
    assert sum(m.startswith("No table on connector's include list has enabled CDC") for m in warnings) == 1, warnings
    assert any("dbo.customers is not enabled for CDC" in m for m in warnings)

    def enable_and_insert():
        standin.enable_table("dbo", "customers")
        standin.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('e', 'f', 'e@f')")
    later = run_until(config, lambda rs: len(customers(rs)) >= 1, "the insert after sys.sp_cdc_enable_table",
                      action=enable_and_insert, offsets=store, settle=0.3)
    # Only the change after the capture instance exists; no schema change (the snapshot recorded the table).
    assert [(r.value["op"], r.value["after"]["email"]) for r in customers(later.records)] == [("c", "e@f")]
    assert {r.topic for r in later.records} == {customers(later.records)[0].topic}


def test_a_user_who_cannot_read_the_capture_instance_is_refused(inventory):
    inventory.execute(f"CREATE ROLE cdc_reader LOGIN PASSWORD '{SECRET}'")
    inventory.execute("GRANT SELECT ON ALL TABLES IN SCHEMA dbo TO cdc_reader")
    inventory.execute("GRANT USAGE ON SCHEMA dbo TO cdc_reader")
    try:
        config = {**inventory.properties(), "database.user": "cdc_reader", "database.password": SECRET}
        message = _start_error(config)
        assert "cannot read capture instance 'dbo_customers'" in message and "'cdc_reader'" in message
    finally:
        inventory.execute("DROP OWNED BY cdc_reader")
        inventory.execute("DROP ROLE cdc_reader")


def test_a_missing_database_among_several_is_named(standin):
    standin.create_table(CUSTOMERS)
    standin.enable_db()
    standin.enable_table("dbo", "customers")
    message = _start_error({**standin.properties(), "database.names": f"{standin.dbname},other"})
    assert "database 'other'" in message


def test_a_signal_table_outside_the_databases_is_refused_with_several_databases(standin):
    for name in ("dbo.signals", "elsewhere.dbo.signals"):
        message = _start_error({**standin.properties(), "database.names": f"{standin.dbname},other",
                                "signal.data.collection": name})
        assert f"signal.data.collection={name}" in message and "<database>.<schema>.<table>" in message


def test_cdc_run_exits_with_one_line_when_cdc_is_off(standin, tmp_path):
    standin.create_table(CUSTOMERS)
    props = {"debezium.sink.type": "file", "debezium.sink.file.dir": str(tmp_path / "events"),
             "debezium.source.offset.storage.file.filename": str(tmp_path / "offsets.json")}
    props.update({f"debezium.source.{k}": v for k, v in {**standin.properties(), "database.password": SECRET}.items()})
    proc = StandInProcess("cdc_sqlserver.standin.cli", write_properties(tmp_path / "app.properties", props),
                          tmp_path).start()
    code = proc.wait_exit(60)
    log = proc.log()
    assert code != 0 and SECRET not in log
    assert sum("CDC is not enabled on database" in line for line in log.splitlines()) == 1, log


def test_a_stopped_sql_server_agent_is_reported_at_start(standin, caplog):
    standin.create_table(CUSTOMERS)
    standin.enable_db()
    standin.enable_table("dbo", "customers")  # the agent is never started
    with caplog.at_level("WARNING"):
        Engine({**standin.properties(), "snapshot.mode": "initial_only"},
               offset_store=MemoryOffsetStore()).run(lambda records: None)
    assert sum("SQL Server Agent is not running" in r.getMessage() for r in caplog.records) == 1


def test_a_running_agent_gives_no_warning(inventory, caplog):
    with caplog.at_level("WARNING"):
        Engine({**inventory.properties(), "snapshot.mode": "initial_only"},
               offset_store=MemoryOffsetStore()).run(lambda records: None)
    assert not any("SQL Server Agent" in r.getMessage() for r in caplog.records)


def _messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.levelname == level]


def _stream_a_while(config):
    """Run the engine until it streams, then through some 30 polls (poll.interval.ms=10)."""
    run_until({**config, "poll.interval.ms": 10}, lambda records: True, "streaming", action=lambda: None, settle=0.3)


def test_a_stream_without_a_maximum_lsn_asks_the_agent_status_query_once(standin, caplog):
    """As Debezium 2.7.4: no maximum LSN and the agent stopped logs one error; the default query names [#db]."""
    standin.create_table(CUSTOMERS)
    standin.enable_db()
    standin.enable_table("dbo", "customers")  # the agent is never started: nothing captured, no maximum LSN
    with caplog.at_level("INFO"):
        _stream_a_while({**standin.properties(), "snapshot.mode": "no_data"})
    errors = [m for m in _messages(caplog, "ERROR") if "SQL Server Agent" in m]
    assert errors == ["No maximum LSN recorded in the database; SQL Server Agent is not running"]


def test_a_configured_agent_status_query_is_used(standin, caplog):
    """``database.sqlserver.agent.status.query``: its answer, ``#db`` replaced; a failing query only warns."""
    standin.create_table(CUSTOMERS)
    standin.enable_db()
    standin.enable_table("dbo", "customers")
    standin.execute("CREATE TABLE dbo.agent_up (db text, up int)")
    standin.execute(f"INSERT INTO dbo.agent_up VALUES ('{standin.dbname}', 1)")
    query = "SELECT up FROM dbo.agent_up WHERE db = '#db'"
    config = {**standin.properties(), "snapshot.mode": "no_data", "database.sqlserver.agent.status.query": query}
    with caplog.at_level("WARNING"):
        _stream_a_while(config)
    assert not any("SQL Server Agent" in m for m in _messages(caplog, "WARNING") + _messages(caplog, "ERROR"))
    caplog.clear()
    with caplog.at_level("WARNING"):
        _stream_a_while({**config, "database.sqlserver.agent.status.query": "SELECT up FROM dbo.no_such_table"})
    warnings = _messages(caplog, "WARNING")
    assert sum(m.startswith("No maximum LSN recorded in the database; this may happen") for m in warnings) == 1
    assert sum(m.startswith("Cannot query the status of the SQL Server Agent") for m in warnings) == 1
    assert not _messages(caplog, "ERROR")


def test_an_agent_status_query_without_exactly_one_row_fails_naming_the_property(standin):
    standin.create_table(CUSTOMERS)
    standin.enable_db()
    standin.enable_table("dbo", "customers")
    config = {**standin.properties(), "snapshot.mode": "no_data",
              "database.sqlserver.agent.status.query": "SELECT 1 WHERE 1 = 0"}
    message = _start_error(config)
    assert "database.sqlserver.agent.status.query returned no rows" in message and "exactly one value" in message


def test_properties_accepted_but_not_implemented_are_warned_about_once(inventory, caplog):
    config = {**inventory.properties(), "snapshot.mode": "initial_only", "streaming.fetch.size": 100,
              "include.schema.changes": "true", "query.fetch.size": 100}
    with caplog.at_level("WARNING"):
        Engine(config, offset_store=MemoryOffsetStore()).run(lambda records: None)
    messages = [r.getMessage() for r in caplog.records]
    assert not any("streaming.fetch.size" in m or "include.schema.changes" in m for m in messages)  # implemented
    assert sum("query.fetch.size" in m for m in messages) == 1, messages  # catalogued: accepted without effect

def test_a_table_enabled_later_for_a_subset_of_its_columns_is_altered_to_it_as_debezium_migrates_it(standin):
    """Debezium 2.7.4: the new capture instance's start LSN lies in the poll's [from, to) range, so it becomes a
    schema change checkpoint; migrateTable compares the snapshot's table with the captured columns' and sends an
    ALTER before the first change at or after that LSN, which then has the captured columns only."""
    standin.create_table(CUSTOMERS)
    standin.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'b', 'a@b')")
    standin.enable_db()
    standin.agent.start()
    config = {**standin.properties(), "snapshot.mode": "initial", "poll.interval.ms": 10}

    def enable_and_insert():
        standin.enable_table("dbo", "customers", columns=["id", "email"])
        standin.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('e', 'f', 'e@f')")
    customers = lambda rs: [r for r in rs if r.topic.endswith(".customers") and r.value is not None]  # noqa: E731
    run = run_until(config, lambda rs: len(customers(rs)) >= 2, "the insert after sys.sp_cdc_enable_table",
                    action=enable_and_insert, settle=0.3)
    changes = [r for r in run.records if r.topic == "server1" and r.value is not None]
    kinds = [(c["type"], [col["name"] for col in c["table"]["columns"]])
             for r in changes for c in r.value["tableChanges"]]
    assert kinds == [("CREATE", ["id", "first_name", "last_name", "email"]), ("ALTER", ["id", "email"])], kinds
    alter = run.records.index(changes[-1])
    insert = next(i for i, r in enumerate(run.records) if r.value and r.value.get("op") == "c")
    assert alter < insert
    assert run.records[insert].value["after"] == {"id": 1002, "email": "e@f"}
