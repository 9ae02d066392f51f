"""SQL Server schema history and schema change events on the stand-in: CREATE at the snapshot, ALTER on a new capture instance."""

from __future__ import annotations

import json

import pytest

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)
from tests.test_sqlserver_stream import _run
from kit.engine import EngineThread

#: The chapter's example (2.7 SQL Server chapter, "schema change topic"): the customers table's CREATE.
CUSTOMERS_COLUMNS = [
    {"name": "id", "jdbcType": 4, "nativeType": None, "typeName": "int identity", "typeExpression": "int identity",
     "charsetName": None, "length": 10, "scale": 0, "position": 1, "optional": False, "autoIncremented": False,
     "generated": False, "comment": None, "defaultValueExpression": None, "enumValues": None},
    *[{"name": n, "jdbcType": 12, "nativeType": None, "typeName": "varchar", "typeExpression": "varchar",
       "charsetName": None, "length": 255, "scale": None, "position": p, "optional": False, "autoIncremented": False,
       "generated": False, "comment": None, "defaultValueExpression": None, "enumValues": None}
      for p, n in ((2, "first_name"), (3, "last_name"), (4, "email"))],
]


def _schema(records, prefix="server1"):
    return [r for r in records if r.topic == prefix]


def _data(records):
    return [r for r in records if r.topic.endswith(".customers")]


def test_snapshot_sends_the_chapters_create_event_before_the_data(inventory, tmp_path):
    history = tmp_path / "history.dat"
    config = inventory.properties(**{"schema.history.internal.file.filename": str(history)})
    records = _run(config, MemoryOffsetStore(), lambda rs: len(_data(rs)) >= 4)
    assert records[0].topic == "server1"
    (event,) = _schema(records)
    assert event.key == {"databaseName": inventory.dbname}
    assert event.key_schema.name == "io.debezium.connector.sqlserver.SchemaChangeKey"
    assert event.value_schema.name == "io.debezium.connector.sqlserver.SchemaChangeValue"
    value = event.value
    assert (value["databaseName"], value["schemaName"], value["ddl"]) == (inventory.dbname, "dbo", None)
    source = value["source"]
    assert (source["snapshot"], source["db"], source["schema"], source["table"], source["change_lsn"]) == (
        "true", inventory.dbname, "dbo", "customers", None)
    assert source["commit_lsn"] == _data(records)[0].value["source"]["commit_lsn"]
    (change,) = value["tableChanges"]
    assert change["type"] == "CREATE" and change["id"] == f'"{inventory.dbname}"."dbo"."customers"'
    assert change["table"] == {"defaultCharsetName": None, "primaryKeyColumnNames": ["id"],
                               "columns": CUSTOMERS_COLUMNS, "comment": None}
    # The history file holds the same structure, positioned at the snapshot's LSN.
    (recorded,) = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    assert recorded["source"] == {"server": "server1", "database": inventory.dbname}
    assert recorded["position"] == {"snapshot": True, "snapshot_completed": False, "commit_lsn": source["commit_lsn"]}
    assert recorded["tableChanges"][0]["table"]["columns"][0]["typeName"] == "int identity"


def test_a_new_capture_instance_sends_alter_before_its_first_change_and_restarts_read_the_history(inventory, tmp_path):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"schema.history.internal.file.filename": str(tmp_path / "history.dat")})
    _run(config, store, lambda rs: len(_data(rs)) >= 4)
    inventory.add_column("dbo", "customers", "phone_number", "VARCHAR(32)")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'a', 'a@x')")
    inventory.wait_captured()
    inventory.enable_table("dbo", "customers", "dbo_customers_v2")
    inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email, phone_number) "
                      "VALUES ('c', 'c', 'c@x', '+1-555-0101')")
    inventory.wait_captured()
    # A restart in between: the history (not the catalog) says what was known, so nothing is announced twice.
    records = _run(config, store, lambda rs: len(_data(rs)) >= 2)
    topics = ["schema" if r.topic == "server1" else r.value["after"]["id"] for r in records if r.value]
    assert topics == [1005, "schema", 1006]
    alter = _schema(records)[0].value
    assert alter["ddl"] == "N/A" and alter["tableChanges"][0]["type"] == "ALTER"
    assert [c["name"] for c in alter["tableChanges"][0]["table"]["columns"]] == [
        "id", "first_name", "last_name", "email", "phone_number"]
    assert alter["source"]["snapshot"] == "false"
    assert alter["source"]["commit_lsn"] == _data(records)[0].value["source"]["commit_lsn"]
    inventory.execute("DELETE FROM dbo.customers WHERE id = 1006")
    inventory.wait_captured()
    again = _run(config, store, lambda rs: len(_data(rs)) >= 1)
    assert _schema(again) == []


