"""The Db2 blocking snapshot on the stand-in: where it pauses the stream, the positions, markers and CREATEs of its
records, a restart in its middle, as Debezium 2.7.4's Db2 connector.

Db2StreamingChangeEventSource.execute reads one window (every CD table up to the max LSN) per iteration and only
after it checks ``context.isPaused()``: the signal row is handed to the source channel inside the window, so the
changes committed after it in that window reach the topics before the snapshot's records. The snapshot runs on the
stream's Db2OffsetContext (Db2SnapshotChangeEventSource.determineSnapshotOffset keeps the previous offset unless
``snapshot.mode=always``, which makes a new one at the max LSN), so its CREATEs and READs carry the ``change_lsn``
and ``commit_lsn`` of the window's last change, and streaming resumes from that same context.
"""

from __future__ import annotations

import json
import time

import psycopg
from kit.engine import EngineThread, streaming_with_notifications

from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.lsn import Lsn
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

SIGNAL = [("ID", "VARCHAR(42) NOT NULL"), ("TYPE", "VARCHAR(32) NOT NULL"), ("DATA", "VARCHAR(2048)")]
INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '
CUSTOMERS = "mydatabase.MYSCHEMA.CUSTOMERS"
PARTITION = {"server": "mydatabase"}


def _lsns(source_or_offset: dict) -> tuple:
    return source_or_offset.get("change_lsn"), source_or_offset.get("commit_lsn")


def _signal(db, signal_id: str, *collections: str) -> None:
    data = json.dumps({"data-collections": list(collections), "type": "blocking"})
    db.execute('INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)', (signal_id, "execute-snapshot", data))


def _config(db, **extra) -> dict:
    db.create_table("MYSCHEMA", "DEBEZIUM_SIGNAL", SIGNAL, key=["ID"])
    db.add_table("MYSCHEMA", "DEBEZIUM_SIGNAL")
    return db.properties(**{"signal.data.collection": "MYSCHEMA.DEBEZIUM_SIGNAL", "snapshot.mode": "no_data",
                            "table.include.list": "MYSCHEMA.CUSTOMERS", "poll.interval.ms": 50, **extra})


def _started(config: dict, store: MemoryOffsetStore, history=None, slow: float = 0.0) -> tuple[EngineThread, list]:
    return streaming_with_notifications(config, store, history, slow)


def _noted(notes: list, kind: str) -> list:
    return [n for n in notes if n.aggregate_type == "Initial Snapshot" and n.type == kind]


def _reads(records: list) -> list:
    return [r for r in records if r.value and r.value.get("op") == "r"]


