"""Debezium 2.7.4's SQL Server snapshot ITs on the stand-in: IncrementalSnapshotIT (AbstractIncrementalSnapshotTest,
AbstractIncrementalSnapshotWithSchemaChangesSupportTest), IncrementalSnapshotWithRecompileIT, BlockingSnapshotIT
(AbstractBlockingSnapshotTest), NotificationsIT (AbstractNotificationsIT) and SignalsIT.

The cases of one shape (populate, signal, change, read the topic back) are tests/data/sqlserver_incremental_snapshot_it
.yaml; the others are functions here, each naming the Debezium test it ports. The tables are IncrementalSnapshotIT's:
``a``/``b`` (pk int primary key, aa int), ``a42`` (four key columns named by message.key.columns, no primary key),
and its signal table without a primary key.

Not ported, and why:
- AbstractIncrementalSnapshotTest.insertsWithKafkaSnapshotSignal: its body is ``inserts`` (it sends through the
  signal table); the Kafka channel itself is tested with the core's channels.
- snapshotPreceededBySchemaChange and AbstractBlockingSnapshotTest.readsSchemaOnlyForSignaledTables: Debezium 2.7.4
  skips both for SQL Server (SkipWhenConnectorUnderTest, DBZ-4350).
- IncrementalSnapshotIT's testNotification runs with chunk size 1 (a thousand windows, each a watermark round trip
  through the stand-in's capture agent: minutes); IncrementalSnapshotWithRecompileIT's, chunk size 250, is ported.
- The JMX notification channel and JMX signal MBeans: cdc has no JMX; the same expectations are checked on the
  in-process listener (Engine.add_notification_listener) and channel (Engine.signal).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kit.engine import streaming_with_notifications

from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)
from test_sqlserver_databases import OTHER, second  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_incremental_snapshot_it.yaml").read_text())
ROW_COUNT = 1000
TABLES = ["CREATE TABLE dbo.a (pk int primary key, aa int)",
          "CREATE TABLE dbo.b (pk int primary key, aa int)",
          "CREATE TABLE dbo.a42 (pk1 integer, pk2 integer, pk3 integer, pk4 integer, aa integer)",
          "CREATE TABLE dbo.debezium_signal (id varchar(64), type varchar(32), data varchar(2048))"]
NOTIFICATIONS = "io.debezium.notification"


def _fill(value: Any, db: str) -> Any:
    if isinstance(value, str):
        return value.replace("{db}", db)
    if isinstance(value, dict):
        return {_fill(k, db): _fill(v, db) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, db) for v in value]
    return value


def _populate(standin, table: str, start: int = 0, count: int = ROW_COUNT) -> None:
    """AbstractSnapshotTest.populateTable: rows pk = i + 1, aa = i, in one transaction."""
    standin.execute(f"INSERT INTO dbo.{table} SELECT g + 1, g FROM generate_series({start}, {start + count - 1}) g")


def _setup(standin, populate: list[str] = ()) -> None:
    """IncrementalSnapshotIT.before() and the case's populate steps (CDC enabled on a and b once filled)."""
    for ddl in TABLES:
        standin.create_table(ddl)
    standin.enable_db()
    standin.enable_table("dbo", "debezium_signal")
    for what in populate:
        if what in ("a", "b"):
            _populate(standin, what)
            standin.enable_table("dbo", what)
        elif what == "a42":  # populate4PkTable
            standin.execute("INSERT INTO dbo.a42 SELECT (g + 1) / 1000, ((g + 1) / 100) % 10, ((g + 1) / 10) % 10, "
                            f"(g + 1) % 10, g FROM generate_series(0, {ROW_COUNT - 1}) g")
        elif what == "a42_nulls":  # insertsWithoutPksAndNull
            standin.execute("INSERT INTO dbo.a42 SELECT NULLIF(p1, 10), NULLIF(p2, 1), 0, 0, p1 + p2 "
                            "FROM generate_series(10, 30, 10) p1, generate_series(1, 3) p2")
        elif what.startswith("specific"):  # populateTableWithSpecificValue(2000, count, 12345678)
            count = int(what.partition("_")[2] or 10)
            standin.execute(f"INSERT INTO dbo.a SELECT {count} + g, 12345678 FROM generate_series(2001, 2000 + {count}) g")
        else:
            raise AssertionError(f"unknown populate step {what}")
    standin.agent.start()
    # waitForCdcTransactionPropagation: what was written before the connector starts is behind its first position.
    standin.wait_captured()


def _config(standin, **extra: Any) -> dict[str, Any]:
    """IncrementalSnapshotIT.config()."""
    return standin.properties(**{
        "snapshot.mode": "no_data", "signal.data.collection": f"{standin.dbname}.dbo.debezium_signal",
        "incremental.snapshot.chunk.size": 250, "incremental.snapshot.allow.schema.changes": True,
        "message.key.columns": "dbo.a42:pk1,pk2,pk3,pk4", "poll.interval.ms": 50, **extra})


def _signal(standin, type_: str, data: Any, signal_id: str = "ad-hoc") -> None:
    """A row of the signal table (sendAdHocSnapshotSignal and friends: every one is 'ad-hoc')."""
    text = data if isinstance(data, str) else json.dumps(data)
    standin.execute("INSERT INTO dbo.debezium_signal VALUES (%s, %s, %s)", (signal_id, type_, text))


def _signals_in_one_transaction(standin, rows: list[tuple[str, str, Any]]) -> None:
    """Signal rows committed together (one change-table transaction: handled one right after the other)."""
    values = ", ".join("('%s', '%s', '%s')" % (i, t, d if isinstance(d, str) else json.dumps(d)) for i, t, d in rows)
    standin.execute(f"INSERT INTO dbo.debezium_signal VALUES {values}")


def _updates(standin, transactions: int) -> None:
    """AbstractIncrementalSnapshotTest.updates: one transaction per range of ten keys (most update nothing)."""
    standin.execute(f"""DO $$ BEGIN FOR i IN 0..{transactions - 1} LOOP
        UPDATE dbo.a SET aa = aa + 2000 WHERE pk > i * 10 AND pk <= (i + 1) * 10; COMMIT; END LOOP; END $$""")