def test_include_schema_changes_false_still_records_the_history(inventory, tmp_path):
    history = tmp_path / "history.dat"
    config = inventory.properties(**{"include.schema.changes": "false",
                                     "schema.history.internal.file.filename": str(history)})
    records = _run(config, MemoryOffsetStore(), lambda rs: len(_data(rs)) >= 4)
    assert _schema(records) == []
    assert "customers" in history.read_text()


def test_no_data_sends_the_create_events_and_a_restart_with_nothing_new_sends_none(inventory, tmp_path):
    store = MemoryOffsetStore()
    config = inventory.properties(**{"snapshot.mode": "no_data",
                                     "schema.history.internal.file.filename": str(tmp_path / "history.dat")})
    first = _run(config, store, lambda rs: len(_schema(rs)) >= 1)
    assert [r.value["tableChanges"][0]["type"] for r in first] == ["CREATE"]
    # The only CREATE is the snapshot's last record: no data follows (SchemaHistoryTopicIT.streamingSchemaChanges).
    assert first[0].value["source"]["snapshot"] == "last"
    # Idle after the restart: its first position is the completed snapshot's offset, which is no new snapshot.
    import time

    again = _run(config, store, lambda rs: time.sleep(1.0) is None)
    assert again == []


def _prices(records):
    return [r for r in records if r.topic.endswith(".prices")]


def _amount_parameters(record):
    fields = {f.name: f.schema for f in record.value_schema.field("after").schema.fields}
    return fields["amount"].parameters


def _prices_streamed(inventory, tmp_path, **extra):
    """``dbo.prices (id, amount DECIMAL(10,2))`` with one row, captured and streamed once: (config, offsets)."""
    inventory.create_table("CREATE TABLE dbo.prices (id INT NOT NULL PRIMARY KEY, amount DECIMAL(10,2))")
    inventory.execute("INSERT INTO dbo.prices VALUES (1, 1.50)")
    inventory.enable_table("dbo", "prices")
    store = MemoryOffsetStore()
    config = inventory.properties(**{"table.include.list": "dbo.prices",
                                     "schema.history.internal.file.filename": str(tmp_path / "history.dat"), **extra})
    _run(config, store, lambda rs: len(_prices(rs)) >= 1)
    return config, store


def test_a_type_changed_while_stopped_converts_with_the_historys_type_until_the_new_instance(inventory, tmp_path):
    config, store = _prices_streamed(inventory, tmp_path)
    # While the connector is down: a change under the old type, the ALTER, a new capture instance, a change under it.
    inventory.execute("INSERT INTO dbo.prices VALUES (2, 2.25)")
    inventory.wait_captured()
    inventory.alter_column("dbo", "prices", "amount", "DECIMAL(12,4)")
    inventory.enable_table("dbo", "prices", "dbo_prices_v2")
    inventory.execute("INSERT INTO dbo.prices VALUES (3, 3.1234)")
    inventory.wait_captured()
    records = _run(config, store, lambda rs: len(_prices(rs)) >= 2)
    kinds = ["schema" if r.topic == "server1" else r.value["after"]["id"] for r in records if r.value]
    assert kinds == [2, "schema", 3]
    old, new = _prices(records)
    assert _amount_parameters(old) == {"scale": "2", "connect.decimal.precision": "10"}
    assert _amount_parameters(new) == {"scale": "4", "connect.decimal.precision": "12"}
    (alter,) = _schema(records)
    (column,) = [c for c in alter.value["tableChanges"][0]["table"]["columns"] if c["name"] == "amount"]
    assert (column["length"], column["scale"]) == (12, 4)