def test_changes_after_the_signal_in_its_window_are_streamed_before_the_snapshot(inventory):
    config = _config(inventory)
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, notes = _started(config, store, history)
    try:
        # The agent captures the signal and the two transactions after it in one go: one window holds all three.
        inventory.agent.stop()
        _signal(inventory, "b-1", "MYSCHEMA.CUSTOMERS")
        inventory.execute(INSERT + "('New', 'One', 'new@x')")
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'sally@x\' WHERE "ID" = 1001')
        inventory.agent.start()
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 5, "the blocking snapshot", 60)
        inventory.execute(INSERT + "('Later', 'Two', 'later@x')")
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "c" and r.key == {"ID": 1006} for r in rs),
                    "the insert after the snapshot", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value and r.topic in (CUSTOMERS, "mydatabase")]
    # no_data's schema snapshot first (a CREATE per captured table, the signal table's included), then the stream.
    records = records[next(i for i, r in enumerate(records) if r.topic == CUSTOMERS):]
    kinds = [("schema" if r.topic == "mydatabase" else "customers", r.value.get("op")) for r in records]
    # The window's insert and update (each once), then the snapshot (its CREATE, then the rows, the insert and
    # the update included), then the stream again.
    assert kinds == [("customers", "c"), ("customers", "u"), ("schema", None), *[("customers", "r")] * 5,
                     ("customers", "c")]
    insert, update, create, *reads, last = records
    assert (insert.key, update.key, last.key) == ({"ID": 1005}, {"ID": 1001}, {"ID": 1006})
    assert sorted((r.key["ID"], r.value["after"]["EMAIL"]) for r in reads) == [
        (1001, "sally@x"), (1002, "gbailey@foobar.com"), (1003, "ed@walker.com"), (1004, "annek@noanswer.org"),
        (1005, "new@x")]
    # Every position of the snapshot is the stream's where it paused: the window's last change (the update), not
    # the signal's row nor the insert; the source block has no event_serial_no (Db2SourceInfoStructMaker).
    paused = _lsns(update.value["source"])
    assert all(paused) and paused != _lsns(insert.value["source"])
    assert _lsns(create.value["source"]) == paused and create.value["source"]["snapshot"] == "true"
    assert {_lsns(r.value["source"]) for r in reads} == {paused}
    assert all("event_serial_no" not in r.value["source"] for r in [create, *reads])
    # The initial snapshot's markers.
    assert [r.value["source"]["snapshot"] for r in reads] == ["first", "true", "true", "true", "last"]
    # Their offsets: the paused position plus what is left to read; afterwards the last change's.
    assert {_lsns(r.offset) for r in [create, *reads]} == {_lsns(update.offset)} == {paused}
    assert all("blocking_snapshot" in r.offset for r in [create, *reads])
    assert _lsns(store.get(PARTITION)) == _lsns(last.value["source"])
    assert "blocking_snapshot" not in store.get(PARTITION)
    # The CREATE is in the schema history, at the paused position.
    recorded = [h for h in history.records() if h["tableChanges"][0]["id"] == '"MYSCHEMA"."CUSTOMERS"']
    assert recorded[-1]["tableChanges"][0]["type"] == "CREATE" and _lsns(recorded[-1]["position"]) == paused

    # A restart goes on from there: only what came after.
    inventory.execute(INSERT + "('After', 'Restart', 'after@x')")
    runner, _ = _started(config, store, history)
    try:
        runner.wait(lambda rs: any(r.value and r.key == {"ID": 1007} for r in rs), "the next insert", 60)
    finally:
        runner.stop()
    assert [(r.value["op"], r.key) for r in runner.records if r.value and r.topic == CUSTOMERS] == \
        [("c", {"ID": 1007})]


def test_create_events_then_the_rows_of_each_table_with_the_initial_snapshots_markers(inventory):
    """A CREATE for each table (the signal table too when the signal names it, which gives no rows), all before
    the rows, each recorded in the schema history; then the rows table by table with their markers."""
    inventory.create_table("MYSCHEMA", "ORDERS", [("ID", "INTEGER NOT NULL"), ("QTY", "INTEGER NOT NULL")],
                           key=["ID"])
    inventory.execute('INSERT INTO "MYSCHEMA"."ORDERS" VALUES (1, 10), (2, 20)')
    inventory.add_table("MYSCHEMA", "ORDERS")
    config = _config(inventory, **{"table.include.list": "MYSCHEMA.CUSTOMERS,MYSCHEMA.ORDERS"})
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, notes = _started(config, store, history)
    try:
        inventory.execute('UPDATE "MYSCHEMA"."ORDERS" SET "QTY" = 11 WHERE "ID" = 1')
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "u" for r in rs), "the update", 60)
        before = len(list(history.records()))
        _signal(inventory, "b-2", "MYSCHEMA.CUSTOMERS", "MYSCHEMA.ORDERS", "MYSCHEMA.DEBEZIUM_SIGNAL")
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 6, "the blocking snapshot", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    update = next(r for r in records if r.value.get("op") == "u")
    # The blocking snapshot's CREATEs (no_data's schema snapshot sent its own before the update).
    creates = [r for r in records[records.index(update):] if r.topic == "mydatabase"]
    reads = _reads(records)
    assert [c.value["tableChanges"][0]["id"] for c in creates] == [
        '"MYSCHEMA"."CUSTOMERS"', '"MYSCHEMA"."ORDERS"', '"MYSCHEMA"."DEBEZIUM_SIGNAL"']
    assert {c.value["tableChanges"][0]["type"] for c in creates} == {"CREATE"}
    assert [c["name"] for c in creates[1].value["tableChanges"][0]["table"]["columns"]] == ["ID", "QTY"]
    assert records.index(creates[-1]) < records.index(reads[0])
    assert [(r.topic.rsplit(".", 1)[1], r.value["source"]["snapshot"]) for r in reads] == [
        ("CUSTOMERS", "first"), ("CUSTOMERS", "true"), ("CUSTOMERS", "true"), ("CUSTOMERS", "last_in_data_collection"),
        ("ORDERS", "first_in_data_collection"), ("ORDERS", "last")]
    assert sorted(r.value["after"]["QTY"] for r in reads if r.topic.endswith("ORDERS")) == [11, 20]
    # The signal's own row is the window's last change: the stream's position at the pause. (The update was
    # streamed in an earlier window.)
    paused = {_lsns(r.value["source"]) for r in [*creates, *reads]}
    assert len(paused) == 1 and Lsn.parse(paused.pop()[1]) > Lsn.parse(update.value["source"]["commit_lsn"])
    recorded = list(history.records())[before:]
    assert [(h["tableChanges"][0]["type"], h["tableChanges"][0]["id"]) for h in recorded] == [
        ("CREATE", '"MYSCHEMA"."CUSTOMERS"'), ("CREATE", '"MYSCHEMA"."ORDERS"'),
        ("CREATE", '"MYSCHEMA"."DEBEZIUM_SIGNAL"')]