def _topic(records: list, db: str, table: str) -> list:
    return [r for r in records if r.topic == f"server1.{db}.dbo.{table}"]


def _key(record, kind: str) -> int:
    k = record.key
    if kind == "a42":
        return k["pk1"] * 1000 + k["pk2"] * 100 + k["pk3"] * 10 + k["pk4"]
    if kind == "a42_nulls":
        return (k["pk1"] if k["pk1"] is not None else 10) + (k["pk2"] if k["pk2"] is not None else 1)
    return k["pk"]


def _latest(records: list, kind: str) -> dict[int, int]:
    """consumeMixedWithIncrementalSnapshot's map: the last value of aa per key."""
    out: dict[int, int] = {}
    for r in records:
        if r.value is not None and r.value.get("after") is not None:
            out[_key(r, kind)] = r.value["after"]["aa"]
        elif r.value is not None and r.value.get("op") == "d":
            out.pop(_key(r, kind), None)  # a read after its row's delete would bring it back: wrong
    return out


def _expected(rows: list[dict]) -> dict[int, int]:
    out: dict[int, int] = {}
    for seg in rows:
        for k in range(seg["from"], seg["to"] + 1):
            out[k] = seg["value"] if "value" in seg else k + seg["plus"]
    return out


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_incremental_snapshot_case(standin, case):
    db = standin.dbname
    case = _fill(case, db)
    _setup(standin, case.get("populate", []))
    expect = case["expect"]
    kind = expect.get("topic", "a")
    table = "a42" if kind.startswith("a42") else kind
    wanted = _expected(expect["rows"])
    done_min = expect.get("done_min")
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    config = _config(standin, **case.get("config", {}))
    runner, notes = streaming_with_notifications(config, store, history)
    seen: list = []  # the records of stopped runs (restart_after)
    try:
        # startConnector: no snapshot records (snapshot.mode=no_data).
        time.sleep(0.3)
        assert not [r for r in runner.snapshot() if r.topic.count(".") == 3], "records before the signal"
        for signal in case["signals"]:
            _signal(standin, signal["type"], signal["data"])
        for statement in case.get("then", []):
            standin.execute(statement)
        if case.get("then_updates"):
            _updates(standin, case["then_updates"])

        def done(records) -> bool:
            got = _latest(_topic(seen + records, db, table), kind)
            return len(got) >= len(wanted) and (done_min is None or all(v >= done_min for v in got.values()))

        if case.get("restart_after"):
            runner.wait(lambda rs: len(_topic(rs, db, table)) > case["restart_after"], "the first records", 90)
            runner.stop()
            seen = runner.snapshot()
            runner, notes = streaming_with_notifications(config, store, history)
        runner.wait(done, "the topic's rows", 60)
        time.sleep(0.5 if not expect.get("exactly_once") else 2.0)  # anything that should not come would show
    finally:
        runner.stop()
    records = seen + runner.records
    got = _latest(_topic(records, db, table), kind)
    assert got == wanted, sorted(set(got.items()) ^ set(wanted.items()))[:10]
    if expect.get("exactly_once"):
        assert len(_topic(records, db, table)) == len(wanted)
    if expect.get("no_reads"):
        assert _topic(records, db, expect["no_reads"]) == []
    if "close_watermarks" in expect:
        (count,), = standin.execute("SELECT count(id) FROM dbo.debezium_signal WHERE type = 'snapshot-window-close'")
        assert (count != 0) == (expect["close_watermarks"] == "nonzero"), count


# -- AbstractIncrementalSnapshotTest: the tests that do more than one signal and read ------------------------------

def _reads(records: list, db: str, table: str = "a") -> list:
    return [r for r in _topic(records, db, table) if r.value and r.value["op"] == "r"]


def _incremental(notes: list) -> list:
    return [n for n in notes if n.aggregate_type == "Incremental Snapshot"]


def test_notifications_of_an_incremental_snapshot_paused_and_resumed(standin, monkeypatch):
    """IncrementalSnapshotWithRecompileIT.testNotification (chunk size 250; IncrementalSnapshotIT's has 1): the sink
    channel's records, every kind, the signal's id, and each kind's additional data exactly as Debezium 2.7.4's
    IncrementalSnapshotNotificationService builds it (values strings; connector_name added to each). With
    incremental.snapshot.option.recompile the chunk and maximum-key SELECTs end with OPTION(RECOMPILE)."""
    from cdc_sqlserver.standin import dbapi

    sent: list[str] = []
    original = dbapi.translate
    monkeypatch.setattr(dbapi, "translate", lambda sql: (sent.append(sql), original(sql))[1])
    db = standin.dbname
    _setup(standin, ["a"])
    config = _config(standin, **{"notification.enabled.channels": "sink", "notification.sink.topic.name": NOTIFICATIONS,
                                 "incremental.snapshot.option.recompile": True,
                                 "max.batch.size": 50, "max.queue.size": 100})
    # A slow consumer holds the snapshot back, so the pause comes while it runs (Debezium's chunk size 1 does that).
    runner, notes = streaming_with_notifications(config, MemoryOffsetStore(), slow=0.05)
    try:
        # The pause in the start's transaction: handled before the first window closes (the stand-in reads the
        # table far faster than Debezium's test consumes its first hundred records).
        _signals_in_one_transaction(standin, [
            ("ad-hoc", "execute-snapshot", {"data-collections": [f"{db}.dbo.a"], "type": "INCREMENTAL"}),
            ("test-pause", "pause-snapshot", "")])
        runner.wait(lambda rs: any(n.type == "PAUSED" for n in notes), "the pause")
        time.sleep(0.5)  # a window already open still closes
        before_resume = len(_reads(runner.snapshot(), db))
        time.sleep(1.0)
        # testPauseDuringSnapshot: nothing more is read while paused.
        assert len(_reads(runner.snapshot(), db)) == before_resume < ROW_COUNT
        _signal(standin, "resume-snapshot", "", "test-resume")
        runner.wait(lambda rs: any(r.topic == NOTIFICATIONS and r.value["type"] == "COMPLETED" for r in rs)
                    and len(_reads(rs, db)) >= ROW_COUNT, "the completion", 60)
    finally:
        runner.stop()
    values = [r.value["after"]["aa"] for r in _reads(runner.records, db)]
    assert values == list(range(ROW_COUNT))
    sink = [r for r in runner.records if r.topic == NOTIFICATIONS]
    assert all(r.key == {"id": r.value["id"]} for r in sink)
    inc = [r.value for r in sink if r.value["aggregate_type"] == "Incremental Snapshot"]
    assert {v["id"] for v in inc} == {"ad-hoc"}
    types = [v["type"] for v in inc]
    assert {"STARTED", "PAUSED", "RESUMED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED"} <= set(types)
    a = f"{db}.dbo.a"
    first = {v["type"]: v["additional_data"] for v in reversed(inc)}  # the first of each type
    base = {"connector_name": "server1"}
    assert first["STARTED"] == first["PAUSED"] == first["RESUMED"] == {**base, "data_collections": a}
    assert first["IN_PROGRESS"] == {**base, "data_collections": a, "current_collection_in_progress": a,
                                    "maximum_key": "1000", "last_processed_key": "250"}
    assert first["TABLE_SCAN_COMPLETED"] == {**base, "data_collections": a, "scanned_collection": a,
                                             "total_rows_scanned": "1000", "status": "SUCCEEDED"}
    assert first["COMPLETED"] == base
    # After every chunk that read rows, the last too (2.7.4's readChunk reads once more, finds none, then
    # TABLE_SCAN_COMPLETED): 1000 rows in chunks of 250.
    assert [k for k in types if k == "IN_PROGRESS"] == ["IN_PROGRESS"] * 4
    chunks = [q for q in sent if q.startswith("SELECT TOP") and ".[dbo].[a]" in q]
    assert len(chunks) >= 5 and all(q.endswith(" OPTION(RECOMPILE)") for q in chunks), chunks[:2]