def test_a_type_changed_with_no_new_capture_instance_keeps_the_historys_type_and_no_alter(inventory, tmp_path):
    """As Debezium 2.7.4: the current instance converts with the history's table (no event) until a new instance."""
    config, store = _prices_streamed(inventory, tmp_path)
    # While the connector is down: the column's type changes, the capture instance stays.
    inventory.alter_column("dbo", "prices", "amount", "DECIMAL(12,4)")
    inventory.execute("INSERT INTO dbo.prices VALUES (2, 2.25)")
    inventory.wait_captured()
    records = _run(config, store, lambda rs: len(_prices(rs)) >= 1)
    assert _schema(records) == []
    (change,) = _prices(records)
    assert _amount_parameters(change) == {"scale": "2", "connect.decimal.precision": "10"}
    assert change.value["after"]["id"] == 2
    # A new capture instance then brings the catalog's type, announced by an ALTER when streaming reaches it.
    inventory.enable_table("dbo", "prices", "dbo_prices_v2")
    inventory.execute("INSERT INTO dbo.prices VALUES (3, 3.1234)")
    inventory.wait_captured()
    records = _run(config, store, lambda rs: len(_prices(rs)) >= 1)
    (alter,) = _schema(records)
    (column,) = [c for c in alter.value["tableChanges"][0]["table"]["columns"] if c["name"] == "amount"]
    assert (column["length"], column["scale"]) == (12, 4)
    (new,) = _prices(records)
    assert _amount_parameters(new) == {"scale": "4", "connect.decimal.precision": "12"}


SIGNAL = "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


def test_a_blocking_snapshot_records_and_sends_the_catalogs_structure_and_a_restart_keeps_it(inventory, tmp_path):
    """As Debezium 2.7.4 (a blocking snapshot's task has snapshotSchema true: createSchemaChangeEventsForTables
    records and sends a CREATE for each signalled table before its rows): after a column's type changed with no
    new capture instance, the blocking snapshot's CREATE carries the catalog's type, the history holds it, and a
    restart converts with it (no ALTER)."""
    inventory.create_table(SIGNAL)
    inventory.enable_table("dbo", "debezium_signal")
    db = inventory.dbname
    config, store = _prices_streamed(inventory, tmp_path, **{"signal.data.collection": f"{db}.dbo.debezium_signal"})
    inventory.alter_column("dbo", "prices", "amount", "DECIMAL(12,4)")

    def signal():
        inventory.execute("INSERT INTO dbo.debezium_signal VALUES ('b-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"" + db + ".dbo.prices\"], \"type\": \"blocking\"}')")

    logged = []

    def until(records):
        if not logged and any(r.value and r.value.get("op") == "r" for r in _prices(records)):
            # A later row streamed after the snapshot's end, so its offset (not the snapshot's) is what is stored.
            # (Inserted once the snapshot is seen: in the signal's poll window it would come before the snapshot,
            # as in Debezium, whose stream pauses at the end of its poll round.)
            logged.append(True)
            inventory.execute("INSERT INTO dbo.debezium_signal VALUES ('l-1', 'log', '{\"message\": \"after\"}')")
        return any(r.key == {"id": "l-1"} for r in records)

    records = _run(config, store, until, signal)
    kinds = ["schema" if r.topic == "server1" else r.topic.rsplit(".", 1)[1] for r in records if r.value]
    assert kinds == ["debezium_signal", "schema", "prices", "debezium_signal"]
    row, create, read, _ = (r.value for r in records if r.value)
    (change,) = create["tableChanges"]
    assert (change["type"], change["id"], create["ddl"]) == ("CREATE", f'"{db}"."dbo"."prices"', None)
    (amount,) = [c for c in change["table"]["columns"] if c["name"] == "amount"]
    assert (amount["length"], amount["scale"]) == (12, 4)
    # Its source is the snapshot's: snapshot true, at the position streaming paused at (the end of the signal's
    # poll window: the signal's row, the window's last), as the rows (Debezium's blocking snapshot runs on the
    # stream's offset context).
    source = create["source"]
    assert (source["snapshot"], source["table"]) == ("true", "prices")
    assert [source[k] for k in ("change_lsn", "commit_lsn", "event_serial_no")] == \
        [row["source"][k] for k in ("change_lsn", "commit_lsn", "event_serial_no")] == \
        [read["source"][k] for k in ("change_lsn", "commit_lsn", "event_serial_no")]
    assert read["source"]["snapshot"] == "last"
    assert _amount_parameters(_prices(records)[0]) == {"scale": "4", "connect.decimal.precision": "12"}
    recorded = [json.loads(line) for line in (tmp_path / "history.dat").read_text().splitlines() if line.strip()]
    (last,) = recorded[-1]["tableChanges"]
    assert last["type"] == "CREATE" and [c["scale"] for c in last["table"]["columns"]] == [0, 4]
    assert recorded[-1]["position"]["commit_lsn"] == source["commit_lsn"]

    # Across a restart the history's structure is the catalog's: a change converts with it, and nothing is announced.
    inventory.execute("INSERT INTO dbo.prices VALUES (2, 2.2525)")
    inventory.wait_captured()
    records = _run(config, store, lambda rs: len(_prices(rs)) >= 1)
    assert _schema(records) == []
    (change,) = _prices(records)
    assert change.value["after"]["id"] == 2
    assert _amount_parameters(change) == {"scale": "4", "connect.decimal.precision": "12"}