def test_snapshot_isolation_mode_exclusive_locks_the_tables_as_the_initial_snapshot(inventory, caplog):
    """snapshot.isolation.mode=exclusive takes the initial snapshot's locks: a writer's open transaction makes the
    blocking snapshot fail within snapshot.lock.timeout.ms, the log naming the table (ABORTED carries only the
    connector's name, as Debezium's); streaming goes on."""
    config = _config(inventory, **{"snapshot.isolation.mode": "exclusive", "snapshot.lock.timeout.ms": "1000"})
    store = MemoryOffsetStore()
    runner, notes = _started(config, store)
    writer = psycopg.connect(inventory.conninfo)
    try:
        writer.execute(INSERT + "('w', 'w', 'w@w')")  # uncommitted: holds a lock on CUSTOMERS
        _signal(inventory, "b-3", "MYSCHEMA.CUSTOMERS")
        runner.wait(lambda rs: _noted(notes, "ABORTED"), "the blocking snapshot's failure", 60)
        writer.commit()
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "c" and r.key == {"ID": 1005} for r in rs),
                    "the writer's insert streamed", 60)
    finally:
        writer.close()
        runner.stop()
    (aborted,) = _noted(notes, "ABORTED")
    assert aborted.additional_data == {"connector_name": aborted.additional_data["connector_name"]}
    (failed,) = [r.getMessage() for r in caplog.records if "blocking snapshot b-3 failed" in r.getMessage()]
    assert "MYSCHEMA.CUSTOMERS" in failed and "snapshot.lock.timeout.ms=1000" in failed
    assert not _reads(runner.records)