# -- BlockingSnapshotIT (AbstractBlockingSnapshotTest) ---------------------------------------------------------------

def _blocking_config(standin, **extra: Any) -> dict[str, Any]:
    """BlockingSnapshotIT.mutableConfig(false, false): snapshot.mode initial, the initial snapshot of a only."""
    return standin.properties(**{"snapshot.mode": "initial", "poll.interval.ms": 50,
                                 "signal.data.collection": f"{standin.dbname}.dbo.debezium_signal",
                                 "snapshot.include.collection.list": f"{standin.dbname}.dbo.a", **extra})


def _blocking_done(notes: list) -> bool:
    return any(n.aggregate_type == "Initial Snapshot" and n.type == "COMPLETED" for n in notes)


def _values(records: list) -> list[int]:
    return [r.value["after"]["aa"] for r in records]


@pytest.mark.parametrize("name", ["{db}.dbo.a", '"{db}"."dbo"."a"'],
                         ids=["executeBlockingSnapshot", "executeBlockingSnapshotWithEscapedCollectionName"])
def test_execute_blocking_snapshot(standin, name):
    """The initial snapshot, streamed inserts, a blocking snapshot of the table (all of it again, plus the signal's own
    record on the signal table's topic), then streaming again; the quoted name of DBZ-7718 works as the plain one."""
    db = standin.dbname
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_blocking_config(standin), MemoryOffsetStore())
    try:
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= ROW_COUNT, "the initial snapshot")
        _populate(standin, "a", ROW_COUNT)
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= 2 * ROW_COUNT, "the streamed inserts")
        first = runner.snapshot()
        assert len(_topic(first, db, "a")) == 2 * ROW_COUNT
        assert set(range(2 * ROW_COUNT - 1)) <= set(_values(_topic(first, db, "a")))
        _signal(standin, "execute-snapshot", {"type": "BLOCKING", "data-collections": [name.replace("{db}", db)]})
        runner.wait(lambda rs: _blocking_done(notes) and len(_topic(rs, db, "a")) >= 4 * ROW_COUNT, "the blocking one")
        time.sleep(0.5)
        blocking = runner.snapshot()[len(first):]
        assert len(_topic(blocking, db, "a")) == 2 * ROW_COUNT
        assert {r.value["op"] for r in _topic(blocking, db, "a")} == {"r"}
        assert set(range(2 * ROW_COUNT - 1)) <= set(_values(_topic(blocking, db, "a")))
        assert len(_topic(blocking, db, "debezium_signal")) == 1  # signalingRecords
        _populate(standin, "a", 2 * ROW_COUNT)
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= 5 * ROW_COUNT, "the inserts after it")
        time.sleep(0.5)
    finally:
        runner.stop()
    after = _topic(runner.records, db, "a")[4 * ROW_COUNT:]
    assert len(after) == ROW_COUNT and {r.value["op"] for r in after} == {"c"}
    assert set(range(2 * ROW_COUNT, 3 * ROW_COUNT - 1)) <= set(_values(after))


def test_execute_blocking_snapshot_with_additional_condition(standin):
    """executeBlockingSnapshotWithAdditionalCondition: b (not in the initial snapshot, no CDC) read by a blocking
    snapshot whose filter is a whole SELECT: the 500 rows with aa < 500, and the signal's record."""
    db = standin.dbname
    _setup(standin)
    _populate(standin, "b")
    runner, notes = streaming_with_notifications(_blocking_config(standin), MemoryOffsetStore())
    try:
        _signal(standin, "execute-snapshot", {"type": "BLOCKING", "data-collections": [f"{db}.dbo.b"],
                                              "additional-conditions": [{"data-collection": f"{db}.dbo.b",
                                                                         "filter": f"SELECT * FROM {db}.dbo.b WHERE aa < 500"}]})
        runner.wait(lambda rs: _blocking_done(notes) and len(_topic(rs, db, "b")) >= 500, "the blocking snapshot")
        time.sleep(0.5)
    finally:
        runner.stop()
    b = _topic(runner.records, db, "b")
    assert len(b) == 500 and sorted(_values(b)) == list(range(500))
    assert len(_topic(runner.records, db, "debezium_signal")) == 1