def _alters(records):
    return [r for r in _schema(records) if r.value["tableChanges"][0]["type"] == "ALTER"]


def test_an_alter_with_no_change_after_it_is_announced_at_the_next_poll(inventory, tmp_path):
    inventory.create_table("CREATE TABLE dbo.pings (id INT NOT NULL PRIMARY KEY)")
    inventory.enable_table("dbo", "pings")
    config = inventory.properties(**{"schema.history.internal.file.filename": str(tmp_path / "history.dat")})
    altered = []

    def until(records):
        if len(_data(records)) >= 4 and not altered:
            altered.append(True)
            inventory.add_column("dbo", "customers", "phone_number", "VARCHAR(32)")
            inventory.enable_table("dbo", "customers", "dbo_customers_v2")
            # Another table's change moves the max LSN past the new instance's start; customers has none.
            inventory.execute("INSERT INTO dbo.pings VALUES (1)")
        return bool(_alters(records))

    records = _run(config, MemoryOffsetStore(), until)
    (alter,) = _alters(records)
    assert [c["name"] for c in alter.value["tableChanges"][0]["table"]["columns"]][-1] == "phone_number"
    assert alter.value["source"]["table"] == "customers" and alter.value["source"]["snapshot"] == "false"
    assert not [r for r in _data(records) if r.value["op"] != "r"]


def _pings(records):
    return [r for r in records if r.topic.endswith(".pings")]


@pytest.mark.parametrize("race", [False, True], ids=["between-polls", "during-a-poll"])
def test_sp_cdc_disable_table_while_streaming_stops_the_table_silently(inventory, tmp_path, monkeypatch, caplog, race):
    """As Debezium 2.7.4: no DROP event or record; the other tables go on; enabled again, it streams again."""
    if race:
        # The instance check never sees the drop, so the window's query meets the missing function.
        from cdc_sqlserver.streaming import StreamReader

        monkeypatch.setattr(StreamReader, "_check_instances", lambda self: None)
    caplog.set_level("INFO")
    inventory.create_table("CREATE TABLE dbo.pings (id INT NOT NULL PRIMARY KEY)")
    inventory.enable_table("dbo", "pings")
    history = tmp_path / "history.dat"
    config = inventory.properties(**{"schema.history.internal.file.filename": str(history)})
    steps = []

    def disable():
        # Once streaming started: a drop before it is a table that had no capture instance to begin with.
        steps.append("disabled")
        inventory.disable_table("dbo", "pings", "dbo_pings")
        inventory.execute("INSERT INTO dbo.pings VALUES (1)")
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('a', 'a', 'a@x')")

    def until(records):
        if len(_data(records)) >= 5 and len(steps) == 1 and not race:
            # Enabled again with the same structure: streamed again, with no schema change event.
            steps.append("enabled")
            inventory.enable_table("dbo", "pings", "dbo_pings_again")
            inventory.execute("INSERT INTO dbo.pings VALUES (2)")
        return len(_data(records)) >= 5 and (race or len(_pings(records)) >= 1)

    records = _run(config, MemoryOffsetStore(), until, action=disable)
    assert [r.value["after"]["id"] for r in _pings(records)] == ([] if race else [2])
    assert [r.value["op"] for r in _data(records)][-1] == "c"
    assert [r.value["tableChanges"][0]["type"] for r in _schema(records)] == ["CREATE", "CREATE"]
    assert [json.loads(line)["tableChanges"][0]["type"] for line in history.read_text().splitlines()] == [
        "CREATE", "CREATE"]
    gone = "is gone (sys.sp_cdc_disable_table)" if race else "dbo_pings was dropped (sys.sp_cdc_disable_table)"
    assert gone in caplog.text


def _created(records):
    return [r.value["tableChanges"][0]["id"] for r in _schema(records)]