def test_a_stop_in_the_middle_resumes_the_snapshot_then_streams_from_the_pause(inventory):
    """The snapshot's offsets carry the paused position and the tables left: a restart reads the rest (the current
    table from its start), then streams from the pause, so nothing streamed before the snapshot comes again; once
    done, the stored offset no longer names it (a further restart does not take it again)."""
    inventory.create_table("MYSCHEMA", "ITEMS", [("ID", "INTEGER NOT NULL"), ("V", "INTEGER NOT NULL")], key=["ID"])
    inventory.execute('INSERT INTO "MYSCHEMA"."ITEMS" SELECT g, 0 FROM generate_series(1, 3000) g')
    inventory.add_table("MYSCHEMA", "ITEMS")
    config = _config(inventory, **{"table.include.list": "MYSCHEMA.ITEMS", "max.batch.size": 200,
                                   "max.queue.size": 400, "snapshot.fetch.size": 100})
    items = "mydatabase.MYSCHEMA.ITEMS"
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, _ = _started(config, store, history, slow=0.05)
    try:
        inventory.agent.stop()
        _signal(inventory, "b-4", "MYSCHEMA.ITEMS")
        inventory.execute('INSERT INTO "MYSCHEMA"."ITEMS" VALUES (100001, 1)')
        inventory.execute('UPDATE "MYSCHEMA"."ITEMS" SET "V" = 7 WHERE "ID" = 1')
        inventory.agent.start()
        runner.wait(lambda rs: len(_reads(rs)) >= 300, "the first rows of the snapshot", 60)
    finally:
        runner.stop()
    before = [r for r in runner.records if r.value and r.topic == items]
    update = next(r for r in before if r.value["op"] == "u")
    assert [r.value["op"] for r in before if r.value["op"] != "r"] == ["c", "u"]
    stored = store.get(PARTITION)
    assert "blocking_snapshot" in stored and _lsns(stored) == _lsns(update.value["source"])
    assert len(_reads(before)) < 3001  # stopped in the middle

    runner, notes = _started(config, store, history)
    try:
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 3001, "the rest of the snapshot", 60)
        time.sleep(0.5)  # idle polls: their checkpoints are stored
        assert "blocking_snapshot" not in store.get(PARTITION)
        inventory.execute('INSERT INTO "MYSCHEMA"."ITEMS" VALUES (100002, 2)')
        runner.wait(lambda rs: any(r.value and r.key == {"ID": 100002} for r in rs), "the insert after it", 60)
    finally:
        runner.stop()
    after = [r for r in runner.records if r.value and r.topic == items]
    # The table again from its start at the same paused position; then only the change made after: the insert
    # and the update of the signal's window are not streamed again.
    assert sorted(r.key["ID"] for r in _reads(after)) == [*range(1, 3001), 100001]
    assert {_lsns(r.value["source"]) for r in _reads(after)} == {_lsns(update.value["source"])}
    assert [r.value["source"]["snapshot"] for r in _reads(after)][::3000] == ["first", "last"]
    assert [(r.value["op"], r.key["ID"]) for r in after if r.value["op"] != "r"] == [("c", 100002)]
    assert "blocking_snapshot" not in store.get(PARTITION)

    # Done: another restart streams on, with no snapshot.
    inventory.execute('INSERT INTO "MYSCHEMA"."ITEMS" VALUES (100003, 3)')
    runner, _ = _started(config, store, history)
    try:
        runner.wait(lambda rs: any(r.value and r.key == {"ID": 100003} for r in rs), "the next insert", 60)
    finally:
        runner.stop()
    assert [(r.value["op"], r.key["ID"]) for r in runner.records if r.value and r.topic == items] == [("c", 100003)]


def test_snapshot_mode_always_gives_the_snapshot_the_max_lsn(inventory):
    """determineSnapshotOffset with snapshot.mode=always: a new offset context at the max LSN read in the snapshot's
    transaction (commit_lsn only), not the stream's position."""
    config = _config(inventory, **{"snapshot.mode": "always"})
    runner, notes = _started(config, MemoryOffsetStore())
    try:
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'s@x\' WHERE "ID" = 1001')
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "u" for r in rs), "the update", 60)
        runner.engine.signal("execute-snapshot", {"data-collections": ["MYSCHEMA.CUSTOMERS"], "type": "blocking"})
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 8, "the blocking snapshot", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    update = next(r for r in records if r.value.get("op") == "u")
    after = records[records.index(update) + 1:]
    reads = _reads(after)
    (create,) = [r for r in after if r.topic == "mydatabase"]
    assert len(reads) == 4
    positions = {_lsns(r.value["source"]) for r in [create, *reads]}
    assert len(positions) == 1
    change_lsn, commit_lsn = positions.pop()
    assert change_lsn is None
    # The register's highest synchpoint when the snapshot began: above the stream's last change, at most now's.
    now = inventory.execute("SELECT max(synchpoint) FROM asncdc.ibmsnap_register")[0][0]
    assert Lsn.parse(update.value["source"]["commit_lsn"]) < Lsn.parse(commit_lsn) <= Lsn(bytes(now))