def test_streaming_metrics_resume_after_blocking_snapshot(standin):
    """streamingMetricsResumeAfterBlockingSnapshot (DBZ-8238): after a filtered blocking snapshot, 1000 inserts; the
    streaming TotalNumberOfCreateEventsSeen counts them and the signal's row, and not the snapshot's reads."""
    db = standin.dbname
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_blocking_config(standin), MemoryOffsetStore())
    try:
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= ROW_COUNT, "the initial snapshot")
        _signal(standin, "execute-snapshot", {"type": "BLOCKING", "data-collections": [f"{db}.dbo.a"],
                                              "additional-conditions": [{"data-collection": f"{db}.dbo.a",
                                                                         "filter": f"SELECT * FROM {db}.dbo.a WHERE aa < 500"}]})
        runner.wait(lambda rs: _blocking_done(notes) and len(_topic(rs, db, "a")) >= ROW_COUNT + 500, "the blocking one")
        _populate(standin, "a", ROW_COUNT)
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= 2 * ROW_COUNT + 500, "the inserts")
        time.sleep(0.5)
        values = runner.engine.metrics.values()
    finally:
        runner.stop()
    streaming = {k: v for k, v in values.items() if k.startswith("streaming")}
    assert [v["TotalNumberOfCreateEventsSeen"] for v in streaming.values()][:1] == [ROW_COUNT + 1], streaming.keys()


def _signal_rows(records: list, db: str, type_: str) -> list:
    return [r for r in _topic(records, db, "debezium_signal") if r.value and (r.value.get("after") or {}).get("type") == type_]


@pytest.mark.parametrize("stop", [[], ["{db}.dbo.a"]], ids=[
    "stopCurrentIncrementalSnapshotWithoutCollectionsAndTakeNewNewIncrementalSnapshotAfterRestart",
    "stopCurrentIncrementalSnapshotWithAllCollectionsAndTakeNewNewIncrementalSnapshotAfterRestart"])
def test_stop_the_incremental_snapshot_then_take_a_new_one_after_a_restart(standin, stop):
    """Chunk size 1; stopped (all of it, or its one table by name): ABORTED naming the table, no snapshot state in the
    stored offset, so a restart runs nothing; a new signal then reads the whole table with the rows added since."""
    from cdc_core.incremental.state import STATE_KEY

    db = standin.dbname
    a = f"{db}.dbo.a"
    _setup(standin, ["a"])
    config = _config(standin, **{"incremental.snapshot.chunk.size": 1})
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    partition = {"server": "server1", "database": db}
    runner, notes = streaming_with_notifications(config, store, history)
    try:
        _signal(standin, "execute-snapshot", {"data-collections": [a], "type": "INCREMENTAL"})
        runner.wait(lambda rs: _signal_rows(rs, db, "execute-snapshot") and _reads(rs, db), "the signal")
        data = {"type": "INCREMENTAL", **({"data-collections": [s.replace("{db}", db) for s in stop]} if stop else {})}
        _signal(standin, "stop-snapshot", data)
        runner.wait(lambda rs: _signal_rows(rs, db, "stop-snapshot"), "the stop signal")
        runner.wait(lambda rs: any(n.type == "ABORTED" for n in _incremental(notes)), "the stop")
        time.sleep(1.0)  # the last open window's events
        stopped_at = len(_reads(runner.snapshot(), db))
        assert stopped_at < ROW_COUNT
        aborted = next(n for n in _incremental(notes) if n.type == "ABORTED")
        assert aborted.additional_data == {"connector_name": "server1", "data_collections": a}
        assert aborted.id == "ad-hoc"
        standin.execute(f"INSERT INTO dbo.a VALUES ({2 * ROW_COUNT + 1}, {2 * ROW_COUNT})")
        runner.wait(lambda rs: any(r.value and r.value["op"] == "c" for r in _topic(rs, db, "a")), "the insert")
        time.sleep(0.5)
        assert len(_reads(runner.snapshot(), db)) == stopped_at
    finally:
        runner.stop()
    assert STATE_KEY not in store.get(partition)  # "No incremental snapshot in progress"
    first = runner.records
    runner, notes = streaming_with_notifications(config, store, history)
    try:
        time.sleep(0.5)
        assert not [r for r in runner.snapshot() if r.topic.count(".") == 3]  # nothing resumed
        _signal(standin, "execute-snapshot", {"data-collections": [a], "type": "INCREMENTAL"})
        _populate(standin, "a", ROW_COUNT)

        def done(rs):
            return len(_latest(_topic(first + rs, db, "a"), "a")) >= 2 * ROW_COUNT + 1
        runner.wait(done, "the new snapshot", 120)
    finally:
        runner.stop()
    assert _latest(_topic(first + runner.records, db, "a"), "a") == {i + 1: i for i in range(2 * ROW_COUNT + 1)}


def test_restart_while_the_second_table_is_read_does_not_read_the_first_again(standin):
    """whenSnapshotMultipleTablesAndConnectorRestartsThenOnlyNotAlreadyProcessedTableMustBeProcessed (DBZ-7716):
    chunk size 200, a then b; stopped once 150 of b's records came; after the restart a is not read again (each of
    its keys once) and both tables are complete."""
    db = standin.dbname
    _setup(standin, ["a", "b"])
    config = _config(standin, **{"incremental.snapshot.chunk.size": 200})
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    runner, _ = streaming_with_notifications(config, store, history)
    try:
        _signal(standin, "execute-snapshot", {"data-collections": [f"{db}.dbo.a", f"{db}.dbo.b"], "type": "INCREMENTAL"})
        runner.wait(lambda rs: len(_topic(rs, db, "b")) > 150, "b's first records")
    finally:
        runner.stop()
    first = runner.records
    runner, _ = streaming_with_notifications(config, store, history)
    try:
        runner.wait(lambda rs: len(_latest(_topic(first + rs, db, "b"), "b")) >= ROW_COUNT, "the rest of b")
        time.sleep(0.5)
    finally:
        runner.stop()
    records = first + runner.records
    a = [r.key["pk"] for r in _topic(records, db, "a")]
    assert sorted(a) == list(range(1, ROW_COUNT + 1))  # Collectors.toMap: no key twice
    assert _topic(runner.records, db, "a") == []
    assert _latest(_topic(records, db, "b"), "b") == {i + 1: i for i in range(ROW_COUNT)}