def test_the_snapshot_creates_every_table_of_the_database_unless_only_captured_tables_ddl(inventory):
    """Debezium 2.7.4's default store.only.captured.tables.ddl=false: a CREATE for every table, sorted, not only
    the captured ones (a table with CDC gets its capture instance's columns, one without all of its own)."""
    inventory.create_table("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, note VARCHAR(20))")
    inventory.create_table("CREATE TABLE dbo.audit (id INT NOT NULL PRIMARY KEY, what VARCHAR(20))")
    inventory.create_table("CREATE TABLE other.notes (id INT NOT NULL PRIMARY KEY)")
    inventory.enable_table("dbo", "audit")
    config = inventory.properties(**{"table.include.list": "dbo.customers,dbo.orders"})
    db = inventory.dbname
    records = _run(config, MemoryOffsetStore(), lambda rs: len(_data(rs)) >= 4)
    assert _created(records) == [f'"{db}"."dbo"."audit"', f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"',
                                 f'"{db}"."other"."notes"']
    orders = next(r.value for r in _schema(records) if r.value["tableChanges"][0]["id"].endswith('"orders"'))
    assert [c["name"] for c in orders["tableChanges"][0]["table"]["columns"]] == ["id", "note"]
    assert all(r.value["source"]["snapshot"] == "true" for r in _schema(records))

    only = _run({**config, "schema.history.internal.store.only.captured.tables.ddl": "true"}, MemoryOffsetStore(),
                lambda rs: len(_data(rs)) >= 4)
    assert _created(only) == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']
    schemas = _run({**config, "schema.include.list": "dbo",
                    "schema.history.internal.store.only.captured.databases.ddl": "true"}, MemoryOffsetStore(),
                   lambda rs: len(_data(rs)) >= 4)
    assert _created(schemas) == [f'"{db}"."dbo"."audit"', f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']


def test_debeziums_schema_history_topic_it_streaming_schema_changes(standin):
    """SchemaHistoryTopicIT.streamingSchemaChanges (no_data, include.schema.changes): a CREATE for each of the three
    tables (tablec has no CDC) on the ``server1`` topic, keyed by databaseName, offset ``snapshot: true``, source
    snapshot true, true, last. Then a second capture instance of tableb (Debezium renames a column; the stand-in
    adds one): one ALTER whose offset is the last data event's before it, with no ``snapshot`` in the offset and
    source.snapshot not set (Debezium's Struct has null there; JsonConverter writes the field's default "false")."""
    for t in ("a", "b", "c"):
        standin.create_table(f"CREATE TABLE dbo.table{t} (id int primary key, col{t} varchar(30))")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    standin.agent.start()
    config = standin.properties(**{"snapshot.mode": "no_data", "include.schema.changes": "true"})
    runner = EngineThread(config).start()
    try:
        runner.wait(lambda rs: len(_schema(rs)) >= 3, "the three CREATE events")
        runner.wait_streaming()
        for i in range(10, 15):
            standin.execute(f"INSERT INTO dbo.tablea VALUES ({i}, 'a'); INSERT INTO dbo.tableb VALUES ({i}, 'b')")
        runner.wait(lambda rs: len(rs) >= 13, "the ten inserts")
        standin.wait_captured()
        standin.disable_table("dbo", "tableb", "dbo_tableb")
        standin.add_column("dbo", "tableb", "newcolb", "VARCHAR(30)")
        standin.enable_table("dbo", "tableb", "after_change")
        for i in range(100, 105):
            standin.execute(f"INSERT INTO dbo.tablea VALUES ({i}, 'a2'); "
                            f"INSERT INTO dbo.tableb (id, newcolb) VALUES ({i}, 'b2')")
        runner.wait(lambda rs: len(_schema(rs)) >= 4 and len(rs) >= 24, "the ALTER and the ten inserts")
    finally:
        runner.stop()
    records = runner.records
    creates = _schema(records)[:3]
    assert [r.value["source"]["snapshot"] for r in creates] == ["true", "true", "last"]
    assert [r.value["source"]["table"] for r in creates] == ["tablea", "tableb", "tablec"]
    for r in creates:
        assert r.key == {"databaseName": standin.dbname} and r.offset["snapshot"] is True
        assert [c["type"] for c in r.value["tableChanges"]] == ["CREATE"]
    (alter,) = _schema(records)[3:]
    before = records[records.index(alter) - 1]
    assert before.topic.endswith((".tablea", ".tableb")) and alter.offset == before.offset
    assert "snapshot" not in alter.offset and alter.value["source"]["snapshot"] == "false"
    assert [c["type"] for c in alter.value["tableChanges"]] == ["ALTER"]
    tableb = [r for r in records[records.index(alter):] if r.topic.endswith(".tableb")]
    assert len(tableb) == 5
    assert all([f.name for f in r.value_schema.field("after").schema.fields] == ["id", "colb", "newcolb"]
               for r in tableb)


def test_debeziums_change_table_set_it_change_column(standin):
    """SqlServerChangeTableSetIT.changeColumn: tableb's colb VARCHAR(30) becomes INT and a second capture instance
    (after_change) starts: tableb's events carry colb as a string ('10' for id 10) before, as int32 after, the
    Value schema named server1.<db>.dbo.tableb.Value with fields id, colb."""
    standin.create_table("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))")
    standin.create_table("CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.enable_table("dbo", "tableb")
    standin.agent.start()
    runner = EngineThread(standin.properties(**{"snapshot.mode": "no_data"})).start()

    def tableb(rs):
        return [r for r in rs if r.topic.endswith(".tableb")]

    try:
        runner.wait_streaming()
        for i in range(10, 15):
            standin.execute(f"INSERT INTO dbo.tablea VALUES ({i}, 'a'); INSERT INTO dbo.tableb VALUES ({i}, '{i}')")
        runner.wait(lambda rs: len(tableb(rs)) >= 5, "tableb's first five")
        standin.wait_captured()
        standin.alter_column("dbo", "tableb", "colb", "INT")
        standin.enable_table("dbo", "tableb", "after_change")
        for start in (100, 1000):
            for i in range(start, start + 5):
                standin.execute(f"INSERT INTO dbo.tablea VALUES ({i}, 'a2'); INSERT INTO dbo.tableb VALUES ({i}, '{i} ')")
        standin.wait_captured()
        runner.wait(lambda rs: len(tableb(rs)) >= 15, "tableb's fifteen")
    finally:
        runner.stop()
    events = tableb(runner.records)
    for n, record in enumerate(events):
        after_schema = record.value_schema.field("after").schema
        assert after_schema.name == f"server1.{standin.dbname}.dbo.tableb.Value"
        fields = {f.name: f.schema.to_json() for f in after_schema.fields}
        assert list(fields) == ["id", "colb"]
        after = record.value["after"]
        if n < 5:
            assert fields["colb"]["type"] == "string" and after["colb"] == str(after["id"])
        else:
            assert (fields["colb"]["type"], fields["colb"]["optional"]) == ("int32", True) and after["colb"] == after["id"]


@pytest.mark.parametrize("initial", [None, "('default_value')"], ids=["addDefaultValue", "alterDefaultValue"])
def test_debeziums_change_table_set_it_default_values(standin, initial):
    """SqlServerChangeTableSetIT.addDefaultValue / alterDefaultValue: a DEFAULT added (or replaced by
    ('new_default_value')) and a new capture instance: the next event's colb schema has the new default."""
    standin.create_table("CREATE TABLE dbo.table_dv (id int primary key, colb varchar(30))")
    if initial:
        standin.set_default("dbo", "table_dv", "colb", initial)
    standin.enable_db()
    standin.enable_table("dbo", "table_dv")
    standin.agent.start()
    runner = EngineThread(standin.properties(**{"snapshot.mode": "no_data"})).start()

    def rows(rs):
        return [r for r in rs if r.topic.endswith(".table_dv")]

    try:
        runner.wait_streaming()
        standin.execute("INSERT INTO dbo.table_dv VALUES (1, 'some_value')")
        runner.wait(lambda rs: len(rows(rs)) >= 1, "the first row")
        standin.wait_captured()
        new = "('new_default_value')" if initial else "('default_value')"
        standin.set_default("dbo", "table_dv", "colb", new)
        standin.enable_table("dbo", "table_dv", "after_change")
        standin.execute("INSERT INTO dbo.table_dv VALUES (2, 'some_value2')")
        runner.wait(lambda rs: len(rows(rs)) >= 2, "the second row")
    finally:
        runner.stop()
    first, second = rows(runner.records)[:2]
    colb = second.value_schema.field("after").schema.field("colb").schema
    assert colb.default == new[2:-2]
    assert first.value_schema.field("after").schema.field("colb").schema.default == (initial[2:-2] if initial else None)