def test_streaming_converts_with_the_structure_the_blocking_snapshot_read(inventory):
    """A column added while the connector was down reaches the events at the table's first changes after the restart
    (Debezium 2.7.4's migrateTable: an ALTER with the catalog's definition, the table's CD_NEW_SYNCHPOINT being above
    the stored position); a blocking snapshot's CREATE and rows have it too, so do the changes streamed after it,
    also after a restart (the history replays the ALTER and the blocking snapshot's CREATE: nothing announced)."""
    config = _config(inventory, **{"snapshot.mode": "initial"})  # its CREATE is the history's definition
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, _ = _started(config, store, history)
    runner.stop()
    inventory.add_column("MYSCHEMA", "CUSTOMERS", "PHONE", "VARCHAR(20)")
    inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "PHONE" = \'555\'')

    def updated(email: str):
        return lambda rs: any(r.value and r.value.get("op") == "u" and r.value["after"]["EMAIL"] == email for r in rs)

    runner, notes = _started(config, store, history)
    try:
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'a@x\' WHERE "ID" = 1001')
        runner.wait(updated('a@x'), "the update before", 60)
        _signal(inventory, "b-5", "MYSCHEMA.CUSTOMERS")
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 4, "the blocking snapshot", 60)
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'b@x\' WHERE "ID" = 1002')
        runner.wait(updated('b@x'), "the update after", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value and r.topic in (CUSTOMERS, "mydatabase")]
    before = [r for r in records if r.key == {"ID": 1001} and r.value["op"] == "u"][-1]
    alter, create = [r for r in records if r.topic == "mydatabase"]
    assert [r.value["tableChanges"][0]["type"] for r in (alter, create)] == ["ALTER", "CREATE"]
    after = [r for r in records if r.key == {"ID": 1002} and r.value["op"] == "u"][-1]
    assert records.index(alter) < records.index(before) and records.index(create) < records.index(after)
    assert before.value["after"]["PHONE"] == "555"
    assert [c["name"] for c in create.value["tableChanges"][0]["table"]["columns"]] == [
        "ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "PHONE"]
    assert {r.value["after"]["PHONE"] for r in _reads(records)} == {"555"}
    assert after.value["after"]["PHONE"] == "555" and after.value["after"]["EMAIL"] == "b@x"

    runner, _ = _started(config, store, history)
    try:
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'c@x\' WHERE "ID" = 1003')
        runner.wait(updated('c@x'), "the update after a restart", 60)
    finally:
        runner.stop()
    (again,) = [r for r in runner.records if r.value and r.topic == CUSTOMERS]
    assert again.value["after"]["PHONE"] == "555"
    assert not [r for r in runner.records if r.topic == "mydatabase"]  # nothing announced again


def test_include_schema_changes_false_records_the_creates_without_sending_them(inventory):
    config = _config(inventory, **{"include.schema.changes": "false"})
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, notes = _started(config, store, history)
    try:
        before = len(list(history.records()))
        _signal(inventory, "b-6", "MYSCHEMA.CUSTOMERS")
        runner.wait(lambda rs: _noted(notes, "COMPLETED") and len(_reads(rs)) >= 4, "the blocking snapshot", 60)
    finally:
        runner.stop()
    assert not [r for r in runner.records if r.topic == "mydatabase"]
    assert [r.value["source"]["snapshot"] for r in _reads(runner.records)] == ["first", "true", "true", "last"]
    recorded = list(history.records())[before:]
    assert [(h["tableChanges"][0]["type"], h["tableChanges"][0]["id"]) for h in recorded] == [
        ("CREATE", '"MYSCHEMA"."CUSTOMERS"')]