# -- NotificationsIT (AbstractNotificationsIT) -------------------------------------------------------------------------

def _notifications_setup(standin) -> None:
    """NotificationsIT.before(): tablea (CDC, one row) and tableb (no CDC, empty)."""
    standin.create_table("CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))")
    standin.create_table("CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))")
    standin.execute("INSERT INTO dbo.tablea VALUES (1, 'a')")
    standin.enable_db()
    standin.enable_table("dbo", "tablea")
    standin.agent.start()
    standin.wait_captured()


def _sink(records: list) -> list[dict]:
    return [r.value for r in records if r.topic == NOTIFICATIONS]


def _recent(timestamp: int) -> bool:
    return abs(timestamp - time.time() * 1000) < 60_000


def test_initial_snapshot_notifications_on_the_sink_topic_and_after_a_restart(standin):
    """notificationCorrectlySentOnItsTopic and sinkNotificationWillCorrectlySaveOffsetAfterSnapshot (DBZ-7858): STARTED,
    IN_PROGRESS and TABLE_SCAN_COMPLETED for each table, COMPLETED; a restart then streams (the offset was saved)."""
    db = standin.dbname
    _notifications_setup(standin)
    config = standin.properties(**{"snapshot.mode": "initial", "notification.enabled.channels": "sink",
                                   "notification.sink.topic.name": NOTIFICATIONS})
    store = MemoryOffsetStore()
    runner, _ = streaming_with_notifications(config, store)
    try:
        runner.wait(lambda rs: len(_sink(rs)) >= 6, "the notifications")
        time.sleep(0.3)
    finally:
        runner.stop()
    notes = _sink(runner.records)
    assert len(notes) == 6  # calculateNotificationSize: two per table, STARTED and COMPLETED
    assert {n["aggregate_type"] for n in notes} == {"Initial Snapshot"} and all(_recent(n["timestamp"]) for n in notes)
    assert (notes[0]["type"], notes[-1]["type"]) == ("STARTED", "COMPLETED")
    assert notes[0]["additional_data"] == notes[-1]["additional_data"] == {"connector_name": "server1"}
    tables = [f"{db}.dbo.tablea", f"{db}.dbo.tableb"]
    for table in tables:
        (progress,) = [n for n in notes if n["type"] == "IN_PROGRESS" and table in n["additional_data"].values()]
        assert progress["additional_data"] == {"connector_name": "server1", "current_collection_in_progress": table,
                                               "data_collections": ",".join(tables)}
        (scan,) = [n for n in notes if n["type"] == "TABLE_SCAN_COMPLETED" and table in n["additional_data"].values()]
        assert scan["additional_data"] == {"connector_name": "server1", "scanned_collection": table, "status": "SUCCEEDED",
                                           "data_collections": ",".join(tables),
                                           "total_rows_scanned": "1" if table.endswith("tablea") else "0"}
    assert len({n["id"] for n in notes}) == 6  # each its own (random) id
    runner, _ = streaming_with_notifications(config, store)
    try:
        standin.execute("INSERT INTO dbo.tablea VALUES (2, 'b')")
        runner.wait(lambda rs: _topic(rs, db, "tablea") and _sink(rs), "the insert")
    finally:
        runner.stop()
    assert [r.value["op"] for r in _topic(runner.records, db, "tablea")] == ["c"]
    # The snapshot is not taken again: Debezium's notifySkipped.
    assert [(n["aggregate_type"], n["type"], n["additional_data"]) for n in _sink(runner.records)] == [
        ("Initial Snapshot", "SKIPPED", {"connector_name": "server1"})]


def test_no_notification_without_a_channel(standin):
    """notificationNotSentIfNoChannelIsConfigured: the topic name alone sends nothing."""
    db = standin.dbname
    _notifications_setup(standin)
    config = standin.properties(**{"snapshot.mode": "initial", "notification.sink.topic.name": NOTIFICATIONS})
    runner, _ = streaming_with_notifications(config, MemoryOffsetStore())
    try:
        runner.wait(lambda rs: _topic(rs, db, "tablea"), "the snapshot")
        time.sleep(0.3)
    finally:
        runner.stop()
    assert _sink(runner.records) == []


def test_the_sink_channel_without_a_topic_is_refused(standin):
    """reportErrorWhenSinkChannelIsEnabledAndNoTopicConfigurationProvided: the configuration is refused, naming the
    property (Debezium logs "The 'notification.sink.topic.name' value is invalid: Notification topic name must be
    provided when kafka notification channel is enabled"; cdc refuses it when the engine is made)."""
    from cdc_core.engine import Engine
    from cdc_core.errors import ConfigError

    _notifications_setup(standin)
    with pytest.raises(ConfigError, match="notification.sink.topic.name: is required when the sink notification"):
        Engine(standin.properties(**{"notification.enabled.channels": "sink"}), offset_store=MemoryOffsetStore())


def test_initial_snapshot_notifications_to_an_in_process_listener(standin):
    """notificationCorrectlySentOnJmx / emittingDebeziumNotificationWillGenerateAJmxNotification, with cdc's in-process
    listener (Engine.add_notification_listener) where Debezium has the JMX channel: the same six notifications, STARTED
    and COMPLETED with additional data exactly {connector_name}."""
    _notifications_setup(standin)
    runner, notes = streaming_with_notifications(standin.properties(**{"snapshot.mode": "initial"}), MemoryOffsetStore())
    try:
        runner.wait(lambda rs: len(notes) >= 6, "the notifications")
        time.sleep(0.3)
    finally:
        runner.stop()
    assert len(notes) == 6
    assert (notes[0].aggregate_type, notes[0].type, notes[0].additional_data) == (
        "Initial Snapshot", "STARTED", {"connector_name": "server1"})
    assert (notes[-1].aggregate_type, notes[-1].type, notes[-1].additional_data) == (
        "Initial Snapshot", "COMPLETED", {"connector_name": "server1"})
    assert all(_recent(n.timestamp) for n in notes)


def test_complete_reading_from_a_capture_instance_notification(standin):
    """NotificationsIT.completeReadingFromACaptureInstanceNotificationEmitted: a second capture instance of tablea
    (a column added); once the committed offset is past the first's stop LSN, a Capture Instance COMPLETED naming
    it; then the first dropped and a third made: one for the second."""
    from cdc_sqlserver.lsn import Lsn

    db = standin.dbname
    _notifications_setup(standin)
    config = standin.properties(**{"snapshot.mode": "no_data", "notification.enabled.channels": "sink",
                                   "notification.sink.topic.name": NOTIFICATIONS, "offset.flush.interval.ms": 50,
                                   "poll.interval.ms": 50})
    runner, _ = streaming_with_notifications(config, MemoryOffsetStore())
    try:
        standin.execute("INSERT INTO dbo.tablea VALUES (2, 'b')")
        standin.add_column("dbo", "tablea", "colb", "int")
        standin.enable_table("dbo", "tablea", "tablea_c2")
        standin.execute("INSERT INTO dbo.tablea VALUES (3, 'c', 3)")
        runner.wait(lambda rs: len(_sink(rs)) >= 3, "three notifications", 60)
        time.sleep(0.3)
        notes = _sink(runner.snapshot())
        assert len(notes) == 3
        assert [(n["aggregate_type"], n["type"]) for n in notes] == [
            ("Initial Snapshot", "STARTED"), ("Initial Snapshot", "COMPLETED"), ("Capture Instance", "COMPLETED")]
        seen = len(notes)
        standin.disable_table("dbo", "tablea", "dbo_tablea")
        standin.add_column("dbo", "tablea", "colc", "int")
        standin.enable_table("dbo", "tablea", "tablea_c3")
        standin.execute("INSERT INTO dbo.tablea VALUES (4, 'c', 4, 4)")
        runner.wait(lambda rs: len(_sink(rs)) >= seen + 1, "the next one", 60)
        time.sleep(0.3)
        later = _sink(runner.snapshot())[seen:]
    finally:
        runner.stop()
    assert len(later) == 1
    for note, instance in ((notes[2], "dbo_tablea"), (later[0], "tablea_c2")):
        assert (note["aggregate_type"], note["type"]) == ("Capture Instance", "COMPLETED") and _recent(note["timestamp"])
        data = note["additional_data"]
        assert set(data) == {"connector_name", "capture_instance", "start_lsn", "stop_lsn", "commit_lsn", "server",
                             "database"}
        assert (data["connector_name"], data["server"], data["database"], data["capture_instance"]) == (
            "server1", "server1", db, instance)
        start, stop, commit = (Lsn.parse(data[k]).key() for k in ("start_lsn", "stop_lsn", "commit_lsn"))
        assert start < stop < commit


# -- SignalsIT -----------------------------------------------------------------------------------------------------

def test_log_signals_with_two_tasks(inventory, second, caplog):
    """SignalsIT.jmxSignals, with cdc's in-process channel (Engine.signal) where Debezium has the JMX one (an MBean per
    task; cdc runs one signal controller for the connector): two databases, tasks.max=2, no_data; a log signal sent
    twice is logged twice, its ``{}`` the offset it came at (Log: ``LOGGER.info(message, offset)``)."""
    import logging

    config = inventory.properties(**{"database.names": f"{inventory.dbname},{OTHER}", "snapshot.mode": "no_data",
                                     "signal.poll.interval.ms": 500, "tasks.max": 2})
    caplog.set_level(logging.INFO)
    runner, _ = streaming_with_notifications(config, MemoryOffsetStore())

    def logged():
        return [r.getMessage() for r in caplog.records if "Signal message at offset" in r.getMessage()]

    try:
        for _ in range(2):
            runner.engine.signal("log", {"message": "Signal message at offset ''{}''"}, "1")
        inventory.execute("UPDATE dbo.customers SET email = 'x@y' WHERE id = 1001")  # a batch to run them on
        runner.wait(lambda rs: len(logged()) >= 2, "the two log lines")
    finally:
        runner.stop()
    assert len(logged()) == 2
    assert all(m.startswith("Signal message at offset ''{") and "commit_lsn=" in m for m in logged()), logged()


def test_snapshot_a_table_newly_added_to_the_include_list_after_a_restart(standin):
    """shouldSnapshotNewlyAddedTableToIncludeListAfterRestart (DBZ-4834): initial snapshot of b alone
    (table.include.list dbo.b), stopped; restarted with dbo.a,dbo.b, an incremental snapshot of a reads all of it."""
    db = standin.dbname
    _setup(standin, ["a", "b"])
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    mutable = {"snapshot.mode": "initial", "incremental.snapshot.chunk.size": 250}
    runner, _ = streaming_with_notifications(_config(standin, **mutable, **{"table.include.list": "dbo.b"}),
                                             store, history)
    try:
        runner.wait(lambda rs: len(_topic(rs, db, "b")) >= ROW_COUNT, "the snapshot of b")
    finally:
        runner.stop()
    assert _topic(runner.records, db, "a") == []
    runner, _ = streaming_with_notifications(_config(standin, **mutable, **{"table.include.list": "dbo.a,dbo.b"}),
                                             store, history)
    try:
        time.sleep(0.3)
        assert not [r for r in runner.snapshot() if r.topic.count(".") == 3]  # the snapshot is not taken again
        _signal(standin, "execute-snapshot", {"data-collections": [f"{db}.dbo.a"], "type": "INCREMENTAL"})
        runner.wait(lambda rs: len(_latest(_topic(rs, db, "a"), "a")) >= ROW_COUNT, "the incremental snapshot of a")
    finally:
        runner.stop()
    assert _latest(_topic(runner.records, db, "a"), "a") == {i + 1: i for i in range(ROW_COUNT)}


def test_regex_naming_no_table_reads_nothing(standin):
    """snapshotWithRegexDataCollectionsNotExist: ``.*notExist`` names no table, nothing is read. Debezium keeps the
    name (expandAndDedupeDataCollectionIds), finds it invalid and ends the snapshot: STARTED, a TABLE_SCAN_COMPLETED
    with status UNKNOWN_SCHEMA, COMPLETED."""
    db = standin.dbname
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_config(standin), MemoryOffsetStore())
    try:
        _signal(standin, "execute-snapshot", {"data-collections": [".*notExist"], "type": "INCREMENTAL"})
        runner.wait(lambda rs: any(n.type == "COMPLETED" for n in _incremental(notes)), "the snapshot's end")
        time.sleep(0.5)
    finally:
        runner.stop()
    assert _reads(runner.records, db) == []
    assert [(n.type, n.additional_data.get("status")) for n in _incremental(notes)] == [
        ("STARTED", None), ("TABLE_SCAN_COMPLETED", "UNKNOWN_SCHEMA"), ("COMPLETED", None)]


def test_execute_blocking_snapshot_while_streaming(standin):
    """executeBlockingSnapshotWhileStreaming: inserts one by one (a short random sleep each) while a blocking snapshot
    of the table runs: every insert streamed exactly once, the snapshot's reads as many as its RowsScanned (the rows
    there when it read them), then a thousand more streamed."""
    import random
    import threading

    db = standin.dbname
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_blocking_config(standin), MemoryOffsetStore())

    def insert_task():
        rnd = random.Random(7)
        with standin._connect() as conn:
            for i in range(ROW_COUNT, 2 * ROW_COUNT):
                conn.execute("INSERT INTO dbo.a VALUES (%s, %s)", (i + 1, i))
                time.sleep(rnd.uniform(0.001, 0.01))  # insertMaxSleep (100 ms in Debezium's SQL Server test)

    try:
        runner.wait(lambda rs: len(_topic(rs, db, "a")) >= ROW_COUNT, "the initial snapshot")
        inserts = threading.Thread(target=insert_task)
        inserts.start()
        try:
            time.sleep(1.0)
            _signal(standin, "execute-snapshot", {"type": "BLOCKING", "data-collections": [f"{db}.dbo.a"]})
            runner.wait(lambda rs: len([n for n in notes if n.type == "COMPLETED"]) >= 2, "the blocking snapshot", 60)
            values = runner.engine.metrics.values()
            rows_scanned = values[f"snapshot,database={db}"]["RowsScanned"]["dbo.a"]
        finally:
            inserts.join(120)
        _populate(standin, "a", 2 * ROW_COUNT)
        runner.wait(lambda rs: len([r for r in _topic(rs, db, "a") if r.value["op"] == "c"]) >= 2 * ROW_COUNT,
                    "the streamed inserts", 60)
        time.sleep(0.5)
    finally:
        runner.stop()
    a = _topic(runner.records, db, "a")
    initial, rest = a[:ROW_COUNT], a[ROW_COUNT:]
    assert [r.value["op"] for r in initial] == ["r"] * ROW_COUNT
    creates = [r.value["after"]["aa"] for r in rest if r.value["op"] == "c"]
    assert sorted(creates) == list(range(ROW_COUNT, 3 * ROW_COUNT))  # each insert exactly once
    reads = [r.value["after"]["aa"] for r in rest if r.value["op"] == "r"]
    assert len(reads) == rows_scanned and ROW_COUNT < rows_scanned <= 2 * ROW_COUNT
    assert sorted(reads) == list(range(rows_scanned))  # the table as it was: a prefix of the inserts
    assert len(a) == 3 * ROW_COUNT + rows_scanned


def test_schema_changes_during_the_incremental_snapshot(standin):
    """AbstractIncrementalSnapshotWithSchemaChangesSupportTest.schemaChanges: while the snapshot runs, aa becomes
    VARCHAR(5) and a column c is added, changed and dropped three times, with inserts in between; every key comes,
    aa as the number or its text."""
    db = standin.dbname
    _setup(standin, ["a"])
    runner, _ = streaming_with_notifications(_config(standin), MemoryOffsetStore(), MemorySchemaHistoryStore())
    try:
        _signal(standin, "execute-snapshot", {"data-collections": [f"{db}.dbo.a"], "type": "INCREMENTAL"})
        standin.execute(f"INSERT INTO dbo.a (pk, aa) VALUES ({ROW_COUNT + 11}, {ROW_COUNT + 10})")
        standin.alter_column("dbo", "a", "aa", "VARCHAR(5)")
        standin.execute(f"INSERT INTO dbo.a (pk, aa) VALUES ({ROW_COUNT + 10}, '{ROW_COUNT + 9}')")
        for i in range(0, 9, 3):
            standin.add_column("dbo", "a", "c", "INT")
            standin.execute(f"INSERT INTO dbo.a (pk, aa, c) VALUES ({i + ROW_COUNT + 1}, '{i + ROW_COUNT}', 1)")
            standin.alter_column("dbo", "a", "c", "VARCHAR(5)")
            standin.execute(f"INSERT INTO dbo.a (pk, aa, c) VALUES ({i + ROW_COUNT + 2}, '{i + ROW_COUNT + 1}', '1')")
            standin.execute("ALTER TABLE dbo.a DROP COLUMN c")
            standin.execute("DELETE FROM standin.column_types WHERE column_name = 'c'")
            standin.execute(f"INSERT INTO dbo.a (pk, aa) VALUES ({i + ROW_COUNT + 3}, '{i + ROW_COUNT + 2}')")
        runner.wait(lambda rs: len(_latest(_topic(rs, db, "a"), "a")) >= ROW_COUNT + 11, "every key", 60)
        time.sleep(0.5)
    finally:
        runner.stop()
    got = _latest(_topic(runner.records, db, "a"), "a")
    assert {k: str(v) for k, v in got.items()} == {i + 1: str(i) for i in range(ROW_COUNT + 11)}


def test_rename_table_during_the_incremental_snapshot(standin):
    """AbstractIncrementalSnapshotWithSchemaChangesSupportTest.renameTable (IncrementalSnapshotIT.executeRenameTable):
    after the first records, CDC disabled on a, a renamed old_table and new_table (a copy with a column c) renamed a,
    CDC enabled on it as capture instance a (pk, aa, c), the last rows updated with c = 'c': every key comes with
    its aa, c set on the updated ones only."""
    db = standin.dbname
    _setup(standin, ["a"])
    standin.create_table("CREATE TABLE dbo.new_table (pk int primary key, aa int)")
    standin.execute("INSERT INTO dbo.new_table SELECT * FROM dbo.a")
    standin.add_column("dbo", "new_table", "c", "varchar(5)")
    runner, _ = streaming_with_notifications(_config(standin), MemoryOffsetStore(), MemorySchemaHistoryStore())
    updated = 10
    try:
        _signal(standin, "execute-snapshot", {"data-collections": [f"{db}.dbo.a"], "type": "INCREMENTAL"})
        runner.wait(lambda rs: len(_topic(rs, db, "a")) > 10, "the first records")
        standin.disable_table("dbo", "a", "dbo_a")
        standin.execute("BEGIN; ALTER TABLE dbo.a RENAME TO old_table; ALTER TABLE dbo.new_table RENAME TO a; COMMIT")
        standin.enable_table("dbo", "a", "a", columns=["pk", "aa", "c"])
        standin.execute(f"UPDATE dbo.a SET c = 'c' WHERE pk >= {ROW_COUNT - updated}")
        runner.wait(lambda rs: len(_latest(_topic(rs, db, "a"), "a")) >= ROW_COUNT and any(
            r.value and r.value["op"] == "u" for r in _topic(rs, db, "a")), "every key and the updates", 60)
        time.sleep(1.0)
    finally:
        runner.stop()
    latest: dict[int, dict] = {}
    for r in _topic(runner.records, db, "a"):
        if r.value and r.value.get("after"):
            latest[r.key["pk"]] = r.value["after"]
    assert sorted(latest) == list(range(1, ROW_COUNT + 1))
    assert all(latest[i + 1]["aa"] == i for i in range(ROW_COUNT))
    # The update's WHERE pk >= 990 covers key 990 too (Debezium's own check of the others never runs: it looks
    # for c in the envelope's schema).
    assert all(latest[i + 1].get("c") is None for i in range(ROW_COUNT - updated - 1))
    assert all(latest[i + 1]["c"] == "c" for i in range(ROW_COUNT - updated, ROW_COUNT))


def test_blocking_snapshot_notifications_of_a_full_and_an_empty_table(standin):
    """A blocking snapshot's notifications as Debezium 2.7.4's RelationalSnapshotChangeEventSource sends them for an
    on-demand snapshot: STARTED, IN_PROGRESS for each table read up front, TABLE_SCAN_COMPLETED for each (the empty
    one with 0 rows; data_collections the tables the signal names: no signal table, as the real Debezium 3.0.7 writes
    them on PostgreSQL, test_conformance_snapshot_notifications), COMPLETED."""
    db = standin.dbname
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_config(standin), MemoryOffsetStore())
    try:
        before = len(notes)  # the start's own (Initial Snapshot notifications too)
        _signal(standin, "execute-snapshot", {"type": "BLOCKING", "data-collections": [f"{db}.dbo.a", f"{db}.dbo.b"]})
        runner.wait(lambda rs: any(n.type == "COMPLETED" for n in notes[before:]), "the blocking snapshot")
    finally:
        runner.stop()
    a, b = f"{db}.dbo.a", f"{db}.dbo.b"
    blocking = [n for n in notes[before:] if n.aggregate_type == "Initial Snapshot"]
    # Each with an id of its own (a random UUID, as Debezium's), not the signal's.
    assert len({n.id for n in blocking}) == len(blocking) and "ad-hoc" not in {n.id for n in blocking}
    got = [(n.type, n.additional_data) for n in blocking]
    base = {"connector_name": "server1"}
    scan = {**base, "data_collections": f"{a},{b}", "status": "SUCCEEDED"}
    assert got == [
        ("STARTED", base),
        ("IN_PROGRESS", {**base, "data_collections": f"{a},{b}", "current_collection_in_progress": a}),
        ("IN_PROGRESS", {**base, "data_collections": f"{a},{b}", "current_collection_in_progress": b}),
        ("TABLE_SCAN_COMPLETED", {**scan, "scanned_collection": a, "total_rows_scanned": "1000"}),
        ("TABLE_SCAN_COMPLETED", {**scan, "scanned_collection": b, "total_rows_scanned": "0"}),
        ("COMPLETED", base)]


def test_invalid_tables_in_the_list_are_reported_unknown(standin):
    """invalidTablesInTheList's notifications, as Debezium 2.7.4 sends them: the names without a table stay in
    STARTED's data_collections and each gets TABLE_SCAN_COMPLETED with status UNKNOWN_SCHEMA and 0 rows (Debezium
    when its turn comes; cdc before reading the others); the table is read all the same."""
    db = standin.dbname
    a = f"{db}.dbo.a"
    _setup(standin, ["a"])
    runner, notes = streaming_with_notifications(_config(standin), MemoryOffsetStore())
    try:
        _signal(standin, "execute-snapshot", {"data-collections": ["invalid1", a, "invalid2"], "type": "INCREMENTAL"})
        runner.wait(lambda rs: any(n.type == "COMPLETED" for n in _incremental(notes)), "the snapshot")
    finally:
        runner.stop()
    inc = _incremental(notes)
    assert inc[0].type == "STARTED" and inc[0].additional_data["data_collections"] == f"invalid1,{a},invalid2"
    scans = {n.additional_data["scanned_collection"]: n.additional_data for n in inc if n.type == "TABLE_SCAN_COMPLETED"}
    assert {k: (v["status"], v["total_rows_scanned"]) for k, v in scans.items()} == {
        "invalid1": ("UNKNOWN_SCHEMA", "0"), a: ("SUCCEEDED", "1000"), "invalid2": ("UNKNOWN_SCHEMA", "0")}
    assert scans["invalid1"]["data_collections"] == f"invalid1,{a},invalid2"
